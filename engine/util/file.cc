#include "engine/util/file.h"

#include <fstream>
#include <sstream>

namespace blklab::util {

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WriteStringToFile(const std::string& path, const std::string& contents, const std::string& what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << contents;
  if (!out || !out.flush()) return absl::InvalidArgumentError("cannot write " + what + " " + path);
  return absl::OkStatus();
}

}  // namespace blklab::util
