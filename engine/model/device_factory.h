// engine/model/device_factory.h
//
// The device factory: everything the simulation needs to know about a host
// spec's driver, in one place per driver. Each function is one exhaustive
// std::visit over host::DriverSpec, so a driver the host spec can describe
// and the factory does not handle is a compile error, not a silent gap:
//
//   DescribeDisks    the disks an entry makes (size, polled queues)
//   CheckModelled    what the model cannot run for this entry, by field
//   CreateBlockDevice builds the driver instance and the disks a job uses
//
// The host-spec side of a driver (decoding, validation, queue geometry) is
// its host::DriverType (engine/host/driver_type.h). Adding a driver: its
// DriverType, its model under drivers/, and one case in each visit here.
//
// Thread-safety: functions of their arguments only.
#ifndef BLKLAB_ENGINE_MODEL_DEVICE_FACTORY_H_
#define BLKLAB_ENGINE_MODEL_DEVICE_FACTORY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/host/host_spec.h"
#include "engine/model/blk_mq.h"
#include "engine/model/block_device.h"
#include "engine/model/kernel.h"

namespace blklab::model {

struct DiskInfo {
  uint64_t size_bytes = 0;
  bool has_poll_queues = false;  // HCTX_TYPE_POLL queues exist (hipri needs them)
  int scsi_hosts = 0;            // SCSI hosts the entry makes (numbered host0, host1, ...)
  bool module_tag_set = false;   // its disks use the module's one tag set (null_blk shared_tags)
};

// Per disk of `device` (host::DeviceInstances of them), the same for each.
DiskInfo DescribeDisks(const host::DeviceSpec& device);

// OK, or Unimplemented naming `path` (e.g. "devices[1]") and the field the
// model does not run.
absl::Status CheckModelled(const host::DeviceSpec& device, const host::Knobs& knobs, const std::string& path);

struct DeviceBuild {
  std::vector<std::string> disk_names;  // every disk of the entry, in order
  std::vector<bool> used;               // which to create
  // Per disk: its queue settings (fio's ioscheduler= applied). A SCSI
  // host's LUNs share one configuration: that of disk `first_used` (the
  // first a job uses).
  std::vector<QueueConfig> queues;
  size_t first_used = 0;
  int scsi_host_no = 0;  // the entry's first SCSI host: "host<N>" (its tag set's name)
};

// Builds the driver instance of `device` with the disks `build.used` asks
// for. REQUIRES: CheckModelled(device) is OK.
std::unique_ptr<BlockDevice> CreateBlockDevice(Kernel& kernel, const host::DeviceSpec& device,
                                               const DeviceBuild& build);

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DEVICE_FACTORY_H_
