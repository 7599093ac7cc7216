// The hba driver type: devices[].hba, a RAID/HBA "firmware" SCSI host
// (megaraid_sas, mpi3mr).

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/driver_type.h"
#include "engine/host/spec_fields.h"

namespace blklab::host {
namespace {

class HbaDriverType final : public TypedDriverType<HbaSpec> {
 public:
  HbaDriverType() : TypedDriverType("hba") {}

  absl::Status Validate(const DriverSpec& d, const DriverCheck& check) const override {
    const HbaSpec& h = Of(d);
    if (!spec_internal::IsPowerOfTwo(h.sector_size)) {
      return spec_internal::FieldError(spec_internal::Join(check.path, "sector_size"),
                                       absl::StrCat("must be a power of two, got ", h.sector_size));
    }
    if (!spec_internal::IsPowerOfTwo(h.stripe_kb)) {
      return spec_internal::FieldError(spec_internal::Join(check.path, "stripe_kb"),
                                       absl::StrCat("must be a power of two, got ", h.stripe_kb));
    }
    if (h.irq_poll_sleep_max_us < h.irq_poll_sleep_min_us) {
      return spec_internal::FieldError(spec_internal::Join(check.path, "irq_poll_sleep_max_us"),
                                       absl::StrCat("must be at least irq_poll_sleep_min_us (",
                                                    h.irq_poll_sleep_min_us, "), got ", h.irq_poll_sleep_max_us));
    }
    return absl::OkStatus();
  }

  int Instances(const DriverSpec& d) const override { return Of(d).virtual_drives; }
  int HardwareQueues(const DriverSpec& d, const CpuSpec& cpus) const override { return Of(d).nr_hw_queues; }
  int PollQueues(const DriverSpec& d, const CpuSpec& cpus) const override { return 0; }
  int TagDepth(const DriverSpec& d) const override { return Of(d).can_queue; }
  bool HostSharedTags(const DriverSpec& d) const override { return Of(d).host_tagset; }
  bool NoSched(const DriverSpec& d) const override { return false; }
  // One tag set for the host (per hw queue without host_tagset); with
  // host-wide tags the scheduler tags are one set per queue too.
  int64_t PreallocatedRequests(const DriverSpec& d, int hw_queues, int64_t instances,
                               int64_t sched_depth) const override {
    const HbaSpec& h = Of(d);
    const int64_t sets = h.host_tagset ? 1 : hw_queues;
    return sets * h.can_queue + instances * sets * sched_depth;
  }
  // The HBA presets keep 1024 sectors (the common max_sectors_kb of 512).
  uint32_t MaxSectors() const override { return 1024; }
  uint32_t LogicalBlockBytes(const DriverSpec& d) const override { return Of(d).sector_size; }
  bool scsi() const override { return true; }
  bool nvme_namespace() const override { return false; }
  // The controller's max_iops and the drives' drive_iops are shared by
  // every LUN of the entry: no one device's ceiling.
  Ceilings MediaCeilings(const DriverSpec& d) const override { return Ceilings{}; }
};

}  // namespace

const DriverType& DriverTypeFor(const HbaSpec&) {
  static const HbaDriverType kType;
  return kType;
}

}  // namespace blklab::host
