// engine_bench: how fast blklab simulates, against fio's own null engine
// measured on the same machine in the same run.
//
// Reference scenario (the speed target): host null-1cpu (one
// simulated CPU, null_blk irqmode=0, one hardware queue, scheduler none),
// fio job io_uring, 4 KiB random reads, iodepth 32. Reported:
//   * simulated IOs per second of host CPU time (the simulation is single
//     threaded, so this is per host core), and per wall-clock second;
//   * events per simulated IO (the temporal-decoupling figure of merit);
//   * modelled CPU time per second of host CPU time: the simulated CPUs'
//     busy time (usr + sys + irq + softirq, summed over CPUs) that one
//     host core simulates per second. It does not depend on how much
//     modelled work an IO costs, so it compares a one-CPU host with a
//     64-CPU one: the simulator's speed per modelled nanosecond;
//   * the same job on fio's null engine (a real fio process, its IOPS per
//     CPU-second of its one job thread) and the ratio of the two.
// Both are run over a 1 GiB region (--size=1g), with and without fio's
// random map (norandommap).
//
// Each figure is the best of --repeats runs (default 3): the machines are
// shared and noisy, and the best run is the one least disturbed.
//
// Big hosts (run from the repository's root, one run each: they take
// tens of seconds): RC1's seed line (examples/jobs/64.fio on
// rc1-mpi3mr-64vd, 128 libaio QD32 jobs on 64 LUNs, mq-deadline) for
// --rc1_seconds of virtual time, and the same job on a 256-CPU variant
// (127 hardware queues) for a fifth of that: wall and CPU seconds per
// simulated second, events per IO, and the process's peak RSS after each.
//
// Usage: engine_bench [--virtual_seconds=S] [--repeats=N] [--no_fio]
//                     [--rc1_seconds=S] [--no_rc1]
#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/host/presets.h"
#include "engine/util/doc_node.h"
#include "engine/util/file.h"
#include "engine/util/json_reader.h"

namespace {

double Seconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct SimFigures {
  uint64_t ios = 0;
  uint64_t events = 0;
  double cpu_s = 0;
  double wall_s = 0;
  double simulated_iops = 0;
  int64_t busy_ns = 0;  // modelled CPU time, all simulated CPUs
  // Modelled CPU-seconds simulated per second of host CPU time.
  double ModelledPerCpuS() const { return cpu_s > 0 ? busy_ns * 1e-9 / cpu_s : 0; }
};

// A preset name, or YAML host text (it has a newline).
bool RunSim(const std::string& preset, const std::vector<std::string>& args, SimFigures* out,
            blklab::workload::FileReader read_file = nullptr) {
  auto host = preset.find('\n') != std::string::npos ? blklab::host::ParseHostSpec(preset)
                                                     : blklab::host::GetPreset(preset);
  if (!host.ok()) {
    std::fprintf(stderr, "preset %s: %s\n", preset.c_str(), std::string(host.status().message()).c_str());
    return false;
  }
  auto parsed = blklab::ParseFio(args, *host, std::move(read_file), nullptr);
  if (!parsed.ok()) {
    std::fprintf(stderr, "parse: %s\n", std::string(parsed.status().message()).c_str());
    return false;
  }
  blklab::RunRequest req;
  req.host = *host;
  req.jobs = parsed->jobs;
  const double c0 = Seconds(CLOCK_THREAD_CPUTIME_ID), w0 = Seconds(CLOCK_MONOTONIC);
  auto run = blklab::RunFio(req);
  const double c1 = Seconds(CLOCK_THREAD_CPUTIME_ID), w1 = Seconds(CLOCK_MONOTONIC);
  if (!run.ok()) {
    std::fprintf(stderr, "run: %s\n", std::string(run.status().message()).c_str());
    return false;
  }
  out->ios = run->kernel.total_ios;
  out->events = run->events;
  out->cpu_s = c1 - c0;
  out->wall_s = w1 - w0;
  out->simulated_iops = run->virtual_ns > 0 ? out->ios * 1e9 / run->virtual_ns : 0;
  out->busy_ns = run->kernel.busy_ns;
  return true;
}

// The fastest of `repeats` runs (simulated IOs per CPU-second), as the
// machine may be shared and noisy.
bool BestOf(const std::string& preset, const std::vector<std::string>& args, int repeats, SimFigures* best,
            double* per_core) {
  *per_core = 0;
  for (int r = 0; r < repeats; ++r) {
    SimFigures one;
    if (!RunSim(preset, args, &one)) return false;
    if (one.ios / one.cpu_s > *per_core) {
      *per_core = one.ios / one.cpu_s;
      *best = one;
    }
  }
  return true;
}

double AsD(const blklab::util::DocNode* n) {
  if (n == nullptr) return 0;
  auto v = n->AsDouble();
  return v.ok() ? *v : 0;
}

// Runs the real fio with the null engine; returns IOPS per CPU-second of fio.
bool RunFioNull(const std::vector<std::string>& args, double seconds, double* iops_per_cpu_s,
                double* iops) {
  std::string cmd = "fio --output-format=json --ioengine=null --size=1g --time_based --runtime=" +
                    std::to_string(static_cast<int>(seconds + 0.5));
  for (const auto& a : args) cmd += " " + a;
  cmd += " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  if (pclose(p) != 0) return false;
  auto doc = blklab::util::ParseJson(text);
  if (!doc.ok()) return false;
  const auto* jobs = doc->Find("jobs");
  if (jobs == nullptr || jobs->items().empty()) return false;
  const auto& job = jobs->items()[0];
  const auto* read = job.Find("read");
  const auto* usr = job.Find("usr_cpu");
  const auto* sys = job.Find("sys_cpu");
  if (read == nullptr || usr == nullptr || sys == nullptr) return false;
  const double r_iops = AsD(read->Find("iops"));
  const double cpu = (AsD(usr) + AsD(sys)) / 100.0;
  *iops = r_iops;
  *iops_per_cpu_s = cpu > 0 ? r_iops / cpu : r_iops;
  return true;
}

double PeakRssMiB() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

// RC1's seed line on `host` (a preset name or YAML text) for `seconds` of
// virtual time.
bool RunRc1(const std::string& label, const std::string& host, double seconds) {
  const std::vector<std::string> args = {
      "examples/jobs/64.fio", "--rw=randread",  "--bs=4K",        "--iodepth=32", "--numjobs=2",
      "--ioscheduler=mq-deadline", "--disk_util=0",
      "--runtime=" + std::to_string(static_cast<int64_t>(seconds * 1000)) + "ms"};
  SimFigures f;
  if (!RunSim(host, args, &f, blklab::util::ReadFileToString)) return false;
  const double simulated_s = f.ios / f.simulated_iops;
  std::printf("%s: %.1f s wall and %.1f s CPU per simulated second (%.2f s simulated), %.2f events/IO, "
              "%.0f simulated IOPS, %.0f ns of modelled CPU per IO, %.2f modelled CPU-s per host CPU-s, "
              "peak RSS so far %.1f MiB\n",
              label.c_str(), f.wall_s / simulated_s, f.cpu_s / simulated_s, simulated_s,
              static_cast<double>(f.events) / f.ios, f.simulated_iops, static_cast<double>(f.busy_ns) / f.ios,
              f.ModelledPerCpuS(), PeakRssMiB());
  return true;
}

constexpr char kUsage[] =
    "usage: engine_bench [--virtual_seconds=S] [--repeats=N] [--no_fio] [--rc1_seconds=S] [--no_rc1]\n"
    "  --virtual_seconds=S  virtual time of each one-CPU, scsi_debug and bfq case (default 2)\n"
    "  --repeats=N          best of N runs for those cases (default 3)\n"
    "  --no_fio             do not run fio's null engine for comparison\n"
    "  --rc1_seconds=S      virtual time of RC1's seed line (default 1; 256 CPUs: S / 5)\n"
    "  --no_rc1             skip the big hosts\n";

// RC1's seed line on its preset, then the same on 256 CPUs and 127
// hardware queues.
bool RunRc1Cases(double rc1_seconds) {
  std::printf("\n");
  if (!RunRc1("RC1 seed line (64 CPUs, 64 LUNs, 128 libaio QD32 jobs)", "rc1-mpi3mr-64vd", rc1_seconds)) return false;
  auto yaml = blklab::host::PresetYaml("rc1-mpi3mr-64vd");
  if (!yaml.ok()) return false;
  std::string big(*yaml);
  for (auto [from, to] : {std::pair<std::string, std::string>{"cpus: {count: 64,", "cpus: {count: 256,"},
                          {"nr_hw_queues: 64", "nr_hw_queues: 127"}}) {
    const size_t at = big.find(from);
    if (at == std::string::npos) {
      std::fprintf(stderr, "rc1-mpi3mr-64vd: no '%s' to change\n", from.c_str());
      return false;
    }
    big.replace(at, from.size(), to);
  }
  if (!RunRc1("The same on 256 CPUs, 127 hw queues", big, rc1_seconds / 5)) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  double virtual_seconds = 2;
  bool with_fio = true;
  int repeats = 3;
  double rc1_seconds = 1;
  bool with_rc1 = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--virtual_seconds=", 18) == 0) {
      virtual_seconds = std::atof(argv[i] + 18);
    } else if (std::strcmp(argv[i], "--no_fio") == 0) {
      with_fio = false;
    } else if (std::strncmp(argv[i], "--repeats=", 10) == 0) {
      repeats = std::max(1, std::atoi(argv[i] + 10));
    } else if (std::strncmp(argv[i], "--rc1_seconds=", 14) == 0) {
      rc1_seconds = std::atof(argv[i] + 14);
    } else if (std::strcmp(argv[i], "--no_rc1") == 0) {
      with_rc1 = false;
    } else {
      const bool help = std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0;
      if (!help) std::fprintf(stderr, "engine_bench: unknown option %s\n", argv[i]);
      std::fprintf(help ? stdout : stderr, "%s", kUsage);
      return help ? 0 : 2;
    }
  }
  if (!(virtual_seconds > 0) || !(rc1_seconds > 0)) {
    std::fprintf(stderr, "engine_bench: --virtual_seconds and --rc1_seconds must be above 0\n%s", kUsage);
    return 2;
  }
  const std::string runtime = "--runtime=" + std::to_string(static_cast<int64_t>(virtual_seconds * 1000)) + "ms";
  struct Case {
    const char* label;
    std::vector<std::string> extra;
  };
  const std::vector<Case> cases = {
      {"norandommap", {"--norandommap"}},
      {"random map", {}},
  };
  std::printf("blklab engine benchmark: null_blk irqmode=0, scheduler none, 1 simulated CPU,\n"
              "io_uring QD32 4 KiB random reads, %.1f s of virtual time per case\n\n",
              virtual_seconds);
  std::printf("%-12s %14s %14s %12s %10s %10s %16s %12s\n", "case", "sim IO/s/core", "sim IO/s wall",
              "events/IO", "sim IOPS", "CPU-s/s", "fio null IO/s/core", "ratio");
  for (const Case& c : cases) {
    // O_DIRECT: the block layer's path, as the README's scenario (a
    // buffered run goes through the page cache model instead).
    std::vector<std::string> args = {"--name=bench", "--ioengine=io_uring", "--direct=1", "--rw=randread",
                                     "--bs=4k", "--iodepth=32", "--size=1g", "--time_based", runtime};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    // Best of `repeats` for both, as the machine may be shared and noisy.
    SimFigures f;
    double per_core = 0;
    if (!BestOf("null-1cpu", args, repeats, &f, &per_core)) return 1;
    double fio_per_core = 0, fio_iops = 0;
    bool fio_ok = false;
    if (with_fio) {
      std::vector<std::string> fio_args = {"--name=bench", "--rw=randread", "--bs=4k", "--iodepth=32"};
      fio_args.insert(fio_args.end(), c.extra.begin(), c.extra.end());
      for (int r = 0; r < repeats; ++r) {
        double one_per_core = 0;
        if (RunFioNull(fio_args, std::max(2.0, virtual_seconds), &one_per_core, &fio_iops)) {
          fio_ok = true;
          fio_per_core = std::max(fio_per_core, one_per_core);
        }
      }
    }
    std::printf("%-12s %14.0f %14.0f %12.6f %10.0f %10.2f", c.label, per_core, f.ios / f.wall_s,
                static_cast<double>(f.events) / f.ios, f.simulated_iops, f.ModelledPerCpuS());
    if (fio_ok) {
      std::printf(" %16.0f %11.2fx\n", fio_per_core, per_core / fio_per_core);
    } else {
      std::printf(" %16s %12s\n", "n/a", "n/a");
    }
  }
  if (with_rc1 && !RunRc1Cases(rc1_seconds)) return 1;
  // A SCSI host: RC5's preset (scsi_debug, 8 LUNs on one shared tag set,
  // 8 CPUs, 4.14 switches), one libaio job per LUN at QD64.
  {
    std::vector<std::string> args = {"--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
                                      "--iodepth=64", "--time_based", runtime};
    for (const char* lun : {"sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh", "sdi"}) {
      args.push_back(std::string("--name=") + lun);
      args.push_back(std::string("--filename=/dev/") + lun);
    }
    SimFigures f;
    double per_core = 0;
    if (!BestOf("rc5-scsi_debug-luns", args, repeats, &f, &per_core)) return 1;
    std::printf("\nscsi_debug (RC5 preset: 8 LUNs, 8 CPUs, libaio QD64 per LUN): %.0f sim IO/s/core, "
                "%.6f events/IO, %.0f simulated IOPS, %.2f s of CPU per simulated s, "
                "%.2f modelled CPU-s per host CPU-s\n",
                per_core, static_cast<double>(f.events) / f.ios, f.simulated_iops,
                f.cpu_s / (f.ios / f.simulated_iops), f.ModelledPerCpuS());
  }
  // bfq: 8 CPUs, one NVMe drive under bfq, 8 io_uring QD32 jobs (one
  // bfqd->lock taken four times per request).
  {
    const std::string host =
        "name: bfq-bench\ncpus: {count: 8, threads_per_core: 2}\ndevices:\n  - name: nvme0n1\n"
        "    nvme: {latency_nsec: 80000, max_iops: 800000}\n    queue: {scheduler: bfq}\n";
    std::vector<std::string> args = {"--name=bfq", "--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1",
                                     "--rw=randread", "--bs=4k", "--iodepth=32", "--numjobs=8",
                                     "--cpus_allowed_policy=split", "--time_based", runtime};
    SimFigures f;
    double per_core = 0;
    if (!BestOf(host, args, repeats, &f, &per_core)) return 1;
    std::printf("bfq (NVMe, 8 CPUs, 8 io_uring QD32 jobs): %.0f sim IO/s/core, %.6f events/IO, "
                "%.0f simulated IOPS, %.2f s of CPU per simulated s, %.2f modelled CPU-s per host CPU-s\n",
                per_core, static_cast<double>(f.events) / f.ios, f.simulated_iops,
                f.cpu_s / (f.ios / f.simulated_iops), f.ModelledPerCpuS());
  }
  std::printf("\nsim IO/s/core: simulated IOs per second of the simulating thread's CPU time.\n"
              "CPU-s/s, modelled CPU-s per host CPU-s: the simulated CPUs' busy time simulated per second\n"
              "of the simulating thread's CPU time (the simulator's speed per modelled nanosecond).\n"
              "fio null IO/s/core: fio 3.33's null engine, IOPS / (usr+sys share of its job).\n"
              "Each figure is the best of %d runs.\n", repeats);
  std::printf("peak RSS of this process: %.1f MiB\n", PeakRssMiB());
  return 0;
}
