#include "engine/job/medium_content.h"

#include <algorithm>
#include <optional>

namespace blklab::job {

uint64_t MediumContent::PatternId(std::string_view pattern) {
  if (std::all_of(pattern.begin(), pattern.end(), [](char c) { return c == 0; })) return kZero;
  // The shortest period the pattern repeats with: "0101" fills as "01".
  size_t period = pattern.size();
  for (size_t p = 1; p < pattern.size(); ++p) {
    if (pattern.size() % p != 0) continue;
    bool repeats = true;
    for (size_t i = p; i < pattern.size() && repeats; ++i) repeats = pattern[i] == pattern[i - p];
    if (repeats) {
      period = p;
      break;
    }
  }
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (size_t i = 0; i < period; ++i) {
    h ^= static_cast<unsigned char>(pattern[i]);
    h *= 0x100000001b3ULL;
  }
  return (uint64_t{1} << 62) | (h >> 2);
}

bool MediumContent::Write(uint64_t sector, uint64_t count, uint64_t id) {
  if (count == 0) return true;
  const uint64_t end = sector + count;
  if (extents_.size() + 2 > kMaxExtents) return false;
  // Cut the extents the range overlaps (erasing first: a b-tree insert
  // moves iterators), then put back their parts outside it.
  auto it = extents_.lower_bound(sector);
  if (it != extents_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.first > sector) it = prev;
  }
  std::optional<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> head, tail;
  while (it != extents_.end() && it->first < end) {
    const uint64_t s = it->first;
    const auto [e, old] = it->second;
    if (s < sector) head = {s, {sector, old}};
    if (e > end) tail = {end, {e, old}};
    it = extents_.erase(it);
  }
  if (head.has_value()) extents_.insert(*head);
  if (tail.has_value()) extents_.insert(*tail);
  if (id == kZero) return true;
  uint64_t lo = sector, hi = end;
  // Merge with equal neighbours.
  auto next = extents_.lower_bound(end);
  if (next != extents_.end() && next->first == end && next->second.second == id) {
    hi = next->second.first;
    extents_.erase(next);
  }
  auto after = extents_.lower_bound(sector);
  if (after != extents_.begin()) {
    auto prev = std::prev(after);
    if (prev->second.first == sector && prev->second.second == id) {
      lo = prev->first;
      extents_.erase(prev);
    }
  }
  extents_.emplace(lo, std::make_pair(hi, id));
  return true;
}

std::optional<uint64_t> MediumContent::Compare(uint64_t sector, uint64_t count, uint64_t id) const {
  const uint64_t end = sector + count;
  uint64_t at = sector;  // the first sector not yet known to match
  auto it = extents_.lower_bound(sector);
  if (it != extents_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.first > sector) it = prev;
  }
  for (; at < end; ++it) {
    const bool extent_here = it != extents_.end() && it->first < end;
    const uint64_t gap_end = extent_here ? std::max(it->first, at) : end;
    if (gap_end > at && id != kZero) return at;  // a gap of zeroes
    if (!extent_here) break;
    at = std::max(at, it->first);
    if (it->second.second != id) return at;
    at = it->second.first;
  }
  return std::nullopt;
}

}  // namespace blklab::job
