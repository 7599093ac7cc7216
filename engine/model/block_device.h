// engine/model/block_device.h
//
// BlockDevice is what one `devices:` entry of a host spec becomes in the
// simulated kernel: a driver instance and the disks (gendisks, each with
// its request queue) it registers — one for an NVMe namespace, nr_devices
// for null_blk, one per LUN for a SCSI host. device_factory.h builds them.
//
// Thread-safety: thread-compatible; part of one simulation.
#ifndef BLKLAB_ENGINE_MODEL_BLOCK_DEVICE_H_
#define BLKLAB_ENGINE_MODEL_BLOCK_DEVICE_H_

#include "engine/model/blk_mq.h"

namespace blklab::model {

class BlockDevice {
 public:
  virtual ~BlockDevice() = default;
  // The request queue of disk `i` of the entry, or nullptr when that disk
  // was not created (no job uses it).
  virtual RequestQueue* disk(int i) = 0;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_BLOCK_DEVICE_H_
