// Tests for ShowCmd: unit cases for fio 3.33's --showcmd format, then the
// whole fio example corpus against the installed `fio --showcmd` (skipped
// when fio is not installed), both as text and as a normalised view
// (BuildJobs of the file versus BuildJobs of fio's printed command line).
#include "engine/workload/show_cmd.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace blklab::workload {
namespace {

namespace fs = std::filesystem;

ParseOptions Loose() {
  ParseOptions opt;
  opt.accept_unmodelled_engines = true;
  return opt;
}

std::string Show(const std::string& text, const std::vector<std::string>& only = {}) {
  auto sections = ParseJobFileSections(text, "t.fio", Loose());
  EXPECT_TRUE(sections.ok()) << sections.status();
  if (!sections.ok()) return "";
  return ShowCmdLine(*sections, only);
}

TEST(ShowCmdTest, GlobalFirstThenJobs) {
  EXPECT_EQ(Show("[global]\nioengine=libaio\nbs=128k\n[a]\niodepth=4\n[b]\n"),
            "fio --ioengine=libaio --bs=128k --name=a --iodepth=4 --name=b \n");
}

TEST(ShowCmdTest, CanonicalNamesBareFlagsAndDescriptionQuotes) {
  EXPECT_EQ(Show("[j]\nblocksize=4k\nblockalign=4k\nratemin=1024\nnorandommap\n"
                 "description=two words\n"),
            "fio --name=j --bs=4k --ba=4k --rate_min=1024 --norandommap "
            "--description=\"two words\" \n");
}

TEST(ShowCmdTest, PriorityAndEngineOptionOrder) {
  // kb_base/lockfile first, filename last among general options, engine
  // options after all general ones (verified with fio 3.33).
  EXPECT_EQ(Show("[a]\nioengine=io_uring\nhipri\nbs=4k\nfilename=x\nkb_base=1000\nlockfile=none\n"),
            "fio --name=a --kb_base=1000 --lockfile=none --ioengine=io_uring --bs=4k --filename=x "
            "--hipri \n");
}

TEST(ShowCmdTest, GlobalSectionsPrintAccumulatedList) {
  EXPECT_EQ(Show("[global]\nbs=8k\n[global2]\nrw=write\n[a]\nsize=1m ; c\n[global]\niodepth=2\n"
                 "[b]\nfilename=/x#y\nbs= 8k\nwrite_bw_log\n  numjobs = 2  \n"),
            "fio --bs=8k --bs=8k --rw=write --name=a --size=1m --bs=8k --rw=write --iodepth=2 "
            "--name=b --bs= 8k --write_bw_log --numjobs= 2 --filename=/x \n");
}

TEST(ShowCmdTest, SectionFilterKeepsGlobals) {
  EXPECT_EQ(Show("[global]\nbs=8k\n[a]\nrw=read\n[b]\nrw=write\n", {"b"}),
            "fio --bs=8k --name=b --rw=write \n");
}

TEST(ShowCmdTest, ThreadsIsTheTiobenchOptionNotAnAliasOfThread) {
  // fio 3.33 knows `threads` (tiobench profile) as an option of its own.
  EXPECT_EQ(Show("[a]\nthreads=1\nthread\n"), "fio --name=a --threads=1 --thread \n");
}

TEST(ShowCmdTest, EmptyFileIsANewline) { EXPECT_EQ(Show(""), "\n"); }

TEST(ShowCmdTest, SubstitutedValuesArePrinted) {
  ParseOptions opt = Loose();
  opt.lookup_var = [](const std::string& n) -> std::optional<std::string> {
    if (n == "FOO") return "8";
    return std::nullopt;
  };
  auto sections = ParseJobFileSections("[a]\nbs=${FOO}k\nsize=$pagesize\n", "t.fio", opt);
  ASSERT_TRUE(sections.ok()) << sections.status();
  EXPECT_EQ(ShowCmdLine(*sections), "fio --name=a --bs=8k --size=4096 \n");
}

TEST(ShowCmdTest, InvocationWithCommandLineGlobals) {
  ParseOptions opt = Loose();
  opt.read_file = [](const std::string& path) -> absl::StatusOr<std::string> {
    if (path == "a.fio") return std::string("[global]\nbs=8k\n[a]\nrw=write\n");
    if (path == "b.fio") return std::string("[c]\nrw=read\n");
    return absl::NotFoundError(path);
  };
  auto inv = ParseFioArgs({"--showcmd", "--iodepth=2", "a.fio", "b.fio"});
  ASSERT_TRUE(inv.ok()) << inv.status();
  auto out = ShowCmd(*inv, opt);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "fio --iodepth=2 --bs=8k --name=a --rw=write \nfio --name=c --rw=read \n");
  auto bad = ParseFioArgs({"--showcmd", "missing.fio"});
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(ShowCmd(*bad, opt).ok());
}

TEST(ShowCmdTest, SplitShowCmdLine) {
  EXPECT_EQ(SplitShowCmdLine("fio --description=\"a b\" --name=x y --arguments=-c --interval 5 "
                             "--norandommap --bs= 8k \n"),
            (std::vector<std::string>{"--description=a b", "--name=x y",
                                      "--arguments=-c --interval 5", "--norandommap",
                                      "--bs= 8k"}));
  EXPECT_TRUE(SplitShowCmdLine("\n").empty());
}

// --- corpus against the real fio ---

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command, returns its stdout (nullopt if it could not run or
// exited non-zero).
std::optional<std::string> Run(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  if (rc != 0) return std::nullopt;
  return out;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

bool FioInstalled() {
  auto v = Run("fio --version 2>/dev/null");
  return v.has_value() && v->compare(0, 4, "fio-") == 0;
}

std::vector<std::string> AcceptedFiles(const fs::path& dir) {
  std::vector<std::string> out;
  std::ifstream in(dir / "parse-results.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const size_t t1 = line.find('\t');
    if (t1 == std::string::npos) continue;
    const size_t t2 = line.find('\t', t1 + 1);
    if (line.substr(t1 + 1, t2 - t1 - 1) == "0") out.push_back(line.substr(0, t1));
  }
  return out;
}

// fio --showcmd FILE, run like parse-results.tsv was made: in the file's
// directory, stdin from /dev/null, no FIO_* variables.
std::optional<std::string> FioShowCmd(const fs::path& file) {
  return Run(absl::StrCat("cd ", ShellQuote(file.parent_path().string()),
                          " && env -i PATH=/usr/local/bin:/usr/bin:/bin fio --showcmd ",
                          ShellQuote(file.filename().string()), " </dev/null 2>/dev/null"));
}

ParseOptions CorpusOptions() {
  ParseOptions opt = Loose();
  opt.read_file = ReadFile;
  return opt;
}

std::string Describe(const JobSpec& j) {
  auto dirs = [](const auto& a) { return absl::StrCat(a[0], ",", a[1], ",", a[2]); };
  return absl::StrCat(
      "name=", j.name, " group=", j.group_id, " numjobs=", j.numjobs, " rw=", RwPatternName(j.rw),
      ":", j.rw_modifier, " rwmixread=", j.rwmixread, " bs=", dirs(j.bs), " ba=", dirs(j.blockalign),
      " bssplit=", j.bssplit[0].size(), "/", j.bssplit[1].size(), " size=", j.size.bytes, "/",
      j.size.percent, " io_size=", j.io_size.bytes, " offset=", j.offset.bytes, " filesize=",
      j.filesize.lo, "-", j.filesize.hi, " nrfiles=", j.nrfiles,
      " filenames=", absl::StrJoin(j.filenames, ":"), " directory=", j.directory,
      " iodepth=", j.iodepth, " batch=", j.iodepth_batch_submit, " engine=", j.ioengine_name,
      " direct=", j.direct, " runtime=", j.runtime_ns, " time_based=", j.time_based,
      " ramp=", j.ramp_time_ns, " startdelay=", j.startdelay_min_ns, "-", j.startdelay_max_ns,
      " loops=", j.loops, " thinktime=", j.thinktime_ns, " rate=", dirs(j.rate_bps),
      " rate_iops=", dirs(j.rate_iops), " norandommap=", j.norandommap, " randrepeat=",
      j.randrepeat, " thread=", j.thread, " stonewall=", j.stonewall, " new_group=", j.new_group,
      " group_reporting=", j.group_reporting, " kb_base=", j.kb_base, " verify=", j.verify,
      " number_ios=", j.number_ios, " hipri=", j.engine_flags.hipri);
}

std::string DescribeJobs(const ParsedJobs& p) {
  std::string out = absl::StrCat(p.jobs.size(), " jobs, ", p.clones.size(), " clones\n");
  for (const JobSpec& j : p.jobs) absl::StrAppend(&out, Describe(j), "\n");
  return out;
}

TEST(ShowCmdCorpusTest, MatchesFioShowcmd) {
  const fs::path dir = fs::path(BLKLAB_TEST_DATA_DIR) / "fio-examples";
  ASSERT_TRUE(fs::exists(dir / "parse-results.tsv")) << "no corpus at " << dir;
  ASSERT_TRUE(FioInstalled()) << "fio is not installed (scripts/setup installs it)";
  const std::vector<std::string> files = AcceptedFiles(dir);
  ASSERT_FALSE(files.empty());
  int equal = 0, compared = 0, shown = 0;
  for (const std::string& f : files) {
    const fs::path path = dir / f;
    auto want = FioShowCmd(path);
    if (!want.has_value()) {
      ADD_FAILURE() << f << ": fio --showcmd failed although parse-results.tsv says exit 0";
      continue;
    }
    ++compared;
    auto inv = ParseFioArgs({"--showcmd", path.string()});
    ASSERT_TRUE(inv.ok()) << inv.status();
    auto got = ShowCmd(*inv, CorpusOptions());
    const std::string got_text = got.ok() ? *got : absl::StrCat("<error: ", got.status().message(), ">");
    if (got_text == *want) {
      ++equal;
    } else if (shown++ < 5) {
      std::printf("showcmd differs for %s\n  fio:     %s  blklab:  %s\n", f.c_str(), want->c_str(),
                  got_text.c_str());
    }
  }
  std::printf("showcmd: %d of %d corpus files identical to fio --showcmd (%.1f%%)\n", equal,
              compared, compared ? 100.0 * equal / compared : 0.0);
  EXPECT_GE(equal * 10, compared * 9);
}

// Whether fio's showcmd line means the same jobs as the file: only when no
// global section follows a job section (its options would then attach to
// the preceding --name on a command line) and no global sets `name=` (that
// would start a command-line job).
bool ShowcmdIsEquivalent(const std::vector<Section>& sections) {
  bool seen_job = false;
  for (const Section& s : sections) {
    if (!s.is_global) {
      seen_job = true;
      continue;
    }
    if (seen_job) return false;
    for (const OptionLine& ol : s.lines) {
      if (ol.name == "name") return false;
    }
  }
  return true;
}

TEST(ShowCmdCorpusTest, NormalisedViewMatchesFio) {
  const fs::path dir = fs::path(BLKLAB_TEST_DATA_DIR) / "fio-examples";
  ASSERT_TRUE(fs::exists(dir / "parse-results.tsv")) << "no corpus at " << dir;
  ASSERT_TRUE(FioInstalled()) << "fio is not installed (scripts/setup installs it)";
  int equal = 0, compared = 0, skipped = 0, shown = 0;
  for (const std::string& f : AcceptedFiles(dir)) {
    const fs::path path = dir / f;
    auto text = ReadFile(path.string());
    ASSERT_TRUE(text.ok());
    auto sections = ParseJobFileSections(*text, path.string(), CorpusOptions());
    if (!sections.ok() || !ShowcmdIsEquivalent(*sections)) {
      ++skipped;
      continue;
    }
    auto want_line = FioShowCmd(path);
    if (!want_line.has_value()) continue;
    ++compared;
    auto from_file = ParseJobFile(*text, path.string(), CorpusOptions());
    auto inv = ParseFioArgs(SplitShowCmdLine(*want_line));
    absl::StatusOr<ParsedJobs> from_fio =
        inv.ok() ? BuildJobs(*inv, CorpusOptions()) : absl::StatusOr<ParsedJobs>(inv.status());
    const std::string a = from_file.ok() ? DescribeJobs(*from_file) : std::string(from_file.status().message());
    const std::string b = from_fio.ok() ? DescribeJobs(*from_fio) : std::string(from_fio.status().message());
    if (a == b) {
      ++equal;
    } else if (shown++ < 5) {
      std::printf("normalised view differs for %s\n  file:    %s  showcmd: %s", f.c_str(), a.c_str(),
                  b.c_str());
    }
  }
  std::printf("normalised view: %d of %d comparable corpus files equal (%d skipped)\n", equal,
              compared, skipped);
  ASSERT_GT(compared, 0);
  EXPECT_GE(equal * 10, compared * 9);
}

}  // namespace
}  // namespace blklab::workload
