// t/io_uring's command line as fio 3.33's tool reads it.
#include "engine/workload/t_io_uring.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::workload {
namespace {

using ::testing::HasSubstr;

TioUringSpec Parse(const std::vector<std::string>& args) {
  absl::StatusOr<TioUringArgs> a = ParseTioUringArgs(args);
  EXPECT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->show_usage);
  return a->spec;
}

TEST(TioUringArgs, JoinedAndSeparateArgumentsAndFilesAnywhere) {
  const TioUringSpec s = Parse({"-b512", "/dev/nvme0n1", "-d", "64", "-s16", "-c", "8", "-p0", "/dev/nvme1n1",
                                "-B", "0", "-F1", "-n2", "-r", "5", "-R0", "-X0"});
  EXPECT_EQ(s.bs, 512);
  EXPECT_EQ(s.depth, 64);
  EXPECT_EQ(s.batch_submit, 16);
  EXPECT_EQ(s.batch_complete, 8);
  EXPECT_FALSE(s.polled);
  EXPECT_FALSE(s.fixedbufs);
  EXPECT_TRUE(s.register_files);
  EXPECT_EQ(s.nthreads, 2);
  EXPECT_EQ(s.runtime_s, 5);
  EXPECT_FALSE(s.random_io);
  EXPECT_FALSE(s.register_ring);
  EXPECT_EQ(s.files, (std::vector<std::string>{"/dev/nvme0n1", "/dev/nvme1n1"}));
}

TEST(TioUringArgs, DefaultsAtoiAndClamps) {
  const TioUringSpec d = Parse({"f"});
  EXPECT_EQ(d.depth, 128);
  EXPECT_EQ(d.batch_submit, 32);
  EXPECT_EQ(d.batch_complete, 32);
  EXPECT_EQ(d.bs, 4096);
  EXPECT_TRUE(d.polled && d.fixedbufs && d.register_files && d.random_io && d.register_ring);
  // -s/-c of 0 become 1; both are capped at the depth; atoi stops at junk.
  const TioUringSpec s = Parse({"-d8", "-s0", "-c100", "-b4k", "-p7", "f"});
  EXPECT_EQ(s.batch_submit, 1);
  EXPECT_EQ(s.batch_complete, 8);
  EXPECT_EQ(s.bs, 4);
  EXPECT_TRUE(s.polled);
  // `--` ends the options.
  EXPECT_EQ(Parse({"--", "-d4"}).files, (std::vector<std::string>{"-d4"}));
}

TEST(TioUringArgs, UsageAndErrorsAsTheToolPrintsThem) {
  absl::StatusOr<TioUringArgs> none = ParseTioUringArgs({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->show_usage);
  EXPECT_EQ(none->exit_code, 1);
  absl::StatusOr<TioUringArgs> help = ParseTioUringArgs({"-p0", "-r5", "-h"});
  ASSERT_TRUE(help.ok());
  EXPECT_TRUE(help->show_usage);
  EXPECT_EQ(help->exit_code, 0);
  const std::string usage = TioUringUsage("t/io_uring", help->spec);
  EXPECT_THAT(usage, HasSubstr(" -p <bool> : Polled IO, default 0\n"));
  EXPECT_THAT(usage, HasSubstr(" -r <int>  : Runtime in seconds, default 5\n"));
  EXPECT_THAT(usage, HasSubstr(" -d <int>  : IO Depth, default 128\n"));
  EXPECT_THAT(usage, HasSubstr(" -X <bool> : Use registered ring 1\n"));
  absl::StatusOr<TioUringArgs> bad = ParseTioUringArgs({"-q", "f"});
  ASSERT_TRUE(bad.ok());
  EXPECT_TRUE(bad->show_usage);
  EXPECT_EQ(bad->stderr_text, "t/io_uring: invalid option -- 'q'\n");
  absl::StatusOr<TioUringArgs> missing = ParseTioUringArgs({"f", "-d"});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->stderr_text, "t/io_uring: option requires an argument -- 'd'\n");
  EXPECT_THAT(ParseTioUringArgs({"-n0", "f"}).status().message(), HasSubstr("Threads must be non-zero"));
  EXPECT_THAT(ParseTioUringArgs({"-d8"}).status().message(), HasSubstr("No files specified"));
  EXPECT_TRUE(ParseTioUringArgs({"-N1"}).ok()) << "no-op runs need no file";
}

TEST(TioUringArgs, ThreadsGetFilesAsTheToolDealsThem) {
  auto files = [](int n, int nfiles) {
    TioUringSpec s;
    s.nthreads = n;
    for (int i = 0; i < nfiles; ++i) s.files.push_back("f" + std::to_string(i));
    return TioUringThreadFiles(s);
  };
  using V = std::vector<std::vector<int>>;
  EXPECT_EQ(files(1, 2), (V{{0, 1}}));            // -n1 A B: one thread, both files
  EXPECT_EQ(files(2, 2), (V{{0}, {1}}));
  EXPECT_EQ(files(4, 2), (V{{0}, {0}, {1}, {1}}));  // a file shared by two threads
  EXPECT_EQ(files(3, 2), (V{{0}, {0}, {1}}));
  EXPECT_EQ(files(2, 3), (V{{0, 2}, {1}}));        // round robin
}

}  // namespace
}  // namespace blklab::workload
