#include "engine/job/file_service.h"

#include <utility>

#include "engine/util/check.h"

namespace blklab::job {

absl::StatusOr<FileService> FileService::Create(const workload::JobSpec& spec,
                                                const std::vector<workload::ClonePlan>& plans,
                                                uint32_t thread_number, uint64_t seed) {
  BLKLAB_CHECK(!plans.empty());
  FileService s;
  for (size_t f = 0; f < plans.size(); ++f) {
    absl::StatusOr<workload::IoGenerator> g =
        workload::IoGenerator::Create(spec, plans[f], thread_number, seed, static_cast<uint32_t>(f));
    if (!g.ok()) return g.status();
    s.gens_.push_back(*std::move(g));
  }
  s.held_.resize(plans.size());
  s.done_.assign(plans.size(), false);
  s.type_ = spec.file_service_type;
  s.per_turn_ = std::max<uint32_t>(spec.file_service_nr, 1);
  s.pass_end_ends_loop_ = plans.front().pass_end_ends_loop;
  const uint64_t base_seed = spec.randseed_set ? spec.randseed : (spec.randrepeat ? workload::kFioDefaultSeed : seed);
  s.rng_ = sim::RngStream(base_seed, sim::RngStreamId::kFileService, thread_number);
  return s;
}

uint32_t FileService::Pick() {
  const uint32_t n = count();
  if (done_count_ >= n) return UINT32_MAX;
  if (left_ > 0 && !done_[cur_]) {
    --left_;
    return cur_;
  }
  switch (type_) {
    case workload::FileServiceType::kRandom:
      do {
        cur_ = static_cast<uint32_t>(rng_.UniformBelow(n));
      } while (done_[cur_]);
      break;
    case workload::FileServiceType::kSequential:
      while (done_[cur_]) cur_ = (cur_ + 1) % n;
      break;
    default:  // roundrobin: the next file after the one that had its turn
      if (left_ == 0 && started_) cur_ = (cur_ + 1) % n;
      while (done_[cur_]) cur_ = (cur_ + 1) % n;
      break;
  }
  started_ = true;
  // sequential stays on a file until it is done.
  left_ = type_ == workload::FileServiceType::kSequential ? UINT32_MAX : per_turn_ - 1;
  return cur_;
}

uint32_t FileService::NextSyncFile() {
  if (count() == 1) return 0;
  const uint32_t f = Pick();
  return f == UINT32_MAX ? cur_ : f;
}

FileService::Next FileService::NextIo(const absl::FunctionRef<workload::Direction(workload::Direction)>* adjust) {
  if (count() == 1) {
    Next out;
    out.io = adjust != nullptr ? gens_[0].Next(*adjust) : gens_[0].Next();
    return out;
  }
  std::vector<uint32_t> closed;
  for (;;) {
    const uint32_t f = Pick();
    if (f == UINT32_MAX) {
      // Every file ended its pass: the loop is over; the next I/O starts
      // the next one with every file open again.
      done_.assign(done_.size(), false);
      done_count_ = 0;
      loop_wrapped_ = true;
      left_ = 0;
      started_ = false;
      cur_ = 0;
      continue;
    }
    Next out;
    out.file = f;
    if (held_[f].has_value()) {
      out.io = *held_[f];
      held_[f].reset();
    } else {
      out.io = adjust != nullptr ? gens_[f].Next(*adjust) : gens_[f].Next();
      if (out.io.new_pass && pass_end_ends_loop_) {
        // set_io_u_file: this file is done for the loop; its I/O waits for
        // the next one.
        held_[f] = out.io;
        closed.push_back(f);
        done_[f] = true;
        ++done_count_;
        left_ = 0;
        continue;
      }
    }
    out.io.new_pass = loop_wrapped_;
    out.closed = std::move(closed);
    loop_wrapped_ = false;
    return out;
  }
}

}  // namespace blklab::job
