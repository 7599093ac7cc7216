// The nvme driver type: devices[].nvme (drivers/nvme/host/pci.c).

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/driver_type.h"
#include "engine/host/spec_fields.h"

namespace blklab::host {
namespace {

class NvmeDriverType final : public TypedDriverType<NvmeSpec> {
 public:
  NvmeDriverType() : TypedDriverType("nvme") {}

  absl::Status Validate(const DriverSpec& d, const DriverCheck& check) const override {
    const NvmeSpec& nv = Of(d);
    if (!spec_internal::IsPowerOfTwo(nv.bs)) {
      return spec_internal::FieldError(spec_internal::Join(check.path, "bs"),
                                       absl::StrCat("must be a power of two, got ", nv.bs));
    }
    if (nv.write_queues + nv.poll_queues >= nv.max_queues) {
      return spec_internal::FieldError(spec_internal::Join(check.path, "poll_queues"),
                                       "write_queues + poll_queues must leave at least one default queue under "
                                       "max_queues");
    }
    if (nv.io_queue_depth - 1 > check.limits.max_queue_depth) {
      return absl::ResourceExhaustedError(absl::StrCat(spec_internal::Join(check.path, "io_queue_depth"), ": ",
                                                       nv.io_queue_depth, " exceeds the limit of ",
                                                       check.limits.max_queue_depth));
    }
    return absl::OkStatus();
  }

  int Instances(const DriverSpec& d) const override { return 1; }
  // nvme_setup_io_queues: one queue per CPU (or nr_io_queues) plus the
  // write and poll queues, at most what the controller grants.
  int HardwareQueues(const DriverSpec& d, const CpuSpec& cpus) const override {
    const NvmeSpec& nv = Of(d);
    const int64_t wanted =
        int64_t{nv.nr_io_queues > 0 ? nv.nr_io_queues : cpus.count} + nv.write_queues + nv.poll_queues;
    return static_cast<int>(std::min<int64_t>(wanted, nv.max_queues));
  }
  int PollQueues(const DriverSpec& d, const CpuSpec& cpus) const override {
    return std::min(Of(d).poll_queues, HardwareQueues(d, cpus));
  }
  int TagDepth(const DriverSpec& d) const override { return Of(d).io_queue_depth - 1; }
  bool HostSharedTags(const DriverSpec& d) const override { return false; }
  bool NoSched(const DriverSpec& d) const override { return false; }
  int64_t PreallocatedRequests(const DriverSpec& d, int hw_queues, int64_t instances,
                               int64_t sched_depth) const override {
    return instances * hw_queues * (int64_t{TagDepth(d)} + sched_depth);
  }
  // NVMe's MDTS (QEMU's 7: 512 KiB) gives 1024 sectors.
  uint32_t MaxSectors() const override { return 1024; }
  uint32_t LogicalBlockBytes(const DriverSpec& d) const override { return Of(d).bs; }
  bool scsi() const override { return false; }
  bool nvme_namespace() const override { return true; }
  // The media stage's gates (device_factory.cc: max_mbps in 10^6 bytes/s).
  Ceilings MediaCeilings(const DriverSpec& d) const override {
    return Ceilings{Of(d).max_iops, Of(d).max_mbps * 1000000};
  }
};

}  // namespace

const DriverType& DriverTypeFor(const NvmeSpec&) {
  static const NvmeDriverType kType;
  return kType;
}

}  // namespace blklab::host
