#include "engine/workload/option_table.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/util/status_macros.h"

namespace blklab::workload {
namespace {

// clang-format off
const std::vector<OptionDef>& Table() {
  static const std::vector<OptionDef>* table = new std::vector<OptionDef>{
    {"description", "", OptionId::kDescription, OptionKind::kString, 1, "", "", "", "free-text job description"},
    {"name", "", OptionId::kName, OptionKind::kString, 1, "", "", "", "job name"},
    {"wait_for", "", OptionId::kWaitFor, OptionKind::kString, 1, "", "", "", ""},
    {"filename", "", OptionId::kFilename, OptionKind::kString, 1, "", "", "", "target file(s), colon separated"},
    {"lockfile", "", OptionId::kGeneric, OptionKind::kChoice, 2, "none", "none exclusive readwrite", "", ""},
    {"directory", "", OptionId::kDirectory, OptionKind::kString, 2, "", "", "", ""},
    {"filename_format", "", OptionId::kGeneric, OptionKind::kString, 2, "$jobname.$jobnum.$filenum", "", "", ""},
    {"unique_filename", "", OptionId::kGeneric, OptionKind::kBool, 3, "1", "", "", ""},
    {"opendir", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"rw", "readwrite", OptionId::kRw, OptionKind::kChoice, 1, "read", "read write trim randread randwrite randtrim rw readwrite randrw trimwrite randtrimwrite", "", "I/O pattern, optional :N modifier"},
    {"bs", "blocksize", OptionId::kBs, OptionKind::kString, 1, "4096", "", "", "block size per direction"},
    {"ba", "blockalign", OptionId::kBlockalign, OptionKind::kString, 1, "", "", "", "offset alignment per direction"},
    {"bsrange", "blocksize_range", OptionId::kBsrange, OptionKind::kString, 1, "", "", "", "block size range per direction"},
    {"bssplit", "", OptionId::kBssplit, OptionKind::kString, 1, "", "", "", "weighted block sizes"},
    {"bs_unaligned", "blocksize_unaligned", OptionId::kBsUnaligned, OptionKind::kFlag, 2, "", "", "", ""},
    {"randrepeat", "", OptionId::kRandrepeat, OptionKind::kBool, 1, "1", "", "", ""},
    {"randseed", "", OptionId::kRandseed, OptionKind::kInt, 1, "0x89", "", "", "random seed"},
    {"norandommap", "", OptionId::kNorandommap, OptionKind::kFlag, 1, "", "", "", "allow repeated random blocks"},
    {"ignore_error", "", OptionId::kGeneric, OptionKind::kString, 2, "", "", "", ""},
    {"rw_sequencer", "", OptionId::kRwSequencer, OptionKind::kChoice, 2, "sequential", "sequential identical", "", ""},
    {"ioengine", "", OptionId::kIoengine, OptionKind::kString, 1, "psync", "", "", "I/O engine"},
    {"iodepth", "", OptionId::kIodepth, OptionKind::kInt, 1, "1", "", "", "max I/Os in flight"},
    {"iodepth_batch", "iodepth_batch_submit", OptionId::kIodepthBatchSubmit, OptionKind::kInt, 1, "1", "", "", ""},
    {"iodepth_batch_complete_min", "iodepth_batch_complete", OptionId::kIodepthBatchCompleteMin, OptionKind::kInt, 1, "1", "", "", ""},
    {"iodepth_batch_complete_max", "", OptionId::kIodepthBatchCompleteMax, OptionKind::kInt, 1, "", "", "", ""},
    {"iodepth_low", "", OptionId::kIodepthLow, OptionKind::kInt, 1, "", "", "", ""},
    {"serialize_overlap", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"io_submit_mode", "", OptionId::kGeneric, OptionKind::kChoice, 2, "inline", "inline offload", "", ""},
    {"size", "", OptionId::kSize, OptionKind::kString, 1, "", "", "", "region size (bytes or %)"},
    {"io_size", "io_limit", OptionId::kIoSize, OptionKind::kString, 1, "", "", "", "amount of I/O"},
    {"fill_device", "fill_fs", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"filesize", "", OptionId::kFilesize, OptionKind::kString, 2, "", "", "", ""},
    {"file_append", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"offset", "fileoffset", OptionId::kOffset, OptionKind::kString, 1, "0", "", "", "region start (bytes or %)"},
    {"offset_increment", "", OptionId::kOffsetIncrement, OptionKind::kString, 1, "0", "", "", "per-clone offset shift"},
    {"offset_align", "", OptionId::kOffsetAlign, OptionKind::kInt, 2, "0", "", "", ""},
    {"number_ios", "", OptionId::kNumberIos, OptionKind::kInt, 1, "0", "", "", ""},
    {"random_generator", "", OptionId::kRandomGenerator, OptionKind::kChoice, 1, "tausworthe", "tausworthe lfsr tausworthe64", "", ""},
    {"random_distribution", "", OptionId::kRandomDistribution, OptionKind::kString, 1, "random", "", "", "random offset distribution"},
    {"percentage_random", "", OptionId::kPercentageRandom, OptionKind::kString, 1, "100,100,100", "", "", ""},
    {"allrandrepeat", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"nrfiles", "nr_files", OptionId::kNrfiles, OptionKind::kInt, 2, "1", "", "", ""},
    {"file_service_type", "", OptionId::kFileServiceType, OptionKind::kChoice, 2, "roundrobin", "random zipf pareto normal gauss roundrobin sequential", "", ""},
    {"openfiles", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"fallocate", "", OptionId::kGeneric, OptionKind::kChoice, 3, "native", "none native posix keep truncate 0 1", "", ""},
    {"fadvise_hint", "", OptionId::kGeneric, OptionKind::kChoice, 3, "1", "0 1 random sequential", "", ""},
    {"fsync", "", OptionId::kFsync, OptionKind::kInt, 2, "0", "", "", ""},
    {"fdatasync", "", OptionId::kFdatasync, OptionKind::kInt, 2, "0", "", "", ""},
    {"write_barrier", "", OptionId::kGeneric, OptionKind::kInt, 2, "0", "", "", ""},
    {"sync_file_range", "", OptionId::kGeneric, OptionKind::kSize, 3, "", "", "", ""},
    {"direct", "", OptionId::kDirect, OptionKind::kBool, 1, "0", "", "", "O_DIRECT (bypass page cache)"},
    {"atomic", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"buffered", "", OptionId::kBuffered, OptionKind::kBool, 1, "1", "", "", ""},
    {"overwrite", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"loops", "", OptionId::kLoops, OptionKind::kInt, 1, "1", "", "", ""},
    {"numjobs", "", OptionId::kNumjobs, OptionKind::kInt, 1, "1", "", "", "number of clones"},
    {"startdelay", "", OptionId::kStartdelay, OptionKind::kString, 1, "0", "", "", ""},
    {"runtime", "timeout", OptionId::kRuntime, OptionKind::kTime, 1, "0", "", "", "run time limit (s)"},
    {"time_based", "", OptionId::kTimeBased, OptionKind::kFlag, 1, "", "", "", "loop until runtime"},
    {"verify_only", "", OptionId::kGeneric, OptionKind::kFlag, 2, "", "", "", ""},
    {"ramp_time", "", OptionId::kRampTime, OptionKind::kTime, 1, "", "", "", "warm-up before stats (s)"},
    {"clocksource", "", OptionId::kGeneric, OptionKind::kChoice, 3, "", "gettimeofday clock_gettime cpu", "", ""},
    {"mem", "iomem", OptionId::kGeneric, OptionKind::kChoice, 3, "malloc", "malloc shm shmhuge mmap mmapshared mmaphuge", "", ""},
    {"verify", "", OptionId::kVerify, OptionKind::kChoice, 2, "0", "0 md5 crc64 crc32 crc32c-intel crc32c crc16 crc7 sha1 sha256 sha512 sha3-224 sha3-256 sha3-384 sha3-512 xxhash meta pattern null", "", ""},
    {"do_verify", "", OptionId::kGeneric, OptionKind::kBool, 2, "1", "", "", ""},
    {"verify_interval", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"verify_offset", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"verify_pattern", "", OptionId::kGeneric, OptionKind::kString, 2, "", "", "", ""},
    {"verify_fatal", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"verify_dump", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"verify_async", "", OptionId::kGeneric, OptionKind::kInt, 2, "0", "", "", ""},
    {"verify_backlog", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"verify_backlog_batch", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"experimental_verify", "", OptionId::kGeneric, OptionKind::kBool, 2, "", "", "", ""},
    {"verify_state_load", "", OptionId::kGeneric, OptionKind::kBool, 2, "", "", "", ""},
    {"verify_state_save", "", OptionId::kGeneric, OptionKind::kBool, 2, "1", "", "", ""},
    {"trim_percentage", "", OptionId::kTrimPercentage, OptionKind::kInt, 2, "0", "", "", ""},
    {"trim_verify_zero", "", OptionId::kGeneric, OptionKind::kBool, 2, "1", "", "", ""},
    {"trim_backlog", "", OptionId::kGeneric, OptionKind::kString, 2, "", "", "", ""},
    {"trim_backlog_batch", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"write_iolog", "", OptionId::kGeneric, OptionKind::kString, 2, "", "", "", ""},
    {"read_iolog", "", OptionId::kGeneric, OptionKind::kString, 2, "", "", "", ""},
    {"read_iolog_chunked", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"replay_no_stall", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"replay_redirect", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"replay_scale", "", OptionId::kGeneric, OptionKind::kInt, 3, "1", "", "", ""},
    {"replay_align", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"replay_time_scale", "", OptionId::kGeneric, OptionKind::kInt, 3, "100", "", "", ""},
    {"replay_skip", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"merge_blktrace_file", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"merge_blktrace_scalars", "", OptionId::kGeneric, OptionKind::kFloatList, 3, "", "", "", ""},
    {"merge_blktrace_iters", "", OptionId::kGeneric, OptionKind::kFloatList, 3, "", "", "", ""},
    {"exec_prerun", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"exec_postrun", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"ioscheduler", "", OptionId::kIoscheduler, OptionKind::kString, 2, "", "", "", ""},
    {"zonemode", "", OptionId::kZonemode, OptionKind::kChoice, 2, "none", "none strided zbd", "", ""},
    {"zonesize", "", OptionId::kGeneric, OptionKind::kString, 2, "0", "", "", ""},
    {"zonecapacity", "", OptionId::kGeneric, OptionKind::kString, 2, "0", "", "", ""},
    {"zonerange", "", OptionId::kGeneric, OptionKind::kString, 2, "0", "", "", ""},
    {"zoneskip", "", OptionId::kGeneric, OptionKind::kString, 2, "0", "", "", ""},
    {"read_beyond_wp", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"max_open_zones", "", OptionId::kGeneric, OptionKind::kInt, 2, "0", "", "", ""},
    {"job_max_open_zones", "", OptionId::kGeneric, OptionKind::kInt, 2, "0", "", "", ""},
    {"ignore_zone_limits", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"zone_reset_threshold", "", OptionId::kGeneric, OptionKind::kFloatList, 2, "", "", "", ""},
    {"zone_reset_frequency", "", OptionId::kGeneric, OptionKind::kFloatList, 2, "", "", "", ""},
    {"lockmem", "", OptionId::kGeneric, OptionKind::kString, 3, "0", "", "", ""},
    {"rwmixread", "", OptionId::kRwmixread, OptionKind::kInt, 1, "50", "", "", ""},
    {"rwmixwrite", "", OptionId::kRwmixwrite, OptionKind::kInt, 1, "50", "", "", ""},
    {"nice", "", OptionId::kGeneric, OptionKind::kInt, 3, "0", "", "", ""},
    {"prio", "", OptionId::kPrio, OptionKind::kInt, 2, "", "", "", ""},
    {"prioclass", "", OptionId::kPrioclass, OptionKind::kInt, 2, "", "", "", ""},
    {"thinktime", "", OptionId::kThinktime, OptionKind::kInt, 1, "0", "", "", "idle time after I/Os (us)"},
    {"thinktime_spin", "", OptionId::kThinktimeSpin, OptionKind::kInt, 1, "0", "", "", ""},
    {"thinktime_blocks", "", OptionId::kThinktimeBlocks, OptionKind::kInt, 1, "1", "", "", ""},
    {"thinktime_blocks_type", "", OptionId::kThinktimeBlocksType, OptionKind::kChoice, 1, "complete", "complete issue", "", ""},
    {"thinktime_iotime", "", OptionId::kGeneric, OptionKind::kInt, 2, "0", "", "", ""},
    {"rate", "", OptionId::kRate, OptionKind::kString, 1, "", "", "", "bandwidth cap per direction"},
    {"rate_min", "ratemin", OptionId::kRateMin, OptionKind::kString, 2, "", "", "", ""},
    {"rate_process", "", OptionId::kRateProcess, OptionKind::kChoice, 1, "linear", "linear poisson", "", ""},
    {"rate_cycle", "ratecycle", OptionId::kGeneric, OptionKind::kInt, 2, "1000", "", "", ""},
    {"rate_ignore_thinktime", "", OptionId::kGeneric, OptionKind::kBool, 2, "", "", "", ""},
    {"rate_iops", "", OptionId::kRateIops, OptionKind::kString, 1, "", "", "", "IOPS cap per direction"},
    {"rate_iops_min", "", OptionId::kRateIopsMin, OptionKind::kString, 2, "", "", "", ""},
    {"max_latency", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"latency_target", "", OptionId::kGeneric, OptionKind::kTime, 2, "", "", "", ""},
    {"latency_window", "", OptionId::kGeneric, OptionKind::kTime, 2, "", "", "", ""},
    {"latency_percentile", "", OptionId::kGeneric, OptionKind::kFloatList, 2, "100", "", "", ""},
    {"latency_run", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"invalidate", "", OptionId::kGeneric, OptionKind::kBool, 3, "1", "", "", ""},
    {"sync", "", OptionId::kGeneric, OptionKind::kChoice, 2, "none", "none 0 sync 1 dsync", "", ""},
    {"write_hint", "", OptionId::kGeneric, OptionKind::kChoice, 3, "", "none short medium long extreme", "", ""},
    {"create_serialize", "", OptionId::kGeneric, OptionKind::kBool, 3, "1", "", "", ""},
    {"create_fsync", "", OptionId::kGeneric, OptionKind::kBool, 3, "1", "", "", ""},
    {"create_on_open", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"create_only", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"allow_file_create", "", OptionId::kGeneric, OptionKind::kBool, 3, "1", "", "", ""},
    {"allow_mounted_write", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"pre_read", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"cpumask", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"cpus_allowed", "", OptionId::kCpusAllowed, OptionKind::kString, 2, "", "", "", ""},
    {"cpus_allowed_policy", "", OptionId::kCpusAllowedPolicy, OptionKind::kChoice, 2, "", "shared split", "", ""},
    {"numa_cpu_nodes", "", OptionId::kNumaCpuNodes, OptionKind::kString, 2, "", "", "", ""},
    {"numa_mem_policy", "", OptionId::kNumaMemPolicy, OptionKind::kString, 2, "", "", "", ""},
    {"end_fsync", "", OptionId::kEndFsync, OptionKind::kBool, 2, "0", "", "", ""},
    {"fsync_on_close", "", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"unlink", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"unlink_each_loop", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"exitall", "", OptionId::kExitall, OptionKind::kFlag, 2, "", "", "", ""},
    {"exit_what", "", OptionId::kGeneric, OptionKind::kChoice, 2, "group", "group stonewall all", "", ""},
    {"exitall_on_error", "", OptionId::kGeneric, OptionKind::kFlag, 2, "", "", "", ""},
    {"stonewall", "wait_for_previous", OptionId::kStonewall, OptionKind::kFlag, 1, "", "", "", "wait for previous jobs, new group"},
    {"new_group", "", OptionId::kNewGroup, OptionKind::kFlag, 1, "", "", "", ""},
    {"thread", "", OptionId::kThread, OptionKind::kFlag, 1, "", "", "", "use threads instead of processes"},
    // fio 3.33 registers the tiobench profile's `threads` as a general option
    // (an integer; it does not mean `thread`): `threads=1` is accepted and
    // printed as `--threads=1` by --showcmd.
    {"threads", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", "tiobench profile: number of threads"},
    {"per_job_logs", "", OptionId::kPerJobLogs, OptionKind::kBool, 1, "1", "", "", ""},
    {"write_bw_log", "", OptionId::kWriteBwLog, OptionKind::kFlagOrString, 1, "", "", "", ""},
    {"bwavgtime", "", OptionId::kBwavgtime, OptionKind::kInt, 1, "500", "", "", ""},
    {"write_lat_log", "", OptionId::kWriteLatLog, OptionKind::kFlagOrString, 1, "", "", "", ""},
    {"write_iops_log", "", OptionId::kWriteIopsLog, OptionKind::kFlagOrString, 1, "", "", "", ""},
    {"iopsavgtime", "", OptionId::kIopsavgtime, OptionKind::kInt, 1, "500", "", "", ""},
    {"log_entries", "", OptionId::kGeneric, OptionKind::kInt, 3, "1024", "", "", ""},
    {"log_avg_msec", "", OptionId::kLogAvgMsec, OptionKind::kInt, 1, "0", "", "", ""},
    {"log_hist_msec", "", OptionId::kLogHistMsec, OptionKind::kInt, 2, "0", "", "", ""},
    {"log_hist_coarseness", "", OptionId::kLogHistCoarseness, OptionKind::kInt, 2, "0", "", "", ""},
    {"write_hist_log", "", OptionId::kWriteHistLog, OptionKind::kFlagOrString, 2, "", "", "", ""},
    {"log_max_value", "", OptionId::kLogMaxValue, OptionKind::kBool, 2, "0", "", "", ""},
    {"log_offset", "", OptionId::kLogOffset, OptionKind::kBool, 2, "0", "", "", ""},
    {"log_prio", "", OptionId::kLogPrio, OptionKind::kBool, 2, "0", "", "", ""},
    {"log_compression", "", OptionId::kGeneric, OptionKind::kInt, 2, "", "", "", ""},
    {"log_compression_cpus", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"log_store_compressed", "", OptionId::kGeneric, OptionKind::kBool, 2, "", "", "", ""},
    {"log_unix_epoch", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "", ""},
    {"log_alternate_epoch", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "", ""},
    {"log_alternate_epoch_clock_id", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"block_error_percentiles", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"group_reporting", "", OptionId::kGroupReporting, OptionKind::kFlag, 1, "", "", "", "merge stats per group"},
    {"stats", "", OptionId::kGeneric, OptionKind::kBool, 2, "1", "", "", ""},
    {"zero_buffers", "", OptionId::kGeneric, OptionKind::kFlag, 3, "", "", "", ""},
    {"refill_buffers", "", OptionId::kGeneric, OptionKind::kFlag, 3, "", "", "", ""},
    {"scramble_buffers", "", OptionId::kGeneric, OptionKind::kBool, 3, "1", "", "", ""},
    {"buffer_pattern", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"buffer_compress_percentage", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"buffer_compress_chunk", "", OptionId::kGeneric, OptionKind::kInt, 3, "512", "", "", ""},
    {"dedupe_percentage", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"dedupe_mode", "", OptionId::kGeneric, OptionKind::kChoice, 3, "repeat", "repeat working_set", "", ""},
    {"dedupe_working_set_percentage", "", OptionId::kGeneric, OptionKind::kInt, 3, "5", "", "", ""},
    {"dedupe_global", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"clat_percentiles", "", OptionId::kClatPercentiles, OptionKind::kBool, 1, "1", "", "", ""},
    {"lat_percentiles", "", OptionId::kLatPercentiles, OptionKind::kBool, 1, "0", "", "", ""},
    {"slat_percentiles", "", OptionId::kSlatPercentiles, OptionKind::kBool, 1, "0", "", "", ""},
    {"percentile_list", "", OptionId::kPercentileList, OptionKind::kFloatList, 1, "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99", "", "", ""},
    {"significant_figures", "", OptionId::kSignificantFigures, OptionKind::kInt, 1, "4", "", "", ""},
    {"disk_util", "", OptionId::kDiskUtil, OptionKind::kBool, 1, "1", "", "", ""},
    {"gtod_reduce", "", OptionId::kGtodReduce, OptionKind::kBool, 2, "0", "", "", ""},
    {"disable_lat", "", OptionId::kDisableLat, OptionKind::kBool, 2, "0", "", "", ""},
    {"disable_clat", "", OptionId::kDisableClat, OptionKind::kBool, 2, "0", "", "", ""},
    {"disable_slat", "", OptionId::kDisableSlat, OptionKind::kBool, 2, "0", "", "", ""},
    {"disable_bw_measurement", "disable_bw", OptionId::kGeneric, OptionKind::kBool, 2, "0", "", "", ""},
    {"gtod_cpu", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"unified_rw_reporting", "", OptionId::kUnifiedRwReporting, OptionKind::kChoice, 1, "none", "none mixed both 0 1 2", "", ""},
    {"continue_on_error", "", OptionId::kGeneric, OptionKind::kChoice, 2, "none", "none read write io verify all 0 1", "", ""},
    {"error_dump", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"profile", "", OptionId::kGeneric, OptionKind::kChoice, 3, "", "tiobench act", "", ""},
    {"cgroup", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"cgroup_nodelete", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"cgroup_weight", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"uid", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"gid", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"kb_base", "", OptionId::kKbBase, OptionKind::kChoice, 1, "1024", "1024 1000", "", "1024 or 1000 for suffixes"},
    {"unit_base", "", OptionId::kUnitBase, OptionKind::kChoice, 1, "", "0 8 1", "", ""},
    {"hugepage-size", "", OptionId::kGeneric, OptionKind::kInt, 3, "2097152", "", "", ""},
    {"flow_id", "", OptionId::kGeneric, OptionKind::kInt, 3, "0", "", "", ""},
    {"flow", "", OptionId::kGeneric, OptionKind::kInt, 3, "0", "", "", ""},
    {"flow_sleep", "", OptionId::kGeneric, OptionKind::kInt, 3, "0", "", "", ""},
    {"steadystate", "ss", OptionId::kGeneric, OptionKind::kChoice, 2, "iops_slope:0.01%", "iops iops_slope bw bw_slope", "", ""},
    {"steadystate_duration", "ss_dur", OptionId::kGeneric, OptionKind::kTime, 2, "0", "", "", ""},
    {"steadystate_ramp_time", "ss_ramp", OptionId::kGeneric, OptionKind::kTime, 2, "0", "", "", ""},
    {"bs_is_seq_rand", "", OptionId::kBsIsSeqRand, OptionKind::kBool, 2, "0", "", "", "bs,bs apply to sequential,random instead of read,write"},
    {"iomem_align", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"softrandommap", "", OptionId::kGeneric, OptionKind::kBool, 3, "0", "", "", ""},
    {"verify_async_cpus", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "", ""},
    {"flow_watermark", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "", ""},
    {"hipri", "", OptionId::kHipri, OptionKind::kFlag, 2, "", "", "io_uring io_uring_cmd pvsync2 sg", ""},
    {"hipri_percentage", "", OptionId::kHipriPercentage, OptionKind::kInt, 2, "", "", "pvsync2", ""},
    {"cmdprio_percentage", "", OptionId::kCmdprioPercentage, OptionKind::kString, 2, "", "", "io_uring io_uring_cmd libaio pvsync2", ""},
    {"cmdprio_class", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "io_uring io_uring_cmd libaio pvsync2", ""},
    {"cmdprio", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "io_uring io_uring_cmd libaio pvsync2", ""},
    {"cmdprio_bssplit", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "io_uring io_uring_cmd libaio pvsync2", ""},
    {"fixedbufs", "", OptionId::kFixedbufs, OptionKind::kFlag, 2, "", "", "io_uring io_uring_cmd", ""},
    {"registerfiles", "", OptionId::kRegisterfiles, OptionKind::kFlag, 2, "", "", "io_uring io_uring_cmd", ""},
    {"sqthread_poll", "", OptionId::kSqthreadPoll, OptionKind::kFlag, 2, "", "", "io_uring io_uring_cmd", ""},
    {"sqthread_poll_cpu", "", OptionId::kSqthreadPollCpu, OptionKind::kInt, 2, "", "", "io_uring io_uring_cmd", ""},
    {"nonvectored", "", OptionId::kNonvectored, OptionKind::kInt, 2, "", "", "io_uring io_uring_cmd", ""},
    {"uncached", "", OptionId::kUncached, OptionKind::kInt, 2, "", "", "io_uring io_uring_cmd pvsync2", ""},
    {"nowait", "", OptionId::kNowait, OptionKind::kFlag, 2, "", "", "io_uring io_uring_cmd libaio pvsync2", ""},
    {"force_async", "", OptionId::kForceAsync, OptionKind::kInt, 2, "", "", "io_uring io_uring_cmd", ""},
    {"cmd_type", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "io_uring io_uring_cmd", ""},
    {"userspace_reap", "", OptionId::kUserspaceReap, OptionKind::kFlag, 2, "", "", "libaio", ""},
    {"readfua", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "sg", ""},
    {"writefua", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "sg", ""},
    {"sg_write_mode", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "sg", ""},
    {"stream_id", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "sg", ""},
    {"cpuload", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "cpuio", ""},
    {"cpuchunks", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "cpuio", ""},
    {"cpumode", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "cpuio", ""},
    {"exit_on_io_done", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "cpuio", ""},
    {"thp", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "mmap", ""},
    {"hostname", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "net netsplice rdma", ""},
    {"port", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "net netsplice rdma", ""},
    {"protocol", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "net netsplice", ""},
    {"nodelay", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "net netsplice", ""},
    {"listen", "", OptionId::kGeneric, OptionKind::kFlag, 3, "", "", "net netsplice", ""},
    {"pingpong", "", OptionId::kGeneric, OptionKind::kFlag, 3, "", "", "net netsplice", ""},
    {"interface", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "net netsplice", ""},
    {"ttl", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "net netsplice", ""},
    {"window_size", "", OptionId::kGeneric, OptionKind::kSize, 3, "", "", "net netsplice", ""},
    {"mss", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "net netsplice", ""},
    {"bindname", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "rdma", ""},
    {"verb", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "rdma", ""},
    {"stat_type", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "filestat", ""},
    {"program", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "exec", ""},
    {"arguments", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "exec", ""},
    {"grace_time", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "exec", ""},
    {"std_redirect", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "exec", ""},
    {"donorname", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "e4defrag", ""},
    {"inplace", "", OptionId::kGeneric, OptionKind::kInt, 3, "", "", "e4defrag", ""},
    {"volume", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "gfapi gfapi_async", ""},
    {"brick", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "gfapi gfapi_async", ""},
    {"single-instance", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "gfapi gfapi_async", ""},
    {"skip_bad", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "mtd", ""},
    {"uri", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "nbd", ""},
    {"clustername", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "rados rbd", ""},
    {"pool", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "rados rbd", ""},
    {"clientname", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "rados rbd", ""},
    {"conf", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "rados", ""},
    {"busy_poll", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "rados rbd", ""},
    {"touch_objects", "", OptionId::kGeneric, OptionKind::kBool, 3, "", "", "rados", ""},
    {"rbdname", "", OptionId::kGeneric, OptionKind::kString, 3, "", "", "rbd", ""},
  };
  return *table;
}
// clang-format on

bool WordIn(const char* list, const std::string& word) {
  for (absl::string_view w : absl::StrSplit(list, ' ', absl::SkipEmpty())) {
    if (w == word) return true;
  }
  return false;
}

const absl::flat_hash_map<std::string, const OptionDef*>& Index() {
  static const auto* index = [] {
    auto* m = new absl::flat_hash_map<std::string, const OptionDef*>();
    for (const OptionDef& d : Table()) {
      (*m)[d.name] = &d;
      for (absl::string_view a : absl::StrSplit(d.aliases, ' ', absl::SkipEmpty())) {
        (*m)[std::string(a)] = &d;
      }
    }
    return m;
  }();
  return *index;
}

constexpr const char* kFioEngines =
    "sync psync vsync pvsync pvsync2 io_uring io_uring_cmd libaio posixaio solarisaio "
    "windowsaio mmap splice sg libzbc null net netsplice cpuio rdma falloc ftruncate "
    "e4defrag rados rbd http gfapi gfapi_async libhdfs mtd pmemblk dev-dax external "
    "filecreate filestat filedelete dircreate dirstat dirdelete libpmem ime_psync "
    "ime_psyncv ime_aio libiscsi nbd libcufile dfs nfs exec xnvme";

absl::Status Failed(const OptionDef& def, const std::string& value, const absl::Status& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("failed parsing ", def.name, "=", value, ": ", why.message()));
}
absl::Status Failed(const OptionDef& def, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("failed parsing ", def.name, "=", value, ": ", why));
}

// Matches a choice up to the first ':' or ','. Returns the index into the
// space-separated list, or -1.
int MatchChoice(const char* choices, const std::string& value, std::string* param) {
  const size_t cut = value.find_first_of(":,");
  const std::string head = value.substr(0, cut);
  if (param != nullptr) {
    *param = (cut != std::string::npos && value[cut] == ':') ? value.substr(cut + 1) : "";
  }
  int i = 0;
  for (absl::string_view w : absl::StrSplit(choices, ' ', absl::SkipEmpty())) {
    if (w == head) return i;
    ++i;
  }
  return -1;
}

absl::Status BadChoice(const OptionDef& def, const std::string& value, const char* choices) {
  return Failed(def, value, absl::StrCat("valid values: ", choices));
}

template <typename T>
absl::StatusOr<T> Narrow(const OptionDef& def, const std::string& value, uint64_t v, uint64_t lo,
                         uint64_t hi) {
  if (v < lo || v > hi) {
    return Failed(def, value, absl::StrCat("out of range [", lo, ",", hi, "]"));
  }
  return static_cast<T>(v);
}

// Applies a per-direction list: `parse` is called for the fields that are set.
template <typename T, typename Fn>
absl::Status ApplyPerDir(const OptionDef& def, const std::string& value, PerDir<T>* out, Fn parse) {
  auto fields = SplitPerDirection(value);
  if (!fields.ok()) return Failed(def, value, fields.status());
  for (int d = 0; d < kNumDirections; ++d) {
    if (!(*fields)[d].has_value()) continue;
    auto v = parse(*(*fields)[d]);
    if (!v.ok()) return Failed(def, value, v.status());
    (*out)[d] = std::move(*v);
  }
  return absl::OkStatus();
}

absl::StatusOr<RandomDistribution> ParseDistribution(const std::string& value, uint32_t kb_base) {
  RandomDistribution rd;
  const size_t colon = value.find(':');
  const std::string head = value.substr(0, std::min(colon, value.find(',')));
  const std::string rest = colon == std::string::npos ? "" : value.substr(colon + 1);
  if (head == "random") return rd;
  if (head == "zipf" || head == "pareto" || head == "normal") {
    rd.kind = head == "zipf" ? DistributionKind::kZipf
              : head == "pareto" ? DistributionKind::kPareto
                                 : DistributionKind::kNormal;
    if (rest.empty()) return absl::InvalidArgumentError("missing distribution parameter");
    std::vector<std::string> parts = absl::StrSplit(rest, ':');
    if (parts.size() > 2) return absl::InvalidArgumentError("too many parameters");
    BLKLAB_ASSIGN_OR_RETURN(rd.param, ParseDouble(parts[0]));
    if (parts.size() == 2) {
      BLKLAB_ASSIGN_OR_RETURN(rd.center, ParseDouble(parts[1]));
      if (rd.center < 0 || rd.center > 1) return absl::InvalidArgumentError("center outside [0,1]");
    }
    if (rd.kind == DistributionKind::kZipf && (rd.param <= 0 || rd.param == 1.0)) {
      return absl::InvalidArgumentError("zipf theta must be > 0 and != 1");
    }
    if (rd.kind == DistributionKind::kPareto && (rd.param <= 0 || rd.param >= 1)) {
      return absl::InvalidArgumentError("pareto h must be in (0,1)");
    }
    if (rd.kind == DistributionKind::kNormal && (rd.param <= 0 || rd.param > 100)) {
      return absl::InvalidArgumentError("normal sigma must be in (0,100]");
    }
    return rd;
  }
  if (head == "zoned" || head == "zoned_abs") {
    rd.kind = head == "zoned" ? DistributionKind::kZoned : DistributionKind::kZonedAbs;
    auto fields = SplitPerDirection(rest);
    if (!fields.ok()) return fields.status();
    for (int d = 0; d < kNumDirections; ++d) {
      if (!(*fields)[d].has_value()) continue;
      std::vector<DistributionZone> zones;
      uint32_t access_total = 0;
      double range_total = 0;
      for (absl::string_view z : absl::StrSplit(*(*fields)[d], ':', absl::SkipEmpty())) {
        if (zones.size() >= 256) return absl::InvalidArgumentError("more than 256 zones");
        std::vector<std::string> pr = absl::StrSplit(z, '/');
        if (pr.size() != 2) return absl::InvalidArgumentError("zone must be P/R");
        // An empty range takes what is left of the region (zoned only).
        if (pr[1].empty() && rd.kind == DistributionKind::kZoned) {
          pr[1] = std::to_string(std::max(100.0 - range_total, 0.0));
        }
        DistributionZone zone;
        BLKLAB_ASSIGN_OR_RETURN(uint64_t p, ParseUint(pr[0]));
        if (p > 100) return absl::InvalidArgumentError("zone access above 100%");
        zone.access_percent = static_cast<uint32_t>(p);
        if (rd.kind == DistributionKind::kZoned) {
          BLKLAB_ASSIGN_OR_RETURN(zone.range_percent, ParseDouble(pr[1]));
          if (zone.range_percent <= 0 || zone.range_percent > 100) {
            return absl::InvalidArgumentError("zone range outside (0,100]");
          }
          range_total += zone.range_percent;
        } else {
          BLKLAB_ASSIGN_OR_RETURN(zone.range_bytes, ParseSize(pr[1], kb_base));
          if (zone.range_bytes == 0) return absl::InvalidArgumentError("empty zone");
        }
        access_total += zone.access_percent;
        zones.push_back(zone);
      }
      if (access_total != 100) return absl::InvalidArgumentError("zone access must add up to 100%");
      if (range_total > 100.0 + 1e-9) return absl::InvalidArgumentError("zone ranges above 100%");
      rd.zones[d] = std::move(zones);
    }
    return rd;
  }
  return absl::InvalidArgumentError("valid values: random zipf pareto normal zoned zoned_abs");
}

// Validation for options without a typed field.
absl::Status ValidateGeneric(const OptionDef& def, const std::string& v, uint32_t kb_base) {
  switch (def.kind) {
    case OptionKind::kString:
    case OptionKind::kFlagOrString:
      return absl::OkStatus();
    case OptionKind::kBool:
    case OptionKind::kFlag: {
      auto b = ParseBool(v);
      return b.ok() ? absl::OkStatus() : Failed(def, v, b.status());
    }
    case OptionKind::kInt:
    case OptionKind::kSize: {
      if (!v.empty() && v[0] == '-') {
        auto i = ParseInt(v);
        return i.ok() ? absl::OkStatus() : Failed(def, v, i.status());
      }
      auto s = ParseSize(v, kb_base);
      return s.ok() ? absl::OkStatus() : Failed(def, v, s.status());
    }
    case OptionKind::kTime: {
      auto t = ParseTimeRangeNs(v, TimeUnit::kSeconds);
      return t.ok() ? absl::OkStatus() : Failed(def, v, t.status());
    }
    case OptionKind::kChoice:
      return MatchChoice(def.choices, v, nullptr) >= 0 ? absl::OkStatus()
                                                        : BadChoice(def, v, def.choices);
    case OptionKind::kFloatList: {
      auto l = ParsePercentileList(v, 64);
      return l.ok() ? absl::OkStatus() : Failed(def, v, l.status());
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool OptionDef::EngineHasIt(const std::string& engine_name) const {
  return WordIn(engines, engine_name);
}

const std::vector<OptionDef>& AllOptions() { return Table(); }

const OptionDef* FindOption(const std::string& name) {
  const auto& idx = Index();
  auto it = idx.find(name);
  return it == idx.end() ? nullptr : it->second;
}

std::string SuggestOption(const std::string& name) {
  if (name.size() > 64) return "";
  std::string best;
  size_t best_d = 3;  // suggest only close names
  for (const auto& [key, def] : Index()) {
    // The distance is at least the length difference: skip hopeless keys
    // (keeps "did you mean" cheap on long garbage names).
    const size_t diff = name.size() > key.size() ? name.size() - key.size() : key.size() - name.size();
    if (diff > best_d) continue;
    const size_t d = EditDistance(name, key);
    if (d < best_d || (d == best_d && !best.empty() && key < best)) {
      if (d < best_d || key < best) {
        best_d = d;
        best = key;
      }
    }
  }
  return best;
}

const char* KnownFioEngines() { return kFioEngines; }

bool IsKnownFioEngine(const std::string& name) {
  return WordIn(kFioEngines, name) || name.rfind("external:", 0) == 0;
}

std::optional<IoEngine> ModelledEngine(const std::string& name) {
  static const std::pair<const char*, IoEngine> kModelled[] = {
      {"psync", IoEngine::kPsync},       {"sync", IoEngine::kSync},
      {"vsync", IoEngine::kVsync},       {"pvsync", IoEngine::kPvsync},
      {"pvsync2", IoEngine::kPvsync2},   {"io_uring", IoEngine::kIoUring},
      {"io_uring_cmd", IoEngine::kIoUringCmd}, {"libaio", IoEngine::kLibaio},
      {"posixaio", IoEngine::kPosixaio}, {"null", IoEngine::kNull},
  };
  for (const auto& [n, e] : kModelled) {
    if (name == n) return e;
  }
  return std::nullopt;
}

absl::Status ApplyOption(const OptionDef& def, const std::optional<std::string>& value_in,
                         JobSpec* spec, const ApplyContext& ctx) {
  if (!value_in.has_value() && !def.bare_allowed()) {
    return absl::InvalidArgumentError(absl::StrCat("Option ", def.name, " requires an argument"));
  }
  const bool bare = !value_in.has_value();
  const std::string v = bare ? "1" : *value_in;
  const uint32_t kb = spec->kb_base;
  auto size = [&](const std::string& s) { return ParseSize(s, kb); };
  auto u64 = [&](uint64_t* out) -> absl::Status {
    auto r = ParseSize(v, kb);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto u32 = [&](uint32_t* out, uint64_t lo, uint64_t hi) -> absl::Status {
    auto r = ParseSize(v, kb);
    if (!r.ok()) return Failed(def, v, r.status());
    BLKLAB_ASSIGN_OR_RETURN(*out, Narrow<uint32_t>(def, v, *r, lo, hi));
    return absl::OkStatus();
  };
  auto boolean = [&](bool* out) -> absl::Status {
    auto r = ParseBool(v);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto time = [&](int64_t* out, TimeUnit unit) -> absl::Status {
    auto r = ParseTimeNs(v, unit);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto size_or_pct = [&](SizeSpec* out) -> absl::Status {
    auto r = ParseSizeOrPercent(v, kb);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto log = [&](LogSpec* out) -> absl::Status {
    if (bare || v == "1") {
      *out = LogSpec{true, ""};
    } else if (v == "0") {
      *out = LogSpec{};
    } else {
      *out = LogSpec{true, v};
    }
    return absl::OkStatus();
  };
  auto choice = [&](const char* choices, std::string* param) -> absl::StatusOr<int> {
    const int i = MatchChoice(choices, v, param);
    if (i < 0) return BadChoice(def, v, choices);
    return i;
  };
  if (v.empty() && def.id != OptionId::kGeneric && def.kind != OptionKind::kFlagOrString) {
    switch (def.id) {
      case OptionId::kName: case OptionId::kDescription: case OptionId::kFilename:
      case OptionId::kDirectory: case OptionId::kWaitFor: case OptionId::kIoscheduler:
      case OptionId::kVerify: case OptionId::kNumaMemPolicy:
        break;
      default:
        return Failed(def, v, "empty value");
    }
  }
  if (def.kind == OptionKind::kSize && ctx.warnings != nullptr && !v.empty() &&
      (v[0] == ' ' || v[0] == '\t')) {
    ctx.warnings->push_back(absl::StrCat(def.name, "=", v,
                                         ": white space after '=' disables the unit suffix"));
  }

  switch (def.id) {
    case OptionId::kName: spec->name = v; return absl::OkStatus();
    case OptionId::kDescription: spec->description = v; return absl::OkStatus();
    case OptionId::kWaitFor: spec->wait_for = v; return absl::OkStatus();
    case OptionId::kFilename: spec->filenames = SplitColonList(v); return absl::OkStatus();
    case OptionId::kDirectory: spec->directory = v; return absl::OkStatus();
    case OptionId::kRw: {
      std::string param;
      BLKLAB_ASSIGN_OR_RETURN(
          int i, choice("read write trim randread randwrite randtrim rw readwrite randrw "
                        "trimwrite randtrimwrite",
                        &param));
      static constexpr RwPattern kMap[] = {
          RwPattern::kRead,     RwPattern::kWrite,     RwPattern::kTrim,
          RwPattern::kRandRead, RwPattern::kRandWrite, RwPattern::kRandTrim,
          RwPattern::kReadWrite, RwPattern::kReadWrite, RwPattern::kRandRw,
          RwPattern::kTrimWrite, RwPattern::kRandTrimWrite};
      spec->rw = kMap[i];
      spec->rw_modifier = 0;
      if (!param.empty()) {
        const bool negative = param[0] == '-';
        auto m = size(negative ? param.substr(1) : param);
        if (!m.ok()) return Failed(def, v, m.status());
        if (*m > static_cast<uint64_t>(INT64_MAX)) return Failed(def, v, "modifier too large");
        spec->rw_modifier = negative ? -static_cast<int64_t>(*m) : static_cast<int64_t>(*m);
      }
      return absl::OkStatus();
    }
    case OptionId::kRwSequencer: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("sequential identical", nullptr));
      spec->rw_sequencer = i == 0 ? RwSequencer::kSequential : RwSequencer::kIdentical;
      return absl::OkStatus();
    }
    case OptionId::kRwmixread:
      return u32(&spec->rwmixread, 0, 100);
    case OptionId::kRwmixwrite: {
      uint32_t w = 0;
      BLKLAB_RETURN_IF_ERROR(u32(&w, 0, 100));
      spec->rwmixread = 100 - w;
      return absl::OkStatus();
    }
    case OptionId::kBs:
      return ApplyPerDir(def, v, &spec->bs, [&](const std::string& s) -> absl::StatusOr<uint64_t> {
        BLKLAB_ASSIGN_OR_RETURN(uint64_t b, size(s));
        if (b == 0) return absl::InvalidArgumentError("block size must be >= 1");
        return b;
      });
    case OptionId::kBlockalign:
      return ApplyPerDir(def, v, &spec->blockalign, size);
    case OptionId::kBsrange:
      return ApplyPerDir(def, v, &spec->bs_range,
                         [&](const std::string& s) -> absl::StatusOr<SizeRange> {
                           BLKLAB_ASSIGN_OR_RETURN(SizeRange r, ParseSizeRange(s, kb));
                           if (r.lo == 0) return absl::InvalidArgumentError("block size must be >= 1");
                           return r;
                         });
    case OptionId::kBssplit:
      return ApplyPerDir(def, v, &spec->bssplit,
                         [&](const std::string& s) { return ParseBsSplitList(s, kb); });
    case OptionId::kBsUnaligned: return boolean(&spec->bs_unaligned);
    case OptionId::kBsIsSeqRand: return boolean(&spec->bs_is_seq_rand);
    case OptionId::kRandrepeat: return boolean(&spec->randrepeat);
    case OptionId::kRandseed:
      BLKLAB_RETURN_IF_ERROR(u64(&spec->randseed));
      spec->randseed_set = true;
      return absl::OkStatus();
    case OptionId::kNorandommap: return boolean(&spec->norandommap);
    case OptionId::kIoengine: {
      spec->ioengine_name = v;
      if (auto e = ModelledEngine(v); e.has_value()) {
        spec->ioengine = *e;
        return absl::OkStatus();
      }
      if (!ctx.accept_unmodelled_engines) {
        return absl::InvalidArgumentError(absl::StrCat("ioengine=", v, " is not modelled by blklab"));
      }
      spec->ioengine = IoEngine::kUnmodelled;
      return absl::OkStatus();
    }
    case OptionId::kIodepth: return u32(&spec->iodepth, 1, 1u << 20);
    case OptionId::kIodepthBatchSubmit: return u32(&spec->iodepth_batch_submit, 0, 1u << 20);
    case OptionId::kIodepthBatchCompleteMin:
      return u32(&spec->iodepth_batch_complete_min, 0, 1u << 20);
    case OptionId::kIodepthBatchCompleteMax:
      return u32(&spec->iodepth_batch_complete_max, 0, 1u << 20);
    case OptionId::kIodepthLow: return u32(&spec->iodepth_low, 0, 1u << 20);
    case OptionId::kSize: return size_or_pct(&spec->size);
    case OptionId::kIoSize: return size_or_pct(&spec->io_size);
    case OptionId::kOffset: return size_or_pct(&spec->offset);
    case OptionId::kOffsetIncrement: return size_or_pct(&spec->offset_increment);
    case OptionId::kOffsetAlign: return u64(&spec->offset_align);
    case OptionId::kNumberIos: return u64(&spec->number_ios);
    case OptionId::kFilesize: {
      auto r = ParseSizeRange(v, kb);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->filesize = *r;
      return absl::OkStatus();
    }
    case OptionId::kNrfiles: return u32(&spec->nrfiles, 1, 1u << 20);
    case OptionId::kFileServiceType: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("roundrobin random sequential zipf pareto normal gauss", nullptr));
      spec->file_service_type = static_cast<FileServiceType>(i);
      return absl::OkStatus();
    }
    case OptionId::kRandomGenerator: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("tausworthe lfsr tausworthe64", nullptr));
      spec->random_generator = static_cast<RandomGenerator>(i);
      return absl::OkStatus();
    }
    case OptionId::kRandomDistribution: {
      auto r = ParseDistribution(v, kb);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->random_distribution = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kPercentageRandom:
      return ApplyPerDir(def, v, &spec->percentage_random,
                         [&](const std::string& s) -> absl::StatusOr<uint32_t> {
                           BLKLAB_ASSIGN_OR_RETURN(uint64_t p, ParseUint(s));
                           if (p > 100) return absl::InvalidArgumentError("above 100");
                           return static_cast<uint32_t>(p);
                         });
    case OptionId::kDirect: return boolean(&spec->direct);
    case OptionId::kBuffered: {
      bool b = false;
      BLKLAB_RETURN_IF_ERROR(boolean(&b));
      spec->direct = !b;
      return absl::OkStatus();
    }
    case OptionId::kLoops: return u64(&spec->loops);
    case OptionId::kNumjobs: return u32(&spec->numjobs, 1, 1u << 20);
    case OptionId::kStartdelay: {
      auto r = ParseTimeRangeNs(v, TimeUnit::kSeconds);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->startdelay_min_ns = r->lo;
      spec->startdelay_max_ns = r->hi;
      return absl::OkStatus();
    }
    case OptionId::kRuntime: return time(&spec->runtime_ns, TimeUnit::kSeconds);
    case OptionId::kTimeBased: return boolean(&spec->time_based);
    case OptionId::kRampTime: return time(&spec->ramp_time_ns, TimeUnit::kSeconds);
    case OptionId::kIoscheduler: spec->ioscheduler = v; return absl::OkStatus();
    case OptionId::kZonemode: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("none strided zbd", nullptr));
      spec->zonemode = static_cast<ZoneMode>(i);
      return absl::OkStatus();
    }
    case OptionId::kPrio: return u32(&spec->prio, 0, 7);
    case OptionId::kPrioclass: return u32(&spec->prioclass, 0, 3);
    case OptionId::kThinktime: return time(&spec->thinktime_ns, TimeUnit::kMicroseconds);
    case OptionId::kThinktimeSpin: return time(&spec->thinktime_spin_ns, TimeUnit::kMicroseconds);
    case OptionId::kThinktimeBlocks: return u64(&spec->thinktime_blocks);
    case OptionId::kThinktimeBlocksType: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("complete issue", nullptr));
      spec->thinktime_blocks_type = i == 0 ? ThinktimeBlocksType::kComplete : ThinktimeBlocksType::kIssue;
      return absl::OkStatus();
    }
    case OptionId::kRate: return ApplyPerDir(def, v, &spec->rate_bps, size);
    case OptionId::kRateMin: return ApplyPerDir(def, v, &spec->rate_min_bps, size);
    case OptionId::kRateIops: return ApplyPerDir(def, v, &spec->rate_iops, size);
    case OptionId::kRateIopsMin: return ApplyPerDir(def, v, &spec->rate_iops_min, size);
    case OptionId::kRateProcess: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("linear poisson", nullptr));
      spec->rate_process = i == 0 ? RateProcess::kLinear : RateProcess::kPoisson;
      return absl::OkStatus();
    }
    case OptionId::kCpusAllowed: {
      auto r = ParseCpuList(v);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->cpus_allowed = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kCpusAllowedPolicy: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("shared split", nullptr));
      spec->cpus_allowed_policy = i == 0 ? CpusAllowedPolicy::kShared : CpusAllowedPolicy::kSplit;
      return absl::OkStatus();
    }
    case OptionId::kNumaCpuNodes: {
      auto r = ParseCpuList(v);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->numa_cpu_nodes = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kNumaMemPolicy: spec->numa_mem_policy = v; return absl::OkStatus();
    case OptionId::kExitall: return boolean(&spec->exitall);
    case OptionId::kStonewall: return boolean(&spec->stonewall);
    case OptionId::kNewGroup: return boolean(&spec->new_group);
    case OptionId::kThread: return boolean(&spec->thread);
    case OptionId::kGroupReporting: return boolean(&spec->group_reporting);
    case OptionId::kPerJobLogs: return boolean(&spec->per_job_logs);
    case OptionId::kWriteBwLog: return log(&spec->write_bw_log);
    case OptionId::kWriteIopsLog: return log(&spec->write_iops_log);
    case OptionId::kWriteLatLog: return log(&spec->write_lat_log);
    case OptionId::kWriteHistLog: return log(&spec->write_hist_log);
    case OptionId::kBwavgtime: return u64(&spec->bwavgtime_ms);
    case OptionId::kIopsavgtime: return u64(&spec->iopsavgtime_ms);
    case OptionId::kLogAvgMsec: return u64(&spec->log_avg_msec);
    case OptionId::kLogHistMsec: return u64(&spec->log_hist_msec);
    case OptionId::kLogHistCoarseness: return u32(&spec->log_hist_coarseness, 0, 8);
    case OptionId::kLogOffset: return boolean(&spec->log_offset);
    case OptionId::kLogMaxValue: return boolean(&spec->log_max_value);
    case OptionId::kLogPrio: return boolean(&spec->log_prio);
    case OptionId::kClatPercentiles: return boolean(&spec->clat_percentiles);
    case OptionId::kLatPercentiles: return boolean(&spec->lat_percentiles);
    case OptionId::kSlatPercentiles: return boolean(&spec->slat_percentiles);
    case OptionId::kPercentileList: {
      auto r = ParsePercentileList(v, 20);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->percentile_list = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kSignificantFigures: return u32(&spec->sig_figs, 1, 10);
    case OptionId::kDiskUtil: return boolean(&spec->disk_util);
    case OptionId::kGtodReduce: return boolean(&spec->gtod_reduce);
    case OptionId::kDisableLat: return boolean(&spec->disable_lat);
    case OptionId::kDisableClat: return boolean(&spec->disable_clat);
    case OptionId::kDisableSlat: return boolean(&spec->disable_slat);
    case OptionId::kUnifiedRwReporting: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("none mixed both 0 1 2", nullptr));
      spec->unified_rw_reporting = static_cast<UnifiedRwReporting>(i % 3);
      return absl::OkStatus();
    }
    case OptionId::kKbBase: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("1024 1000", nullptr));
      spec->kb_base = i == 0 ? 1024 : 1000;
      return absl::OkStatus();
    }
    case OptionId::kUnitBase: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("0 8 1", nullptr));
      spec->unit_base = i == 0 ? 0 : i == 1 ? 8 : 1;
      return absl::OkStatus();
    }
    case OptionId::kFsync: return u32(&spec->fsync_blocks, 0, UINT32_MAX);
    case OptionId::kFdatasync: return u32(&spec->fdatasync_blocks, 0, UINT32_MAX);
    case OptionId::kEndFsync: return boolean(&spec->end_fsync);
    case OptionId::kTrimPercentage: return u32(&spec->trim_percentage, 0, 100);
    case OptionId::kVerify: spec->verify = v; return absl::OkStatus();
    // Engine-private options.
    case OptionId::kHipri: return boolean(&spec->engine_flags.hipri);
    case OptionId::kHipriPercentage: return u32(&spec->engine_flags.hipri_percentage, 0, 100);
    case OptionId::kCmdprioPercentage: {
      auto f = SplitPerDirection(v);
      if (!f.ok()) return Failed(def, v, f.status());
      if ((*f)[0].has_value()) {
        auto p = ParseUint(*(*f)[0]);
        if (!p.ok() || *p > 100) return Failed(def, v, "expected 0..100");
        spec->engine_flags.cmdprio_percentage = static_cast<uint32_t>(*p);
      }
      return absl::OkStatus();
    }
    case OptionId::kFixedbufs: return boolean(&spec->engine_flags.fixedbufs);
    case OptionId::kRegisterfiles: return boolean(&spec->engine_flags.registerfiles);
    case OptionId::kSqthreadPoll: return boolean(&spec->engine_flags.sqthread_poll);
    case OptionId::kSqthreadPollCpu: {
      auto r = ParseInt(v);
      if (!r.ok() || *r < -1 || *r > kMaxCpuId) return Failed(def, v, "bad CPU number");
      spec->engine_flags.sqthread_poll_cpu = static_cast<int32_t>(*r);
      return absl::OkStatus();
    }
    case OptionId::kNonvectored: {
      auto r = ParseInt(v);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->engine_flags.nonvectored = *r > 0;
      return absl::OkStatus();
    }
    case OptionId::kNowait: return boolean(&spec->engine_flags.nowait);
    case OptionId::kUncached: {
      uint32_t u = 0;
      BLKLAB_RETURN_IF_ERROR(u32(&u, 0, UINT32_MAX));
      spec->engine_flags.uncached = u != 0;
      return absl::OkStatus();
    }
    case OptionId::kForceAsync: return u32(&spec->engine_flags.force_async, 0, UINT32_MAX);
    case OptionId::kUserspaceReap: return boolean(&spec->engine_flags.userspace_reap);
    case OptionId::kGeneric:
      return ValidateGeneric(def, v, kb);
  }
  return absl::OkStatus();
}

}  // namespace blklab::workload
