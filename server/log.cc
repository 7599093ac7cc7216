#include "server/log.h"

#include <cstdio>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace blklab::server {
namespace {

ABSL_CONST_INIT absl::Mutex log_mu(absl::kConstInit);

void AppendValue(std::string& out, absl::string_view v) {
  const bool quote = v.empty() || v.find_first_of(" \"=\\\n\t") != absl::string_view::npos;
  if (!quote) {
    out.append(v.data(), v.size());
    return;
  }
  out += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

void Log(absl::string_view level, absl::string_view event, std::initializer_list<LogField> fields) {
  std::string line = absl::StrCat(
      "ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()), " level=", level,
      " event=", event);
  for (const LogField& f : fields) {
    absl::StrAppend(&line, " ", f.first, "=");
    AppendValue(line, f.second);
  }
  line += '\n';
  absl::MutexLock lock(&log_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace blklab::server
