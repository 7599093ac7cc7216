#include "engine/model/sched/mq_deadline.h"

#include "engine/model/hctx.h"

#include <algorithm>
#include <iterator>
#include <memory>

namespace blklab::model {

namespace {
}  // namespace

DeadlineConfig DeadlineConfig::From(const host::IoschedTunables& iosched, const host::Knobs& knobs) {
  DeadlineConfig dd;
  dd.read_expire_ns = int64_t{iosched.read_expire} * sim::kNsPerMs;
  dd.write_expire_ns = int64_t{iosched.write_expire} * sim::kNsPerMs;
  dd.writes_starved = iosched.writes_starved;
  dd.fifo_batch = iosched.fifo_batch;
  dd.front_merges = iosched.front_merges;
  dd.serialize_dispatch = knobs.dd_serialize_dispatch;
  dd.insert_side_lists = knobs.dd_insert_side_lists;
  dd.skip_merge_if_contended = knobs.dd_skip_merge_if_contended;
  dd.insert_buckets = knobs.dd_insert_buckets;
  dd.prio_aging_expire_ns = int64_t{iosched.prio_aging_expire} * sim::kNsPerMs;
  dd.async_depth = static_cast<uint32_t>(iosched.async_depth);
  dd.async_depth_scaled = knobs.dd_async_depth_scaled;
  dd.async_depth_old_nr_requests = knobs.dd_async_depth_old_nr_requests;
  return dd;
}

// elevator_type mq-deadline: init_sched (dd_init_sched).
const ElevatorType kMqDeadlineElevator = {
    host::Scheduler::kMqDeadline,
    [](const ElevatorInit& init) -> std::unique_ptr<Elevator> {
      DeadlineConfig config = DeadlineConfig::From(init.sysfs->iosched, init.kernel->knobs());
      config.noxmerges = init.sysfs->nomerges == 1;
      config.max_request_bytes = init.max_request_bytes;
      return std::make_unique<DeadlineSched>(*init.kernel, init.qname, config);
    },
};

DeadlineSched::InsertBucket::InsertBucket(Kernel& kernel, const std::string& name)
    : lock(kernel.machine(), name, sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
           kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  lock.set_explicit_working_set();
}

DeadlineSched::DeadlineSched(Kernel& kernel, const std::string& qname, const DeadlineConfig& config)
    : kernel_(kernel),
      config_(config),
      lock_(kernel.machine(), qname + ":dd->lock", sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()),
      insert_lock_(kernel.machine(), qname + ":dd->insert_lock", sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
                   kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  // The sections below charge their own lines; the side-list patch puts
  // insert_lock beside dd->lock in one cacheline-aligned struct.
  lock_.set_explicit_working_set();
  insert_lock_.set_explicit_working_set();
  insert_lock_.ShareLockLine(lock_);
  fn_bio_merge_ = kernel.Intern("dd_bio_merge");
  fn_insert_ = kernel.Intern("dd_insert_requests");
  fn_dispatch_ = kernel.Intern("dd_dispatch_request");
  fn_has_work_ = kernel.Intern("dd_has_work");
  fn_finish_ = kernel.Intern("dd_finish_request");
  prio_[kRtPrio].sort_line = prio_[kRtPrio].fifo_line = &rt_line_;
  prio_[kBePrio].sort_line = &be_sort_line_;
  prio_[kBePrio].fifo_line = &be_fifo_line_;
  prio_[kIdlePrio].sort_line = prio_[kIdlePrio].fifo_line = &idle_line_;
  if (config_.insert_buckets) {
    // One lock class for the 32 buckets, as lockstat reports it.
    for (int i = 0; i < kCpuBuckets; ++i) {
      cpu_buckets_.push_back(std::make_unique<InsertBucket>(kernel, qname + ":dd->bucket_lists[].lock"));
    }
  }
}

void DeadlineSched::InitHctx(Hctx* hctx) {
  SbitmapQueue& sbq = hctx->sched_tags()->bitmap_tags();
  const int shift = sbq.shift();
  if (config_.async_depth_scaled) {
    // dd_depth_updated (6.11+, 6.1.105+): async_depth = nr_requests unless
    // written; dd_to_word_depth scales it to a word, rounding up; the
    // shallowest allocation may take one bit a word. In 6.1.192 a write of
    // nr_requests reaches dd_depth_updated before q->nr_requests changes:
    // async_depth keeps the elevator's own default (blk_mq_init_sched's
    // 2 x min(tags, BLKDEV_DEFAULT_RQ)), the scaling divides by the new.
    const uint64_t nrr = std::max<uint32_t>(1, hctx->sched_tags()->nr_tags());
    const uint64_t elevator_default =
        static_cast<uint64_t>(host::DefaultNrRequests(static_cast<int>(hctx->tags().nr_tags()),
                                                      host::Scheduler::kMqDeadline));
    const uint64_t depth = config_.async_depth > 0                 ? config_.async_depth
                           : config_.async_depth_old_nr_requests ? elevator_default
                                                                   : nrr;
    async_depth_ = static_cast<uint32_t>(std::max<uint64_t>(1, ((depth << shift) + nrr - 1) / nrr));
    sbq.SetMinShallowDepth(1);
  } else {
    // dd_depth_updated (6.6-6.10): max(1, 3 * (1 << shift) / 4), a depth per
    // sbitmap word (the sysfs value, when set, is used as given).
    async_depth_ = config_.async_depth > 0 ? config_.async_depth : std::max(1u, 3 * (1u << shift) / 4);
    sbq.SetMinShallowDepth(async_depth_);
  }
}

int DeadlineSched::HashBucket(uint64_t end_sector) {
  // hash_64(key, ELV_HASH_BITS) with GOLDEN_RATIO_64.
  return static_cast<int>((end_sector * 0x61C8864680B583EBull) >> (64 - 6));
}

void DeadlineSched::ProbeHash(sim::AccessCost& ac, uint64_t sector) {
  const int b = HashBucket(sector);
  ac.Load(hash_lines_[b / kHashBucketsPerLine]);
  for (Request* rq : buckets_[b]) ac.Load(rq->line);
}

void DeadlineSched::HashAdd(sim::AccessCost& ac, Request* rq) {
  // hlist_add_head: the bucket head and the old first node's pprev.
  const int b = HashBucket(EndSector(rq));
  ac.Store(hash_lines_[b / kHashBucketsPerLine]);
  if (!buckets_[b].empty()) ac.Store(buckets_[b].back()->line);
  buckets_[b].push_back(rq);
}

void DeadlineSched::HashDel(sim::AccessCost& ac, Request* rq) {
  // hlist_del_init: the previous node (or the bucket head) and the next one.
  const int b = HashBucket(EndSector(rq));
  std::vector<Request*>& chain = buckets_[b];
  size_t i = 0;
  while (i < chain.size() && chain[i] != rq) ++i;
  BLKLAB_CHECK(i < chain.size());
  ac.Store(i + 1 == chain.size() ? hash_lines_[b / kHashBucketsPerLine] : chain[i + 1]->line);
  if (i > 0) ac.Store(chain[i - 1]->line);
  chain.erase(chain.begin() + static_cast<std::ptrdiff_t>(i));
}

void DeadlineSched::ProbeLastMerge(sim::AccessCost& ac) {
  ac.Load(last_merge_line_);
  if (last_merge_ != nullptr) ac.Load(last_merge_->line);
}

sim::Task DeadlineSched::BioMerge(sim::Cpu& cpu, Hctx*, Bio* bio, Request** merged_into) {
  sim::StackFrame frame(cpu, fn_bio_merge_);
  *merged_into = nullptr;
  if (config_.skip_merge_if_contended) {
    if (!lock_.TryLock(cpu)) {
      ++stats_.merge_skipped;
      co_return;
    }
  } else {
    co_await lock_.Lock(cpu);
  }
  const int dir = bio->op == ReqOp::kWrite ? 1 : 0;
  PerPrio& p = prio_[static_cast<size_t>(PrioOf(bio->ioprio_class))];
  // blk_rq_merge_ok: same direction, op and I/O priority.
  auto back_mergeable = [this, bio, dir](const Request* rq) {
    return EndSector(rq) == bio->sector && Dir(rq) == dir && rq->op == bio->op &&
           rq->ioprio_class == bio->ioprio_class && rq->bytes + bio->bytes <= config_.max_request_bytes;
  };
  // elv_merge: the last_merge one-hit cache, then the hash (back merge), then
  // dd_request_merge's sort-tree lookup (front merge).
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().dd_bio_merge);
  ProbeLastMerge(ac);
  Request* back = nullptr;
  const uint64_t end = bio->sector + (bio->bytes >> kSectorShift);
  // blk_try_merge on q->last_merge: a back merge, or a front merge whatever
  // front_merges says; with NOXMERGES nothing else is tried.
  Request* front_hit = last_merge_ != nullptr && last_merge_->sector == end && Dir(last_merge_) == dir &&
                               last_merge_->op == bio->op && last_merge_->ioprio_class == bio->ioprio_class &&
                               last_merge_->bytes + bio->bytes <= config_.max_request_bytes
                           ? last_merge_
                           : nullptr;
  if (last_merge_ != nullptr && back_mergeable(last_merge_)) {
    back = last_merge_;
  } else if (!config_.noxmerges && front_hit == nullptr) {
    ProbeHash(ac, bio->sector);
    auto h = hash_.lower_bound(SortKey{bio->sector, 0});
    if (h != hash_.end() && h->first.first == bio->sector && back_mergeable(h->second)) back = h->second;
  }
  if (back != nullptr) {
    // bio_attempt_back_merge + elv_rqhash_reposition.
    Request* rq = back;
    hash_.erase(SortKey{EndSector(rq), rq->sched_seq});
    HashDel(ac, rq);
    rq->biotail->bi_next = bio;
    rq->biotail = bio;
    bio->bi_next = nullptr;
    rq->bytes += bio->bytes;
    ++rq->nr_bios;
    hash_.emplace(SortKey{EndSector(rq), rq->sched_seq}, rq);
    HashAdd(ac, rq);
    ac.Store(rq->line);
    *merged_into = rq;
  } else if (front_hit != nullptr || (config_.front_merges && !config_.noxmerges)) {
    // Front merge: a request starting where the bio ends (last_merge, else
    // dd_request_merge's sort-tree lookup).
    ac.Load(*p.sort_line);
    Request* rq = front_hit != nullptr ? front_hit : p.sort[dir].LowerBound(SortTree::Key{end, 0}, NodeReader(ac));
    if (rq != nullptr && rq->sector == end && rq->op == bio->op && rq->ioprio_class == bio->ioprio_class &&
        rq->bytes + bio->bytes <= config_.max_request_bytes) {
      // dd_request_merged: the request moves in the sort tree.
      p.sort[dir].Erase(rq, NodeReader(ac), NodeWriter(ac, p));
      bio->bi_next = rq->bio;
      rq->bio = bio;
      rq->sector = bio->sector;
      rq->bytes += bio->bytes;
      ++rq->nr_bios;
      p.sort[dir].Insert(rq, NodeReader(ac), NodeWriter(ac, p));
      ac.Store(rq->line);
      *merged_into = rq;
    }
  }
  if (*merged_into != nullptr) {
    ++stats_.merged;
    last_merge_ = *merged_into;  // elv_merged_request: q->last_merge = rq
    ac.Store(last_merge_line_);
  }
  cpu.Charge(fn_bio_merge_, ac.Take());
  co_await cpu.Sync();
  lock_.Unlock(cpu);
}

void DeadlineSched::DoInsert(sim::Cpu& cpu, Request* rq) {
  // dd_insert_request: stats, the insert-merge probe, rb insert by sector,
  // hash add, last_merge, FIFO tail with its deadline.
  const int dir = Dir(rq);
  PerPrio& p = prio_[static_cast<size_t>(PrioOf(rq->ioprio_class))];
  rq->sched_seq = next_seq_++;
  rq->fifo_time = cpu.now() + (dir == 1 ? config_.write_expire_ns : config_.read_expire_ns);
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().dd_insert_request);
  ac.Store(*p.fifo_line);  // stats.inserted++
  ProbeLastMerge(ac);      // elv_attempt_insert_merge
  ProbeHash(ac, rq->sector);
  // elv_rb_add: descend from the root, link under the last node visited.
  ac.Load(*p.sort_line);
  ac.Store(rq->line);
  p.sort[dir].Insert(rq, NodeReader(ac), NodeWriter(ac, p));
  hash_.emplace(SortKey{EndSector(rq), rq->sched_seq}, rq);
  HashAdd(ac, rq);
  if (last_merge_ == nullptr) {
    last_merge_ = rq;
    ac.Store(last_merge_line_);
  }
  // list_add_tail: the head (L2) and the old tail's queuelist.
  if (!p.fifo[dir].empty()) ac.Store(p.fifo[dir].rbegin()->second->line);
  p.fifo[dir].emplace(FifoKey{rq->fifo_time, rq->sched_seq}, rq);
  ++p.inserted;
  ++queued_;
  ++stats_.inserted;
  cpu.Charge(fn_insert_, ac.Take());
}

sim::Task DeadlineSched::InsertRequests(sim::Cpu& cpu, Hctx*, RequestList& list) {
  sim::StackFrame frame(cpu, fn_insert_);
  co_await cpu.Sync();
  if (config_.insert_side_lists) {
    co_await insert_lock_.Lock(cpu);
    // list_splice_tail_init onto at_tail: its head and the old tail.
    sim::AccessCost ac = kernel_.Access(cpu);
    ac.Work(kernel_.costs().dd_list_splice);
    ac.Store(run_state_line_);  // at_tail's head
    if (!side_list_.empty()) ac.Store(side_list_.back()->line);
    cpu.Charge(fn_insert_, ac.Take());
    side_list_.splice_tail(list);
    co_await cpu.Sync();
    insert_lock_.Unlock(cpu);
    co_return;
  }
  if (config_.insert_buckets) {
    bool bucketed = false;
    co_await InsertToBucket(cpu, list, &bucketed);
    if (bucketed) co_return;
    // Loop while DD_BUCKETS is set: a bucket insert may race with the
    // clearing of DD_INSERTING.
    do {
      co_await InsertDrainingBuckets(cpu, list);
      co_await cpu.Sync();
      cpu.Charge(fn_insert_, run_state_line_.Read(kernel_.machine(), cpu.id(), kernel_.costs().line_read_hit));
    } while (buckets_set_);
    lock_.Unlock(cpu);
    co_return;
  }
  co_await lock_.Lock(cpu);
  while (!list.empty()) DoInsert(cpu, list.pop_front());
  co_await cpu.Sync();
  lock_.Unlock(cpu);
}

sim::Task DeadlineSched::InsertToBucket(sim::Cpu& cpu, RequestList& list, bool* bucketed) {
  const sim::Machine& m = kernel_.machine();
  const host::CostTable& c = kernel_.costs();
  *bucketed = false;
  co_await cpu.Sync();
  if (lock_.TryLock(cpu)) co_return;
  // test_bit(DD_INSERTING): nobody is inserting, so wait for the lock.
  cpu.Charge(fn_insert_, run_state_line_.Read(m, cpu.id(), c.line_read_hit));
  if (!inserting_) {
    co_await lock_.Lock(cpu);
    co_return;
  }
  if (!buckets_set_) {
    cpu.Charge(fn_insert_, run_state_line_.Write(m, cpu.id(), c.atomic_local));
    buckets_set_ = true;
  }
  // bucket_lists[get_cpu() & DD_CPU_BUCKETS_MASK]: list_splice_init under
  // the bucket's lock; the head shares the lock's line.
  InsertBucket& b = *cpu_buckets_[static_cast<size_t>(cpu.id() % kCpuBuckets)];
  co_await b.lock.Lock(cpu);
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(c.dd_list_splice);
  ac.Store(b.lock.lock_line());
  if (!b.list.empty()) ac.Store(b.list.front()->line);
  cpu.Charge(fn_insert_, ac.Take());
  in_buckets_ += list.size();
  b.list.splice_tail(list);
  ++stats_.bucket_inserts;
  kernel_.Count(Counter::k_dd_bucket_insert);
  co_await cpu.Sync();
  b.lock.Unlock(cpu);
  // Insertion still running: it will collect the bucket.
  cpu.Charge(fn_insert_, run_state_line_.Read(m, cpu.id(), c.line_read_hit));
  if (inserting_) {
    *bucketed = true;
    co_return;
  }
  // Too late: take the lock; the insert below drains this bucket too.
  co_await lock_.Lock(cpu);
}

sim::Task DeadlineSched::InsertDrainingBuckets(sim::Cpu& cpu, RequestList& list) {
  const sim::Machine& m = kernel_.machine();
  co_await cpu.Sync();
  cpu.Charge(fn_insert_, run_state_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
  inserting_ = true;  // set_bit(DD_INSERTING)
  while (true) {
    while (!list.empty()) DoInsert(cpu, list.pop_front());
    co_await CollectBuckets(cpu, list);
    if (list.empty()) break;
  }
  co_await cpu.Sync();
  cpu.Charge(fn_insert_, run_state_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
  inserting_ = false;  // clear_bit(DD_INSERTING)
}

sim::Task DeadlineSched::CollectBuckets(sim::Cpu& cpu, RequestList& list) {
  const sim::Machine& m = kernel_.machine();
  const host::CostTable& c = kernel_.costs();
  co_await cpu.Sync();
  // test_bit(DD_BUCKETS) || test_and_clear_bit(DD_BUCKETS)
  cpu.Charge(fn_insert_, run_state_line_.Read(m, cpu.id(), c.line_read_hit));
  if (!buckets_set_) co_return;
  cpu.Charge(fn_insert_, run_state_line_.Write(m, cpu.id(), c.atomic_local));
  buckets_set_ = false;
  // list_empty_careful of every bucket: 32 independent loads.
  sim::AccessCost scan = kernel_.Access(cpu);
  for (const auto& b : cpu_buckets_) scan.LoadIndependent(b->lock.lock_line());
  cpu.Charge(fn_insert_, scan.Take());
  for (const auto& b : cpu_buckets_) {
    co_await cpu.Sync();
    if (b->list.empty()) continue;
    co_await b->lock.Lock(cpu);
    sim::AccessCost ac = kernel_.Access(cpu);
    ac.Work(c.dd_list_splice);
    ac.Store(b->lock.lock_line());
    ac.LoadIndependent(b->list.front()->line);
    ac.LoadIndependent(b->list.back()->line);
    cpu.Charge(fn_insert_, ac.Take());
    in_buckets_ -= b->list.size();
    list.splice_tail(b->list);
    co_await cpu.Sync();
    b->lock.Unlock(cpu);
  }
}

bool DeadlineSched::HasWork(sim::Cpu& cpu, Hctx*) {
  // dd_has_work: list_empty_careful on the dispatch and FIFO heads of every
  // priority level (L0-L3) and the side lists: independent loads.
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().dd_has_work);
  ac.LoadIndependent(rt_line_);
  ac.LoadIndependent(be_sort_line_);
  ac.LoadIndependent(be_fifo_line_);
  ac.LoadIndependent(idle_line_);
  if (config_.insert_side_lists) ac.LoadIndependent(run_state_line_);  // at_head, at_tail
  cpu.Charge(fn_has_work_, ac.Take());
  return queued_ > 0 || !side_list_.empty();
}

void DeadlineSched::Remove(sim::AccessCost& ac, Request* rq) {
  // deadline_remove_request: list_del_init (FIFO neighbours), elv_rb_del
  // (relinks the nodes around it), elv_rqhash_del, last_merge.
  const int dir = Dir(rq);
  PerPrio& p = prio_[static_cast<size_t>(PrioOf(rq->ioprio_class))];
  auto it = p.fifo[dir].find(FifoKey{rq->fifo_time, rq->sched_seq});
  BLKLAB_CHECK(it != p.fifo[dir].end());
  ac.Store(it == p.fifo[dir].begin() ? *p.fifo_line : std::prev(it)->second->line);
  auto next = std::next(it);
  ac.Store(next == p.fifo[dir].end() ? *p.fifo_line : next->second->line);
  p.fifo[dir].erase(it);
  p.sort[dir].Erase(rq, NodeReader(ac), NodeWriter(ac, p));
  hash_.erase(SortKey{EndSector(rq), rq->sched_seq});
  HashDel(ac, rq);
  if (last_merge_ == rq) {
    last_merge_ = nullptr;
    ac.Store(last_merge_line_);
  }
  ac.Store(rq->line);
  --queued_;
}

Request* DeadlineSched::Choose(sim::Cpu& cpu) {
  // dd_dispatch_request: dd_queued of the three levels (stats in L1, L2
  // (with the atomic completed) and L4, RT's in L0), the aged requests of
  // the lower levels, then the levels in order.
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().dd_dispatch_request);
  ac.LoadIndependent(be_sort_line_);
  ac.LoadIndependent(be_fifo_line_);
  ac.LoadIndependent(state_line_);
  ac.LoadIndependent(rt_line_);
  Request* rq = nullptr;
  int levels = 0;
  for (const PerPrio& p : prio_) levels += p.queued() > 0 ? 1 : 0;
  if (config_.prio_aging_expire_ns > 0 && levels >= 2) {
    // dd_dispatch_prio_aged_requests: BE, then IDLE, if inserted before
    // now - prio_aging_expire.
    for (int prio = kBePrio; prio < kPrios && rq == nullptr; ++prio) {
      rq = ChooseFrom(cpu, ac, prio_[static_cast<size_t>(prio)], cpu.now() - config_.prio_aging_expire_ns);
    }
  }
  for (int prio = kRtPrio; prio < kPrios && rq == nullptr; ++prio) {
    PerPrio& p = prio_[static_cast<size_t>(prio)];
    rq = ChooseFrom(cpu, ac, p, cpu.now());
    if (p.queued() > 0) break;  // a lower level waits while this one has requests
  }
  if (rq != nullptr) ++stats_.dispatched;
  cpu.Charge(fn_dispatch_, ac.Take());
  return rq;
}

Request* DeadlineSched::ChooseFrom(sim::Cpu& cpu, sim::AccessCost& ac, PerPrio& p, sim::SimTime latest_start) {
  // __dd_dispatch_request for one level.
  if (p.empty()) return nullptr;
  // deadline_from_pos: the first request at or after latest_pos[dir].
  auto next_in_sort = [this, &ac, &p](int dir) -> Request* {
    return p.sort[dir].LowerBound(SortTree::Key{p.latest_pos[dir], 0}, NodeReader(ac));
  };
  // deadline_check_fifo: the FIFO head's fifo_time.
  auto fifo_expired = [&cpu, &ac, &p](int dir) {
    if (p.fifo[dir].empty()) return false;
    Request* head = p.fifo[dir].begin()->second;
    ac.Load(head->line);
    return head->fifo_time <= cpu.now();
  };
  // started_after: the insertion time is fifo_time less the direction's expiry.
  auto started_after = [this, latest_start](const Request* r) {
    return r->fifo_time - (Dir(r) == 1 ? config_.write_expire_ns : config_.read_expire_ns) > latest_start;
  };
  Request* rq = nullptr;
  // Continue the current batch in sector order.
  if (batching_ < config_.fifo_batch && !p.sort[last_dir_].empty()) rq = next_in_sort(last_dir_);
  if (rq == nullptr) {
    const bool reads = !p.fifo[0].empty();
    const bool writes = !p.fifo[1].empty();
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
      rq = p.fifo[dir].begin()->second;
    } else {
      rq = next;
    }
    last_dir_ = dir;
    batching_ = 0;
  }
  if (started_after(rq)) return nullptr;
  ac.Store(state_line_);    // batching, last_dir, starved
  ac.Store(*p.fifo_line);   // latest_pos, stats.dispatched
  Remove(ac, rq);
  p.latest_pos[Dir(rq)] = EndSector(rq);
  ++batching_;
  return rq;
}

sim::Task DeadlineSched::DispatchRequest(sim::Cpu& cpu, Hctx*, Request** out) {
  sim::StackFrame frame(cpu, fn_dispatch_);
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
  if (config_.insert_side_lists) {
    // dd_do_insert, on every call: insert_lock, list_splice_init of at_head
    // and at_tail (a read of their line; the splice writes it and the end
    // requests' links only when there is something to move), then insert
    // each request.
    co_await insert_lock_.Lock(cpu);
    RequestList moved;
    sim::AccessCost ac = kernel_.Access(cpu);
    ac.Load(run_state_line_);
    if (!side_list_.empty()) {
      ac.LoadIndependent(side_list_.front()->line);
      ac.LoadIndependent(side_list_.back()->line);
      ac.Store(run_state_line_);
      moved.splice_tail(side_list_);
    }
    cpu.Charge(fn_insert_, ac.Take());
    co_await cpu.Sync();
    insert_lock_.Unlock(cpu);
    while (!moved.empty()) DoInsert(cpu, moved.pop_front());
  }
  *out = Choose(cpu);
  co_await cpu.Sync();
  lock_.Unlock(cpu);
  if (config_.serialize_dispatch) {
    cpu.Charge(fn_dispatch_, run_state_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
    dispatching_ = false;
  }
}

void DeadlineSched::FinishRequest(sim::Cpu& cpu, Request* rq) {
  // dd_finish_request: atomic_inc(&per_prio->stats.completed), on the
  // level's stats line (L2 for BE).
  PerPrio& p = prio_[static_cast<size_t>(PrioOf(rq->ioprio_class))];
  ++p.completed;
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Atomic(*p.fifo_line, kernel_.costs().atomic_local);
  cpu.Charge(fn_finish_, ac.Take());
  ++stats_.completed;
}

}  // namespace blklab::model
