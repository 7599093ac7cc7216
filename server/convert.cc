#include "server/convert.h"


#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/host/presets.h"
#include "engine/report/flame_graph.h"
#include "engine/report/report.h"
#include "engine/util/doc_node.h"
#include "engine/util/status_macros.h"
#include "engine/workload/value_syntax.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "server/proto_time.h"

namespace blklab::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using util::DocNode;

// A scalar proto field value as a document node.
DocNode ScalarToDoc(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return DocNode::Int(r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return DocNode::Int(r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return DocNode::Int(r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return DocNode::Bool(r->GetBool(m, f));
    case FieldDescriptor::CPPTYPE_STRING:
      return DocNode::String(r->GetString(m, f));
    default:
      return DocNode::Null();  // no other scalar types in HostSpec
  }
}

// Set fields of `m` (by field number) as a document map with the proto's
// field names, which are the host document's keys.
DocNode MessageToDoc(const Message& m) {
  DocNode out = DocNode::Map();
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->is_map()) {
      // Sorted by key: the reflection order of a map is unspecified.
      std::map<std::string, DocNode> sorted;
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        const Message& entry = r->GetRepeatedMessage(m, f, i);
        const FieldDescriptor* key = entry.GetDescriptor()->map_key();
        const FieldDescriptor* value = entry.GetDescriptor()->map_value();
        sorted.emplace(entry.GetReflection()->GetString(entry, key),
                       value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
                           ? MessageToDoc(entry.GetReflection()->GetMessage(entry, value))
                           : ScalarToDoc(entry, value));
      }
      DocNode map = DocNode::Map();
      for (auto& [k, v] : sorted) map.AddEntry(k, {}, std::move(v));
      out.AddEntry(f->name(), {}, std::move(map));
    } else if (f->is_repeated()) {
      DocNode list = DocNode::List();
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        list.Append(MessageToDoc(r->GetRepeatedMessage(m, f, i)));
      }
      out.AddEntry(f->name(), {}, std::move(list));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      out.AddEntry(f->name(), {}, MessageToDoc(r->GetMessage(m, f)));
    } else {
      out.AddEntry(f->name(), {}, ScalarToDoc(m, f));
    }
  }
  return out;
}

absl::Status SetScalar(const DocNode& v, const FieldDescriptor* f, Message* m, const std::string& path) {
  const Reflection* r = m->GetReflection();
  auto as_int = [&]() -> absl::StatusOr<int64_t> {
    if (!v.is_number()) return absl::InternalError(path + ": expected a number");
    return v.AsInt64();
  };
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      absl::StatusOr<int64_t> x = as_int();
      if (!x.ok()) return x.status();
      r->SetInt32(m, f, static_cast<int32_t>(*x));
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      absl::StatusOr<int64_t> x = as_int();
      if (!x.ok()) return x.status();
      r->SetInt64(m, f, *x);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      if (!v.is_bool()) return absl::InternalError(path + ": expected a bool");
      r->SetBool(m, f, v.bool_value());
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_STRING:
      if (!v.is_string()) return absl::InternalError(path + ": expected a string");
      r->SetString(m, f, v.text());
      return absl::OkStatus();
    default:
      return absl::InternalError(path + ": unsupported field type");
  }
}

// The reverse of MessageToDoc for a canonical host document.
absl::Status DocToMessage(const DocNode& doc, Message* m, const std::string& path) {
  if (!doc.is_map()) return absl::InternalError(path + ": expected a map");
  const Reflection* r = m->GetReflection();
  for (const util::DocMapEntry& e : doc.entries()) {
    const std::string field_path = path.empty() ? e.key : path + "." + e.key;
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(e.key);
    if (f == nullptr) return absl::InternalError(field_path + ": no such proto field");
    if (e.value.is_null()) continue;
    if (f->is_map()) {
      if (!e.value.is_map()) return absl::InternalError(field_path + ": expected a map");
      for (const util::DocMapEntry& me : e.value.entries()) {
        Message* entry = r->AddMessage(m, f);
        const FieldDescriptor* key = entry->GetDescriptor()->map_key();
        const FieldDescriptor* value = entry->GetDescriptor()->map_value();
        entry->GetReflection()->SetString(entry, key, me.key);
        if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          if (absl::Status s = DocToMessage(me.value, entry->GetReflection()->MutableMessage(entry, value),
                                            field_path + "." + me.key);
              !s.ok()) {
            return s;
          }
        } else if (absl::Status s = SetScalar(me.value, value, entry, field_path + "." + me.key); !s.ok()) {
          return s;
        }
      }
    } else if (f->is_repeated()) {
      if (!e.value.is_list()) return absl::InternalError(field_path + ": expected a list");
      int i = 0;
      for (const DocNode& item : e.value.items()) {
        if (absl::Status s = DocToMessage(item, r->AddMessage(m, f), absl::StrCat(field_path, "[", i++, "]"));
            !s.ok()) {
          return s;
        }
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (absl::Status s = DocToMessage(e.value, r->MutableMessage(m, f), field_path); !s.ok()) return s;
    } else if (absl::Status s = SetScalar(e.value, f, m, field_path); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

void FillLatency(const stats::RunningStat& s, const stats::LatencyHistogram& h,
                 const std::vector<double>& percentiles, v1::LatencyStats* out) {
  out->set_samples(s.n());
  out->set_min_ns(static_cast<int64_t>(s.min()));
  out->set_max_ns(static_cast<int64_t>(s.max()));
  out->set_mean_ns(s.mean());
  out->set_stddev_ns(s.stddev());
  if (s.n() == 0 || percentiles.empty()) return;
  const std::vector<uint64_t> values = h.Percentiles(percentiles);
  for (size_t i = 0; i < percentiles.size() && i < values.size(); ++i) {
    v1::Percentile* p = out->add_percentiles();
    p->set_percentile(percentiles[i]);
    p->set_value_ns(static_cast<int64_t>(values[i]));
  }
}

void FillDirection(const stats::DirResult& d, const std::vector<double>& percentiles,
                   v1::DirectionStats* out) {
  out->set_io_bytes(d.io_bytes);
  out->set_total_ios(d.total_ios);
  out->set_runtime_ms(d.runtime_ms);
  out->set_bw_bytes_per_sec(d.bw_bytes_per_sec());
  out->set_iops(d.iops());
  if (d.slat.n() > 0) FillLatency(d.slat, d.slat_hist, percentiles, out->mutable_slat());
  FillLatency(d.clat, d.clat_hist, percentiles, out->mutable_clat());
  FillLatency(d.lat, d.lat_hist, percentiles, out->mutable_lat());
}

bool IsBundleName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
      return false;
    }
  }
  return s != "." && s != "..";
}

bool IsVariableName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  if (!(absl::ascii_isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// fio options that would touch the real machine or talk to other fio
// processes; the server refuses them.
absl::Status CheckArg(const std::string& arg, int index) {
  static const char* const kRefused[] = {"--server", "--client", "--exec", "--output",
                                         "--daemonize", "--remote-config", "--trigger",
                                         "--idle-prof", "--inflate-log"};
  // fio takes its long options with one dash as well (-output=x).
  const std::string norm = absl::StartsWith(arg, "-") && !absl::StartsWith(arg, "--") ? "-" + arg : arg;
  for (const char* r : kRefused) {
    if (absl::StartsWith(norm, r) && !absl::StartsWith(norm, "--output-format")) {
      return absl::InvalidArgumentError(absl::StrCat("fio.args[", index, "]: ", arg,
                                                     ": not accepted by the server (results "
                                                     "and logs are returned in the job)"));
    }
  }
  if (arg == "-") {
    return absl::InvalidArgumentError(
        absl::StrCat("fio.args[", index, "]: the server has no standard input; name a bundle file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<host::HostSpec> HostSpecFromProto(const v1::HostSpec& spec, const host::HostLimits& limits,
                                                 const std::string& default_name) {
  DocNode doc = MessageToDoc(spec);
  if (spec.name().empty() && !default_name.empty()) {
    DocNode named = DocNode::Map();
    named.AddEntry("name", {}, DocNode::String(default_name));
    for (const util::DocMapEntry& e : doc.entries()) named.AddEntry(e.key, e.key_pos, e.value);
    doc = std::move(named);
  }
  return host::HostSpecFromDoc(doc, limits);
}

absl::Status HostSpecToProto(const host::HostSpec& spec, v1::HostSpec* out) {
  out->Clear();
  return DocToMessage(host::HostSpecToDoc(spec), out, "");
}

EffectiveLimits EffectiveJobLimits(const v1::JobLimits& job, const JobLimitsConfig& server) {
  EffectiveLimits out;
  out.host = server.host;
  auto clamp = [](auto requested, auto server_max) {
    using T = decltype(server_max);
    return requested > 0 ? std::min<T>(static_cast<T>(requested), server_max) : server_max;
  };
  out.host.max_cpus = clamp(job.max_cpus(), server.host.max_cpus);
  out.host.max_devices = clamp(job.max_devices(), server.host.max_devices);
  out.host.max_total_requests = clamp(job.max_total_requests(), server.host.max_total_requests);
  out.run.max_virtual_ns = clamp(DurationNs(job.max_virtual_time()), server.max_virtual_ns);
  out.run.max_ios = clamp(job.max_simulated_ios(), server.max_simulated_ios);
  out.max_wall_ns = clamp(DurationNs(job.max_wall_time()), server.max_wall_ns);
  return out;
}

absl::StatusOr<std::vector<std::string>> SpecToArgs(const v1::JobSpec& spec) {
  // fio's command-line form: global options before any --name, then each job
  // as --name=X followed by its options. Maps are emitted in name order so
  // the same spec always gives the same arguments.
  if (spec.jobs_size() == 0) return absl::InvalidArgumentError("spec.jobs: at least one job");
  if (spec.jobs_size() > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("spec.jobs: ", spec.jobs_size(), " jobs, the limit is 4096"));
  }
  std::vector<std::string> args(spec.args().begin(), spec.args().end());
  auto option = [](const std::string& name, const std::string& value) {
    return value.empty() ? absl::StrCat("--", name) : absl::StrCat("--", name, "=", value);
  };
  auto sorted = [](const google::protobuf::Map<std::string, std::string>& m) {
    std::vector<std::pair<std::string, std::string>> v(m.begin(), m.end());
    std::sort(v.begin(), v.end());
    return v;
  };
  auto check_name = [](const std::string& name, const std::string& path) -> absl::Status {
    if (name.empty() || name.size() > 64 || name.find_first_of("= \t\n") != std::string::npos ||
        absl::StartsWith(name, "-")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"", name, "\" is not an option name"));
    }
    return absl::OkStatus();
  };
  for (const auto& [name, value] : sorted(spec.global_options())) {
    BLKLAB_RETURN_IF_ERROR(check_name(name, "spec.global_options"));
    if (name == "name") return absl::InvalidArgumentError("spec.global_options: `name` belongs to a job");
    args.push_back(option(name, value));
  }
  for (int i = 0; i < spec.jobs_size(); ++i) {
    const v1::StructuredJob& j = spec.jobs(i);
    const std::string path = absl::StrCat("spec.jobs[", i, "]");
    if (j.name().empty() || j.name().size() > 255 || absl::StrContains(j.name(), "\n")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".name: required, one line, at most 255 bytes"));
    }
    args.push_back(option("name", j.name()));
    auto str = [&](bool has, const char* name, const std::string& v) {
      if (has) args.push_back(option(name, v));
    };
    auto num = [&](bool has, const char* name, uint64_t v) {
      if (has) args.push_back(option(name, absl::StrCat(v)));
    };
    auto flag = [&](bool has, const char* name, bool v) {
      if (has) args.push_back(option(name, v ? "1" : "0"));
    };
    auto duration = [&](bool has, const char* name, const google::protobuf::Duration& d) {
      if (has) args.push_back(option(name, absl::StrCat(d.seconds() * 1000000 + d.nanos() / 1000, "us")));
    };
    str(j.has_rw(), "rw", j.rw());
    num(j.has_rwmixread(), "rwmixread", j.rwmixread());
    str(j.has_bs(), "bs", j.bs());
    str(j.has_ioengine(), "ioengine", j.ioengine());
    num(j.has_iodepth(), "iodepth", j.iodepth());
    num(j.has_iodepth_batch_submit(), "iodepth_batch_submit", j.iodepth_batch_submit());
    num(j.has_iodepth_batch_complete_min(), "iodepth_batch_complete_min", j.iodepth_batch_complete_min());
    str(j.has_filename(), "filename", j.filename());
    str(j.has_size(), "size", j.size());
    str(j.has_io_size(), "io_size", j.io_size());
    duration(j.has_runtime(), "runtime", j.runtime());
    flag(j.has_time_based(), "time_based", j.time_based());
    duration(j.has_ramp_time(), "ramp_time", j.ramp_time());
    num(j.has_numjobs(), "numjobs", j.numjobs());
    flag(j.has_group_reporting(), "group_reporting", j.group_reporting());
    str(j.has_cpus_allowed(), "cpus_allowed", j.cpus_allowed());
    str(j.has_cpus_allowed_policy(), "cpus_allowed_policy", j.cpus_allowed_policy());
    str(j.has_rate_iops(), "rate_iops", j.rate_iops());
    flag(j.has_norandommap(), "norandommap", j.norandommap());
    num(j.has_randseed(), "randseed", j.randseed());
    flag(j.has_direct(), "direct", j.direct());
    str(j.has_ioscheduler(), "ioscheduler", j.ioscheduler());
    for (const auto& [name, value] : sorted(j.options())) {
      BLKLAB_RETURN_IF_ERROR(check_name(name, path + ".options"));
      if (name == "name") return absl::InvalidArgumentError(path + ".options: use the `name` field");
      args.push_back(option(name, value));
    }
  }
  return args;
}

namespace {

// A comparison's cell as a job: the host and fio jobs `blklab compare`
// prepares for that cell from the comparison's bundle (the job's host spec
// is informative), within the job's limits.
absl::StatusOr<PreparedJob> PrepareComparisonCellJob(const v1::Job& job, const JobLimitsConfig& server) {
  const v1::ComparisonCellWork& work = job.comparison_cell();
  const v1::ComparisonBundle& bundle = work.bundle();
  const size_t total = BundleBytes(bundle);
  // Each cell's job stores the bundle: it is held to a job's bundle limit.
  if (total > server.max_bundle_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("comparison_cell.bundle: ", total,
                                                   " bytes of arguments, files and variables; a job's bundle limit is ",
                                                   server.max_bundle_bytes));
  }
  const compare::Inputs inputs = BundleInputs(&bundle);
  BLKLAB_ASSIGN_OR_RETURN(const compare::Comparison c, ParseComparisonBundle(bundle, inputs));
  const std::vector<compare::Cell> cells = compare::Cells(c);
  if (work.cell() < 0 || static_cast<size_t>(work.cell()) >= cells.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("comparison_cell.cell: ", work.cell(), " out of range [0, ", cells.size(), ")"));
  }
  PreparedJob out;
  out.limits = EffectiveJobLimits(job.limits(), server);
  BLKLAB_ASSIGN_OR_RETURN(
      out.request, compare::PrepareCell(c, cells[static_cast<size_t>(work.cell())], inputs,
                                        compare::CellLimits{out.limits.host, out.limits.run}));
  out.comparison_cell = true;
  out.request.status_interval_ns = kDefaultStatusIntervalNs;
  out.request.snapshot_interval_ns = int64_t{100'000'000};
  return out;
}

}  // namespace

absl::StatusOr<PreparedJob> PrepareJob(const v1::Job& job, const host::HostSpec& host,
                                       const JobLimitsConfig& server) {
  if (job.has_comparison_cell()) return PrepareComparisonCellJob(job, server);
  // A structured spec has no files or variables: only its arguments.
  const v1::FioBundle& bundle = job.fio();
  if (bundle.files_size() > static_cast<int>(server.max_bundle_files)) {
    return absl::InvalidArgumentError(absl::StrCat("fio.files: ", bundle.files_size(),
                                                   " files, the limit is ", server.max_bundle_files));
  }
  size_t total = 0;
  for (const auto& [name, text] : bundle.files()) {
    if (!IsBundleName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("fio.files[\"", name, "\"]: a file name must match [A-Za-z0-9._-]{1,128}"));
    }
    total += name.size() + text.size();
  }
  // Arguments and variables count too: they are stored with the job and
  // returned by every listing, as the files are.
  for (const std::string& a : bundle.args()) total += a.size();
  for (const auto& [name, value] : bundle.variables()) total += name.size() + value.size();
  if (total > server.max_bundle_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("fio: the bundle (files, args and variables) is ", total,
                                                   " bytes, the limit is ", server.max_bundle_bytes));
  }
  for (const auto& [name, value] : bundle.variables()) {
    if (!IsVariableName(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fio.variables[\"", workload::QuoteForError(name), "\"]: a name must match [A-Za-z_][A-Za-z0-9_]{0,63}"));
    }
  }
  std::vector<std::string> args(bundle.args().begin(), bundle.args().end());
  if (job.has_spec()) {
    BLKLAB_ASSIGN_OR_RETURN(args, SpecToArgs(job.spec()));
  } else if (!job.has_fio()) {
    return absl::InvalidArgumentError("job: set fio (a job bundle) or spec (a structured JobSpec)");
  }
  if (args.empty()) return absl::InvalidArgumentError("fio.args: empty (name a job file or options)");
  for (size_t i = 0; i < args.size(); ++i) {
    if (absl::Status s = CheckArg(args[i], static_cast<int>(i)); !s.ok()) return s;
  }

  PreparedJob out;
  out.limits = EffectiveJobLimits(job.limits(), server);
  if (absl::Status s = host::ValidateHostSpec(host, out.limits.host); !s.ok()) return s;

  // Job files come from the bundle only: never the server's disk.
  const auto* files = &bundle.files();
  workload::FileReader reader = [files](const std::string& path) -> absl::StatusOr<std::string> {
    std::string key = path;
    while (absl::StartsWith(key, "./")) key = key.substr(2);
    auto it = files->find(key);
    if (it == files->end()) {
      return absl::NotFoundError(absl::StrCat("file '", path, "' is not in the job bundle"));
    }
    return it->second;
  };
  // ${VAR} from the bundle only: never the server's environment.
  const auto* vars = &bundle.variables();
  workload::VarLookup lookup = [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars->find(name);
    if (it == vars->end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, host, reader, lookup);
  if (!parsed.ok()) {
    // A file missing from the bundle is the client's mistake.
    if (parsed.status().code() == absl::StatusCode::kNotFound) {
      return absl::InvalidArgumentError(parsed.status().message());
    }
    return parsed.status();
  }
  const workload::FioInvocation& inv = parsed->invocation;
  if (inv.parse_only || inv.version || inv.showcmd || inv.cmdhelp || inv.enghelp) {
    return absl::InvalidArgumentError(
        "fio.args: --parse-only, --version, --showcmd, --cmdhelp and --enghelp run nothing; "
        "a job must run");
  }
  out.request.host = host;
  out.request.jobs = std::move(parsed->jobs);
  out.request.seed = job.seed();
  out.request.collect_stacks = job.collect_stacks();
  out.realtime = job.pace() == v1::Job::REALTIME;
  if (job.has_report_time()) {
    const google::protobuf::Timestamp& t = job.report_time();
    if (t.seconds() < 0 || t.seconds() > 253402300799 || t.nanos() < 0 || t.nanos() > 999999999) {
      return absl::InvalidArgumentError("report_time: must be between 1970 and 9999");
    }
    out.report_time_ms = t.seconds() * 1000 + t.nanos() / 1000000;
  }
  out.request.limits = out.limits.run;
  // WatchJob intervals: fio's --status-interval, else 1 s of virtual time;
  // slices stay at most 100 ms (cancellation, pacing) and divide it. The
  // slice length does not change results.
  const int64_t status_ns =
      inv.status_interval_ns > 0 ? std::max(inv.status_interval_ns, kMinStatusIntervalNs) : kDefaultStatusIntervalNs;
  out.request.status_interval_ns = status_ns;
  out.request.snapshot_interval_ns = std::max(std::gcd(status_ns, int64_t{100'000'000}), kMinStatusIntervalNs);
  if (absl::Status s = ValidateRun(out.request); !s.ok()) return s;
  return out;
}

v1::JobResult BuildJobResult(const RunRequest& request, const RunResult& run, const WallClock& clock) {
  v1::JobResult out;
  report::ReportInput input = BuildReport(request, run, clock, /*with_kernel_report=*/true);
  // Each format alone, as `--output-format=X` prints it.
  auto write = [&input](bool report::OutputFormats::*format) {
    report::OutputFormats f;
    f.*format = true;
    return report::WriteReport(input, f);
  };
  out.set_fio_json(write(&report::OutputFormats::json));
  out.set_fio_normal(write(&report::OutputFormats::normal));
  out.set_fio_terse(write(&report::OutputFormats::terse));
  out.set_fio_json_plus(write(&report::OutputFormats::json_plus));
  const FioJobErrors job_errors = CollectJobErrors(run);
  for (const std::string& m : job_errors.stderr_lines) out.add_fio_stderr(m);
  out.set_fio_job_errors(job_errors.stdout_lines);

  for (const report::ReportEntry& e : input.entries) {
    v1::JobStats* j = out.add_jobs();
    j->set_job_name(e.name);
    j->set_group_id(e.groupid);
    j->set_error(e.error);
    std::vector<double> pcts = e.display.percentile_list;
    std::sort(pcts.begin(), pcts.end());
    FillDirection(e.result.dir(stats::Dir::kRead), pcts, j->mutable_read());
    FillDirection(e.result.dir(stats::Dir::kWrite), pcts, j->mutable_write());
    FillDirection(e.result.dir(stats::Dir::kTrim), pcts, j->mutable_trim());
    j->set_usr_cpu_pct(e.result.cpu.usr_pct);
    j->set_sys_cpu_pct(e.result.cpu.sys_pct);
    j->set_ctx(e.result.cpu.ctx);
    j->set_job_runtime_ms(e.result.job_runtime_ms);
  }
  const stats::KernelReport& k = run.kernel;
  SetDuration(run.virtual_ns, out.mutable_virtual_time());
  out.set_sys_pct(k.sys_pct);
  out.set_contention_pct(k.contention_pct);
  out.set_total_ios(k.total_ios);
  out.set_events(run.events);
  for (const stats::ProfileRow& p : k.profile) ProfileRowToProto(p, out.add_profile());
  if (!k.stacks.empty()) {
    out.set_stacks_folded(report::FoldedStacks(k.stacks));
    out.set_stacks_folded_bytes(static_cast<int64_t>(out.stacks_folded().size()));
  }
  for (const stats::LogFile& f : run.logs) {
    v1::LogFile* log = out.add_logs();
    log->set_name(f.name);
    log->set_content(f.contents);
    log->set_size_bytes(static_cast<int64_t>(f.contents.size()));
  }
  for (const stats::LockRow& l : k.locks) LockRowToProto(l, out.add_locks());
  for (const stats::SchedRow& t : k.sched) {
    v1::SchedRow* row = out.add_sched();
    row->set_task(t.task);
    row->set_threads(t.threads);
    row->set_policy(t.rt ? "SCHED_FIFO" : "SCHED_OTHER");
    row->set_runtime_ns(t.runtime_ns);
    row->set_switches(t.switches);
    row->set_delay_ns(t.delay_ns);
    row->set_max_delay_ns(t.max_delay_ns);
    row->set_max_delay_at_ns(t.max_delay_at_ns);
  }
  for (const stats::DeviceRow& d : k.devices) {
    for (const auto& [stage, st] : d.stages()) {
      if (st->n == 0) continue;
      v1::BttRow* row = out.add_btt();
      row->set_device(d.name);
      row->set_stage(stage);
      row->set_n(st->n);
      row->set_min_ns(st->min_ns);
      row->set_avg_ns(st->avg_ns);
      row->set_max_ns(st->max_ns);
    }
  }
  return out;
}

void ProfileRowToProto(const stats::ProfileRow& p, v1::ProfileRow* row) {
  row->set_function(p.function);
  row->set_mode(stats::CpuModeName(p.mode));
  row->set_self_ns(p.self_ns);
  row->set_share_pct(p.share_pct);
}

absl::StatusOr<stats::ProfileRow> ProfileRowFromProto(const v1::ProfileRow& row) {
  stats::ProfileRow p;
  p.function = row.function();
  bool known = false;
  for (int m = 0; m < stats::kNumCpuModes; ++m) {
    if (row.mode() == stats::CpuModeName(static_cast<stats::CpuMode>(m))) {
      p.mode = static_cast<stats::CpuMode>(m);
      known = true;
    }
  }
  if (!known) return absl::InvalidArgumentError("profile row " + row.function() + ": unknown mode '" + row.mode() + "'");
  p.self_ns = row.self_ns();
  p.share_pct = row.share_pct();
  return p;
}

void LockRowToProto(const stats::LockRow& l, v1::LockRow* row) {
  row->set_name(l.name);
  row->set_acquisitions(l.acquisitions);
  row->set_contended(l.contended);
  row->set_wait_ns(l.wait_ns);
  row->set_hold_ns(l.hold_ns);
  row->set_max_waiters(l.max_waiters);
  row->set_holder_changes(l.holder_changes);
  row->set_remote_holder_changes(l.remote_holder_changes);
  row->set_line_transfers(l.line_transfers);
  row->set_wait_irqs_off_ns(l.wait_irqs_off_ns);
}

stats::LockRow LockRowFromProto(const v1::LockRow& row) {
  stats::LockRow l;
  l.name = row.name();
  l.acquisitions = row.acquisitions();
  l.contended = row.contended();
  l.wait_ns = row.wait_ns();
  l.hold_ns = row.hold_ns();
  l.max_waiters = row.max_waiters();
  l.holder_changes = row.holder_changes();
  l.remote_holder_changes = row.remote_holder_changes();
  l.line_transfers = row.line_transfers();
  l.wait_irqs_off_ns = row.wait_irqs_off_ns();
  return l;
}

namespace {

void FillSnapshotInterval(const SnapshotInterval& iv, v1::Snapshot* out) {
  SetDuration(iv.end_ns - iv.start_ns, out->mutable_interval());
  v1::IntervalDirection* dirs[stats::kNumDirs] = {out->mutable_read(), out->mutable_write(),
                                                  out->mutable_trim()};
  for (int d = 0; d < stats::kNumDirs; ++d) {
    v1::IntervalDirection* dir = dirs[d];
    dir->set_ios(iv.ios[d]);
    dir->set_iops(iv.iops[d]);
    dir->set_bw_bytes_per_sec(iv.bw_bytes_per_sec[d]);
    if (iv.clat_samples[d] == 0) continue;
    for (size_t k = 0; k < SnapshotInterval::kPercentiles.size(); ++k) {
      v1::Percentile* p = dir->add_clat_percentiles();
      p->set_percentile(SnapshotInterval::kPercentiles[k]);
      p->set_value_ns(static_cast<int64_t>(iv.clat_pct_ns[d][k]));
    }
  }
  v1::CpuShares* cpu = out->mutable_cpu();
  cpu->set_usr_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kUser)]);
  cpu->set_sys_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kSys)]);
  cpu->set_irq_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kIrq)]);
  cpu->set_softirq_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kSoftirq)]);
  cpu->set_idle_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kIdle)]);
  out->set_contention_pct(iv.contention_pct);
  // The most contended locks: descending wait, then contended, then name.
  std::vector<const stats::LockRow*> locks;
  for (const stats::LockRow& l : iv.locks) locks.push_back(&l);
  const size_t n = std::min<size_t>(locks.size(), kSnapshotTopLocks);
  std::partial_sort(locks.begin(), locks.begin() + n, locks.end(),
                    [](const stats::LockRow* a, const stats::LockRow* b) {
                      if (a->wait_ns != b->wait_ns) return a->wait_ns > b->wait_ns;
                      if (a->contended != b->contended) return a->contended > b->contended;
                      return a->name < b->name;
                    });
  for (size_t i = 0; i < n; ++i) {
    v1::LockRow* row = out->add_top_locks();
    row->set_name(locks[i]->name);
    row->set_acquisitions(locks[i]->acquisitions);
    row->set_contended(locks[i]->contended);
    row->set_wait_ns(locks[i]->wait_ns);
    row->set_hold_ns(locks[i]->hold_ns);
  }
}

}  // namespace

v1::Snapshot IntervalSnapshot(const std::string& name, uint64_t sequence, int64_t virtual_ns,
                              double progress_fraction, int64_t wall_ns, const SnapshotInterval& interval) {
  v1::Snapshot s;
  s.set_job(name);
  s.set_sequence(sequence);
  s.set_state(v1::Job::RUNNING);
  SetDuration(virtual_ns, s.mutable_virtual_time());
  SetDuration(wall_ns, s.mutable_wall_time());
  s.set_progress_fraction(progress_fraction);
  FillSnapshotInterval(interval, &s);
  return s;
}

void OmitLogContents(v1::Job* job) {
  if (!job->has_result()) return;
  job->mutable_result()->clear_stacks_folded();
  for (v1::LogFile& f : *job->mutable_result()->mutable_logs()) {
    f.set_size_bytes(static_cast<int64_t>(f.content().size()));
    f.clear_content();
  }
}

v1::Snapshot FinalSnapshot(const v1::Job& job, uint64_t sequence) {
  v1::Snapshot s;
  s.set_job(job.name());
  s.set_sequence(sequence);
  s.set_state(job.state());
  if (job.has_result()) *s.mutable_virtual_time() = job.result().virtual_time();
  *s.mutable_wall_time() = job.wall_time();
  s.set_progress_fraction(job.state() == v1::Job::SUCCEEDED ? 1.0 : job.progress_fraction());
  *s.mutable_final_job() = job;
  OmitLogContents(s.mutable_final_job());
  return s;
}

absl::StatusOr<compare::Comparison> ParseComparisonBundle(const v1::ComparisonBundle& bundle,
                                                          const compare::Inputs& inputs) {
  BLKLAB_ASSIGN_OR_RETURN(compare::Comparison c,
                          compare::ParseComparison({bundle.args().begin(), bundle.args().end()}, inputs,
                                                   std::string(host::kDefaultPresetName)));
  if (c.tool != compare::Tool::kFio) {
    // A cell is a job of the server's queue, and its jobs run fio.
    return absl::UnimplementedError(absl::StrCat(
        "tool ", compare::ToolName(c.tool),
        ": blklabd runs fio comparisons only; run t/io_uring comparisons with `blklab compare` locally"));
  }
  c.collect_stacks = bundle.collect_stacks();
  return c;
}

size_t BundleBytes(const v1::ComparisonBundle& bundle) {
  size_t total = 0;
  for (const std::string& a : bundle.args()) total += a.size();
  for (const auto& [name, text] : bundle.files()) total += name.size() + text.size();
  for (const auto& [name, value] : bundle.variables()) total += name.size() + value.size();
  return total;
}

compare::Inputs BundleInputs(const v1::ComparisonBundle* bundle) {
  compare::Inputs in;
  in.read_file = [bundle](const std::string& path) -> absl::StatusOr<std::string> {
    auto it = bundle->files().find(path);
    if (it == bundle->files().end()) return absl::NotFoundError(path + ": not in the comparison's bundle.files");
    return it->second;
  };
  in.lookup_var = [bundle](const std::string& name) -> std::optional<std::string> {
    auto it = bundle->variables().find(name);
    if (it == bundle->variables().end()) return std::nullopt;
    return it->second;
  };
  return in;
}

v1::ComparisonCellResult CellResultToProto(const compare::CellResult& r) {
  v1::ComparisonCellResult p;
  p.set_iops(r.iops);
  for (double d : r.dir_iops) p.add_dir_iops(d);
  p.set_bw_bytes(r.bw_bytes);
  p.set_usr_pct(r.usr_pct);
  p.set_sys_pct(r.sys_pct);
  p.set_contention_pct(r.contention_pct);
  p.set_kernel_sys_pct(r.kernel_sys_pct);
  p.set_clat_mean_ns(r.clat_mean_ns);
  for (const auto& [pct, ns] : r.clat_percentiles) {
    v1::Percentile* q = p.add_clat_percentiles();
    q->set_percentile(pct);
    q->set_value_ns(static_cast<int64_t>(ns));
  }
  p.set_ios(r.ios);
  for (const auto& [name, iops] : r.jobs) {
    v1::ComparisonCellResult::JobIops* j = p.add_jobs();
    j->set_name(name);
    j->set_iops(iops);
  }
  for (const stats::ProfileRow& row : r.profile) ProfileRowToProto(row, p.add_profile());
  for (const stats::LockRow& row : r.locks) LockRowToProto(row, p.add_locks());
  p.set_stalled(r.stalled);
  for (const compare::CellResult::HistogramBin& b : r.clat_histogram) {
    v1::ComparisonCellResult::HistogramBin* h = p.add_clat_histogram();
    h->set_lower_ns(b.lower_ns);
    h->set_upper_ns(b.upper_ns);
    h->set_count(b.count);
  }
  for (const compare::CellResult::LogSeries& ls : r.log_series) {
    v1::ComparisonCellResult::LogSeries* o = p.add_log_series();
    o->set_kind(ls.kind);
    for (const auto& [t, v] : ls.points) {
      o->add_time_ms(t);
      o->add_value(v);
    }
  }
  for (const stats::StackRow& row : r.stacks) {
    v1::ComparisonCellResult::Stack* st = p.add_stacks();
    st->set_stack(row.stack);
    st->set_ns(row.ns);
  }
  return p;
}

absl::StatusOr<compare::CellResult> CellResultFromProto(const v1::ComparisonCellResult& p) {
  compare::CellResult r;
  if (p.dir_iops_size() != stats::kNumDirs) {
    return absl::InvalidArgumentError(absl::StrCat("dir_iops: ", p.dir_iops_size(), " values, expected ", stats::kNumDirs));
  }
  r.iops = p.iops();
  for (int d = 0; d < stats::kNumDirs; ++d) r.dir_iops[static_cast<size_t>(d)] = p.dir_iops(d);
  r.bw_bytes = p.bw_bytes();
  r.usr_pct = p.usr_pct();
  r.sys_pct = p.sys_pct();
  r.contention_pct = p.contention_pct();
  r.kernel_sys_pct = p.kernel_sys_pct();
  r.clat_mean_ns = p.clat_mean_ns();
  for (const v1::Percentile& q : p.clat_percentiles()) {
    r.clat_percentiles.emplace_back(q.percentile(), static_cast<uint64_t>(q.value_ns()));
  }
  r.ios = p.ios();
  for (const auto& j : p.jobs()) r.jobs.emplace_back(j.name(), j.iops());
  for (const v1::ProfileRow& row : p.profile()) {
    absl::StatusOr<stats::ProfileRow> pr = ProfileRowFromProto(row);
    if (!pr.ok()) return pr.status();
    r.profile.push_back(*std::move(pr));
  }
  for (const v1::LockRow& row : p.locks()) r.locks.push_back(LockRowFromProto(row));
  r.stalled = p.stalled();
  for (const v1::ComparisonCellResult::HistogramBin& b : p.clat_histogram()) {
    r.clat_histogram.push_back(compare::CellResult::HistogramBin{b.lower_ns(), b.upper_ns(), b.count()});
  }
  for (const v1::ComparisonCellResult::LogSeries& ls : p.log_series()) {
    if (ls.time_ms_size() != ls.value_size()) {
      return absl::InvalidArgumentError(absl::StrCat("log_series ", ls.kind(), ": ", ls.time_ms_size(), " times, ",
                                                     ls.value_size(), " values"));
    }
    compare::CellResult::LogSeries out{ls.kind(), {}};
    for (int i = 0; i < ls.time_ms_size(); ++i) out.points.emplace_back(ls.time_ms(i), ls.value(i));
    r.log_series.push_back(std::move(out));
  }
  for (const v1::ComparisonCellResult::Stack& st : p.stacks()) r.stacks.push_back(stats::StackRow{st.stack(), st.ns()});
  return r;
}

}  // namespace blklab::server
