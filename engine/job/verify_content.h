// engine/job/verify_content.h
//
// DeviceContent is what fio's verify headers on one simulated device say
// (fio verify.c): a write with verify= lays a header every verify_interval
// bytes (magic, length, offset, numberio, then a checksum over the chunk);
// a verifying read finds the header at each interval of the block it reads
// and checks it. The model keeps one record per header - its length, the
// writer's numberio and whether the chunk still matches its checksum - not
// the data: a chunk partly overwritten later keeps its header but fails its
// checksum; a header overwritten by data that is not a header at the same
// place is gone (fio: "bad magic header"); trimmed or never-written space
// reads as zeroes (no header).
//
// Only runs in which some job verifies keep a DeviceContent, and then every
// write and trim to that device updates it, whichever job issues it.
//
// Invariants: records do not overlap; each covers [offset, offset + len).
// Thread-safety: thread-compatible (one simulation).
// Cost: O(log n + k) per write, trim or check, k the records it touches;
//   about 40 bytes per record held.
#ifndef BLKLAB_ENGINE_JOB_VERIFY_CONTENT_H_
#define BLKLAB_ENGINE_JOB_VERIFY_CONTENT_H_

#include <cstdint>
#include <optional>

#include "absl/container/btree_map.h"

namespace blklab::job {

class DeviceContent {
 public:
  // Records held at most (2^23, ~330 MiB): beyond it Write() returns false
  // and the run fails, naming verify_interval.
  static constexpr uint64_t kMaxRecords = uint64_t{1} << 23;

  enum class Fault : uint8_t {
    kNone,
    kMagic,     // no header at the offset (zeroes or other data)
    kLength,    // a header of another verify_interval
    kNumberio,  // written by another I/O than the one expected
    kChecksum,  // the header is there but the chunk was partly overwritten
  };
  struct Check {
    Fault fault = Fault::kNone;
    uint32_t found_len = 0;
    uint16_t found_numberio = 0;
  };

  // A write of [offset, offset + len). `interval` > 0: fio's verify headers
  // every `interval` bytes from `offset`, carrying `numberio` (truncated to
  // 16 bits as in struct verify_header); 0: data without headers. Returns
  // false when the record limit would be passed (nothing is changed then).
  bool Write(uint64_t offset, uint64_t len, uint32_t interval, uint16_t numberio);
  // A trim (discard) of [offset, offset + len): the space reads as zeroes.
  void Trim(uint64_t offset, uint64_t len) { Clear(offset, len); }
  // fio's verify_header and checksum for the chunk at `offset`, expected
  // `len` bytes long; `numberio` when the job checks it.
  Check Verify(uint64_t offset, uint32_t len, std::optional<uint16_t> numberio) const;

  uint64_t records() const { return records_.size(); }

 private:
  struct Record {
    uint32_t len = 0;
    uint16_t numberio = 0;
    bool intact = true;
  };
  // Removes records whose header lies in [offset, offset + len) and marks
  // those the range cuts into as no longer matching their checksum.
  void Clear(uint64_t offset, uint64_t len);

  absl::btree_map<uint64_t, Record> records_;  // by header offset
  uint32_t max_len_ = 0;                       // longest record held
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_VERIFY_CONTENT_H_
