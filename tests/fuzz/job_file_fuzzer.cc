// libFuzzer target: a job file of arbitrary bytes through ParseJobFile,
// BuildJobs (as the first and a later job file, with --section) and ShowCmd.
// Any crash, sanitizer report, hang or broken invariant is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/workload/job_parser.h"
#include "engine/workload/show_cmd.h"
#include "tests/fuzz/fuzz_files.h"

namespace {

using blklab::workload::ParsedJobs;

void CheckInvariants(const ParsedJobs& p) {
  uint32_t last_group = 0;
  for (size_t i = 0; i < p.clones.size(); ++i) {
    const auto& c = p.clones[i];
    if (c.thread_number != i + 1 || c.job_index >= p.jobs.size() || c.group_id < last_group) abort();
    last_group = c.group_id;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  blklab::workload::ParseOptions opt = blklab::fuzz::FuzzParseOptions(&text);

  auto parsed = blklab::workload::ParseJobFile(text, "job.fio", opt);
  if (parsed.ok()) CheckInvariants(*parsed);

  blklab::workload::FioInvocation inv;
  inv.job_files = {"job.fio", "other.fio"};
  inv.cmdline_sections.push_back({"", true, "<command line>", 0, {{"bs", "16k", "<command line>", 1}}});
  inv.sections = {"a"};
  auto built = blklab::workload::BuildJobs(inv, opt);
  if (built.ok()) CheckInvariants(*built);

  inv.sections.clear();
  auto shown = blklab::workload::ShowCmd(inv, opt);
  if (shown.ok() && (shown->empty() || shown->back() != '\n')) abort();
  // A file fio accepts must read back the same through its own --showcmd line.
  if (parsed.ok()) {
    auto sections = blklab::workload::ParseJobFileSections(text, "job.fio", opt);
    if (!sections.ok()) abort();
    (void)blklab::workload::SplitShowCmdLine(blklab::workload::ShowCmdLine(*sections));
  }
  return 0;
}
