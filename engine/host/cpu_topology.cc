#include "engine/host/cpu_topology.h"

#include "absl/strings/str_cat.h"
#include "engine/util/check.h"

namespace blklab::host {

absl::StatusOr<CpuTopology> CpuTopology::Create(const CpuSpec& spec, const std::string& path) {
  auto bad = [&path](absl::string_view field, const std::string& msg) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".", field, ": ", msg));
  };
  if (spec.count < 1) return bad("count", absl::StrCat("must be >= 1, got ", spec.count));
  if (spec.threads_per_core < 1) return bad("threads_per_core", "must be >= 1");
  if (spec.sockets < 1) return bad("sockets", "must be >= 1");
  if (spec.ccx_per_die < 1) return bad("ccx_per_die", "must be >= 1");
  if (spec.numa_nodes_per_socket < 1) return bad("numa_nodes_per_socket", "must be >= 1");
  if (spec.cores_per_ccx < 0) return bad("cores_per_ccx", "must be >= 0");
  const int64_t per_socket_threads = int64_t{spec.threads_per_core} * spec.sockets;
  if (spec.count % per_socket_threads != 0) {
    return bad("count", absl::StrCat("must be a multiple of threads_per_core x sockets (", spec.threads_per_core,
                                     " x ", spec.sockets, "), got ", spec.count));
  }
  const int cores = spec.count / spec.threads_per_core;
  const int cores_per_socket = cores / spec.sockets;
  const int ccx_size = spec.cores_per_ccx == 0 ? cores_per_socket : spec.cores_per_ccx;
  if (cores_per_socket % ccx_size != 0) {
    return bad("cores_per_ccx", absl::StrCat("must divide the ", cores_per_socket, " cores of a socket, got ",
                                             spec.cores_per_ccx));
  }
  const int ccx_per_socket = cores_per_socket / ccx_size;
  if (ccx_per_socket % spec.ccx_per_die != 0) {
    return bad("ccx_per_die", absl::StrCat("must divide the ", ccx_per_socket, " LLC groups of a socket, got ",
                                           spec.ccx_per_die));
  }
  if (cores_per_socket % spec.numa_nodes_per_socket != 0) {
    return bad("numa_nodes_per_socket", absl::StrCat("must divide the ", cores_per_socket,
                                                     " cores of a socket, got ", spec.numa_nodes_per_socket));
  }
  CpuTopology t;
  t.num_cores_ = cores;
  t.num_sockets_ = spec.sockets;
  t.num_llcs_ = cores / ccx_size;
  t.num_dies_ = t.num_llcs_ / spec.ccx_per_die;
  t.num_nodes_ = spec.sockets * spec.numa_nodes_per_socket;
  const int cores_per_node = cores_per_socket / spec.numa_nodes_per_socket;
  t.cpus_.resize(static_cast<size_t>(spec.count));
  for (int c = 0; c < spec.count; ++c) {
    CpuInfo& info = t.cpus_[static_cast<size_t>(c)];
    info.cpu = c;
    info.core = c % cores;
    info.thread = c / cores;
    info.socket = info.core / cores_per_socket;
    info.llc = info.core / ccx_size;
    info.die = info.llc / spec.ccx_per_die;
    info.numa_node = info.socket * spec.numa_nodes_per_socket + (info.core % cores_per_socket) / cores_per_node;
  }
  return t;
}

const CpuInfo& CpuTopology::cpu(int cpu) const {
  BLKLAB_CHECK(cpu >= 0 && cpu < num_cpus());
  return cpus_[static_cast<size_t>(cpu)];
}

std::vector<int> CpuTopology::SmtSiblings(int c) const {
  const CpuInfo& me = cpu(c);
  std::vector<int> out;
  for (int other = me.core; other < num_cpus(); other += num_cores_) {
    if (other != c) out.push_back(other);
  }
  return out;
}

std::vector<int> CpuTopology::CpusOfLlc(int llc) const {
  BLKLAB_CHECK(llc >= 0 && llc < num_llcs_);
  std::vector<int> out;
  for (const CpuInfo& info : cpus_) {
    if (info.llc == llc) out.push_back(info.cpu);
  }
  return out;
}

int64_t CpuTopology::TransferCost(int from, int to, const CostTable& costs) const {
  const CpuInfo& a = cpu(from);
  const CpuInfo& b = cpu(to);
  if (a.core == b.core) return 0;
  if (a.llc == b.llc) return costs.line_transfer_llc;
  if (a.socket == b.socket) return costs.line_transfer_die;
  return costs.line_transfer_socket;
}

}  // namespace blklab::host
