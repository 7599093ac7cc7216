#include "engine/sim/simulator.h"

#include <algorithm>
#include <utility>

namespace blklab::sim {

void EventHeap::SiftUp(size_t i) {
  const Event e = heap_[i];
  const Key k = KeyOf(e);
  while (i > 0) {
    const size_t parent = (i - 1) / kArity;
    if (k >= KeyOf(heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void EventHeap::SiftDown(size_t i) {
  const size_t n = heap_.size();
  const Event e = heap_[i];
  const Key k = KeyOf(e);
  for (;;) {
    const size_t first = kArity * i + 1;
    if (first >= n) break;
    size_t child = first;
    Key best = KeyOf(heap_[first]);
    if (first + kArity <= n) {
      // All four children: branch-free selection of the least.
      for (size_t c = first + 1; c < first + kArity; ++c) {
        const Key kc = KeyOf(heap_[c]);
        const bool less = kc < best;
        child = less ? c : child;
        best = less ? kc : best;
      }
    } else {
      for (size_t c = first + 1; c < n; ++c) {
        const Key kc = KeyOf(heap_[c]);
        if (kc < best) {
          child = c;
          best = kc;
        }
      }
    }
    if (best >= k) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = e;
}

Event EventHeap::TakeTop() {
  const Event top = heap_[0];
  hole_ = true;
  // The earliest of what remains is one of the root's children.
  SimTime next = kSimTimeNever;
  const size_t last = std::min<size_t>(kArity + 1, heap_.size());
  for (size_t c = 1; c < last; ++c) next = std::min(next, heap_[c].at);
  top_at_ = next;
  return top;
}

void EventHeap::CloseHole() {
  if (!hole_) return;
  hole_ = false;
  heap_[0] = heap_.back();
  heap_.pop_back();
  if (heap_.empty()) {
    top_at_ = kSimTimeNever;
    return;
  }
  SiftDown(0);
  top_at_ = heap_[0].at;
}

uint64_t Simulator::Run(SimTime until) {
  BLKLAB_DCHECK(!in_run_);  // the delivered event's slot is a hole until its handler returns
  in_run_ = true;
  stop_ = false;
  uint64_t delivered = 0;
  while (!stop_) {
    // The earlier of the two tops in (at, seq) order.
    EventHeap* h = &near_;
    if (near_.empty()) {
      if (bulk_.empty()) break;
      h = &bulk_;
    } else if (!bulk_.empty() && EventHeap::Before(bulk_.top(), near_.top())) {
      h = &bulk_;
    }
    if (h->top().at > until) break;
    const Event e = h->TakeTop();
    now_ = e.at;
    ++delivered;
    e.target->OnEvent(e.kind(), e.arg);
    h->CloseHole();
  }
  events_delivered_ += delivered;
  in_run_ = false;
  return delivered;
}

}  // namespace blklab::sim
