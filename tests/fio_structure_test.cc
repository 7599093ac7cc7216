// tests/fio_structure_test.cc
//
// fio at the edges (docs/architecture.md principle 4): a job from the reference
// set (tests/data/fio-reference, produced by the real fio 3.33) runs through
// the whole engine against a simulated null_blk, and blklab's JSON, JSON+
// and terse output must have fio's structure: the same key tree in the same
// order (values and option contents aside), "bins" in json+, 121 terse
// fields + 9 per disk. blklab's own "blklab" key must carry a profile of
// kernel function names.
//
// The reference job uses ioengine=null; here it runs with ioengine=io_uring,
// so the run has a disk and fio would print a "disk_util" section: its
// structure is checked against reference 07 (psync on a real disk), the only
// one that has it.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/engine.h"
#include "engine/host/presets.h"
#include "engine/report/report.h"
#include "engine/util/json_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifndef BLKLAB_TEST_DATA_DIR
#define BLKLAB_TEST_DATA_DIR "tests/data"
#endif

namespace blklab {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

const std::string kRefDir = std::string(BLKLAB_TEST_DATA_DIR) + "/fio-reference";

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

util::DocNode MustParseJson(const std::string& text, const std::string& what) {
  util::ParseLimits limits;
  limits.max_bytes = 64 << 20;
  limits.max_nodes = 10000000;
  absl::StatusOr<util::DocNode> doc = util::ParseJson(text, limits);
  EXPECT_TRUE(doc.ok()) << what << ": " << doc.status();
  return doc.ok() ? *std::move(doc) : util::DocNode();
}

// Recursive key paths in document order: "a", "a/b", "jobs[0]/read", ...
// The contents of maps named in `opaque` are skipped (their key is kept).
void KeyPaths(const util::DocNode& node, const std::string& prefix,
              const std::vector<std::string>& opaque, std::vector<std::string>* out) {
  if (node.is_map()) {
    for (const util::DocMapEntry& e : node.entries()) {
      const std::string path = prefix.empty() ? e.key : absl::StrCat(prefix, "/", e.key);
      out->push_back(path);
      bool skip = false;
      for (const std::string& o : opaque) skip |= e.key == o;
      if (!skip) KeyPaths(e.value, path, opaque, out);
    }
  } else if (node.is_list()) {
    for (size_t i = 0; i < node.items().size(); ++i) {
      KeyPaths(node.items()[i], absl::StrCat(prefix, "[", i, "]"), opaque, out);
    }
  }
}

std::vector<std::string> KeyPaths(const util::DocNode& node, const std::vector<std::string>& opaque) {
  std::vector<std::string> out;
  KeyPaths(node, "", opaque, &out);
  return out;
}

// Keeps only the paths under `top` (a top-level key), or drops them.
std::vector<std::string> Filter(const std::vector<std::string>& paths, const std::string& top,
                                bool keep) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    const bool under = p == top || absl::StartsWith(p, top + "/") || absl::StartsWith(p, top + "[");
    if (under == keep) out.push_back(p);
  }
  return out;
}

// Prints the first difference of two path lists (gtest's vector diff of
// hundreds of entries is unreadable).
std::string FirstDifference(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return absl::StrCat("sizes ", got.size(), " vs ", want.size(), "; first difference at ", i,
                      ": got '", i < got.size() ? got[i] : "<end>", "', fio has '",
                      i < want.size() ? want[i] : "<end>", "'");
}

struct Outputs {
  std::string json, json_plus, terse;
  RunResult run;
};

class FioStructureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string job;
    if (!ReadFile(kRefDir + "/jobs/01-randread-4k-qd32.fio", &job)) return;
    // The reference job on the null engine; here through io_uring to null_blk.
    ASSERT_THAT(job, HasSubstr("ioengine=null\n"));
    job = absl::StrReplaceAll(job, {{"ioengine=null\n", "ioengine=io_uring\n"}});
    ASSERT_THAT(job, HasSubstr("runtime=2\n"));
    ASSERT_THAT(job, HasSubstr("time_based=1\n"));
    absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
    ASSERT_TRUE(host.ok()) << host.status();
    auto read = [job](const std::string& path) -> absl::StatusOr<std::string> {
      if (path == "01-randread-4k-qd32.fio") return job;
      return absl::NotFoundError(path);
    };
    absl::StatusOr<ParsedFio> parsed = ParseFio({"01-randread-4k-qd32.fio"}, *host, read, nullptr);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    RunRequest req;
    req.host = *host;
    req.jobs = parsed->jobs;
    absl::StatusOr<RunResult> run = RunFio(req);
    ASSERT_TRUE(run.ok()) << run.status();
    WallClock clock;
    clock.timestamp_sec = 1700000000;
    clock.timestamp_ms = 1700000000000;
    clock.time_string = "Tue Nov 14 22:13:20 2023";
    const report::ReportInput in = BuildReport(req, *run, clock, /*with_kernel_report=*/true);
    out_ = new Outputs;
    out_->json = report::WriteJson(in, /*json_plus=*/false);
    out_->json_plus = report::WriteJson(in, /*json_plus=*/true);
    out_->terse = report::WriteTerse(in);
    out_->run = *std::move(run);
  }
  static void TearDownTestSuite() {
    delete out_;
    out_ = nullptr;
  }
  void SetUp() override {
    if (out_ == nullptr) FAIL() << "fio reference outputs not found under " << kRefDir;
  }

  static std::string Ref(const std::string& name) {
    std::string text;
    EXPECT_TRUE(ReadFile(kRefDir + "/out/" + name, &text)) << name;
    return text;
  }

  static Outputs* out_;
};

Outputs* FioStructureTest::out_ = nullptr;

const std::vector<std::string> kOptionMaps = {"global options", "job options"};

TEST_F(FioStructureTest, JsonKeyTreeMatchesFio) {
  const std::vector<std::string> got =
      KeyPaths(MustParseJson(out_->json, "blklab json"), kOptionMaps);
  const std::vector<std::string> fio =
      KeyPaths(MustParseJson(Ref("01-randread-4k-qd32.json"), "fio json"), kOptionMaps);
  ASSERT_GT(fio.size(), 200u);  // fio's JSON for one job has ~224 key paths
  // blklab's extra top-level key aside; the run had a disk, the reference
  // (null engine) had none.
  const std::vector<std::string> mine = Filter(Filter(got, "blklab", false), "disk_util", false);
  EXPECT_EQ(mine, fio) << FirstDifference(mine, fio);
  // The disk section has fio's structure (reference 07 ran on a real disk).
  const std::vector<std::string> fio_disk = Filter(
      KeyPaths(MustParseJson(Ref("07-psync-disk-util.json"), "fio json 07"), kOptionMaps),
      "disk_util", true);
  ASSERT_FALSE(fio_disk.empty());
  const std::vector<std::string> my_disk = Filter(got, "disk_util", true);
  EXPECT_EQ(my_disk, fio_disk) << FirstDifference(my_disk, fio_disk);
  // Top-level order: fio's keys, disk_util after jobs, blklab last.
  std::vector<std::string> top;
  const util::DocNode doc = MustParseJson(out_->json, "blklab json");
  for (const util::DocMapEntry& e : doc.entries()) top.push_back(e.key);
  EXPECT_EQ(top, (std::vector<std::string>{"fio version", "timestamp", "timestamp_ms", "time",
                                           "global options", "jobs", "disk_util", "blklab"}));
}

TEST_F(FioStructureTest, JsonPlusHasBinsAndFiosKeyTree) {
  const util::DocNode doc = MustParseJson(out_->json_plus, "blklab json+");
  const std::vector<std::string> opaque = {"global options", "job options", "bins"};
  const std::vector<std::string> got =
      Filter(Filter(KeyPaths(doc, opaque), "blklab", false), "disk_util", false);
  const std::vector<std::string> fio =
      KeyPaths(MustParseJson(Ref("01-randread-4k-qd32.jsonplus.json"), "fio json+"), opaque);
  EXPECT_EQ(got, fio) << FirstDifference(got, fio);
  EXPECT_THAT(got, Contains("jobs[0]/read/clat_ns/bins"));
  // The bins hold the IO count of the histogram.
  const util::DocNode* jobs = doc.Find("jobs");
  ASSERT_NE(jobs, nullptr);
  const util::DocNode* bins = jobs->items().at(0).Find("read")->Find("clat_ns")->Find("bins");
  ASSERT_NE(bins, nullptr);
  ASSERT_GT(bins->size(), 0u);
  int64_t sum = 0;
  for (const util::DocMapEntry& e : bins->entries()) sum += *e.value.AsInt64();
  EXPECT_EQ(static_cast<uint64_t>(sum), out_->run.clones.at(0).result.dir(stats::Dir::kRead).total_ios);
}

TEST_F(FioStructureTest, TerseHasFiosFieldCountWithOneDisk) {
  // fio: 121 fields per job line, +9 per disk (reference 07 has 130).
  const std::vector<std::string> ref07 =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(Ref("07-psync-disk-util.terse.txt")), ';');
  ASSERT_EQ(ref07.size(), 130u);
  const std::vector<std::string> ref01 =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(Ref("01-randread-4k-qd32.terse.txt")), ';');
  ASSERT_EQ(ref01.size(), 121u);

  std::vector<std::string> lines =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(out_->terse), '\n');
  ASSERT_EQ(lines.size(), 1u) << out_->terse;
  const std::vector<std::string> fields = absl::StrSplit(lines[0], ';');
  ASSERT_EQ(out_->run.kernel.devices.size(), 1u);
  EXPECT_EQ(fields.size(), 121u + 9u * out_->run.kernel.devices.size()) << lines[0];
  EXPECT_EQ(fields[0], "3");
  EXPECT_EQ(fields[1], "fio-3.33");
  EXPECT_EQ(fields[2], "randread-4k-qd32");
  // The read runtime (ms) is the job's 2 s of virtual time (fio printed
  // 2001; blklab prints 1999: the thread's first context switch happens
  // after start_at, from which the 2 s are counted).
  int64_t runtime_ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(fields[8], &runtime_ms)) << fields[8];
  EXPECT_GE(runtime_ms, 1999);
  EXPECT_LE(runtime_ms, 2001);
  EXPECT_EQ(fields[121], "nullb0");  // the disk block starts with its name, as fio's
  EXPECT_EQ(fields[121], out_->run.kernel.devices[0].name);
}

TEST_F(FioStructureTest, BlklabKeyHasAKernelProfile) {
  const util::DocNode doc = MustParseJson(out_->json, "blklab json");
  const util::DocNode* blk = doc.Find("blklab");
  ASSERT_NE(blk, nullptr);
  ASSERT_TRUE(blk->is_map());
  const util::DocNode* profile = blk->Find("profile");
  ASSERT_NE(profile, nullptr);
  ASSERT_TRUE(profile->is_list());
  ASSERT_GT(profile->size(), 5u);
  std::vector<std::string> functions;
  for (const util::DocNode& row : profile->items()) {
    const util::DocNode* fn = row.Find("function");
    ASSERT_NE(fn, nullptr);
    functions.push_back(fn->text());
  }
  // Kernel function names (and fio's user-space ones, "fio:...").
  EXPECT_THAT(functions, Contains("blk_mq_submit_bio"));
  EXPECT_THAT(functions, Contains("submit_bio_noacct"));
  EXPECT_THAT(functions, Contains("null_queue_rq"));
  EXPECT_THAT(functions, Contains("__x64_sys_io_uring_enter"));
  EXPECT_THAT(functions, Contains("fio:get_io_u"));
  for (const std::string& f : functions) {
    EXPECT_TRUE(absl::StartsWith(f, "fio:") || f.find_first_of(" /") == std::string::npos) << f;
  }
  // The JSON carries the engine's kernel report.
  EXPECT_EQ(profile->size(), out_->run.kernel.profile.size());
  ASSERT_NE(blk->Find("counters"), nullptr);
  ASSERT_NE(blk->Find("locks"), nullptr);
  EXPECT_EQ(*blk->Find("total_ios")->AsInt64(), static_cast<int64_t>(out_->run.kernel.total_ios));
  // perf sched latency's table: the job's thread ran, picked at least once.
  const util::DocNode* sched = blk->Find("sched");
  ASSERT_NE(sched, nullptr);
  ASSERT_TRUE(sched->is_list());
  ASSERT_EQ(sched->size(), out_->run.kernel.sched.size());
  bool job_row = false;
  for (const stats::SchedRow& t : out_->run.kernel.sched) {
    EXPECT_GT(t.switches, 0u) << t.task;
    EXPECT_GE(t.delay_ns, t.max_delay_ns) << t.task;
    if (t.task == "fio/randread-4k-qd32") {
      job_row = true;
      EXPECT_EQ(t.threads, 1u);
      EXPECT_GT(t.runtime_ns, 1000000000) << "2 s of a CPU-bound job";
    }
  }
  EXPECT_TRUE(job_row);
  EXPECT_NE(report::WriteKernelSections(out_->run.kernel).find("blklab scheduler latency"), std::string::npos);
}


// --- the seven reference jobs, run as they are ------------------------------
//
// Each job file of fio-reference/jobs runs unchanged in blklab on the default
// host (01-06 use fio's null engine; 07's file is replaced by the simulated
// /dev/nullb0, the only change), and its outputs must have the structure of
// fio 3.33's outputs for the same job: the same JSON and JSON+ key trees
// (option and "bins" contents aside), the same terse field count, and the
// same sequence of lines in the normal output (numbers masked; blklab's own
// sections after fio's are left out).

// A line's shape: digits and number-like tokens masked, runs of spaces
// folded, so "  read: IOPS=1512k, BW=5906MiB/s" and "  read: IOPS=87.2k,
// BW=340MiB/s" compare equal.
std::string LineShape(const std::string& line) {
  std::string out;
  bool in_number = false;
  bool in_space = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const bool digit = (c >= '0' && c <= '9') ||
                       (in_number && (c == '.' || c == 'k' || c == 'M' || c == 'G' || c == 'T'));
    if (digit) {
      if (!in_number) out += '#';
      in_number = true;
      in_space = false;
      continue;
    }
    in_number = false;
    if (c == ' ') {
      // Padding inside "avg= 5.12" or "[  201]" depends on the value's width.
      size_t next = i;
      while (next < line.size() && line[next] == ' ') ++next;
      const bool pads_number = !out.empty() && (out.back() == '=' || out.back() == '[') &&
                               next < line.size() && line[next] >= '0' && line[next] <= '9';
      if (pads_number) continue;
      if (!in_space && !out.empty()) out += ' ';
      in_space = true;
      continue;
    }
    in_space = false;
    out += c;
  }
  // Units that follow the magnitude (KiB/MiB, nsec/usec/msec) are data too.
  for (const char* unit : {"KiB", "MiB", "GiB", "kB", "MB", "GB", "nsec", "usec", "msec"}) {
    size_t pos;
    while ((pos = out.find(unit)) != std::string::npos) out.replace(pos, strlen(unit), "U");
  }
  // A magnitude letter joined to the number ("11.5GiB" -> "#iB") or a bare
  // byte count ("4096B") is a unit choice too.
  for (const char* unit : {"#iB", "#B"}) {
    size_t pos;
    while ((pos = out.find(unit)) != std::string::npos) out.replace(pos, strlen(unit), "#U");
  }
  return out;
}

// The shapes of fio's part of a normal output. Data-dependent rows are
// folded: consecutive latency-distribution rows ("lat (U) :") and percentile
// rows ("|") become one entry each.
std::vector<std::string> NormalShapes(const std::string& text) {
  std::vector<std::string> shapes;
  bool disk_stats = false;
  for (const std::string& raw : std::vector<std::string>(absl::StrSplit(text, '\n'))) {
    if (absl::StartsWith(raw, "blklab ")) break;  // blklab's sections follow fio's
    std::string shape = LineShape(raw);
    // Device rows: the device's name is the host's (vda there, nullb0 here).
    if (disk_stats && shape.find(':') != std::string::npos) {
      shape = "  DEV" + shape.substr(shape.find(':'));
    }
    if (absl::StartsWith(raw, "Disk stats")) disk_stats = true;
    const std::string trimmed(absl::StripLeadingAsciiWhitespace(shape));
    if (absl::StartsWith(trimmed, "lat (U) :")) shape = "  lat (U) : <rows>";
    if (absl::StartsWith(trimmed, "|")) shape = "     | <rows>";
    if (!shapes.empty() && shapes.back() == shape &&
        (shape == "  lat (U) : <rows>" || shape == "     | <rows>")) {
      continue;
    }
    shapes.push_back(shape);
  }
  while (!shapes.empty() && shapes.back().empty()) shapes.pop_back();
  return shapes;
}

// fio's null engine is an infinitely fast device: a 2 s run simulates
// hundreds of millions of IOs. The structure does not depend on the length,
// so the jobs run for 20 ms with 5 ms bandwidth/IOPS windows instead.
const std::pair<std::string, std::string> kShort = {"runtime=2\n",
                                                    "runtime=20ms\nbwavgtime=5\niopsavgtime=5\n"};

struct RefJob {
  std::string name;
  std::vector<std::pair<std::string, std::string>> edits;  // job-file text replacements
  int terse_fields;
};

class ReferenceJobTest : public ::testing::TestWithParam<RefJob> {
 protected:
  void SetUp() override {
    std::string job;
    if (!ReadFile(kRefDir + "/jobs/" + GetParam().name + ".fio", &job)) {
      FAIL() << "fio reference jobs not found under " << kRefDir;
    }
    for (const auto& [from, to] : GetParam().edits) {
      ASSERT_THAT(job, HasSubstr(from));
      job = absl::StrReplaceAll(job, {{from, to}});
    }
    absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
    ASSERT_TRUE(host.ok()) << host.status();
    const std::string file = GetParam().name + ".fio";
    auto read = [job, file](const std::string& path) -> absl::StatusOr<std::string> {
      if (path == file) return job;
      return absl::NotFoundError(path);
    };
    absl::StatusOr<ParsedFio> parsed = ParseFio({file}, *host, read, nullptr);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    req_.host = *host;
    req_.jobs = parsed->jobs;
    absl::StatusOr<RunResult> run = RunFio(req_);
    ASSERT_TRUE(run.ok()) << run.status();
    WallClock clock;  // the date of the reference outputs
    clock.timestamp_sec = 1796004705;
    clock.timestamp_ms = 1796004705000;
    clock.time_string = "Mon Nov 30 02:11:45 2026";
    input_ = BuildReport(req_, *run, clock, /*with_kernel_report=*/true);
  }
  std::string Ref(const std::string& suffix) {
    std::string text;
    EXPECT_TRUE(ReadFile(kRefDir + "/out/" + GetParam().name + suffix, &text)) << suffix;
    return text;
  }

  RunRequest req_;
  report::ReportInput input_;
};

TEST_P(ReferenceJobTest, JsonAndJsonPlusKeyTreesMatchFio) {
  const std::vector<std::string> opaque = {"global options", "job options", "bins"};
  for (const bool plus : {false, true}) {
    const std::vector<std::string> got = Filter(
        KeyPaths(MustParseJson(report::WriteJson(input_, plus), "blklab"), opaque), "blklab", false);
    const std::vector<std::string> want = KeyPaths(
        MustParseJson(Ref(plus ? ".jsonplus.json" : ".json"), "fio"), opaque);
    EXPECT_EQ(got, want) << (plus ? "json+: " : "json: ") << FirstDifference(got, want);
  }
}

TEST_P(ReferenceJobTest, TerseHasFiosFieldCount) {
  const std::string terse = report::WriteTerse(input_);
  const std::string ref = Ref(".terse.txt");
  std::vector<std::string> got_lines = absl::StrSplit(terse, '\n', absl::SkipEmpty());
  std::vector<std::string> want_lines = absl::StrSplit(ref, '\n', absl::SkipEmpty());
  ASSERT_EQ(got_lines.size(), want_lines.size());
  for (size_t i = 0; i < got_lines.size(); ++i) {
    const size_t got = std::vector<std::string>(absl::StrSplit(got_lines[i], ';')).size();
    const size_t want = std::vector<std::string>(absl::StrSplit(want_lines[i], ';')).size();
    EXPECT_EQ(got, want) << "line " << i;
    EXPECT_EQ(static_cast<int>(got), GetParam().terse_fields) << "line " << i;
  }
}

TEST_P(ReferenceJobTest, NormalOutputHasFiosLinesInFiosOrder) {
  const std::vector<std::string> got = NormalShapes(report::WriteNormal(input_));
  std::vector<std::string> want = NormalShapes(Ref(".normal.txt"));
  // fio prints "Laying out IO file" for a real file (07); a block device has none.
  want.erase(std::remove_if(want.begin(), want.end(),
                            [](const std::string& l) { return l.find("Laying out IO file") != std::string::npos; }),
             want.end());
  EXPECT_EQ(got, want) << FirstDifference(got, want);
}

INSTANTIATE_TEST_SUITE_P(
    AllSeven, ReferenceJobTest,
    ::testing::Values(RefJob{"01-randread-4k-qd32", {kShort}, 121},
                      RefJob{"02-randrw-70-30", {kShort}, 121},
                      RefJob{"03-two-jobs-group-reporting", {kShort}, 121},
                      RefJob{"04-numjobs4-split", {kShort}, 121},
                      RefJob{"05-randrw-unified-latpct", {kShort}, 162},
                      RefJob{"06-logs", {kShort}, 121},
                      RefJob{"07-psync-disk-util",
                             {kShort, {"filename=/tmp/fio-ref-disk-util.dat", "filename=/dev/nullb0"}},
                             130}),
    [](const ::testing::TestParamInfo<RefJob>& info) {
      std::string n = info.param.name;
      for (char& c : n) {
        if (c == '-') c = '_';
      }
      return n;
    });

}  // namespace
}  // namespace blklab
