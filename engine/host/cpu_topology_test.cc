#include "engine/host/cpu_topology.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CpuTopologyTest, Desktop7950x) {
  CpuSpec spec;
  spec.count = 32;
  spec.threads_per_core = 2;
  spec.cores_per_ccx = 8;
  absl::StatusOr<CpuTopology> t = CpuTopology::Create(spec);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_cpus(), 32);
  EXPECT_EQ(t->num_cores(), 16);
  EXPECT_EQ(t->num_llcs(), 2);
  EXPECT_EQ(t->num_dies(), 2);
  EXPECT_EQ(t->num_sockets(), 1);
  EXPECT_EQ(t->num_numa_nodes(), 1);
  // cpu i and i+16 are SMT siblings.
  EXPECT_EQ(t->cpu(17).core, 1);
  EXPECT_EQ(t->cpu(17).thread, 1);
  EXPECT_THAT(t->SmtSiblings(1), ElementsAre(17));
  EXPECT_EQ(t->cpu(7).llc, 0);
  EXPECT_EQ(t->cpu(8).llc, 1);
  EXPECT_EQ(t->cpu(24).llc, 1);
  EXPECT_THAT(t->CpusOfLlc(1), ElementsAre(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31));

  CostTable costs;
  EXPECT_EQ(t->TransferCost(3, 3, costs), 0);
  EXPECT_EQ(t->TransferCost(3, 19, costs), 0);  // SMT sibling
  EXPECT_EQ(t->TransferCost(0, 7, costs), costs.line_transfer_llc);
  EXPECT_EQ(t->TransferCost(0, 23, costs), costs.line_transfer_llc);
  EXPECT_EQ(t->TransferCost(0, 8, costs), costs.line_transfer_die);
  EXPECT_EQ(t->TransferCost(31, 0, costs), costs.line_transfer_die);
}

TEST(CpuTopologyTest, TwoSocketsWithNumaSplit) {
  CpuSpec spec;
  spec.count = 64;
  spec.threads_per_core = 2;
  spec.sockets = 2;
  spec.numa_nodes_per_socket = 2;
  absl::StatusOr<CpuTopology> t = CpuTopology::Create(spec);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_cores(), 32);
  EXPECT_EQ(t->num_llcs(), 2);  // one LLC per socket when cores_per_ccx = 0
  EXPECT_EQ(t->num_numa_nodes(), 4);
  EXPECT_EQ(t->cpu(0).numa_node, 0);
  EXPECT_EQ(t->cpu(8).numa_node, 1);
  EXPECT_EQ(t->cpu(16).socket, 1);
  EXPECT_EQ(t->cpu(16).numa_node, 2);
  EXPECT_EQ(t->cpu(63).numa_node, 3);
  CostTable costs;
  costs.line_transfer_socket = 250;
  EXPECT_EQ(t->TransferCost(0, 15, costs), costs.line_transfer_llc);
  EXPECT_EQ(t->TransferCost(0, 16, costs), 250);
  EXPECT_EQ(t->TransferCost(48, 1, costs), 250);  // core 16 (socket 1) to core 1
  EXPECT_EQ(t->TransferCost(47, 1, costs), costs.line_transfer_llc);  // core 15, socket 0
}

TEST(CpuTopologyTest, SingleCpu) {
  absl::StatusOr<CpuTopology> t = CpuTopology::Create(CpuSpec{});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_cpus(), 1);
  EXPECT_TRUE(t->SmtSiblings(0).empty());
}

TEST(CpuTopologyTest, RejectsUnevenShapes) {
  CpuSpec spec;
  spec.count = 31;
  spec.threads_per_core = 2;
  EXPECT_THAT(std::string(CpuTopology::Create(spec).status().message()),
              HasSubstr("cpus.count: must be a multiple of threads_per_core x sockets (2 x 1), got 31"));
  spec.count = 32;
  spec.cores_per_ccx = 5;
  EXPECT_THAT(std::string(CpuTopology::Create(spec).status().message()), HasSubstr("cpus.cores_per_ccx"));
  spec.cores_per_ccx = 4;
  spec.ccx_per_die = 3;
  EXPECT_THAT(std::string(CpuTopology::Create(spec).status().message()), HasSubstr("cpus.ccx_per_die"));
  spec.ccx_per_die = 2;
  spec.numa_nodes_per_socket = 3;
  EXPECT_THAT(std::string(CpuTopology::Create(spec).status().message()), HasSubstr("cpus.numa_nodes_per_socket"));
}

}  // namespace
}  // namespace blklab::host
