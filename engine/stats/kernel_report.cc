// engine/stats/kernel_report.cc
#include "engine/stats/kernel_report.h"

namespace blklab::stats {

const char* CpuModeName(CpuMode mode) {
  switch (mode) {
    case CpuMode::kUser:
      return "usr";
    case CpuMode::kSys:
      return "sys";
    case CpuMode::kIrq:
      return "irq";
    case CpuMode::kSoftirq:
      return "softirq";
    case CpuMode::kIdle:
      return "idle";
  }
  return "?";
}

}  // namespace blklab::stats
