#include "engine/host/driver_type.h"

#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"

namespace blklab::host {
namespace {

// One DriverType per DriverSpec alternative, in the variant's order; an
// alternative without a DriverTypeFor overload does not compile.
template <size_t... I>
std::span<const DriverType* const> RegisteredDriverTypes(std::index_sequence<I...>) {
  static const DriverType* const kTypes[] = {&DriverTypeFor(std::variant_alternative_t<I, DriverSpec>{})...};
  return kTypes;
}

}  // namespace

const DriverType& DriverTypeOf(const DriverSpec& driver) {
  return std::visit([](const auto& spec) -> const DriverType& { return DriverTypeFor(spec); }, driver);
}

std::span<const DriverType* const> DriverTypes() {
  return RegisteredDriverTypes(std::make_index_sequence<std::variant_size_v<DriverSpec>>());
}

std::string DriverKeyList() {
  const std::span<const DriverType* const> types = DriverTypes();
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out += i + 1 == types.size() ? " or " : ", ";
    absl::StrAppend(&out, types[i]->key());
  }
  return out;
}

}  // namespace blklab::host
