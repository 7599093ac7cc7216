// clients/kernel_lab/scenario.h
//
// The differential suite's scenarios (tests/kernel/scenarios/*.yaml): a
// host spec, one fio job file (fio's own format, beside the scenario), and the metrics compared between the guest
// kernel and the model, each with its tolerance; optionally values whose
// answer is analytic, which measure the lab's own timing error.
//
// Metrics are computed the same way from fio's JSON output on both sides
// (EvalMetric): iops(JOB[,dir]), total_iops, share(JOB[,dir]),
// ratio(JOB_A,JOB_B[,dir]), lat_us(JOB,dir,P), mean_lat_us(JOB,dir),
// merges_per_io(DEV,dir), request_kib(DEV,dir), ios_per_job_io(DEV,dir).
// JOB is a job section's name (its numjobs clones summed; their
// percentiles averaged), DEV a device of the host spec, dir
// read|write|trim|all.
//
// Pure; thread-compatible.
#ifndef BLKLAB_CLIENTS_KERNEL_LAB_SCENARIO_H_
#define BLKLAB_CLIENTS_KERNEL_LAB_SCENARIO_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/util/doc_node.h"

namespace blklab::kernel_lab {

struct Tolerance {
  double value = 0;
  bool relative = false;  // "15%": relative to the kernel's figure
  // Whether `model` is within the tolerance of `kernel`.
  bool Holds(double kernel, double model) const;
  std::string ToString() const;
};

struct MetricSpec {
  std::string expr;
  Tolerance tolerance;
};

struct AnalyticSpec {
  std::string expr;
  double expected = 0;
};

struct Scenario {
  std::string name;
  std::string mechanism;
  bool ci = false;
  // Runs of the guest whose median per metric is the kernel's figure (1-9):
  // for scenarios whose kernel side was seen to vary from run to run more
  // than the tolerance (the model's side is deterministic).
  int kernel_runs = 1;
  util::DocNode host;  // the host spec as written
  std::string fio_file;  // the job file, relative to the scenario's folder
  std::string fio;       // its text (read by the caller)
  std::vector<MetricSpec> metrics;
  std::vector<AnalyticSpec> analytic;
};

// Parses one scenario file's text; errors name the file and the field.
absl::StatusOr<Scenario> ParseScenario(const std::string& text, const std::string& file_name);

// A device name on fio's disk_util -> the host spec's name.
using DiskNameMap = std::function<std::string(const std::string&)>;

// Evaluates a metric expression on fio's JSON output (parsed).
// InvalidArgument names the expression when it is malformed or names a job
// or device the output does not have.
absl::StatusOr<double> EvalMetric(const std::string& expr, const util::DocNode& fio_json,
                                  const DiskNameMap& disk_name);

}  // namespace blklab::kernel_lab

#endif  // BLKLAB_CLIENTS_KERNEL_LAB_SCENARIO_H_
