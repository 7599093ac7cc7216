// engine/sim/simulator.h
//
// Simulator is the discrete-event core: a virtual clock in integer
// nanoseconds and a pending-event queue with a total order on (time,
// sequence number). It knows nothing about block devices; components receive
// events through EventHandler::OnEvent.
//
// The queue is two heaps under one order: the near heap holds the CPUs'
// own events (a context resumed at its local time, a wake-up, an interrupt
// arriving), a few per CPU and most of the traffic; the bulk heap
// (ScheduleBulk) holds device completions, one per IO in flight, and
// timers (delayed work, hrtimers, the scheduler tick), whose every re-arm
// leaves the earlier event stale in the heap until its time: thousands on
// a big host, each pushed and popped once, a few per cent of the pops. Both draw sequence numbers from
// one counter and Run takes the earlier of the two tops, so the order is
// the same as one heap's; the CPUs' frequent pops sift through a heap of
// tens of events instead of thousands.
//
// Invariants:
//  * Events are delivered in strictly increasing (at, seq) order over both
//    heaps; seq is the scheduling order, so ties at one time run
//    first-scheduled-first whichever heap holds them.
//  * Now() never decreases. Scheduling in the past is a bug (checked).
//  * Cancellation is lazy: owners keep a generation number in `arg` and
//    ignore stale events (the ns-3 scheme), so the queue never searches.
// Thread-safety: thread-compatible; one Simulator per simulation run, driven
//  by one thread. Parallelism is across simulations.
// Cost: Schedule and the pop in Run are O(log n) on a 4-ary heap of 32-byte
//  events stored in a std::vector (no per-event allocation once the vector
//  has grown; a node's four children share two cache lines); n is the size
//  of the heap the event goes to. NextEventTime is two loads and a compare.
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

// A 4-ary min-heap of events on (at, seq). The event being delivered
// leaves a hole at the root (TakeTop) that the next Push fills and sifts
// down from there: a handler that schedules one event, as a CPU yielding
// at its local time does, costs one short sift instead of a full-depth
// sift-down for the pop and a sift-up for the push. CloseHole removes a
// hole nobody filled.
class EventHeap {
 public:
  bool empty() const { return size() == 0; }
  size_t size() const { return heap_.size() - (hole_ ? 1 : 0); }
  // REQUIRES: !empty(), no hole.
  const Event& top() const { return heap_[0]; }
  // The earliest pending time (not the hole's), or kSimTimeNever.
  SimTime top_at() const { return top_at_; }
  void Push(const Event& e) {
    if (hole_) {
      heap_[0] = e;
      hole_ = false;
      SiftDown(0);
    } else {
      heap_.push_back(e);
      SiftUp(heap_.size() - 1);
    }
    top_at_ = heap_[0].at;
  }
  // REQUIRES: !empty(), no hole.
  Event TakeTop();
  void CloseHole();
  std::span<const Event> events() const { return std::span<const Event>(heap_).subspan(hole_ ? 1 : 0); }

  // (at, seq) as one unsigned 128-bit number in the same order (the sign
  // bit of `at` flipped, so a negative time sorts as a signed one would);
  // a compare is two instructions the compiler can feed into conditional
  // moves.
  using Key = unsigned __int128;
  static Key KeyOf(const Event& e) {
    const uint64_t at = static_cast<uint64_t>(e.at) ^ (uint64_t{1} << 63);
    return (static_cast<Key>(at) << 64) | e.seq_kind;
  }
  static bool Before(const Event& a, const Event& b) { return KeyOf(a) < KeyOf(b); }

 private:
  static constexpr size_t kArity = 4;
  void SiftUp(size_t i);
  void SiftDown(size_t i);

  std::vector<Event> heap_;
  bool hole_ = false;
  SimTime top_at_ = kSimTimeNever;
};

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  SimTime Now() const { return now_; }

  // Time of the earliest pending event, or kSimTimeNever.
  SimTime NextEventTime() const {
    const SimTime a = near_.top_at();
    const SimTime b = bulk_.top_at();
    return a < b ? a : b;
  }

  // REQUIRES: at >= Now(); kind < 256.
  void Schedule(SimTime at, EventHandler* target, uint32_t kind, uint64_t arg = 0) {
    near_.Push(MakeEvent(at, target, kind, arg));
  }
  // The same order as Schedule, kept in the bulk heap: for events of which
  // many are pending at once, seldom delivered compared with the CPUs' own
  // (a device's completion of one command, a delayed work's timer).
  void ScheduleBulk(SimTime at, EventHandler* target, uint32_t kind, uint64_t arg = 0) {
    bulk_.Push(MakeEvent(at, target, kind, arg));
  }

  // Runs events until the queue is empty, Stop() is called, or the next event
  // is later than `until`. Returns the number of events delivered.
  // REQUIRES: not called from an event handler (not re-entrant).
  uint64_t Run(SimTime until = kSimTimeNever);

  // Makes Run return after the current event.
  void Stop() { stop_ = true; }
  bool stopped() const { return stop_; }

  uint64_t events_delivered() const { return events_delivered_; }
  size_t pending_events() const { return near_.size() + bulk_.size(); }
  // True when every pending event targets one of `targets` (a linear scan:
  // for rare checks such as the stall test, not the hot path).
  bool OnlyPendingFor(std::span<const EventHandler* const> targets) const {
    for (const EventHeap* h : {&near_, &bulk_}) {
      for (const Event& e : h->events()) {
        if (std::find(targets.begin(), targets.end(), e.target) == targets.end()) return false;
      }
    }
    return true;
  }

 private:
  Event MakeEvent(SimTime at, EventHandler* target, uint32_t kind, uint64_t arg) {
    BLKLAB_DCHECK(at >= now_);
    BLKLAB_DCHECK(kind < 256);
    return Event{at, (next_seq_++ << 8) | kind, target, arg};
  }

  SimTime now_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t events_delivered_ = 0;
  bool stop_ = false;
  bool in_run_ = false;
  EventHeap near_;
  EventHeap bulk_;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_SIMULATOR_H_
