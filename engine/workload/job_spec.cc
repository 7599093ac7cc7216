#include "engine/workload/job_spec.h"

#include <algorithm>

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

bool IsFileOperationEngine(IoEngine e) { return e == IoEngine::kFalloc || e == IoEngine::kFtruncate; }

bool IsSynchronous(IoEngine e) {
  switch (e) {
    case IoEngine::kIoUring:
    case IoEngine::kIoUringCmd:
    case IoEngine::kLibaio:
    case IoEngine::kPosixaio:
    case IoEngine::kNull:
      return false;
    default:
      return true;
  }
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
