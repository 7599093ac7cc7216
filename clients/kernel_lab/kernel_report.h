// clients/kernel_lab/kernel_report.h
//
// The `kernel` section of a lab run: what the guest's kernel counted while
// fio ran, as differences between snapshots taken just before and just after
// fio (/sys/block/*/stat, /proc/stat's CPU modes, /proc/interrupts,
// /proc/softirqs, /proc/schedstat), plus the blk-mq debugfs state after the
// run, read as text. Devices carry the host spec's names.
//
// Pure parsing and printing; thread-compatible.
#ifndef BLKLAB_CLIENTS_KERNEL_LAB_KERNEL_REPORT_H_
#define BLKLAB_CLIENTS_KERNEL_LAB_KERNEL_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "clients/kernel_lab/vm.h"

namespace blklab::kernel_lab {

// /sys/block/X/stat's fields, in the kernel's order (Documentation/block/stat.rst).
inline constexpr const char* kDiskStatFields[] = {
    "read_ios",    "read_merges",    "read_sectors",    "read_ticks_ms",    "write_ios",   "write_merges",
    "write_sectors", "write_ticks_ms", "in_flight",     "io_ticks_ms",      "time_in_queue_ms", "discard_ios",
    "discard_merges", "discard_sectors", "discard_ticks_ms", "flush_ios", "flush_ticks_ms"};

struct CounterRow {
  std::string name;
  std::vector<int64_t> per_cpu;  // delta per CPU
  int64_t total = 0;
};

struct KernelSection {
  std::string release;        // uname -r
  std::string accel;          // kvm or tcg
  double wall_seconds = 0;
  std::vector<std::pair<std::string, std::string>> devices;  // spec name, guest kernel name
  std::map<std::string, std::vector<int64_t>> disk;           // spec name -> kDiskStatFields deltas
  std::vector<std::pair<std::string, int64_t>> cpu_modes;     // /proc/stat "cpu" deltas, USER_HZ ticks
  std::vector<CounterRow> interrupts;                         // lines that moved
  std::vector<CounterRow> softirqs;
  std::vector<CounterRow> schedstat;  // per CPU: run_ns, wait_ns, timeslices (rows by field)
  std::string debugfs;                // as read, after the run
  std::string fio_stderr;
};

KernelSection ParseKernelSection(const GuestOutput& out);

// The guest kernel name a spec device had, or the name itself.
std::string GuestName(const KernelSection& k, const std::string& spec_name);
// The spec name of a guest kernel name, or the name itself.
std::string SpecName(const KernelSection& k, const std::string& guest_name);

// Busy share of the guest's CPUs while fio ran (1 - idle - iowait), 0..1.
double GuestCpuBusy(const KernelSection& k);

// fio-style text ("kernel (from the guest): ...").
std::string KernelSectionText(const KernelSection& k);
// The same as a JSON object's text.
std::string KernelSectionJson(const KernelSection& k);

// fio's JSON output with the kernel section joined as its last key,
// "kernel"; text without a JSON object is returned unchanged.
std::string WithKernelJson(const std::string& fio_json, const KernelSection& k);

}  // namespace blklab::kernel_lab

#endif  // BLKLAB_CLIENTS_KERNEL_LAB_KERNEL_REPORT_H_
