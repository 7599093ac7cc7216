// `blklab --server ADDR ...`: dispatch, and the hosts / jobs / health
// commands (fio is in remote_fio.cc).
#include "clients/cli/remote.h"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "clients/cli/remote_client.h"
#include "clients/cli/remote_compare.h"
#include "clients/cli/remote_fio.h"

namespace blklab::cli {
namespace {

// Rows printed as columns separated by two spaces, the first row a header.
void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

std::string Time(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(t.seconds()), absl::UTCTimeZone());
}

std::string Seconds(const google::protobuf::Duration& d) {
  return absl::StrFormat("%.3fs", static_cast<double>(d.seconds()) + d.nanos() / 1e9);
}

std::string Target(const v1::Job& j) {
  switch (j.target_case()) {
    case v1::Job::kHost:
      return j.host();
    case v1::Job::kPreset:
      return "preset:" + j.preset();
    case v1::Job::kHostSpec:
      return "inline:" + (j.host_spec().name().empty() ? std::string("-") : j.host_spec().name());
    default:
      return "-";
  }
}

std::string Progress(const v1::Job& j) {
  if (j.state() == v1::Job::SUCCEEDED) return "100.0%";
  if (j.state() != v1::Job::RUNNING) return "-";
  return absl::StrFormat("%.1f%%", 100.0 * j.progress_fraction());
}

// Splits `args` into positional arguments and --key[=value] flags.
struct Parsed {
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;
  bool json = false;
};
Parsed ParseArgs(const std::vector<std::string>& args) {
  Parsed p;
  for (const std::string& a : args) {
    if (a == "--json") {
      p.json = true;
    } else if (absl::StartsWith(a, "--")) {
      const size_t eq = a.find('=');
      p.flags[a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
          eq == std::string::npos ? "" : a.substr(eq + 1);
    } else {
      p.positional.push_back(a);
    }
  }
  return p;
}

int Usage(const std::string& what) {
  std::cerr << "usage: blklab --server ADDR " << what << "\n";
  return kUsageExit;
}

int UnknownFlags(const std::string& cmd, const Parsed& p, std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : p.flags) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      std::cerr << "blklab " << cmd << ": unknown option --" << k << "\n";
      return kUsageExit;
    }
  }
  return 0;
}

std::vector<std::string> HostRow(const v1::Host& h) {
  std::vector<std::string> devices;
  for (const auto& d : h.spec().devices()) devices.push_back(d.name());
  return {h.name(), absl::StrCat(h.spec().cpus().count()), absl::StrJoin(devices, ","), Time(h.update_time()),
          h.spec().description()};
}
const std::vector<std::string> kHostHeader = {"NAME", "CPUS", "DEVICES", "UPDATED", "DESCRIPTION"};

// Every item of a paged List call: `fetch(token, &page)` gets the page
// after `token` ("" for the first). The items of all pages are appended to
// `*all`, whose next_page_token stays empty.
template <typename Response, typename Fetch>
grpc::Status ListAll(Fetch fetch, Response* all) {
  std::string token;
  do {
    Response page;
    if (grpc::Status s = fetch(token, &page); !s.ok()) return s;
    token = page.next_page_token();
    page.clear_next_page_token();
    all->MergeFrom(page);
  } while (!token.empty());
  return grpc::Status::OK;
}

int Hosts(RemoteClient& c, const std::vector<std::string>& args) {
  const std::string usage = "hosts list | get NAME | create NAME FILE | delete NAME | presets  [--json]";
  const Parsed p = ParseArgs(args);
  if (p.positional.empty()) return Usage(usage);
  if (int rc = UnknownFlags("hosts", p, {}); rc != 0) return rc;
  const std::string& sub = p.positional[0];
  const std::string prefix = "blklab hosts " + sub;
  if (sub == "list" && p.positional.size() == 1) {
    v1::ListHostsResponse all;
    grpc::Status s = ListAll(
        [&](const std::string& token, v1::ListHostsResponse* page) {
          v1::ListHostsRequest req;
          req.set_page_token(token);
          return c.hosts().ListHosts(c.NewContext().get(), req, page);
        },
        &all);
    if (!s.ok()) return ReportStatus(prefix, s);
    if (p.json) {
      std::cout << ToJson(all);
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {kHostHeader};
    for (const v1::Host& h : all.hosts()) rows.push_back(HostRow(h));
    PrintTable(rows);
    return 0;
  }
  if (sub == "get" && p.positional.size() == 2) {
    v1::GetHostRequest req;
    req.set_name(ResourceName("hosts", p.positional[1]));
    v1::Host h;
    grpc::Status s = c.hosts().GetHost(c.NewContext().get(), req, &h);
    if (!s.ok()) return ReportStatus(prefix, s);
    if (p.json) {
      std::cout << ToJson(h);
      return 0;
    }
    std::vector<std::string> row = HostRow(h);
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < row.size(); ++i) rows.push_back({kHostHeader[i], row[i]});
    rows.push_back({"CREATED", Time(h.create_time())});
    rows.push_back({"ETAG", h.etag()});
    PrintTable(rows);
    return 0;
  }
  if (sub == "create" && p.positional.size() == 3) {
    std::ifstream in(p.positional[2], std::ios::binary);
    if (!in) {
      std::cerr << prefix << ": cannot read " << p.positional[2] << "\n";
      return static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT);
    }
    std::ostringstream text;
    text << in.rdbuf();
    v1::CreateHostRequest req;
    req.set_host_id(ResourceId("hosts", p.positional[1]));
    req.set_spec_text(text.str());
    v1::Host h;
    grpc::Status s = c.hosts().CreateHost(c.NewContext().get(), req, &h);
    if (!s.ok()) return ReportStatus(prefix, s);
    if (p.json) {
      std::cout << ToJson(h);
    } else {
      PrintTable({kHostHeader, HostRow(h)});
    }
    return 0;
  }
  if (sub == "delete" && p.positional.size() == 2) {
    v1::DeleteHostRequest req;
    req.set_name(ResourceName("hosts", p.positional[1]));
    google::protobuf::Empty e;
    grpc::Status s = c.hosts().DeleteHost(c.NewContext().get(), req, &e);
    if (!s.ok()) return ReportStatus(prefix, s);
    std::cout << "deleted " << req.name() << "\n";
    return 0;
  }
  if (sub == "presets" && p.positional.size() == 1) {
    v1::ListPresetsResponse resp;
    grpc::Status s = c.hosts().ListPresets(c.NewContext().get(), v1::ListPresetsRequest(), &resp);
    if (!s.ok()) return ReportStatus(prefix, s);
    if (p.json) {
      std::cout << ToJson(resp);
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {{"NAME", "CPUS", "DESCRIPTION"}};
    for (const v1::Preset& pr : resp.presets()) {
      rows.push_back({pr.name(), absl::StrCat(pr.spec().cpus().count()), pr.description()});
    }
    PrintTable(rows);
    return 0;
  }
  return Usage(usage);
}

// What the job runs: its fio arguments, or the comparison cell it is.
std::string Workload(const v1::Job& j) {
  if (j.has_comparison_cell()) return j.comparison_cell().comparison() + " " + j.comparison_cell().label();
  return absl::StrJoin(j.fio().args(), " ");
}

std::vector<std::string> JobRow(const v1::Job& j) {
  return {j.name(), v1::Job::State_Name(j.state()), Target(j), Progress(j), Time(j.create_time()),
          j.has_wall_time() ? Seconds(j.wall_time()) : "-", Workload(j)};
}
const std::vector<std::string> kJobHeader = {"NAME", "STATE", "TARGET", "PROGRESS", "CREATED", "WALL", "ARGS"};

// `jobs get`'s table: the list's columns, then the job's files, seed,
// times, error and results.
std::vector<std::vector<std::string>> JobDetailRows(const v1::Job& j) {
  std::vector<std::string> row = JobRow(j);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < row.size(); ++i) rows.push_back({kJobHeader[i], row[i]});
  std::vector<std::string> files;
  for (const auto& [k, v] : j.fio().files()) files.push_back(k);
  std::sort(files.begin(), files.end());
  rows.push_back({"FILES", absl::StrJoin(files, ",")});
  rows.push_back({"SEED", absl::StrCat(j.seed())});
  rows.push_back({"STARTED", Time(j.start_time())});
  rows.push_back({"ENDED", Time(j.end_time())});
  if (j.has_error()) {
    rows.push_back({"ERROR", absl::StrCat(StatusCodeName(j.error().code()), ": ", j.error().message())});
  }
  if (j.has_result()) {
    const v1::JobResult& r = j.result();
    rows.push_back({"VIRTUAL_TIME", Seconds(r.virtual_time())});
    rows.push_back({"TOTAL_IOS", absl::StrCat(r.total_ios())});
    rows.push_back({"SYS%", absl::StrFormat("%.2f", r.sys_pct())});
    rows.push_back({"CONTENTION%", absl::StrFormat("%.2f", r.contention_pct())});
    for (const v1::JobStats& js : r.jobs()) {
      rows.push_back({"JOB " + js.job_name(),
                      absl::StrFormat("read %.0f IOPS %d B/s, write %.0f IOPS %d B/s", js.read().iops(),
                                      js.read().bw_bytes_per_sec(), js.write().iops(),
                                      js.write().bw_bytes_per_sec())});
    }
  }
  return rows;
}

int Jobs(RemoteClient& c, const std::vector<std::string>& args) {
  const std::string usage =
      "jobs list [--state=S] [--host=H] | get ID [--fio=normal|json|terse] | cancel ID | watch ID | delete ID  "
      "[--json]";
  const Parsed p = ParseArgs(args);
  if (p.positional.empty()) return Usage(usage);
  const std::string& sub = p.positional[0];
  const std::string prefix = "blklab jobs " + sub;
  if (sub == "list" && p.positional.size() == 1) {
    if (int rc = UnknownFlags("jobs list", p, {"state", "host"}); rc != 0) return rc;
    std::vector<std::string> terms;
    if (auto it = p.flags.find("state"); it != p.flags.end()) terms.push_back("state = " + it->second);
    if (auto it = p.flags.find("host"); it != p.flags.end()) {
      terms.push_back("host = \"" + ResourceName("hosts", it->second) + "\"");
    }
    v1::ListJobsResponse all;
    grpc::Status s = ListAll(
        [&](const std::string& token, v1::ListJobsResponse* page) {
          v1::ListJobsRequest req;
          req.set_filter(absl::StrJoin(terms, " AND "));
          req.set_page_token(token);
          req.set_page_size(1000);
          return c.jobs().ListJobs(c.NewContext().get(), req, page);
        },
        &all);
    if (!s.ok()) return ReportStatus(prefix, s);
    if (p.json) {
      std::cout << ToJson(all);
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {kJobHeader};
    for (const v1::Job& j : all.jobs()) rows.push_back(JobRow(j));
    PrintTable(rows);
    return 0;
  }
  if (p.positional.size() != 2) return Usage(usage);
  const std::string name = ResourceName("jobs", p.positional[1]);
  if (sub == "get") {
    if (int rc = UnknownFlags("jobs get", p, {"fio"}); rc != 0) return rc;
    v1::GetJobRequest req;
    req.set_name(name);
    req.set_view(v1::JOB_VIEW_FULL);
    v1::Job j;
    grpc::Status s = c.jobs().GetJob(c.NewContext().get(), req, &j);
    if (!s.ok()) return ReportStatus(prefix, s);
    if (auto it = p.flags.find("fio"); it != p.flags.end()) {
      const std::string& format = it->second;
      if (format != "json" && format != "normal" && format != "terse") return Usage(usage);
      const v1::JobResult& r = j.result();
      const std::string& text = format == "json" ? r.fio_json() : format == "terse" ? r.fio_terse() : r.fio_normal();
      if (j.state() == v1::Job::SUCCEEDED) {
        std::cout << text;
        return 0;
      }
      // A job stopped early (CANCELLED, or FAILED at a limit) may keep the
      // report of what ran: printed, then its state (stderr) and exit value.
      if (j.has_result()) std::cout << text << std::flush;
      return JobExit(prefix, j);
    }
    if (p.json) {
      std::cout << ToJson(j);
      return 0;
    }
    PrintTable(JobDetailRows(j));
    return 0;
  }
  if (int rc = UnknownFlags("jobs " + sub, p, {}); rc != 0) return rc;
  if (sub == "cancel") {
    v1::CancelJobRequest req;
    req.set_name(name);
    v1::Job j;
    grpc::Status s = c.jobs().CancelJob(c.NewContext().get(), req, &j);
    if (!s.ok()) return ReportStatus(prefix, s);
    if (p.json) {
      std::cout << ToJson(j);
    } else {
      PrintTable({kJobHeader, JobRow(j)});
    }
    return 0;
  }
  if (sub == "delete") {
    v1::DeleteJobRequest req;
    req.set_name(name);
    google::protobuf::Empty e;
    grpc::Status s = c.jobs().DeleteJob(c.NewContext().get(), req, &e);
    if (!s.ok()) return ReportStatus(prefix, s);
    std::cout << "deleted " << name << "\n";
    return 0;
  }
  if (sub == "watch") {
    // A terminal gets fio's progress line; otherwise one line of text per
    // interval, or with --json one JSON snapshot per line. Then the final
    // state (or the whole job).
    const bool tty = isatty(STDOUT_FILENO) == 1;
    RemoteProgress progress(std::cout, 0);
    const bool show_progress = tty && !p.json;
    v1::Job final_job;
    grpc::Status s = WatchToEnd(c, name, show_progress ? &progress : nullptr, show_progress ? nullptr : &std::cout,
                                &final_job, p.json ? SnapshotLines::kJson : SnapshotLines::kText);
    progress.Clear();
    if (!s.ok()) return ReportStatus(prefix, s);
    if (p.json) {
      std::cout << ToJson(final_job, /*indent=*/false);
    } else {
      PrintTable({kJobHeader, JobRow(final_job)});
    }
    return JobExit(prefix, final_job);
  }
  return Usage(usage);
}

int Health(RemoteClient& c, const std::vector<std::string>& args) {
  if (args.size() > 1) return Usage("health [SERVICE]");
  absl::StatusOr<int> st = c.HealthCheck(args.empty() ? "" : args[0]);
  if (!st.ok()) {
    return ReportStatus("blklab health", grpc::Status(static_cast<grpc::StatusCode>(st.status().code()),
                                                      std::string(st.status().message())));
  }
  static const char* const kNames[] = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};
  std::cout << (*st >= 0 && *st <= 3 ? kNames[*st] : "UNKNOWN") << "\n";
  return *st == 1 ? 0 : static_cast<int>(grpc::StatusCode::UNAVAILABLE);
}

}  // namespace

int RunRemoteCommand(const RemoteOptions& options, const std::string& command,
                     const std::vector<std::string>& args) {
  absl::StatusOr<std::unique_ptr<RemoteClient>> client = RemoteClient::Create(options);
  if (!client.ok()) {
    std::cerr << "blklab: " << client.status().message() << "\n";
    return kUsageExit;
  }
  if (command == "fio") return RunRemoteFio(**client, args);
  if (command == "hosts") return Hosts(**client, args);
  if (command == "jobs") return Jobs(**client, args);
  if (command == "health") return Health(**client, args);
  if (command == "compare") return RunRemoteCompare(**client, args);
  if (command == "comparisons") return RunRemoteComparisons(**client, args);
  std::cerr << "blklab: unknown command '" << command
            << "' (with --server: fio, compare, comparisons, hosts, jobs, health)\n";
  return kUsageExit;
}

}  // namespace blklab::cli
