// clients/kernel_lab/lab_run.h
//
// One job on the guest kernel and on the model. The guest side: the host
// spec planned into a VM (guest_plan.h), the job files copied in, fio run
// unchanged between two snapshots of the kernel's counters, the output
// split into fio's own text and the kernel section (kernel_report.h). The
// model side: the same spec with the lab kernel's settings, the same fio
// arguments, fio's JSON as the model prints it.
//
// Thread-compatible; each call boots its own VM.
#ifndef BLKLAB_CLIENTS_KERNEL_LAB_LAB_RUN_H_
#define BLKLAB_CLIENTS_KERNEL_LAB_LAB_RUN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/kernel_lab/guest_plan.h"
#include "clients/kernel_lab/kernel_report.h"
#include "clients/kernel_lab/scenario.h"
#include "clients/kernel_lab/vm.h"
#include "engine/host/host_spec.h"
#include "engine/util/doc_node.h"
#include "engine/workload/job_parser.h"

namespace blklab::kernel_lab {

struct LabJob {
  util::DocNode host_doc;  // as written
  host::HostSpec host;     // decoded, resolved
  std::vector<std::string> fio_args;  // fio's command line; job files by path
  workload::FileReader read_file;     // reads the job files named in fio_args
  bool blktrace = false;              // trace the devices and summarise
  // On this machine's own kernel (--real): the model then runs the spec as
  // written, not with the lab kernel's settings.
  bool real = false;
};

struct KernelRun {
  std::string fio_output;  // fio's stdout, unchanged
  int fio_exit = 0;
  KernelSection kernel;
  std::string blktrace_summary;
  std::string image;  // image.txt
  std::string restore;  // --real: the undo lines that ran
};

// Boots the lab and runs the job. Refusals (Unimplemented) name the spec
// field the VM cannot express.
absl::StatusOr<KernelRun> RunOnKernel(const LabImage& image, const LabJob& job);

// --real: the plan for this machine's kernel, after the refusals (NVMe, HBA,
// filesystems, --blktrace, fio's file options) and the check that every job
// targets a device the spec makes; RealScript is what would run.
absl::StatusOr<GuestPlan> PlanRealRun(const LabJob& job);
std::string RealScript(const GuestPlan& plan, const std::vector<std::string>& fio_args);

// Runs the job on this machine's kernel: RealScript under /bin/sh, which
// undoes its set-up on every exit. Root only (PermissionDenied), unless
// BLKLAB_REAL_ROOT names a stand-in tree for /sys and /proc (tests).
absl::StatusOr<KernelRun> RunOnRealKernel(const LabJob& job);

// Runs the job on the model with the lab kernel's settings (the spec's own
// with --real); fio's JSON text.
absl::StatusOr<std::string> RunOnModel(const LabJob& job);

// fio's JSON text (possibly after other output) parsed.
absl::StatusOr<util::DocNode> ParseFioJson(const std::string& text);

// The same arguments with fio's output format forced to JSON.
std::vector<std::string> WithJsonOutput(const std::vector<std::string>& fio_args);

// One row of a comparison.
struct CompareRow {
  std::string metric;
  double kernel = 0;
  double model = 0;
  Tolerance tolerance;
  bool agrees = true;
  // A rate or a latency (iops, total_iops, lat_us, mean_lat_us): what the
  // guest's slow CPU and late timers distort, so a disagreement there is the
  // lab's, unless the model also misses an analytic answer.
  bool timing_bound = false;
};

// Whether a metric expression measures time (see CompareRow::timing_bound).
bool IsTimingMetric(const std::string& expr);

// The default rows of an ad hoc comparison: per job IOPS, share, p50/p99
// completion latency; per device merges and size per I/O. Tolerances:
// shares 0.05, counts and sizes per I/O 15 %, IOPS and latency 25 %.
std::vector<MetricSpec> DefaultMetrics(const util::DocNode& kernel_json, const DiskNameMap& names);

absl::StatusOr<std::vector<CompareRow>> CompareMetrics(const std::vector<MetricSpec>& metrics,
                                                       const util::DocNode& kernel_json, const DiskNameMap& kernel_names,
                                                       const util::DocNode& model_json);

// The table, one row a metric, `*` where the model is outside the tolerance.
std::string CompareTable(const std::vector<CompareRow>& rows);

}  // namespace blklab::kernel_lab

#endif  // BLKLAB_CLIENTS_KERNEL_LAB_LAB_RUN_H_
