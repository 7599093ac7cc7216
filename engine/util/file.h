// engine/util/file.h
//
// Whole-file reads and writes for the CLI and the server: job files, host
// specs, tokens, certificates, fio's log files (the engine itself touches no
// file).
// Thread-safety: thread-safe. Cost: one read of the file.
#ifndef BLKLAB_ENGINE_UTIL_FILE_H_
#define BLKLAB_ENGINE_UTIL_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace blklab::util {

absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes `contents` to `path` afresh (truncating). InvalidArgument "cannot
// write WHAT PATH" when it cannot be opened or written.
absl::Status WriteStringToFile(const std::string& path, const std::string& contents, const std::string& what);

// Whether a file `path` could be created: the directory it names (the part
// before its last '/', else the current one) exists, is a directory, and
// the process may create files in it, and `path` does not end in '/'.
// InvalidArgument "WHAT: ..." saying which of these fails.
absl::Status CheckCanCreate(const std::string& path, const std::string& what);

}  // namespace blklab::util

#endif  // BLKLAB_ENGINE_UTIL_FILE_H_
