#include "engine/job/file_service.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "engine/workload/job_parser.h"

namespace blklab::job {
namespace {

using workload::ClonePlan;
using workload::JobSpec;

JobSpec Spec(const std::string& body) {
  workload::ParseOptions o;
  auto r = workload::ParseJobFile("[j]\n" + body, "t.fio", o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->jobs[0] : JobSpec{};
}

// `n` files of the job, each 1 MiB apart on one disk (as the topology lays
// files out), each its share of size=.
FileService Files(const JobSpec& s, uint32_t n) {
  std::vector<ClonePlan> plans;
  for (uint32_t f = 0; f < n; ++f) {
    auto p = workload::ResolveClone(s, 0, 1 << 20, n);
    EXPECT_TRUE(p.ok()) << p.status();
    p->region_start += uint64_t{f} << 20;
    p->device_bytes += uint64_t{f} << 20;
    plans.push_back(*p);
  }
  auto fs = FileService::Create(s, plans, 1, 7);
  EXPECT_TRUE(fs.ok()) << fs.status();
  return std::move(*fs);
}

TEST(FileServiceTest, SizeIsSharedAndTheLimitIsTheJobs) {
  const JobSpec s = Spec("rw=write\nbs=4k\nsize=64k\n");
  auto p = workload::ResolveClone(s, 0, 1 << 20, 4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->region_bytes, 16u << 10);
  EXPECT_EQ(p->io_limit_bytes, 64u << 10);
  EXPECT_TRUE(p->pass_end_ends_loop);
}

TEST(FileServiceTest, RoundRobinTakesEachFileInTurn) {
  FileService fs = Files(Spec("rw=write\nbs=4k\nsize=64k\n"), 4);
  std::vector<uint64_t> next_off(4, 0);
  for (int i = 0; i < 16; ++i) {
    const FileService::Next n = fs.NextIo();
    ASSERT_EQ(n.file, static_cast<uint32_t>(i % 4)) << i;
    // Each file goes on from where it was: its own sequential position.
    EXPECT_EQ(n.io.offset, (uint64_t{n.file} << 20) + next_off[n.file]);
    next_off[n.file] += 4096;
    EXPECT_FALSE(n.io.new_pass);
  }
}

TEST(FileServiceTest, RoundRobinN) {
  FileService fs = Files(Spec("rw=read\nbs=4k\nsize=64k\nfile_service_type=roundrobin:3\n"), 2);
  std::string order;
  for (int i = 0; i < 8; ++i) order += static_cast<char>('0' + fs.NextIo().file);
  EXPECT_EQ(order, "00011100");
}

TEST(FileServiceTest, ASyncTakesTheNextFilesTurn) {
  // fsync=2 over two files, as fio: W(0) W(1), the sync picks file 0, the
  // next write goes to file 1.
  FileService fs = Files(Spec("rw=write\nbs=4k\nsize=64k\nfsync=2\n"), 2);
  std::string order;
  for (int i = 0; i < 3; ++i) {
    order += static_cast<char>('0' + fs.NextIo().file);
    order += static_cast<char>('0' + fs.NextIo().file);
    order += 's';
    order += static_cast<char>('0' + fs.NextSyncFile());
  }
  EXPECT_EQ(order, "01s010s101s0");
  FileService one = Files(Spec("rw=write\nbs=4k\nsize=64k\n"), 1);
  EXPECT_EQ(one.NextSyncFile(), 0u);
}

TEST(FileServiceTest, SequentialFinishesAFileFirstAndLoopsStartAgain) {
  FileService fs = Files(Spec("rw=write\nbs=4k\nsize=32k\nfile_service_type=sequential\n"), 2);
  std::string order;
  std::vector<int> new_pass;
  for (int i = 0; i < 16; ++i) {
    const FileService::Next n = fs.NextIo();
    order += static_cast<char>('0' + n.file);
    if (n.io.new_pass) new_pass.push_back(i);
  }
  // 16 KiB per file: 4 writes each, then the loop ends and starts again.
  EXPECT_EQ(order, "0000111100001111");
  EXPECT_EQ(new_pass, std::vector<int>({8}));
}

TEST(FileServiceTest, RandomSpreadsOverFilesAndRepeats) {
  const JobSpec s = Spec("rw=randread\nbs=4k\nsize=512k\nfile_service_type=random\n");
  FileService a = Files(s, 4);
  FileService b = Files(s, 4);
  std::map<uint32_t, int> per_file;
  bool switched_back_to_back = false;
  uint32_t last = 99;
  for (int i = 0; i < 128; ++i) {
    const FileService::Next x = a.NextIo();
    const FileService::Next y = b.NextIo();
    ASSERT_EQ(x.file, y.file);
    ASSERT_EQ(x.io.offset, y.io.offset);
    ++per_file[x.file];
    if (x.file == last) switched_back_to_back = true;
    last = x.file;
  }
  EXPECT_EQ(per_file.size(), 4u);
  for (const auto& [f, n] : per_file) EXPECT_GT(n, 16) << f;
  EXPECT_TRUE(switched_back_to_back);  // not round robin
}

TEST(FileServiceTest, FilesDrawTheirOwnOffsets) {
  FileService fs = Files(Spec("rw=randread\nbs=4k\nsize=512k\n"), 2);
  int same = 0;
  for (int i = 0; i < 64; ++i) {
    const FileService::Next a = fs.NextIo();
    const FileService::Next b = fs.NextIo();
    ASSERT_EQ(a.file, 0u);
    ASSERT_EQ(b.file, 1u);
    if (a.io.offset == b.io.offset - (1u << 20)) ++same;
  }
  EXPECT_LT(same, 8);
}

TEST(FileServiceTest, TrimWriteTakesTurnsLikeAnyIo) {
  // fio 3.33's own iolog of this job over two files: each file's write
  // waits for that file's next turn.
  FileService fs = Files(Spec("rw=trimwrite\nbs=4k\nsize=64k\n"), 2);
  for (int i = 0; i < 4; ++i) {
    const FileService::Next t0 = fs.NextIo(), t1 = fs.NextIo(), w0 = fs.NextIo(), w1 = fs.NextIo();
    EXPECT_EQ(t0.file, 0u);
    EXPECT_EQ(t1.file, 1u);
    EXPECT_EQ(w0.file, 0u);
    EXPECT_EQ(w1.file, 1u);
    EXPECT_EQ(t0.io.direction, workload::Direction::kTrim);
    EXPECT_EQ(t1.io.direction, workload::Direction::kTrim);
    EXPECT_EQ(w0.io.direction, workload::Direction::kWrite);
    EXPECT_EQ(w1.io.direction, workload::Direction::kWrite);
    EXPECT_EQ(t0.io.offset, w0.io.offset);
    EXPECT_EQ(t1.io.offset, w1.io.offset);
  }
}

}  // namespace
}  // namespace blklab::job
