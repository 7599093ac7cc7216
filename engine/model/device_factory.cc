#include "engine/model/device_factory.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/model/drivers/null_blk.h"
#include "engine/model/drivers/nvme.h"
#include "engine/model/drivers/scsi/hba.h"
#include "engine/model/drivers/scsi/scsi_debug.h"
#include "engine/util/check.h"

namespace blklab::model {

namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// nr_devices null_blk instances, each its own tag set and queue, or all on
// the module's one set (shared_tags).
class NullBlkDevices final : public BlockDevice {
 public:
  RequestQueue* disk(int i) override { return devs_[i] ? &devs_[i]->queue() : nullptr; }
  std::unique_ptr<TagSet> shared_set_;  // declared first: the devices refer to it
  std::vector<std::unique_ptr<NullBlk>> devs_;
};

// One NVMe namespace on its controller.
class NvmeDevice final : public BlockDevice {
 public:
  explicit NvmeDevice(std::unique_ptr<Nvme> nvme) : nvme_(std::move(nvme)) {}
  RequestQueue* disk(int i) override { return &nvme_->queue(); }

 private:
  std::unique_ptr<Nvme> nvme_;
};

// A SCSI LLD instance with all its hosts and LUNs (Hba, ScsiDebug).
template <class Lld>
class ScsiDevices final : public BlockDevice {
 public:
  explicit ScsiDevices(std::unique_ptr<Lld> lld) : lld_(std::move(lld)) {}
  RequestQueue* disk(int i) override { return &lld_->queue(i); }

 private:
  std::unique_ptr<Lld> lld_;
};

ScsiDebugConfig ScsiDebugConfigFrom(const host::ScsiDebugSpec& sd, int64_t jiffy_ns, const host::Knobs& knobs) {
  // sdebug_driver_probe: can_queue = cmd_per_lun = max_queue (host_max_queue
  // when set, with host_tagset); 4.14 kept the template's DEF_CMD_PER_LUN,
  // 255. nr_hw_queues = submit_queues. A sysfs queue_depth write
  // (sdebug_change_qdepth) replaces each LUN's depth.
  ScsiDebugConfig c;
  const int depth = sd.host_max_queue > 0 ? sd.host_max_queue : sd.max_queue;
  constexpr uint32_t kDefCmdPerLun414 = 255;
  c.host.can_queue = static_cast<uint32_t>(depth);
  c.host.cmd_per_lun = sd.queue_depth > 0                          ? static_cast<uint32_t>(sd.queue_depth)
                       : knobs.scsi_debug_cmd_per_lun_max_queue ? static_cast<uint32_t>(depth)
                                                                : kDefCmdPerLun414;
  c.host.nr_hw_queues = static_cast<uint32_t>(sd.submit_queues);
  c.host.host_tagset = sd.host_max_queue > 0;
  c.hosts = sd.add_host;
  c.luns_per_host = sd.num_tgts * sd.max_luns;
  c.delay_ns = sd.ndelay > 0 ? sd.ndelay : int64_t{sd.delay} * jiffy_ns;
  c.every_nth = sd.every_nth;
  c.inject_host_busy = (sd.opts & kSdebugOptHostBusy) != 0;
  c.inject_rare_tsf = (sd.opts & kSdebugOptRareTsf) != 0;
  c.inject_timeout = (sd.opts & (kSdebugOptTimeout | kSdebugOptMacTimeout)) != 0;
  c.fake_rw = sd.fake_rw;
  return c;
}

NullBlkConfig NullBlkConfigFrom(const host::NullBlkSpec& nb) {
  NullBlkConfig cfg;
  cfg.submit_queues = static_cast<uint32_t>(nb.submit_queues);
  cfg.poll_queues = static_cast<uint32_t>(nb.poll_queues);
  cfg.hw_queue_depth = static_cast<uint32_t>(nb.hw_queue_depth);
  cfg.irqmode = nb.irqmode;
  cfg.completion_nsec = nb.completion_nsec;
  cfg.home_node = nb.home_node;
  cfg.blocking = nb.blocking;
  cfg.size_bytes = static_cast<uint64_t>(nb.gb) << 30;
  cfg.block_size = static_cast<uint32_t>(nb.bs);
  cfg.mbps = static_cast<uint64_t>(nb.mbps);
  cfg.shared_tag_bitmap = nb.shared_tag_bitmap;
  return cfg;
}

// nvme_setup_io_queues: one queue per CPU (or nr_io_queues) plus the poll
// queues, at most what the controller grants; poll queues come out of that
// and leave at least one interrupt queue.
NvmeConfig NvmeConfigFrom(const host::NvmeSpec& nv, int ncpus) {
  NvmeConfig cfg;
  const int64_t wanted = int64_t{nv.nr_io_queues > 0 ? nv.nr_io_queues : ncpus} + nv.poll_queues;
  const uint32_t granted = static_cast<uint32_t>(std::min<int64_t>(wanted, nv.max_queues));
  cfg.poll_queues = std::min<uint32_t>(static_cast<uint32_t>(nv.poll_queues), granted - 1);
  cfg.default_queues = granted - cfg.poll_queues;
  cfg.queue_depth = static_cast<uint32_t>(nv.io_queue_depth - 1);
  cfg.media.read_latency_ns = nv.latency_nsec;
  cfg.media.write_latency_ns = nv.write_latency_nsec > 0 ? nv.write_latency_nsec : nv.latency_nsec;
  cfg.media.max_iops = nv.max_iops;
  cfg.media.max_bytes_per_sec = nv.max_mbps * 1000000;
  cfg.media.parallelism = static_cast<uint32_t>(nv.parallelism);
  cfg.irq_coalesce_threshold = static_cast<uint32_t>(nv.irq_coalesce_threshold);
  cfg.irq_coalesce_time_ns = int64_t{nv.irq_coalesce_time_us} * 1000;
  return cfg;
}

HbaConfig HbaConfigFrom(const host::HbaSpec& hba) {
  HbaConfig hc;
  hc.lld = hba.lld;
  hc.host.can_queue = static_cast<uint32_t>(hba.can_queue);
  hc.host.nr_hw_queues = static_cast<uint32_t>(hba.nr_hw_queues);
  hc.host.host_tagset = hba.host_tagset;
  hc.host.cmd_per_lun = static_cast<uint32_t>(hba.cmd_per_lun);
  hc.firmware_nsec = hba.firmware_nsec;
  hc.max_iops = hba.max_iops;
  hc.drives = static_cast<uint32_t>(hba.drives);
  hc.drive_iops = hba.drive_iops;
  hc.drive_latency_nsec = hba.drive_latency_nsec;
  hc.stripe_bytes = static_cast<uint64_t>(hba.stripe_kb) << 10;
  hc.fw_queue_depth = static_cast<uint32_t>(hba.fw_queue_depth);
  hc.irq_poll_sleep_min_ns = static_cast<int64_t>(hba.irq_poll_sleep_min_us) * 1000;
  hc.irq_poll_sleep_max_ns = static_cast<int64_t>(hba.irq_poll_sleep_max_us) * 1000;
  return hc;
}

}  // namespace

DiskInfo DescribeDisks(const host::DeviceSpec& device) {
  return std::visit(
      Overloaded{
          [](const host::NullBlkSpec& nb) {
            return DiskInfo{static_cast<uint64_t>(nb.gb) << 30, nb.poll_queues > 0, 0, nb.shared_tags};
          },
          [](const host::NvmeSpec& nv) {
            // Poll queues exist when asked for and the controller grants more
            // than one queue (one always stays interrupt driven).
            return DiskInfo{static_cast<uint64_t>(nv.gb) << 30, nv.poll_queues > 0 && nv.max_queues > 1, false};
          },
          [](const host::ScsiDebugSpec& sd) {
            return DiskInfo{static_cast<uint64_t>(sd.dev_size_mb) << 20, false, sd.add_host};
          },
          [](const host::HbaSpec& hba) { return DiskInfo{static_cast<uint64_t>(hba.gb) << 30, false, 1}; },
      },
      device.driver);
}

absl::Status CheckModelled(const host::DeviceSpec& device, const host::Knobs& knobs, const std::string& path) {
  return std::visit(
      Overloaded{
          [&path](const host::NullBlkSpec& nb) -> absl::Status {
            if (nb.queue_mode != 2) {
              return absl::UnimplementedError(absl::StrCat(path, ".null_blk.queue_mode=", nb.queue_mode,
                                                           ": only blk-mq (2) is modelled"));
            }
            if (nb.memory_backed) {
              return absl::UnimplementedError(absl::StrCat(path, ".null_blk.memory_backed is not modelled"));
            }
            if (nb.use_per_node_hctx) {
              return absl::UnimplementedError(absl::StrCat(path, ".null_blk.use_per_node_hctx is not modelled"));
            }
            return absl::OkStatus();
          },
          [&path](const host::NvmeSpec& nv) -> absl::Status {
            if (nv.write_queues > 0) {
              return absl::UnimplementedError(absl::StrCat(
                  path, ".nvme.write_queues: separate read and write queue maps are not modelled yet"));
            }
            return absl::OkStatus();
          },
          [&path, &knobs](const host::ScsiDebugSpec& sd) -> absl::Status {
            if (sd.poll_queues > 0) {
              return absl::UnimplementedError(
                  absl::StrCat(path, ".scsi_debug.poll_queues: polled scsi_debug queues are not modelled yet"));
            }
            // Bits that only log are accepted, and ALL_TSF (it acts only
            // when a queue's slots run out, which its tags prevent), and the
            // timeout injections (scsi_timeout's abort and retry are
            // modelled); those that inject errors are refused; RARE_TSF only
            // where TASK SET FULL is requeued (DID_OK, before 5.17).
            constexpr int kLogOnly = kSdebugOptNoise | kSdebugOptQNoise | kSdebugOptNWce | kSdebugOptResetNoise |
                                     kSdebugOptNoCdbNoise | kSdebugOptAllTsf;
            if ((sd.opts & kSdebugOptRareTsf) != 0 && sd.every_nth != 0 && !knobs.scsi_debug_qfull_did_ok) {
              return absl::UnimplementedError(absl::StrCat(
                  path, ".scsi_debug.opts: SDEBUG_OPT_RARE_TSF (0x800) fails commands with DID_ABORT since 5.17, "
                  "which is not modelled; knobs.scsi_debug_qfull_did_ok: true models the earlier requeue"));
            }
            const int modelled = kLogOnly | kSdebugOptHostBusy | kSdebugOptRareTsf | kSdebugOptTimeout |
                                 kSdebugOptMacTimeout;
            const int unmodelled = sd.opts & ~modelled;
            if (unmodelled != 0) {
              return absl::UnimplementedError(absl::StrFormat(
                  "%s.scsi_debug.opts: bits 0x%x are not modelled (error and TASK SET FULL injection); "
                  "modelled: 0x%x (SDEBUG_OPT_HOST_BUSY), 0x%x / 0x%x (SDEBUG_OPT_TIMEOUT / MAC_TIMEOUT), "
                  "0x%x (RARE_TSF) and the logging bits 0x%x",
                  path, unmodelled, kSdebugOptHostBusy, kSdebugOptTimeout, kSdebugOptMacTimeout, kSdebugOptRareTsf,
                  kLogOnly));
            }
            return absl::OkStatus();
          },
          [](const host::HbaSpec&) -> absl::Status { return absl::OkStatus(); },
      },
      device.driver);
}

std::unique_ptr<BlockDevice> CreateBlockDevice(Kernel& kernel, const host::DeviceSpec& device,
                                               const DeviceBuild& build) {
  return std::visit(
      Overloaded{
          [&](const host::NullBlkSpec& nb) -> std::unique_ptr<BlockDevice> {
            auto out = std::make_unique<NullBlkDevices>();
            out->devs_.resize(build.disk_names.size());
            const NullBlkConfig cfg = NullBlkConfigFrom(nb);
            if (nb.shared_tags) {
              // null_init_tag_set(NULL, &tag_set): the module's set, every
              // device's queue on it.
              out->shared_set_ = std::make_unique<TagSet>(kernel, "null_blk", NullBlkTagSetConfig(cfg));
            }
            for (size_t i = 0; i < build.disk_names.size(); ++i) {
              if (!build.used[i]) continue;
              out->devs_[i] = std::make_unique<NullBlk>(kernel, build.disk_names[i], cfg, build.queues[i],
                                                        out->shared_set_.get());
            }
            return out;
          },
          [&](const host::NvmeSpec& nv) -> std::unique_ptr<BlockDevice> {
            return std::make_unique<NvmeDevice>(std::make_unique<Nvme>(
                kernel, build.disk_names[0], NvmeConfigFrom(nv, kernel.machine().num_cpus()), build.queues[0]));
          },
          [&](const host::ScsiDebugSpec& sd) -> std::unique_ptr<BlockDevice> {
            return std::make_unique<ScsiDevices<ScsiDebug>>(
                std::make_unique<ScsiDebug>(kernel, build.scsi_host_no, build.disk_names,
                                            ScsiDebugConfigFrom(sd, kernel.jiffy_ns(), kernel.knobs()), build.queues[build.first_used]));
          },
          [&](const host::HbaSpec& hba) -> std::unique_ptr<BlockDevice> {
            return std::make_unique<ScsiDevices<Hba>>(std::make_unique<Hba>(
                kernel, absl::StrCat("host", build.scsi_host_no), build.disk_names, HbaConfigFrom(hba),
                build.queues[build.first_used]));
          },
      },
      device.driver);
}

}  // namespace blklab::model
