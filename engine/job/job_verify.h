// engine/job/job_verify.h
//
// JobVerifyState is the verify state of one JobThread (fio's verify.c, the
// io_hist_list / io_hist_tree that backend.c's do_verify and io_u.c's
// check_get_verify read back): what verify= asks of the job, the log of
// written blocks waiting for their verify read (fio's struct io_piece per
// block), and the counters of the verify reads. It is plain data: the
// logic is JobThread's (job_verify.cc).
//
// Invariants: hist_len counts the pieces in hist_list (piece_list: write
//  order) or hist_tree (else: by file and offset); every index there or in
//  free_pieces is < pieces.size(); a piece is in at most one of them, and
//  in none while orphan and in flight (its reap frees it).
// Thread-safety: thread-compatible; part of one JobThread.
// Cost: one VerifyPiece per logged write not yet verified (at most
//  DeviceContent::kMaxRecords), recycled through free_pieces; hist_list and
//  hist_tree allocate a node per logged write (hist_list from the pool).
#ifndef BLKLAB_ENGINE_JOB_JOB_VERIFY_H_
#define BLKLAB_ENGINE_JOB_JOB_VERIFY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "engine/job/file_service.h"
#include "engine/sim/pool_allocator.h"

namespace blklab::job {

struct VerifyPiece {  // fio's struct io_piece
  uint64_t offset = 0;  // on the file's disk
  uint32_t file = 0;
  uint32_t len = 0;
  uint16_t numberio = 0;
  bool in_flight = false;  // IP_F_IN_FLIGHT: its write is not reaped yet
  bool orphan = false;     // dropped from the log while in flight: freed at its reap
};

struct JobVerifyState {
  bool enabled = false;         // verify= other than 0
  bool checks = false;          // completions are checked (not verify=null, not ioengine=null)
  bool headers = false;         // writes carry headers (not verify=null)
  bool log_pieces = false;      // writes are logged (td_write, do_verify, not experimental_verify)
  bool piece_list = false;      // the log is in write order (random map), else by offset
  bool check_numberio = false;  // verify_header's numberio check applies
  std::vector<VerifyPiece> pieces;
  std::vector<int32_t> free_pieces;
  sim::PooledDeque<int32_t> hist_list;                                // io_hist_list
  absl::btree_map<std::pair<uint32_t, uint64_t>, int32_t> hist_tree;  // io_hist_tree, by file and offset
  uint64_t hist_len = 0;                                              // td->io_hist_len
  uint64_t batch = 0;                                                 // td->verify_batch
  bool last_reaped_read = false;                                      // td->last_ddir == DDIR_READ
  uint32_t interval = 0;
  int64_t fill_per_kib = 0;  // populate_verify_io_u: random fill
  int64_t hash_per_kib = 0;  // the checksum, at write and at verify
  std::string name;          // fio's name of the checksum in messages
  uint64_t write_bytes_done = 0;       // bytes_done[WRITE] + [TRIM] of the round (verify_bytes)
  std::optional<FileService> replay;  // experimental_verify
  uint64_t read_issues = 0;           // td->verify_read_issues
  uint64_t bytes_done = 0;            // td->bytes_verified
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_JOB_VERIFY_H_
