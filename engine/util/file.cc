#include "engine/util/file.h"

#include <sys/stat.h>
#include <unistd.h>

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

absl::Status CheckCanCreate(const std::string& path, const std::string& what) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(what + ": directory " + dir + " does not exist");
  }
  if (!S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(what + ": " + dir + " is not a directory");
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(what + ": cannot create files in " + dir);
  }
  if (slash + 1 == path.size()) return absl::InvalidArgumentError(what + ": names a directory, not a file");
  return absl::OkStatus();
}

}  // namespace blklab::util
