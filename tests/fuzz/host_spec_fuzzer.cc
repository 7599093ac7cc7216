// libFuzzer target: host specs of arbitrary bytes through ParseHostSpec as
// YAML and as JSON. A spec that parses must survive the canonical round trip:
// HostSpecToJson(ParseHostSpec(HostSpecToJson(s))) == HostSpecToJson(s).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "engine/host/host_spec.h"

namespace {

void RoundTrip(const blklab::host::HostSpec& spec) {
  const std::string json = blklab::host::HostSpecToJson(spec);
  auto again = blklab::host::ParseHostSpec(json, blklab::host::SpecFormat::kJson);
  if (!again.ok() || blklab::host::HostSpecToJson(*again) != json) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto format : {blklab::host::SpecFormat::kYaml, blklab::host::SpecFormat::kJson}) {
    auto spec = blklab::host::ParseHostSpec(text, format);
    if (spec.ok()) RoundTrip(*spec);
  }
  return 0;
}
