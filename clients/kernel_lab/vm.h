// clients/kernel_lab/vm.h
//
// Boots the lab image (scripts/kernel-lab-image: Debian's kernel and an
// initramfs with busybox, fio, blktrace and the block-layer modules) in
// QEMU with one extra initramfs archive per run holding /lab/run.sh and the
// job files, and collects what the guest printed on its second serial port:
// sections framed by @@blklab-begin NAME@@ / @@blklab-end NAME@@ and the
// script's exit status (tests/kernel/guest-init.sh).
//
// KVM is used when the host CPU offers it (vmx/svm and /dev/kvm), TCG
// otherwise. Under TCG the guest CPU is many times slower than the host and
// its timers fire late when the host is busy: callers say so (see
// kernel_report.h's timing error).
//
// Not thread-safe across calls sharing a work directory; each call makes its
// own. Cost: a QEMU boot (about 7 s under TCG) plus the job's run time.
#ifndef BLKLAB_CLIENTS_KERNEL_LAB_VM_H_
#define BLKLAB_CLIENTS_KERNEL_LAB_VM_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace blklab::kernel_lab {

struct LabImage {
  std::string dir;             // holds vmlinuz, base.cpio.gz, image.txt
  std::string kernel_release;  // "6.1.0-57-amd64"
  std::string description;     // image.txt: kernel, image digest, fio version, config lines
};

// $BLKLAB_LAB_IMAGE when set (a directory as above), else the image
// scripts/kernel-lab-image builds or finds in its cache (the script of the
// source tree this binary was built from). FailedPrecondition says what is
// missing.
absl::StatusOr<LabImage> FindImage();

// A newc cpio archive of `files` (guest path without the leading '/' ->
// contents; directories above them are added), as the kernel's initramfs
// unpacker reads it. Deterministic: mtime 0, inodes in order.
std::string NewcArchive(const std::vector<std::pair<std::string, std::string>>& files);

struct GuestRun {
  std::string run_script;                                   // /lab/run.sh
  std::vector<std::pair<std::string, std::string>> files;   // more files, e.g. lab/jobs/x.fio
  int vcpus = 2;
  int memory_mib = 1536;
  std::vector<std::string> qemu_args;
  std::vector<std::string> kernel_cmdline;
  int timeout_s = 600;  // the whole boot and run
};

struct GuestOutput {
  std::map<std::string, std::string> sections;  // by name, in the guest's bytes
  int exit_status = -1;                         // run.sh's; -1 when it never ended
  std::string transcript;                       // everything on the second port
  std::string console_tail;                     // the kernel console's last lines
  std::string accel;                            // "kvm" or "tcg"
  double wall_seconds = 0;                      // boot to power-off
};

// Boots the guest and waits for it to power off (or the timeout: then
// DeadlineExceeded with the console's tail).
absl::StatusOr<GuestOutput> RunGuest(const LabImage& image, const GuestRun& run);

// Splits a transcript into its framed sections and exit status.
void ParseTranscript(const std::string& transcript, GuestOutput& out);

// The guest shell's single-quoted form of `word`.
std::string ShellQuote(const std::string& word);

}  // namespace blklab::kernel_lab

#endif  // BLKLAB_CLIENTS_KERNEL_LAB_VM_H_
