#include "engine/host/host_overlay.h"

#include <string>
#include <variant>
#include <vector>

#include "engine/host/presets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::host {
namespace {

using ::testing::HasSubstr;

util::DocNode PresetDoc(const std::string& name) {
  absl::StatusOr<absl::string_view> text = PresetYaml(name);
  EXPECT_TRUE(text.ok()) << text.status();
  absl::StatusOr<util::DocNode> doc = ParseHostDoc(*text);
  EXPECT_TRUE(doc.ok()) << doc.status();
  return *doc;
}

absl::StatusOr<HostSpec> Apply(const std::string& preset, const std::vector<std::string>& texts) {
  std::vector<HostOverride> overrides;
  for (const std::string& t : texts) {
    absl::StatusOr<HostOverride> o = ParseHostOverride(t);
    if (!o.ok()) return o.status();
    overrides.push_back(*o);
  }
  return ApplyHostOverrides(PresetDoc(preset), overrides);
}

TEST(HostOverlayTest, NoOverrideIsThePreset) {
  absl::StatusOr<HostSpec> spec = Apply("rc4-desktop-7950x", {});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(*spec, *GetPreset("rc4-desktop-7950x"));
}

TEST(HostOverlayTest, SetsKnobsDeviceFieldsByNameAndCosts) {
  absl::StatusOr<HostSpec> spec =
      Apply("rc4-desktop-7950x", {"knobs.dd_serialize_dispatch=true", "devices.nullb0.queue.scheduler=none",
                                  "devices.1.nvme.io_queue_depth=64", "costs.try_to_wake_up=200"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  const HostSpec base = *GetPreset("rc4-desktop-7950x");
  EXPECT_FALSE(base.knobs.dd_serialize_dispatch);
  EXPECT_TRUE(spec->knobs.dd_serialize_dispatch);
  EXPECT_EQ(spec->devices[0].queue.scheduler, Scheduler::kNone);
  EXPECT_EQ(std::get<NvmeSpec>(spec->devices[1].driver).io_queue_depth, 64);
  absl::StatusOr<CostTable> costs = BuildCostTable(*spec);
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_EQ(costs->try_to_wake_up, 200);
}

TEST(HostOverlayTest, DefaultsAreResolvedAfterTheOverride) {
  // nr_requests follows the scheduler: 2 x min(depth, 128) with one, the
  // tag depth without.
  absl::StatusOr<HostSpec> with = Apply("rc4-desktop-7950x", {});
  absl::StatusOr<HostSpec> without = Apply("rc4-desktop-7950x", {"devices.nullb0.queue.scheduler=none"});
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(with->devices[0].queue.nr_requests, 128);
  EXPECT_EQ(without->devices[0].queue.nr_requests, 64);
}

TEST(HostOverlayTest, ErrorsNameTheOverrideAndTheField) {
  absl::StatusOr<HostSpec> bad = Apply("rc4-desktop-7950x", {"knobs.dd_serialise_dispatch=true"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("knobs.dd_serialise_dispatch=true"));
  EXPECT_THAT(bad.status().message(), HasSubstr("dd_serialise_dispatch"));

  bad = Apply("rc4-desktop-7950x", {"devices.sda.queue.scheduler=none"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("no item 'sda'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("nullb0, nvme0n1"));

  bad = Apply("rc4-desktop-7950x", {"cpus.count=-3"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("cpus.count"));

  bad = Apply("rc4-desktop-7950x", {"name.x=1"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("not a map"));

  EXPECT_FALSE(ParseHostOverride("knobs.x").ok());
  EXPECT_FALSE(ParseHostOverride("knobs..x=1").ok());
  EXPECT_FALSE(ParseHostOverride("=1").ok());
}

}  // namespace
}  // namespace blklab::host
