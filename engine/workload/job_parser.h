// engine/workload/job_parser.h
//
// fio's front end: the command line (fio's init.c parse_cmd_line) and the
// job-file grammar (init.c parse_jobs_ini), turned into typed JobSpecs, plus
// the rules that form jobs from them (docs/fio-compatibility.md a.1-a.7): [global*]
// sections, inline `;`/`#` comments, `include`, `${VAR}` and `$ncpus`-style
// substitution, bare flags, command-line globals under job-file settings,
// command-line jobs first, later job files reset to built-in defaults with an
// implicit stonewall, numjobs clones with thread numbers, and reporting
// groups from stonewall/new_group.
//
// The parser never touches the file system or the environment itself: job
// files and includes are read through ParseOptions::read_file and `${VAR}`
// through ParseOptions::lookup_var, so a server can confine both to a
// submitted bundle. Input is untrusted: every size is bounded (ParseLimits)
// and every error is an InvalidArgument naming the file, the line and the
// option ("job.fio:7: failed parsing bs=abc: ...").
//
// Invariants of the result: clones are in thread-number order (1, 2, ...);
//   each clone's job_index is valid; group ids are non-decreasing.
// Thread-safety: stateless functions; safe from any thread if the callbacks are.
// Cost: linear in the input; bounded by ParseLimits.
#ifndef BLKLAB_ENGINE_WORKLOAD_JOB_PARSER_H_
#define BLKLAB_ENGINE_WORKLOAD_JOB_PARSER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/workload/job_spec.h"

namespace blklab::workload {

// Reads a job file or include by path (as written, or joined to the
// including file's directory). Should return NotFound for missing files.
using FileReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;
// Looks up `${NAME}`; nullopt = unset (substituted as "").
using VarLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Values for fio's reserved keywords $pagesize, $mb_memory, $ncpus: the
// simulated host's, never the real machine's.
struct HostValues {
  uint64_t page_size = 4096;
  uint64_t mb_memory = 16384;
  uint32_t ncpus = 2;
};

struct ParseLimits {
  size_t max_input_bytes = 4u << 20;  // per file
  size_t max_line_length = 8192;
  int max_include_depth = 8;
  // Over a whole invocation (every job file and what it includes): include
  // directives followed, and bytes of job-file text read. Checked before the
  // work, so a fan-out of includes is refused at once.
  size_t max_includes = 256;
  size_t max_total_bytes = 16u << 20;
  size_t max_sections = 4096;       // per invocation, global sections included
  uint32_t max_total_clones = 4096; // sum of numjobs over all jobs
  size_t max_name_length = 255;
};

// One option line, as found in a file or on the command line.
struct OptionLine {
  std::string name;
  std::optional<std::string> value;  // nullopt: bare
  std::string file;                  // job file path or "<command line>"
  int line = 0;                      // 1-based line, or argument index
};

struct ParseOptions {
  FileReader read_file;   // null: includes and job files cannot be read
  VarLookup lookup_var;   // null: every ${VAR} is unset
  HostValues host;
  ParseLimits limits;
  // Keep jobs whose engine blklab does not model (like fio --parse-only);
  // otherwise such a job is an error "ioengine=X is not modelled by blklab".
  bool accept_unmodelled_engines = false;
  // --section: only these job sections run (empty: all).
  std::vector<std::string> sections;
  // Options applied to every job after its own section's lines, so that
  // they win over the job file's (blklab compare's fio.KEY=VALUE overlays).
  std::vector<OptionLine> job_overrides;
};

enum class OutputFormat : uint8_t { kNormal, kTerse, kJson, kJsonPlus };

// A `[name]` section (or a command-line --name group).
struct Section {
  std::string name;
  bool is_global = false;
  std::string file;
  int line = 0;
  std::vector<OptionLine> lines;
};

// The fio command line, with fio's own flags apart from job options.
struct FioInvocation {
  std::string output;  // --output (empty: stdout)
  std::vector<OutputFormat> output_formats = {OutputFormat::kNormal};
  int terse_version = 3;
  bool parse_only = false;
  bool showcmd = false;
  bool version = false;
  bool help = false;  // --help / -h: print the usage
  bool warnings_fatal = false;
  bool readonly = false;
  std::optional<std::string> cmdhelp;   // --cmdhelp[=OPTION]; "" = all
  std::optional<std::string> enghelp;   // --enghelp[=ENGINE]
  int64_t status_interval_ns = 0;
  std::string eta = "auto";             // never | always | auto
  std::vector<std::string> sections;    // --section (repeatable)
  std::vector<std::string> job_files;   // non-option arguments ("-" = stdin)
  // Command-line job options: section 0 holds the globals given before any
  // --name; each --name=X opens a further section.
  std::vector<Section> cmdline_sections;
};

// Parses fio's arguments (argv without argv[0]).
absl::StatusOr<FioInvocation> ParseFioArgs(const std::vector<std::string>& args);

// A clone of a job (numjobs, a.7).
struct JobClone {
  uint32_t job_index = 0;      // into ParsedJobs::jobs
  uint32_t clone_index = 0;    // 0-based within the job
  uint32_t thread_number = 0;  // 1-based over all clones
  uint32_t group_id = 0;
};

struct ParsedJobs {
  std::vector<JobSpec> jobs;    // job definitions, command-line jobs first
  std::vector<JobClone> clones; // every clone, thread-number order
  std::vector<WrittenOption> global_options;  // all [global] lines, as written
  std::vector<std::string> warnings;          // each at most once
};

// Splits one job file into sections (a.1-a.3). `filename` is used in errors
// and to resolve relative includes.
absl::StatusOr<std::vector<Section>> ParseJobFileSections(const std::string& text,
                                                          const std::string& filename,
                                                          const ParseOptions& options);

// Parses one job file's text into jobs (no command line).
absl::StatusOr<ParsedJobs> ParseJobFile(const std::string& text, const std::string& filename,
                                        const ParseOptions& options);

// Forms the jobs of a whole invocation: command-line jobs, then each job
// file (read through options.read_file) by the a.6 rules. The invocation's
// --section list is used in addition to options.sections.
absl::StatusOr<ParsedJobs> BuildJobs(const FioInvocation& invocation, const ParseOptions& options);

// Evaluates fio's `bc`-style arithmetic over integers (+ - * / % ^ and
// parentheses), used after $pagesize/$mb_memory/$ncpus substitution.
absl::StatusOr<int64_t> EvaluateArithmetic(const std::string& expr);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_JOB_PARSER_H_
