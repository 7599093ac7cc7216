#include "engine/model/sched/mq_deadline.h"

#include <bit>
#include <memory>

namespace blklab::model {

namespace {
constexpr uint32_t kMaxMergeBytes = 512 * 1024;  // max_sectors_kb default
}  // namespace

DeadlineConfig DeadlineConfig::From(const host::DeadlineTunables& iosched, const host::Knobs& knobs) {
  DeadlineConfig dd;
  dd.read_expire_ns = int64_t{iosched.read_expire} * sim::kNsPerMs;
  dd.write_expire_ns = int64_t{iosched.write_expire} * sim::kNsPerMs;
  dd.writes_starved = iosched.writes_starved;
  dd.fifo_batch = iosched.fifo_batch;
  dd.front_merges = iosched.front_merges;
  dd.serialize_dispatch = knobs.dd_serialize_dispatch;
  dd.insert_side_lists = knobs.dd_insert_side_lists;
  dd.skip_merge_if_contended = knobs.dd_skip_merge_if_contended;
  return dd;
}

// elevator_type mq-deadline: init_sched (dd_init_sched).
const ElevatorType kMqDeadlineElevator = {
    host::Scheduler::kMqDeadline,
    [](const ElevatorInit& init) -> std::unique_ptr<Elevator> {
      return std::make_unique<DeadlineSched>(*init.kernel, init.qname,
                                             DeadlineConfig::From(init.sysfs->iosched, init.kernel->knobs()));
    },
};

DeadlineSched::DeadlineSched(Kernel& kernel, const std::string& qname, const DeadlineConfig& config)
    : kernel_(kernel),
      config_(config),
      lock_(kernel.machine(), qname + ":dd->lock", kernel.fn.raw_spin_lock,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()),
      insert_lock_(kernel.machine(), qname + ":dd->insert_lock", kernel.fn.raw_spin_lock,
                   kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  fn_bio_merge_ = kernel.Intern("dd_bio_merge");
  fn_insert_ = kernel.Intern("dd_insert_requests");
  fn_dispatch_ = kernel.Intern("dd_dispatch_request");
  fn_has_work_ = kernel.Intern("dd_has_work");
  fn_finish_ = kernel.Intern("dd_finish_request");
}

sim::Task DeadlineSched::BioMerge(sim::Cpu& cpu, Hctx*, Bio* bio, Request** merged_into) {
  *merged_into = nullptr;
  if (config_.skip_merge_if_contended) {
    if (!lock_.TryLock(cpu)) {
      ++stats_.merge_skipped;
      co_return;
    }
  } else {
    co_await lock_.Lock(cpu);
  }
  cpu.Charge(fn_bio_merge_, kernel_.costs().dd_bio_merge);
  co_await cpu.Sync();
  const int dir = bio->op == ReqOp::kWrite ? 1 : 0;
  // Back merge: a queued request of the same direction ending where the bio starts.
  auto h = hash_.lower_bound(SortKey{bio->sector, 0});
  if (h != hash_.end() && h->first.first == bio->sector && Dir(h->second) == dir &&
      h->second->op == bio->op && h->second->bytes + bio->bytes <= kMaxMergeBytes) {
    Request* rq = h->second;
    hash_.erase(h);
    rq->biotail->bi_next = bio;
    rq->biotail = bio;
    bio->bi_next = nullptr;
    rq->bytes += bio->bytes;
    ++rq->nr_bios;
    hash_.emplace(SortKey{EndSector(rq), rq->sched_seq}, rq);
    *merged_into = rq;
  } else if (config_.front_merges) {
    // Front merge: a request starting where the bio ends.
    const uint64_t end = bio->sector + (bio->bytes >> kSectorShift);
    auto s = sort_[dir].lower_bound(SortKey{end, 0});
    if (s != sort_[dir].end() && s->first.first == end && s->second->op == bio->op &&
        s->second->bytes + bio->bytes <= kMaxMergeBytes) {
      Request* rq = s->second;
      sort_[dir].erase(s);
      bio->bi_next = rq->bio;
      rq->bio = bio;
      rq->sector = bio->sector;
      rq->bytes += bio->bytes;
      ++rq->nr_bios;
      sort_[dir].emplace(SortKey{rq->sector, rq->sched_seq}, rq);
      *merged_into = rq;
    }
  }
  if (*merged_into != nullptr) ++stats_.merged;
  lock_.Unlock(cpu);
}

void DeadlineSched::DoInsert(sim::Cpu& cpu, Request* rq) {
  // dd_insert_request: rb insert by sector, FIFO tail with its deadline, hash add.
  const auto& c = kernel_.costs();
  const int64_t log2q = queued_ > 1 ? std::bit_width(queued_) - 1 : 0;
  cpu.Charge(fn_insert_, c.dd_insert_request + c.dd_insert_per_log2 * log2q);
  const int dir = Dir(rq);
  rq->sched_seq = next_seq_++;
  rq->fifo_time = cpu.now() + (dir == 1 ? config_.write_expire_ns : config_.read_expire_ns);
  sort_[dir].emplace(SortKey{rq->sector, rq->sched_seq}, rq);
  fifo_[dir].emplace(FifoKey{rq->fifo_time, rq->sched_seq}, rq);
  hash_.emplace(SortKey{EndSector(rq), rq->sched_seq}, rq);
  ++queued_;
  ++stats_.inserted;
}

sim::Task DeadlineSched::InsertRequests(sim::Cpu& cpu, Hctx*, RequestList& list) {
  co_await cpu.Sync();
  if (config_.insert_side_lists) {
    co_await insert_lock_.Lock(cpu);
    cpu.Charge(fn_insert_, side_list_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().dd_side_list_add));
    side_list_.splice_tail(list);
    co_await cpu.Sync();
    insert_lock_.Unlock(cpu);
    co_return;
  }
  co_await lock_.Lock(cpu);
  while (!list.empty()) DoInsert(cpu, list.pop_front());
  co_await cpu.Sync();
  lock_.Unlock(cpu);
}

bool DeadlineSched::HasWork(sim::Cpu& cpu, Hctx*) {
  // dd_has_work: list_empty_careful on the dispatch/FIFO heads and side lists.
  const sim::Machine& m = kernel_.machine();
  int64_t cost = lock_.data_line().Read(m, cpu.id(), kernel_.costs().dd_has_work);
  if (config_.insert_side_lists) cost += side_list_line_.Read(m, cpu.id(), kernel_.costs().line_read_hit);
  cpu.Charge(fn_has_work_, cost);
  return queued_ > 0 || !side_list_.empty();
}

void DeadlineSched::Remove(Request* rq) {
  const int dir = Dir(rq);
  sort_[dir].erase(SortKey{rq->sector, rq->sched_seq});
  fifo_[dir].erase(FifoKey{rq->fifo_time, rq->sched_seq});
  hash_.erase(SortKey{EndSector(rq), rq->sched_seq});
  --queued_;
}

Request* DeadlineSched::Choose(sim::Cpu& cpu) {
  // __dd_dispatch_request for the one (BE) priority level.
  auto next_in_sort = [this](int dir) -> Request* {
    auto it = sort_[dir].lower_bound(SortKey{latest_pos_[dir], 0});
    return it == sort_[dir].end() ? nullptr : it->second;
  };
  auto fifo_expired = [this, &cpu](int dir) {
    return !fifo_[dir].empty() && fifo_[dir].begin()->first.first <= cpu.now();
  };
  Request* rq = nullptr;
  // Continue the current batch in sector order.
  if (batching_ < config_.fifo_batch) rq = next_in_sort(last_dir_);
  if (rq == nullptr) {
    const bool reads = !fifo_[0].empty();
    const bool writes = !fifo_[1].empty();
    int dir;
    if (reads && (!writes || starved_ < config_.writes_starved)) {
      if (writes) ++starved_;
      dir = 0;
    } else if (writes) {
      starved_ = 0;
      dir = 1;
    } else {
      return nullptr;
    }
    // The FIFO head if it expired or the sort order wrapped, else the next
    // request in sort order.
    Request* next = next_in_sort(dir);
    if (fifo_expired(dir) || next == nullptr) {
      rq = fifo_[dir].begin()->second;
    } else {
      rq = next;
    }
    last_dir_ = dir;
    batching_ = 0;
  }
  Remove(rq);
  latest_pos_[Dir(rq)] = EndSector(rq);
  ++batching_;
  ++stats_.dispatched;
  return rq;
}

sim::Task DeadlineSched::DispatchRequest(sim::Cpu& cpu, Hctx*, Request** out) {
  *out = nullptr;
  co_await cpu.Sync();
  const sim::Machine& m = kernel_.machine();
  if (config_.serialize_dispatch) {
    // test_bit(DD_DISPATCHING) || test_and_set_bit(DD_DISPATCHING)
    cpu.Charge(fn_dispatch_, run_state_line_.Read(m, cpu.id(), kernel_.costs().line_read_hit));
    if (dispatching_) {
      ++stats_.dispatch_skipped;
      co_return;
    }
    cpu.Charge(fn_dispatch_, run_state_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
    dispatching_ = true;
  }
  co_await lock_.Lock(cpu);
  if (config_.insert_side_lists && !side_list_.empty()) {
    co_await insert_lock_.Lock(cpu);
    RequestList moved;
    moved.splice_tail(side_list_);
    cpu.Charge(fn_insert_, side_list_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
    co_await cpu.Sync();
    insert_lock_.Unlock(cpu);
    while (!moved.empty()) DoInsert(cpu, moved.pop_front());
  }
  cpu.Charge(fn_dispatch_, kernel_.costs().dd_dispatch_request);
  *out = Choose(cpu);
  co_await cpu.Sync();
  lock_.Unlock(cpu);
  if (config_.serialize_dispatch) {
    cpu.Charge(fn_dispatch_, run_state_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
    dispatching_ = false;
  }
}

void DeadlineSched::FinishRequest(sim::Cpu& cpu, Request* rq) {
  // dd_finish_request: atomic_inc(&per_prio->stats.completed).
  cpu.Charge(fn_finish_, stats_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  ++stats_.completed;
}

}  // namespace blklab::model
