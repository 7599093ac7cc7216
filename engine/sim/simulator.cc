#include "engine/sim/simulator.h"

#include <utility>

namespace blklab::sim {

void Simulator::SiftUp(size_t i) {
  Event e = heap_[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!Before(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void Simulator::SiftDown(size_t i) {
  const size_t n = heap_.size();
  Event e = heap_[i];
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap_[child + 1], heap_[child])) ++child;
    if (!Before(heap_[child], e)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = e;
}

Event Simulator::PopTop() {
  Event top = heap_[0];
  heap_[0] = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) SiftDown(0);
  return top;
}

uint64_t Simulator::Run(SimTime until) {
  stop_ = false;
  uint64_t delivered = 0;
  while (!stop_ && !heap_.empty() && heap_[0].at <= until) {
    Event e = PopTop();
    now_ = e.at;
    ++delivered;
    e.target->OnEvent(e.kind, e.arg);
  }
  events_delivered_ += delivered;
  return delivered;
}

}  // namespace blklab::sim
