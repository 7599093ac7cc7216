// engine/report/normal_writer.cc
//
// fio 3.33's human-readable report (docs/fio-compatibility.md c.1).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/report/num2str.h"
#include "engine/report/report.h"
#include "engine/report/report_internal.h"

namespace blklab::report {

namespace {

using internal::DirBlock;

bool Iec(int kb_base) { return kb_base != 1000; }
NumUnit RateUnit(int unit_base) {
  return unit_base == 1 ? NumUnit::kBitsPerSec : NumUnit::kBytesPerSec;
}

std::string BsString(const BsRange& r) {
  return absl::StrCat(Num2Str(r.min, 4, true, NumUnit::kBytes), "-",
                      Num2Str(r.max, 4, true, NumUnit::kBytes));
}

void WriteHeaderLine(const JobHeader& h, std::string* out) {
  absl::StrAppend(out, h.name, ": (g=", h.groupid, "): rw=", h.rw, ", bs=(R) ",
                  BsString(h.bs[0]), ", (W) ", BsString(h.bs[1]), ", ");
  if (h.bs_is_seq_rand) {
    out->append("bs_is_seq_rand, ");
  } else {
    absl::StrAppend(out, "(T) ", BsString(h.bs[2]), ", ");
  }
  absl::StrAppend(out, "ioengine=", h.ioengine, ", iodepth=", h.iodepth, "\n");
  if (h.numjobs > 1) out->append("...\n");
}

std::string StartingLine(int processes, int threads) {
  auto plural = [](int n, const char* one, const char* many) {
    return absl::StrCat(n, " ", n == 1 ? one : many);
  };
  if (threads > 0 && processes > 0) {
    return absl::StrCat("Starting ", plural(threads, "thread", "threads"), " and ",
                        plural(processes, "process", "processes"), "\n");
  }
  if (threads > 0) return absl::StrCat("Starting ", plural(threads, "thread", "threads"), "\n");
  return absl::StrCat("Starting ", plural(processes, "process", "processes"), "\n");
}

// "    clat (nsec): min=..., max=..., avg=..., stdev=..." with fio's unit
// switch (all three conditions must hold).
void WriteLatLine(const char* name, const stats::RunningStat& s, std::string* out) {
  if (s.n() == 0) return;
  uint64_t min = s.min(), max = s.max();
  double mean = s.mean(), dev = s.stddev();
  const char* unit = "nsec";
  if (min > 2000000 && max > 99999999 && dev > 1000000.0) {
    min /= 1000000, max /= 1000000, mean /= 1e6, dev /= 1e6;
    unit = "msec";
  } else if (min > 2000 && max > 99999 && dev > 1000.0) {
    min /= 1000, max /= 1000, mean /= 1e3, dev /= 1e3;
    unit = "usec";
  }
  absl::StrAppend(out, "    ", name, " (", unit, "): min=", Num2Str(min, 6, false, NumUnit::kNone),
                  ", max=", Num2Str(max, 6, false, NumUnit::kNone),
                  absl::StrFormat(", avg=%5.02f, stdev=%5.02f\n", mean, dev));
}

void WritePercentiles(const char* name, const stats::LatencyHistogram& hist,
                      const JobDisplay& display, std::string* out) {
  if (hist.total() == 0) return;
  const std::vector<double> list = internal::SortedPercentiles(display);
  if (list.empty()) return;
  std::vector<uint64_t> values = hist.Percentiles(list);
  const uint64_t minv = *std::min_element(values.begin(), values.end());
  const uint64_t maxv = *std::max_element(values.begin(), values.end());
  int scale_steps = 0;
  const char* unit = "nsec";
  if (minv > 2000000 && maxv > 99999999) {
    scale_steps = 2;
    unit = "msec";
  } else if (minv > 2000 && maxv > 99999) {
    scale_steps = 1;
    unit = "usec";
  }
  // Scaled values are rounded up, as fio does.
  for (uint64_t& v : values) {
    for (int i = 0; i < scale_steps; ++i) v = (v + 999) / 1000;
  }
  const uint64_t scaled_max = *std::max_element(values.begin(), values.end());
  const int precision = internal::PercentilePrecision(list);
  const int width = std::max(5, DecimalDigits(scaled_max));
  const int per_line = std::max(1, 73 / (precision + 10 + width));
  absl::StrAppend(out, "    ", name, " percentiles (", unit, "):\n     |");
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0 && i % per_line == 0) out->append("     |");
    absl::StrAppend(out, absl::StrFormat(" %*.*fth=[%*d]", precision + 3, precision, list[i],
                                         width, values[i]));
    const bool last = i + 1 == list.size();
    if (!last) out->push_back(',');
    if (last || (i + 1) % per_line == 0) out->push_back('\n');
  }
}

void WriteDirBlock(const ReportEntry& entry, const DirBlock& b, std::string* out) {
  const JobDisplay& disp = entry.display;
  const stats::DirResult& d = b.result;
  const bool iec = Iec(disp.kb_base);
  const NumUnit rate = RateUnit(disp.unit_base);
  const bool both_mixed_bug = b.dir_index < 0 && disp.unified == UnifiedRw::kBoth;
  if (both_mixed_bug) {
    // fio 3.33 prints zeros in this headline (see docs/fio-compatibility.md c.1).
    absl::StrAppend(out, "  ", b.label, ": IOPS=0, BW=0 (0)(0B/", d.runtime_ms, "msec)\n");
  } else {
    const uint64_t bw = d.bw_bytes_per_sec();
    absl::StrAppend(out, "  ", b.label,
                    ": IOPS=", Num2Str(internal::IopsInt(d), disp.sig_figs, false, NumUnit::kNone),
                    ", BW=", Num2Str(bw, disp.sig_figs, iec, rate), " (",
                    Num2Str(bw, disp.sig_figs, !iec, rate), ")(",
                    Num2Str(d.io_bytes, disp.sig_figs, iec, NumUnit::kBytes), "/", d.runtime_ms,
                    "msec)");
    if (b.dir_index == 1) out->append("; 0 zone resets");
    out->push_back('\n');
  }
  WriteLatLine("slat", d.slat, out);
  WriteLatLine("clat", d.clat, out);
  WriteLatLine(" lat", d.lat, out);
  if (disp.slat_percentiles) WritePercentiles("slat", d.slat_hist, disp, out);
  if (disp.clat_percentiles) WritePercentiles("clat", d.clat_hist, disp, out);
  if (disp.lat_percentiles) WritePercentiles("lat", d.lat_hist, disp, out);

  if (d.bw_samples.n() > 0) {
    double min = static_cast<double>(d.bw_samples.min());
    double max = static_cast<double>(d.bw_samples.max());
    double mean = d.bw_samples.mean(), dev = d.bw_samples.stddev();
    const double share = internal::BwShare(mean, b.group_agg_bw, 100.0);
    const double base = disp.kb_base == 1000 ? 1000.0 : 1024.0;
    const bool bits = disp.unit_base == 1;
    if (bits) min *= 8, max *= 8, mean *= 8, dev *= 8;
    std::string unit = disp.kb_base == 1000 ? (bits ? "kbit" : "kB") : (bits ? "Kibit" : "KiB");
    if (mean > base * base) {
      min /= base, max /= base, mean /= base, dev /= base;
      unit = disp.kb_base == 1000 ? (bits ? "Mbit" : "MB") : (bits ? "Mibit" : "MiB");
    }
    absl::StrAppend(out, absl::StrFormat("   bw (%5s/s): min=%5d, max=%5d, per=%3.2f%%, avg=%5.02f, "
                                         "stdev=%5.02f, samples=%d\n",
                                         unit, static_cast<uint64_t>(min),
                                         static_cast<uint64_t>(max), share, mean, dev,
                                         d.bw_samples.n()));
  }
  if (d.iops_samples.n() > 0) {
    absl::StrAppend(out, absl::StrFormat("   iops        : min=%5d, max=%5d, avg=%5.02f, "
                                         "stdev=%5.02f, samples=%d\n",
                                         d.iops_samples.min(), d.iops_samples.max(),
                                         d.iops_samples.mean(), d.iops_samples.stddev(),
                                         d.iops_samples.n()));
  }
}

template <size_t N>
void WriteLatRows(const char* unit, const std::array<double, N>& shares, std::string* out) {
  int in_row = 0;
  for (size_t i = 0; i < N; ++i) {
    if (shares[i] <= 0.0) continue;
    if (in_row == 0) absl::StrAppend(out, "  lat (", unit, ")   : ");
    if (in_row > 0) out->append(", ");
    absl::StrAppend(out, stats::kLatLabels[i], absl::StrFormat("=%3.2f%%", shares[i]));
    if (++in_row == 5) {
      out->push_back('\n');
      in_row = 0;
    }
  }
  if (in_row > 0) out->push_back('\n');
}

template <size_t N>
std::string DistRow(const char* const* labels, const std::array<uint64_t, N>& counts) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  std::string row;
  for (size_t i = 0; i < N; ++i) {
    double pct = 0;
    if (total > 0 && counts[i] > 0) {
      pct = 100.0 * static_cast<double>(counts[i]) / static_cast<double>(total);
      if (pct < 0.1) pct = 0.1;
    }
    if (i > 0) row.append(", ");
    absl::StrAppend(&row, labels[i], absl::StrFormat("=%3.1f%%", pct));
  }
  return row;
}

void WriteEntry(const ReportInput& input, const ReportEntry& e, std::string* out) {
  const stats::JobResult& r = e.result;
  // fio's show_thread_status_normal: td->verror in parentheses after err=.
  const std::string err = r.verror.empty() || e.error == 0
                              ? absl::StrFormat("err=%2d", e.error)
                              : absl::StrFormat("err=%2d (%s)", e.error, r.verror);
  absl::StrAppend(out, e.name, ": (groupid=", e.groupid, ", jobs=", r.num_jobs, "): ", err,
                  absl::StrFormat(": pid=%d: ", e.pid), input.time_string, "\n");
  if (!e.display.description.empty()) {
    absl::StrAppend(out, "  Description  : [", e.display.description, "]\n");
  }
  for (const DirBlock& b : internal::DirBlocks(input, e)) {
    const bool idle = b.result.total_ios == 0 && b.result.io_bytes == 0;
    if (idle) continue;
    WriteDirBlock(e, b, out);
  }
  const stats::LatencyShares lat = stats::ComputeLatencyShares(r.lat_dist);
  WriteLatRows("nsec", lat.ns, out);
  WriteLatRows("usec", lat.us, out);
  WriteLatRows("msec", lat.ms, out);
  // show_ddir_status(DDIR_SYNC): fsync=, fdatasync=, end_fsync's syncs.
  if (r.sync.lat.n() > 0) {
    out->append("  fsync/fdatasync/sync_file_range:\n");
    WriteLatLine("sync", r.sync.lat, out);
    WritePercentiles("sync", r.sync.lat_hist, e.display, out);
  }
  absl::StrAppend(out, absl::StrFormat("  cpu          : usr=%3.2f%%, sys=%3.2f%%, ctx=%d, majf=%d, "
                                       "minf=%d\n",
                                       r.cpu.usr_pct, r.cpu.sys_pct, r.cpu.ctx, r.cpu.majf,
                                       r.cpu.minf));
  absl::StrAppend(out, "  IO depths    : ", DistRow(stats::kDepthLabels, r.iodepth), "\n");
  absl::StrAppend(out, "     submit    : ", DistRow(stats::kBatchLabels, r.submit), "\n");
  absl::StrAppend(out, "     complete  : ", DistRow(stats::kBatchLabels, r.complete), "\n");
  const auto& d = r.dirs;
  absl::StrAppend(out, "     issued rwts: total=", r.issued[0], ",", r.issued[1], ",",
                  r.issued[2], ",", r.issued[3], " short=", d[0].short_ios, ",", d[1].short_ios,
                  ",", d[2].short_ios, ",0 dropped=", d[0].drop_ios, ",", d[1].drop_ios, ",",
                  d[2].drop_ios, ",0\n");
  absl::StrAppend(out, absl::StrFormat("     latency   : target=%d, window=%d, percentile=%.2f%%, "
                                       "depth=%d\n",
                                       e.display.latency_target, e.display.latency_window,
                                       e.display.latency_percentile, e.display.latency_depth));
}

void WriteGroupLine(const char* name, const GroupDirStatus& g, const GroupStatus& gs,
                    std::string* out) {
  const bool iec = Iec(gs.kb_base);
  const NumUnit rate = RateUnit(gs.unit_base);
  const int sf = gs.sig_figs;
  absl::StrAppend(out, absl::StrFormat("%7s", name), ": bw=", Num2Str(g.agg_bw, sf, iec, rate),
                  " (", Num2Str(g.agg_bw, sf, !iec, rate), "), ", Num2Str(g.min_bw, sf, iec, rate),
                  "-", Num2Str(g.max_bw, sf, iec, rate), " (", Num2Str(g.min_bw, sf, !iec, rate),
                  "-", Num2Str(g.max_bw, sf, !iec, rate),
                  "), io=", Num2Str(g.io_bytes, sf, iec, NumUnit::kBytes), " (",
                  Num2Str(g.io_bytes, sf, !iec, NumUnit::kBytes), "), run=", g.min_run_ms, "-",
                  g.max_run_ms, "msec\n");
}

}  // namespace

std::string WriteNormalPreamble(const ReportInput& input) {
  std::string out;
  for (const JobHeader& h : input.headers) WriteHeaderLine(h, &out);
  absl::StrAppend(&out, input.fio_version, "\n");
  out += StartingLine(input.processes, input.threads);
  for (const std::string& line : input.info_lines) absl::StrAppend(&out, line, "\n");
  return out;
}

std::string WriteNormal(const ReportInput& input) {
  std::string out;
  if (input.with_preamble) out = WriteNormalPreamble(input);
  out.push_back('\n');
  for (const ReportEntry& e : input.entries) WriteEntry(input, e, &out);
  for (const GroupStatus& g : input.groups) {
    absl::StrAppend(&out, "\nRun status group ", g.groupid, " (all jobs):\n");
    static const char* const kNames[] = {"READ", "WRITE", "TRIM"};
    if (g.unified != UnifiedRw::kMixed) {
      for (int d = 0; d < stats::kNumDirs; ++d) {
        if (g.dirs[d].max_run_ms > 0) WriteGroupLine(kNames[d], g.dirs[d], g, &out);
      }
    }
    if (g.unified != UnifiedRw::kNone && g.mixed.max_run_ms > 0) {
      WriteGroupLine("MIXED", g.mixed, g, &out);
    }
  }
  if (!input.disk_util.empty()) {
    out.append("\nDisk stats (read/write):\n");
    for (const stats::DeviceRow& dev : input.disk_util) {
      absl::StrAppend(&out, absl::StrFormat("  %s: ios=%d/%d, merge=%d/%d, ticks=%d/%d, "
                                            "in_queue=%d, util=%3.2f%%\n",
                                            dev.name, dev.read_ios, dev.write_ios,
                                            dev.read_merges, dev.write_merges, dev.read_ticks_ms,
                                            dev.write_ticks_ms, dev.in_queue_ms, dev.util_pct));
    }
  }
  if (input.kernel.has_value()) out += WriteKernelSections(*input.kernel);
  return out;
}

}  // namespace blklab::report
