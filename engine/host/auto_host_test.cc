#include "engine/host/auto_host.h"

#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::host {
namespace {

using ::testing::HasSubstr;

TEST(AutoHostTest, OneDeviceOfEachKindTheNamesGive) {
  absl::StatusOr<HostSpec> h =
      AutoHost({"/dev/nvme0n1", "/dev/sdb", "nullb1", "/dev/nvme0n1", "/dev/nvme1n1p2", "/dev/sdc3"});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->devices.size(), 5u);  // the repeated nvme0n1 once
  EXPECT_EQ(h->devices[0].name, "nvme0n1");
  EXPECT_TRUE(std::holds_alternative<NvmeSpec>(h->devices[0].driver));
  EXPECT_EQ(h->devices[0].queue.scheduler, Scheduler::kNone);
  EXPECT_EQ(h->devices[1].name, "sdb");
  ASSERT_TRUE(std::holds_alternative<HbaSpec>(h->devices[1].driver));
  EXPECT_EQ(std::get<HbaSpec>(h->devices[1].driver).nr_hw_queues, 1);
  // One hardware queue: the kernel's default scheduler is mq-deadline.
  EXPECT_EQ(h->devices[1].queue.scheduler, Scheduler::kMqDeadline);
  EXPECT_EQ(h->devices[2].name, "nullb1");
  EXPECT_TRUE(std::holds_alternative<NullBlkSpec>(h->devices[2].driver));
  EXPECT_EQ(h->devices[3].name, "nvme1n1p2");
  EXPECT_EQ(h->devices[4].name, "sdc3");
  EXPECT_EQ(h->cpus.count, 4);
}

TEST(AutoHostTest, SixtyFourDisksFitTheSpecsLimits) {
  std::vector<std::string> targets;
  for (int i = 0; i < 64; ++i) {
    targets.push_back(absl::StrCat("/dev/sd", std::string(1, static_cast<char>('a' + i / 26)),
                                   std::string(1, static_cast<char>('a' + i % 26))));
  }
  absl::StatusOr<HostSpec> h = AutoHost(targets);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->devices.size(), 64u);
  EXPECT_EQ(h->description, "built from the job: sdaa, sdab, sdac, sdad, sdae, sdaf, and 58 more");
}

TEST(AutoHostTest, RegularFilesGetARootFilesystem) {
  absl::StatusOr<HostSpec> h = AutoHost({"/dev/nvme0n1", "fio-rand-read", "/tmp/testfile"});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->devices.size(), 2u);
  EXPECT_EQ(h->devices[1].name, "nvme1n1");  // nvme0n1 is the job's raw device
  ASSERT_EQ(h->filesystems.size(), 1u);
  EXPECT_EQ(h->filesystems[0].path, "/");
  EXPECT_EQ(h->filesystems[0].device, "nvme1n1");
  EXPECT_EQ(h->filesystems[0].type, "ext4");
}

TEST(AutoHostTest, NoTargetGivesTheDefaultDevice) {
  absl::StatusOr<HostSpec> h = AutoHost({});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->devices.size(), 1u);
  EXPECT_EQ(h->devices[0].name, "nullb0");
}

TEST(AutoHostTest, AGenericCharacterDeviceGetsItsNamespace) {
  // io_uring_cmd's /dev/ngXnY is the character device of namespace nvmeXnY.
  absl::StatusOr<HostSpec> h = AutoHost({"/dev/ng1n2"});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->devices.size(), 1u);
  EXPECT_EQ(h->devices[0].name, "nvme1n2");
  EXPECT_TRUE(std::holds_alternative<NvmeSpec>(h->devices[0].driver));
}

TEST(AutoHostTest, RefusesWhatItCannotBuildByName) {
  struct Case {
    std::vector<std::string> targets;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"/dev/vda"}, "not a kind of block device blklab models (nullbN, nvmeXnY[pZ], sdX[N]): a virtio-blk"},
           {{"/dev/dm-0"}, "a device-mapper target"},
           {{"/dev/null"}, "a memory character device (its I/O never reaches the block layer"},
           {{"/dev/zero"}, "a memory character device"},
           {{"/dev/loop0"}, "a loop device"},
           {{"/dev/a/b"}, "not a name blklab can give a device"},
           {{"/dev/nvme0n1x"}, "not a kind of block device"},
           {{"/dev/sd1"}, "not a kind of block device"},
           {{"/dev/sdb1", "/dev/sdb2"}, "are on one disk (sdb)"},
           {{"/dev/nvme0n1", "/dev/nvme0n1p1"}, "are on one disk (nvme0n1)"},
       }) {
    absl::StatusOr<HostSpec> h = AutoHost(c.targets);
    ASSERT_FALSE(h.ok()) << c.targets[0];
    EXPECT_THAT(std::string(h.status().message()), HasSubstr(c.says)) << c.targets[0];
    std::string named = c.targets.back();
    if (c.targets.size() > 1) named = named.substr(5);  // the two devices' names
    EXPECT_THAT(std::string(h.status().message()), HasSubstr(named)) << c.targets[0];
  }
}

TEST(AutoHostTest, ANameOfNoKnownKindGetsAStandInNamespaceAndANote) {
  // fio's placeholder and a vendor driver's name: no kernel driver blklab
  // knows gives them, so each is an NVMe namespace, and the user is told.
  const std::vector<std::string> targets = {"/dev/XXX", "/dev/fioa", "/dev/fioa", "/dev/nvme0n1"};
  absl::StatusOr<HostSpec> h = AutoHost(targets);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->devices.size(), 3u);
  EXPECT_EQ(h->devices[0].name, "XXX");
  EXPECT_TRUE(std::holds_alternative<NvmeSpec>(h->devices[0].driver));
  EXPECT_EQ(h->devices[1].name, "fioa");
  EXPECT_TRUE(std::holds_alternative<NvmeSpec>(h->devices[1].driver));
  const std::vector<std::string> notes = AutoHostNotes(targets);
  ASSERT_EQ(notes.size(), 2u);  // fioa once; nvme0n1 is a real kind
  EXPECT_THAT(notes[0], HasSubstr("filename=/dev/XXX: no kernel driver blklab knows gives this name"));
  EXPECT_THAT(notes[1], HasSubstr("/dev/fioa"));
  EXPECT_TRUE(AutoHostNotes({"/dev/nvme0n1", "/dev/sda", "file"}).empty());
  absl::StatusOr<std::string> yaml = AutoHostYaml({"/dev/fioa"});
  ASSERT_TRUE(yaml.ok());
  EXPECT_THAT(*yaml, HasSubstr("a stand-in"));
}

TEST(AutoHostTest, SizelessFilesAreListedAsExistingFiles) {
  absl::StatusOr<HostSpec> h = AutoHost({"/tmp/testfile", "data"}, {"/tmp/testfile", "/bad\"name"});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->filesystems.size(), 1u);
  ASSERT_EQ(h->filesystems[0].files.size(), 1u);  // a name YAML cannot hold plainly stays size-less
  EXPECT_EQ(h->filesystems[0].files[0].path, "/tmp/testfile");
  EXPECT_EQ(h->filesystems[0].files[0].mib, 1024);
}

TEST(AutoHostTest, TheDocumentParsesAsAHostSpec) {
  absl::StatusOr<std::string> yaml = AutoHostYaml({"/dev/sda"});
  ASSERT_TRUE(yaml.ok());
  EXPECT_THAT(*yaml, HasSubstr("name: auto"));
  EXPECT_THAT(*yaml, HasSubstr("elevator_get_default"));
  absl::StatusOr<HostSpec> h = ParseHostSpec(*yaml);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->description, "built from the job: sda");
}

}  // namespace
}  // namespace blklab::host
