#include "engine/sim/machine.h"

#include <utility>

#include "engine/sim/cpu.h"

namespace blklab::sim {

FnId FunctionRegistry::Intern(const std::string& name, bool user) {
  auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  const FnId id = static_cast<FnId>(names_.size());
  names_.push_back(name);
  user_.push_back(user || name.rfind("fio:", 0) == 0);
  index_.emplace(name, id);
  return id;
}

Machine::Machine(std::vector<CpuPlacement> placement, MachineCosts costs)
    : placement_(std::move(placement)), costs_(costs) {
  cpus_.reserve(placement_.size());
  for (int i = 0; i < static_cast<int>(placement_.size()); ++i) {
    cpus_.push_back(std::make_unique<Cpu>(*this, i));
  }
}

Machine::~Machine() = default;

}  // namespace blklab::sim
