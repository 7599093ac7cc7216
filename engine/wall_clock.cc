#include "engine/wall_clock.h"

#include <sys/time.h>

#include <cstdlib>
#include <ctime>

#include "absl/strings/numbers.h"

namespace blklab {

WallClock WallClockAt(int64_t unix_ms) {
  WallClock c;
  c.timestamp_sec = unix_ms / 1000;
  c.timestamp_ms = unix_ms;
  const time_t t = static_cast<time_t>(c.timestamp_sec);
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &tm);
  c.time_string = buf;
  return c;
}

WallClock WallClockNow() {
  int64_t ms;
  const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
  int64_t fixed = 0;
  if (epoch != nullptr && absl::SimpleAtoi(epoch, &fixed)) {
    ms = fixed * 1000;
  } else {
    struct timeval tv;
    gettimeofday(&tv, nullptr);
    ms = static_cast<int64_t>(tv.tv_sec) * 1000 + tv.tv_usec / 1000;
  }
  return WallClockAt(ms);
}

}  // namespace blklab
