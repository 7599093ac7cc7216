// server/proto_time.h
//
// The server's one set of converters between its time values and the
// well-known protobuf time messages: nanoseconds <-> google.protobuf.Duration
// and absl::Time <-> google.protobuf.Timestamp. Every proto time field the
// server writes or reads goes through these (the arithmetic is protobuf's own
// TimeUtil, so seconds and nanos are always normalised the same way).
//
// Thread-safety: stateless functions; safe from any thread.
// Cost: O(1), no allocation.
#ifndef BLKLAB_SERVER_PROTO_TIME_H_
#define BLKLAB_SERVER_PROTO_TIME_H_

#include <cstdint>

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

namespace blklab::server {

// `ns` nanoseconds as a Duration (seconds and nanos of the same sign).
inline void SetDuration(int64_t ns, google::protobuf::Duration* out) {
  *out = google::protobuf::util::TimeUtil::NanosecondsToDuration(ns);
}

inline int64_t DurationNs(const google::protobuf::Duration& d) {
  return google::protobuf::util::TimeUtil::DurationToNanoseconds(d);
}

// REQUIRES: `t` is at or after the Unix epoch (a valid Timestamp).
inline void SetTimestamp(absl::Time t, google::protobuf::Timestamp* out) {
  *out = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

inline absl::Time TimeFromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(t));
}

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_PROTO_TIME_H_
