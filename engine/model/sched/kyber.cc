#include "engine/model/sched/kyber.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/model/blk_mq.h"
#include "engine/model/hctx.h"

namespace blklab::model {

namespace {
constexpr int kKcqMapBits = 8;                   // sbitmap_init_node(..., ilog2(8))
constexpr int kMergeScan = 8;                    // blk_bio_list_merge
constexpr int kTotalLatency = 0, kIoLatency = 1;
constexpr int64_t kDiscardTargetNs = 5 * sim::kNsPerSec;
constexpr int kLatencySamplesNeeded = 500;
}  // namespace

KyberConfig KyberConfig::From(const host::IoschedTunables& iosched) {
  KyberConfig k;
  k.read_lat_nsec = iosched.read_lat_nsec;
  k.write_lat_nsec = iosched.write_lat_nsec;
  return k;
}

// elevator_type kyber: init_sched (kyber_init_sched).
const ElevatorType kKyberElevator = {
    host::Scheduler::kKyber,
    [](const ElevatorInit& init) -> std::unique_ptr<Elevator> {
      KyberConfig c = KyberConfig::From(init.sysfs->iosched);
      c.max_request_bytes = init.max_request_bytes;
      return std::make_unique<KyberSched>(*init.kernel, init.qname, c);
    },
};

KyberSched::Kcq::Kcq(Kernel& kernel, const std::string& name)
    : lock(kernel.machine(), name, sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
           kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  lock.set_explicit_working_set();
}

KyberSched::Khd::Khd(Kernel& kernel, const std::string& name)
    : lock(kernel.machine(), name, sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
           kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  lock.set_explicit_working_set();
}

void KyberSched::DomainWait::SbqWake(sim::Cpu& cpu) {
  // kyber_domain_wake: off the wait queue (done by the waker), run the hctx.
  ++kyber->stats_.domain_wakes;
  hctx->RunAsync(cpu);
}

KyberSched::KyberSched(Kernel& kernel, const std::string& qname, const KyberConfig& config)
    : kernel_(kernel), qname_(qname), max_request_bytes_(config.max_request_bytes) {
  latency_targets_ = {config.read_lat_nsec, config.write_lat_nsec, kDiscardTargetNs};
  for (int d = 0; d < kNumDomains; ++d) tokens_[d] = std::make_unique<SbitmapQueue>(kernel, kDepth[d]);
  cpu_latency_ = std::vector<CpuLatency>(kernel.machine().num_cpus());
  timer_.Init(&kernel.machine(), 0, &timer_irq_, 0);
  fn_bio_merge_ = kernel.Intern("kyber_bio_merge");
  fn_insert_ = kernel.Intern("kyber_insert_requests");
  fn_dispatch_ = kernel.Intern("kyber_dispatch_request");
  fn_has_work_ = kernel.Intern("kyber_has_work");
  fn_completed_ = kernel.Intern("kyber_completed_request");
  fn_finish_ = kernel.Intern("kyber_finish_request");
  fn_timer_ = kernel.Intern("kyber_timer_fn");
}

void KyberSched::InitHctx(Hctx* hctx) {
  // kyber_init_hctx: one kcq per ctx of the hctx, kcq_map words of 8 bits.
  const size_t idx = hctx->queue_num();
  if (khds_.size() <= idx) khds_.resize(idx + 1);
  // kyber_depth_updated: (1 << shift) * KYBER_ASYNC_PERCENT / 100.
  async_depth_ = hctx->sched_tags()->bitmap_tags().bits_per_word() * 75 / 100;
  auto khd = std::make_unique<Khd>(kernel_, absl::StrCat(qname_, ":khd->lock"));
  const size_t nr_ctx = std::max<size_t>(hctx->nr_ctx(), 1);
  for (size_t i = 0; i < nr_ctx; ++i) {
    khd->kcqs.push_back(std::make_unique<Kcq>(kernel_, absl::StrCat(qname_, ":kcq->lock")));
  }
  const size_t words = (nr_ctx + kKcqMapBits - 1) / kKcqMapBits;
  for (int d = 0; d < kNumDomains; ++d) {
    khd->kcq_map[d].assign(words, 0);
    khd->kcq_map_lines[d] = std::vector<sim::CacheLine>(words);
    khd->domain_wait[d].kyber = this;
    khd->domain_wait[d].hctx = hctx;
  }
  khds_[idx] = std::move(khd);
}

KyberSched::Khd& KyberSched::KhdOf(Hctx* hctx) {
  BLKLAB_CHECK(hctx->queue_num() < khds_.size() && khds_[hctx->queue_num()] != nullptr);
  return *khds_[hctx->queue_num()];
}

int KyberSched::LatencyBucket(int64_t target_ns, int64_t latency_ns) {
  if (latency_ns <= 0) return 0;
  const int64_t divisor = std::max<int64_t>(target_ns >> kLatencyShift, 1);
  return static_cast<int>(std::min<int64_t>((latency_ns - 1) / divisor, kLatencyBuckets - 1));
}

// --- submission -----------------------------------------------------------------

sim::Task KyberSched::BioMerge(sim::Cpu& cpu, Hctx* hctx, Bio* bio, Request** merged_into) {
  sim::StackFrame frame(cpu, fn_bio_merge_);
  *merged_into = nullptr;
  Khd& khd = KhdOf(hctx);
  Ctx* ctx = hctx->queue()->ctx(cpu.id());
  Kcq& kcq = *khd.kcqs[ctx->index_hw(hctx->is_poll())];
  RequestList& list = kcq.rq_list[DomainOf(bio->op)];
  co_await kcq.lock.Lock(cpu);
  // blk_bio_list_merge: from the tail, at most 8 requests; back then front.
  const auto& c = kernel_.costs();
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Load(kcq.lock.lock_line());
  const size_t n = list.size();
  const size_t skip = n > kMergeScan ? n - kMergeScan : 0;
  std::array<Request*, kMergeScan> tail{};
  size_t k = 0, i = 0;
  for (Request* r = list.front(); r != nullptr; r = r->next, ++i) {
    if (i >= skip) tail[k++] = r;
  }
  int scanned = 0;
  const uint64_t bio_end = bio->sector + (bio->bytes >> kSectorShift);
  for (size_t j = k; j-- > 0;) {
    Request* rq = tail[j];
    ++scanned;
    ac.Load(rq->line);
    if (rq->op != bio->op || rq->ioprio_class != bio->ioprio_class || rq->bytes + bio->bytes > max_request_bytes_) {
      continue;
    }
    if (rq->sector + (rq->bytes >> kSectorShift) == bio->sector) {
      rq->biotail->bi_next = bio;
      rq->biotail = bio;
      bio->bi_next = nullptr;
    } else if (rq->sector == bio_end) {
      bio->bi_next = rq->bio;
      rq->bio = bio;
      rq->sector = bio->sector;
    } else {
      continue;
    }
    rq->bytes += bio->bytes;
    ++rq->nr_bios;
    ac.Store(rq->line);
    *merged_into = rq;
    ++stats_.merged;
    break;
  }
  ac.Work(c.sw_queue_merge_base + c.sw_queue_merge_per_rq * scanned);
  cpu.Charge(fn_bio_merge_, ac.Take());
  co_await cpu.Sync();
  kcq.lock.Unlock(cpu);
}

sim::Task KyberSched::InsertRequests(sim::Cpu& cpu, Hctx* hctx, RequestList& list) {
  sim::StackFrame frame(cpu, fn_insert_);
  Khd& khd = KhdOf(hctx);
  const auto& c = kernel_.costs();
  while (!list.empty()) {
    Request* rq = list.pop_front();
    const int d = DomainOf(rq->op);
    const uint32_t index = rq->mq_ctx->index_hw(hctx->is_poll());
    Kcq& kcq = *khd.kcqs[index];
    co_await kcq.lock.Lock(cpu);
    // list_move_tail (the request, the old tail, the head on the kcq line),
    // then sbitmap_set_bit on the kcq_map word.
    sim::AccessCost ac = kernel_.Access(cpu);
    ac.Work(c.kyber_insert_request);
    ac.Store(rq->line);
    if (!kcq.rq_list[d].empty()) ac.Store(kcq.rq_list[d].back()->line);
    ac.Store(kcq.lock.lock_line());
    kcq.rq_list[d].push_back(rq);
    const uint32_t word = index / kKcqMapBits;
    const uint8_t bit = static_cast<uint8_t>(1u << (index % kKcqMapBits));
    if ((khd.kcq_map[d][word] & bit) == 0) {
      ac.Atomic(khd.kcq_map_lines[d][word], c.atomic_local);
      khd.kcq_map[d][word] |= bit;
    } else {
      ac.Load(khd.kcq_map_lines[d][word]);  // test_bit first
    }
    cpu.Charge(fn_insert_, ac.Take());
    ++queued_;
    ++stats_.inserted;
    co_await cpu.Sync();
    kcq.lock.Unlock(cpu);
  }
}

// --- dispatch -------------------------------------------------------------------

int KyberSched::GetDomainToken(sim::Cpu& cpu, Khd& khd, Hctx* hctx) {
  const int d = khd.cur_domain;
  SbitmapQueue& tokens = *tokens_[d];
  DomainWait& wait = khd.domain_wait[d];
  int nr = tokens.Get(cpu);
  if (nr < 0 && !wait.queued()) {
    // sbitmap_add_wait_queue, then try again (a token may have been freed
    // before the entry was on the wait queue).
    tokens.AddWaitQueue(cpu, &wait, khd.wait_index[d]);
    nr = tokens.Get(cpu);
  }
  if (nr >= 0 && wait.queued()) {
    // Got one while queued: off the wait queue (spin_lock_irq(&ws->wait.lock)).
    tokens.DelWaitQueue(cpu, &wait);
  }
  return nr;
}

sim::Task KyberSched::FlushBusyKcqs(sim::Cpu& cpu, Khd& khd, int domain) {
  // sbitmap_for_each_set over kcq_map: each word's line, then for each set
  // bit the kcq's lock, a splice onto khd->rqs and the bit cleared.
  const auto& c = kernel_.costs();
  std::vector<uint8_t>& map = khd.kcq_map[domain];
  for (size_t w = 0; w < map.size(); ++w) {
    cpu.Charge(fn_dispatch_, khd.kcq_map_lines[domain][w].Read(kernel_.machine(), cpu.id(), c.line_read_hit));
    for (int b = 0; b < kKcqMapBits; ++b) {
      if ((map[w] & (1u << b)) == 0) continue;
      Kcq& kcq = *khd.kcqs[w * kKcqMapBits + static_cast<size_t>(b)];
      co_await kcq.lock.Lock(cpu);
      sim::AccessCost ac = kernel_.Access(cpu);
      ac.Load(kcq.lock.lock_line());
      RequestList& src = kcq.rq_list[domain];
      if (!src.empty()) {
        ac.LoadIndependent(src.front()->line);
        ac.Store(src.back()->line);
        if (!khd.rqs[domain].empty()) ac.Store(khd.rqs[domain].back()->line);
        ac.Store(kcq.lock.lock_line());
      }
      ac.Atomic(khd.kcq_map_lines[domain][w], c.atomic_local);
      map[w] = static_cast<uint8_t>(map[w] & ~(1u << b));
      khd.rqs[domain].splice_tail(src);
      cpu.Charge(fn_dispatch_, ac.Take());
      co_await cpu.Sync();
      kcq.lock.Unlock(cpu);
    }
  }
}

sim::Task KyberSched::DispatchCurDomain(sim::Cpu& cpu, Khd& khd, Hctx* hctx, Request** out) {
  *out = nullptr;
  const int d = khd.cur_domain;
  RequestList& rqs = khd.rqs[d];
  bool any_kcq = false;
  if (rqs.empty()) {
    // sbitmap_any_bit_set(&khd->kcq_map[d])
    int64_t cost = 0;
    for (size_t w = 0; w < khd.kcq_map[d].size(); ++w) {
      cost += khd.kcq_map_lines[d][w].Read(kernel_.machine(), cpu.id(),
                                           kernel_.costs().sbitmap_any_bit_set_per_word);
      if (khd.kcq_map[d][w] != 0) {
        any_kcq = true;
        break;
      }
    }
    cpu.Charge(fn_dispatch_, cost);
    if (!any_kcq) co_return;
  }
  const int nr = GetDomainToken(cpu, khd, hctx);
  if (nr < 0) {
    ++stats_.throttled;
    kernel_.Count(Counter::k_kyber_throttled);
    co_return;
  }
  if (rqs.empty()) co_await FlushBusyKcqs(cpu, khd, d);
  BLKLAB_CHECK(!rqs.empty());
  Request* rq = rqs.pop_front();
  ++khd.batching;
  rq->elv_token = nr;
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Store(rq->line);  // list_del_init, elv.priv[0]
  ac.Store(khd.state_line);
  cpu.Charge(fn_dispatch_, ac.Take());
  *out = rq;
}

sim::Task KyberSched::DispatchRequest(sim::Cpu& cpu, Hctx* hctx, Request** out) {
  sim::StackFrame frame(cpu, fn_dispatch_);
  *out = nullptr;
  Khd& khd = KhdOf(hctx);
  co_await khd.lock.Lock(cpu);
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().kyber_dispatch_request);
  ac.Load(khd.lock.lock_line());
  ac.Load(khd.state_line);
  cpu.Charge(fn_dispatch_, ac.Take());
  Request* rq = nullptr;
  if (khd.batching < kBatchSize[khd.cur_domain]) co_await DispatchCurDomain(cpu, khd, hctx, &rq);
  if (rq == nullptr) {
    // A new batch, from the next domain round (back to this one last).
    khd.batching = 0;
    for (int i = 0; i < kNumDomains && rq == nullptr; ++i) {
      khd.cur_domain = khd.cur_domain == kNumDomains - 1 ? 0 : khd.cur_domain + 1;
      co_await DispatchCurDomain(cpu, khd, hctx, &rq);
    }
  }
  if (rq != nullptr) {
    --queued_;
    ++stats_.dispatched;
  }
  *out = rq;
  co_await cpu.Sync();
  khd.lock.Unlock(cpu);
}

bool KyberSched::HasWork(sim::Cpu& cpu, Hctx* hctx) {
  // kyber_has_work: per domain, the flushed list's head, then the kcq_map.
  Khd& khd = KhdOf(hctx);
  const sim::Machine& m = kernel_.machine();
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.LoadIndependent(khd.lock.lock_line());
  bool work = false;
  for (int d = 0; d < kNumDomains && !work; ++d) {
    if (!khd.rqs[d].empty()) {
      work = true;
      break;
    }
    for (size_t w = 0; w < khd.kcq_map[d].size(); ++w) {
      ac.Work(std::max<int64_t>(khd.kcq_map_lines[d][w].Read(m, cpu.id(), 0), 0) +
              kernel_.costs().sbitmap_any_bit_set_per_word);
      if (khd.kcq_map[d][w] != 0) {
        work = true;
        break;
      }
    }
  }
  cpu.Charge(fn_has_work_, ac.Take());
  return work;
}

// --- completion -----------------------------------------------------------------

void KyberSched::CompletedRequest(sim::Cpu& cpu, Request* rq, sim::SimTime now) {
  const int d = DomainOf(rq->op);
  if (d == kOther) return;
  // Two samples on this CPU's histogram (atomic_inc, a local line), then
  // timer_reduce(&kqd->timer, jiffies + HZ / 10): a read of the timer, a
  // re-arm only if it is idle or set later.
  CpuLatency& cl = cpu_latency_[cpu.id()];
  const int64_t target = latency_targets_[d];
  ++cl.buckets[d][kTotalLatency][LatencyBucket(target, now - rq->start_time_ns)];
  ++cl.buckets[d][kIoLatency][LatencyBucket(target, now - rq->io_start_time_ns)];
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().kyber_completed_request);
  ac.Atomic(cl.line, kernel_.costs().atomic_local);
  ac.Atomic(cl.line, kernel_.costs().atomic_local);
  ac.Load(kqd_line_);
  // With the timer wheel's granularity the timer's expires is jiffies +
  // HZ / 10 and it runs at its wheel bucket (8-jiffy buckets at HZ=1000);
  // without, at the jiffy boundary after now + HZ / 10.
  const bool wheel = kernel_.knobs().timer_wheel_granularity;
  const int64_t jiffy = kernel_.jiffy_ns();
  const sim::SimTime expires = wheel ? (cpu.now() / jiffy + kernel_.hz() / 10) * jiffy
                                     : sim::RoundUpToJiffy(cpu.now() + jiffy * (kernel_.hz() / 10), kernel_.hz());
  if (!timer_.pending() || timer_expires_ > expires) {
    ac.Work(kernel_.costs().hrtimer_arm);
    ac.Store(kqd_line_);
    timer_expires_ = expires;
    timer_.set_cpu(cpu.id());
    timer_.Start(kernel_.TimerListRuns(cpu.now(), expires));
  }
  cpu.Charge(fn_completed_, ac.Take());
}

void KyberSched::FinishRequest(sim::Cpu& cpu, Request* rq) {
  // kyber_finish_request -> rq_clear_domain_token.
  if (rq->elv_token < 0) return;
  const int nr = rq->elv_token;
  rq->elv_token = -1;
  tokens_[DomainOf(rq->op)]->Clear(cpu, static_cast<uint32_t>(nr));
}

int KyberSched::CalculatePercentile(sim::SimTime now, int domain, int type, int percentile) {
  auto& buckets = latency_buckets_[domain][type];
  uint32_t samples = 0;
  for (uint32_t b : buckets) samples += b;
  if (samples == 0) return -1;
  // Once there are 500 samples or a second has passed since the first.
  if (latency_timeout_[domain] == 0) latency_timeout_[domain] = now + sim::kNsPerSec;
  if (samples < kLatencySamplesNeeded && now < latency_timeout_[domain]) return -1;
  latency_timeout_[domain] = 0;
  uint32_t percentile_samples = (samples * static_cast<uint32_t>(percentile) + 99) / 100;
  int bucket = 0;
  for (; bucket < kLatencyBuckets - 1; ++bucket) {
    if (buckets[bucket] >= percentile_samples) break;
    percentile_samples -= buckets[bucket];
  }
  buckets.fill(0);
  return bucket;
}

sim::Task KyberSched::TimerIrq::Handle(sim::Cpu& cpu, uint64_t) {
  co_await cpu.Sync();
  k_->TimerFn(cpu);
}

void KyberSched::TimerFn(sim::Cpu& cpu) {
  ++stats_.timer_runs;
  const auto& c = kernel_.costs();
  // Sum every CPU's histograms (atomic_xchg of each bucket, a line that CPU
  // writes at its completions).
  sim::AccessCost ac = kernel_.Access(cpu);
  for (CpuLatency& cl : cpu_latency_) {
    ac.Atomic(cl.line, c.atomic_local);
    ac.Work(c.atomic_local * (kNumDomains - 1) * 2 * kLatencyBuckets);
    for (int d = 0; d < kNumDomains - 1; ++d) {
      for (int t = 0; t < 2; ++t) {
        for (int b = 0; b < kLatencyBuckets; ++b) {
          latency_buckets_[d][t][b] += cl.buckets[d][t][b];
          cl.buckets[d][t][b] = 0;
        }
      }
    }
  }
  cpu.Charge(fn_timer_, ac.Take());
  const sim::SimTime now = cpu.now();
  // Congestion: any domain's I/O latency p90 past its target.
  bool bad = false;
  for (int d = 0; d < kNumDomains - 1; ++d) {
    if (CalculatePercentile(now, d, kIoLatency, 90) >= kGoodBuckets) bad = true;
  }
  for (int d = 0; d < kNumDomains - 1; ++d) {
    int p99 = CalculatePercentile(now, d, kTotalLatency, 99);
    if (bad) {
      if (p99 < 0) p99 = domain_p99_[d];
      domain_p99_[d] = -1;
    } else if (p99 >= 0) {
      domain_p99_[d] = p99;
    }
    if (p99 < 0) continue;
    if (bad || p99 >= kGoodBuckets) {
      // kyber_resize_domain: depth scaled by (p99 bucket + 1) / 4.
      const uint32_t orig = tokens_[d]->depth();
      const uint32_t depth =
          std::clamp<uint32_t>((orig * static_cast<uint32_t>(p99 + 1)) >> kLatencyShift, 1u, kDepth[d]);
      if (depth != orig) {
        tokens_[d]->Resize(cpu, depth);
        ++stats_.resizes;
        kernel_.Count(Counter::k_kyber_resize);
      }
    }
  }
}

}  // namespace blklab::model
