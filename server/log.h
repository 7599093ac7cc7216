// server/log.h
//
// Structured log lines for blklabd on stderr, one event per line:
//   ts=2026-01-02T03:04:05.678Z level=info event=job_done job=jobs/x state=SUCCEEDED
// Values with spaces, quotes or '=' are double-quoted with \" and \\ escaped.
// Abseil 20220623 has no absl/log, hence this small helper.
//
// Thread-safety: thread-safe; each line is written with one fwrite under a
//   mutex, so lines from different threads never interleave.
// Cost: one formatted string per line; not for per-IO paths.
#ifndef BLKLAB_SERVER_LOG_H_
#define BLKLAB_SERVER_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace blklab::server {

using LogField = std::pair<absl::string_view, std::string>;

// level: "info", "warn" or "error".
void Log(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields = {});

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_LOG_H_
