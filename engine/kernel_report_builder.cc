#include "engine/kernel_report_builder.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/sim/cpu.h"
#include "engine/sim/spinlock.h"

namespace blklab {

void CollectResults(const RunRequest& req, const Simulation& s, sim::SimTime end, bool final,
                    RunResult& result) {
  result.clones.clear();
  for (size_t i = 0; i < s.clones.size(); ++i) {
    const job::JobThread& t = *s.clones[i];
    const workload::JobClone& c = req.jobs.clones[i];
    CloneResult cr;
    cr.job_index = c.job_index;
    cr.clone_index = c.clone_index;
    cr.thread_number = c.thread_number;
    cr.group_id = c.group_id;
    cr.cpu = t.config().cpu;
    cr.device = s.plan.clone_disk[i] >= 0 ? s.plan.disks[s.plan.clone_disk[i]].name : "";
    cr.start_ns = t.config().start_at;
    cr.end_ns = t.done() ? t.finished_at() : end;
    cr.result = final ? t.result() : t.PeekResult(end);
    cr.messages = t.messages();
    result.clones.push_back(std::move(cr));
  }
  result.virtual_ns = end;
  result.events = s.machine->sim().events_delivered();
}

absl::Status BuildKernelReport(const RunRequest& req, Simulation& s, sim::SimTime end, bool final,
                               RunResult& result) {
  uint64_t total_ios = 0;
  for (auto& c : result.clones) {
    total_ios += c.result.dirs[0].total_ios + c.result.dirs[1].total_ios + c.result.dirs[2].total_ios;
  }
  return BuildKernelReportFor(req.host.name, s, end, final, total_ios, result.kernel);
}

namespace {

// perf sched latency's merge by task name. A job's clones share their
// name ("fio/" and the job's); in the kernel's threads each run of digits
// reads as '*' (ksoftirqd/0..N, kworker/N:1H, irq/mpi3mr0-msixN).
std::string SchedTaskName(const std::string& comm) {
  if (comm.starts_with("fio/")) return comm;
  std::string out;
  for (size_t i = 0; i < comm.size(); ++i) {
    if (comm[i] >= '0' && comm[i] <= '9') {
      if (out.empty() || out.back() != '*') out.push_back('*');
    } else {
      out.push_back(comm[i]);
    }
  }
  return out;
}

stats::StageRow StageRowOf(const model::StageStats& st) {
  return stats::StageRow{.n = st.n,
                         .min_ns = st.min_ns,
                         .avg_ns = st.n > 0 ? static_cast<double>(st.sum_ns) / static_cast<double>(st.n) : 0.0,
                         .max_ns = st.max_ns};
}

std::vector<stats::SchedRow> SchedRows(const sim::Machine& m) {
  std::map<std::string, stats::SchedRow> rows;  // ordered by name: deterministic
  for (const sim::ThreadStats& t : m.thread_stats()) {
    if (t.pcount == 0) continue;
    const std::string task = SchedTaskName(t.comm);
    stats::SchedRow& row = rows[task];
    row.task = task;
    ++row.threads;
    row.rt = row.rt || t.rt;
    for (int mode = 0; mode < static_cast<int>(sim::Mode::kIdle); ++mode) row.runtime_ns += t.mode_ns[mode];
    row.switches += t.pcount;
    row.delay_ns += t.run_delay_ns;
    if (t.max_delay_ns > row.max_delay_ns) {
      row.max_delay_ns = t.max_delay_ns;
      row.max_delay_at_ns = t.max_delay_at;
    }
  }
  std::vector<stats::SchedRow> out;
  for (auto& [task, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const stats::SchedRow& a, const stats::SchedRow& b) {
    return a.delay_ns > b.delay_ns;
  });
  return out;
}

// Self time by function and mode, a composite row split into the
// functions perf would show (FunctionRegistry::SetParts), and the spinlock
// slowpath's share of the busy time.
void AddProfile(const sim::Machine& m, stats::KernelReport& k) {
  const auto& fns = m.functions();
  int64_t slowpath = 0;
  std::vector<int64_t> self(fns.size() * 4, 0);
  for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
    for (int mode = 0; mode < 4; ++mode) {
      int64_t ns = 0;
      for (int c = 0; c < m.num_cpus(); ++c) ns += m.cpu(c).fn_ns(fn, static_cast<sim::Mode>(mode));
      if (ns == 0) continue;
      fns.SplitTime(fn, ns, [&](sim::FnId part, int64_t part_ns) { self[part * 4 + mode] += part_ns; });
    }
  }
  for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
    for (int mode = 0; mode < 4; ++mode) {
      const int64_t ns = self[fn * 4 + mode];
      if (ns == 0) continue;
      stats::ProfileRow row;
      row.function = fns.name(fn);
      row.mode = static_cast<stats::CpuMode>(mode);
      row.self_ns = ns;
      row.share_pct = k.busy_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(k.busy_ns) : 0;
      if (row.function == "native_queued_spin_lock_slowpath") slowpath += ns;
      k.profile.push_back(std::move(row));
    }
  }
  std::stable_sort(k.profile.begin(), k.profile.end(),
                   [](const stats::ProfileRow& a, const stats::ProfileRow& b) {
                     if (a.self_ns != b.self_ns) return a.self_ns > b.self_ns;
                     if (a.function != b.function) return a.function < b.function;
                     return a.mode < b.mode;
                   });
  k.contention_pct = k.busy_ns > 0 ? 100.0 * static_cast<double>(slowpath) / k.busy_ns : 0;
}

// Spinlocks, summed by name (lockstat).
void AddLocks(const sim::Machine& m, stats::KernelReport& k) {
  std::map<std::string, stats::LockRow> locks;  // ordered by name: deterministic
  for (const sim::SpinLock* l : m.locks()) {
    const sim::LockStats& st = l->stats();
    if (st.acquisitions == 0) continue;
    stats::LockRow& row = locks[l->name()];
    row.name = l->name();
    row.acquisitions += st.acquisitions;
    row.contended += st.contended;
    row.wait_ns += st.wait_ns;
    row.hold_ns += st.hold_ns;
    row.max_waiters = std::max<uint64_t>(row.max_waiters, st.max_waiters);
    row.holder_changes += st.holder_changes;
    row.remote_holder_changes += st.remote_holder_changes;
    row.line_transfers += st.line_transfers;
    row.wait_irqs_off_ns += st.wait_irqs_off_ns;
  }
  for (auto& [name, row] : locks) k.locks.push_back(row);
}

// The kernel's counters, then perf stat's and cpuidle's.
void AddCounters(const Simulation& s, stats::KernelReport& k) {
  const sim::Machine& m = *s.machine;
  for (int c = 0; c < static_cast<int>(model::Counter::kNumCounters); ++c) {
    const uint64_t v = s.kernel->counter(static_cast<model::Counter>(c));
    if (v == 0) continue;
    k.counters.push_back(stats::CounterRow{model::CounterName(static_cast<model::Counter>(c)), v});
  }
  k.counters.push_back(stats::CounterRow{"sim_events", k.events});
  // perf stat's cpu-migrations, of fio's job threads (wake-up placement).
  uint64_t migrations = 0;
  for (const auto& clone : s.clones) migrations += clone->thread().migrations();
  if (migrations > 0) k.counters.push_back(stats::CounterRow{"cpu_migrations", migrations});
  // perf stat -a's context-switches: every CPU's thread-to-thread switches.
  uint64_t switches = 0;
  for (int c = 0; c < m.num_cpus(); ++c) switches += m.cpu(c).context_switches();
  if (switches > 0) k.counters.push_back(stats::CounterRow{"context_switches", switches});
  // cpuidle: entries per state over all CPUs (sysfs cpuidle/stateN/usage;
  // state 0 is POLL) and the time wake-ups waited for the states' exits.
  const size_t idle_states = m.costs().cpuidle_states.size();
  if (idle_states > 0) {
    int64_t exit_wait_ns = 0;
    for (size_t st = 0; st <= idle_states; ++st) {
      uint64_t usage = 0;
      for (int c = 0; c < m.num_cpus(); ++c) usage += m.cpu(c).cpuidle_usage(static_cast<int>(st));
      k.counters.push_back(stats::CounterRow{absl::StrCat("cpuidle_state", st, "_usage"), usage});
    }
    for (int c = 0; c < m.num_cpus(); ++c) exit_wait_ns += m.cpu(c).cpuidle_exit_wait_ns();
    k.counters.push_back(stats::CounterRow{"cpuidle_exit_latency_ns", static_cast<uint64_t>(exit_wait_ns)});
  }
}

stats::PageCacheRow PageCacheRowOf(const model::PageCache& cache) {
  const model::PageCacheStats& pc = cache.stats();
  stats::PageCacheRow row;
  row.capacity_pages = cache.capacity_pages();
  row.peak_pages = pc.peak_pages;
  row.read_accesses = pc.read_accesses;
  row.read_hits = pc.hits();
  row.read_misses = pc.read_misses;
  row.hit_ratio_pct = pc.read_accesses > 0 ? 100.0 * static_cast<double>(pc.hits()) /
                                                 static_cast<double>(pc.read_accesses)
                                           : 0.0;
  row.readahead_sync = pc.readahead_sync;
  row.readahead_async = pc.readahead_async;
  row.read_bios = pc.read_bios;
  row.pages_dirtied = pc.pages_dirtied;
  row.pages_written_back = pc.pages_written_back;
  row.writeback_bios = pc.writeback_bios;
  row.pages_reclaimed = pc.pages_reclaimed;
  row.pages_invalidated = pc.pages_invalidated;
  row.dirty_pages_at_end = cache.nr_dirty();
  row.dirty_throttle_waits = pc.dirty_throttle_waits;
  row.dirty_throttle_ns = pc.dirty_throttle_ns;
  row.mmap_faults = pc.mmap_faults;
  row.mmap_major_faults = pc.mmap_major_faults;
  row.pages_unmapped = pc.pages_unmapped;
  return row;
}

}  // namespace

absl::Status BuildKernelReportFor(const std::string& host_name, Simulation& s, sim::SimTime end, bool final,
                                  uint64_t total_ios, stats::KernelReport& k) {
  sim::Machine& m = *s.machine;
  // blklab's kernel report: CPU modes, profile, locks, counters, devices.
  k.host_name = host_name;
  k.elapsed_ns = end;
  k.events = m.sim().events_delivered();
  int64_t sys_ns = 0;
  int used = 0;
  for (int c = 0; c < m.num_cpus(); ++c) {
    sim::Cpu& cpu = m.cpu(c);
    if (final) cpu.AccountIdleUntil(end);
    if (cpu.busy_ns() == 0) continue;
    ++used;
    stats::CpuRow row;
    row.cpu = c;
    for (int mode = 0; mode < sim::kNumModes; ++mode) {
      row.mode_ns[mode] = cpu.mode_ns(static_cast<sim::Mode>(mode));
    }
    k.busy_ns += cpu.busy_ns();
    sys_ns += cpu.mode_ns(sim::Mode::kSys) + cpu.mode_ns(sim::Mode::kIrq) +
              cpu.mode_ns(sim::Mode::kSoftirq);
    k.cpus.push_back(row);
  }
  k.sys_pct = end > 0 && used > 0 ? 100.0 * static_cast<double>(sys_ns) / (static_cast<double>(end) * used) : 0;
  AddProfile(m, k);
  if (const sim::StackProfile* stacks = m.stacks(); stacks != nullptr && final) {
    for (auto& [stack, ns] : stacks->Folded(m.functions())) k.stacks.push_back({std::move(stack), ns});
  }
  AddLocks(m, k);
  AddCounters(s, k);
  k.sched = SchedRows(m);
  if (s.page_cache != nullptr) k.page_cache = PageCacheRowOf(*s.page_cache);
  std::sort(k.counters.begin(), k.counters.end(),
            [](const stats::CounterRow& a, const stats::CounterRow& b) { return a.name < b.name; });
  k.total_ios = total_ios;
  for (size_t dev = 0; dev < s.queues.size(); ++dev) {
    if (s.queues[dev] == nullptr) continue;
    model::RequestQueue& q = *s.queues[dev];
    if (final) q.FinishDiskStats(end);
    const model::DiskStats& ds = q.disk_stats();
    stats::DeviceRow row;
    row.name = s.plan.disks[dev].name;
    row.read_ios = ds.ios[0];
    row.write_ios = ds.ios[1];
    row.read_merges = ds.merges[0];
    row.write_merges = ds.merges[1];
    row.read_sectors = ds.sectors[0];
    row.write_sectors = ds.sectors[1];
    row.read_ticks_ms = ds.ticks_ns[0] / 1000000;
    row.write_ticks_ms = ds.ticks_ns[1] / 1000000;
    row.in_queue_ms = ds.in_queue_ns / 1000000;
    row.q2g = StageRowOf(ds.q2g);
    row.g2d = StageRowOf(ds.g2d);
    row.d2c = StageRowOf(ds.d2c);
    row.q2c = StageRowOf(ds.q2c);
    // fio: io_ticks over the run's time, at most 100%.
    row.util_pct = end > 0 ? std::min(100.0, 100.0 * static_cast<double>(ds.io_ticks_jiffies * s.kernel->jiffy_ns()) /
                                                 static_cast<double>(end))
                           : 0;
    k.devices.push_back(row);
  }
  return absl::OkStatus();
}

}  // namespace blklab
