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
    : placement_(std::move(placement)), costs_(costs), transfers_by_cpu_(placement_.size(), 0) {
  llc_weight_.assign(placement_.size(), 0);
  for (const CpuPlacement& a : placement_) {
    for (size_t j = 0; j < placement_.size(); ++j) llc_weight_[j] += a.llc == placement_[j].llc ? 1 : 0;
  }
  cpus_.reserve(placement_.size());
  for (int i = 0; i < static_cast<int>(placement_.size()); ++i) {
    cpus_.push_back(std::make_unique<Cpu>(*this, i));
  }
  // SMT: the first other logical CPU of the same core shares its execution.
  for (int i = 0; i < static_cast<int>(placement_.size()); ++i) {
    for (int j = 0; j < static_cast<int>(placement_.size()); ++j) {
      if (j != i && placement_[j].core == placement_[i].core) {
        cpus_[i]->set_smt_sibling(cpus_[j].get());
        break;
      }
    }
  }
}

Machine::~Machine() = default;

void Machine::EnableStacks() {
  if (stacks_ != nullptr) return;
  stacks_ = std::make_unique<StackProfile>();
  for (auto& c : cpus_) c->EnableStacks(stacks_.get());
}

}  // namespace blklab::sim
