#include "engine/model/tag_set.h"

#include <utility>

namespace blklab::model {

Tags::Tags(Kernel& kernel, std::string name, uint32_t nr_tags)
    : nr_tags_(nr_tags),
      bitmap_tags_(kernel, nr_tags),
      static_rqs_(nr_tags),
      rqs_(nr_tags, nullptr),
      lock_(kernel.machine(), std::move(name), kernel.fn.raw_spin_lock_irqsave,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  for (uint32_t i = 0; i < nr_tags; ++i) static_rqs_[i].tag = i;
}

void Tags::InitAsSchedTags() {
  for (uint32_t i = 0; i < nr_tags_; ++i) {
    static_rqs_[i].internal_tag = i;
    static_rqs_[i].tag = kNoTag;
  }
}

TagSet::TagSet(Kernel& kernel, std::string name, const TagSetConfig& config) : config_(config) {
  BLKLAB_CHECK(config.nr_hw_queues > 0 && config.queue_depth > 0);
  const int ncpus = kernel.machine().num_cpus();
  // blk_mq_map_queues without an IRQ affinity map: spread CPUs evenly, with
  // consecutive CPUs on the same queue (the kernel groups by core siblings;
  // the model keeps the simple contiguous split).
  mq_map_.resize(ncpus);
  for (int c = 0; c < ncpus; ++c) {
    mq_map_[c] = static_cast<uint32_t>(static_cast<uint64_t>(c) * config.nr_hw_queues / ncpus);
  }
  poll_map_.resize(ncpus);
  for (int c = 0; c < ncpus && config.nr_poll_queues > 0; ++c) {
    poll_map_[c] = config.nr_hw_queues +
                   static_cast<uint32_t>(static_cast<uint64_t>(c) * config.nr_poll_queues / ncpus);
  }
  const uint32_t nr_tags_objs = config.hctx_shared ? 1 : nr_hw_queues();
  for (uint32_t i = 0; i < nr_tags_objs; ++i) {
    tags_.push_back(std::make_unique<Tags>(kernel, name + ":tags->lock", config.queue_depth));
  }
}

}  // namespace blklab::model
