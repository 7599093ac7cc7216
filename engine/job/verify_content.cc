#include "engine/job/verify_content.h"

#include <algorithm>

namespace blklab::job {

void DeviceContent::Clear(uint64_t offset, uint64_t len) {
  if (len == 0 || records_.empty()) return;
  const uint64_t end = offset + len;
  // A record starting before `offset` can reach into the range only if it
  // starts within max_len_ of it.
  const uint64_t from = offset > max_len_ ? offset - max_len_ + 1 : 0;
  auto it = records_.lower_bound(from);
  while (it != records_.end() && it->first < end) {
    const uint64_t start = it->first;
    const uint64_t rec_end = start + it->second.len;
    if (start >= offset) {
      it = records_.erase(it);  // its header is overwritten
      continue;
    }
    if (rec_end > offset) it->second.intact = false;  // its data is cut into
    ++it;
  }
}

bool DeviceContent::Write(uint64_t offset, uint64_t len, uint32_t interval, uint16_t numberio) {
  if (interval > 0 && records_.size() + len / interval > kMaxRecords) return false;
  Clear(offset, len);
  if (interval == 0) return true;
  max_len_ = std::max(max_len_, interval);
  auto hint = records_.end();
  for (uint64_t at = offset; at + interval <= offset + len; at += interval) {
    hint = records_.insert(hint, {at, Record{interval, numberio, true}});
    ++hint;
  }
  return true;
}

DeviceContent::Check DeviceContent::Verify(uint64_t offset, uint32_t len, std::optional<uint16_t> numberio) const {
  Check c;
  auto it = records_.find(offset);
  if (it == records_.end()) {
    c.fault = Fault::kMagic;
    return c;
  }
  const Record& r = it->second;
  c.found_len = r.len;
  c.found_numberio = r.numberio;
  if (r.len != len) {
    c.fault = Fault::kLength;
  } else if (numberio.has_value() && r.numberio != *numberio) {
    c.fault = Fault::kNumberio;
  } else if (!r.intact) {
    c.fault = Fault::kChecksum;
  }
  return c;
}

}  // namespace blklab::job
