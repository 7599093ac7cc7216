// engine/host/host_overlay.h
//
// Host-spec overlays: "set this field of the spec to that value", by a dotted
// path, as `blklab compare --variant NAME:PATH=VALUE` and comparison spec
// files name them (`knobs.dd_serialize_dispatch=true`,
// `devices.nullb0.queue.scheduler=kyber`, `cpus.count=64`,
// `costs.try_to_wake_up=200`).
//
// A path walks the spec's document as written (ParseHostDoc), so that the
// defaults that depend on an overridden field (hardware queues from the CPU
// count, nr_requests from the scheduler) are resolved after the override: a
// map step names a key, a list step an index or the `name` of an item
// (`devices.nullb0` is the device named nullb0). A missing key, and missing
// maps on the way, are added; the result is then decoded and validated as
// any host spec is, so an unknown field or a bad value is an error that names
// it. Values are YAML scalars or flow collections (`true`, `64`,
// `mq-deadline`, `[0, 1]`).
//
// Thread-safety: pure functions. Cost: one encode, edit and decode of the
// spec per call (microseconds).
#ifndef BLKLAB_ENGINE_HOST_HOST_OVERLAY_H_
#define BLKLAB_ENGINE_HOST_HOST_OVERLAY_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/host/host_spec.h"
#include "engine/util/doc_node.h"

namespace blklab::host {

struct HostOverride {
  std::string path;   // dotted: "knobs.dd_serialize_dispatch"
  std::string value;  // YAML text: "true"
};

// Parses "PATH=VALUE". InvalidArgument names the text when there is no '='
// or the path is empty or has an empty step.
absl::StatusOr<HostOverride> ParseHostOverride(absl::string_view text);

// The spec of document `doc` (as written) with every override applied in
// order, decoded and validated. InvalidArgument names the override
// ("knobs.foo=1: ...") and what is wrong with it.
absl::StatusOr<HostSpec> ApplyHostOverrides(const util::DocNode& doc, const std::vector<HostOverride>& overrides);

}  // namespace blklab::host

#endif  // BLKLAB_ENGINE_HOST_HOST_OVERLAY_H_
