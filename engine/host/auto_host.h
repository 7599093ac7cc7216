// engine/host/auto_host.h
//
// A host built from the targets a job names (`--host=auto`, `blklab hosts
// auto`): one simulated block device per distinct device `filename`, each of
// the kind its kernel name gives, with that driver's and the kernel's
// defaults, on the embedded default host's CPUs. So a job file written for a
// real machine (`filename=/dev/nvme0n1`) runs without a host spec first,
// and the spec it ran on can be printed, edited and reused.
//
//  * nullbN: null_blk with every module parameter at its default.
//  * nvmeXnY (and its partitions nvmeXnYpZ): an NVMe namespace with one I/O
//    queue per CPU and the nvme-8cpu preset's media [guess: TLC NAND class].
//  * sdX (and its partitions sdXN): a SCSI disk, one LUN behind a SAS/SATA
//    HBA with one hardware queue [guess: an SSD's 80 us reads, 100K IOPS].
//  * Regular files (any name not under /dev/): an ext4 filesystem mounted at
//    / on an NVMe namespace of its own (the first nvmeKn1 the job does not
//    name), so relative names resolve under directory= or /.
//  * The scheduler is the kernel's default for the queue count
//    (elevator_get_default: mq-deadline for one hardware queue, else none).
//
//  * Any other /dev name that no kernel driver gives (fio's placeholder
//    /dev/XXX, a vendor driver's /dev/fioa): a stand-in NVMe namespace, said
//    in the spec and by AutoHostNotes.
//
// Refused, by the kind of device: NVMe generic character devices
// (/dev/ngXnY, fio's io_uring_cmd), kinds the kernel has and blklab does not
// model (virtio, device-mapper, md, loop, nbd, zram, ...), memory character
// devices (/dev/null, /dev/zero: their I/O never reaches a block device),
// two partitions of one disk (they would get a queue each where the kernel
// shares the disk's).
//
// Thread-safety: pure functions. Cost: a few string operations per target.
#ifndef BLKLAB_ENGINE_HOST_AUTO_HOST_H_
#define BLKLAB_ENGINE_HOST_AUTO_HOST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/host/host_spec.h"

namespace blklab::host {

// The --host= value that asks for a host built from the job.
inline constexpr char kAutoHostName[] = "auto";

// The host spec document (YAML with comments) for `targets`, the job's
// filename= entries in the order they appear (duplicates ignored; empty:
// the default host's devices). Errors name the target.
// `existing`: regular files (absolute paths) the job names without a size;
// the spec lists them as files already on the root filesystem, 1 GiB each
// [guess], so the job runs on them as fio would on existing files.
absl::StatusOr<std::string> AutoHostYaml(const std::vector<std::string>& targets,
                                         const std::vector<std::string>& existing = {});

// What the user should know about the host built for `targets`: one line per
// stand-in device (a name of no known kind). Empty when there is nothing to say.
std::vector<std::string> AutoHostNotes(const std::vector<std::string>& targets);

// AutoHostYaml, parsed.
absl::StatusOr<HostSpec> AutoHost(const std::vector<std::string>& targets,
                                   const std::vector<std::string>& existing = {});

}  // namespace blklab::host

#endif  // BLKLAB_ENGINE_HOST_AUTO_HOST_H_
