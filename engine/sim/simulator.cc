#include "engine/sim/simulator.h"

#include <algorithm>
#include <utility>

namespace blklab::sim {

void Simulator::SiftUp(size_t i) {
  Event e = heap_[i];
  while (i > 0) {
    size_t parent = (i - 1) / kArity;
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
    const size_t first = kArity * i + 1;
    if (first >= n) break;
    size_t child = first;
    const size_t last = std::min(first + kArity, n);
    for (size_t c = first + 1; c < last; ++c) {
      if (Before(heap_[c], heap_[child])) child = c;
    }
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
    e.target->OnEvent(e.kind(), e.arg);
  }
  events_delivered_ += delivered;
  return delivered;
}

}  // namespace blklab::sim
