// RunIoUring: fio's t/io_uring on a simulated host (engine.h).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "engine/host/cpu_topology.h"
#include "engine/job/t_io_uring_thread.h"
#include "engine/kernel_report_builder.h"
#include "engine/model/device_factory.h"
#include "engine/topology.h"
#include "engine/util/status_macros.h"

namespace blklab {
namespace {

// What t/io_uring cannot do on the model, by option.
absl::Status CheckModes(const workload::TioUringSpec& s) {
  if (s.passthrough) {
    return absl::UnimplementedError("-u1: NVMe passthrough (IORING_OP_URING_CMD on /dev/ngXnY) is not modelled yet");
  }
  if (s.buffered) return absl::UnimplementedError("-O0: buffered I/O needs the page cache, which is not modelled yet");
  if (s.dma_map) {
    return absl::UnimplementedError("-D1: IORING_REGISTER_MAP_BUFFERS is an out-of-tree kernel patch, not modelled");
  }
  if (s.depth <= 0) return absl::InvalidArgumentError(absl::StrCat("-d", s.depth, ": the ring needs a depth of at least 1"));
  if (s.bs <= 0 || s.bs % 512 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("-b", s.bs, ": io: unexpected ret=-22 (O_DIRECT needs a multiple of the logical block size)"));
  }
  if (s.nthreads < 0 || s.nthreads > 4096) return absl::InvalidArgumentError(absl::StrCat("-n", s.nthreads, ": bad thread count"));
  return absl::OkStatus();
}

// One simulated t/io_uring thread per -n, each on its CPU with its files;
// a thread with no file (and not -N1) is not started, as t/io_uring.
std::vector<std::unique_ptr<job::TioUringThread>> MakeThreads(const IoUringRunRequest& req,
                                                              const host::CpuTopology& topo,
                                                              const std::vector<int>& file_disk,
                                                              sim::SimTime end_at, Simulation& s,
                                                              IoUringResult& result) {
  const workload::TioUringSpec& spec = req.spec;
  const int nthreads = std::max(spec.nthreads, 1);
  const std::vector<std::vector<int>> thread_files = workload::TioUringThreadFiles(spec);
  std::vector<std::unique_ptr<job::TioUringThread>> threads;
  for (int t = 0; t < nthreads; ++t) {
    job::TioUringThreadConfig tc;
    tc.spec = &spec;
    tc.index = t;
    tc.cpu = req.cpus.empty() ? t % topo.num_cpus() : static_cast<int>(req.cpus[t % req.cpus.size()]);
    for (int f : thread_files[t]) {
      const int d = file_disk[f];
      tc.files.push_back(job::TioUringFile{s.queues[d], s.plan.disks[d].size_bytes});
    }
    if (tc.files.empty() && !spec.nop) continue;
    tc.seed = req.seed;
    tc.end_at = end_at;
    result.thread_files.push_back(thread_files[t].empty() ? "(null)" : spec.files[thread_files[t].back()]);
    result.thread_cpus.push_back(tc.cpu);
    threads.push_back(std::make_unique<job::TioUringThread>(*s.kernel, tc));
  }
  return threads;
}

}  // namespace

absl::StatusOr<IoUringResult> RunIoUring(const IoUringRunRequest& req, const std::function<void()>& on_start,
                                         const IoUringSecondFn& on_second, const std::atomic<bool>* cancel) {
  const workload::TioUringSpec& spec = req.spec;
  BLKLAB_RETURN_IF_ERROR(host::ValidateHostSpec(req.host));
  BLKLAB_RETURN_IF_ERROR(CheckModes(spec));
  BLKLAB_ASSIGN_OR_RETURN(host::CpuTopology topo, host::CpuTopology::Create(req.host.cpus));
  for (uint32_t c : req.cpus) {
    if (static_cast<int>(c) >= topo.num_cpus()) {
      return absl::InvalidArgumentError(absl::StrCat("--cpus names CPU ", c, " but the host has ", topo.num_cpus()));
    }
  }
  if (spec.runtime_s < 0 || static_cast<int64_t>(spec.runtime_s) * sim::kNsPerSec > req.limits.max_virtual_ns) {
    return absl::ResourceExhaustedError(absl::StrCat("-r", spec.runtime_s, " exceeds the virtual-time limit of ",
                                                     VirtualLimitText(req.limits.max_virtual_ns)));
  }

  // Files -> disks (each opened once, in argv order).
  auto sim_owner = std::make_unique<Simulation>();
  Simulation& s = *sim_owner;
  s.plan.disks = ListDisks(req.host);
  std::vector<int> file_disk;
  for (const std::string& f : spec.files) {
    BLKLAB_ASSIGN_OR_RETURN(int d, DiskByName(s.plan.disks, f, "open: "));
    const Disk& disk = s.plan.disks[d];
    BLKLAB_RETURN_IF_ERROR(model::CheckModelled(*disk.spec, req.host.knobs, absl::StrCat("devices[", disk.entry, "]")));
    file_disk.push_back(d);
  }
  if (on_start) on_start();
  for (size_t i = 0; i < spec.files.size(); ++i) {
    if (spec.polled && !spec.nop && !spec.aio && !s.plan.disks[file_disk[i]].has_poll_queues) {
      return absl::FailedPreconditionError(absl::StrCat(
          "io: unexpected ret=-95\nYour filesystem/driver/kernel doesn't support polled IO (", spec.files[i],
          " has no poll queues)"));
    }
  }

  std::vector<int> used;
  for (int d : file_disk) used.push_back(d);
  BLKLAB_RETURN_IF_ERROR(BuildPlatform(req.host, used, s));

  IoUringResult result;
  const sim::SimTime end_at =
      spec.runtime_s > 0 ? static_cast<int64_t>(spec.runtime_s) * sim::kNsPerSec : sim::kSimTimeNever;
  std::vector<std::unique_ptr<job::TioUringThread>> threads =
      MakeThreads(req, topo, file_disk, end_at, s, result);
  for (auto& t : threads) t->Start();

  // Virtual time in slices of 100 ms; each whole second is one line.
  sim::Machine& m = *s.machine;
  constexpr int64_t kSliceNs = 100 * sim::kNsPerMs;
  sim::SimTime horizon = 0;
  IoUringSecond last;
  uint64_t last_reaps = 0;
  sim::SimTime last_progress = 0;
  auto totals = [&threads]() {
    IoUringSecond sum;
    for (const auto& t : threads) {
      sum.done += t->submitted();
      sum.calls += t->calls();
      sum.reaps += t->reaps();
    }
    return sum;
  };
  auto all_exited = [&threads]() {
    for (const auto& t : threads) {
      if (!t->exited()) return false;
    }
    return true;
  };
  while (!all_exited()) {
    horizon = std::min(horizon + kSliceNs, req.limits.max_virtual_ns + kVirtualLimitGraceNs);
    m.set_horizon(horizon);
    m.sim().Run(horizon);
    const IoUringSecond now = totals();
    if (horizon % sim::kNsPerSec == 0 && horizon <= end_at) {
      const IoUringSecond delta{now.done - last.done, now.calls - last.calls, now.reaps - last.reaps};
      result.seconds.push_back(delta);
      last = now;
      if (on_second) on_second(delta);
    }
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      result.interrupted = true;
      break;
    }
    if (now.reaps != last_reaps) {
      last_reaps = now.reaps;
      last_progress = horizon;
    }
    if (!s.kernel->failure().ok()) return s.kernel->failure();
    if ((horizon - last_progress > req.limits.stall_ns && !TimeoutAhead(s, horizon)) ||
        (m.sim().pending_events() == 0 && !all_exited() && horizon > last_progress + kSliceNs)) {
      return absl::DeadlineExceededError(absl::StrCat("simulated I/O stalled at ", horizon / 1000,
                                                      " us of virtual time: no completion for ",
                                                      (horizon - last_progress) / 1000000, " ms"));
    }
    if (horizon >= req.limits.max_virtual_ns + kVirtualLimitGraceNs) {
      return absl::ResourceExhaustedError(
          absl::StrCat("virtual-time limit of ", VirtualLimitText(req.limits.max_virtual_ns), " reached"));
    }
  }
  sim::SimTime end = horizon;
  if (!result.interrupted) {
    end = 0;
    for (const auto& t : threads) end = std::max(end, t->exited_at());
  }
  result.virtual_ns = end;
  for (const auto& t : threads) result.latency.push_back(t->latency());
  const IoUringSecond all = totals();
  if (result.interrupted) {
    // The simulation stops here; what is in flight stays in flight.
    BuildKernelReportFor(req.host.name, s, end, /*final=*/false, all.reaps, result.kernel).IgnoreError();
  } else {
    BLKLAB_RETURN_IF_ERROR(BuildKernelReportFor(req.host.name, s, end, /*final=*/true, all.reaps, result.kernel));
    BLKLAB_RETURN_IF_ERROR(DrainInFlight(s, horizon, req.limits));
  }
  return result;
}

bool TioUringPrintsSecond(size_t index, const workload::TioUringSpec& spec) {
  return spec.runtime_s <= 0 || index + 1 < static_cast<size_t>(spec.runtime_s);
}

size_t TioUringPrintedSeconds(const IoUringResult& result, const workload::TioUringSpec& spec) {
  size_t n = 0;
  while (n < result.seconds.size() && TioUringPrintsSecond(n, spec)) ++n;
  return n;
}

double TioUringMeanIops(const IoUringResult& result, const workload::TioUringSpec& spec) {
  const size_t shown = TioUringPrintedSeconds(result, spec);
  uint64_t sum = 0;
  for (size_t i = 0; i < shown; ++i) sum += result.seconds[i].done;
  return shown > 0 ? static_cast<double>(sum) / static_cast<double>(shown) : 0.0;
}

}  // namespace blklab
