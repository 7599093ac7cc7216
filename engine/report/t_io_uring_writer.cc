#include "engine/report/t_io_uring_writer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace blklab::report {

std::string TioUringIops(uint64_t iops) {
  if (iops > 1000000) return absl::StrFormat("%.2fM", static_cast<double>(iops) / 1000000.0);
  if (iops > 100000) return absl::StrFormat("%.2fK", static_cast<double>(iops) / 1000.0);
  return absl::StrCat(iops);
}

std::string TioUringSecondLine(const TioUringCounts& d, int bs, bool nop) {
  std::string out = absl::StrCat("IOPS=", TioUringIops(d.done), ", ");
  if (!nop) {
    const uint64_t b = static_cast<uint64_t>(std::max(bs, 1));
    const uint64_t bw = b > 1048576 ? d.done * (b / 1048576) : d.done / std::max<uint64_t>(1048576 / b, 1);
    if (bw > 2000) {
      absl::StrAppend(&out, absl::StrFormat("BW=%.2fGiB/s, ", static_cast<double>(bw) / 1000.0));
    } else {
      absl::StrAppend(&out, "BW=", bw, "MiB/s, ");
    }
  }
  const int64_t rpc = d.calls > 0 ? static_cast<int64_t>(d.done / d.calls) : -1;
  const int64_t ipc = d.calls > 0 ? static_cast<int64_t>(d.reaps / d.calls) : -1;
  absl::StrAppend(&out, "IOS/call=", rpc, "/", ipc, "\n");
  return out;
}

std::string TioUringSubmitterLine(int index, int tid, const std::string& file) {
  return absl::StrCat("submitter=", index, ", tid=", tid, ", file=", file, ", node=-1\n");
}

std::string TioUringSetupLines(bool polled, bool fixedbufs, bool dma_map, bool register_files, bool buffered,
                               int depth, const std::string& engine) {
  std::string out = absl::StrCat("polled=", polled ? 1 : 0, ", fixedbufs=", fixedbufs ? 1 : 0, "/",
                                 dma_map ? 1 : 0, ", register_files=", register_files ? 1 : 0,
                                 ", buffered=", buffered ? 1 : 0, ", QD=", depth, "\n");
  if (engine == "io_uring") {
    const uint32_t ring = std::bit_ceil(static_cast<uint32_t>(std::max(depth, 1)));
    absl::StrAppend(&out, "Engine=io_uring, sq_ring=", ring, ", cq_ring=", ring, "\n");
  } else {
    absl::StrAppend(&out, "Engine=", engine, "\n");
  }
  return out;
}

std::string TioUringLatency(int tid, const stats::LatencyHistogram& h) {
  static constexpr double kPcts[] = {1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0,
                                     80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99};
  std::vector<double> list(std::begin(kPcts), std::end(kPcts));
  std::vector<uint64_t> values = h.total() > 0 ? h.Percentiles(list) : std::vector<uint64_t>(list.size(), 0);
  uint64_t min_v = 0, max_v = 0;
  if (h.total() > 0) {
    min_v = values.front();
    max_v = values.back();
  }
  const bool usec = min_v > 2000 && max_v > 99999;
  const uint64_t divisor = usec ? 1000 : 1;
  for (uint64_t& v : values) v = usec ? (v + 999) / 1000 : v;
  const uint64_t max_shown = max_v / divisor;
  const int width = std::max(5, max_shown > 0 ? static_cast<int>(std::floor(std::log10(static_cast<double>(max_shown)))) + 1 : 1);
  const int per_line = 73 / (14 + width);
  std::string out = absl::StrCat(tid, ": Latency percentiles:\n    percentiles (", usec ? "usec" : "nsec",
                                 "):\n     |");
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StrAppend(&out, absl::StrFormat(" %7.4fth=[%*llu]", list[i], width,
                                          static_cast<unsigned long long>(values[i])));
    if (i + 1 == values.size()) {
      absl::StrAppend(&out, "\n");
    } else {
      absl::StrAppend(&out, ",");
      if ((i + 1) % static_cast<size_t>(per_line) == 0) absl::StrAppend(&out, "\n     |");
    }
  }
  return out;
}

}  // namespace blklab::report
