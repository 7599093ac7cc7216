// engine/host/cpu_topology.h
//
// CpuTopology gives each logical CPU of a CpuSpec its physical core, SMT
// thread, LLC group (CCX), die (CCD), socket and NUMA node, the way the kernel
// sees them in /sys/devices/system/cpu/cpuN/topology. Numbering follows Linux
// on x86: cpu c is core (c % cores), thread (c / cores), so cpu i and
// i + cores are SMT siblings; cores are numbered socket by socket and LLC
// group by LLC group; NUMA nodes split a socket's cores evenly.
//
// TransferCost prices moving a cacheline between two CPUs (docs/kernel-model.md
// §1.3): 0 on the same core (shared L1/L2), line_transfer_llc within an LLC
// group, line_transfer_die between LLC groups of one socket (another CCX/CCD
// or die), line_transfer_socket across sockets.
//
// Invariants: ids are dense from 0; every CPU of a core shares its LLC, die,
//   socket and node.
// Thread-safety: immutable after Create; safe to share.
// Cost: lookups are O(1) array reads.
#ifndef BLKLAB_ENGINE_HOST_CPU_TOPOLOGY_H_
#define BLKLAB_ENGINE_HOST_CPU_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/host/cost_table.h"
#include "engine/host/host_spec.h"

namespace blklab::host {

struct CpuInfo {
  int cpu = 0;
  int core = 0;       // physical core, global id
  int thread = 0;     // SMT thread index within the core
  int llc = 0;        // LLC group (CCX), global id
  int die = 0;        // die (CCD), global id
  int socket = 0;
  int numa_node = 0;  // global node id
};

class CpuTopology {
 public:
  // InvalidArgument naming the field (under `path`, e.g. "cpus") when the
  // counts do not divide evenly or a field is out of range.
  static absl::StatusOr<CpuTopology> Create(const CpuSpec& spec, const std::string& path = "cpus");

  int num_cpus() const { return static_cast<int>(cpus_.size()); }
  int num_cores() const { return num_cores_; }
  int num_llcs() const { return num_llcs_; }
  int num_dies() const { return num_dies_; }
  int num_sockets() const { return num_sockets_; }
  int num_numa_nodes() const { return num_nodes_; }

  // REQUIRES: 0 <= cpu < num_cpus().
  const CpuInfo& cpu(int cpu) const;
  // The other logical CPUs of `cpu`'s core, ascending.
  std::vector<int> SmtSiblings(int cpu) const;
  // All logical CPUs of an LLC group, ascending. REQUIRES: 0 <= llc < num_llcs().
  std::vector<int> CpusOfLlc(int llc) const;

  // Cost in ns of moving a cacheline last written by `from` to `to`.
  // REQUIRES: both in range.
  int64_t TransferCost(int from, int to, const CostTable& costs) const;

 private:
  CpuTopology() = default;
  std::vector<CpuInfo> cpus_;
  int num_cores_ = 0;
  int num_llcs_ = 0;
  int num_dies_ = 0;
  int num_sockets_ = 0;
  int num_nodes_ = 0;
};

}  // namespace blklab::host

#endif  // BLKLAB_ENGINE_HOST_CPU_TOPOLOGY_H_
