// engine/sim/task.h
//
// Task is the coroutine type in which simulated kernel and user-space paths
// are written, so that a path reads like the kernel function it models and
// can still suspend where the real code would wait: spinning on a contended
// lock, sleeping for a tag, waiting for completions, or yielding so that other
// CPUs catch up in virtual time (see cpu.h).
//
// A Task is lazy: it starts when awaited (`co_await Child(...)`) or when its
// owner runs it with RunChain (a thread's root task). Awaiting a child and
// completing hand control over by symmetric transfer through a trampoline:
// the suspending coroutine names its successor and returns to RunChain, which
// resumes it. Neither deep call chains nor a job's millions of
// await/complete round trips grow the host stack, whatever the compiler does
// with tail calls (returning a handle from await_suspend relies on a tail
// call that GCC emits only when optimizing and AddressSanitizer can defeat).
//
// Invariants: a Task is awaited at most once; a root Task is resumed, through
//  RunChain, by its owner only while suspended; every resume of a Task goes
//  through RunChain.
// Thread-safety: frames come from a thread-local pool; a Task must be created,
//  resumed and destroyed on one thread (each simulation runs on one thread).
// Cost: frame allocation is a pop from a thread-local free list of 64-byte
//  size classes (no malloc in steady state); await + completion is a few ns
//  (two trips through the trampoline's loop).
#ifndef BLKLAB_ENGINE_SIM_TASK_H_
#define BLKLAB_ENGINE_SIM_TASK_H_

#include <coroutine>
#include <cstddef>
#include <cstdlib>
#include <utility>

namespace blklab::sim {

// Thread-local pool of coroutine frames (and, through PoolAllocator, of
// container nodes) in 64-byte size classes.
class FramePool {
 public:
  static void* Allocate(size_t size);
  static void Free(void* p, size_t size);
};

namespace internal {
// The coroutine RunChain resumes next; set by a suspending Task.
inline thread_local std::coroutine_handle<> next_in_chain;
}  // namespace internal

// Resumes `h`, then every coroutine control is handed to, until one suspends
// without naming a successor (it waits on a lock, a timer, a CPU). Re-entrant:
// a nested chain leaves the outer one's successor as it found it.
inline void RunChain(std::coroutine_handle<> h) {
  std::coroutine_handle<> outer = std::exchange(internal::next_in_chain, {});
  while (h) {
    h.resume();
    h = std::exchange(internal::next_in_chain, {});
  }
  internal::next_in_chain = outer;
}

class Task {
 public:
  struct promise_type {
    std::coroutine_handle<> continuation;

    Task get_return_object() {
      return Task(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }

    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      void await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        internal::next_in_chain = h.promise().continuation;
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::abort(); }

    static void* operator new(size_t size) { return FramePool::Allocate(size); }
    static void operator delete(void* p, size_t size) { FramePool::Free(p, size); }
  };

  Task() = default;
  explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { Reset(); }

  // Awaiting a Task runs it; the awaiter continues when it completes.
  bool await_ready() const noexcept { return !handle_ || handle_.done(); }
  void await_suspend(std::coroutine_handle<> awaiting) noexcept {
    handle_.promise().continuation = awaiting;
    internal::next_in_chain = handle_;
  }
  void await_resume() const noexcept {}

  // For root tasks owned by a thread or an interrupt context.
  std::coroutine_handle<promise_type> handle() const { return handle_; }
  bool done() const { return !handle_ || handle_.done(); }

 private:
  void Reset() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  std::coroutine_handle<promise_type> handle_;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_TASK_H_
