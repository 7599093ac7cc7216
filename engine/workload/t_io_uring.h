// engine/workload/t_io_uring.h
//
// The command line of fio 3.33's `t/io_uring` benchmark (the tool most
// per-core IOPS results on the block list, RC2 among them, were measured
// with), parsed as the tool parses it: POSIX getopt over
// `d:s:c:b:p:B:F:n:N:O:t:T:a:r:D:R:X:S:P:u:h?` (arguments joined or
// separate, operands anywhere, `--` ends the options), numbers through
// atoi (no range check: `-d abc` is 0), booleans as `!!atoi`. -s and -c of 0
// become 1 and both are capped at -d. The usage text is the tool's, with its
// quirks (compile-time defaults for -d -s -c -b, current values for the
// rest).
//
// Thread-safety: plain functions and a value type.
#ifndef BLKLAB_ENGINE_WORKLOAD_T_IO_URING_H_
#define BLKLAB_ENGINE_WORKLOAD_T_IO_URING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace blklab::workload {

struct TioUringSpec {
  int depth = 128;           // -d
  int batch_submit = 32;     // -s
  int batch_complete = 32;   // -c
  int bs = 4096;             // -b
  bool polled = true;        // -p
  bool fixedbufs = true;     // -B
  bool dma_map = false;      // -D
  bool register_files = true;  // -F
  int nthreads = 1;          // -n
  bool buffered = false;     // -O0
  bool nop = false;          // -N
  bool stats = false;        // -t
  uint64_t tsc_rate = 0;     // -T
  int runtime_s = 0;         // -r (0: until interrupted)
  bool random_io = true;     // -R
  bool aio = false;          // -a
  bool use_sync = false;     // -S
  bool register_ring = true;  // -X
  bool numa_placement = false;  // -P
  bool passthrough = false;  // -u
  std::vector<std::string> files;
};

struct TioUringArgs {
  TioUringSpec spec;
  // -h/-?/unknown option/missing argument: print `usage` and exit with
  // `exit_code` (0 for those; 1 with no arguments at all).
  bool show_usage = false;
  int exit_code = 0;
  std::string stderr_text;  // getopt's and the tool's messages before the usage
};

// Parses t/io_uring's arguments (without the program name). InvalidArgument
// for the tool's own errors ("Threads must be non-zero", "No files
// specified"), with the usage appended as the tool prints it.
absl::StatusOr<TioUringArgs> ParseTioUringArgs(const std::vector<std::string>& args);

// The aio mode (-a1) turns off what aio cannot do, as the tool does at
// startup: polled IO, no-op requests, registered files and buffers. Returns
// the lines the tool prints to stderr for what it turned off.
std::string TioUringApplyAioLimits(TioUringSpec& spec);

// The files of each submitter thread (indices into spec.files), as the tool
// deals them: nthreads / nfiles threads per file, the remainder to the first
// files, round robin from a running index, at most 16 files a thread.
std::vector<std::vector<int>> TioUringThreadFiles(const TioUringSpec& spec);

// The usage text for `argv0` with the values parsed so far.
std::string TioUringUsage(const std::string& argv0, const TioUringSpec& current);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_T_IO_URING_H_
