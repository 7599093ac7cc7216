// Runs the job-file parser over the fio example corpus
// (tests/data/fio-examples, copied from fio's repository, with fio 3.33's verdicts in parse-results.tsv).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "engine/workload/job_parser.h"

namespace blklab::workload {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Verdict {
  std::string file;
  int fio_exit = 0;
};

std::vector<Verdict> LoadVerdicts(const fs::path& dir) {
  std::vector<Verdict> out;
  std::ifstream in(dir / "parse-results.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const size_t t1 = line.find('\t');
    if (t1 == std::string::npos) continue;
    const size_t t2 = line.find('\t', t1 + 1);
    out.push_back({line.substr(0, t1), std::stoi(line.substr(t1 + 1, t2 - t1 - 1))});
  }
  return out;
}

TEST(CorpusTest, FioAcceptedFilesParse) {
  const fs::path dir = fs::path(BLKLAB_TEST_DATA_DIR) / "fio-examples";
  ASSERT_TRUE(fs::exists(dir / "parse-results.tsv")) << "no corpus at " << dir;
  const std::vector<Verdict> verdicts = LoadVerdicts(dir);
  ASSERT_FALSE(verdicts.empty());

  int fio_accepted = 0, parsed = 0, modelled = 0, refused_not_modelled = 0;
  int fio_rejected = 0, also_rejected = 0;
  for (const Verdict& v : verdicts) {
    const std::string path = (dir / v.file).string();
    auto text = ReadFile(path);
    ASSERT_TRUE(text.ok()) << path;
    ParseOptions opt;
    opt.read_file = ReadFile;
    opt.lookup_var = [](const std::string&) { return std::optional<std::string>(); };
    // Stage 1, like `fio --parse-only`: any engine fio knows.
    opt.accept_unmodelled_engines = true;
    auto loose = ParseJobFile(*text, path, opt);
    // Stage 2: what blklab will run.
    opt.accept_unmodelled_engines = false;
    auto strict = ParseJobFile(*text, path, opt);
    if (v.fio_exit == 0) {
      ++fio_accepted;
      if (loose.ok()) ++parsed;
      else ADD_FAILURE() << v.file << " accepted by fio, refused: " << loose.status().message();
      if (strict.ok()) {
        ++modelled;
      } else {
        const std::string msg(strict.status().message());
        if (msg.find("not modelled") != std::string::npos) ++refused_not_modelled;
        else ADD_FAILURE() << v.file << ": refusal is not a 'not modelled' error: " << msg;
      }
    } else {
      ++fio_rejected;
      if (!loose.ok()) ++also_rejected;
    }
  }
  std::printf("corpus: fio accepts %d files; blklab parses %d (%.1f%%), runs %d, refuses %d as "
              "not modelled; fio rejects %d, blklab also rejects %d\n",
              fio_accepted, parsed, 100.0 * parsed / fio_accepted, modelled, refused_not_modelled,
              fio_rejected, also_rejected);
  EXPECT_GE(parsed * 10, fio_accepted * 9);
  EXPECT_EQ(modelled + refused_not_modelled, fio_accepted);
}

}  // namespace
}  // namespace blklab::workload
