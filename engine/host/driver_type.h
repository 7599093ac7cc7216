// engine/host/driver_type.h
//
// DriverType is the host spec's view of one block driver (null_blk, nvme,
// scsi_debug, hba), as model::ElevatorType is the model's view of one I/O
// scheduler: everything host_spec.cc and the topology builder ask of a
// device entry's driver block, in one object per driver:
//
//   key              the block's name in a device entry ("null_blk"), which
//                    is also the field path of its errors
//   Default          the block with every module parameter at its default,
//                    which the decoder then fills from the document
//   Validate         the driver's own checks after the field ranges (powers
//                    of two, cross-field rules, HostLimits on tag depth)
//   Instances ...    its geometry: block devices per entry, hw queues, poll
//                    queues, tags per hw queue, host-wide tags, no_sched, the
//                    requests it preallocates, and its queue limits
//   MediaCeilings    one device's IOPS and bandwidth ceilings
//
// The registry is the DriverSpec variant (host_spec.h) plus one
// DriverTypeFor overload per alternative, declared below and defined in the
// driver's own file (drivers/<driver>_driver.cc). DriverTypeOf dispatches
// with std::visit over those overloads, so an alternative without a
// DriverType is a compile error, not a run-time fall-through. Adding a
// driver: its field list, struct and DriverSpec alternative (host_spec.h, the
// reference of every document key), its field table (spec_fields.h), its
// file under drivers/ with the DriverTypeFor line here, its model
// (engine/model/device_factory.cc) and its proto message.
//
// Invariants: DriverTypes() lists one type per DriverSpec alternative, in the
//   variant's order; DriverTypeOf(d) is the type of d's alternative, and its
//   methods are only called with a DriverSpec holding that alternative.
// Thread-safety: the types are immutable statics; safe to share.
// Cost: every call is O(1) (one visit and one virtual call), except
//   Validate, O(error message).
#ifndef BLKLAB_ENGINE_HOST_DRIVER_TYPE_H_
#define BLKLAB_ENGINE_HOST_DRIVER_TYPE_H_

#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/host/host_spec.h"

namespace blklab::host {

// What a driver's Validate may look at beyond its own block.
struct DriverCheck {
  const std::string& path;  // the block's field path, "devices[1].null_blk"
  int numa_nodes = 1;       // NUMA nodes of the host's CPUs
  const HostLimits& limits;
};

class DriverType {
 public:
  explicit constexpr DriverType(absl::string_view key) : key_(key) {}
  virtual ~DriverType() = default;
  DriverType(const DriverType&) = delete;
  DriverType& operator=(const DriverType&) = delete;

  // The device entry's block for this driver, as a document writes it.
  absl::string_view key() const { return key_; }

  // The block with every field at its default.
  virtual DriverSpec Default() const = 0;
  // The driver's checks beyond its fields' ranges (which ValidateHostSpec
  // checks first); InvalidArgument or ResourceExhausted naming check.path.
  virtual absl::Status Validate(const DriverSpec& driver, const DriverCheck& check) const = 0;

  // Block devices one entry creates (see host::DeviceInstances).
  virtual int Instances(const DriverSpec& driver) const = 0;
  // Hardware queues of one instance, all maps (default, read/write, poll).
  virtual int HardwareQueues(const DriverSpec& driver, const CpuSpec& cpus) const = 0;
  // HCTX_TYPE_POLL queues among them.
  virtual int PollQueues(const DriverSpec& driver, const CpuSpec& cpus) const = 0;
  // Tags per hardware queue of one instance.
  virtual int TagDepth(const DriverSpec& driver) const = 0;
  // Host-wide tags across hw queues (BLK_MQ_F_TAG_HCTX_SHARED).
  virtual bool HostSharedTags(const DriverSpec& driver) const = 0;
  // BLK_MQ_F_NO_SCHED: no I/O scheduler may be set.
  virtual bool NoSched(const DriverSpec& driver) const = 0;
  // Requests the entry preallocates (driver tags plus `sched_depth`
  // scheduler tags per set), for HostLimits::max_total_requests.
  virtual int64_t PreallocatedRequests(const DriverSpec& driver, int hw_queues, int64_t instances,
                                       int64_t sched_depth) const = 0;
  // Queue limits: max_sectors (512-byte sectors) and the logical block size.
  virtual uint32_t MaxSectors() const = 0;
  virtual uint32_t LogicalBlockBytes(const DriverSpec& driver) const = 0;
  // SCSI disks: sd names (sdb, sdc, ...) and SG_IO.
  virtual bool scsi() const = 0;
  // NVMe namespaces: /dev/ngXnY generic character devices.
  virtual bool nvme_namespace() const = 0;

  // What one block device's media admits per second at most (0: no
  // ceiling): the ceilings a saturated run is bound by, as opposed to the
  // kernel's path. A ceiling shared by several devices (an HBA's controller
  // and drives) is not one device's and is not listed.
  struct Ceilings {
    int64_t max_iops = 0;
    int64_t max_bytes_per_sec = 0;
  };
  virtual Ceilings MediaCeilings(const DriverSpec& driver) const = 0;

 private:
  absl::string_view key_;
};

// The base of a driver over spec struct S: Default() is S's defaults, and
// Of() reads the S alternative of the DriverSpec the registry hands it.
template <typename S>
class TypedDriverType : public DriverType {
 public:
  using DriverType::DriverType;

  DriverSpec Default() const final { return S{}; }

 protected:
  // REQUIRES: d holds S (DriverTypeOf(d) is this type).
  static const S& Of(const DriverSpec& d) { return std::get<S>(d); }
};

// The registry: one line per DriverSpec alternative, each defined in its
// driver's file.
const DriverType& DriverTypeFor(const NullBlkSpec&);    // drivers/null_blk_driver.cc
const DriverType& DriverTypeFor(const NvmeSpec&);       // drivers/nvme_driver.cc
const DriverType& DriverTypeFor(const ScsiDebugSpec&);  // drivers/scsi_debug_driver.cc
const DriverType& DriverTypeFor(const HbaSpec&);        // drivers/hba_driver.cc

// The type of `driver`'s alternative.
const DriverType& DriverTypeOf(const DriverSpec& driver);
// Every type, in DriverSpec's order.
std::span<const DriverType* const> DriverTypes();
// The keys as a document's error lists them: "null_blk, nvme, scsi_debug or hba".
std::string DriverKeyList();

}  // namespace blklab::host

#endif  // BLKLAB_ENGINE_HOST_DRIVER_TYPE_H_
