// engine/sim/pool_allocator.h
//
// PoolAllocator: a standard allocator whose blocks of up to 4 KiB (the nodes
// of std::map and std::set, std::deque's 512-byte chunks) come from
// FramePool's thread-local free lists, so that a container that gains and
// loses an entry per IO (the I/O schedulers' FIFOs and merge hashes, lock
// waiter queues, run queues, pending interrupts) allocates nothing in steady
// state: std::deque frees a chunk each time its front crosses one and takes
// a new one at its back. PooledMap, PooledSet and PooledDeque are the
// standard containers with it; they order and iterate exactly as the plain
// ones.
//
// Invariants: a node freed goes to the free list of the thread that frees it
//  (memory from malloc, valid on any thread); all PoolAllocators compare
//  equal, so containers swap and move their nodes freely.
// Thread-safety: as the container using it; the pool is per thread.
// Cost: an allocation or a free is a pop or a push on a thread-local list
//  of its 64-byte size class once that class has been used; larger blocks
//  go to operator new.
#ifndef BLKLAB_ENGINE_SIM_POOL_ALLOCATOR_H_
#define BLKLAB_ENGINE_SIM_POOL_ALLOCATOR_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "engine/sim/task.h"

namespace blklab::sim {

template <typename T>
class PoolAllocator {
 public:
  using value_type = T;

  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT: rebinding converts implicitly

  T* allocate(size_t n) { return static_cast<T*>(FramePool::Allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { FramePool::Free(p, n * sizeof(T)); }

  template <typename U>
  bool operator==(const PoolAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename K, typename V>
using PooledMap = std::map<K, V, std::less<K>, PoolAllocator<std::pair<const K, V>>>;
template <typename K>
using PooledSet = std::set<K, std::less<K>, PoolAllocator<K>>;
template <typename T>
using PooledDeque = std::deque<T, PoolAllocator<T>>;

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_POOL_ALLOCATOR_H_
