// clients/kernel_lab/guest_plan.h
//
// What the kernel lab does to a real Linux guest so that it is the machine a
// host spec describes, as far as a VM can be: the vCPUs and memory, the
// modules loaded with the spec's parameters (null_blk by module parameters
// or, for several entries, configfs; scsi_debug; QEMU's emulated NVMe
// controller with nvme-pci's parameters), the devices named as the spec
// names them, the queue attributes and scheduler tunables written to sysfs,
// the cgroup v2 directories with their io.bfq.weight, the vm sysctls.
//
// What a VM cannot express is refused by name (Unimplemented, naming the
// field): HBA devices, cost rows, knobs or kernel config of another kernel
// than the lab's, CPU topology beyond a vCPU count, NVMe media timing,
// filesystems. A spec's knobs and kernel settings that are not written stay
// the lab kernel's (LabKernel()); those written must agree with it.
//
// Pure: no I/O, no clock. Thread-compatible.
#ifndef BLKLAB_CLIENTS_KERNEL_LAB_GUEST_PLAN_H_
#define BLKLAB_CLIENTS_KERNEL_LAB_GUEST_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/host/host_spec.h"
#include "engine/util/doc_node.h"

namespace blklab::kernel_lab {

// The lab's kernel as the model describes it: Debian 12's 6.1 stable kernel
// (HZ=250, PREEMPT_VOLUNTARY, IRQ_TIME_ACCOUNTING off) and the model's era
// switches set as 6.1 has them.
struct LabKernel {
  host::KernelSpec kernel;
  host::Knobs knobs;
};
const LabKernel& Lab61();

// `spec` with the lab kernel's settings: what the model runs to compare with
// the guest (the spec's own kernel and knobs must already agree with it:
// PlanGuest refuses them otherwise).
host::HostSpec WithLabKernel(host::HostSpec spec);

struct GuestPlan {
  int vcpus = 1;
  int memory_mib = 1536;
  std::vector<std::string> qemu_args;        // extra devices (NVMe controllers)
  std::vector<std::string> kernel_cmdline;   // module parameters given at boot
  // Shell lines (busybox sh) that load the modules, create the devices,
  // name them as the spec does and write the queue and cgroup settings.
  std::string setup_script;
  // Spec instance names of the host's block devices, in spec order.
  std::vector<std::string> devices;
  // PlanReal: lines that undo the set-up, in the order they run (each
  // guarded, so that it undoes only what the set-up got to); empty in a VM.
  std::string restore_script;
  bool real = false;  // PlanReal's
};

// `doc` is the spec as written (ParseHostDoc), `spec` the same decoded and
// resolved; the refusals read `doc` for what was written.
absl::StatusOr<GuestPlan> PlanGuest(const util::DocNode& doc, const host::HostSpec& spec);

// The same translation for the machine's own kernel (`blklab kernel run
// --real`). The script refers to $sys, $proc and $work (set by the runner).
// It refuses to start when null_blk or scsi_debug is loaded already, or a
// cgroup the spec names exists; it loads only modules that are not loaded,
// keeps the kernel's device names (a spec name that differs fails the run)
// and writes nothing the restore script does not undo: the devices go with
// their modules, vm sysctls get their old values, the cgroups it made are
// removed. NVMe, HBA and filesystems are refused by name; the spec's kernel,
// knobs, costs and CPU topology describe the model's side and are not
// checked against the machine.
absl::StatusOr<GuestPlan> PlanReal(const util::DocNode& doc, const host::HostSpec& spec);

}  // namespace blklab::kernel_lab

#endif  // BLKLAB_CLIENTS_KERNEL_LAB_GUEST_PLAN_H_
