// The scsi_debug driver type: devices[].scsi_debug (drivers/scsi/scsi_debug.c).

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/driver_type.h"
#include "engine/host/spec_fields.h"

namespace blklab::host {
namespace {

class ScsiDebugDriverType final : public TypedDriverType<ScsiDebugSpec> {
 public:
  ScsiDebugDriverType() : TypedDriverType("scsi_debug") {}

  absl::Status Validate(const DriverSpec& d, const DriverCheck& check) const override {
    const ScsiDebugSpec& s = Of(d);
    if (!spec_internal::IsPowerOfTwo(s.sector_size)) {
      return spec_internal::FieldError(spec_internal::Join(check.path, "sector_size"),
                                       absl::StrCat("must be a power of two, got ", s.sector_size));
    }
    return absl::OkStatus();
  }

  int Instances(const DriverSpec& d) const override {
    const ScsiDebugSpec& s = Of(d);
    return s.add_host * s.num_tgts * s.max_luns;
  }
  int HardwareQueues(const DriverSpec& d, const CpuSpec& cpus) const override {
    return Of(d).submit_queues + Of(d).poll_queues;
  }
  int PollQueues(const DriverSpec& d, const CpuSpec& cpus) const override { return Of(d).poll_queues; }
  int TagDepth(const DriverSpec& d) const override {
    const ScsiDebugSpec& s = Of(d);
    return s.host_max_queue > 0 ? s.host_max_queue : s.max_queue;
  }
  bool HostSharedTags(const DriverSpec& d) const override { return Of(d).host_max_queue > 0; }
  bool NoSched(const DriverSpec& d) const override { return false; }
  int64_t PreallocatedRequests(const DriverSpec& d, int hw_queues, int64_t instances,
                               int64_t sched_depth) const override {
    return instances * hw_queues * (int64_t{TagDepth(d)} + sched_depth);
  }
  // scsi_debug's optimal transfer length gives 1024 sectors.
  uint32_t MaxSectors() const override { return 1024; }
  uint32_t LogicalBlockBytes(const DriverSpec& d) const override { return Of(d).sector_size; }
  bool scsi() const override { return true; }
  bool nvme_namespace() const override { return false; }
  // scsi_debug answers after its delay, with no rate ceiling.
  Ceilings MediaCeilings(const DriverSpec& d) const override { return Ceilings{}; }
};

}  // namespace

const DriverType& DriverTypeFor(const ScsiDebugSpec&) {
  static const ScsiDebugDriverType kType;
  return kType;
}

}  // namespace blklab::host
