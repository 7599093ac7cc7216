// engine/report/t_io_uring_writer.h
//
// The output of fio 3.33's t/io_uring, line for line (its number formats
// included), for `blklab io_uring`:
//
//   submitter=0, tid=T, file=F, node=-1
//   polled=1, fixedbufs=1/0, register_files=1, buffered=0, QD=128
//   Engine=io_uring, sq_ring=128, cq_ring=128
//   IOPS=5.02M, BW=2.45GiB/s, IOS/call=32/31        (one per second)
//   Exiting on timeout | Exiting on signal
//   Maximum IOPS=5.02M
//
// IOPS is the count of submitted IOs in the second (not normalised);
// > 1e6 prints as %.2fM, > 1e5 as %.2fK, else an integer. BW is
// IOPS / (1048576 / bs) MiB/s in integer arithmetic, printed as
// %.2fGiB/s of MiB/1000 above 2000 (the tool's own units). IOS/call is
// submitted / calls and reaped / calls, truncated, -1/-1 without calls.
// The -t1 latency block prints fio's 17 percentiles of the thread's
// histogram in nsec (usec when min > 2000 ns and max > 99999 ns).
//
// Thread-safety: pure functions.
#ifndef BLKLAB_ENGINE_REPORT_T_IO_URING_WRITER_H_
#define BLKLAB_ENGINE_REPORT_T_IO_URING_WRITER_H_

#include <cstdint>
#include <string>

#include "engine/stats/histogram.h"

namespace blklab::report {

struct TioUringCounts {
  uint64_t done = 0;   // submitted IOs
  uint64_t calls = 0;  // io_uring_enter calls
  uint64_t reaps = 0;  // CQEs reaped
};

// "5.02M", "312.45K", "81234".
std::string TioUringIops(uint64_t iops);
// The per-second line, with its newline.
std::string TioUringSecondLine(const TioUringCounts& delta, int bs, bool nop);
// A submitter's startup line, with its newline.
std::string TioUringSubmitterLine(int index, int tid, const std::string& file);
// The two lines the first submitter prints after setting up its ring.
// `engine` is "io_uring", "aio" or "preadv2".
std::string TioUringSetupLines(bool polled, bool fixedbufs, bool dma_map, bool register_files, bool buffered,
                               int depth, const std::string& engine);
// A thread's -t1 block: "<tid>: Latency percentiles:" and the percentiles.
std::string TioUringLatency(int tid, const stats::LatencyHistogram& h);

}  // namespace blklab::report

#endif  // BLKLAB_ENGINE_REPORT_T_IO_URING_WRITER_H_
