#include "engine/job/io_engine_type.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "engine/workload/io_engine_info.h"
#include "engine/workload/option_table.h"

namespace blklab::job {
namespace {

using workload::IoEngine;
using workload::IoEngineFlag;

TEST(IoEngineTypeTest, EveryModelledEngineIsRegisteredOnce) {
  for (const workload::IoEngineInfo& info : workload::ModelledIoEngines()) {
    const IoEngineType* type = FindIoEngineType(info.id);
    ASSERT_NE(type, nullptr) << info.name;
    EXPECT_EQ(type->id, info.id) << info.name;
    EXPECT_NE(type->make, nullptr) << info.name;
  }
  EXPECT_EQ(FindIoEngineType(IoEngine::kUnmodelled), nullptr);
}

TEST(IoEngineTypeTest, NamesMapToTheirEngine) {
  std::set<std::string> names;
  for (const workload::IoEngineInfo& info : workload::ModelledIoEngines()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(workload::ModelledEngine(info.name), info.id) << info.name;
    EXPECT_TRUE(workload::IsKnownFioEngine(info.name)) << info.name;
  }
  EXPECT_EQ(workload::ModelledEngine("cpuio"), std::nullopt);
  EXPECT_EQ(workload::ModelledEngine(""), std::nullopt);
}

// The flags reproduce the engine-name lists they replaced.
TEST(IoEngineTypeTest, FlagsMatchTheFormerEngineLists) {
  const std::set<IoEngine> async = {IoEngine::kIoUring, IoEngine::kIoUringCmd, IoEngine::kLibaio,
                                    IoEngine::kPosixaio, IoEngine::kNull};
  const std::set<IoEngine> no_page_cache = {IoEngine::kNull, IoEngine::kIoUringCmd, IoEngine::kSg,
                                            IoEngine::kFalloc, IoEngine::kFtruncate};
  for (int i = 0; i <= workload::kNumModelledIoEngines; ++i) {
    const auto e = static_cast<IoEngine>(i);
    EXPECT_EQ(workload::IsSynchronous(e), !async.contains(e)) << i;
    EXPECT_EQ(workload::IoEngineHas(e, IoEngineFlag::kFileOperation),
              e == IoEngine::kFalloc || e == IoEngine::kFtruncate) << i;
    EXPECT_EQ(workload::IoEngineHas(e, IoEngineFlag::kNoPageCache), no_page_cache.contains(e)) << i;
    EXPECT_EQ(workload::IoEngineHas(e, IoEngineFlag::kAlwaysPageCache), e == IoEngine::kMmap) << i;
    EXPECT_EQ(workload::IoEngineHas(e, IoEngineFlag::kDiskless), e == IoEngine::kNull) << i;
    EXPECT_EQ(workload::IoEngineHas(e, IoEngineFlag::kFakeIo), e == IoEngine::kNull) << i;
    EXPECT_EQ(workload::IoEngineHas(e, IoEngineFlag::kNvmePassthrough), e == IoEngine::kIoUringCmd) << i;
    EXPECT_EQ(workload::IoEngineHas(e, IoEngineFlag::kScsiPassthrough), e == IoEngine::kSg) << i;
  }
}

TEST(IoEngineTypeTest, EngineChecksAreTheirEnginesOwn) {
  workload::JobSpec spec;
  spec.name = "j";
  const EngineTarget device{/*raw_device=*/true, nullptr, "nvme0n1"};
  spec.ioengine = IoEngine::kFalloc;
  spec.ioengine_name = "falloc";
  EXPECT_EQ(CheckEngineTarget(spec, device).message(),
            "job 'j': ioengine=falloc needs a regular file (the job's target is the device nvme0n1; falloc(2) of a "
            "block device is not modelled)");
  spec.ioengine = IoEngine::kSplice;
  spec.direct = true;
  EXPECT_TRUE(CheckEngineTarget(spec, device).ok());
  EXPECT_EQ(CheckEngineJob(spec).code(), absl::StatusCode::kUnimplemented);
  spec.ioengine = IoEngine::kUnmodelled;
  EXPECT_TRUE(CheckEngineTarget(spec, device).ok());
  EXPECT_TRUE(CheckEngineJob(spec).ok());
}

}  // namespace
}  // namespace blklab::job
