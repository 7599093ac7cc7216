// engine/job/medium_content.h
//
// MediumContent is what a disk holds, sector by sector, as far as a SCSI
// VERIFY with BYTCHK (fio's sg engine, sg_write_mode=verify_bytchk_01/11)
// compares it with the data sent: each 512-byte sector holds zeroes (never
// written, unmapped, or written by WRITE SAME with NDOB), a repeated byte
// pattern (fio's buffer_pattern=), or data of one write alone (fio's random
// buffer fill). Content is an id: kZero, PatternId(bytes) or UniqueId();
// two sectors compare equal when their ids do.
//
// Invariants: extents are disjoint, non-empty, never kZero (the gaps are
//  zeroes), and adjacent extents with one id are merged.
// Thread-safety: thread-compatible; one per disk of a simulation.
// Cost: Write and Compare are O(log n + extents touched); memory is one
//  map node per extent, at most kMaxExtents.
#ifndef BLKLAB_ENGINE_JOB_MEDIUM_CONTENT_H_
#define BLKLAB_ENGINE_JOB_MEDIUM_CONTENT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/container/btree_map.h"

namespace blklab::job {

class MediumContent {
 public:
  static constexpr uint64_t kZero = 0;
  static constexpr size_t kMaxExtents = size_t{1} << 22;

  // The id of a buffer filled with `pattern` repeated (kZero when every
  // byte is 0; patterns that fill a buffer alike get one id).
  static uint64_t PatternId(std::string_view pattern);
  // An id no other write has: a buffer of random data.
  uint64_t UniqueId() { return (uint64_t{2} << 62) | next_unique_++; }

  // Sectors [sector, sector + count) now hold `id`. False (nothing
  // changed) when the map would pass kMaxExtents.
  bool Write(uint64_t sector, uint64_t count, uint64_t id);
  // The first sector of [sector, sector + count) whose content is not
  // `id`, or none.
  std::optional<uint64_t> Compare(uint64_t sector, uint64_t count, uint64_t id) const;
  size_t extents() const { return extents_.size(); }

 private:
  absl::btree_map<uint64_t, std::pair<uint64_t, uint64_t>> extents_;  // start -> (end, id)
  uint64_t next_unique_ = 1;
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_MEDIUM_CONTENT_H_
