// The null_blk driver type: devices[].null_blk (drivers/block/null_blk).

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/driver_type.h"
#include "engine/host/spec_fields.h"

namespace blklab::host {
namespace {

class NullBlkDriverType final : public TypedDriverType<NullBlkSpec> {
 public:
  NullBlkDriverType() : TypedDriverType("null_blk") {}

  absl::Status Validate(const DriverSpec& d, const DriverCheck& check) const override {
    const NullBlkSpec& n = Of(d);
    if (!spec_internal::IsPowerOfTwo(n.bs)) {
      return spec_internal::FieldError(spec_internal::Join(check.path, "bs"),
                                       absl::StrCat("must be a power of two, got ", n.bs));
    }
    if (n.home_node >= check.numa_nodes) {
      return spec_internal::FieldError(
          spec_internal::Join(check.path, "home_node"),
          absl::StrCat("must be -1 or a NUMA node below ", check.numa_nodes, ", got ", n.home_node));
    }
    if (n.hw_queue_depth > check.limits.max_queue_depth) {
      return absl::ResourceExhaustedError(absl::StrCat(spec_internal::Join(check.path, "hw_queue_depth"), ": ",
                                                       n.hw_queue_depth, " exceeds the limit of ",
                                                       check.limits.max_queue_depth));
    }
    return absl::OkStatus();
  }

  int Instances(const DriverSpec& d) const override { return Of(d).nr_devices; }
  int HardwareQueues(const DriverSpec& d, const CpuSpec& cpus) const override {
    const NullBlkSpec& n = Of(d);
    const int nodes = cpus.sockets * cpus.numa_nodes_per_socket;
    return (n.use_per_node_hctx ? nodes : n.submit_queues) + n.poll_queues;
  }
  int PollQueues(const DriverSpec& d, const CpuSpec& cpus) const override { return Of(d).poll_queues; }
  int TagDepth(const DriverSpec& d) const override { return Of(d).hw_queue_depth; }
  bool HostSharedTags(const DriverSpec& d) const override { return Of(d).shared_tag_bitmap; }
  bool NoSched(const DriverSpec& d) const override { return Of(d).no_sched; }
  int64_t PreallocatedRequests(const DriverSpec& d, int hw_queues, int64_t instances,
                               int64_t sched_depth) const override {
    return instances * hw_queues * (int64_t{TagDepth(d)} + sched_depth);
  }
  // null_blk leaves blk_set_default_limits' BLK_SAFE_MAX_SECTORS (255
  // sectors, max_sectors_kb 127).
  uint32_t MaxSectors() const override { return 255; }
  uint32_t LogicalBlockBytes(const DriverSpec& d) const override { return Of(d).bs; }
  bool scsi() const override { return false; }
  bool nvme_namespace() const override { return false; }
  // null_blk's mbps= throttle (null_blk.cc: MiB per second, in ticks).
  Ceilings MediaCeilings(const DriverSpec& d) const override { return Ceilings{0, Of(d).mbps << 20}; }
};

}  // namespace

const DriverType& DriverTypeFor(const NullBlkSpec&) {
  static const NullBlkDriverType kType;
  return kType;
}

}  // namespace blklab::host
