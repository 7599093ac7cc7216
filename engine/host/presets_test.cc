#include "engine/host/presets.h"

#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::host {
namespace {

using ::testing::HasSubstr;

TEST(PresetsTest, AllPresetsParseAndAreNamedAfterThemselves) {
  std::vector<PresetInfo> presets = ListPresets();
  ASSERT_GE(presets.size(), 4u);
  for (const PresetInfo& p : presets) {
    absl::StatusOr<HostSpec> spec = GetPreset(p.name);
    ASSERT_TRUE(spec.ok()) << p.name << ": " << spec.status();
    EXPECT_EQ(spec->name, p.name);
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_EQ(p.description.find('\n'), std::string::npos);
    // Canonical JSON round-trips.
    absl::StatusOr<HostSpec> back = ParseHostSpec(HostSpecToJson(*spec));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, *spec) << p.name;
  }
}

TEST(PresetsTest, ExampleFilesMatchPresets) {
  for (const PresetInfo& p : ListPresets()) {
    const std::string path = std::string(BLKLAB_SOURCE_DIR) + "/examples/hosts/" + p.name + ".yaml";
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << "missing " << path;
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<HostSpec> from_file = ParseHostSpec(text.str());
    ASSERT_TRUE(from_file.ok()) << path << ": " << from_file.status();
    EXPECT_EQ(*from_file, *GetPreset(p.name)) << path;
    EXPECT_EQ(text.str(), *PresetYaml(p.name)) << path << " differs from the embedded text";
  }
}

TEST(PresetsTest, DefaultAndBenchmarkPresets) {
  absl::StatusOr<HostSpec> def = GetPreset(kDefaultPresetName);
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->cpus.count, 4);
  ASSERT_EQ(def->devices.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<NullBlkSpec>(def->devices[0].driver));
  EXPECT_EQ(def->devices[0].name, "nullb0");

  absl::StatusOr<HostSpec> bench = GetPreset("null-1cpu");
  ASSERT_TRUE(bench.ok());
  EXPECT_EQ(bench->cpus.count, 1);
  const NullBlkSpec& n = std::get<NullBlkSpec>(bench->devices[0].driver);
  EXPECT_EQ(n.irqmode, 0);
  EXPECT_EQ(n.submit_queues, 1);
  EXPECT_EQ(HardwareQueues(bench->devices[0], bench->cpus), 1);
  EXPECT_EQ(bench->devices[0].queue.scheduler, Scheduler::kNone);
}

TEST(PresetsTest, ReferenceCasePresets) {
  absl::StatusOr<HostSpec> rc4 = GetPreset("rc4-desktop-7950x");
  ASSERT_TRUE(rc4.ok());
  EXPECT_EQ(rc4->cpus.count, 32);
  EXPECT_FALSE(rc4->knobs.dd_serialize_dispatch);
  EXPECT_FALSE(rc4->knobs.dd_insert_side_lists);
  for (const DeviceSpec& d : rc4->devices) EXPECT_EQ(d.queue.scheduler, Scheduler::kMqDeadline) << d.name;
  EXPECT_EQ(HardwareQueues(rc4->devices[0], rc4->cpus), 1);
  EXPECT_EQ(HardwareQueues(rc4->devices[1], rc4->cpus), 32);

  absl::StatusOr<HostSpec> rc2 = GetPreset("rc2-io_uring-core");
  ASSERT_TRUE(rc2.ok());
  EXPECT_TRUE(rc2->knobs.config_blk_cgroup);
  EXPECT_FALSE(rc2->knobs.throttle_fast_path_inline);

  absl::StatusOr<HostSpec> rc5 = GetPreset("rc5-scsi_debug-luns");
  ASSERT_TRUE(rc5.ok());
  EXPECT_TRUE(rc5->knobs.restart_walks_shared_tag_queues);
  EXPECT_EQ(DeviceInstances(rc5->devices[0]), 8);
}

TEST(PresetsTest, UnknownPreset) {
  absl::StatusOr<HostSpec> spec = GetPreset("nope");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("presets: default, null-1cpu"));
}

}  // namespace
}  // namespace blklab::host
