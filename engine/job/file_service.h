// engine/job/file_service.h
//
// FileService is fio's choice of file for each I/O of one job clone
// (io_u.c get_next_file, file_service_type): a job whose filename= lists
// several targets, or whose nrfiles= asks for several files, spreads its
// I/O over them -- roundrobin (the default), random or sequential, each file
// taking file_service_nr I/Os in a row (`roundrobin:N`). Each file has its
// own IoGenerator (its own position, random map and draws), as each fio_file
// has its own last_pos and io_axmap.
//
// Loops: without time_based a file whose pass reaches its end is done
// (set_io_u_file: fill_io_u fails, the file is closed and marked done) and
// the others go on; once every file is done the loop ends, and the next I/O
// handed out starts the next loop (new_pass set), each file resuming with
// the I/O it held back. With one file this is the generator's own stream.
//
// Determinism: the random file choice draws from its own seeded stream.
// Invariants: file() < count(). A trimwrite's write waits in its file's
//  generator for that file's next turn (fio 3.33 over two files: T0 T1 W0
//  W1).
// Thread-safety: thread-compatible; one per clone.
// Cost: Next() is O(1) amortised for roundrobin and sequential, O(files)
//  expected for random once most files are done; no allocation.
#ifndef BLKLAB_ENGINE_JOB_FILE_SERVICE_H_
#define BLKLAB_ENGINE_JOB_FILE_SERVICE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "engine/sim/rng.h"
#include "engine/workload/io_generator.h"
#include "engine/workload/job_spec.h"

namespace blklab::job {

class FileService {
 public:
  struct Next {
    workload::GeneratedIo io;
    uint32_t file = 0;
    // Files whose pass ended while this I/O was chosen (fio closes each
    // then: set_io_u_file's td_io_close_file), in order; usually none.
    std::vector<uint32_t> closed;
  };

  // One generator per plan (the clone's files in order); `seed` and
  // `thread_number` as IoGenerator::Create takes them. REQUIRES: plans not
  // empty.
  static absl::StatusOr<FileService> Create(const workload::JobSpec& spec, const std::vector<workload::ClonePlan>& plans,
                                            uint32_t thread_number, uint64_t seed);

  FileService(FileService&&) = default;
  FileService& operator=(FileService&&) = default;

  // The next I/O and its file; `adjust` as IoGenerator::Next(adjust) (null:
  // none).
  Next NextIo(const absl::FunctionRef<workload::Direction(workload::Direction)>* adjust = nullptr);

  // The file a sync due now goes to: fio decides fsync= / fdatasync= in
  // fill_io_u after get_next_file picked the io_u's file, so the sync takes
  // the next file's turn (with several files, not the file just written).
  uint32_t NextSyncFile();

  uint32_t count() const { return static_cast<uint32_t>(gens_.size()); }
  bool random_map_enabled() const { return gens_.front().random_map_enabled(); }

 private:
  FileService() = default;
  // The file the next I/O goes to; UINT32_MAX when every file is done.
  uint32_t Pick();

  std::vector<workload::IoGenerator> gens_;
  std::vector<std::optional<workload::GeneratedIo>> held_;  // the first I/O of a done file's next pass
  std::vector<bool> done_;
  uint32_t done_count_ = 0;
  workload::FileServiceType type_ = workload::FileServiceType::kRoundRobin;
  uint32_t per_turn_ = 1;  // file_service_nr
  uint32_t cur_ = 0;
  uint32_t left_ = 0;      // I/Os the current file still takes in this turn
  bool pass_end_ends_loop_ = false;
  bool started_ = false;       // some file has had a turn this loop
  bool loop_wrapped_ = false;  // every file was done: the next I/O starts a loop
  sim::RngStream rng_;
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_FILE_SERVICE_H_
