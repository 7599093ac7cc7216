// tests/fuzz/fuzz_files.h
//
// The fixed, in-memory world the parser fuzzers run in: a handful of include
// files (nested, self-including, with a forbidden section header, with
// substitutions) served by a FileReader, and a VarLookup with fixed values.
// Nothing touches the real file system or environment.
#ifndef BLKLAB_TESTS_FUZZ_FUZZ_FILES_H_
#define BLKLAB_TESTS_FUZZ_FUZZ_FILES_H_

#include <optional>
#include <string>

#include "engine/workload/job_parser.h"

namespace blklab::fuzz {

// Reads the fixed include set; `main_text` is served as "job.fio" and
// "other.fio" (so BuildJobs over several files sees the fuzz input twice).
inline workload::FileReader FixedReader(const std::string* main_text) {
  return [main_text](const std::string& path) -> absl::StatusOr<std::string> {
    if (path == "job.fio" || path == "other.fio") return *main_text;
    if (path == "inc.fio") return std::string("bs=8k\nrw=randread ; comment\n");
    if (path == "nested.fio") return std::string("include inc.fio\niodepth=4\n");
    if (path == "self.fio") return std::string("include self.fio\n");
    if (path == "sect.fio") return std::string("size=1m\n[x]\nbs=4k\n");
    if (path == "vars.fio") return std::string("bs=${BS}\nsize=$mb_memory\nnumjobs=$ncpus\n");
    if (path == "dir/inc.fio") return std::string("include inc.fio\n");
    return absl::NotFoundError(path);
  };
}

inline workload::VarLookup FixedVars() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (name == "BS") return std::string("4k");
    if (name == "RW") return std::string("randread");
    if (name == "EMPTY") return std::string();
    if (name == "LONG") return std::string(1000, 'x');
    if (name == "SELF") return std::string("${SELF}");
    return std::nullopt;
  };
}

// Small limits so that each input stays cheap.
inline workload::ParseOptions FuzzParseOptions(const std::string* main_text) {
  workload::ParseOptions opt;
  opt.read_file = FixedReader(main_text);
  opt.lookup_var = FixedVars();
  opt.accept_unmodelled_engines = true;
  opt.limits.max_input_bytes = 64 << 10;
  opt.limits.max_sections = 256;
  opt.limits.max_total_clones = 512;
  return opt;
}

}  // namespace blklab::fuzz

#endif  // BLKLAB_TESTS_FUZZ_FUZZ_FILES_H_
