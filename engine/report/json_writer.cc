// engine/report/json_writer.cc
//
// fio's JSON / JSON+ output (docs/fio-compatibility.md c.3, c.4) and blklab's "blklab"
// top-level key.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/report/json.h"
#include "engine/report/report.h"
#include "engine/report/report_internal.h"

namespace blklab::report {

namespace {

Json Options(const OptionList& options) {
  Json o = Json::Object();
  for (const auto& [name, value] : options) o.Add(name, value);
  return o;
}

// {min, max, mean, stddev, N[, percentile[, bins]]}
Json LatObject(const stats::RunningStat& s, const stats::LatencyHistogram& hist,
               bool percentiles, const JobDisplay& display, bool json_plus) {
  Json o = Json::Object();
  o.AddUint("min", s.min());
  o.AddUint("max", s.max());
  o.AddDouble("mean", s.mean());
  o.AddDouble("stddev", s.stddev());
  o.AddUint("N", s.n());
  if (percentiles && s.n() > 0 && hist.total() > 0) {
    const std::vector<double> list = internal::SortedPercentiles(display);
    const std::vector<uint64_t> values = hist.Percentiles(list);
    Json p = Json::Object();
    for (size_t i = 0; i < values.size(); ++i) {
      p.AddUint(absl::StrFormat("%f", list[i]), values[i]);
    }
    o.Add("percentile", std::move(p));
    if (json_plus) {
      Json bins = Json::Object();
      for (int i = 0; i < stats::LatencyHistogram::kNumBuckets; ++i) {
        if (hist.count(i) == 0) continue;
        bins.AddUint(absl::StrCat(stats::LatencyHistogram::BucketValue(i)), hist.count(i));
      }
      o.Add("bins", std::move(bins));
    }
  }
  return o;
}

Json DirObject(const ReportEntry& e, const internal::DirBlock& b, bool json_plus) {
  const stats::DirResult& d = b.result;
  const JobDisplay& disp = e.display;
  Json o = Json::Object();
  const uint64_t bw_bytes = d.bw_bytes_per_sec();
  o.AddUint("io_bytes", d.io_bytes);
  o.AddUint("io_kbytes", d.io_bytes >> 10);
  o.AddUint("bw_bytes", bw_bytes);
  o.AddUint("bw", bw_bytes / 1024);
  o.AddDouble("iops", d.iops());
  o.AddInt("runtime", d.runtime_ms);
  o.AddUint("total_ios", d.total_ios);
  o.AddUint("short_ios", d.short_ios);
  o.AddUint("drop_ios", d.drop_ios);
  o.Add("slat_ns", LatObject(d.slat, d.slat_hist, disp.slat_percentiles, disp, json_plus));
  o.Add("clat_ns", LatObject(d.clat, d.clat_hist, disp.clat_percentiles, disp, json_plus));
  o.Add("lat_ns", LatObject(d.lat, d.lat_hist, disp.lat_percentiles, disp, json_plus));
  o.AddUint("bw_min", d.bw_samples.min());
  o.AddUint("bw_max", d.bw_samples.max());
  o.AddDouble("bw_agg", d.bw_samples.n() > 0
                            ? internal::BwShare(d.bw_samples.mean(), b.group_agg_bw, 0.0)
                            : 0.0);
  o.AddDouble("bw_mean", d.bw_samples.mean());
  o.AddDouble("bw_dev", d.bw_samples.stddev());
  o.AddUint("bw_samples", d.bw_samples.n());
  o.AddUint("iops_min", d.iops_samples.min());
  o.AddUint("iops_max", d.iops_samples.max());
  o.AddDouble("iops_mean", d.iops_samples.mean());
  o.AddDouble("iops_stddev", d.iops_samples.stddev());
  o.AddUint("iops_samples", d.iops_samples.n());
  return o;
}

template <size_t N>
Json ShareObject(const char* const* labels, const std::array<double, N>& shares) {
  Json o = Json::Object();
  for (size_t i = 0; i < N; ++i) o.AddDouble(labels[i], shares[i]);
  return o;
}

template <size_t N>
std::array<double, N> BatchShares(const std::array<uint64_t, N>& counts) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  std::array<double, N> out{};
  for (size_t i = 0; i < N; ++i) {
    if (total == 0 || counts[i] == 0) continue;
    out[i] = 100.0 * static_cast<double>(counts[i]) / static_cast<double>(total);
    if (out[i] < 0.1) out[i] = 0.1;
  }
  return out;
}

Json JobObject(const ReportInput& input, const ReportEntry& e, bool json_plus) {
  const stats::JobResult& r = e.result;
  Json j = Json::Object();
  j.Add("jobname", e.name);
  j.AddInt("groupid", e.groupid);
  j.AddInt("error", e.error);
  j.AddInt("eta", 0);
  j.AddInt("elapsed", e.elapsed_sec);
  if (!e.job_options.empty()) j.Add("job options", Options(e.job_options));
  const std::vector<internal::DirBlock> blocks = internal::DirBlocks(input, e);
  for (const internal::DirBlock& b : blocks) {
    if (b.dir_index < 0) continue;  // mixed goes after sync
    j.Add(b.label, DirObject(e, b, json_plus));
  }
  if (e.display.unified == UnifiedRw::kMixed) {
    j.Add("mixed", DirObject(e, blocks.back(), json_plus));
  }
  Json sync = Json::Object();
  sync.AddUint("total_ios", r.sync.total_ios);
  sync.Add("lat_ns", LatObject(r.sync.lat, r.sync.lat_hist, e.display.clat_percentiles,
                               e.display, json_plus));
  j.Add("sync", std::move(sync));
  if (e.display.unified == UnifiedRw::kBoth) {
    j.Add("mixed", DirObject(e, blocks.back(), json_plus));
  }
  j.AddInt("job_runtime", r.job_runtime_ms);
  j.AddDouble("usr_cpu", r.cpu.usr_pct);
  j.AddDouble("sys_cpu", r.cpu.sys_pct);
  j.AddUint("ctx", r.cpu.ctx);
  j.AddUint("majf", r.cpu.majf);
  j.AddUint("minf", r.cpu.minf);
  j.Add("iodepth_level", ShareObject(stats::kDepthLabels, stats::DepthShares(r.iodepth)));
  j.Add("iodepth_submit", ShareObject(stats::kBatchLabels, BatchShares(r.submit)));
  j.Add("iodepth_complete", ShareObject(stats::kBatchLabels, BatchShares(r.complete)));
  const stats::LatencyShares lat = stats::ComputeLatencyShares(r.lat_dist);
  j.Add("latency_ns", ShareObject(stats::kLatLabels, lat.ns));
  j.Add("latency_us", ShareObject(stats::kLatLabels, lat.us));
  j.Add("latency_ms", ShareObject(stats::kLatLabels, lat.ms));
  j.AddUint("latency_depth", e.display.latency_depth);
  j.AddUint("latency_target", e.display.latency_target);
  j.AddDouble("latency_percentile", e.display.latency_percentile);
  j.AddUint("latency_window", e.display.latency_window);
  if (!e.display.description.empty()) j.Add("desc", e.display.description);
  return j;
}

// "cpus": CPU time by mode, per CPU.
Json CpuRowsJson(const std::vector<stats::CpuRow>& rows) {
  Json cpus = Json::Array();
  for (const stats::CpuRow& c : rows) {
    Json row = Json::Object();
    row.AddInt("cpu", c.cpu);
    for (int m = 0; m < stats::kNumCpuModes; ++m) {
      row.AddInt(absl::StrCat(stats::CpuModeName(static_cast<stats::CpuMode>(m)), "_ns"),
                 c.mode_ns[m]);
    }
    cpus.Push(std::move(row));
  }
  return cpus;
}

// "profile": self time per function and mode.
Json ProfileRowsJson(const std::vector<stats::ProfileRow>& rows) {
  Json profile = Json::Array();
  for (const stats::ProfileRow& p : rows) {
    Json row = Json::Object();
    row.Add("function", p.function);
    row.Add("mode", stats::CpuModeName(p.mode));
    row.AddInt("self_ns", p.self_ns);
    row.AddDouble("share_pct", p.share_pct);
    profile.Push(std::move(row));
  }
  return profile;
}

// "locks": lockstat rows per lock name.
Json LockRowsJson(const std::vector<stats::LockRow>& rows) {
  Json locks = Json::Array();
  for (const stats::LockRow& l : rows) {
    Json row = Json::Object();
    row.Add("name", l.name);
    row.AddUint("acquisitions", l.acquisitions);
    row.AddUint("contended", l.contended);
    row.AddInt("wait_ns", l.wait_ns);
    row.AddInt("hold_ns", l.hold_ns);
    row.AddUint("max_waiters", l.max_waiters);
    row.AddUint("holder_changes", l.holder_changes);
    row.AddUint("remote_holder_changes", l.remote_holder_changes);
    row.AddUint("line_transfers", l.line_transfers);
    row.AddInt("wait_irqs_off_ns", l.wait_irqs_off_ns);
    locks.Push(std::move(row));
  }
  return locks;
}

// "counters": event counters.
Json CounterRowsJson(const std::vector<stats::CounterRow>& rows) {
  Json counters = Json::Array();
  for (const stats::CounterRow& c : rows) {
    Json row = Json::Object();
    row.Add("name", c.name);
    row.AddUint("count", c.count);
    counters.Push(std::move(row));
  }
  return counters;
}

// "sched": scheduler figures per task.
Json SchedRowsJson(const std::vector<stats::SchedRow>& rows) {
  Json sched = Json::Array();
  for (const stats::SchedRow& t : rows) {
    Json row = Json::Object();
    row.Add("task", t.task);
    row.AddUint("threads", t.threads);
    row.Add("policy", t.rt ? "SCHED_FIFO" : "SCHED_OTHER");
    row.AddInt("runtime_ns", t.runtime_ns);
    row.AddUint("switches", t.switches);
    row.AddInt("delay_ns", t.delay_ns);
    row.AddInt("max_delay_ns", t.max_delay_ns);
    row.AddInt("max_delay_at_ns", t.max_delay_at_ns);
    sched.Push(std::move(row));
  }
  return sched;
}

// "btt": each device's stages that saw requests.
Json BttRowsJson(const std::vector<stats::DeviceRow>& devices) {
  Json btt = Json::Array();
  for (const stats::DeviceRow& d : devices) {
    for (const auto& [stage, st] : d.stages()) {
      if (st->n == 0) continue;
      Json row = Json::Object();
      row.Add("device", d.name);
      row.Add("stage", stage);
      row.AddUint("n", st->n);
      row.AddInt("min_ns", st->min_ns);
      row.AddDouble("avg_ns", st->avg_ns);
      row.AddInt("max_ns", st->max_ns);
      btt.Push(std::move(row));
    }
  }
  return btt;
}

// "diskstats": each disk's counters as /sys/block/*/stat has them (fio's
// disk_util carries no sectors): requests, merges and 512-byte sectors per
// direction.
Json DiskstatsJson(const std::vector<stats::DeviceRow>& devices) {
  Json diskstats = Json::Array();
  for (const stats::DeviceRow& d : devices) {
    Json row = Json::Object();
    row.Add("name", d.name);
    row.AddUint("read_ios", d.read_ios);
    row.AddUint("read_merges", d.read_merges);
    row.AddUint("read_sectors", d.read_sectors);
    row.AddUint("write_ios", d.write_ios);
    row.AddUint("write_merges", d.write_merges);
    row.AddUint("write_sectors", d.write_sectors);
    diskstats.Push(std::move(row));
  }
  return diskstats;
}

// "page_cache": the page cache's figures.
Json PageCacheJson(const stats::PageCacheRow& p) {
  Json pc = Json::Object();
  pc.AddUint("capacity_pages", p.capacity_pages);
  pc.AddUint("peak_pages", p.peak_pages);
  pc.AddUint("read_accesses", p.read_accesses);
  pc.AddUint("read_hits", p.read_hits);
  pc.AddUint("read_misses", p.read_misses);
  pc.AddDouble("hit_ratio_pct", p.hit_ratio_pct);
  pc.AddUint("readahead_sync", p.readahead_sync);
  pc.AddUint("readahead_async", p.readahead_async);
  pc.AddUint("read_bios", p.read_bios);
  pc.AddUint("pages_dirtied", p.pages_dirtied);
  pc.AddUint("pages_written_back", p.pages_written_back);
  pc.AddUint("writeback_bios", p.writeback_bios);
  pc.AddUint("pages_reclaimed", p.pages_reclaimed);
  pc.AddUint("pages_invalidated", p.pages_invalidated);
  pc.AddUint("dirty_pages_at_end", p.dirty_pages_at_end);
  pc.AddUint("dirty_throttle_waits", p.dirty_throttle_waits);
  pc.AddInt("dirty_throttle_ns", p.dirty_throttle_ns);
  pc.AddUint("mmap_faults", p.mmap_faults);
  pc.AddUint("mmap_major_faults", p.mmap_major_faults);
  pc.AddUint("pages_unmapped", p.pages_unmapped);
  return pc;
}

}  // namespace

Json KernelReportJson(const stats::KernelReport& k) {
  Json o = Json::Object();
  o.Add("host", k.host_name);
  o.AddInt("elapsed_ns", k.elapsed_ns);
  o.AddInt("busy_ns", k.busy_ns);
  o.AddDouble("sys_pct", k.sys_pct);
  o.AddDouble("contention_pct", k.contention_pct);
  o.AddUint("total_ios", k.total_ios);
  o.AddUint("events", k.events);
  o.Add("cpus", CpuRowsJson(k.cpus));
  o.Add("profile", ProfileRowsJson(k.profile));
  o.Add("locks", LockRowsJson(k.locks));
  o.Add("counters", CounterRowsJson(k.counters));
  o.Add("sched", SchedRowsJson(k.sched));
  o.Add("btt", BttRowsJson(k.devices));
  o.Add("diskstats", DiskstatsJson(k.devices));
  if (k.page_cache) o.Add("page_cache", PageCacheJson(*k.page_cache));
  return o;
}

std::string WriteJson(const ReportInput& input, bool json_plus) {
  Json root = Json::Object();
  root.Add("fio version", input.fio_version);
  root.AddInt("timestamp", input.timestamp_sec);
  root.AddInt("timestamp_ms", input.timestamp_ms);
  root.Add("time", input.time_string);
  if (!input.global_options.empty()) root.Add("global options", Options(input.global_options));
  Json jobs = Json::Array();
  for (const ReportEntry& e : input.entries) jobs.Push(JobObject(input, e, json_plus));
  root.Add("jobs", std::move(jobs));
  if (!input.disk_util.empty()) {
    Json disks = Json::Array();
    for (const stats::DeviceRow& d : input.disk_util) {
      Json o = Json::Object();
      o.Add("name", d.name);
      o.AddUint("read_ios", d.read_ios);
      o.AddUint("write_ios", d.write_ios);
      o.AddUint("read_merges", d.read_merges);
      o.AddUint("write_merges", d.write_merges);
      o.AddInt("read_ticks", d.read_ticks_ms);
      o.AddInt("write_ticks", d.write_ticks_ms);
      o.AddInt("in_queue", d.in_queue_ms);
      o.AddDouble("util", d.util_pct);
      disks.Push(std::move(o));
    }
    root.Add("disk_util", std::move(disks));
  }
  if (input.kernel.has_value()) root.Add("blklab", KernelReportJson(*input.kernel));
  return root.Print() + "\n";
}

}  // namespace blklab::report
