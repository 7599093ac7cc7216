// engine/sim/task.h
//
// Task is the coroutine type in which simulated kernel and user-space paths
// are written, so that a path reads like the kernel function it models and
// can still suspend where the real code would wait: spinning on a contended
// lock, sleeping for a tag, waiting for completions, or yielding so that other
// CPUs catch up in virtual time (see cpu.h).
//
// A Task is lazy: it starts when awaited (`co_await Child(...)`) or when its
// owner resumes the handle (a thread's root task). Completion resumes the
// awaiting coroutine by symmetric transfer, so deep call chains do not grow
// the host stack.
//
// Invariants: a Task is awaited at most once; a root Task is resumed by its
//  owner only while suspended.
// Thread-safety: frames come from a thread-local pool; a Task must be created,
//  resumed and destroyed on one thread (each simulation runs on one thread).
// Cost: frame allocation is a pop from a thread-local free list of 64-byte
//  size classes (no malloc in steady state); await + completion is a few ns.
#ifndef BLKLAB_ENGINE_SIM_TASK_H_
#define BLKLAB_ENGINE_SIM_TASK_H_

#include <coroutine>
#include <cstddef>
#include <cstdlib>
#include <utility>

namespace blklab::sim {

// Thread-local pool of coroutine frames in 64-byte size classes.
class FramePool {
 public:
  static void* Allocate(size_t size);
  static void Free(void* p, size_t size);
};

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
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        std::coroutine_handle<> next = h.promise().continuation;
        return next ? next : std::noop_coroutine();
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
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    handle_.promise().continuation = awaiting;
    return handle_;
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
