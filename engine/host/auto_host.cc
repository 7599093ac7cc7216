#include "engine/host/auto_host.h"

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"

namespace blklab::host {
namespace {

enum class Kind { kNullBlk, kNvme, kScsiDisk, kStandIn, kFile };

struct Target {
  std::string name;  // the device's kernel name ("nvme0n1p2")
  std::string disk;  // the whole disk it belongs to ("nvme0n1")
  Kind kind = Kind::kNullBlk;
};

// Consumes a run of decimal digits at the front of `s`; false if none.
bool EatDigits(absl::string_view& s) {
  size_t n = 0;
  while (n < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[n]))) ++n;
  if (n == 0) return false;
  s.remove_prefix(n);
  return true;
}

bool EatLowerLetters(absl::string_view& s) {
  size_t n = 0;
  while (n < s.size() && s[n] >= 'a' && s[n] <= 'z') ++n;
  if (n == 0) return false;
  s.remove_prefix(n);
  return true;
}

// "nvme0n1" followed by nothing or "pN": the namespace's length, else 0.
size_t NvmeDiskLength(absl::string_view name, absl::string_view prefix) {
  absl::string_view s = name;
  if (!absl::ConsumePrefix(&s, prefix) || !EatDigits(s) || !absl::ConsumePrefix(&s, "n") || !EatDigits(s)) {
    return 0;
  }
  const size_t disk = name.size() - s.size();
  if (s.empty()) return disk;
  if (!absl::ConsumePrefix(&s, "p") || !EatDigits(s) || !s.empty()) return 0;
  return disk;
}

// Device names whose driver the kernel has and blklab does not model: the
// kind, for the refusal; nullptr for a name of no kind known here.
const char* KnownUnmodelledKind(absl::string_view name) {
  struct Prefix {
    const char* prefix;
    const char* kind;
  };
  static constexpr Prefix kKinds[] = {
      {"vd", "a virtio-blk disk"},       {"xvd", "a Xen virtual disk"}, {"dm-", "a device-mapper target"},
      {"mapper/", "a device-mapper target"}, {"md", "an md RAID array"}, {"loop", "a loop device"},
      {"nbd", "a network block device"}, {"rbd", "a Ceph RBD device"},  {"zram", "a zram device"},
      {"mmcblk", "an MMC/SD card"},      {"pmem", "a persistent-memory namespace"}, {"sr", "a SCSI CD-ROM"},
      {"ram", "a RAM disk"},             {"nvme", "an NVMe device that is not a namespace (nvmeXnY[pZ])"},
      {"sd", "a SCSI disk name that is not sdX[N]"}, {"nullb", "a null_blk name that is not nullbN"}, {"sg", "a SCSI generic character device"},
      {"null", "a memory character device (its I/O never reaches the block layer; ioengine=null is fio's "
               "counterpart)"},
      {"zero", "a memory character device (its I/O never reaches the block layer; ioengine=null is fio's "
               "counterpart)"},
      {"urandom", "a memory character device"}, {"random", "a memory character device"},
      {"mem", "a memory character device"},     {"disk/", "a udev symlink (name the device it points to)"},
  };
  for (const Prefix& k : kKinds) {
    if (absl::StartsWith(name, k.prefix)) return k.kind;
  }
  return nullptr;
}

bool ValidStandInName(absl::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

absl::StatusOr<Target> Classify(const std::string& target) {
  absl::string_view path = target;
  const bool dev = absl::ConsumePrefix(&path, "/dev/");
  const std::string name(path);
  auto refuse = [&target](absl::string_view why) {
    return absl::UnimplementedError(absl::StrCat("--host=auto: filename=", target, ": ", why));
  };
  absl::string_view s = path;
  if (absl::ConsumePrefix(&s, "nullb") && EatDigits(s) && s.empty()) return Target{name, name, Kind::kNullBlk};
  if (const size_t n = NvmeDiskLength(path, "nvme"); n > 0) {
    return Target{name, name.substr(0, n), Kind::kNvme};
  }
  if (const size_t n = NvmeDiskLength(path, "ng"); n > 0 && n == path.size()) {
    // The generic character device of namespace nvmeXnY (io_uring_cmd).
    const std::string ns = absl::StrCat("nvme", path.substr(2));
    return Target{ns, ns, Kind::kNvme};
  }
  s = path;
  if (absl::ConsumePrefix(&s, "sd") && EatLowerLetters(s)) {
    const size_t disk = path.size() - s.size();
    if (s.empty() || (EatDigits(s) && s.empty())) return Target{name, name.substr(0, disk), Kind::kScsiDisk};
  }
  if (dev) {
    if (const char* kind = KnownUnmodelledKind(path); kind != nullptr) {
      return refuse(absl::StrCat("not a kind of block device blklab models (nullbN, nvmeXnY[pZ], sdX[N]): ", kind,
                                 "; write a host spec (`blklab hosts show default` is a start)"));
    }
    // A name no kernel driver blklab knows of gives (fio's placeholder
    // /dev/XXX, a vendor driver's /dev/fioa): a stand-in NVMe namespace,
    // said in the spec and on stderr (AutoHostNotes).
    if (!ValidStandInName(path)) {
      return refuse("not a name blklab can give a device (1-32 characters of [A-Za-z0-9._-])");
    }
    return Target{name, name, Kind::kStandIn};
  }
  return Target{name, "", Kind::kFile};
}

}  // namespace

absl::StatusOr<std::string> AutoHostYaml(const std::vector<std::string>& targets,
                                         const std::vector<std::string>& existing) {
  std::vector<Target> devices;
  std::set<std::string> names;
  bool files = false;
  for (const std::string& t : targets) {
    absl::StatusOr<Target> d = Classify(t);
    if (!d.ok()) return d.status();
    if (d->kind == Kind::kFile) {
      files = true;
      continue;
    }
    if (!names.insert(d->name).second) continue;
    for (const Target& other : devices) {
      if (other.disk == d->disk) {
        return absl::UnimplementedError(absl::StrCat(
            "--host=auto: ", other.name, " and ", d->name, " are on one disk (", d->disk,
            "); each would get its own queue where the kernel shares the disk's: write a host spec with one "
            "device and let the jobs use offset= and size="));
      }
    }
    devices.push_back(*d);
  }
  // Regular files: an ext4 root filesystem on an NVMe namespace of its own.
  std::string root_device;
  if (files) {
    for (int k = 0; root_device.empty(); ++k) {
      const std::string n = absl::StrCat("nvme", k, "n1");
      bool taken = false;
      for (const Target& d : devices) taken |= d.disk == n;
      if (!taken) root_device = n;
    }
    devices.push_back(Target{root_device, root_device, Kind::kNvme});
  }
  if (devices.empty()) devices.push_back(Target{"nullb0", "nullb0", Kind::kNullBlk});

  // The description is one line of at most 200 bytes: the first names.
  std::vector<std::string> listed;
  for (const Target& d : devices) {
    if (listed.size() == 6 && devices.size() > 7) {
      listed.push_back(absl::StrCat("and ", devices.size() - 6, " more"));
      break;
    }
    listed.push_back(d.name);
  }
  std::string y = absl::StrCat(
      "# Built from the job's targets (--host=auto; `blklab hosts auto JOB` prints it):\n"
      "# the default host's 4 CPUs and one device per target, each with its driver's\n"
      "# and the kernel's defaults. The scheduler is the kernel's default for the\n"
      "# queue count (elevator_get_default: mq-deadline for one hardware queue,\n"
      "# none for more). Regular files are on an ext4 filesystem mounted at / on\n"
      "# an NVMe namespace of their own; relative names resolve under directory=,\n"
      "# else /. Edit it and pass it as --host=FILE to change anything.\n"
      "name: auto\n"
      "description: \"built from the job: ",
      absl::StrJoin(listed, ", "),
      "\"\n"
      "cpus: {count: 4, threads_per_core: 1}\n"
      "kernel: {hz: 1000}\n"
      "devices:\n");
  for (const Target& d : devices) {
    absl::StrAppend(&y, "  - name: ", d.name, "\n");
    switch (d.kind) {
      case Kind::kNullBlk:
        absl::StrAppend(&y,
                        "    # null_blk, every module parameter at its default: one submit\n"
                        "    # queue and one poll queue (two hardware queues), 64 tags,\n"
                        "    # irqmode=1 (softirq completion)\n"
                        "    null_blk: {}\n"
                        "    queue: {scheduler: none}\n");
        break;
      case Kind::kStandIn:
        absl::StrAppend(&y,
                        "    # no kernel driver blklab knows gives this name: a stand-in, the\n"
                        "    # NVMe namespace below [guess]; write the real device's driver\n"
                        "    # here when it is known\n");
        [[fallthrough]];
      case Kind::kNvme:
        absl::StrAppend(&y,
                        "    # an NVMe namespace: one I/O queue per CPU, 1023 tags each;\n"
                        "    # media 80 us reads, 800K IOPS, 3,500 MB/s [guess: TLC NAND class]\n"
                        "    nvme: {latency_nsec: 80000, max_iops: 800000, max_mbps: 3500}\n"
                        "    queue: {scheduler: none}\n");
        break;
      case Kind::kScsiDisk:
        absl::StrAppend(&y,
                        "    # a SCSI disk: one LUN behind a SAS/SATA host adapter with one\n"
                        "    # hardware queue and 32 commands per LUN (SATA NCQ); the drive\n"
                        "    # 80 us reads, 100K IOPS [guess: a SATA SSD]. The adapter is the\n"
                        "    # hba model (its firmware time and profile names are a RAID\n"
                        "    # controller's); ahci and libata are not modelled.\n"
                        "    hba: {nr_hw_queues: 1, host_tagset: false, can_queue: 32, cmd_per_lun: 32,\n"
                        "          drives: 1, drive_latency_nsec: 80000, drive_iops: 100000}\n"
                        "    queue: {scheduler: mq-deadline}\n");
        break;
      case Kind::kFile:  // regular files live on the root device, not in this list
        break;
    }
  }
  if (!root_device.empty()) {
    absl::StrAppend(&y, "filesystems:\n  - path: /\n    device: ", root_device, "\n    type: ext4\n");
    // Names a spec can list (the others stay size-less and are refused
    // with fio's message when the job runs).
    std::vector<std::string> listable;
    for (const std::string& f : existing) {
      bool ok = f.size() > 1 && f.size() <= 400 && f[0] == '/' && f.back() != '/' &&
                !absl::StrContains(f, "/./") && !absl::StrContains(f, "/../") && !absl::StrContains(f, "//");
      for (char c : f) ok = ok && c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
      if (ok && listable.size() < 1024) listable.push_back(f);
    }
    if (!listable.empty()) {
      absl::StrAppend(&y,
                      "    # The files the job names without size= or filesize= must exist\n"
                      "    # for fio to run it: here they do, 1 GiB each [guess]; give\n"
                      "    # their real sizes (MiB)\n"
                      "    files:\n");
      for (const std::string& f : listable) absl::StrAppend(&y, "      - {path: \"", f, "\", mib: 1024}\n");
    }
  }
  return y;
}

std::vector<std::string> AutoHostNotes(const std::vector<std::string>& targets) {
  std::vector<std::string> notes;
  std::set<std::string> seen;
  for (const std::string& t : targets) {
    absl::StatusOr<Target> d = Classify(t);
    if (!d.ok() || d->kind != Kind::kStandIn || !seen.insert(d->name).second) continue;
    notes.push_back(absl::StrCat("--host=auto: filename=", t,
                                 ": no kernel driver blklab knows gives this name; it is simulated as an NVMe "
                                 "namespace (`blklab hosts auto` prints the spec to edit)"));
  }
  return notes;
}

absl::StatusOr<HostSpec> AutoHost(const std::vector<std::string>& targets,
                                   const std::vector<std::string>& existing) {
  absl::StatusOr<std::string> yaml = AutoHostYaml(targets, existing);
  if (!yaml.ok()) return yaml.status();
  return ParseHostSpec(*yaml);
}

}  // namespace blklab::host
