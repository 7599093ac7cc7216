// engine/sim/cacheline.h
//
// CacheLine is a cheap MESI model of one hot shared cache line
// (docs/kernel-model.md §1.3): it remembers which CPU wrote it last and which CPUs
// hold a current copy. A read by a CPU holding a copy is a hit; otherwise the
// line comes from the closest CPU holding it (price by topology,
// Machine::TransferCost).
// A write or atomic by the owner with no other copies is local; by another
// CPU it pays the transfer from the last writer; by the owner while others
// hold copies it pays the farthest invalidation. The other copies are
// invalidated either way.
//
// Invariants: after Write(c), c is the only holder.
// Thread-safety: thread-compatible. Callers Sync() before touching a line so
//  accesses happen in global time order.
// Cost: O(1) amortised; one bit per CPU of memory, inline up to 64 CPUs.
#ifndef BLKLAB_ENGINE_SIM_CACHELINE_H_
#define BLKLAB_ENGINE_SIM_CACHELINE_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/sim/machine.h"

namespace blklab::sim {

class CacheLine {
 public:
  CacheLine() = default;

  // Returns the ns a read by `cpu` costs: `hit_ns` if it holds a copy, else
  // the transfer from the last writer (at least hit_ns).
  int64_t Read(const Machine& m, int cpu, int64_t hit_ns) {
    if (owner_ < 0) {
      owner_ = cpu;
      SetSharer(m, cpu);
      return hit_ns;
    }
    if (IsSharer(cpu)) return hit_ns;
    const int64_t t = NearestCopy(m, cpu);
    SetSharer(m, cpu);
    ++transfers_;
    m.NoteTransfer(cpu);
    return t > hit_ns ? t : hit_ns;
  }

  // Returns the ns a write / atomic RMW by `cpu` costs: `local_ns` when `cpu`
  // owns the only copy, else the transfer from the last writer plus local_ns.
  int64_t Write(const Machine& m, int cpu, int64_t local_ns) {
    if (owner_ == cpu && nr_sharers_ == 1) return local_ns;  // exclusive already
    int64_t cost = local_ns;
    if (owner_ >= 0 && owner_ != cpu) {
      cost += m.TransferCost(owner_, cpu);  // read-for-ownership from the last writer
      ++transfers_;
      m.NoteTransfer(cpu);
    } else if (owner_ == cpu) {
      // Shared copies elsewhere: the upgrade waits for the farthest invalidation.
      cost += FarthestSharer(m, cpu);
    }
    ClearSharers();
    owner_ = cpu;
    SetSharer(m, cpu);
    return cost;
  }

  int owner() const { return owner_; }
  uint64_t transfers() const { return transfers_; }

 private:
  // Calls fn(cpu) for every CPU holding a copy.
  template <typename Fn>
  void ForEachSharer(Fn fn) const {
    for (size_t w = 0; w <= more_sharers_.size(); ++w) {
      for (uint64_t bits = SharerWord(w); bits != 0; bits &= bits - 1) {
        fn(static_cast<int>(w * 64 + __builtin_ctzll(bits)));
      }
    }
  }
  int64_t FarthestSharer(const Machine& m, int cpu) const {
    int64_t worst = 0;
    ForEachSharer([&](int other) {
      if (other != cpu) worst = std::max(worst, m.TransferCost(cpu, other));
    });
    return worst;
  }
  // A read miss is served by the closest CPU holding a copy (a shared line
  // read by a CPU of the same CCX comes from there, not from the writer).
  int64_t NearestCopy(const Machine& m, int cpu) const {
    int64_t best = m.TransferCost(owner_, cpu);
    ForEachSharer([&](int other) { best = std::min(best, m.TransferCost(other, cpu)); });
    return best;
  }
  uint64_t SharerWord(size_t w) const { return w == 0 ? sharers_ : more_sharers_[w - 1]; }
  bool IsSharer(int cpu) const {
    const size_t w = static_cast<size_t>(cpu) >> 6;
    return w <= more_sharers_.size() && (SharerWord(w) >> (cpu & 63)) & 1;
  }
  void SetSharer(const Machine& m, int cpu) {
    const size_t w = static_cast<size_t>(cpu) >> 6;
    if (w > more_sharers_.size()) more_sharers_.resize((m.num_cpus() - 1) / 64, 0);
    uint64_t& word = w == 0 ? sharers_ : more_sharers_[w - 1];
    if (!((word >> (cpu & 63)) & 1)) {
      word |= uint64_t{1} << (cpu & 63);
      ++nr_sharers_;
    }
  }
  void ClearSharers() {
    if (nr_sharers_ == 0) return;
    sharers_ = 0;
    for (uint64_t& w : more_sharers_) w = 0;
    nr_sharers_ = 0;
  }

  int owner_ = -1;
  int nr_sharers_ = 0;
  uint64_t transfers_ = 0;
  // Holders of a copy, one bit per CPU: CPUs 0-63 inline (no pointer to
  // chase on the hosts most runs use), the rest in more_sharers_.
  uint64_t sharers_ = 0;
  std::vector<uint64_t> more_sharers_;
};

// AccessCost prices a run of accesses by one CPU the way an out-of-order
// x86 core (TSO) exposes their latencies: a load that depends on the
// previous one (a pointer chase) waits for it, hit (`hit_ns`, the load-to-use
// latency on the chain) or miss; independent loads overlap, so a batch of
// them costs its slowest access, at least one hit; plain stores retire into
// the store buffer, a hit costs nothing on the critical path and misses
// overlap with everything after them, but a later atomic (lock-prefixed RMW)
// or the end of the run (a spin_unlock's release store becomes visible only
// after them) waits for the slowest. The instructions that issue the
// accesses are the section's Work(). Use one per critical section or per
// step; Take() returns the total.
//
// Thread-safety: thread-compatible. Cost: O(1) per access plus CacheLine's.
class AccessCost {
 public:
  AccessCost(const Machine& m, int cpu, int64_t hit_ns) : m_(m), cpu_(cpu), hit_(hit_ns) {}

  // Instructions: `ns` of work in program order.
  void Work(int64_t ns) { serial_ += ns; }
  // A load whose address depends on earlier loads (waits for them).
  void Load(CacheLine& line) {
    FlushLoads();
    serial_ += line.Read(m_, cpu_, hit_);
  }
  // A load independent of the other pending independent loads: the batch
  // costs its slowest member when the next dependent access or Take()
  // settles it.
  void LoadIndependent(CacheLine& line) {
    const int64_t c = line.Read(m_, cpu_, hit_);
    loads_ = std::max(loads_, c);
  }
  // A plain store (through the store buffer): only a miss costs, overlapped.
  void Store(CacheLine& line) {
    const int64_t c = line.Write(m_, cpu_, hit_);
    stores_ = std::max(stores_, c - hit_);
  }
  // A locked RMW: drains the store buffer, then owns the line.
  void Atomic(CacheLine& line, int64_t local_ns) {
    FlushLoads();
    serial_ += stores_ + line.Write(m_, cpu_, local_ns);
    stores_ = 0;
  }
  // The run's cost so far, with the pending misses settled; resets.
  int64_t Take() {
    const int64_t total = serial_ + loads_ + stores_;
    serial_ = loads_ = stores_ = 0;
    return total;
  }

 private:
  void FlushLoads() {
    serial_ += loads_;
    loads_ = 0;
  }
  const Machine& m_;
  int cpu_;
  int64_t hit_;
  int64_t serial_ = 0;
  int64_t loads_ = 0;   // slowest pending independent load (hit or miss)
  int64_t stores_ = 0;  // slowest pending store miss
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_CACHELINE_H_
