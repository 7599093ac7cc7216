#include "engine/sim/machine.h"

#include <span>
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

void FunctionRegistry::SetParts(FnId whole, std::vector<Part> parts) {
  BLKLAB_CHECK(!parts.empty() && parts[0].fn == whole && this->parts(whole).empty());
  int64_t total = 0;
  for (const Part& p : parts) {
    BLKLAB_CHECK(p.weight > 0 && p.fn < names_.size());
    total += p.weight;
  }
  if (parts_.size() <= whole) {
    parts_.resize(whole + 1);
    parts_weight_.resize(whole + 1, 0);
  }
  parts_[whole] = std::move(parts);
  parts_weight_[whole] = total;
}

namespace {

// How perf top spreads the cycles of a context switch and of a wake-up:
// the scheduler's self times in a perf top of will-it-scale's
// context_switch1 (pipe ping-pong, 8 CPUs of an i7-4790, tip sched/core of
// May 2023; Mike Galbraith, LKML, 2023-05-16, "Re: [RFC PATCH] sched/fair:
// Introduce SIS_PAIR"), in hundredths of a percent. Each side's own
// functions count whole; the fair class's load tracking, which the dequeue
// of the sleeper and the enqueue of the wakee share, counts half on each.
// Not distinguished: switches between kernel threads (no mm switch, no FPU
// restore) and real-time threads' switches and wake-ups (the rt class's
// functions; cpupri_set has its own row) are split alike.
struct Share {
  const char* fn;
  int64_t weight;  // 2 x hundredths of a percent: shared rows count once
};
constexpr Share kFairLoadTracking[] = {
    {"__update_load_avg_se", 423}, {"__update_load_avg_cfs_rq", 376}, {"update_curr", 291},
    {"__calc_delta", 254},         {"reweight_entity", 238},          {"update_load_avg", 177},
    {"native_sched_clock", 173},   {"update_min_vruntime", 147},      {"update_cfs_group", 142},
};
// __schedule's side: the first row is the cost table's row itself.
constexpr Share kContextSwitch[] = {
    {"__schedule", 2 * 370},        {"switch_mm_irqs_off", 2 * 572},
    {"__switch_to", 2 * 255},       {"dequeue_task_fair", 2 * 244},
    {"restore_fpregs_from_fpstate", 2 * 196},
};
// try_to_wake_up's side.
constexpr Share kWakeUp[] = {
    {"try_to_wake_up", 2 * 166},
    {"enqueue_task_fair", 2 * 322},
    {"select_task_rq_fair", 2 * 267},
    {"select_idle_smt", 2 * 193},
};

void SplitSchedulerRow(FunctionRegistry& functions, std::span<const Share> own) {
  std::vector<FunctionRegistry::Part> parts;
  for (const Share& s : own) parts.push_back({functions.Intern(s.fn), s.weight});
  for (const Share& s : kFairLoadTracking) parts.push_back({functions.Intern(s.fn), s.weight});
  const FnId whole = parts[0].fn;
  functions.SetParts(whole, std::move(parts));
}

}  // namespace

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
  SplitSchedulerRow(functions_, kContextSwitch);
  SplitSchedulerRow(functions_, kWakeUp);
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
