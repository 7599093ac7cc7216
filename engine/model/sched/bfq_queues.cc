// engine/model/sched/bfq_queues.cc: bfq's groups and queues
// (block/bfq-iosched.c, bfq-cgroup.c): a process's queue found or made,
// stable merges and bursts of new queues, the budget and weight-raising
// durations, and the scheduler-tag limits (bfq_limit_depth). The rest of
// bfq is in bfq.cc (bfq.h describes the whole).
#include <algorithm>
#include <limits>
#include <memory>

#include "engine/model/sched/bfq.h"

namespace blklab::model {
uint32_t BfqSched::LimitDepth(const Bio& bio) {
  // bfq_limit_depth / bfq_update_depths: sync reads use every tag; sync
  // writes (direct I/O) 3/4 of each sched-tags word, 6/16 while a
  // weight-raised queue is busy; async requests (discards) 1/2, 3/16.
  if (word_bits_ == 0) return 0;
  const bool wr = wr_busy_queues_ > 0;
  uint32_t depth = 0;
  if (bio.op == ReqOp::kDiscard) {
    depth = std::max<uint32_t>(wr ? word_bits_ * 3 / 16 : word_bits_ / 2, 1);
  } else if (bio.op != ReqOp::kRead) {
    depth = std::max<uint32_t>(wr ? word_bits_ * 6 / 16 : word_bits_ * 3 / 4, 1);
  }
  // The limit the weights share: nr_requests, scaled by the word depth.
  const uint32_t limit = depth == 0 ? nr_requests_ : nr_requests_ * depth / word_bits_;
  // A queue (or group) holding its share already gets one bit a word.
  // (The kernel takes bfqd->lock for this test; its cost is not charged.)
  if (RequestOverLimit(bio, limit)) return 1;
  return depth;
}

bool BfqSched::RequestOverLimit(const Bio& bio, uint32_t limit) const {
  const Queue* q = FindQueue(BicKey(bio.ioc, bio.blkcg));
  if (q == nullptr || !(q->entity.active || in_service_ == q)) return false;
  // The entities from the top: the queue's group below the root (a cgroup
  // one level deep), then the queue; each must be on its tree.
  const Entity* chain[2];
  int n = 0;
  const Group* g = q->entity.parent;
  if (g != &root_) {
    if (!g->entity.active) return false;
    chain[n++] = &g->entity;
  }
  chain[n++] = &q->entity;
  for (int level = 0; level < n; ++level) {
    const Entity* e = chain[level];
    uint64_t wsum = 0;
    if (e->bfqq == nullptr) {
      wsum = e->parent->st[e->cls].wsum;
    } else {
      // The queue's own class tree, with the higher classes' weights
      // folded in (x IOPRIO_BE_NR each), so a low-priority queue of a higher
      // class is allowed more than a high-priority one of a lower class.
      for (int c = 0; c <= e->cls; ++c) wsum = wsum * 8 + e->parent->st[c].wsum;
    }
    if (wsum == 0) continue;
    // DIV_ROUND_CLOSEST(limit * weight, wsum).
    const uint64_t share = (uint64_t{limit} * static_cast<uint64_t>(e->weight) + wsum / 2) / wsum;
    limit = static_cast<uint32_t>(share);
    if (static_cast<uint64_t>(e->allocated) >= share) return true;
  }
  return false;
}

// --- groups and queues ------------------------------------------------------

BfqSched::Group* BfqSched::GetGroup(int blkcg) {
  if (blkcg == 0) return &root_;
  auto it = groups_.find(blkcg);
  if (it != groups_.end()) return it->second.get();
  auto g = std::make_unique<Group>();
  g->blkcg = blkcg;
  g->entity.id = next_id_++;
  const size_t i = static_cast<size_t>(blkcg);
  g->entity.weight = i < config_.cgroup_weights.size() ? config_.cgroup_weights[i] : 100;
  g->entity.cls = 1;  // BFQ_DEFAULT_GRP_CLASS: the parent's BE tree
  g->entity.parent = &root_;
  g->entity.my_group = g.get();
  Group* raw = g.get();
  groups_.emplace(blkcg, std::move(g));
  return raw;
}

BfqSched::Queue* BfqSched::FindQueue(uint64_t bic) const {
  if (auto m = merged_into_.find(bic); m != merged_into_.end()) return m->second;
  auto it = queues_.find(bic);
  return it != queues_.end() ? it->second.get() : nullptr;
}

BfqSched::Queue* BfqSched::GetQueue(sim::Cpu& cpu, uint32_t ioc, int blkcg, int ioprio_class, int ioprio_level) {
  const uint64_t key = BicKey(ioc, blkcg);
  if (Queue* q = FindQueue(key); q != nullptr) return q;
  Group* group = GetGroup(blkcg);
  const sim::SimTime now = cpu.now();
  // bfq_do_or_sched_stable_merge: a queue created within the burst interval
  // of the group's last one, with its priority, joins it on a
  // non-rotational queueing device (nonrot_with_queueing: hw_tag unknown
  // counts as queueing until bfq_update_hw_tag decides).
  Queue* last = group->last_created;
  const bool same_prio = last != nullptr && last->ioprio_class == ioprio_class && last->ioprio_level == ioprio_level;
  if (last == nullptr || now > last->creation_time + kStableMergeWindowNs || !same_prio) {
    group->last_created = nullptr;  // set to the new queue below
  } else if (config_.stable_merge && now <= last->creation_time + kBurstIntervalNs && !config_.rotational &&
             hw_tag_ != 0) {
    merged_into_.emplace(key, last);
    ++stats_.stable_merges;
    kernel_.Count(Counter::k_bfq_stable_merged);
    return last;
  }
  // bfq_get_queue + bfq_init_bfqq.
  auto q = std::make_unique<Queue>();
  q->key = key;
  q->creation_time = now;
  q->ioprio_class = ioprio_class;
  q->ioprio_level = ioprio_level;
  q->entity.id = next_id_++;
  q->entity.cls = ClassIndex(ioprio_class);
  const int level = q->entity.cls == 2 ? 7 : ioprio_level;
  q->orig_weight = IoprioToWeight(level);
  q->entity.weight = q->orig_weight;
  q->entity.parent = group;
  q->entity.bfqq = q.get();
  q->max_budget = 2 * MaxBudget() / 3;
  q->budget_timeout = std::numeric_limits<int64_t>::min() / 2;  // "idle since forever"
  q->seek_history = 1;
  q->last_end_request = cpu.now() + 1;
  Queue* raw = q.get();
  queues_.emplace(key, std::move(q));
  if (group->last_created == nullptr) group->last_created = raw;
  ++stats_.queues_created;
  // bfq_init_rq -> bfq_handle_burst for a just-created queue.
  if (burst_size_ > 0 || busy_queues_ == 0) HandleBurst(cpu.now(), raw);
  return raw;
}

void BfqSched::HandleBurst(sim::SimTime now, Queue* q) {
  if (q->in_large_burst) return;
  if (now > last_ins_in_burst_ + kBurstIntervalNs) {
    large_burst_ = false;
    burst_list_.clear();
    burst_size_ = 0;
    if (busy_queues_ == 0) {
      burst_list_.push_back(q);
      burst_size_ = 1;
    }
  } else if (large_burst_) {
    q->in_large_burst = true;
  } else if (++burst_size_ >= kLargeBurstThresh) {
    large_burst_ = true;
    for (Queue* b : burst_list_) b->in_large_burst = true;
    q->in_large_burst = true;
    burst_list_.clear();
  } else {
    burst_list_.push_back(q);
  }
  last_ins_in_burst_ = now;
}

uint64_t BfqSched::MaxBudget() const {
  // bfq_max_budget: the default until 194 budgets were assigned.
  if (config_.user_max_budget > 0) return config_.user_max_budget;
  if (budgets_assigned_ < kStatsMinBudgets) return kDefaultMaxBudget;
  // bfq_calc_max_budget: sectors at the peak rate in one timeout.
  return std::max<uint64_t>(static_cast<uint64_t>(peak_rate_ * static_cast<double>(config_.timeout_ns) / 1e9), 32);
}

int64_t BfqSched::WrDuration() const {
  const int r = config_.rotational ? 0 : 1;
  const double dur_ms = kRefRate[r] * static_cast<double>(kRefWrDurationMs[r]) / std::max(peak_rate_, 1.0);
  return static_cast<int64_t>(std::clamp(dur_ms, 3000.0, 25000.0) * 1e6);
}

uint64_t BfqSched::Delta(uint64_t service, int weight) {
  return (service << kServiceShift) / static_cast<uint64_t>(std::max(weight, 1));
}

}  // namespace blklab::model
