#include "engine/workload/job_parser.h"

#include <map>

#include "gtest/gtest.h"
#include "engine/sim/rng.h"
#include "engine/workload/option_table.h"

namespace blklab::workload {
namespace {

ParseOptions Opts(std::map<std::string, std::string> files = {}) {
  ParseOptions o;
  o.read_file = [files](const std::string& p) -> absl::StatusOr<std::string> {
    auto it = files.find(p);
    if (it == files.end()) return absl::NotFoundError(p);
    return it->second;
  };
  return o;
}

ParsedJobs MustParse(const std::string& text, ParseOptions o = Opts()) {
  auto r = ParseJobFile(text, "job.fio", o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ParsedJobs{};
}

std::string ErrorOf(const std::string& text, ParseOptions o = Opts()) {
  auto r = ParseJobFile(text, "job.fio", o);
  EXPECT_FALSE(r.ok());
  return std::string(r.status().message());
}

TEST(JobParserTest, GlobalsInheritOnlyDownwards) {
  auto p = MustParse("[global]\nbs=8k\n[a]\n[global-two]\nbs=16k\n[b]\nrw=randwrite\n");
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_EQ(p.jobs[0].bs[0], 8192u);
  EXPECT_EQ(p.jobs[1].bs[0], 16384u);
  EXPECT_EQ(p.jobs[1].rw, RwPattern::kRandWrite);
  EXPECT_EQ(p.global_options.size(), 2u);
}

TEST(JobParserTest, IncludeFanOutIsRefusedBeforeTheWork) {
  // Each level includes the next ten times, seven levels (within the depth
  // limit): 10^7 includes if followed. The budget stops it at max_includes,
  // at once.
  std::map<std::string, std::string> files;
  for (int level = 1; level <= 7; ++level) {
    std::string body;
    for (int k = 0; k < 10; ++k) body += "include l" + std::to_string(level + 1) + ".fio\n";
    files["l" + std::to_string(level) + ".fio"] = body;
  }
  files["l8.fio"] = "bs=4k\n";
  ParseOptions o = Opts(files);
  auto r = ParseJobFile("[a]\ninclude l1.fio\n", "job.fio", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("more than 256 includes"), std::string::npos) << r.status();
  // The same bytes many times over: the total-bytes budget.
  o.limits.max_includes = 1u << 20;
  std::string big;
  while (big.size() < (1u << 20)) big += "; a comment line\n";
  files["big.fio"] = big;
  o = Opts(files);
  o.limits.max_includes = 1u << 20;
  std::string many = "[a]\n";
  for (int k = 0; k < 40; ++k) many += "include big.fio\n";
  r = ParseJobFile(many, "job.fio", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than 16777216 bytes in all"), std::string::npos) << r.status();
}

TEST(JobParserTest, SubstitutionIsBoundedBeforeItIsMade) {
  ParseOptions o = Opts();
  const std::string huge(1u << 20, 'x');
  o.lookup_var = [&huge](const std::string&) -> std::optional<std::string> { return huge; };
  std::string line = "[a]\nname=";
  for (int k = 0; k < 2000; ++k) line += "${A}";
  const std::string e = ErrorOf(line + "\n", o);
  EXPECT_NE(e.find("longer than 8192 bytes after substituting ${A}"), std::string::npos) << e;
  // Errors quote a short prefix of a long value, not the value.
  const std::string long_value(5000, '7');
  const std::string e2 = ErrorOf("[a]\nbs=" + long_value + "k\n", Opts());
  EXPECT_LT(e2.size(), 300u) << e2;
  EXPECT_NE(e2.find("(5001 bytes)"), std::string::npos) << e2;
}

TEST(JobParserTest, JobOverridesWinOverEveryJobsOwnLines) {
  ParseOptions o = Opts();
  o.job_overrides.push_back(OptionLine{"iodepth", std::string("32"), "<compare>", 0});
  ParsedJobs p = MustParse("[global]\niodepth=4\n[a]\niodepth=8\n[b]\n", o);
  ASSERT_EQ(p.jobs.size(), 2u);
  EXPECT_EQ(p.jobs[0].iodepth, 32u);
  EXPECT_EQ(p.jobs[1].iodepth, 32u);
  o.job_overrides[0].value = "lots";
  EXPECT_NE(ErrorOf("[a]\n", o).find("iodepth"), std::string::npos);
}

TEST(JobParserTest, CommentsAndWhitespaceQuirks) {
  auto p = MustParse("; c\n# c\n[x y]\nfilename=/tmp/a#b\nbs=8k ; note\nrw =randread\n");
  ASSERT_EQ(p.jobs.size(), 1u);
  EXPECT_EQ(p.jobs[0].name, "x y");
  EXPECT_EQ(p.jobs[0].filenames, std::vector<std::string>{"/tmp/a"});
  EXPECT_EQ(p.jobs[0].bs[1], 8192u);
  EXPECT_EQ(p.jobs[0].rw, RwPattern::kRandRead);
  EXPECT_EQ(MustParse("[a]\nbs= 8k\n").jobs[0].bs[0], 8u);
  EXPECT_NE(ErrorOf("[a]\nrw= randread\n").find("rw"), std::string::npos);
}

TEST(JobParserTest, AliasesAndLastWins) {
  auto p = MustParse("[a]\nreadwrite=randrw\nblocksize=2k\nrwmixwrite=30\nrwmixread=30\ntimeout=5\n"
                     "iodepth_batch=4\nio_limit=1m\nwait_for_previous\nba=512\n");
  const JobSpec& j = p.jobs[0];
  EXPECT_EQ(j.rw, RwPattern::kRandRw);
  EXPECT_EQ(j.bs[2], 2048u);
  EXPECT_EQ(j.rwmixread, 30u);
  EXPECT_EQ(j.runtime_ns, 5 * kNsPerSec);
  EXPECT_EQ(j.iodepth_batch_submit, 4u);
  EXPECT_EQ(j.io_size.bytes, 1048576u);
  EXPECT_TRUE(j.stonewall);
  EXPECT_EQ(j.blockalign[0], 512u);
  EXPECT_EQ(MustParse("[a]\nrwmixread=30\nrwmixwrite=30\n").jobs[0].rwmixread, 70u);
}

TEST(JobParserTest, ErrorsNameFileLineAndOption) {
  EXPECT_EQ(ErrorOf("[a]\n\nbsz=4k\n"), "job.fio:3: Bad option <bsz>; did you mean bs?");
  EXPECT_EQ(ErrorOf("[a]\ndirect\n"), "job.fio:2: Option direct requires an argument");
  const std::string e = ErrorOf("[a]\nbs=abc\n");
  EXPECT_NE(e.find("job.fio:2: failed parsing bs=abc"), std::string::npos) << e;
  EXPECT_NE(ErrorOf("bs=4k\n[a]\n").find("outside of [] job section"), std::string::npos);
  EXPECT_NE(ErrorOf("[a]\nrw=rand\n").find("valid values"), std::string::npos);
  EXPECT_NE(ErrorOf("[a]\nrw=randreadX\n").find("rw"), std::string::npos);
  MustParse("[a]\nrw=read,\n");
}

TEST(JobParserTest, BareFlags) {
  auto p = MustParse("[a]\ntime_based\ngroup_reporting\nthread\nnorandommap\nwrite_bw_log\n"
                     "write_lat_log=pre\n");
  const JobSpec& j = p.jobs[0];
  EXPECT_TRUE(j.time_based && j.group_reporting && j.thread && j.norandommap);
  EXPECT_TRUE(j.write_bw_log.enabled);
  EXPECT_EQ(j.write_lat_log.prefix, "pre");
  for (const char* o : {"randrepeat", "buffered", "disk_util", "lat_percentiles", "per_job_logs",
                        "log_offset", "percentage_random"}) {
    EXPECT_NE(ErrorOf(std::string("[a]\n") + o + "\n").find("requires an argument"), std::string::npos) << o;
  }
}

TEST(JobParserTest, EnginePrivateOptions) {
  auto p = MustParse("[a]\nhipri\nfixedbufs\nsqthread_poll=1\nioengine=io_uring\n");
  EXPECT_EQ(p.jobs[0].ioengine, IoEngine::kIoUring);
  EXPECT_TRUE(p.jobs[0].engine_flags.hipri);
  EXPECT_TRUE(p.jobs[0].engine_flags.fixedbufs);
  EXPECT_TRUE(p.jobs[0].engine_flags.sqthread_poll);
  EXPECT_TRUE(MustParse("[a]\nioengine=pvsync2\nhipri\n").jobs[0].engine_flags.hipri);
  EXPECT_NE(ErrorOf("[a]\nioengine=libaio\nhipri\n").find("Bad option <hipri>"), std::string::npos);
  // Engine option in [global] while the engine is set only in the job.
  EXPECT_NE(ErrorOf("[global]\nhipri\n[a]\nioengine=io_uring\n").find("hipri"), std::string::npos);
}

TEST(JobParserTest, UnmodelledEngines) {
  EXPECT_EQ(ErrorOf("[a]\nioengine=cpuio\ncpuload=50\n"), "job.fio:2: ioengine=cpuio is not modelled by blklab");
  ParseOptions o = Opts();
  o.accept_unmodelled_engines = true;
  auto p = MustParse("[a]\nioengine=cpuio\ncpuload=50\n", o);
  EXPECT_EQ(p.jobs[0].ioengine, IoEngine::kUnmodelled);
  EXPECT_EQ(p.jobs[0].ioengine_name, "cpuio");
}

TEST(JobParserTest, KbBaseAppliesRegardlessOfOrder) {
  EXPECT_EQ(MustParse("[a]\nbs=4k\nkb_base=1000\n").jobs[0].bs[0], 4000u);
}

TEST(JobParserTest, Tier3OptionsWarnOnce) {
  auto p = MustParse("[a]\nnice=1\n[b]\nnice=2\n");
  int n = 0;
  for (const auto& w : p.warnings) n += w.find("nice") != std::string::npos;
  EXPECT_EQ(n, 1);
}

// fio's default direct=0 (buffered) runs as direct I/O: said once, not for
// direct=1 jobs nor fio's null engine.
TEST(JobParserTest, BufferedIsFiosDefault) {
  // Buffered I/O goes through the page cache model: no warning.
  const ParsedJobs p = MustParse("[a]\nrw=read\n[b]\nbuffered=0\n[c]\ndirect=1\ninvalidate=0\nfsync_on_close=1\n");
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_FALSE(p.jobs[0].direct);
  EXPECT_TRUE(p.jobs[0].invalidate);
  EXPECT_TRUE(p.jobs[1].direct);
  EXPECT_FALSE(p.jobs[2].invalidate);
  EXPECT_TRUE(p.jobs[2].fsync_on_close);
}

TEST(JobParserTest, VariablesAndKeywords) {
  ParseOptions o = Opts();
  o.lookup_var = [](const std::string& n) -> std::optional<std::string> {
    if (n == "BS") return "16k";
    return std::nullopt;
  };
  EXPECT_EQ(MustParse("[a]\nbs=${BS}\n", o).jobs[0].bs[0], 16384u);
  EXPECT_NE(ErrorOf("[a]\nbs=${UNSET}\n", o).find("failed parsing bs="), std::string::npos);
  o.host.ncpus = 4;
  EXPECT_EQ(MustParse("[a]\nnumjobs=$ncpus*2\n", o).jobs[0].numjobs, 8u);
  EXPECT_EQ(*EvaluateArithmetic("(2+3)*4-2^3%5"), 17);
  EXPECT_FALSE(EvaluateArithmetic("1/0").ok());
}

TEST(JobParserTest, IncludeThroughReader) {
  auto o = Opts({{"inc/common.fio", "bs=64k\ninclude more.fio\n"}, {"inc/more.fio", "iodepth=7\n"}});
  auto r = ParseJobFile("[a]\ninclude common.fio\n", "inc/job.fio", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs[0].bs[0], 65536u);
  EXPECT_EQ(r->jobs[0].iodepth, 7u);
  auto self = Opts({{"loop.fio", "include loop.fio\n"}});
  EXPECT_NE(ErrorOf("[a]\ninclude loop.fio\n", self).find("nesting"), std::string::npos);
  EXPECT_NE(ErrorOf("[a]\ninclude missing.fio\n").find("missing.fio"), std::string::npos);
}

TEST(JobParserTest, ClonesAndGroups) {
  auto p = MustParse("[a]\nnumjobs=3\n[b]\nnew_group\n[c]\n[d]\nstonewall\nnumjobs=2\n");
  ASSERT_EQ(p.jobs.size(), 4u);
  ASSERT_EQ(p.clones.size(), 7u);
  EXPECT_EQ(p.clones[0].thread_number, 1u);
  EXPECT_EQ(p.clones[6].thread_number, 7u);
  EXPECT_EQ(p.clones[2].clone_index, 2u);
  EXPECT_EQ(p.jobs[0].group_id, 0u);
  EXPECT_EQ(p.jobs[1].group_id, 1u);
  EXPECT_EQ(p.jobs[2].group_id, 1u);
  EXPECT_EQ(p.jobs[3].group_id, 2u);
  EXPECT_EQ(p.clones[6].group_id, 2u);
  // A stonewall on the very first job opens no new group.
  EXPECT_EQ(MustParse("[a]\nstonewall\n").jobs[0].group_id, 0u);
}

TEST(JobParserTest, WaitForMustReferToEarlierUniqueJob) {
  MustParse("[a]\n[b]\nwait_for=a\n");
  EXPECT_NE(ErrorOf("[b]\nwait_for=a\n[a]\n").find("wait_for=a"), std::string::npos);
  EXPECT_NE(ErrorOf("[a]\n[a]\n[b]\nwait_for=a\n").find("not unique"), std::string::npos);
}

TEST(JobParserTest, Limits) {
  ParseOptions o = Opts();
  o.limits.max_total_clones = 10;
  EXPECT_NE(ErrorOf("[a]\nnumjobs=11\n", o).find("more than 10"), std::string::npos);
  EXPECT_NE(ErrorOf("[a]\nbs=" + std::string(9000, '1') + "\n").find("line longer"), std::string::npos);
}

TEST(JobParserTest, OptionsAsWritten) {
  auto p = MustParse("[global]\nioengine=null\n[a]\nrw=randread\nblocksize=4k\ntime_based\n");
  ASSERT_EQ(p.jobs[0].options_written.size(), 3u);
  EXPECT_EQ(p.jobs[0].options_written[1].name, "blocksize");
  EXPECT_EQ(p.jobs[0].options_written[1].value, "4k");
  EXPECT_EQ(p.global_options[0].name, "ioengine");
}

TEST(FioArgsTest, SeparatesFioFlagsFromJobOptions) {
  auto r = ParseFioArgs({"--output-format=json,normal", "--output", "o.txt", "job.fio",
                         "--iodepth=128", "--name=j1", "--rw=randread", "--time_based",
                         "--section=x", "--minimal", "--terse-version=3", "--eta=never"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->output, "o.txt");
  EXPECT_EQ(r->output_formats, std::vector<OutputFormat>{OutputFormat::kTerse});
  EXPECT_EQ(r->job_files, std::vector<std::string>{"job.fio"});
  ASSERT_EQ(r->cmdline_sections.size(), 2u);
  EXPECT_EQ(r->cmdline_sections[0].lines[0].name, "iodepth");
  EXPECT_EQ(r->cmdline_sections[1].name, "j1");
  EXPECT_FALSE(r->cmdline_sections[1].lines[1].value.has_value());
  EXPECT_EQ(r->sections, std::vector<std::string>{"x"});
  EXPECT_FALSE(ParseFioArgs({"--bsz=4k"}).ok());
  EXPECT_FALSE(ParseFioArgs({"--output-format=xml"}).ok());
}

TEST(FioArgsTest, CommandLineCombinationRules) {
  auto o = Opts({{"a.fio", "[global]\nioengine=null\n[f1]\niodepth=4\n"},
                 {"b.fio", "[f2]\n"}});
  auto inv = ParseFioArgs({"--iodepth=128", "--bs=8k", "a.fio", "b.fio", "--name=j3"});
  ASSERT_TRUE(inv.ok());
  auto r = BuildJobs(*inv, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_EQ(r->jobs[0].name, "j3");  // command-line jobs first
  EXPECT_EQ(r->jobs[0].ioengine, IoEngine::kPsync);  // does not see a.fio's [global]
  EXPECT_EQ(r->jobs[0].iodepth, 128u);
  EXPECT_EQ(r->jobs[1].name, "f1");
  EXPECT_EQ(r->jobs[1].iodepth, 4u);   // file wins
  EXPECT_EQ(r->jobs[1].bs[0], 8192u);  // command line fills silence
  EXPECT_EQ(r->jobs[2].name, "f2");
  EXPECT_EQ(r->jobs[2].bs[0], 4096u);  // later files reset defaults
  EXPECT_TRUE(r->jobs[2].stonewall);
  EXPECT_EQ(r->jobs[2].group_id, 1u);
  // Engine options on the command line must follow --ioengine.
  auto bad = ParseFioArgs({"--name=x", "--hipri", "--ioengine=io_uring"});
  EXPECT_FALSE(BuildJobs(*bad, o).ok());
  auto good = ParseFioArgs({"--name=x", "--ioengine=io_uring", "--hipri"});
  EXPECT_TRUE(BuildJobs(*good, o).ok());
}

TEST(FioArgsTest, SectionFilter) {
  auto o = Opts({{"a.fio", "[global]\nbs=8k\n[x]\n[y]\n"}});
  auto inv = ParseFioArgs({"--section=y", "a.fio"});
  auto r = BuildJobs(*inv, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_EQ(r->jobs[0].name, "y");
  EXPECT_EQ(r->jobs[0].bs[0], 8192u);
}

TEST(JobParserTest, ArbitraryBytesNeverCrash) {
  sim::RngStream rng(7, 1);
  const std::string alphabet = "[]=;#${}\\:,-/%\n kmgx0123456789abrwsizeglobalincludeqd\t";
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    const uint64_t n = rng.UniformBelow(200);
    for (uint64_t k = 0; k < n; ++k) {
      s.push_back(rng.Percent(5) ? static_cast<char>(rng.UniformBelow(256))
                                 : alphabet[rng.UniformBelow(alphabet.size())]);
    }
    (void)ParseJobFile(s, "fuzz.fio", Opts({{"x", s}}));
    (void)ParseFioArgs({s, "--" + s});
  }
}

}  // namespace
}  // namespace blklab::workload
