// engine/report/kernel_sections.cc
//
// blklab's extra normal-output sections: CPU time by mode, a perf-top-style
// profile ("[k]" kernel symbols, "[.]" user-space ones, as perf marks them),
// a lockstat-style lock table, perf sched latency's runqueue waits and btt's
// per-device request stages.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/report/report.h"

namespace blklab::report {

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

void ProfileRows(const stats::KernelReport& k, int top_n, std::string* out) {
  absl::StrAppend(out, "  Overhead  Mode     Shared Object  Symbol\n");
  const size_t n = top_n > 0 ? std::min<size_t>(k.profile.size(), static_cast<size_t>(top_n))
                             : k.profile.size();
  for (size_t i = 0; i < n; ++i) {
    const stats::ProfileRow& p = k.profile[i];
    const bool user = p.mode == stats::CpuMode::kUser;
    // User-space rows are named "program:function"; the program is perf's
    // shared object.
    const size_t colon = p.function.find(':');
    const std::string object = !user ? "[kernel]" : colon == std::string::npos ? "fio" : p.function.substr(0, colon);
    absl::StrAppend(out, absl::StrFormat("  %7.2f%%  %-7s  %-13s  %s %s\n", p.share_pct,
                                         stats::CpuModeName(p.mode), object, user ? "[.]" : "[k]", p.function));
  }
}

}  // namespace

std::string WriteKernelSections(const stats::KernelReport& k) {
  std::string out;
  absl::StrAppend(&out, "\nblklab CPU modes (virtual time, host ", k.host_name,
                  absl::StrFormat(", elapsed %.3f ms):\n", Ms(k.elapsed_ns)));
  out.append("  cpu      usr%      sys%      irq%  softirq%     idle%\n");
  for (const stats::CpuRow& c : k.cpus) {
    int64_t total = 0;
    for (int64_t v : c.mode_ns) total += v;
    absl::StrAppend(&out, absl::StrFormat("  %3d", c.cpu));
    for (int m = 0; m < stats::kNumCpuModes; ++m) {
      const double pct = total > 0 ? 100.0 * static_cast<double>(c.mode_ns[m]) /
                                         static_cast<double>(total)
                                   : 0.0;
      absl::StrAppend(&out, absl::StrFormat("  %8.2f", pct));
    }
    out.push_back('\n');
  }
  absl::StrAppend(&out, absl::StrFormat("  sys+irq+softirq=%.2f%%, contention=%.2f%%, busy=%.3f ms, ios=%d, "
                                        "events=%d\n",
                                        k.sys_pct, k.contention_pct, Ms(k.busy_ns), k.total_ios,
                                        k.events));
  if (!k.profile.empty()) {
    out.append("\nblklab profile (perf top style, self time over busy CPU time):\n");
    ProfileRows(k, 0, &out);
  }
  if (!k.locks.empty()) {
    out.append("\nblklab lock statistics (lockstat style):\n");
    absl::StrAppend(&out, absl::StrFormat("  %-32s %12s %10s %9s %14s %12s %14s %8s %9s %9s %8s %8s\n",
                                          "class name", "acquisitions", "contended", "cont%",
                                          "waittime-total", "waittime-avg", "holdtime-total", "waiters",
                                          "handoff%", "lines/acq", "irqoff%", "remote%"));
    // As /proc/lock_stat: most contended first (then by name).
    std::vector<const stats::LockRow*> rows;
    for (const stats::LockRow& l : k.locks) rows.push_back(&l);
    std::stable_sort(rows.begin(), rows.end(), [](const stats::LockRow* a, const stats::LockRow* b) {
      return a->contended > b->contended;
    });
    for (const stats::LockRow* row : rows) {
      const stats::LockRow& l = *row;
      const double acq = static_cast<double>(l.acquisitions);
      const double cont_pct = l.acquisitions > 0 ? 100.0 * static_cast<double>(l.contended) / acq : 0.0;
      const double wait_avg =
          l.contended > 0 ? static_cast<double>(l.wait_ns) / static_cast<double>(l.contended) : 0.0;
      const double handoff_pct = l.acquisitions > 0 ? 100.0 * static_cast<double>(l.holder_changes) / acq : 0.0;
      const double lines = l.acquisitions > 0 ? static_cast<double>(l.line_transfers) / acq : 0.0;
      const double irqoff_pct =
          l.wait_ns > 0 ? 100.0 * static_cast<double>(l.wait_irqs_off_ns) / static_cast<double>(l.wait_ns) : 0.0;
      // Hand-overs that crossed a last-level cache, as a share of all hand-overs.
      const double remote_pct = l.holder_changes > 0 ? 100.0 * static_cast<double>(l.remote_holder_changes) /
                                                           static_cast<double>(l.holder_changes)
                                                     : 0.0;
      absl::StrAppend(&out, absl::StrFormat("  %-32s %12d %10d %8.2f%% %12.3fus %10.1fns %12.3fus "
                                            "%8d %8.1f%% %9.2f %7.1f%% %7.1f%%\n",
                                            l.name, l.acquisitions, l.contended, cont_pct,
                                            static_cast<double>(l.wait_ns) / 1e3, wait_avg,
                                            static_cast<double>(l.hold_ns) / 1e3, l.max_waiters, handoff_pct,
                                            lines, irqoff_pct, remote_pct));
    }
  }
  if (k.page_cache) {
    const stats::PageCacheRow& p = *k.page_cache;
    absl::StrAppend(&out, absl::StrFormat(
        "\nblklab page cache: %d of %d pages at peak\n"
        "  reads   %d page accesses, %d hits, %d misses (hit ratio %.2f%%), readahead %d sync / %d async, %d bios\n"
        "  writes  %d pages dirtied, %d written back in %d bios, %d dirty at the end; %d throttled waits, %.3f ms\n"
        "  reclaim %d pages, invalidated %d\n",
        p.peak_pages, p.capacity_pages, p.read_accesses, p.read_hits, p.read_misses, p.hit_ratio_pct,
        p.readahead_sync, p.readahead_async, p.read_bios, p.pages_dirtied, p.pages_written_back, p.writeback_bios,
        p.dirty_pages_at_end, p.dirty_throttle_waits, static_cast<double>(p.dirty_throttle_ns) / 1e6,
        p.pages_reclaimed, p.pages_invalidated));
    if (p.mmap_faults > 0) {
      absl::StrAppend(&out, absl::StrFormat("  mmap    %d page faults (%d major), %d page-table entries unmapped\n",
                                            p.mmap_faults, p.mmap_major_faults, p.pages_unmapped));
    }
  }
  if (!k.sched.empty()) {
    // perf sched latency's table (threads of one name merged, digits as '*').
    out.append("\nblklab scheduler latency (perf sched latency style, runqueue waits):\n");
    absl::StrAppend(&out, absl::StrFormat("  %-28s %8s %12s %10s %12s %12s %12s %16s\n", "Task", "threads",
                                          "Runtime ms", "Switches", "Delay ms", "Avg delay ms", "Max delay ms",
                                          "Max delay at ms"));
    for (const stats::SchedRow& t : k.sched) {
      const double avg = t.switches > 0 ? Ms(t.delay_ns) / static_cast<double>(t.switches) : 0.0;
      absl::StrAppend(&out, absl::StrFormat("  %-28s %8d %12.3f %10d %12.3f %12.4f %12.3f %16.3f\n",
                                            t.rt ? t.task + " [FIFO]" : t.task, t.threads, Ms(t.runtime_ns),
                                            t.switches, Ms(t.delay_ns), avg, Ms(t.max_delay_ns),
                                            Ms(t.max_delay_at_ns)));
    }
  }
  bool btt_header = false;
  for (const stats::DeviceRow& d : k.devices) {
    if (d.q2c.n == 0) continue;
    if (!btt_header) {
      // btt's per-device table, in its seconds.
      out.append("\nblklab block-layer latency (btt style, seconds; Q: bio submitted, G: request allocated, D: "
                 "issued to the driver, C: completed):\n");
      btt_header = true;
    }
    absl::StrAppend(&out, absl::StrFormat("  %-10s %13s %13s %13s %11s\n", d.name, "MIN", "AVG", "MAX", "N"));
    for (const auto& [stage, st] : d.stages()) {
      if (st->n == 0) continue;
      absl::StrAppend(&out, absl::StrFormat("  %-10s %13.9f %13.9f %13.9f %11d\n", stage, st->min_ns / 1e9,
                                            st->avg_ns / 1e9, st->max_ns / 1e9, st->n));
    }
  }
  if (!k.counters.empty()) {
    out.append("\nblklab counters:\n");
    for (const stats::CounterRow& c : k.counters) {
      absl::StrAppend(&out, absl::StrFormat("  %-32s %d\n", c.name, c.count));
    }
  }
  return out;
}

std::string WritePerfTop(const stats::KernelReport& k, int top_n) {
  std::string out = absl::StrFormat(
      "\n   PerfTop: virtual %.3f ms on %d CPUs, busy %.3f ms, %d IOs [blklab, self time]\n",
      Ms(k.elapsed_ns), static_cast<int>(k.cpus.size()), Ms(k.busy_ns), k.total_ios);
  out.append(std::string(80, '-')).append("\n\n");
  ProfileRows(k, top_n, &out);
  return out;
}

}  // namespace blklab::report
