// engine/report/terse_writer.cc
//
// Terse version 3 (docs/fio-compatibility.md c.2): one ';'-separated line per entry.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/report/report.h"
#include "engine/report/report_internal.h"

namespace blklab::report {

namespace {

constexpr size_t kTersePercentiles = 20;

// min;max;mean;stdev in microseconds.
void LatFields(const stats::RunningStat& s, std::vector<std::string>* f) {
  f->push_back(absl::StrCat(s.min() / 1000));
  f->push_back(absl::StrCat(s.max() / 1000));
  f->push_back(absl::StrFormat("%f", s.mean() / 1000.0));
  f->push_back(absl::StrFormat("%f", s.stddev() / 1000.0));
}

// The 41 fields of one direction block.
void DirFields(const ReportEntry& e, const internal::DirBlock& b, std::vector<std::string>* f) {
  const stats::DirResult& d = b.result;
  f->push_back(absl::StrCat(d.io_bytes >> 10));
  f->push_back(absl::StrCat(d.bw_bytes_per_sec() / 1024));
  f->push_back(absl::StrCat(internal::IopsInt(d)));
  f->push_back(absl::StrCat(d.runtime_ms));
  LatFields(d.slat, f);
  LatFields(d.clat, f);
  // Percentiles of total latency with lat_percentiles, else of clat.
  const stats::LatencyHistogram* hist = nullptr;
  if (e.display.lat_percentiles) {
    hist = &d.lat_hist;
  } else if (e.display.clat_percentiles) {
    hist = &d.clat_hist;
  }
  std::vector<double> list;
  if (hist != nullptr) list = internal::SortedPercentiles(e.display);
  std::vector<uint64_t> values = hist != nullptr ? hist->Percentiles(list) : std::vector<uint64_t>();
  for (size_t i = 0; i < kTersePercentiles; ++i) {
    if (i < list.size()) {
      const uint64_t v = i < values.size() ? values[i] / 1000 : 0;
      f->push_back(absl::StrFormat("%f%%=%d", list[i], v));
    } else {
      f->push_back("0%=0");
    }
  }
  LatFields(d.lat, f);
  f->push_back(absl::StrCat(d.bw_samples.min()));
  f->push_back(absl::StrCat(d.bw_samples.max()));
  f->push_back(absl::StrFormat(
      "%f%%", d.bw_samples.n() > 0 ? internal::BwShare(d.bw_samples.mean(), b.group_agg_bw, 0.0)
                                   : 0.0));
  f->push_back(absl::StrFormat("%f", d.bw_samples.mean()));
  f->push_back(absl::StrFormat("%f", d.bw_samples.stddev()));
}

}  // namespace

std::string WriteTerse(const ReportInput& input) {
  std::string out;
  for (const ReportEntry& e : input.entries) {
    std::vector<std::string> f = {"3", input.fio_version, e.name, absl::StrCat(e.groupid),
                                  absl::StrCat(e.error)};
    const std::vector<internal::DirBlock> blocks = internal::DirBlocks(input, e);
    for (const internal::DirBlock& b : blocks) {
      if (b.dir_index == 2) continue;  // version 3 has no trim block
      DirFields(e, b, &f);
    }
    const stats::JobResult& r = e.result;
    f.push_back(absl::StrFormat("%f%%", r.cpu.usr_pct));
    f.push_back(absl::StrFormat("%f%%", r.cpu.sys_pct));
    f.push_back(absl::StrCat(r.cpu.ctx));
    f.push_back(absl::StrCat(r.cpu.majf));
    f.push_back(absl::StrCat(r.cpu.minf));
    for (double s : stats::DepthShares(r.iodepth)) f.push_back(absl::StrFormat("%3.1f%%", s));
    const stats::LatencyShares lat = stats::ComputeLatencyShares(r.lat_dist);
    // The first microsecond field also holds every sub-microsecond IO.
    double sub_us = 0;
    for (double s : lat.ns) sub_us += s;
    for (size_t i = 0; i < lat.us.size(); ++i) {
      f.push_back(absl::StrFormat("%3.2f%%", lat.us[i] + (i == 0 ? sub_us : 0.0)));
    }
    for (double s : lat.ms) f.push_back(absl::StrFormat("%3.2f%%", s));
    for (const stats::DeviceRow& dev : input.disk_util) {
      f.push_back(dev.name);
      f.push_back(absl::StrCat(dev.read_ios));
      f.push_back(absl::StrCat(dev.write_ios));
      f.push_back(absl::StrCat(dev.read_merges));
      f.push_back(absl::StrCat(dev.write_merges));
      f.push_back(absl::StrCat(dev.read_ticks_ms));
      f.push_back(absl::StrCat(dev.write_ticks_ms));
      f.push_back(absl::StrCat(dev.in_queue_ms));
      f.push_back(absl::StrFormat("%3.2f%%", dev.util_pct));
    }
    if (!e.display.description.empty()) f.push_back(e.display.description);
    absl::StrAppend(&out, absl::StrJoin(f, ";"), "\n");
  }
  return out;
}

}  // namespace blklab::report
