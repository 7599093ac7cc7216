// engine/model/drivers/scsi/scsi_debug.h
//
// ScsiDebug models drivers/scsi/scsi_debug.c (v6.x; docs/kernel-model.md §3.6)
// as a low-level driver behind the SCSI mid-layer (scsi_host.h): `add_host`
// Scsi_Hosts, each with num_tgts x max_luns LUNs (target 7, the host's own
// id, is skipped, which changes no name), one blk-mq tag set per host of
// `max_queue` tags per hw queue, or `host_max_queue` shared host-wide
// (host_tagset), `submit_queues` hw queues, and cmd_per_lun = can_queue, so a
// LUN's queue depth (its SCSI budget) is max_queue.
//
//   * ->queuecommand (scsi_debug_queuecommand): sdebug_cmnd_count counts
//     every attempt; with every_nth and SDEBUG_OPT_HOST_BUSY the n-th
//     answers SCSI_MLQUEUE_HOST_BUSY (fake_host_busy). A READ or WRITE
//     copies its data to or from the shared ram store under the store's
//     rwlock (read_lock/read_unlock: two atomics on one line every CPU
//     shares), unless fake_rw. Then schedule_resp: with delay = 0 and
//     ndelay = 0 scsi_done runs inline, in the submitter's scsi_queue_rq;
//     otherwise a pinned hrtimer on the submitting CPU fires after
//     ndelay ns (or delay jiffies) and its callback (hardirq) calls
//     scsi_done. (6.1 to 6.6.9 complete every ndelay below 1 ms inline, a
//     bug fixed in 6918141d815a; the model times them as intended.)
//   * the busy answer goes through the mid-layer (host_blocked, starved
//     list, BLK_STS_RESOURCE);
//   * with every_nth and SDEBUG_OPT_RARE_TSF, a deferred command that finds
//     queue_depth - 1 others of its LUN deferred answers TASK SET FULL on
//     every n-th such occasion (sdebug_a_tsf); before 5.17 (knob
//     scsi_debug_qfull_did_ok) with DID_OK, so the mid-layer blocks the LUN
//     and requeues the command (scsi_host.h).
//
// Not modelled (refused by name in device_factory.cc): poll_queues, the
// opts bits that inject errors or timeouts, and RARE_TSF since 5.17 (v6.x
// fails such a command with DID_ABORT, which blklab cannot yet report).
// ALL_TSF acts only when a queue's slots run out, which its tags prevent.
//
// Invariants: every command accepted by queuecommand completes exactly once.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: CPU prices from the cost table (sdebug_queuecommand,
//  sdebug_copy_per_kib, sdebug_q_cmd_complete, hrtimer_arm, hrtimer_fire);
//  one simulator event per deferred command, none for inline ones.
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_DEBUG_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_DEBUG_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/drivers/scsi/scsi_host.h"
#include "engine/model/kernel.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/timer.h"

namespace blklab::model {

// SDEBUG_OPT_* bits (drivers/scsi/scsi_debug.c).
inline constexpr int kSdebugOptNoise = 0x1;
inline constexpr int kSdebugOptTimeout = 0x4;
inline constexpr int kSdebugOptMacTimeout = 0x80;
inline constexpr int kSdebugOptQNoise = 0x200;
inline constexpr int kSdebugOptAllTsf = 0x400;
inline constexpr int kSdebugOptRareTsf = 0x800;
inline constexpr int kSdebugOptNWce = 0x1000;
inline constexpr int kSdebugOptResetNoise = 0x2000;
inline constexpr int kSdebugOptNoCdbNoise = 0x4000;
inline constexpr int kSdebugOptHostBusy = 0x8000;

struct ScsiDebugConfig {
  ScsiHostConfig host;       // per Scsi_Host
  int hosts = 1;             // add_host
  int luns_per_host = 1;     // num_tgts x max_luns
  int64_t delay_ns = 0;      // ndelay, or delay jiffies in ns; 0 = inline
  int every_nth = 0;
  bool inject_host_busy = false;  // opts & SDEBUG_OPT_HOST_BUSY
  bool inject_rare_tsf = false;   // opts & SDEBUG_OPT_RARE_TSF
  bool inject_timeout = false;    // opts & (SDEBUG_OPT_TIMEOUT | SDEBUG_OPT_MAC_TIMEOUT)
  bool fake_rw = false;
};

class ScsiDebug final : public ScsiLld {
 public:
  // `lun_names`: hosts x luns_per_host names, host by host; the hosts'
  // tag sets are "host<first_host_no + h>".
  ScsiDebug(Kernel& kernel, int first_host_no, const std::vector<std::string>& lun_names,
            const ScsiDebugConfig& config, const QueueConfig& queue);
  ScsiDebug(const ScsiDebug&) = delete;
  ScsiDebug& operator=(const ScsiDebug&) = delete;

  RequestQueue& queue(int lun);
  ScsiHost& host(int h) { return *hosts_[static_cast<size_t>(h)]; }
  uint64_t commands() const { return cmnd_count_; }

  ScsiMlqueue QueueCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) override;
  // scsi_debug_abort: stops the command's deferred response if it has one;
  // SUCCESS either way.
  ScsiEhResult AbortCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) override;
  const char* abort_handler() const override { return "scsi_debug_abort"; }
  uint64_t aborts() const { return num_aborts_; }

 private:
  // sdebug_q_cmd_hrt_complete: the deferred response (hardirq).
  class ResponseIrq final : public sim::IrqHandler {
   public:
    explicit ResponseIrq(ScsiDebug* sd) : sd_(sd) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;

   private:
    ScsiDebug* sd_;
  };
  // The hrtimer slot of a command: one per tag of its host's tag set.
  sim::HrTimer& TimerFor(ScsiDevice& sdev, const Request* rq);

  Kernel& kernel_;
  ScsiDebugConfig config_;
  std::vector<std::unique_ptr<ScsiHost>> hosts_;
  ResponseIrq response_irq_;
  std::vector<std::vector<sim::HrTimer>> timers_;  // per host: (hw queue, tag) or (tag)
  uint64_t num_aborts_ = 0;
  uint64_t cmnd_count_ = 0;                        // sdebug_cmnd_count
  uint64_t a_tsf_ = 0;                             // sdebug_a_tsf
  std::map<const ScsiDevice*, uint32_t> num_in_q_;  // devip->num_in_q: deferred responses
  sim::CacheLine macc_lck_line_;                   // the ram store's rwlock
  sim::FnId fn_queuecommand_, fn_device_access_, fn_complete_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_DEBUG_H_
