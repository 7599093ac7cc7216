#include "engine/model/tag_set.h"

#include <algorithm>
#include <map>
#include <utility>

namespace blklab::model {

Tags::Tags(Kernel& kernel, std::string name, uint32_t nr_tags)
    : nr_tags_(nr_tags),
      bitmap_tags_(kernel, nr_tags),
      static_rqs_(nr_tags),
      kernel_(kernel),
      rqs_(nr_tags, nullptr),
      rqs_lines_((nr_tags + kRqsPerLine - 1) / kRqsPerLine),
      lock_(kernel.machine(), std::move(name), sim::SpinLockKind::kSpinLockIrqsave, kernel.fn.raw_spin_lock_irqsave,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  for (uint32_t i = 0; i < nr_tags; ++i) static_rqs_[i].tag = i;
}

void Tags::SetRq(sim::Cpu& cpu, uint32_t tag, Request* rq) {
  rqs_[tag] = rq;
  kernel_.WriteLine(cpu, rqs_line(tag));
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
    mq_map_[c] = config.mq_map.empty()
                     ? static_cast<uint32_t>(static_cast<uint64_t>(c) * config.nr_hw_queues / ncpus)
                     : config.mq_map[c];
  }
  poll_map_.resize(ncpus);
  for (int c = 0; c < ncpus && config.nr_poll_queues > 0; ++c) {
    poll_map_[c] = config.nr_hw_queues +
                   (config.poll_map.empty()
                        ? static_cast<uint32_t>(static_cast<uint64_t>(c) * config.nr_poll_queues / ncpus)
                        : config.poll_map[c]);
  }
  const uint32_t nr_tags_objs = config.hctx_shared ? 1 : nr_hw_queues();
  for (uint32_t i = 0; i < nr_tags_objs; ++i) {
    tags_.push_back(std::make_unique<Tags>(kernel, name + ":tags->lock", config.queue_depth));
  }
}

std::vector<uint32_t> GroupCpusEvenly(const sim::Machine& machine, uint32_t nr_groups) {
  const int ncpus = machine.num_cpus();
  std::vector<uint32_t> out(ncpus, 0);
  if (nr_groups <= 1) return out;
  // CPUs per NUMA node, in id order.
  std::map<int, std::vector<int>> nodes;
  for (int c = 0; c < ncpus; ++c) nodes[machine.placement(c).node].push_back(c);
  std::vector<std::pair<int, std::vector<int>*>> order;  // (cpus, node) ascending by size
  for (auto& [node, cpus] : nodes) order.push_back({static_cast<int>(cpus.size()), &cpus});
  if (nr_groups <= nodes.size()) {
    uint32_t g = 0;
    for (auto& [node, cpus] : nodes) {
      for (int c : cpus) out[c] = g % nr_groups;
      ++g;
    }
    return out;
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // alloc_nodes_groups: smallest node first, its share of what is left.
  uint32_t groups_left = nr_groups;
  int cpus_left = ncpus;
  std::map<const std::vector<int>*, uint32_t> node_groups;
  for (auto& [n, cpus] : order) {
    uint32_t v = static_cast<uint32_t>(std::max<int64_t>(1, int64_t{groups_left} * n / cpus_left));
    v = std::min<uint32_t>(v, static_cast<uint32_t>(n));
    node_groups[cpus] = v;
    groups_left -= std::min(groups_left, v);
    cpus_left -= n;
  }
  uint32_t base = 0;
  for (auto& [node, cpus] : nodes) {
    const uint32_t v = std::max<uint32_t>(node_groups[&cpus], 1);
    const uint32_t n = static_cast<uint32_t>(cpus.size());
    const uint32_t per = n / v;
    uint32_t extra = n - v * per;
    std::vector<bool> taken(ncpus, false);
    size_t next = 0;
    for (uint32_t g = 0; g < v; ++g) {
      uint32_t quota = per + (extra > 0 ? 1 : 0);
      if (extra > 0) --extra;
      while (quota > 0 && next < cpus.size()) {
        const int c = cpus[next++];
        if (taken[c]) continue;
        taken[c] = true;
        out[c] = (base + g) % nr_groups;
        --quota;
        // Its SMT siblings next.
        for (int s : cpus) {
          if (quota == 0) break;
          if (!taken[s] && machine.placement(s).core == machine.placement(c).core) {
            taken[s] = true;
            out[s] = (base + g) % nr_groups;
            --quota;
          }
        }
      }
    }
    base += v;
  }
  return out;
}

}  // namespace blklab::model
