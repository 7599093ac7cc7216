// engine/sim/simulator.h
//
// Simulator is the discrete-event core: a virtual clock in integer
// nanoseconds and a pending-event queue with a total order on (time,
// sequence number). It knows nothing about block devices; components receive
// events through EventHandler::OnEvent.
//
// Invariants:
//  * Events are delivered in strictly increasing (at, seq) order; seq is the
//    scheduling order, so ties at one time run first-scheduled-first.
//  * Now() never decreases. Scheduling in the past is a bug (checked).
//  * Cancellation is lazy: owners keep a generation number in `arg` and
//    ignore stale events (the ns-3 scheme), so the queue never searches.
// Thread-safety: thread-compatible; one Simulator per simulation run, driven
//  by one thread. Parallelism is across simulations.
// Cost: Schedule and the pop in Run are O(log n) on a 4-ary heap of 32-byte
//  events stored in a std::vector (no per-event allocation once the vector
//  has grown; a node's four children share two cache lines).
#ifndef BLKLAB_ENGINE_SIM_SIMULATOR_H_
#define BLKLAB_ENGINE_SIM_SIMULATOR_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/sim/time.h"
#include "engine/util/check.h"

namespace blklab::sim {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void OnEvent(uint32_t kind, uint64_t arg) = 0;
};

// 32 bytes: the sequence number and the kind share a word, the sequence in
// the high 56 bits, so comparing the word compares sequence numbers.
struct Event {
  SimTime at;
  uint64_t seq_kind;
  EventHandler* target;
  uint64_t arg;
  uint32_t kind() const { return static_cast<uint32_t>(seq_kind & 0xff); }
};
static_assert(sizeof(Event) == 32);

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  SimTime Now() const { return now_; }

  // Time of the earliest pending event, or kSimTimeNever.
  SimTime NextEventTime() const { return heap_.empty() ? kSimTimeNever : heap_[0].at; }

  // REQUIRES: at >= Now(); kind < 256.
  void Schedule(SimTime at, EventHandler* target, uint32_t kind, uint64_t arg = 0) {
    BLKLAB_DCHECK(at >= now_);
    BLKLAB_DCHECK(kind < 256);
    heap_.push_back(Event{at, (next_seq_++ << 8) | kind, target, arg});
    SiftUp(heap_.size() - 1);
  }

  // Runs events until the queue is empty, Stop() is called, or the next event
  // is later than `until`. Returns the number of events delivered.
  uint64_t Run(SimTime until = kSimTimeNever);

  // Makes Run return after the current event.
  void Stop() { stop_ = true; }
  bool stopped() const { return stop_; }

  uint64_t events_delivered() const { return events_delivered_; }
  size_t pending_events() const { return heap_.size(); }
  // True when every pending event targets one of `targets` (a linear scan:
  // for rare checks such as the stall test, not the hot path).
  bool OnlyPendingFor(std::span<const EventHandler* const> targets) const {
    for (const Event& e : heap_) {
      if (std::find(targets.begin(), targets.end(), e.target) == targets.end()) return false;
    }
    return true;
  }

 private:
  static bool Before(const Event& a, const Event& b) {
    return a.at < b.at || (a.at == b.at && a.seq_kind < b.seq_kind);
  }
  static constexpr size_t kArity = 4;
  void SiftUp(size_t i);
  void SiftDown(size_t i);
  Event PopTop();

  SimTime now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t events_delivered_ = 0;
  bool stop_ = false;
  std::vector<Event> heap_;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_SIMULATOR_H_
