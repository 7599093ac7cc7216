// libFuzzer target: the input split on NUL and newline into argv for
// ParseFioArgs, then BuildJobs, ShowCmd, CmdHelp and EngHelp as fio's main
// would call them. Job files named on the "command line" come from the fixed
// in-memory set (job.fio is a small valid job file).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/workload/job_parser.h"
#include "engine/workload/option_help.h"
#include "engine/workload/show_cmd.h"
#include "tests/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  if (args.size() > 4096) return 0;

  auto inv = blklab::workload::ParseFioArgs(args);
  if (!inv.ok()) return 0;
  if (inv->cmdline_sections.empty()) abort();
  static const std::string kJob = "[global]\nioengine=io_uring\n[a]\nrw=randread\nbs=4k\nhipri\n[b]\nnumjobs=2\n";
  blklab::workload::ParseOptions opt = blklab::fuzz::FuzzParseOptions(&kJob);
  auto built = blklab::workload::BuildJobs(*inv, opt);
  if (built.ok()) {
    for (size_t i = 0; i < built->clones.size(); ++i) {
      if (built->clones[i].thread_number != i + 1) abort();
    }
  }
  (void)blklab::workload::ShowCmd(*inv, opt);
  if (inv->cmdhelp.has_value()) (void)blklab::workload::CmdHelp(*inv->cmdhelp);
  if (inv->enghelp.has_value()) (void)blklab::workload::EngHelp(*inv->enghelp);
  return 0;
}
