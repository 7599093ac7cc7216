// engine/util/check.h
//
// BLKLAB_CHECK(cond) aborts with file:line and the condition text when `cond`
// is false; it is for invariants whose violation means the simulation state is
// corrupt (a lost request, a tag freed twice). BLKLAB_DCHECK is the same in
// debug and sanitizer builds and compiles to nothing under NDEBUG.
// Recoverable errors use absl::Status instead.
//
// Thread-safety: stateless. Cost: one branch.
#ifndef BLKLAB_ENGINE_UTIL_CHECK_H_
#define BLKLAB_ENGINE_UTIL_CHECK_H_

#include <cstdio>
#include <cstdlib>

namespace blklab::internal {
[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "%s:%d: BLKLAB_CHECK failed: %s\n", file, line, cond);
  std::abort();
}
}  // namespace blklab::internal

#define BLKLAB_CHECK(cond)                                         \
  do {                                                             \
    if (__builtin_expect(!(cond), 0))                              \
      ::blklab::internal::CheckFailed(__FILE__, __LINE__, #cond);  \
  } while (0)

#ifdef NDEBUG
#define BLKLAB_DCHECK(cond) \
  do {                      \
  } while (0)
#else
#define BLKLAB_DCHECK(cond) BLKLAB_CHECK(cond)
#endif

#endif  // BLKLAB_ENGINE_UTIL_CHECK_H_
