#include "clients/cli/remote_fio.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "clients/cli/fio_command.h"
#include "clients/cli/host_arg.h"
#include "clients/cli/run_signals.h"
#include "engine/engine.h"
#include "engine/util/file.h"
#include "engine/util/status_macros.h"
#include "engine/host/presets.h"
#include "engine/report/flame_graph.h"
#include "engine/report/num2str.h"
#include "google/protobuf/util/json_util.h"
#include "server/status_convert.h"

namespace blklab::cli {
namespace {

constexpr char kFioPrefix[] = "blklab fio";

int Exit(grpc::StatusCode code, const std::string& message) {
  std::cerr << kFioPrefix << ": " << message << "\n";
  return static_cast<int>(code);
}

int64_t Ns(const google::protobuf::Duration& d) { return d.seconds() * 1000000000 + d.nanos(); }

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// A bundle file name ([A-Za-z0-9._-]{1,128}) for a local path.
std::string BundleBaseName(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  for (char& c : base) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  }
  if (base.size() > 120) base = base.substr(base.size() - 120);
  if (base.empty() || base == "." || base == "..") base = "job.fio";
  return base;
}

// Files read while parsing locally, in reading order.
struct ReadLog {
  std::vector<std::string> order;
  std::map<std::string, std::string> text;
  std::map<std::string, std::string> vars;
};

// Rewrites `include X` lines of `text` (read from local `path`) to the
// bundle names of the files the engine's include lookup finds: X itself,
// then X next to the including file.
std::string RewriteIncludes(const std::string& text, const std::string& path,
                            const std::map<std::string, std::string>& names) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  for (std::string& line : lines) {
    std::string t(absl::StripAsciiWhitespace(line));
    const size_t cut = t.find_first_of(";#");
    if (cut != std::string::npos) t = std::string(absl::StripAsciiWhitespace(t.substr(0, cut)));
    if (!(absl::StartsWith(t, "include") && t.size() > 8 && absl::ascii_isspace(static_cast<unsigned char>(t[7])))) {
      continue;
    }
    const std::string inc(absl::StripAsciiWhitespace(t.substr(8)));
    std::vector<std::string> candidates = {inc};
    if (!inc.empty() && inc[0] != '/' && !DirName(path).empty()) candidates.push_back(DirName(path) + inc);
    for (const std::string& c : candidates) {
      auto it = names.find(c);
      if (it != names.end()) {
        if (it->second != inc) line = "include " + it->second;
        break;
      }
    }
  }
  return absl::StrJoin(lines, "\n");
}

bool IsVariableName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  if (!(absl::ascii_isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// Whether `name`, which the server chose, is a log file the jobs' own
// options name (the job files and arguments of this command line, parsed
// here), as fio names them (engine/stats/job_log.cc): PREFIX_TYPE.N.log or
// PREFIX_TYPE.log for each write_*_log (PREFIX its value, else the job's
// name), or write_iolog's file. Only these are written, wherever they
// point, as the in-process run writes them.
bool IsOwnLogName(const std::string& name, const workload::ParsedJobs& jobs) {
  for (const workload::JobSpec& j : jobs.jobs) {
    if (!j.write_iolog.empty() && name == j.write_iolog) return true;
    const std::pair<const workload::LogSpec*, std::vector<absl::string_view>> logs[] = {
        {&j.write_bw_log, {"bw"}},
        {&j.write_iops_log, {"iops"}},
        {&j.write_lat_log, {"lat", "slat", "clat"}},
        {&j.write_hist_log, {"clat_hist"}}};
    for (const auto& [spec, types] : logs) {
      if (!spec->enabled) continue;
      absl::string_view rest = name;
      if (!absl::ConsumePrefix(&rest, (spec->prefix.empty() ? j.name : spec->prefix) + "_") ||
          !absl::ConsumeSuffix(&rest, ".log")) {
        continue;
      }
      // TYPE, or TYPE.N with per_job_logs (N: the thread's number).
      if (const size_t dot = rest.find('.'); dot != absl::string_view::npos) {
        const absl::string_view n = rest.substr(dot + 1);
        if (n.empty() || !std::all_of(n.begin(), n.end(), [](char c) { return absl::ascii_isdigit(c); })) continue;
        rest = rest.substr(0, dot);
      }
      if (std::find(types.begin(), types.end(), rest) != types.end()) return true;
    }
  }
  return false;
}

// A log file the CLI writes: created or truncated, a regular file, never
// through a symbolic link as its last component (O_NOFOLLOW).
class LogFileWriter {
 public:
  LogFileWriter() = default;
  ~LogFileWriter() { (void)Close(); }
  LogFileWriter(const LogFileWriter&) = delete;
  LogFileWriter& operator=(const LogFileWriter&) = delete;

  absl::Status Open(const std::string& path) {
    BLKLAB_RETURN_IF_ERROR(Close());
    path_ = path;
    // O_NONBLOCK: a FIFO of that name fails at once rather than hang.
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
    if (fd_ < 0) return Error(errno == ELOOP ? "it is a symbolic link (not followed)" : std::strerror(errno));
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fd_ = -1;
      return Error("not a regular file");
    }
    return absl::OkStatus();
  }
  absl::Status Write(absl::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error(std::strerror(errno));
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }
  absl::Status Close() {
    if (fd_ < 0) return absl::OkStatus();
    const int r = ::close(fd_);
    fd_ = -1;
    return r == 0 ? absl::OkStatus() : Error(std::strerror(errno));
  }

 private:
  absl::Status Error(absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat("cannot write log file ", path_, ": ", why));
  }

  std::string path_;
  int fd_ = -1;
};

// Reads `artifacts` of job `name` with ReadJobArtifacts, handing each chunk's
// data to on_data(index into artifacts, data) in order; checks that the
// artifacts come in the order asked, each whole, with contiguous offsets.
// *sizes: the bytes received per artifact.
absl::Status ReadArtifacts(RemoteClient& client, const std::string& name, const std::vector<std::string>& artifacts,
                           const std::function<absl::Status(int, const std::string&)>& on_data,
                           std::vector<int64_t>* sizes) {
  sizes->assign(artifacts.size(), 0);
  if (artifacts.empty()) return absl::OkStatus();
  v1::ReadJobArtifactsRequest req;
  req.set_name(name);
  for (const std::string& a : artifacts) req.add_artifacts(a);
  std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(3600);
  std::unique_ptr<grpc::ClientReader<v1::ArtifactChunk>> reader = client.jobs().ReadJobArtifacts(ctx.get(), req);
  v1::ArtifactChunk chunk;
  int index = -1;
  while (reader->Read(&chunk)) {
    if (index < 0 || chunk.artifact() != artifacts[index]) {
      if (++index >= static_cast<int>(artifacts.size()) || chunk.artifact() != artifacts[index]) {
        return absl::DataLossError(
            absl::StrCat("the server sent artifact '", chunk.artifact().substr(0, 200), "' out of order"));
      }
    }
    if (chunk.offset() != (*sizes)[index]) {
      return absl::DataLossError(absl::StrCat(artifacts[index], ": chunk at offset ", chunk.offset(), " where ",
                                              (*sizes)[index], " was expected"));
    }
    BLKLAB_RETURN_IF_ERROR(on_data(index, chunk.data()));
    (*sizes)[index] += static_cast<int64_t>(chunk.data().size());
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return server::ToAbslStatus(status);
  if (index + 1 != static_cast<int>(artifacts.size())) {
    return absl::DataLossError(absl::StrCat("the server sent ", index + 1, " of ", artifacts.size(), " artifacts"));
  }
  return absl::OkStatus();
}

// fio's log files of the result (JobResult.logs lists names and sizes)
// that this command line's options name (`jobs`, as parsed here; null: the
// parse failed, none), read in chunks with ReadJobArtifacts and written as
// the local run writes them, each as its chunks arrive, never held whole.
// Any other name the server returned is not asked for, and a warning on
// stderr names it. Returns the first error, like the local run.
absl::Status WriteResultLogs(RemoteClient& client, const v1::Job& job, const workload::ParsedJobs* jobs) {
  const v1::JobResult& result = job.result();
  std::vector<const v1::LogFile*> own;
  for (const v1::LogFile& f : result.logs()) {
    if (jobs != nullptr && IsOwnLogName(f.name(), *jobs)) {
      own.push_back(&f);
      continue;
    }
    std::cerr << kFioPrefix << ": warning: the server returned a log file named \""
              << absl::CHexEscape(f.name().substr(0, 200))
              << "\", which no write_*_log or write_iolog option of this command line names: not written\n";
  }
  std::vector<std::string> artifacts;
  for (const v1::LogFile* f : own) artifacts.push_back(absl::StrCat("logs/", f->name()));
  LogFileWriter out;
  int open_index = -1;
  std::vector<int64_t> sizes;
  BLKLAB_RETURN_IF_ERROR(ReadArtifacts(
      client, job.name(), artifacts,
      [&](int index, const std::string& data) -> absl::Status {
        if (index != open_index) {
          BLKLAB_RETURN_IF_ERROR(out.Open(own[static_cast<size_t>(index)]->name()));
          open_index = index;
        }
        return out.Write(data);
      },
      &sizes));
  BLKLAB_RETURN_IF_ERROR(out.Close());
  for (size_t i = 0; i < own.size(); ++i) {
    if (sizes[i] != own[i]->size_bytes()) {
      return absl::DataLossError(
          absl::StrCat("log file ", own[i]->name(), ": received ", sizes[i], " of ", own[i]->size_bytes(), " bytes"));
    }
  }
  return absl::OkStatus();
}

// The run's call stacks (ReadJobArtifacts "stacks.folded"), written as the
// in-process run writes them: the folded text and the flame graph drawn
// from it locally.
absl::Status WriteStacks(RemoteClient& client, const v1::Job& job, const std::string& folded_file,
                         const std::string& flame_file) {
  std::string folded;
  if (job.result().stacks_folded_bytes() > 0) {
    std::vector<int64_t> sizes;
    BLKLAB_RETURN_IF_ERROR(ReadArtifacts(
        client, job.name(), {"stacks.folded"},
        [&folded](int, const std::string& data) {
          folded += data;
          return absl::OkStatus();
        },
        &sizes));
  }
  if (!folded_file.empty()) BLKLAB_RETURN_IF_ERROR(util::WriteStringToFile(folded_file, folded, "--folded file"));
  if (flame_file.empty()) return absl::OkStatus();
  std::vector<stats::StackRow> rows;
  for (absl::string_view line : absl::StrSplit(folded, '\n', absl::SkipEmpty())) {
    const size_t space = line.rfind(' ');
    stats::StackRow row;
    if (space == absl::string_view::npos || !absl::SimpleAtoi(line.substr(space + 1), &row.ns)) {
      return absl::DataLossError(absl::StrCat("stacks.folded: not a folded line: ", line.substr(0, 200)));
    }
    row.stack = std::string(line.substr(0, space));
    rows.push_back(std::move(row));
  }
  return util::WriteStringToFile(
      flame_file,
      report::FlameGraphSvg(rows, absl::StrCat("blklab fio on ", job.resolved_host().name(), ": simulated CPU time")),
      "--flame file");
}

}  // namespace

void RemoteProgress::Emit(std::string line) {
  const size_t len = line.size();
  if (len < last_len_) line.append(last_len_ - len, ' ');
  last_len_ = len;
  out_ << line << '\r' << std::flush;
}

void RemoteProgress::Queued(const std::string& job) {
  Emit(absl::StrCat("Jobs: 0 (f=0): [", job, " queued on the server]"));
}

void RemoteProgress::Print(const v1::Snapshot& snap) {
  const double f = std::clamp(snap.progress_fraction(), 0.0, 1.0);
  const bool r = snap.read().ios() > 0, w = snap.write().ios() > 0, t = snap.trim().ios() > 0;
  const char state = (r && w) ? 'm' : r ? 'r' : w ? 'w' : t ? 'd' : 'R';
  std::string line = clones_ > 0 ? absl::StrCat("Jobs: ", clones_, " (f=", clones_, "): [", std::string(1, state),
                                                "(", clones_, ")]")
                                 : absl::StrCat("Jobs: [", std::string(1, state), "]");
  constexpr int kBar = 20;
  const int filled = static_cast<int>(f * kBar + 0.5);
  std::string bar(kBar, ' ');
  for (int i = 0; i < filled; ++i) bar[i] = '=';
  if (filled > 0 && filled < kBar) bar[filled - 1] = '>';
  absl::StrAppend(&line, "[", bar, "]", absl::StrFormat("[%3.1f%%]", 100.0 * f));
  std::vector<std::string> bw, iops;
  const std::pair<const char*, const v1::IntervalDirection*> dirs[] = {
      {"r", &snap.read()}, {"w", &snap.write()}, {"t", &snap.trim()}};
  for (const auto& [name, d] : dirs) {
    if (d->ios() == 0) continue;
    bw.push_back(absl::StrCat(
        name, "=", report::Num2Str(d->bw_bytes_per_sec(), 4, true, report::NumUnit::kBytesPerSec)));
    iops.push_back(absl::StrCat(name, "=", report::Num2Str(static_cast<uint64_t>(d->iops()), 4, false,
                                                            report::NumUnit::kNone)));
  }
  if (!bw.empty()) absl::StrAppend(&line, "[", absl::StrJoin(bw, ","), "][", absl::StrJoin(iops, ","), " IOPS]");
  if (f > 0) {
    const int64_t vt = Ns(snap.virtual_time());
    // Rounded to the millisecond first: 1 s done at 5% is 19 s to go, not 19.000000001.
    const int64_t eta_ns = std::llround(static_cast<double>(vt) * (1.0 - f) / f / 1e6) * 1000000;
    absl::StrAppend(&line, "[eta ", FioEtaString((eta_ns + 999999999) / 1000000000), "]");
  }
  Emit(std::move(line));
}

void RemoteProgress::Clear() {
  if (last_len_ == 0) return;
  out_ << '\r' << std::string(last_len_, ' ') << '\r' << std::flush;
  last_len_ = 0;
}

std::string SnapshotText(const v1::Snapshot& snap) {
  std::string line = absl::StrFormat("t=%.3fs %s %.1f%%", static_cast<double>(Ns(snap.virtual_time())) / 1e9,
                                     v1::Job::State_Name(snap.state()), 100.0 * snap.progress_fraction());
  const std::pair<const char*, const v1::IntervalDirection*> dirs[] = {
      {"read", &snap.read()}, {"write", &snap.write()}, {"trim", &snap.trim()}};
  for (const auto& [name, d] : dirs) {
    if (d->ios() == 0) continue;
    absl::StrAppend(&line, "  ", name, ": IOPS=",
                    report::Num2Str(static_cast<uint64_t>(d->iops()), 4, false, report::NumUnit::kNone),
                    ", BW=", report::Num2Str(d->bw_bytes_per_sec(), 4, true, report::NumUnit::kBytesPerSec));
    for (const v1::Percentile& p : d->clat_percentiles()) {
      if (p.percentile() == 50 || p.percentile() == 99) {
        absl::StrAppend(&line, absl::StrFormat(", p%g=%.1fus", p.percentile(), static_cast<double>(p.value_ns()) / 1e3));
      }
    }
  }
  const v1::CpuShares& c = snap.cpu();
  absl::StrAppend(&line, absl::StrFormat("  cpu: usr=%.1f%% sys=%.1f%% irq=%.1f%% softirq=%.1f%%  contention=%.1f%%",
                                         c.usr_pct(), c.sys_pct(), c.irq_pct(), c.softirq_pct(),
                                         snap.contention_pct()));
  return line;
}

grpc::Status WatchToEnd(RemoteClient& client, const std::string& job, RemoteProgress* progress,
                        std::ostream* lines, v1::Job* final_job, SnapshotLines format) {
  std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(0);
  // Ctrl-C: the first cancels the job (the stream then ends with it
  // CANCELLED), a second stops waiting.
  std::optional<InterruptWatcher> interrupts;
  interrupts.emplace(
      [&] {
        if (progress != nullptr) progress->Clear();
        std::cerr << "blklab: interrupted: cancelling " << job << "\n";
        v1::CancelJobRequest req;
        req.set_name(job);
        v1::Job ignored;
        std::unique_ptr<grpc::ClientContext> cctx = client.NewContext(10);
        grpc::Status s = client.jobs().CancelJob(cctx.get(), req, &ignored);
        if (!s.ok()) ReportStatus("blklab: cancel", s);
      },
      [&] { ctx->TryCancel(); });
  v1::WatchJobRequest req;
  req.set_name(job);
  std::unique_ptr<grpc::ClientReader<v1::Snapshot>> reader = client.jobs().WatchJob(ctx.get(), req);
  v1::Snapshot snap;
  bool got_final = false;
  while (reader->Read(&snap)) {
    if (snap.has_final_job()) {
      *final_job = snap.final_job();
      got_final = true;
      continue;
    }
    if (progress != nullptr) progress->Print(snap);
    if (lines != nullptr) {
      if (format == SnapshotLines::kJson) {
        *lines << ToJson(snap, /*indent=*/false) << std::flush;
      } else {
        *lines << SnapshotText(snap) << "\n" << std::flush;
      }
    }
  }
  grpc::Status status = reader->Finish();
  interrupts.reset();
  if (status.ok() && !got_final) {
    status = grpc::Status(grpc::StatusCode::INTERNAL, "the watch stream ended without the job's final state");
  }
  return status;
}

int JobExit(const std::string& prefix, const v1::Job& job) {
  if (job.state() == v1::Job::SUCCEEDED) return 0;
  const v1::JobError& e = job.error();
  int code = e.code();
  if (code <= 0 || code > 16) code = job.state() == v1::Job::CANCELLED ? 1 : 2;
  std::string where;
  if (!e.file().empty()) where = absl::StrCat(" (", e.file(), e.line() > 0 ? absl::StrCat(":", e.line()) : "", ")");
  if (!e.field_path().empty() && !absl::StrContains(e.message(), e.field_path())) {
    absl::StrAppend(&where, " [", e.field_path(), "]");
  }
  // The code's name, unless the state says it already ("CANCELLED:
  // CANCELLED: ..." otherwise).
  const std::string& state = v1::Job::State_Name(job.state());
  const std::string code_name = StatusCodeName(code);
  std::cerr << prefix << ": " << job.name() << " " << state << ": "
            << (code_name == state ? std::string() : code_name + ": ") << e.message() << where << "\n";
  return code;
}

namespace {

// What the fio command line asks of this side: the output it prints and
// where, whether the job only validates, and the job files it names.
struct RemoteFioOutput {
  report::OutputFormats formats;
  bool parse_only = false;
  std::string output;
  std::string eta = "auto";
  int64_t status_interval_ns = 0;
  std::set<std::string> job_files;
};

RemoteFioOutput RemoteFioOutputOf(const absl::StatusOr<workload::FioInvocation>& pre) {
  RemoteFioOutput o;
  o.formats.normal = true;
  if (pre.ok()) {
    o.formats = SelectedFormats(*pre);
    o.output = pre->output;
    o.eta = pre->eta;
    o.parse_only = pre->parse_only;
    o.status_interval_ns = pre->status_interval_ns;
    o.job_files.insert(pre->job_files.begin(), pre->job_files.end());
  }
  return o;
}

// The arguments sent to the server: all but --output, which is written here.
std::vector<std::string> ArgsToSend(const std::vector<std::string>& args) {
  std::vector<std::string> send;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (absl::StartsWith(a, "--output=") || absl::StartsWith(a, "-output=")) continue;
    if (a == "--output" || a == "-output") {
      ++i;
      continue;
    }
    send.push_back(a);
  }
  return send;
}

// A job with blklab's options set: seed, stacks, pace, and the report's
// wall-clock fields pinned by SOURCE_DATE_EPOCH, here as locally.
v1::Job NewRemoteJob(const BlklabOptions& options) {
  v1::Job job;
  job.set_seed(options.seed);
  job.set_collect_stacks(!options.folded_file.empty() || !options.flame_file.empty());
  job.set_pace(options.realtime ? v1::Job::REALTIME : v1::Job::AS_FAST_AS_POSSIBLE);
  if (options.max_virtual_ns > 0) {
    // The server clamps it to its own --max_virtual_seconds.
    job.mutable_limits()->mutable_max_virtual_time()->set_seconds(options.max_virtual_ns / 1000000000);
    job.mutable_limits()->mutable_max_virtual_time()->set_nanos(static_cast<int32_t>(options.max_virtual_ns % 1000000000));
  }
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch != nullptr) {
    int64_t seconds = 0;
    if (absl::SimpleAtoi(epoch, &seconds) && seconds >= 0) job.mutable_report_time()->set_seconds(seconds);
  }
  return job;
}

// The host the job files are parsed against locally.
struct LocalParseHost {
  host::HostSpec spec;
  bool exact = true;  // the host the job runs on (its warnings are printed)
};

// Sets the job's host from --host: a stored host, a preset, or a spec file
// sent inline (--host=auto: set after the local parse, SetAutoHost). The
// error is what `blklab fio` exits with.
grpc::Status SetJobHost(const std::string& host_arg, bool auto_host, v1::Job& job, LocalParseHost& parse_host) {
  if (auto_host) {
    // Built below from the locally parsed job and sent inline.
    parse_host.spec = *host::GetPreset(host::kDefaultPresetName);
  } else if (absl::StartsWith(host_arg, "hosts/")) {
    job.set_host(host_arg);
    parse_host.spec = *host::GetPreset(host::kDefaultPresetName);
    parse_host.exact = false;
  } else if (absl::StatusOr<host::HostSpec> preset = host::GetPreset(host_arg); preset.ok()) {
    job.set_preset(host_arg);
    parse_host.spec = *preset;
  } else {
    absl::StatusOr<std::string> text = util::ReadFileToString(host_arg);
    if (!text.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "--host=" + host_arg + ": neither a preset, a stored host (hosts/NAME) nor a readable file (" +
                              std::string(preset.status().message()) + ")");
    }
    absl::StatusOr<host::HostSpec> spec = host::ParseHostSpec(*text);
    if (!spec.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, host_arg + ": " + std::string(spec.status().message()));
    }
    parse_host.spec = *spec;
    google::protobuf::util::JsonParseOptions jopts;
    auto js = google::protobuf::util::JsonStringToMessage(host::HostSpecToJson(*spec), job.mutable_host_spec(), jopts);
    if (!js.ok()) {
      return grpc::Status(grpc::StatusCode::INTERNAL, host_arg + ": cannot convert the spec: " + js.ToString());
    }
  }
  return grpc::Status::OK;
}

// Parses `send` locally to learn which files (and includes) and ${VAR}s the
// job reads, recording them in `log`; errors are left to the server, which
// reports them the same way.
absl::StatusOr<ParsedFio> ParseLocally(const std::vector<std::string>& send, const host::HostSpec& parse_host,
                                       ReadLog& log) {
  workload::FileReader reader = [&log](const std::string& path) -> absl::StatusOr<std::string> {
    if (auto it = log.text.find(path); it != log.text.end()) return it->second;
    absl::StatusOr<std::string> t = util::ReadFileToString(path);
    if (t.ok()) {
      log.order.push_back(path);
      log.text[path] = *t;
    }
    return t;
  };
  workload::VarLookup lookup = [&log](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    if (IsVariableName(name)) log.vars[name] = v;
    return std::string(v);
  };
  return ParseFio(send, parse_host, reader, lookup);
}

// --host=auto: the host built from the locally parsed jobs, sent inline.
grpc::Status SetAutoHost(absl::StatusOr<ParsedFio>& parsed, v1::Job& job) {
  if (!parsed.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(parsed.status().message()));
  absl::StatusOr<host::HostSpec> spec = AutoHostFor(parsed->jobs);
  if (!spec.ok()) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, std::string(spec.status().message()));
  google::protobuf::util::JsonParseOptions jopts;
  auto js = google::protobuf::util::JsonStringToMessage(host::HostSpecToJson(*spec), job.mutable_host_spec(), jopts);
  if (!js.ok()) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "--host=auto: cannot convert the spec: " + js.ToString());
  }
  return grpc::Status::OK;
}

// Fills the job's bundle: the files read locally under their bundle names
// (include lines rewritten), the arguments (job files renamed) and the
// ${VAR}s read.
void FillBundle(const ReadLog& log, const std::vector<std::string>& send, const std::set<std::string>& job_files,
                v1::FioBundle* bundle) {
  std::map<std::string, std::string> names;
  std::set<std::string> taken;
  for (const std::string& path : log.order) {
    const std::string base = BundleBaseName(path);
    std::string name = base;
    for (int k = 2; taken.count(name) > 0; ++k) name = absl::StrCat(k, "-", base);
    taken.insert(name);
    names[path] = name;
  }
  for (const std::string& path : log.order) {
    (*bundle->mutable_files())[names[path]] = RewriteIncludes(log.text.at(path), path, names);
  }
  for (const std::string& a : send) {
    auto it = names.find(a);
    bundle->add_args(job_files.count(a) > 0 && it != names.end() ? it->second : a);
  }
  for (const auto& [k, v] : log.vars) (*bundle->mutable_variables())[k] = v;
}

// After a successful run (or one cancelled by Ctrl-C, with the partial
// result of what ran): the log files and stacks written here, what the
// jobs printed, and the report in the selected formats on `out`. Returns
// `blklab fio`'s exit value: `base_exit` (128 after a signal, as fio) plus
// the number of failed jobs, at most 255.
int PrintRemoteResult(RemoteClient& client, const v1::Job& job, const v1::Job& final_job,
                      const workload::ParsedJobs* jobs, const BlklabOptions& options,
                      const report::OutputFormats& formats, std::ostream& out, int base_exit) {
  // fio writes each job's logs before the final report. As in-process, a
  // file that cannot be written costs the exit value, not the report: the
  // error follows it.
  absl::Status files = WriteResultLogs(client, final_job, jobs);
  if (files.ok() && job.collect_stacks()) {
    files = WriteStacks(client, final_job, options.folded_file, options.flame_file);
  }
  // What the jobs printed as they ran, and fio's exit value for failed jobs.
  for (const std::string& m : final_job.result().fio_stderr()) std::cerr << m << "\n";
  std::cerr << std::flush;
  out << final_job.result().fio_job_errors();
  const int failed = static_cast<int>(std::count(final_job.result().fio_job_errors().begin(), final_job.result().fio_job_errors().end(), '\n'));
  // fio's order: terse, json, normal.
  std::string text;
  if (formats.terse) text += final_job.result().fio_terse();
  if (formats.json_plus) {
    text += final_job.result().fio_json_plus();  // json+ includes json
  } else if (formats.json) {
    text += final_job.result().fio_json();
  }
  if (formats.normal) text += final_job.result().fio_normal();
  out << text << std::flush;
  if (!out) return Exit(grpc::StatusCode::INVALID_ARGUMENT, "cannot write the report");
  if (!files.ok()) return Exit(server::ToGrpcCode(files.code()), std::string(files.message()));
  return std::min(base_exit + failed, 255);
}

}  // namespace

int RunRemoteFio(RemoteClient& client, const std::vector<std::string>& all_args) {
  absl::StatusOr<BlklabOptions> options = SplitBlklabOptions(all_args, RunSite::kRemote);
  if (!options.ok()) return Exit(server::ToGrpcCode(options.status().code()), std::string(options.status().message()));
  // Remote runs take --host only (not $BLKLAB_HOST).
  const std::string host_arg = options->host.value_or(std::string(host::kDefaultPresetName));
  const std::vector<std::string>& args = options->fio_args;

  // Informational options run nothing: answered locally, as without --server.
  absl::StatusOr<workload::FioInvocation> pre = workload::ParseFioArgs(args);
  if (pre.ok() && (pre->version || pre->help || pre->cmdhelp.has_value() || pre->enghelp.has_value() || pre->showcmd)) {
    return RunFioCommand(all_args);
  }
  const RemoteFioOutput o = RemoteFioOutputOf(pre);
  // --output is written here, not on the server.
  const std::vector<std::string> send = ArgsToSend(args);

  // The host: a stored host, a preset, or a spec file sent inline.
  v1::Job job = NewRemoteJob(*options);
  LocalParseHost parse_host;
  const bool auto_host = IsAutoHost(host_arg);
  if (grpc::Status h = SetJobHost(host_arg, auto_host, job, parse_host); !h.ok()) {
    return Exit(h.error_code(), h.error_message());
  }

  ReadLog log;
  absl::StatusOr<ParsedFio> parsed = ParseLocally(send, parse_host.spec, log);
  if (auto_host) {
    if (grpc::Status h = SetAutoHost(parsed, job); !h.ok()) return Exit(h.error_code(), h.error_message());
  }
  size_t clones = 0;
  if (parsed.ok()) {
    clones = parsed->jobs.clones.size();
    // The files written here after the run: their directories, before it.
    if (absl::Status d = CheckOutputDirectories(parsed->jobs, *options); !d.ok() && !o.parse_only) {
      return Exit(grpc::StatusCode::INVALID_ARGUMENT, std::string(d.message()));
    }
    if (parse_host.exact) {
      for (const std::string& w : parsed->jobs.warnings) std::cerr << kFioPrefix << ": warning: " << w << "\n";
    }
  }
  FillBundle(log, send, o.job_files, job.mutable_fio());

  // As the local run: --output is opened (truncated) before the run.
  std::ofstream file;
  if (!o.output.empty() && !o.parse_only) {
    file.open(o.output, std::ios::binary | std::ios::trunc);
    if (!file) return Exit(grpc::StatusCode::INVALID_ARGUMENT, "--output: cannot write " + o.output);
  }
  std::ostream& out = o.output.empty() ? std::cout : file;

  // Ctrl-C (and SIGTERM): counted, acted on by the watch loop's helper
  // thread, which cancels the job.
  TerminationSignals interrupt_handler;
  v1::CreateJobRequest create;
  *create.mutable_job() = job;
  create.set_validate_only(o.parse_only);
  v1::Job created;
  {
    std::unique_ptr<grpc::ClientContext> ctx = client.NewContext(120);
    grpc::Status s = client.jobs().CreateJob(ctx.get(), create, &created);
    if (!s.ok()) return ReportStatus(kFioPrefix, s);
  }
  if (o.parse_only) return 0;
  if (o.status_interval_ns > 0) {
    std::cerr << kFioPrefix << ": note: --status-interval: the server returns the final report only\n";
  }

  const bool tty = isatty(STDOUT_FILENO) == 1;
  const bool show_progress = o.eta == "always" ? (o.formats.normal || !o.output.empty()) : (o.eta == "auto" && tty);
  RemoteProgress progress(std::cout, clones);
  if (show_progress) progress.Queued(created.name());
  v1::Job final_job;
  grpc::Status s = WatchToEnd(client, created.name(), show_progress ? &progress : nullptr, nullptr, &final_job);
  progress.Clear();
  if (!s.ok()) return ReportStatus(kFioPrefix, s);
  const workload::ParsedJobs* parsed_jobs = parsed.ok() ? &parsed->jobs : nullptr;
  if (final_job.state() == v1::Job::CANCELLED && TerminationSignals::count() != 0) {
    // Ctrl-C cancelled the job: as fio's sig_int (and the in-process run),
    // "fio: terminating on signal N", then the report of what ran (the
    // partial result the server kept), exit value 128.
    out << "\nfio: terminating on signal " << TerminationSignals::last() << "\n" << std::flush;
    // Cancelled before it ran (still queued): nothing to report.
    if (!final_job.has_result()) return JobExit(kFioPrefix, final_job);
    return PrintRemoteResult(client, job, final_job, parsed_jobs, *options, o.formats, out, /*base_exit=*/128);
  }
  if (final_job.state() != v1::Job::SUCCEEDED) return JobExit(kFioPrefix, final_job);
  return PrintRemoteResult(client, job, final_job, parsed_jobs, *options, o.formats, out, /*base_exit=*/0);
}

}  // namespace blklab::cli
