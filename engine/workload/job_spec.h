// engine/workload/job_spec.h
//
// JobSpec is one fio job definition in typed form: what fio keeps in
// `struct thread_options` (thread_options.h), reduced to what a block-layer
// simulator uses, with enums instead of strings. It is produced by the job
// parser (job_parser.h) and read by the engine and the I/O generators.
// The engine is an IoEngine id; its names and flags are in io_engine_info.h.
//
// Invariants (established by the parser):
//  - bs, bs range and bssplit sizes are > 0; bs_range.lo <= bs_range.hi.
//  - iodepth >= 1, numjobs >= 1, rwmixread in [0,100].
//  - SizeSpec fields may still hold a percentage; the engine resolves them
//    against the device size (see io_generator.h, ResolveJob()).
//  - options_written lists the job section's own option lines in file order,
//    with the option name as written and the value as written ("" if bare).
// Thread-safety: plain value type.
// Cost: copying allocates (strings, vectors); never copied on the I/O path.
#ifndef BLKLAB_ENGINE_WORKLOAD_JOB_SPEC_H_
#define BLKLAB_ENGINE_WORKLOAD_JOB_SPEC_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/workload/io_engine_info.h"
#include "engine/workload/value_syntax.h"

namespace blklab::workload {

// Data direction, indexing every PerDir array (fio's DDIR_READ/WRITE/TRIM).
enum class Direction : uint8_t { kRead = 0, kWrite = 1, kTrim = 2 };
inline constexpr int kNumDirections = 3;
template <typename T>
using PerDir = std::array<T, kNumDirections>;

// `rw=` / `readwrite=`.
enum class RwPattern : uint8_t {
  kRead,
  kWrite,
  kTrim,
  kRandRead,
  kRandWrite,
  kRandTrim,
  kReadWrite,  // `rw` or `readwrite`: sequential mix
  kRandRw,
  kTrimWrite,
  kRandTrimWrite,
};
bool IsRandom(RwPattern p);
bool IsMixed(RwPattern p);  // two directions in one job
const char* RwPatternName(RwPattern p);

enum class RwSequencer : uint8_t { kSequential, kIdentical };

// Engine-private flags (io_uring, pvsync2, libaio).
struct EngineFlags {
  bool hipri = false;
  uint32_t hipri_percentage = 100;  // pvsync2
  bool fixedbufs = false;
  bool registerfiles = false;
  bool sqthread_poll = false;
  int32_t sqthread_poll_cpu = -1;  // -1: not pinned
  bool nonvectored = false;
  bool nowait = false;
  bool uncached = false;
  uint32_t force_async = 0;
  uint32_t cmdprio_percentage = 0;
  bool userspace_reap = false;  // libaio
};

enum class DistributionKind : uint8_t { kRandom, kZipf, kPareto, kNormal, kZoned, kZonedAbs };

// One zone of `zoned` / `zoned_abs`: access_percent of the I/O goes to the
// next range (range_percent of the region, or range_bytes for zoned_abs).
struct DistributionZone {
  uint32_t access_percent = 0;
  double range_percent = 0.0;
  uint64_t range_bytes = 0;
};

struct RandomDistribution {
  DistributionKind kind = DistributionKind::kRandom;
  double param = 0.0;    // zipf theta, pareto h, normal sigma (percent)
  double center = -1.0;  // -1: none given; else in [0,1]
  PerDir<std::vector<DistributionZone>> zones;
};

enum class RateProcess : uint8_t { kLinear, kPoisson };
enum class ThinktimeBlocksType : uint8_t { kComplete, kIssue };
enum class UnifiedRwReporting : uint8_t { kNone, kMixed, kBoth };
enum class CpusAllowedPolicy : uint8_t { kShared, kSplit };
enum class RandomGenerator : uint8_t { kTausworthe, kLfsr, kTausworthe64 };
enum class FileServiceType : uint8_t { kRoundRobin, kRandom, kSequential, kZipf, kPareto, kNormal, kGauss };
const char* FileServiceTypeName(FileServiceType t);
enum class ZoneMode : uint8_t { kNone, kStrided, kZbd };
// sync=: how the job opens its files (O_SYNC, O_DSYNC).
enum class SyncIo : uint8_t { kNone, kSync, kDsync };
// fadvise_hint=: the advice fio gives at open (posix_fadvise; the mmap
// engine also posix_madvise): none (0), from the job's pattern (1: RANDOM
// for random I/O, else SEQUENTIAL), or always RANDOM / SEQUENTIAL.
enum class FadviseHint : uint8_t { kNone, kType, kRandom, kSequential };
// fio's sg engine, sg_write_mode=: the SCSI command a write-direction I/O
// sends (engines/sg.c).
enum class SgWriteMode : uint8_t {
  kWrite,           // WRITE(10/16)
  kWriteAndVerify,  // WRITE AND VERIFY (BYTCHK 0: the device checks its medium)
  kWriteSame,       // WRITE SAME: one block of data written over the range
  kWriteSameNdob,   // WRITE SAME(16) with NDOB: zeroes, no data sent
  kVerifyBytchk00,  // VERIFY, BYTCHK 00: a medium check, no data
  kVerifyBytchk01,  // VERIFY, BYTCHK 01: the data sent is compared block by block
  kVerifyBytchk11,  // VERIFY, BYTCHK 11: one block sent, compared with each block
  kWriteStream,     // WRITE STREAM(16) (refused: no stream model)
};

// write_*_log: enabled with an optional file-name prefix.
struct LogSpec {
  bool enabled = false;
  std::string prefix;  // empty: the job name
};

// An option line exactly as written (for fio's JSON options echo).
struct WrittenOption {
  std::string name;
  std::string value;
};

inline constexpr int64_t kNsPerSec = 1000000000;

struct JobSpec {
  // --- identity ---
  std::string name;
  std::string description;

  // --- pattern ---
  RwPattern rw = RwPattern::kRead;
  int64_t rw_modifier = 0;  // `:N`: random → new offset every N I/Os; sequential → gap bytes (may be < 0)
  RwSequencer rw_sequencer = RwSequencer::kSequential;
  uint32_t rwmixread = 50;  // percent of reads in mixed patterns

  // --- block sizes ---
  PerDir<uint64_t> bs = {4096, 4096, 4096};
  PerDir<SizeRange> bs_range = {};  // lo == 0: not set (bs is used)
  PerDir<std::vector<BsSplitEntry>> bssplit;  // empty: not set
  bool bs_unaligned = false;
  bool bs_is_seq_rand = false;
  PerDir<uint64_t> blockalign = {0, 0, 0};  // 0: = min bs

  // --- region and amount ---
  SizeSpec size;              // 0 bytes and no percent: whole target
  SizeSpec offset;
  SizeSpec offset_increment;
  SizeSpec io_size;           // 0: = size
  uint64_t offset_align = 0;  // 0: min bs
  uint64_t number_ios = 0;    // 0: off
  SizeRange filesize;         // lo == 0: not set
  uint32_t nrfiles = 1;
  FileServiceType file_service_type = FileServiceType::kRoundRobin;
  uint32_t openfiles = 0;        // 0: every file open at once
  SyncIo sync_io = SyncIo::kNone;  // sync=: each buffered write written back before it returns
  FadviseHint fadvise_hint = FadviseHint::kType;
  SgWriteMode sg_write_mode = SgWriteMode::kWrite;
  std::string buffer_pattern;    // buffer_pattern= as given (value_syntax.h ParseFioPattern); empty: random data
  uint32_t file_service_nr = 1;  // I/Os to a file before the next (`roundrobin:N`)
  std::vector<std::string> filenames;  // from `filename=` (`:` list, `\:` escapes)
  std::string directory;
  std::string filename_format;  // filename_format=; empty: fio's $jobname.$jobnum.$filenum
  std::string write_iolog;  // write_iolog=: the job's I/O log (fio version 3 iolog); empty: none
  ZoneMode zonemode = ZoneMode::kNone;
  // zonemode=strided: zonesize bytes of I/O in each zone of zonerange
  // (0: zonesize) bytes, then the next zone zonerange + zoneskip further.
  SizeSpec zonesize;
  SizeSpec zonerange;
  SizeSpec zoneskip;

  // --- queueing ---
  uint32_t iodepth = 1;
  uint32_t iodepth_batch_submit = 1;        // 0: = iodepth
  uint32_t iodepth_batch_complete_min = 1;  // 0: poll without waiting
  uint32_t iodepth_batch_complete_max = 0;  // 0: = iodepth_batch_complete_min
  uint32_t iodepth_low = 0;                 // 0: = iodepth

  // --- engine ---
  IoEngine ioengine = IoEngine::kPsync;
  std::string ioengine_name = "psync";
  EngineFlags engine_flags;
  bool direct = false;
  std::string ioscheduler;  // empty: leave the device's
  uint32_t prio = 0;        // 0-7
  uint32_t prioclass = 0;   // 0: none
  std::string cgroup;       // cgroup=: path under the cgroup2 mount; empty: fio's own cgroup (the root)
  uint32_t cgroup_weight = 0;  // cgroup_weight= (refused: fio writes blkio.weight)
  // fio's flow control (flow.c): jobs with a non-zero flow= weight and the
  // same flow_id hold each other to the ratio of their weights.
  uint32_t flow = 0;           // flow= weight, 0..1000 (0: not in a flow)
  uint32_t flow_id = 0;        // flow_id=
  uint32_t flow_sleep_us = 0;  // flow_sleep=: quiesce and sleep this long when held back (0: busy loop)

  // --- clones and timing ---
  uint32_t numjobs = 1;
  int64_t runtime_ns = 0;  // 0: no limit
  bool time_based = false;
  int64_t ramp_time_ns = 0;
  int64_t startdelay_min_ns = 0;
  int64_t startdelay_max_ns = 0;  // > min: random per job
  uint64_t loops = 1;
  int64_t thinktime_ns = 0;
  int64_t thinktime_spin_ns = 0;
  uint64_t thinktime_blocks = 1;
  ThinktimeBlocksType thinktime_blocks_type = ThinktimeBlocksType::kComplete;

  // --- rate limits (0: none) ---
  PerDir<uint64_t> rate_bps = {0, 0, 0};
  PerDir<uint64_t> rate_min_bps = {0, 0, 0};
  PerDir<uint64_t> rate_iops = {0, 0, 0};
  PerDir<uint64_t> rate_iops_min = {0, 0, 0};
  RateProcess rate_process = RateProcess::kLinear;

  // --- randomness ---
  RandomDistribution random_distribution;
  PerDir<uint32_t> percentage_random = {100, 100, 100};
  bool norandommap = false;
  bool serialize_overlap = false;  // hold an I/O back while an overlapping one is in flight
  bool randrepeat = true;
  uint64_t randseed = 0x89;
  bool randseed_set = false;
  RandomGenerator random_generator = RandomGenerator::kTausworthe;

  // --- sync ---
  uint32_t fsync_blocks = 0;
  uint32_t fdatasync_blocks = 0;
  bool end_fsync = false;
  bool fsync_on_close = false;  // fsync the file when the job closes it (not in the sync statistics)
  bool invalidate = true;       // drop the file's clean cached pages when the job opens it
  bool pre_read = false;        // read the files into the page cache before the job (clears invalidate)
  bool unlink = false;          // delete the files when the job ends
  bool unlink_each_loop = false;  // ... and after each loop
  uint32_t trim_percentage = 0;
  std::string verify;  // "" or "0": off

  // --- verify (fio's verify.c, backend.c do_verify, io_u.c check_get_verify) ---
  bool do_verify = true;              // run the verify phase after the write phase
  uint64_t verify_backlog = 0;        // verify every N written blocks as the job goes
  uint64_t verify_backlog_batch = 0;  // 0: verify_backlog
  uint64_t verify_interval = 0;       // bytes per verify header (0: the write block size)
  bool verify_fatal = false;          // stop at a block's first bad checksum
  uint32_t verify_async = 0;          // verify threads (only with ioengine=null)
  bool verify_only = false;           // refused: no dry run modelled
  bool verify_state_load = false;     // refused: no state from an earlier run
  bool experimental_verify = false;   // replay the write sequence instead of a log
  std::string verify_pattern;         // fill pattern (changes the fill's cost)

  // --- groups ---
  bool thread = false;
  bool stonewall = false;
  bool new_group = false;
  std::string wait_for;
  bool group_reporting = false;
  bool exitall = false;

  // --- reporting ---
  uint32_t kb_base = 1024;
  uint32_t unit_base = 0;  // 0 auto(bytes), 8 bytes, 1 bits
  bool clat_percentiles = true;
  bool lat_percentiles = false;
  bool slat_percentiles = false;
  std::vector<double> percentile_list = {1,  5,  10, 20, 30,   40,   50,    60,   70,
                                         80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
  UnifiedRwReporting unified_rw_reporting = UnifiedRwReporting::kNone;
  bool disk_util = true;
  uint32_t sig_figs = 4;
  uint64_t bwavgtime_ms = 500;
  uint64_t iopsavgtime_ms = 500;
  bool gtod_reduce = false;
  bool disable_lat = false;
  bool disable_clat = false;
  bool disable_slat = false;
  bool disable_bw = false;  // disable_bw_measurement

  // --- logs ---
  LogSpec write_bw_log;
  LogSpec write_iops_log;
  LogSpec write_lat_log;
  LogSpec write_hist_log;
  uint64_t log_avg_msec = 0;
  uint64_t log_hist_msec = 0;
  uint32_t log_hist_coarseness = 0;
  bool per_job_logs = true;
  bool log_offset = false;
  bool log_max_value = false;  // averaged logs: the window's maximum instead of its mean
  bool log_prio = false;       // the last column is the raw ioprio (0x%04x), not "is RT"

  // --- placement ---
  std::vector<uint32_t> cpus_allowed;  // empty: all
  CpusAllowedPolicy cpus_allowed_policy = CpusAllowedPolicy::kShared;
  std::vector<uint32_t> numa_cpu_nodes;
  std::string numa_mem_policy;

  // --- bookkeeping ---
  std::vector<WrittenOption> options_written;
  // Accepted options that would change what the job does and are not
  // modelled ("read_iolog=trace: ..."): the run is refused with the first.
  std::vector<std::string> unmodelled_effects;
  std::string source_file;  // job file, or "<command line>"
  int source_line = 0;      // line of the section header
  uint32_t group_id = 0;    // set when jobs are formed (a.7)
};

// The name fio gives file `filenum` of clone `jobnum` of a job without
// filename= (init.c make_filename): filename_format with $jobname,
// $jobnum, $filenum (case-insensitive) replaced and $clientuid empty (no
// client/server run), else "$jobname.$jobnum.$filenum".
std::string FioFileName(const JobSpec& spec, uint32_t jobnum, uint32_t filenum);

// Smallest and largest block size the job can issue in direction `d`
// (bs, bsrange or bssplit, whichever is in effect).
uint64_t MinBlockSize(const JobSpec& spec, Direction d);
uint64_t MaxBlockSize(const JobSpec& spec, Direction d);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_JOB_SPEC_H_
