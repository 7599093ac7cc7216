// engine/topology.h
//
// The topology builder: the one place that turns a host spec and a set of
// fio job clones into a simulated machine (docs/architecture.md, "Data flow"):
// CPUs with their topology and the machine-level prices, the kernel (cost
// table, knobs, HZ), the block devices the jobs use (through the device
// factory, model/device_factory.h), and one simulated fio thread per clone,
// pinned to its CPU, wired to its disk and ordered by fio's stonewall /
// wait_for rules.
//
// Planning (PlanRun) is separate from building so that a run can be
// validated without building anything: it resolves each clone's disk and
// CPU, applies fio's ioscheduler=, and refuses what the model cannot run —
// drivers, knobs no model code reads yet, engines — naming the field.
//
// Invariants: after BuildSimulation, every clone has a CPU and (unless it
//  uses fio's null engine) a request queue; the Simulation is never moved
//  (clone callbacks point into it).
// Thread-safety: a Simulation belongs to the thread that runs it.
// Cost: O(disks + clones) to plan; building allocates every modelled
//  structure once (requests per tag, locks, cachelines).
#ifndef BLKLAB_ENGINE_TOPOLOGY_H_
#define BLKLAB_ENGINE_TOPOLOGY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/host/cost_table.h"
#include "engine/host/host_spec.h"
#include "engine/job/fio_backend.h"
#include "engine/job/job_thread.h"
#include "engine/model/block_device.h"
#include "engine/model/kernel.h"
#include "engine/model/page_cache.h"
#include "engine/run_types.h"
#include "engine/sim/machine.h"

namespace blklab {

// One disk of the host (a device instance: a null_blk of nr_devices, a LUN).
struct Disk {
  std::string name;
  size_t entry = 0;   // index in host.devices
  int index = 0;      // instance within its entry
  const host::DeviceSpec* spec = nullptr;
  host::Scheduler scheduler = host::Scheduler::kNone;  // after fio's ioscheduler=
  uint64_t size_bytes = 0;
  bool has_poll_queues = false;
};

// A regular file a job names, on a filesystem of the host (host_spec.h
// FilesystemSpec): one extent on the filesystem's device, laid out before
// the run (the files exist when the jobs start: fio's layout phase is not
// simulated). Files of one filesystem follow each other from 1 MiB on, each
// rounded up to 1 MiB, in the order the jobs first name them; a file's size
// is the largest filesize= (else size=) of the jobs naming it.
struct FileTarget {
  std::string path;       // absolute ("/mnt/data/fio-rand-read")
  int disk = 0;           // the filesystem's device
  size_t filesystem = 0;  // index in host.filesystems
  uint64_t base = 0;      // byte offset of the extent on the device
  uint64_t bytes = 0;     // the file's size
};

// One file or device a clone does I/O to.
struct CloneTarget {
  int disk = -1;  // -1: the null engine
  int file = -1;  // in RunPlan::files; -1: the raw device
  // Named by its NVMe generic character device (/dev/ngXnY for nvmeXnY):
  // io_uring_cmd's passthrough target.
  bool generic = false;
};

// The most files one job may work on (filename= lists, nrfiles=).
inline constexpr uint32_t kMaxFilesPerJob = 4096;

// What a run will use, resolved and checked.
struct RunPlan {
  std::vector<Disk> disks;        // every disk of the host, in host order
  std::vector<FileTarget> files;  // every regular file the jobs name
  std::vector<int> clone_file;    // per clone: its (first) file in `files`, or -1 (a device)
  std::vector<int> clone_disk;    // per clone: its (first) disk, or -1 (ioengine=null)
  // per clone: every file or device it works on, in fio's file order (the
  // first is clone_disk / clone_file); one unless filename= lists several
  // or nrfiles= asks for more.
  std::vector<std::vector<CloneTarget>> clone_targets;
  std::vector<int> clone_cpu;     // per clone: the CPU it starts on
  // per clone: the CPUs it may run on (its affinity); empty: pinned to
  // clone_cpu (cpus_allowed_policy=split with cpus_allowed, or one CPU).
  std::vector<std::vector<int>> clone_cpus_allowed;
  std::vector<uint16_t> clone_blkcg;  // per clone: its blkio cgroup id (0: root)
  std::vector<int> cgroup_bfq_weights;  // by blkcg id: the host spec's cgroups in path order, then
                                        // the ones fio's cgroup= creates
};

// Resolves and checks everything a run needs without building it.
absl::StatusOr<RunPlan> PlanRun(const RunRequest& req);

// Everything one run owns.
struct Simulation {
  RunPlan plan;
  std::unique_ptr<sim::Machine> machine;
  host::CostTable costs;
  std::unique_ptr<model::Kernel> kernel;
  std::vector<std::unique_ptr<model::BlockDevice>> devices;  // per host entry (null if unused)
  std::vector<model::RequestQueue*> queues;                  // per disk (null if unused)
  std::map<uint32_t, job::FioFlow> flows;  // by flow_id: fio's flows (stable addresses)
  // Per disk: the verify headers on it when a job of the run verifies
  // there (null otherwise).
  std::vector<std::unique_ptr<job::DeviceContent>> contents;
  // Per disk: its content as SCSI VERIFY compares it, when an sg job of the
  // run verifies there (null otherwise).
  std::vector<std::unique_ptr<job::MediumContent>> media;
  std::vector<std::unique_ptr<job::FileInode>> inodes;  // by plan.files index
  // The page cache, when a job does buffered I/O (direct=0), and the
  // mappings in it: per file (by plan.files index) and per disk read or
  // written through its block device's cache (null where unused).
  std::unique_ptr<model::PageCache> page_cache;
  std::vector<model::AddressSpace*> file_mappings;
  std::vector<model::AddressSpace*> disk_mappings;
  std::vector<std::unique_ptr<job::JobThread>> clones;
  // fio's main and helper threads (after the clones: they read them).
  std::unique_ptr<job::FioBackend> backend;
  // fio's start order: stonewall waves and wait_for (StartReadyClones).
  std::vector<uint32_t> wave;        // stonewall wave per clone
  std::vector<uint32_t> clone_job;   // per clone: its job's index
  std::vector<int> wait_for_job;     // per clone: the job index its wait_for names, or -1
  std::vector<bool> started;         // per clone
  std::vector<uint32_t> wave_left;   // per wave: clones not done
  std::vector<uint32_t> job_left;    // per job: clones not done
  uint32_t next_wave = 1;
  uint32_t done = 0;
};

// Builds the machine, kernel, devices and clones of `plan` and starts the
// clones that may start at time 0.
absl::StatusOr<std::unique_ptr<Simulation>> BuildSimulation(const RunRequest& req, RunPlan plan);

// Whether some request in flight has yet to reach its timeout (plus the
// timer's rounding and the SCSI abort delay) at `horizon`: the stall check
// waits for the timeout handling rather than declaring a stall.
bool TimeoutAhead(const Simulation& s, sim::SimTime horizon);

// After the run's report (taken at its end): the I/O still in flight that
// no job owns -- the page cache's writeback and readahead, which the
// kernel carries on with after fio exits -- drains, with the flusher
// quiesced, from `horizon` on. Then the invariant: no request is lost.
// InternalError names each device that still holds requests once nothing
// has completed for limits.stall_ns (or nothing is left to happen).
absl::Status DrainInFlight(Simulation& s, sim::SimTime horizon, const RunLimits& limits);

// Every disk of the host, in host order (fio's ioscheduler= not applied).
std::vector<Disk> ListDisks(const host::HostSpec& host);
// The virtual-time limit as the messages print it: exact, with its unit
// ("0.3 s", "3600 s").
std::string VirtualLimitText(int64_t max_virtual_ns);

// A run stops at its virtual-time limit plus this much, for the I/O in
// flight to complete (a job whose runtime is the limit still ends).
inline constexpr int64_t kVirtualLimitGraceNs = 10'000'000;

// Shared by planning (topology_plan.cc) and building (topology.cc):
// whether a clone of `spec` on disk `disk` goes through the page cache, and
// the size of a clone's target (its file's, else its device's; fio's null
// engine: size=, at least 1 GiB).
bool Buffered(const workload::JobSpec& spec, int disk);
uint64_t RegionBytes(const RunPlan& plan, const CloneTarget& t, const workload::JobSpec& spec);

// The disk a file name (/dev/NAME or NAME) names, or InvalidArgument listing
// the host's disks; `what` prefixes the message.
absl::StatusOr<int> DiskByName(const std::vector<Disk>& disks, const std::string& name, const std::string& what);
// The platform of a simulation: the machine and its prices, the kernel, and
// the driver instances of the disks in `used` (s.plan.disks set; the first
// use of each device entry decides a shared SCSI host's queue settings).
absl::Status BuildPlatform(const host::HostSpec& host, const std::vector<int>& used, Simulation& s);

}  // namespace blklab

#endif  // BLKLAB_ENGINE_TOPOLOGY_H_
