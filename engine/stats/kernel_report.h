// engine/stats/kernel_report.h
//
// KernelReport is what blklab reports beyond fio: where simulated CPU time
// went (a perf-top-style profile of kernel and fio function names), how busy
// each simulated CPU was by mode, lockstat-style figures for each named lock,
// and named event counters (timestamps read per IO, queue runs, IPIs ...).
// The engine fills it at the end of a run; report/ writes it under the
// "blklab" JSON key and as extra sections after fio's normal output.
//
// Thread-safety: a plain value type.
#ifndef BLKLAB_ENGINE_STATS_KERNEL_REPORT_H_
#define BLKLAB_ENGINE_STATS_KERNEL_REPORT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace blklab::stats {

enum class CpuMode { kUser = 0, kSys = 1, kIrq = 2, kSoftirq = 3, kIdle = 4 };
inline constexpr int kNumCpuModes = 5;
const char* CpuModeName(CpuMode mode);  // "usr", "sys", "irq", "softirq", "idle"

struct ProfileRow {
  std::string function;  // kernel function name, or "fio:..." for user space
  CpuMode mode = CpuMode::kSys;
  int64_t self_ns = 0;   // self time summed over all CPUs
  double share_pct = 0;  // self_ns / busy time of all CPUs * 100 (perf top's "Overhead")
};

// One call stack and the CPU time charged with it as the innermost frame:
// a line of the folded format flame graph tools read ("comm;f1;f2 ns").
struct StackRow {
  std::string stack;  // semicolon-separated, outermost first: a thread's comm, functions, "[hardirq]"...
  int64_t ns = 0;
};

struct CpuRow {
  int cpu = 0;
  int64_t mode_ns[kNumCpuModes] = {};  // indexed by CpuMode
};

struct LockRow {
  std::string name;                  // e.g. "nullb0:dd->lock", "host:tags->lock"
  uint64_t acquisitions = 0;
  uint64_t contended = 0;            // acquisitions that had to wait
  int64_t wait_ns = 0;               // time spun waiting (native_queued_spin_lock_slowpath)
  int64_t hold_ns = 0;               // time held
  uint64_t max_waiters = 0;          // longest queue seen at an acquire
  uint64_t holder_changes = 0;       // acquisitions by another CPU than the previous holder
  uint64_t remote_holder_changes = 0;  // of those, by a CPU outside the previous holder's LLC
  uint64_t line_transfers = 0;       // cacheline transfers inside the sections
  int64_t wait_irqs_off_ns = 0;      // part of wait_ns spun with interrupts masked
};

// `perf sched latency`'s row: the threads of one name (a fio job's clones;
// in other names each run of digits reads as '*', so the per-CPU
// ksoftirqd/0..N are one row), the CPU time they used, how often they were
// picked to run after waiting in a runqueue, and how long they waited
// (schedstat's run_delay).
struct SchedRow {
  std::string task;          // e.g. "fio/rc4", "ksoftirqd/*", "kworker/*:*H"
  uint32_t threads = 0;
  bool rt = false;           // SCHED_FIFO (a threaded interrupt handler)
  int64_t runtime_ns = 0;    // CPU time used (user + kernel)
  uint64_t switches = 0;     // times picked after a runqueue wait (schedstat pcount)
  int64_t delay_ns = 0;      // total runqueue wait (run_delay)
  int64_t max_delay_ns = 0;  // the longest single wait
  int64_t max_delay_at_ns = 0;  // virtual time it ended
};

struct CounterRow {
  std::string name;   // e.g. "ktime_get_ns", "blk_mq_run_hw_queue", "ipi"
  uint64_t count = 0;
};

// One of btt's stages over a device's completed requests (seconds in btt's
// output; ns here).
struct StageRow {
  uint64_t n = 0;
  int64_t min_ns = 0;
  double avg_ns = 0;
  int64_t max_ns = 0;
};

struct DeviceRow {
  std::string name;           // e.g. "nullb0"
  // btt's stages per request: Q2G (bio submitted to request allocated, a
  // tag wait included), G2D (allocated to issued to the driver), D2C (issued
  // to completed, the completion's softirq or IPI included), Q2C.
  StageRow q2g, g2d, d2c, q2c;
  // The stages in btt's order, named as btt prints them.
  std::array<std::pair<const char*, const StageRow*>, 4> stages() const {
    return {{{"Q2G", &q2g}, {"G2D", &g2d}, {"D2C", &d2c}, {"Q2C", &q2c}}};
  }
  uint64_t read_ios = 0, write_ios = 0;
  uint64_t read_merges = 0, write_merges = 0;
  uint64_t read_sectors = 0, write_sectors = 0;  // 512-byte units, as /sys/block/*/stat
  int64_t read_ticks_ms = 0, write_ticks_ms = 0, in_queue_ms = 0;
  double util_pct = 0;
};

// The page cache over the run (buffered I/O), cachestat's way: a read's
// page accesses, the pages reads added (misses), hits = accesses - misses.
struct PageCacheRow {
  uint64_t capacity_pages = 0;   // vm.memory_mib in 4 KiB pages
  uint64_t peak_pages = 0;
  uint64_t read_accesses = 0;
  uint64_t read_hits = 0;
  uint64_t read_misses = 0;
  double hit_ratio_pct = 0;      // hits / accesses
  uint64_t readahead_sync = 0;
  uint64_t readahead_async = 0;
  uint64_t read_bios = 0;
  uint64_t pages_dirtied = 0;
  uint64_t pages_written_back = 0;
  uint64_t writeback_bios = 0;
  uint64_t pages_reclaimed = 0;
  uint64_t pages_invalidated = 0;
  uint64_t dirty_pages_at_end = 0;
  uint64_t dirty_throttle_waits = 0;
  int64_t dirty_throttle_ns = 0;
  uint64_t mmap_faults = 0;        // page faults on shared file mappings (ioengine=mmap)
  uint64_t mmap_major_faults = 0;  // ... that waited for a read
  uint64_t pages_unmapped = 0;     // page-table entries zapped (reclaim, truncate, munmap)
};

struct KernelReport {
  std::string host_name;
  int64_t elapsed_ns = 0;        // virtual time of the whole run
  int64_t busy_ns = 0;           // non-idle time summed over all CPUs
  double sys_pct = 0;            // (sys + irq + softirq) / (elapsed * cpus) * 100
  double contention_pct = 0;     // slowpath time / busy time * 100
  uint64_t total_ios = 0;        // IOs completed in the measured window
  uint64_t events = 0;           // discrete events processed (engine cost metric)
  std::vector<CpuRow> cpus;      // only CPUs the run used, ascending
  std::vector<ProfileRow> profile;  // descending self_ns, then name
  std::vector<LockRow> locks;       // ascending name
  std::vector<CounterRow> counters; // ascending name
  std::vector<SchedRow> sched;      // threads that ran; most total delay first, then task
  std::vector<DeviceRow> devices;   // host order
  std::vector<StackRow> stacks;     // by stack text; empty unless RunRequest::collect_stacks
  std::optional<PageCacheRow> page_cache;  // set when some job did buffered I/O
};

}  // namespace blklab::stats

#endif  // BLKLAB_ENGINE_STATS_KERNEL_REPORT_H_
