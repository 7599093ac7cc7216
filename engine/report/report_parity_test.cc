// engine/report/report_parity_test.cc
//
// Structure parity with the real fio 3.33 outputs in
// BLKLAB_TEST_DATA_DIR/fio-reference/out: for reference jobs 01-05 and 07 we
// build a ReportInput with plausible simulated numbers and compare
//  - the JSON / JSON+ key tree (recursive key paths, values ignored; the
//    children of "bins" are data, only its presence is compared),
//  - the terse field count and the shape of every field,
//  - the normal output line by line after masking numbers.
// The numbers are chosen so the same latency buckets are populated as in
// the reference (the "lat (usec)" rows have the same number of entries),
// and so unit switches land the same way.
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/report/report.h"
#include "engine/stats/job_stats.h"
#include "gtest/gtest.h"

#ifndef BLKLAB_TEST_DATA_DIR
#define BLKLAB_TEST_DATA_DIR "/nonexistent"
#endif

namespace blklab::report {
namespace {

using stats::Dir;
using stats::JobResult;

// --- Reference files -----------------------------------------------------------

std::string RefPath(const std::string& name) {
  return absl::StrCat(BLKLAB_TEST_DATA_DIR, "/fio-reference/out/", name);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

#define READ_REF_OR_SKIP(var, name)                                       \
  std::string var;                                                        \
  if (!ReadFile(RefPath(name), &var)) {                                   \
    FAIL() << "reference file not available: " << RefPath(name);   \
  }

// With BLKLAB_DUMP_DIR set, the generated outputs are written there for
// side-by-side reading against the reference files.
void DumpIfRequested(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("BLKLAB_DUMP_DIR");
  if (dir == nullptr) return;
  std::ofstream(absl::StrCat(dir, "/", name)) << text;
}

// --- A minimal JSON reader (enough for key paths and string options) --------

struct JNode {
  enum Kind { kScalar, kObject, kArray } kind = kScalar;
  std::string scalar;  // raw text, strings unquoted
  std::vector<std::pair<std::string, JNode>> members;
  std::vector<JNode> elements;
};

class JReader {
 public:
  explicit JReader(const std::string& s) : s_(s) {}
  bool Parse(JNode* out) {
    if (!Value(out)) return false;
    Ws();
    return pos_ == s_.size();
  }

 private:
  void Ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool String(std::string* out) {
    if (s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') ++pos_;
      out->push_back(s_[pos_++]);
    }
    if (pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  bool Value(JNode* n) {
    Ws();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') {
      n->kind = JNode::kObject;
      ++pos_;
      Ws();
      if (s_[pos_] == '}') return ++pos_, true;
      while (true) {
        Ws();
        std::string key;
        if (!String(&key)) return false;
        Ws();
        if (s_[pos_++] != ':') return false;
        JNode child;
        if (!Value(&child)) return false;
        n->members.emplace_back(std::move(key), std::move(child));
        Ws();
        if (s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        return s_[pos_++] == '}';
      }
    }
    if (c == '[') {
      n->kind = JNode::kArray;
      ++pos_;
      Ws();
      if (s_[pos_] == ']') return ++pos_, true;
      while (true) {
        JNode child;
        if (!Value(&child)) return false;
        n->elements.push_back(std::move(child));
        Ws();
        if (s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        return s_[pos_++] == ']';
      }
    }
    if (c == '"') return String(&n->scalar);
    while (pos_ < s_.size() && std::string(",}] \n\t\r").find(s_[pos_]) == std::string::npos) {
      n->scalar.push_back(s_[pos_++]);
    }
    return !n->scalar.empty();
  }
  const std::string& s_;
  size_t pos_ = 0;
};

void KeyPaths(const JNode& n, const std::string& prefix, std::vector<std::string>* out) {
  if (n.kind == JNode::kObject) {
    for (const auto& [k, v] : n.members) {
      const std::string p = absl::StrCat(prefix, "/", k);
      out->push_back(p);
      if (k != "bins") KeyPaths(v, p, out);  // bin keys are data
    }
  } else if (n.kind == JNode::kArray) {
    for (size_t i = 0; i < n.elements.size(); ++i) {
      KeyPaths(n.elements[i], absl::StrCat(prefix, "[", i, "]"), out);
    }
  }
}

std::vector<std::string> KeyPathsOf(const std::string& json) {
  JNode root;
  JReader reader(json);
  EXPECT_TRUE(reader.Parse(&root)) << "unparsable JSON";
  std::vector<std::string> paths;
  KeyPaths(root, "", &paths);
  return paths;
}

const JNode* Member(const JNode& n, const std::string& key) {
  for (const auto& [k, v] : n.members) {
    if (k == key) return &v;
  }
  return nullptr;
}

OptionList OptionsOf(const JNode* n) {
  OptionList out;
  if (n == nullptr) return out;
  for (const auto& [k, v] : n->members) out.emplace_back(k, v.scalar);
  return out;
}

// --- Normalisers ---------------------------------------------------------------

// Masks numbers (with their k/Ki/M/Mi... prefixes), collapses inner runs of
// spaces and the padding after '=', '[' and '(' so that only the shape of a
// line remains; leading indentation is kept as it is significant.
std::string MaskLine(const std::string& line) {
  static const std::regex kNumber(R"([0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?)");
  static const std::regex kSpaces(" +");
  static const std::regex kPad(R"(([=\[(]) +)");
  size_t lead = 0;
  while (lead < line.size() && line[lead] == ' ') ++lead;
  std::string body = line.substr(lead);
  body = std::regex_replace(body, kNumber, "N");
  body = std::regex_replace(body, kSpaces, " ");
  body = std::regex_replace(body, kPad, "$1");
  return line.substr(0, lead) + body;
}

std::vector<std::string> MaskedLines(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view l : absl::StrSplit(text, '\n')) out.push_back(MaskLine(std::string(l)));
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

// Empty when equal, else a description of the first difference.
std::string CompareLines(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "<missing>";
    const std::string g = i < got.size() ? got[i] : "<missing>";
    if (w != g) return absl::StrCat("line ", i + 1, ":\n  fio:    '", w, "'\n  blklab: '", g, "'");
  }
  return "";
}

std::vector<std::string> TerseShapes(const std::string& line) {
  std::vector<std::string> out;
  for (absl::string_view f : absl::StrSplit(line, ';')) out.push_back(MaskLine(std::string(f)));
  return out;
}

// --- Simulated jobs -------------------------------------------------------------

struct SimSpec {
  double iops = 1e6;
  int64_t runtime_ms = 2001;
  double read_share = 1.0;
  std::vector<uint32_t> sizes = {4096};
  int64_t clat_lo = 190, clat_hi = 990;  // body of the clat distribution
  std::vector<int64_t> tails = {};       // extra clat values, 3 IOs each
  bool slat = true;
  uint64_t seed = 1;
};

JobResult Simulate(const SimSpec& s) {
  stats::JobStatsCollector c;
  const int64_t start = 1'000'000'000;
  c.Start(start);
  const int64_t n = static_cast<int64_t>(s.iops * static_cast<double>(s.runtime_ms) / 1000.0);
  const int64_t span = s.runtime_ms * 1'000'000;
  uint64_t x = s.seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&x]() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  size_t tail_i = 0;
  const int64_t tail_stride = n / static_cast<int64_t>(3 * s.tails.size() + 1);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = next();
    const Dir dir = static_cast<double>(r % 1000) < s.read_share * 1000 ? Dir::kRead : Dir::kWrite;
    const uint32_t bytes = s.sizes[(r >> 12) % s.sizes.size()];
    int64_t clat = s.clat_lo + static_cast<int64_t>((r >> 20) % static_cast<uint64_t>(
                                                                   s.clat_hi - s.clat_lo + 1));
    if (!s.tails.empty() && tail_stride > 0 && i % tail_stride == tail_stride - 1 &&
        tail_i < 3 * s.tails.size()) {
      clat = s.tails[tail_i++ / 3];
    }
    const int64_t slat = s.slat ? 20 + static_cast<int64_t>((r >> 40) % 110) : stats::kNoSlat;
    c.RecordIssue(dir, 1);
    c.RecordSubmitCall(1);
    c.RecordCompletion(start + (i + 1) * span / n, dir, bytes, slat, clat);
    c.RecordReapCall(1);
  }
  c.SetCpuUsage({.usr_pct = 99.5, .sys_pct = 0.25, .ctx = 12, .majf = 0, .minf = 10});
  return c.Finish(start + span);
}

// Tails that populate given buckets of the "lat (usec)" / "lat (msec)" rows.
const std::vector<int64_t> kUs7 = {1500, 3000, 7000, 15000, 40000, 70000, 200000};
const std::vector<int64_t> kUs9 = {1500,  3000,   7000,   15000, 40000,
                                   70000, 200000, 400000, 600000};
const std::vector<int64_t> kUs10 = {1500,  3000,   7000,   15000,  40000,
                                    70000, 200000, 400000, 600000, 900000};

std::vector<int64_t> Concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// --- Report inputs per reference job -------------------------------------------

struct Case {
  std::string stem;
  ReportInput input;
};

ReportInput BaseInput(const std::string& stem) {
  ReportInput in;
  in.timestamp_sec = 1796004710;
  in.timestamp_ms = 1796004710198;
  in.time_string = "Mon Nov 30 02:11:50 2026";
  in.processes = 1;
  // Options as written come from the reference JSON (the job files' text).
  std::string json;
  if (ReadFile(RefPath(stem + ".json"), &json)) {
    JNode root;
    JReader reader(json);
    if (reader.Parse(&root)) {
      in.global_options = OptionsOf(Member(root, "global options"));
    }
  }
  return in;
}

OptionList JobOptions(const std::string& stem, size_t job) {
  std::string json;
  if (!ReadFile(RefPath(stem + ".json"), &json)) return {};
  JNode root;
  JReader reader(json);
  if (!reader.Parse(&root)) return {};
  const JNode* jobs = Member(root, "jobs");
  if (jobs == nullptr || job >= jobs->elements.size()) return {};
  return OptionsOf(Member(jobs->elements[job], "job options"));
}

JobHeader Header(const std::string& name, const std::string& rw, uint64_t bs_min, uint64_t bs_max,
                 const std::string& engine, const std::string& depth, int numjobs = 1) {
  JobHeader h;
  h.name = name;
  h.rw = rw;
  for (auto& b : h.bs) b = {bs_min, bs_max};
  h.ioengine = engine;
  h.iodepth = depth;
  h.numjobs = numjobs;
  return h;
}

ReportEntry Entry(const std::string& name, JobResult result, const JobDisplay& display,
                  OptionList options, int64_t pid) {
  ReportEntry e;
  e.name = name;
  e.pid = pid;
  e.elapsed_sec = 3;
  e.result = std::move(result);
  e.display = display;
  e.job_options = std::move(options);
  return e;
}

void AddGroup(ReportInput* in, const std::vector<const JobResult*>& jobs, const JobDisplay& d) {
  in->groups.push_back(ComputeGroupStatus(0, jobs, d));
}

Case Case01() {
  Case c{"01-randread-4k-qd32", BaseInput("01-randread-4k-qd32")};
  c.input.headers.push_back(Header("randread-4k-qd32", "randread", 4096, 4096, "null", "32"));
  JobDisplay d;
  d.latency_depth = 32;
  JobResult r = Simulate({.iops = 1.5e6, .tails = Concat(kUs7, {1500000})});
  AddGroup(&c.input, {&r}, d);
  c.input.entries.push_back(
      Entry("randread-4k-qd32", std::move(r), d, JobOptions(c.stem, 0), 11067));
  return c;
}

Case Case02() {
  Case c{"02-randrw-70-30", BaseInput("02-randrw-70-30")};
  c.input.headers.push_back(Header("randrw-70-30", "randrw", 4096, 4096, "null", "16"));
  JobDisplay d;
  d.latency_depth = 16;
  JobResult r = Simulate({.iops = 1.8e6, .read_share = 0.7, .tails = Concat(kUs9, {1500000})});
  AddGroup(&c.input, {&r}, d);
  c.input.entries.push_back(Entry("randrw-70-30", std::move(r), d, JobOptions(c.stem, 0), 11285));
  return c;
}

Case Case03() {
  Case c{"03-two-jobs-group-reporting", BaseInput("03-two-jobs-group-reporting")};
  c.input.processes = 2;
  c.input.headers.push_back(Header("reader", "randread", 4096, 4096, "null", "32"));
  c.input.headers.push_back(Header("writer", "write", 131072, 131072, "null", "8"));
  JobDisplay d;
  d.latency_depth = 8;  // the last job's
  JobResult reader = Simulate(
      {.iops = 1.1e6, .tails = Concat(kUs10, {1500000, 3000000, 7000000, 15000000})});
  JobResult writer = Simulate({.iops = 0.7e6,
                               .runtime_ms = 2002,
                               .read_share = 0.0,
                               .sizes = {131072},
                               .clat_lo = 470,
                               .clat_hi = 990,
                               .seed = 2});
  AddGroup(&c.input, {&reader, &writer}, d);
  const JobResult* both[] = {&reader, &writer};
  // group_reporting: first job's name, last job's options.
  c.input.entries.push_back(
      Entry("reader", stats::MergeJobResults(both), d, JobOptions(c.stem, 0), 11366));
  return c;
}

Case Case04() {
  Case c{"04-numjobs4-split", BaseInput("04-numjobs4-split")};
  c.input.processes = 4;
  c.input.headers.push_back(Header("split4", "randread", 4096, 4096, "null", "8", 4));
  JobDisplay d;
  d.latency_depth = 8;
  std::vector<JobResult> clones;
  for (int i = 0; i < 4; ++i) {
    clones.push_back(Simulate({.iops = 0.85e6,
                               .runtime_ms = 2001 + i % 2,
                               // fio's clones 2 and 4 also saw a 10-20 ms IO.
                               .tails = Concat(kUs10, i % 2 == 0
                                                          ? std::vector<int64_t>{1500000, 3000000,
                                                                                 7000000}
                                                          : std::vector<int64_t>{1500000, 3000000,
                                                                                 7000000, 15000000}),
                               .seed = static_cast<uint64_t>(10 + i)}));
  }
  std::vector<const JobResult*> ptrs;
  for (const JobResult& r : clones) ptrs.push_back(&r);
  AddGroup(&c.input, ptrs, d);
  for (int i = 0; i < 4; ++i) {
    c.input.entries.push_back(
        Entry("split4", std::move(clones[i]), d, JobOptions(c.stem, i), 11439 + i));
  }
  return c;
}

Case Case05() {
  Case c{"05-randrw-unified-latpct", BaseInput("05-randrw-unified-latpct")};
  c.input.headers.push_back(Header("randrw-unified", "randrw", 4096, 65536, "null", "8"));
  JobDisplay d;
  d.latency_depth = 8;
  d.unified = UnifiedRw::kBoth;
  d.lat_percentiles = true;
  d.slat_percentiles = true;
  d.percentile_list = {50, 90, 99, 99.9};
  JobResult r = Simulate({.iops = 1.7e6,
                          .read_share = 0.5,
                          .sizes = {4096, 65536},
                          .clat_lo = 260,
                          .clat_hi = 990,
                          .tails = Concat(kUs9, {1500000})});
  AddGroup(&c.input, {&r}, d);
  c.input.entries.push_back(Entry("randrw-unified", std::move(r), d, JobOptions(c.stem, 0), 11550));
  return c;
}

Case Case07() {
  Case c{"07-psync-disk-util", BaseInput("07-psync-disk-util")};
  c.input.headers.push_back(Header("disk-util", "randread", 4096, 4096, "psync", "1"));
  c.input.info_lines.push_back("disk-util: Laying out IO file (1 file / 64MiB)");
  JobDisplay d;
  d.latency_depth = 1;
  JobResult r = Simulate({.iops = 7900,
                          .clat_lo = 55000,
                          .clat_hi = 240000,
                          .tails = {300000, 600000, 900000, 1500000, 3000000, 7000000, 15000000},
                          .slat = false});
  AddGroup(&c.input, {&r}, d);
  c.input.entries.push_back(Entry("disk-util", std::move(r), d, JobOptions(c.stem, 0), 11830));
  stats::DeviceRow vda;
  vda.name = "vda";
  vda.read_ios = 15387;
  vda.write_ios = 7;
  vda.read_ticks_ms = 1446;
  vda.write_ticks_ms = 6;
  vda.in_queue_ms = 1454;
  vda.util_pct = 68.03;
  c.input.disk_util.push_back(vda);
  return c;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  cases.push_back(Case01());
  cases.push_back(Case02());
  cases.push_back(Case03());
  cases.push_back(Case04());
  cases.push_back(Case05());
  cases.push_back(Case07());
  return cases;
}

const std::vector<Case>& Cases() {
  static const std::vector<Case>* cases = new std::vector<Case>(AllCases());
  return *cases;
}

class ParityTest : public ::testing::TestWithParam<int> {
 protected:
  const Case& TheCase() const { return Cases()[GetParam()]; }
};

TEST_P(ParityTest, JsonKeyTree) {
  const Case& c = TheCase();
  READ_REF_OR_SKIP(ref, c.stem + ".json");
  const std::vector<std::string> want = KeyPathsOf(ref);
  const std::string out = WriteJson(c.input, /*json_plus=*/false);
  DumpIfRequested(c.stem + ".json", out);
  const std::vector<std::string> got = KeyPathsOf(out);
  EXPECT_EQ(CompareLines(want, got), "") << c.stem;
}

TEST_P(ParityTest, JsonPlusKeyTree) {
  const Case& c = TheCase();
  READ_REF_OR_SKIP(ref, c.stem + ".jsonplus.json");
  const std::vector<std::string> want = KeyPathsOf(ref);
  const std::string out = WriteJson(c.input, /*json_plus=*/true);
  DumpIfRequested(c.stem + ".jsonplus.json", out);
  const std::vector<std::string> got = KeyPathsOf(out);
  EXPECT_EQ(CompareLines(want, got), "") << c.stem;
}

TEST_P(ParityTest, TerseFields) {
  const Case& c = TheCase();
  READ_REF_OR_SKIP(ref, c.stem + ".terse.txt");
  const std::vector<std::string> want_lines =
      absl::StrSplit(ref, '\n', absl::SkipEmpty());
  const std::string out = WriteTerse(c.input);
  DumpIfRequested(c.stem + ".terse.txt", out);
  const std::vector<std::string> got_lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(want_lines.size(), got_lines.size()) << c.stem;
  for (size_t i = 0; i < want_lines.size(); ++i) {
    const std::vector<std::string> want = TerseShapes(want_lines[i]);
    const std::vector<std::string> got = TerseShapes(got_lines[i]);
    EXPECT_EQ(want.size(), got.size()) << c.stem << " line " << i;
    EXPECT_EQ(CompareLines(want, got), "") << c.stem << " line " << i << " (field numbers)";
  }
}

TEST_P(ParityTest, NormalLineShapes) {
  const Case& c = TheCase();
  READ_REF_OR_SKIP(ref, c.stem + ".normal.txt");
  const std::string out = WriteNormal(c.input);
  DumpIfRequested(c.stem + ".normal.txt", out);
  EXPECT_EQ(CompareLines(MaskedLines(ref), MaskedLines(out)), "") << c.stem << "\n" << out;
}

std::string CaseName(const ::testing::TestParamInfo<int>& info) {
  static const char* const kNames[] = {"J01", "J02", "J03", "J04", "J05", "J07"};
  return kNames[info.param];
}
INSTANTIATE_TEST_SUITE_P(FioReference, ParityTest, ::testing::Range(0, 6), CaseName);

TEST(ParityHarnessTest, TerseFieldCounts) {
  const std::vector<std::pair<int, size_t>> want = {{0, 121}, {4, 162}, {5, 130}};
  for (const auto& [i, n] : want) {
    const std::string line = WriteTerse(Cases()[i].input);
    const std::vector<std::string> fields = absl::StrSplit(absl::StripSuffix(line, "\n"), ';');
    EXPECT_EQ(fields.size(), n) << Cases()[i].stem;
  }
}

// The comparisons must be able to fail: drop or alter one line / key.
TEST(ParityHarnessTest, DetectsMissingNormalLine) {
  const Case& c = Cases()[0];
  READ_REF_OR_SKIP(ref, c.stem + ".normal.txt");
  std::vector<std::string> lines = absl::StrSplit(WriteNormal(c.input), '\n');
  std::vector<std::string> without_submit;
  for (const std::string& l : lines) {
    if (l.find("submit    :") == std::string::npos) without_submit.push_back(l);
  }
  ASSERT_EQ(without_submit.size() + 1, lines.size());
  EXPECT_NE(CompareLines(MaskedLines(ref), MaskedLines(absl::StrJoin(without_submit, "\n"))), "");
  // A changed unit is a different shape too.
  std::string usec = WriteNormal(c.input);
  usec.replace(usec.find("clat (nsec)"), 11, "clat (usec)");
  EXPECT_NE(CompareLines(MaskedLines(ref), MaskedLines(usec)), "");
}

TEST(ParityHarnessTest, DetectsMissingJsonKey) {
  const Case& c = Cases()[0];
  READ_REF_OR_SKIP(ref, c.stem + ".json");
  std::string json = WriteJson(c.input, false);
  const size_t at = json.find("      \"majf\" : ");
  ASSERT_NE(at, std::string::npos);
  json.erase(at, json.find('\n', at) + 1 - at);
  EXPECT_NE(CompareLines(KeyPathsOf(ref), KeyPathsOf(json)), "");
}

TEST(ParityHarnessTest, FormatsInFioOrder) {
  const Case& c = Cases()[0];
  auto formats = ParseOutputFormats("normal,json,terse");
  ASSERT_TRUE(formats.ok());
  const std::string out = WriteReport(c.input, *formats);
  EXPECT_EQ(out.rfind("3;fio-3.33;", 0), 0u);
  EXPECT_LT(out.find("\"fio version\""), out.find("Run status group"));
  EXPECT_FALSE(ParseOutputFormats("xml").ok());
}

TEST(KernelReportTest, JsonKeyAndNormalSections) {
  ReportInput in = Cases()[0].input;
  stats::KernelReport k;
  k.host_name = "host0";
  k.elapsed_ns = 2'001'000'000;
  k.busy_ns = 1'500'000'000;
  k.sys_pct = 40.5;
  k.contention_pct = 3.25;
  k.cpus.push_back({.cpu = 0, .mode_ns = {100, 200, 30, 40, 500}});
  k.profile.push_back({"blk_mq_submit_bio", stats::CpuMode::kSys, 400, 26.67});
  k.profile.push_back({"fio:td_io_queue", stats::CpuMode::kUser, 100, 6.67});
  k.locks.push_back({"nullb0:dd->lock", 1000, 10, 5000, 90000, 3});
  k.counters.push_back({"ktime_get_ns", 4});
  k.sched.push_back({.task = "irq/mpi3mr0-msix*", .threads = 64, .rt = true, .runtime_ns = 7'000'000,
                     .switches = 900, .delay_ns = 4'500'000, .max_delay_ns = 250'000, .max_delay_at_ns = 1'000'000});
  k.devices.push_back({.name = "nullb0", .q2g = {},
                       .g2d = {.n = 4, .min_ns = 1000, .avg_ns = 2500.0, .max_ns = 4000},
                       .d2c = {.n = 4, .min_ns = 50000, .avg_ns = 51000.0, .max_ns = 52000},
                       .q2c = {.n = 4, .min_ns = 51000, .avg_ns = 53500.0, .max_ns = 56000}});
  in.kernel = k;
  const std::string json = WriteJson(in, false);
  const std::vector<std::string> paths = KeyPathsOf(json);
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/blklab/cpus[0]/softirq_ns"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/blklab/profile[1]/mode"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/blklab/locks[0]/wait_ns"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/blklab/counters[0]/count"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/blklab/sched[0]/max_delay_at_ns"), paths.end());
  // Q2G has no requests: no row.
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/blklab/btt[2]/max_ns"), paths.end());
  EXPECT_EQ(std::find(paths.begin(), paths.end(), "/blklab/btt[3]/n"), paths.end());
  EXPECT_EQ(paths.back(), "/blklab/diskstats[0]/write_sectors");
  const std::string normal = WriteNormal(in);
  EXPECT_GT(normal.find("blklab CPU modes"), normal.find("Run status group"));
  EXPECT_NE(normal.find("[k] blk_mq_submit_bio"), std::string::npos);
  EXPECT_NE(normal.find("[.] fio:td_io_queue"), std::string::npos);
  EXPECT_NE(normal.find("nullb0:dd->lock"), std::string::npos);
  // perf sched latency's row: average 5 us over 900 picks, longest 0.25 ms.
  EXPECT_NE(normal.find("irq/mpi3mr0-msix* [FIFO]"), std::string::npos);
  EXPECT_NE(normal.find("4.500       0.0050        0.250"), std::string::npos) << normal;
  // btt's table, in seconds.
  EXPECT_NE(normal.find("  D2C          0.000050000   0.000051000   0.000052000           4"), std::string::npos)
      << normal;
  const std::string top = WritePerfTop(k, 1);
  EXPECT_NE(top.find("blk_mq_submit_bio"), std::string::npos);
  EXPECT_EQ(top.find("td_io_queue"), std::string::npos);
}

}  // namespace
}  // namespace blklab::report
