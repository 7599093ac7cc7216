// engine/util/status_macros.h
//
// BLKLAB_RETURN_IF_ERROR(expr): returns the absl::Status of `expr` if it is
// not OK. BLKLAB_ASSIGN_OR_RETURN(lhs, expr): evaluates an absl::StatusOr,
// returns its status on error, else assigns the value to `lhs`.
// (Abseil 20220623 has neither macro.)
#ifndef BLKLAB_ENGINE_UTIL_STATUS_MACROS_H_
#define BLKLAB_ENGINE_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define BLKLAB_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::absl::Status blklab_status_ = (expr);           \
    if (!blklab_status_.ok()) return blklab_status_;  \
  } while (0)

#define BLKLAB_STATUS_CONCAT_INNER_(a, b) a##b
#define BLKLAB_STATUS_CONCAT_(a, b) BLKLAB_STATUS_CONCAT_INNER_(a, b)

#define BLKLAB_ASSIGN_OR_RETURN(lhs, expr) \
  BLKLAB_ASSIGN_OR_RETURN_IMPL_(BLKLAB_STATUS_CONCAT_(blklab_statusor_, __LINE__), lhs, expr)

#define BLKLAB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // BLKLAB_ENGINE_UTIL_STATUS_MACROS_H_
