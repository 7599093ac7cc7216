#include "engine/workload/job_parser.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/util/status_macros.h"
#include "engine/workload/option_table.h"
#include "engine/workload/value_syntax.h"

namespace blklab::workload {
namespace {

constexpr char kCommandLine[] = "<command line>";

std::string TrimLine(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

absl::Status At(const std::string& file, int line, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat(file, ":", line, ": ", msg));
}

bool StartsWith(const std::string& s, absl::string_view p) { return s.compare(0, p.size(), p.data(), p.size()) == 0; }

// Collects warnings, each text once.
class Warnings {
 public:
  explicit Warnings(std::vector<std::string>* out) : out_(out) {}
  void Add(const std::string& w) {
    if (seen_.insert(w).second) out_->push_back(w);
  }
 private:
  std::vector<std::string>* out_;
  absl::flat_hash_set<std::string> seen_;
};

// --- arithmetic (bc subset) ---
class ArithParser {
 public:
  explicit ArithParser(const std::string& s) : s_(s) {}
  absl::StatusOr<int64_t> Parse() {
    BLKLAB_ASSIGN_OR_RETURN(int64_t v, Expr(0));
    Skip();
    if (pos_ != s_.size()) return absl::InvalidArgumentError("bad expression");
    return v;
  }
 private:
  void Skip() { while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_; }
  absl::StatusOr<int64_t> Expr(int depth) {
    BLKLAB_ASSIGN_OR_RETURN(int64_t v, Term(depth));
    while (true) {
      Skip();
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
        const char op = s_[pos_++];
        BLKLAB_ASSIGN_OR_RETURN(int64_t r, Term(depth));
        if (__builtin_add_overflow(v, op == '+' ? r : -r, &v)) return Overflow();
      } else {
        return v;
      }
    }
  }
  absl::StatusOr<int64_t> Term(int depth) {
    BLKLAB_ASSIGN_OR_RETURN(int64_t v, Power(depth));
    while (true) {
      Skip();
      if (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/' || s_[pos_] == '%')) {
        const char op = s_[pos_++];
        BLKLAB_ASSIGN_OR_RETURN(int64_t r, Power(depth));
        if (op == '*') {
          if (__builtin_mul_overflow(v, r, &v)) return Overflow();
        } else {
          if (r == 0) return absl::InvalidArgumentError("division by zero");
          if (v == INT64_MIN && r == -1) return Overflow();
          v = op == '/' ? v / r : v % r;
        }
      } else {
        return v;
      }
    }
  }
  absl::StatusOr<int64_t> Power(int depth) {
    BLKLAB_ASSIGN_OR_RETURN(int64_t base, Unary(depth));
    Skip();
    if (pos_ < s_.size() && s_[pos_] == '^') {
      ++pos_;
      BLKLAB_ASSIGN_OR_RETURN(int64_t e, Power(depth + 1));
      if (e < 0) return absl::InvalidArgumentError("negative exponent");
      int64_t r = 1;
      for (int64_t i = 0; i < e; ++i) {
        if (__builtin_mul_overflow(r, base, &r)) return Overflow();
        if (r == 0 || r == 1) break;
      }
      return r;
    }
    return base;
  }
  absl::StatusOr<int64_t> Unary(int depth) {
    if (depth > 64) return absl::InvalidArgumentError("expression too deep");
    Skip();
    if (pos_ < s_.size() && s_[pos_] == '-') {
      ++pos_;
      BLKLAB_ASSIGN_OR_RETURN(int64_t v, Unary(depth + 1));
      if (v == INT64_MIN) return Overflow();
      return -v;
    }
    if (pos_ < s_.size() && s_[pos_] == '(') {
      ++pos_;
      BLKLAB_ASSIGN_OR_RETURN(int64_t v, Expr(depth + 1));
      Skip();
      if (pos_ >= s_.size() || s_[pos_] != ')') return absl::InvalidArgumentError("missing )");
      ++pos_;
      return v;
    }
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      return absl::InvalidArgumentError("bad expression");
    }
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v)) {
        return Overflow();
      }
      ++pos_;
    }
    return v;
  }
  static absl::Status Overflow() { return absl::InvalidArgumentError("arithmetic overflow"); }
  const std::string& s_;
  size_t pos_ = 0;
};

// Replaces ${NAME} through the lookup (unset: ""). A `$` not followed by
// `{...}` stays.
// The result may not exceed `max_bytes`: each value's size is checked
// before it is appended, so memory stays bounded by the limit.
absl::StatusOr<std::string> SubstituteVars(const std::string& line, const VarLookup& lookup, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == '$' && i + 1 < line.size() && line[i + 1] == '{') {
      const size_t close = line.find('}', i + 2);
      if (close != std::string::npos) {
        const std::string name = line.substr(i + 2, close - i - 2);
        if (lookup && !name.empty()) {
          if (auto v = lookup(name); v.has_value()) {
            if (out.size() + v->size() > max_bytes) {
              return absl::InvalidArgumentError(absl::StrCat("line longer than ", max_bytes,
                                                             " bytes after substituting ${", QuoteForError(name), "}"));
            }
            out += *v;
          }
        }
        i = close + 1;
        continue;
      }
    }
    if (out.size() >= max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("line longer than ", max_bytes, " bytes after substitution"));
    }
    out.push_back(line[i++]);
  }
  return out;
}

// Replaces $pagesize/$mb_memory/$ncpus in the value part; if any was
// replaced, the value is evaluated as arithmetic (fio pipes it through bc).
absl::Status SubstituteKeywords(std::string* value, const HostValues& host) {
  static constexpr std::pair<const char*, int> kKeys[] = {
      {"$pagesize", 0}, {"$mb_memory", 1}, {"$ncpus", 2}};
  bool replaced = false;
  for (const auto& [key, which] : kKeys) {
    const std::string k = key;
    size_t pos;
    while ((pos = value->find(k)) != std::string::npos) {
      const uint64_t v = which == 0 ? host.page_size : which == 1 ? host.mb_memory : host.ncpus;
      value->replace(pos, k.size(), std::to_string(v));
      replaced = true;
      if (value->size() > 65536) return absl::InvalidArgumentError("value too long");
    }
  }
  if (!replaced) return absl::OkStatus();
  auto r = EvaluateArithmetic(*value);
  if (!r.ok()) return r.status();
  *value = std::to_string(*r);
  return absl::OkStatus();
}

// Splits `name=value` / `name` (a.4): white space before `=` is dropped,
// white space after it is kept.
OptionLine SplitOptionLine(const std::string& text, const std::string& file, int line) {
  OptionLine ol;
  ol.file = file;
  ol.line = line;
  const size_t eq = text.find('=');
  if (eq == std::string::npos) {
    ol.name = TrimLine(text);
  } else {
    ol.name = TrimLine(text.substr(0, eq));
    ol.value = text.substr(eq + 1);
  }
  return ol;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return path.substr(0, slash + 1);
}

// What an invocation has read so far (ParseLimits::max_includes,
// max_total_bytes).
struct ParseBudget {
  size_t includes = 0;
  size_t bytes = 0;
};

struct FileParseState {
  const ParseOptions* options;
  std::vector<Section>* sections;
  Warnings* warnings;
  ParseBudget* budget;
};

// Charges `bytes` of job-file text to the invocation's budget.
absl::Status ChargeBytes(FileParseState& st, const std::string& filename, size_t bytes) {
  st.budget->bytes += bytes;
  if (st.budget->bytes > st.options->limits.max_total_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(filename, ": job files and includes larger than ",
                                                     st.options->limits.max_total_bytes, " bytes in all"));
  }
  return absl::OkStatus();
}

absl::Status ParseText(const std::string& text, const std::string& filename, int depth,
                       bool is_include, FileParseState& st);

absl::Status HandleInclude(const std::string& path_in, const std::string& filename, int line,
                           int depth, FileParseState& st) {
  const ParseOptions& opt = *st.options;
  if (depth + 1 > opt.limits.max_include_depth) {
    return At(filename, line, absl::StrCat("include nesting deeper than ", opt.limits.max_include_depth));
  }
  if (++st.budget->includes > opt.limits.max_includes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(filename, ":", line, ": more than ", opt.limits.max_includes, " includes in all"));
  }
  if (!opt.read_file) return At(filename, line, absl::StrCat("cannot read include ", QuoteForError(path_in)));
  const std::string path = TrimLine(path_in);
  std::string used = path;
  absl::StatusOr<std::string> text = opt.read_file(path);
  if (!text.ok() && !path.empty() && path[0] != '/' && !DirName(filename).empty()) {
    used = DirName(filename) + path;
    text = opt.read_file(used);
  }
  if (!text.ok()) {
    return At(filename, line,
              absl::StrCat("cannot read include file ", QuoteForError(path), ": ", text.status().message()));
  }
  BLKLAB_RETURN_IF_ERROR(ChargeBytes(st, used, text->size()));
  return ParseText(*text, used, depth + 1, /*is_include=*/true, st);
}

absl::Status ParseText(const std::string& text, const std::string& filename, int depth,
                       bool is_include, FileParseState& st) {
  const ParseOptions& opt = *st.options;
  if (text.size() > opt.limits.max_input_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(filename, ": job file larger than ",
                                                   opt.limits.max_input_bytes, " bytes"));
  }
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string raw = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (raw.size() > opt.limits.max_line_length) {
      return At(filename, line_no, absl::StrCat("line longer than ", opt.limits.max_line_length, " bytes"));
    }
    if (raw.find('\0') != std::string::npos) return At(filename, line_no, "NUL byte in job file");
    std::string line = TrimLine(raw);
    if (line.empty() || line[0] == ';' || line[0] == '#') continue;
    const size_t cut = line.find_first_of(";#");
    if (cut != std::string::npos) line = TrimLine(line.substr(0, cut));
    if (line.empty()) continue;
    absl::StatusOr<std::string> substituted = SubstituteVars(line, opt.lookup_var, opt.limits.max_line_length);
    if (!substituted.ok()) return At(filename, line_no, std::string(substituted.status().message()));
    line = *std::move(substituted);
    if (line[0] == '[') {
      if (is_include) {
        st.warnings->Add(absl::StrCat(filename, ":", line_no,
                                      ": no new sections in included files; rest of include ignored"));
        return absl::OkStatus();
      }
      if (line.size() < 2) return At(filename, line_no, "bad section header");
      std::string name = line.substr(1, line.size() - 2);
      if (name.empty()) return At(filename, line_no, "empty section name");
      if (name.size() > opt.limits.max_name_length) return At(filename, line_no, "section name too long");
      if (st.sections->size() >= opt.limits.max_sections) {
        return At(filename, line_no, absl::StrCat("more than ", opt.limits.max_sections, " sections"));
      }
      Section s;
      s.is_global = StartsWith(name, "global");
      s.name = std::move(name);
      s.file = filename;
      s.line = line_no;
      st.sections->push_back(std::move(s));
      continue;
    }
    const bool is_include_line =
        StartsWith(line, "include") && line.size() > 8 && std::isspace(static_cast<unsigned char>(line[7]));
    if (st.sections->empty()) {
      return At(filename, line_no,
                absl::StrCat("option ", is_include_line ? "include" : SplitOptionLine(line, filename, line_no).name,
                             " outside of [] job section"));
    }
    if (is_include_line) {
      BLKLAB_RETURN_IF_ERROR(HandleInclude(line.substr(8), filename, line_no, depth, st));
      continue;
    }
    OptionLine ol = SplitOptionLine(line, filename, line_no);
    if (ol.value.has_value()) {
      absl::Status s = SubstituteKeywords(&*ol.value, opt.host);
      if (!s.ok()) {
        return At(filename, line_no,
                  absl::StrCat("failed parsing ", QuoteForError(ol.name), "=", QuoteForError(*ol.value), ": ", s.message()));
      }
    }
    st.sections->back().lines.push_back(std::move(ol));
  }
  return absl::OkStatus();
}

// Applies one line; errors get file:line.
absl::Status ApplyLine(const OptionLine& ol, JobSpec* spec, const ParseOptions& opt, Warnings& warnings) {
  const OptionDef* def = FindOption(ol.name);
  if (def == nullptr) {
    std::string msg = absl::StrCat("Bad option <", ol.name, ">");
    const std::string hint = SuggestOption(ol.name);
    if (!hint.empty()) absl::StrAppend(&msg, "; did you mean ", hint, "?");
    return At(ol.file, ol.line, msg);
  }
  if (def->is_engine_private() && !def->EngineHasIt(spec->ioengine_name)) {
    return At(ol.file, ol.line,
              absl::StrCat("Bad option <", ol.name, ">: not an option of ioengine=", spec->ioengine_name,
                           " (engine options of ", def->engines, ")"));
  }
  ApplyContext ctx;
  ctx.accept_unmodelled_engines = opt.accept_unmodelled_engines;
  std::vector<std::string> w;
  ctx.warnings = &w;
  absl::Status s = ApplyOption(*def, ol.value, spec, ctx);
  if (!s.ok()) return At(ol.file, ol.line, s.message());
  for (const std::string& x : w) warnings.Add(absl::StrCat(ol.file, ":", ol.line, ": ", x));
  if (def->tier == 3) {
    warnings.Add(absl::StrCat("option ", def->name, " is accepted but not modelled by blklab (ignored)"));
  }
  return absl::OkStatus();
}

// Applies a section's lines. Job-file sections follow fio's priority order in
// the part that matters: kb_base and ioengine before everything else; the
// command line is applied strictly in order (engine options must follow
// --ioengine).
absl::Status ApplySection(const Section& s, bool in_order, JobSpec* spec, const ParseOptions& opt,
                          Warnings& warnings) {
  auto early = [](const OptionLine& ol) {
    const OptionDef* d = FindOption(ol.name);
    return d != nullptr && (d->id == OptionId::kKbBase || d->id == OptionId::kIoengine);
  };
  if (!in_order) {
    for (const OptionLine& ol : s.lines) {
      if (early(ol)) BLKLAB_RETURN_IF_ERROR(ApplyLine(ol, spec, opt, warnings));
    }
  }
  for (const OptionLine& ol : s.lines) {
    if (!in_order && early(ol)) continue;
    BLKLAB_RETURN_IF_ERROR(ApplyLine(ol, spec, opt, warnings));
  }
  return absl::OkStatus();
}

void AppendWritten(const Section& s, std::vector<WrittenOption>* out) {
  for (const OptionLine& ol : s.lines) out->push_back({ol.name, ol.value.value_or("")});
}

// Normalises dependent defaults once all options are known.
absl::Status FinishJob(JobSpec* job) {
  if (job->iodepth_batch_complete_max == 0) {
    job->iodepth_batch_complete_max = job->iodepth_batch_complete_min;
  }
  if (job->iodepth_batch_complete_max < job->iodepth_batch_complete_min) {
    return At(job->source_file, job->source_line,
              absl::StrCat("job ", job->name, ": iodepth_batch_complete_max below iodepth_batch_complete_min"));
  }
  if (job->iodepth_low > job->iodepth) job->iodepth_low = job->iodepth;
  return absl::OkStatus();
}

class JobBuilder {
 public:
  JobBuilder(const ParseOptions& opt, ParsedJobs* out) : opt_(opt), out_(out), warnings_(&out->warnings) {}

  // Applies sections of one source with `defaults` as the running defaults.
  absl::Status AddSections(const std::vector<Section>& sections, JobSpec* defaults, bool in_order,
                           bool stonewall_first, const std::vector<std::string>& only) {
    bool first = true;
    for (const Section& s : sections) {
      if (s.is_global) {
        BLKLAB_RETURN_IF_ERROR(ApplySection(s, in_order, defaults, opt_, warnings_));
        AppendWritten(s, &out_->global_options);
        continue;
      }
      if (!only.empty() && std::find(only.begin(), only.end(), s.name) == only.end()) continue;
      JobSpec job = *defaults;
      job.name = s.name;
      job.options_written.clear();
      job.source_file = s.file;
      job.source_line = s.line;
      BLKLAB_RETURN_IF_ERROR(ApplySection(s, in_order, &job, opt_, warnings_));
      AppendWritten(s, &job.options_written);
      for (const OptionLine& ol : opt_.job_overrides) {
        BLKLAB_RETURN_IF_ERROR(ApplyLine(ol, &job, opt_, warnings_));
        job.options_written.push_back({ol.name, ol.value.value_or("")});
      }
      if (stonewall_first && first) job.stonewall = true;
      first = false;
      BLKLAB_RETURN_IF_ERROR(FinishJob(&job));
      out_->jobs.push_back(std::move(job));
    }
    return absl::OkStatus();
  }

  // wait_for checks, groups and clones (a.7).
  absl::Status Finish() {
    uint64_t total = 0;
    for (size_t i = 0; i < out_->jobs.size(); ++i) {
      JobSpec& job = out_->jobs[i];
      if (!job.wait_for.empty()) {
        int found = 0;
        for (size_t j = 0; j < i; ++j) found += out_->jobs[j].name == job.wait_for ? 1 : 0;
        if (found != 1) {
          return At(job.source_file, job.source_line,
                    absl::StrCat("wait_for=", job.wait_for, ": ",
                                 found == 0 ? "no earlier job of that name" : "job name is not unique"));
        }
      }
      total += job.numjobs;
      if (total > opt_.limits.max_total_clones) {
        return At(job.source_file, job.source_line,
                  absl::StrCat("more than ", opt_.limits.max_total_clones, " jobs in total (numjobs)"));
      }
    }
    uint32_t group = 0;
    uint32_t in_group = 0;
    uint32_t thread_number = 1;
    for (size_t i = 0; i < out_->jobs.size(); ++i) {
      JobSpec& job = out_->jobs[i];
      if ((job.stonewall || job.new_group) && in_group > 0) {
        ++group;
        in_group = 0;
      }
      job.group_id = group;
      ++in_group;
      for (uint32_t c = 0; c < job.numjobs; ++c) {
        out_->clones.push_back(JobClone{static_cast<uint32_t>(i), c, thread_number++, group});
      }
    }
    return absl::OkStatus();
  }

 private:
  const ParseOptions& opt_;
  ParsedJobs* out_;
  Warnings warnings_;
};

// fio's own flags. `takes_value`: required argument (also as next argument).
struct FioFlag {
  const char* name;
  bool takes_value;
  bool optional_value;
};
constexpr FioFlag kFioFlags[] = {
    {"output", true, false},       {"output-format", true, false}, {"minimal", false, false},
    {"terse-version", true, false}, {"parse-only", false, false},  {"showcmd", false, false},
    {"status-interval", true, false}, {"section", true, false},    {"eta", true, false},
    {"eta-newline", true, false},  {"eta-interval", true, false},  {"warnings-fatal", false, false},
    {"version", false, false},     {"cmdhelp", false, true},       {"enghelp", false, true},
    {"readonly", false, false},    {"debug", true, false},         {"help", false, false},
    {"append-terse", false, false}, {"max-jobs", true, false},     {"bandwidth-log", false, false},
    {"latency-log", false, false}, {"alloc-size", true, false},    {"inflate-log", true, false},
    {"trigger-file", true, false}, {"trigger-timeout", true, false}, {"trigger", true, false},
    {"trigger-remote", true, false}, {"aux-path", true, false},   {"idle-prof", true, false},
    {"crctest", false, true},      {"server", false, true},        {"client", true, false},
    {"remote-config", true, false}, {"daemonize", true, false},    {"exitall_on_error", false, false},
};

const FioFlag* FindFioFlag(const std::string& name) {
  for (const FioFlag& f : kFioFlags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

absl::Status ApplyFioFlag(const std::string& name, const std::optional<std::string>& value,
                          FioInvocation* inv) {
  const std::string v = value.value_or("");
  if (name == "output") {
    inv->output = v;
  } else if (name == "output-format") {
    inv->output_formats.clear();
    for (absl::string_view f : absl::StrSplit(v, ',', absl::SkipEmpty())) {
      if (f == "normal") inv->output_formats.push_back(OutputFormat::kNormal);
      else if (f == "terse") inv->output_formats.push_back(OutputFormat::kTerse);
      else if (f == "json") inv->output_formats.push_back(OutputFormat::kJson);
      else if (f == "json+") inv->output_formats.push_back(OutputFormat::kJsonPlus);
      else return absl::InvalidArgumentError(absl::StrCat("unknown output format '", f, "'"));
    }
    if (inv->output_formats.empty()) return absl::InvalidArgumentError("empty --output-format");
  } else if (name == "minimal") {
    inv->output_formats = {OutputFormat::kTerse};
  } else if (name == "terse-version") {
    auto t = ParseUint(v);
    if (!t.ok() || *t < 2 || *t > 5) return absl::InvalidArgumentError(absl::StrCat("bad --terse-version=", v));
    inv->terse_version = static_cast<int>(*t);
  } else if (name == "parse-only") {
    inv->parse_only = true;
  } else if (name == "showcmd") {
    inv->showcmd = true;
  } else if (name == "status-interval") {
    auto t = ParseTimeNs(v, TimeUnit::kSeconds);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("bad --status-interval=", v));
    inv->status_interval_ns = *t;
  } else if (name == "section") {
    inv->sections.push_back(v);
  } else if (name == "eta") {
    if (v != "never" && v != "always" && v != "auto") {
      return absl::InvalidArgumentError(absl::StrCat("bad --eta=", v, " (never, always, auto)"));
    }
    inv->eta = v;
  } else if (name == "warnings-fatal") {
    inv->warnings_fatal = true;
  } else if (name == "version") {
    inv->version = true;
  } else if (name == "help") {
    inv->help = true;
  } else if (name == "cmdhelp") {
    inv->cmdhelp = v;
  } else if (name == "enghelp") {
    inv->enghelp = v;
  } else if (name == "readonly") {
    inv->readonly = true;
  } else if (name == "server" || name == "client" || name == "daemonize" || name == "remote-config") {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " is not supported by blklab"));
  }
  // Other flags are display/host controls without effect in the simulator.
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> EvaluateArithmetic(const std::string& expr) {
  if (expr.size() > 4096) return absl::InvalidArgumentError("expression too long");
  return ArithParser(expr).Parse();
}

absl::StatusOr<FioInvocation> ParseFioArgs(const std::vector<std::string>& args) {
  FioInvocation inv;
  inv.cmdline_sections.push_back(Section{"", true, kCommandLine, 0, {}});
  constexpr size_t kMaxArgs = 100000;
  if (args.size() > kMaxArgs) return absl::InvalidArgumentError("too many arguments");
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-' || a == "-") {
      inv.job_files.push_back(a);
      continue;
    }
    std::string body = a[1] == '-' ? a.substr(2) : a.substr(1);
    std::string name = body;
    std::optional<std::string> value;
    const size_t eq = body.find('=');
    if (eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
    }
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("bad argument '", a, "'"));
    // fio's short forms: -h (--help), -v (--version).
    if (a[1] != '-' && (name == "h" || name == "v") && !value) name = name == "h" ? "help" : "version";
    if (name == "name") {
      if (!value.has_value()) {
        if (i + 1 >= args.size()) return absl::InvalidArgumentError("Option name requires an argument");
        value = args[++i];
      }
      if (value->empty() || value->size() > 255) return absl::InvalidArgumentError("bad --name");
      Section s;
      s.name = *value;
      s.is_global = StartsWith(*value, "global");
      s.file = kCommandLine;
      s.line = static_cast<int>(i + 1);
      inv.cmdline_sections.push_back(std::move(s));
      continue;
    }
    if (const FioFlag* f = FindFioFlag(name); f != nullptr) {
      if (f->takes_value && !value.has_value()) {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(absl::StrCat("option --", name, " requires an argument"));
        }
        value = args[++i];
      }
      BLKLAB_RETURN_IF_ERROR(ApplyFioFlag(name, value, &inv));
      continue;
    }
    if (FindOption(name) == nullptr) {
      std::string msg = absl::StrCat("unrecognized option '--", name, "'");
      const std::string hint = SuggestOption(name);
      if (!hint.empty()) absl::StrAppend(&msg, "; did you mean --", hint, "?");
      return absl::InvalidArgumentError(msg);
    }
    inv.cmdline_sections.back().lines.push_back(
        OptionLine{name, value, kCommandLine, static_cast<int>(i + 1)});
  }
  return inv;
}

absl::StatusOr<std::vector<Section>> ParseJobFileSections(const std::string& text,
                                                          const std::string& filename,
                                                          const ParseOptions& options) {
  std::vector<Section> sections;
  std::vector<std::string> warnings;
  Warnings w(&warnings);
  ParseBudget budget;
  FileParseState st{&options, &sections, &w, &budget};
  BLKLAB_RETURN_IF_ERROR(ChargeBytes(st, filename, text.size()));
  BLKLAB_RETURN_IF_ERROR(ParseText(text, filename, 0, false, st));
  return sections;
}

absl::StatusOr<ParsedJobs> ParseJobFile(const std::string& text, const std::string& filename,
                                        const ParseOptions& options) {
  ParsedJobs out;
  std::vector<Section> sections;
  {
    Warnings w(&out.warnings);
    ParseBudget budget;
    FileParseState st{&options, &sections, &w, &budget};
    BLKLAB_RETURN_IF_ERROR(ChargeBytes(st, filename, text.size()));
    BLKLAB_RETURN_IF_ERROR(ParseText(text, filename, 0, false, st));
  }
  JobBuilder b(options, &out);
  JobSpec defaults;
  BLKLAB_RETURN_IF_ERROR(b.AddSections(sections, &defaults, false, false, options.sections));
  BLKLAB_RETURN_IF_ERROR(b.Finish());
  return out;
}

absl::StatusOr<ParsedJobs> BuildJobs(const FioInvocation& inv, const ParseOptions& options) {
  ParsedJobs out;
  std::vector<std::string> only = options.sections;
  only.insert(only.end(), inv.sections.begin(), inv.sections.end());
  JobBuilder b(options, &out);
  JobSpec cmd_defaults;
  BLKLAB_RETURN_IF_ERROR(b.AddSections(inv.cmdline_sections, &cmd_defaults, true, false, {}));
  size_t total_sections = inv.cmdline_sections.size();
  ParseBudget budget;  // over every job file of the invocation
  for (size_t i = 0; i < inv.job_files.size(); ++i) {
    const std::string& file = inv.job_files[i];
    if (!options.read_file) return absl::InvalidArgumentError(absl::StrCat("cannot read job file ", file));
    absl::StatusOr<std::string> text = options.read_file(file);
    if (!text.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot read job file ", file, ": ", text.status().message()));
    }
    std::vector<Section> sections;
    {
      Warnings w(&out.warnings);
      FileParseState st{&options, &sections, &w, &budget};
      BLKLAB_RETURN_IF_ERROR(ChargeBytes(st, file, text->size()));
      BLKLAB_RETURN_IF_ERROR(ParseText(*text, file, 0, false, st));
    }
    total_sections += sections.size();
    if (total_sections > options.limits.max_sections) {
      return absl::InvalidArgumentError(absl::StrCat("more than ", options.limits.max_sections, " sections"));
    }
    // The first file starts from the command-line globals; later files from
    // fio's built-in defaults, and their first job waits for all before it.
    JobSpec defaults = i == 0 ? cmd_defaults : JobSpec{};
    BLKLAB_RETURN_IF_ERROR(b.AddSections(sections, &defaults, false, i > 0, only));
  }
  BLKLAB_RETURN_IF_ERROR(b.Finish());
  return out;
}

}  // namespace blklab::workload
