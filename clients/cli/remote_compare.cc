#include "clients/cli/remote_compare.h"

#include <unistd.h>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "blklab/v1/service.grpc.pb.h"
#include "clients/cli/compare_command.h"
#include "clients/cli/host_arg.h"
#include "clients/cli/run_signals.h"
#include "compare/compare.h"

namespace blklab::cli {

namespace {

constexpr char kComparePrefix[] = "blklab compare";

// Whether the arguments name their host (--host, --fleet, or a spec file
// that must).
bool NamesHost(const std::vector<std::string>& args) {
  static const char* const kValueFlags[] = {"--variant", "--matrix", "--baseline", "--samples", "--seed"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return false;
    if (absl::StartsWith(a, "--host") || absl::StartsWith(a, "--fleet")) return true;
    bool flag = false;
    for (const char* f : kValueFlags) {
      std::string v;
      absl::StatusOr<bool> m = compare::FlagValue(args, i, f, &v);
      if (m.ok() && *m) {
        flag = true;
        break;
      }
    }
    if (!flag && !absl::StartsWith(a, "-")) return true;  // a spec file
  }
  return false;
}

// As the in-process command: usage errors exit 2 with the usage.
int RemoteCompareFail(const absl::Status& s) {
  std::cerr << kComparePrefix << ": " << s.message() << "\n";
  if (compare::IsUsageError(s)) {
    std::cerr << CompareUsage();
    return kUsageExit;
  }
  return 1;
}

// The comparison's pictures (GetComparisonOutput "charts") into `dir`, as
// `--plot=DIR` writes them in-process. 0, or the exit code after the error.
int WriteCharts(RemoteClient& client, v1::ComparisonService::Stub& stub, const std::string& name,
                const std::string& dir, const char* prefix) {
  v1::GetComparisonOutputRequest req;
  req.set_name(name);
  req.set_format("charts");
  v1::ComparisonOutput files;
  std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(120);
  if (const grpc::Status s = stub.GetComparisonOutput(ctx.get(), req, &files); !s.ok()) return ReportStatus(prefix, s);
  std::vector<std::pair<std::string, std::string>> plots;
  for (const v1::ComparisonOutput::File& f : files.files()) {
    // The server names the files; none may leave the directory.
    if (f.name().empty() || f.name().find('/') != std::string::npos || f.name().front() == '.') {
      std::cerr << prefix << ": the server sent a chart named \"" << f.name() << "\": refused\n";
      return 1;
    }
    plots.emplace_back(f.name(), f.content());
  }
  if (absl::Status s = WritePlotFiles(dir, plots); !s.ok()) {
    std::cerr << prefix << ": " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int RunRemoteCompare(RemoteClient& client, const std::vector<std::string>& args) {
  absl::StatusOr<CompareCommandLine> line = SplitCompareArgs(args);
  if (!line.ok()) return RemoteCompareFail(line.status());
  if (line->help) {
    std::cout << CompareUsage();
    return 0;
  }
  // Parse here, recording what is read.
  v1::ComparisonBundle bundle;
  const compare::Inputs local = LocalCompareInputs();
  compare::Inputs recording;
  recording.read_file = [&](const std::string& path) -> absl::StatusOr<std::string> {
    absl::StatusOr<std::string> text = local.read_file(path);
    if (text.ok()) (*bundle.mutable_files())[path] = *text;
    return text;
  };
  recording.lookup_var = [&](const std::string& name) -> std::optional<std::string> {
    std::optional<std::string> v = local.lookup_var(name);
    if (v) (*bundle.mutable_variables())[name] = *v;
    return v;
  };
  std::vector<std::string> comparison_args = line->comparison_args;
  if (!NamesHost(comparison_args)) comparison_args.insert(comparison_args.begin(), "--host=" + DefaultHostArg());
  absl::StatusOr<compare::Comparison> c = compare::ParseComparison(comparison_args, recording, DefaultHostArg());
  if (!c.ok()) return RemoteCompareFail(c.status());
  if (c->tool != compare::Tool::kFio) {
    // What the server would refuse is refused here, before anything is sent.
    return RemoteCompareFail(absl::UnimplementedError(
        "blklabd runs fio comparisons only; run t/io_uring comparisons without --server"));
  }
  if (line->dry_run) {
    absl::StatusOr<std::string> text = compare::DryRunText(*c, recording);
    if (!text.ok()) return RemoteCompareFail(text.status());
    std::cout << *text << std::flush;
    return 0;
  }
  // Every cell's job files and variables (a fio.* setting may change what
  // a job file includes).
  for (const compare::Cell& cell : compare::Cells(*c)) {
    if (absl::Status s = compare::PrepareCell(*c, cell, recording).status(); !s.ok()) {
      return RemoteCompareFail(absl::Status(s.code(), compare::CellLabel(*c, cell) + ": " + std::string(s.message())));
    }
  }
  for (const std::string& a : comparison_args) bundle.add_args(a);
  // --plot: the cells record their call stacks (the flame graphs), and the
  // server draws the same files as the in-process command.
  bundle.set_collect_stacks(!line->plot_dir.empty());

  std::unique_ptr<v1::ComparisonService::Stub> stub = v1::ComparisonService::NewStub(client.channel());
  v1::CreateComparisonRequest create;
  *create.mutable_bundle() = std::move(bundle);
  v1::Comparison created;
  {
    std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(120);
    const grpc::Status s = stub->CreateComparison(ctx.get(), create, &created);
    if (!s.ok()) return ReportStatus(kComparePrefix, s);
  }
  TerminationSignals interrupt_handler;
  const bool progress = isatty(STDERR_FILENO) == 1;
  v1::Comparison last = created;
  {
    std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(0);
    // Ctrl-C: the first cancels the comparison on the server (the watch
    // then ends with it CANCELLED), a second stops waiting.
    InterruptWatcher interrupts(
        [&] {
          std::cerr << "\n" << kComparePrefix << ": interrupted: cancelling " << created.name() << "\n";
          v1::CancelComparisonRequest req;
          req.set_name(created.name());
          v1::Comparison ignored;
          std::unique_ptr<grpc::ClientContext> cctx = client.NewContext(10);
          const grpc::Status s = stub->CancelComparison(cctx.get(), req, &ignored);
          if (!s.ok()) ReportStatus("blklab: cancel", s);
        },
        [&] { ctx->TryCancel(); });
    v1::WatchComparisonRequest watch;
    watch.set_name(created.name());
    std::unique_ptr<grpc::ClientReader<v1::Comparison>> reader = stub->WatchComparison(ctx.get(), watch);
    v1::Comparison snap;
    while (reader->Read(&snap)) {
      last = snap;
      if (progress) {
        std::cerr << absl::StrFormat("\r%s: %d/%d cells (%s)", kComparePrefix, snap.cells_done(), snap.cell_count(),
                                     created.name())
                  << std::flush;
      }
    }
    const grpc::Status s = reader->Finish();
    if (progress) std::cerr << "\n";
    if (!s.ok()) return ReportStatus(kComparePrefix, s);
  }
  if (last.state() != v1::Comparison::SUCCEEDED) {
    std::cerr << kComparePrefix << ": " << created.name() << " " << v1::Comparison::State_Name(last.state())
              << (last.error().empty() ? "" : ": " + last.error()) << "\n";
    return 1;
  }
  v1::GetComparisonOutputRequest get;
  get.set_name(created.name());
  static const char* const kFormats[] = {"table", "markdown", "csv", "json"};
  get.set_format(kFormats[static_cast<int>(line->format)]);
  if (!line->plot_dir.empty()) {
    if (const int rc = WriteCharts(client, *stub, created.name(), line->plot_dir, kComparePrefix); rc != 0) return rc;
  }
  v1::ComparisonOutput out;
  std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(120);
  const grpc::Status s = stub->GetComparisonOutput(ctx.get(), get, &out);
  if (!s.ok()) return ReportStatus(kComparePrefix, s);
  std::cout << out.text() << std::flush;
  return std::cout ? 0 : 1;
}

int RunRemoteComparisons(RemoteClient& client, const std::vector<std::string>& args) {
  constexpr char kCmd[] = "blklab comparisons";
  auto usage = [&] {
    std::cerr << "usage: blklab --server ADDR comparisons list | get ID | output ID [--format=table|markdown|csv|json | --plot=DIR]"
                 " | cancel ID | delete ID\n";
    return kUsageExit;
  };
  if (args.empty()) return usage();
  std::unique_ptr<v1::ComparisonService::Stub> stub = v1::ComparisonService::NewStub(client.channel());
  std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(60);
  const std::string& verb = args[0];
  if (verb == "list") {
    v1::ListComparisonsRequest req;
    v1::ListComparisonsResponse resp;
    const grpc::Status s = stub->ListComparisons(ctx.get(), req, &resp);
    if (!s.ok()) return ReportStatus(kCmd, s);
    std::cout << absl::StrFormat("%-40s %-10s %11s  %s\n", "NAME", "STATE", "CELLS", "HOST");
    for (const v1::Comparison& c : resp.comparisons()) {
      std::cout << absl::StrFormat("%-40s %-10s %5d/%-5d  %s\n", c.name(), v1::Comparison::State_Name(c.state()),
                                   c.cells_done(), c.cell_count(), c.host());
    }
    return 0;
  }
  if (args.size() < 2) return usage();
  const std::string name = ResourceName("comparisons", args[1]);
  if (verb == "get") {
    v1::GetComparisonRequest req;
    req.set_name(name);
    v1::Comparison c;
    const grpc::Status s = stub->GetComparison(ctx.get(), req, &c);
    if (!s.ok()) return ReportStatus(kCmd, s);
    std::cout << ToJson(c) << "\n";
    return 0;
  }
  if (verb == "output") {
    v1::GetComparisonOutputRequest req;
    req.set_name(name);
    if (args.size() > 2) {
      if (absl::StartsWith(args[2], "--plot=") && args[2].size() > 7) {
        return WriteCharts(client, *stub, name, args[2].substr(7), kCmd);
      }
      if (!absl::StartsWith(args[2], "--format=")) return usage();
      req.set_format(args[2].substr(9));
    }
    v1::ComparisonOutput out;
    const grpc::Status s = stub->GetComparisonOutput(ctx.get(), req, &out);
    if (!s.ok()) return ReportStatus(kCmd, s);
    std::cout << out.text() << std::flush;
    return 0;
  }
  if (verb == "cancel") {
    v1::CancelComparisonRequest req;
    req.set_name(name);
    v1::Comparison c;
    const grpc::Status s = stub->CancelComparison(ctx.get(), req, &c);
    if (!s.ok()) return ReportStatus(kCmd, s);
    std::cout << c.name() << " " << v1::Comparison::State_Name(c.state()) << "\n";
    return 0;
  }
  if (verb == "delete") {
    v1::DeleteComparisonRequest req;
    req.set_name(name);
    google::protobuf::Empty e;
    const grpc::Status s = stub->DeleteComparison(ctx.get(), req, &e);
    if (!s.ok()) return ReportStatus(kCmd, s);
    return 0;
  }
  return usage();
}

}  // namespace blklab::cli
