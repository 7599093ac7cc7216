#include "engine/sim/task.h"

#include <new>

namespace blklab::sim {
namespace {

constexpr size_t kClassBytes = 64;
constexpr size_t kNumClasses = 64;  // frames up to 4 KiB are pooled

struct FreeNode {
  FreeNode* next;
};

struct PoolState {
  FreeNode* heads[kNumClasses] = {};
  ~PoolState() {
    for (FreeNode*& head : heads) {
      while (head != nullptr) {
        FreeNode* next = head->next;
        ::operator delete(static_cast<void*>(head));
        head = next;
      }
    }
  }
};

thread_local PoolState pool;

}  // namespace

void* FramePool::Allocate(size_t size) {
  const size_t cls = (size + kClassBytes - 1) / kClassBytes;
  if (cls >= kNumClasses) return ::operator new(size);
  FreeNode*& head = pool.heads[cls];
  if (head != nullptr) {
    FreeNode* node = head;
    head = node->next;
    return node;
  }
  return ::operator new(cls * kClassBytes);
}

void FramePool::Free(void* p, size_t size) {
  const size_t cls = (size + kClassBytes - 1) / kClassBytes;
  if (cls >= kNumClasses) {
    ::operator delete(p);
    return;
  }
  FreeNode* node = static_cast<FreeNode*>(p);
  node->next = pool.heads[cls];
  pool.heads[cls] = node;
}

}  // namespace blklab::sim
