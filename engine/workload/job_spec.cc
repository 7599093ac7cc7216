#include "engine/workload/job_spec.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace blklab::workload {

bool IsRandom(RwPattern p) {
  switch (p) {
    case RwPattern::kRandRead:
    case RwPattern::kRandWrite:
    case RwPattern::kRandTrim:
    case RwPattern::kRandRw:
    case RwPattern::kRandTrimWrite:
      return true;
    default:
      return false;
  }
}

bool IsMixed(RwPattern p) {
  return p == RwPattern::kReadWrite || p == RwPattern::kRandRw || p == RwPattern::kTrimWrite ||
         p == RwPattern::kRandTrimWrite;
}

const char* FileServiceTypeName(FileServiceType t) {
  switch (t) {
    case FileServiceType::kRoundRobin: return "roundrobin";
    case FileServiceType::kRandom: return "random";
    case FileServiceType::kSequential: return "sequential";
    case FileServiceType::kZipf: return "zipf";
    case FileServiceType::kPareto: return "pareto";
    case FileServiceType::kNormal: return "normal";
    case FileServiceType::kGauss: return "gauss";
  }
  return "?";
}

const char* RwPatternName(RwPattern p) {
  switch (p) {
    case RwPattern::kRead: return "read";
    case RwPattern::kWrite: return "write";
    case RwPattern::kTrim: return "trim";
    case RwPattern::kRandRead: return "randread";
    case RwPattern::kRandWrite: return "randwrite";
    case RwPattern::kRandTrim: return "randtrim";
    case RwPattern::kReadWrite: return "rw";
    case RwPattern::kRandRw: return "randrw";
    case RwPattern::kTrimWrite: return "trimwrite";
    case RwPattern::kRandTrimWrite: return "randtrimwrite";
  }
  return "?";
}

std::string FioFileName(const JobSpec& spec, uint32_t jobnum, uint32_t filenum) {
  if (spec.filename_format.empty()) return absl::StrCat(spec.name, ".", jobnum, ".", filenum);
  std::string out = spec.filename_format;
  const std::pair<const char*, std::string> kKeywords[] = {
      {"$jobname", spec.name}, {"$jobnum", absl::StrCat(jobnum)}, {"$filenum", absl::StrCat(filenum)},
      {"$clientuid", ""}};
  for (const auto& [key, value] : kKeywords) {
    const std::string k = key;
    for (size_t at = 0;;) {
      const std::string lower = absl::AsciiStrToLower(out);
      at = lower.find(k, at);
      if (at == std::string::npos) break;
      out.replace(at, k.size(), value);
      at += value.size();
    }
  }
  return out;
}

uint64_t MinBlockSize(const JobSpec& spec, Direction d) {
  const int i = static_cast<int>(d);
  if (!spec.bssplit[i].empty()) return spec.bssplit[i].front().bs;
  if (spec.bs_range[i].lo != 0) return spec.bs_range[i].lo;
  return spec.bs[i];
}

uint64_t MaxBlockSize(const JobSpec& spec, Direction d) {
  const int i = static_cast<int>(d);
  if (!spec.bssplit[i].empty()) return spec.bssplit[i].back().bs;
  if (spec.bs_range[i].lo != 0) return spec.bs_range[i].hi;
  return spec.bs[i];
}

}  // namespace blklab::workload
