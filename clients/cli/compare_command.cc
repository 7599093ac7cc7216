#include "clients/cli/compare_command.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compare/plot.h"
#include "compare/compare.h"
#include "clients/cli/host_arg.h"
#include "engine/engine.h"
#include "engine/util/file.h"
#include "engine/util/status_macros.h"

namespace blklab::cli {
namespace {

constexpr char kUsage[] =
    "usage: blklab compare --host=PRESET|FILE|--fleet=INVENTORY [--variant NAME:PATH=VALUE[,PATH=VALUE...]]...\n"
    "           [--matrix PATH=V1,V2,...]... [--samples=N] [--seed=N] [--jobs=N]\n"
    "           [--format=table|markdown|csv|json] [--plot=DIR] -- FIO-ARGS...\n"
    "           [--baseline=NAME] [--dry-run] [--tool=fio|io_uring]\n"
    "       blklab compare SPEC.yaml [--jobs=N] [--format=table|markdown|csv|json] [--plot=DIR] [--dry-run]\n"
    "  --plot=DIR  also write iops.svg, contention.svg, cpu.svg, latency.svg and report.html there,\n"
    "              and per row a flame graph of the simulated kernel (flame-ROW.svg, ROW.folded) and,\n"
    "              for each variant, a differential one against the baseline (flame-diff-ROW.svg)\n"
    "  --fleet=F   run on every host type of the inventory F (hosts: {TYPE: PRESET|FILE}) and rank\n"
    "              the host types by each variant's IOPS change\n"
    "  --tool=io_uring  the arguments after -- are fio's t/io_uring's (as `blklab io_uring` takes them,\n"
    "              with --cpus=LIST and -r2 or more; in a spec: io_uring: [...] instead of fio: [...]);\n"
    "              local only: blklabd runs fio comparisons\n";

using compare::Cell;
using compare::CellResult;
using compare::Comparison;
using compare::Results;
using compare::Row;

int CompareFail(const absl::Status& s) {
  std::cerr << "blklab compare: " << s.message() << "\n";
  return 1;
}

int UsageError(const std::string& what) {
  std::cerr << "blklab compare: " << what << "\n" << kUsage;
  return 2;
}

// Runs every cell on `jobs` threads; results land at the cell's index, so
// the output does not depend on the order they finish in.
absl::Status RunCells(const Comparison& c, const compare::Inputs& inputs, int jobs, Results& res) {
  res.results.assign(res.cells.size(), CellResult{});
  std::vector<absl::Status> status(res.cells.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  const bool progress = isatty(STDERR_FILENO) == 1;
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < res.cells.size(); i = next.fetch_add(1)) {
      absl::StatusOr<CellResult> r = compare::RunCell(c, res.cells[i], inputs);
      if (r.ok()) {
        res.results[i] = *std::move(r);
      } else {
        status[i] = r.status();
      }
      const size_t n = done.fetch_add(1) + 1;
      if (progress) std::cerr << absl::StrFormat("\rblklab compare: %d/%d cells", n, res.cells.size()) << std::flush;
    }
  };
  std::vector<std::thread> threads;
  const size_t n_threads = std::min<size_t>(static_cast<size_t>(jobs), res.cells.size());
  for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (progress) std::cerr << "\n";
  for (size_t i = 0; i < res.cells.size(); ++i) {
    if (status[i].ok()) continue;
    return absl::Status(status[i].code(), absl::StrCat(compare::CellLabel(c, res.cells[i]), ": ", status[i].message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WritePlotFiles(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--plot=", dir, ": cannot create the directory: ", ec.message()));
  for (const auto& [name, text] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    if (absl::Status s = util::WriteStringToFile(path, text, "--plot"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<CompareCommandLine> SplitCompareArgs(const std::vector<std::string>& args) {
  CompareCommandLine out;
  out.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool fio_part = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (fio_part || a == "--") {
      fio_part = true;
      out.comparison_args.push_back(a);
      continue;
    }
    auto value_of = [&](const std::string& flag, std::string* v) { return compare::FlagValue(args, i, flag, v); };
    std::string v;
    absl::StatusOr<bool> m;
    if (a == "--dry-run") {
      out.dry_run = true;
    } else if (a == "--help" || a == "-h") {
      out.help = true;
    } else if (m = value_of("--jobs", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (!absl::SimpleAtoi(v, &out.jobs) || out.jobs < 1 || out.jobs > 256) {
        return absl::InvalidArgumentError("--jobs: expected 1..256, got " + v);
      }
    } else if (m = value_of("--format", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      BLKLAB_ASSIGN_OR_RETURN(out.format, compare::ParseFormat(v));
    } else if (m = value_of("--plot", &v); !m.ok() || *m) {
      if (!m.ok() || v.empty()) return compare::UsageError("--plot needs a directory");
      out.plot_dir = v;
    } else {
      out.comparison_args.push_back(a);
    }
  }
  return out;
}

compare::Inputs LocalCompareInputs() { return compare::Inputs{LocalFileReader(), EnvironmentLookup()}; }

const char* CompareUsage() { return kUsage; }

int RunCompareCommand(const std::vector<std::string>& args) {
  absl::StatusOr<CompareCommandLine> line = SplitCompareArgs(args);
  if (!line.ok()) {
    return compare::IsUsageError(line.status()) ? UsageError(std::string(line.status().message()))
                                                : CompareFail(line.status());
  }
  if (line->help) {
    std::cout << kUsage;
    return 0;
  }
  const compare::Inputs inputs = LocalCompareInputs();
  absl::StatusOr<Comparison> parsed = compare::ParseComparison(line->comparison_args, inputs, DefaultHostArg());
  if (!parsed.ok()) {
    return compare::IsUsageError(parsed.status()) ? UsageError(std::string(parsed.status().message()))
                                                  : CompareFail(parsed.status());
  }
  Comparison& c = *parsed;
  if (line->dry_run) {
    absl::StatusOr<std::string> text = compare::DryRunText(c, inputs);
    if (!text.ok()) return CompareFail(text.status());
    std::cout << *text << std::flush;
    return 0;
  }
  Results res;
  res.cells = compare::Cells(c);
  c.collect_stacks = !line->plot_dir.empty();
  if (absl::Status s = RunCells(c, inputs, line->jobs, res); !s.ok()) return CompareFail(s);
  compare::Summarize(c, res);
  if (!line->plot_dir.empty()) {
    if (absl::Status s = WritePlotFiles(line->plot_dir, compare::PlotFiles(compare::PlotInputFor(c, res))); !s.ok()) return CompareFail(s);
  }
  std::cout << compare::Render(c, res, line->format) << std::flush;
  return std::cout ? 0 : 1;
}

}  // namespace blklab::cli
