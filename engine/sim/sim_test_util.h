// engine/sim/sim_test_util.h
//
// Helpers the sim unit tests share: CPU placements, an event recorder, and
// threads that charge time in steps. Test-only.
#ifndef BLKLAB_ENGINE_SIM_SIM_TEST_UTIL_H_
#define BLKLAB_ENGINE_SIM_SIM_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "engine/sim/cpu.h"
#include "engine/sim/machine.h"
#include "engine/sim/simulator.h"

namespace blklab::sim::test {

inline std::vector<CpuPlacement> Cpus(int n) {
  std::vector<CpuPlacement> p(n);
  for (int i = 0; i < n; ++i) p[i] = CpuPlacement{i, 0, 0, 0, 0};
  return p;
}

struct Recorder : EventHandler {
  std::vector<uint64_t> seen;
  void OnEvent(uint32_t, uint64_t arg) override { seen.push_back(arg); }
};

// A thread that charges `steps` × `ns` to one function.
inline Task Worker(Cpu& cpu, FnId fn, int steps, int64_t ns) {
  for (int i = 0; i < steps; ++i) {
    co_await cpu.Sync();
    cpu.Charge(fn, ns);
  }
}

// The same with a voluntary pre-emption point before each step (a kworker
// between work items, cond_resched).
inline Task YieldingWorker(Cpu& cpu, FnId fn, int steps, int64_t ns) {
  for (int i = 0; i < steps; ++i) {
    co_await cpu.PreemptPoint();
    cpu.Charge(fn, ns);
  }
}

}  // namespace blklab::sim::test

#endif  // BLKLAB_ENGINE_SIM_SIM_TEST_UTIL_H_
