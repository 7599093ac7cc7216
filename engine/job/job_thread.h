// engine/job/job_thread.h
//
// JobThread is one fio job clone running on a simulated CPU: fio's main loop
// (do_io: get an io_u, queue it, commit a batch, reap when the queue is
// full) driving one of the I/O engine models (io_engine.h: io_uring, libaio,
// the synchronous engines, fio's null engine) against a simulated request
// queue (docs/kernel-model.md §2.1, §3.8).
//
// User-space work is charged to `fio:*` functions (usr time), kernel work to
// kernel names (sys time). Statistics go to a stats::JobStatsCollector in
// virtual time: slat = prep -> end of the submitting syscall, clat = end of
// the submitting syscall -> reap, lat = slat + clat, as fio measures them.
//
// Logs: when the spec asks for write_bw_log / write_iops_log / write_lat_log
// / write_hist_log, the thread owns a stats::JobLogger attached to its
// collector (times in virtual ms since the stats start, `.N` = thread
// number); TakeLogFiles() hands the files over once the thread is done.
//
// Verify (fio's verify.c, backend.c do_verify, io_u.c check_get_verify):
// with verify= a write carries headers (DeviceContent records them on the
// device) and is logged until a verify read checks it - after verify_backlog
// written blocks while the job runs, and in the verify phase after the write
// phase (do_verify); reads of a read-only job are all checked. A check that
// fails prints fio's message, ends the job with error 84 (EILSEQ) as fio
// does. The checksums cost CPU per KiB from the cost table (fio_verify_*).
//
// The methods are split along fio's sources: job_thread.cc holds the
// constructor and do_io's loop (backend.c, io_u.c's get/queue/reap);
// job_verify.cc verify (verify.c, do_verify, the io_piece log; state in
// JobVerifyState, job_verify.h); job_iolog.cc the files and write_iolog
// (filesetup.c, iolog.c; JobIologState, job_iolog.h); job_rate.cc rate,
// flow and thinktime (io_u.c, flow.c; JobRateState, job_rate.h);
// job_report.cc the statistics, logs and messages it reports.
//
// Invariants: at most `iodepth` io_us exist; every issued I/O is reaped
//  before the thread ends (fio drains its queue).
// Thread-safety: thread-compatible; part of one simulation.
// Cost: no allocation per I/O; one coroutine frame per bio submission.
#ifndef BLKLAB_ENGINE_JOB_JOB_THREAD_H_
#define BLKLAB_ENGINE_JOB_JOB_THREAD_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/job/file_service.h"
#include "engine/job/io_engine.h"
#include "engine/job/job_iolog.h"
#include "engine/job/job_rate.h"
#include "engine/job/job_verify.h"
#include "engine/job/medium_content.h"
#include "engine/job/verify_content.h"
#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/sim/cpu.h"
#include "engine/stats/job_log.h"
#include "engine/stats/job_stats.h"
#include "engine/util/check.h"
#include "engine/workload/io_generator.h"
#include "engine/workload/job_spec.h"

namespace blklab::job {

// One fio flow (flow.c's struct fio_flow): the jobs with a non-zero flow=
// weight and the same flow_id. `counter` starts at 1 and counts the I/Os the
// flow's jobs have let through; `total_weight` sums the weights of the jobs
// that have not finished (fio adds a job's weight when it parses the job and
// takes weight and count back when it reaps the finished thread).
struct FioFlow {
  uint64_t counter = 1;
  uint64_t total_weight = 0;
};

// One file or device a clone works on (fio's struct fio_file).
struct JobFile {
  workload::ClonePlan plan;                // its region, in bytes of its disk
  model::RequestQueue* queue = nullptr;    // its disk (nullptr for ioengine=null)
  // The disk's verify headers when some job of the run verifies on it
  // (every writer updates them); nullptr otherwise.
  DeviceContent* content = nullptr;
  FileInode* inode = nullptr;              // a regular file's (nullptr: a device)
  model::AddressSpace* mapping = nullptr;  // buffered I/O: its mapping in the page cache
  // The disk's content as SCSI VERIFY compares it, when some sg job of the
  // run verifies there (every writer updates it); nullptr otherwise.
  MediumContent* medium = nullptr;
  uint64_t base_bytes = 0;                 // where it starts on its disk (0: a device)
  std::string name;                        // fio's name in messages ("/dev/nullb0")
};

struct JobThreadConfig {
  const workload::JobSpec* spec = nullptr;
  // The clone as a whole: its I/O limit, block sizes, and (region_bytes)
  // the bytes of all its files together.
  workload::ClonePlan plan;
  std::vector<JobFile> files;   // at least one, in fio's file order
  uint32_t thread_number = 1;   // fio's thread number (1-based)
  uint16_t blkcg = 0;           // the blkio cgroup its bios carry (0: root)
  int cpu = 0;                  // the CPU it starts on
  std::vector<int> cpus_allowed;  // its affinity; empty: pinned to `cpu`
  FioFlow* flow = nullptr;      // the job's flow (flow= non-zero), shared with its peers
  sim::SimTime start_at = 0;
  sim::SimTime ramp_end = 0;             // stats start here
  sim::SimTime end_at = sim::kSimTimeNever;  // runtime limit (time_based or runtime=)
  model::PageCache* page_cache = nullptr;  // buffered I/O (direct=0); nullptr: direct
  // What the job's writes hold (MediumContent::PatternId of buffer_pattern=);
  // none: random data, new with each write.
  std::optional<uint64_t> data_id;
  uint64_t seed = 0;      // the run's seed (experimental_verify replays the generator)
};

// fio's user-space work per IO, split between get_io_u (issue) and
// io_completed: its loop plus the clock reads and latency samples the job's
// gtod_reduce / disable_* options leave on (cost rows fio_*).
struct FioUserCosts {
  int64_t issue_ns = 0;
  int64_t complete_ns = 0;
  int64_t total() const { return issue_ns + complete_ns; }
};
FioUserCosts FioUserCostsFor(const host::CostTable& costs, const workload::JobSpec& spec);

class JobThread final : public model::BioOwner, public sim::EventHandler {
 public:
  JobThread(model::Kernel& kernel, const JobThreadConfig& config, FileService files);
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;

  void Start();
  // Starts at `at` instead of config().start_at (stonewall / wait_for).
  void StartAt(sim::SimTime at);
  // Called once, in simulated context, when the clone has finished.
  void set_on_done(std::function<void(JobThread*)> fn) { on_done_ = std::move(fn); }
  bool done() const { return done_; }
  sim::SimTime finished_at() const { return finished_at_; }
  sim::SimTime stats_started_at() const { return stats_started_at_; }
  const sim::Thread& thread() const { return *thread_; }
  // The CPU the clone's thread is on (it may move when it wakes).
  sim::Cpu& cpu() const { return thread_->on_cpu(); }
  const JobThreadConfig& config() const { return config_; }
  uint64_t ios_completed() const { return ios_completed_; }
  uint64_t ios_issued() const { return ios_issued_; }
  uint32_t in_flight() const { return ctx_.in_flight; }
  // True while fio's flow control holds the clone back (FlowHold).
  bool held_by_flow() const { return rate_.flow_held; }

  // The result; valid once done().
  const stats::JobResult& result() const { return result_; }
  // Running figures for interval snapshots.
  stats::JobStatsCollector& collector() { return collector_; }
  // The result as it stands at `now` (fio's --status-interval reports):
  // result() once done, an empty result before the stats started, else the
  // collector's running figures with the CPU usage so far. Non-destructive.
  stats::JobResult PeekResult(sim::SimTime now) const;
  // The clat histogram of direction `d` measured so far (the collector's
  // running one, result()'s once done; empty before the stats start). It
  // only grows while the thread runs. No copy.
  const stats::LatencyHistogram& clat_hist(stats::Dir d) const {
    const int i = static_cast<int>(d);
    return done_ ? result_.dirs[i].clat_hist : collector_.running().dirs[i].clat_hist;
  }

  // Completed IOs and bytes per direction since the thread started
  // (ramp_time included), for progress displays.
  const std::array<uint64_t, stats::kNumDirs>& dir_ios_completed() const { return dir_ios_; }
  const std::array<uint64_t, stats::kNumDirs>& dir_bytes_completed() const { return dir_bytes_; }
  // Virtual time this clone still needs as seen at `now` (fio's per-thread
  // ETA): the rest of runtime= for time-limited jobs, else extrapolated
  // from the bytes issued so far; 0 once done. Not-yet-started clones count
  // their start delay, ramp and runtime (or -1 when unknown: size-bound).
  int64_t EstimateRemainingNs(sim::SimTime now) const;
  // fio's run-state character (eta line): 'P' not started, '/' ramping,
  // 'R'/'r' read, 'W'/'w' write, 'D'/'d' trim, 'M'/'m' mixed (upper case
  // sequential, lower case random), '_' done.
  char RunStateChar(sim::SimTime now) const;

  // fio's error for the job (0, or 84 after a failed verify) and the lines
  // fio would have printed to stderr for it, in order (at most
  // kMaxMessages, then one line saying how many more).
  int error() const { return error_; }
  const std::vector<std::string>& messages() const { return messages_; }
  static constexpr size_t kMaxMessages = 100;

  // The log files (fio's names and line formats), in the order bw, iops,
  // lat, slat, clat, clat_hist; empty when the spec asks for none.
  // Valid once done(); leaves the logger empty.
  std::vector<stats::LogFile> TakeLogFiles();

  void BioEndio(sim::Cpu& cpu, model::Bio* bio, model::BlkStatus status) override;
  void OnEvent(uint32_t kind, uint64_t arg) override;  // timed wake-up (rate, thinktime)

 private:
  // --- do_io (job_thread.cc) ---
  sim::Task Main();
  sim::Task AsyncLoop();
  sim::Task SyncLoop();
  sim::Task Commit();                         // submit the queued io_us
  sim::Task Reap(uint32_t min, uint32_t max);
  std::pair<uint32_t, uint32_t> ReapWindow() const;  // wait_for_completions: (min, max) to reap
  bool TryReapFromRing(uint32_t min, uint32_t max);  // Reap without suspending, if possible
  sim::Task Quiesce();                        // io_u_quiesce: reap everything in flight
  bool SyncDue(const IoU* u) const;           // fsync= / fdatasync=: a sync follows this write
  // fsync(2) of file `file` (-1: each of the clone's files in turn), in the
  // sync statistics; `due`: the sync fsync= / fdatasync= asked for (an
  // fdatasync for the latter).
  sim::Task FileSync(int file = -1, bool due = false);
  sim::Task QueueAndMaybeReap(IoU* u);        // queue u; commit a full batch; reap a full queue
  void ReapCompleted(uint32_t max);
  bool Stopping();
  // get_io_u: the next I/O into u (false: the job has no more); StartIo
  // then counts it in flight.
  bool PrepareIo(IoU* u);
  // serialize_overlap: wait until no I/O in flight overlaps u's range.
  sim::Task WaitForOverlaps(IoU* u);
  bool OverlapsInFlight(const IoU& u) const;
  // The common tail of preparing an I/O whose direction, offset and length
  // are set: fio's accounting at get_io_u and td_io_queue.
  void StartIo(IoU* u);

  // --- rate, flow, thinktime (job_rate.cc) ---
  sim::Task SleepUntil(sim::SimTime t);       // usec_sleep: the CPU is free meanwhile
  sim::Task Throttle(IoU* u);                 // rate / rate_iops: wait for the IO's slot
  sim::Task ThinkTime(bool issued);           // thinktime after thinktime_blocks IOs
  sim::Task FlowHold();                       // flow_threshold_exceeded: wait for the flow's peers
  // fio's rate_ddir: the direction a mixed job issues next under rate caps.
  workload::Direction RateDirection(workload::Direction picked) const;

  // --- files and write_iolog (job_iolog.cc) ---
  FileService FreshFiles() const;  // the job's generators as at its start (td_fill_rand_seeds)
  // Points `u` at file `f` of the clone: its disk, inode, mapping and readahead state.
  void SetFile(IoU* u, uint32_t f);
  // invalidate=1 at a file's (re)open: every file's cached pages go.
  void InvalidateFiles();
  // A new loop re-opens the files: the old ones closed (CloseFiles),
  // unlink_each_loop deletes them, invalidate=1 drops their cached pages,
  // the new opens start fresh readahead states.
  void ReopenFiles();
  // td_io_open_file's posix_fadvise (fadvise_hint): file `f`'s readahead
  // state as a new open leaves it.
  void OpenRaState(size_t f);
  // The mmap engine's mappings are unmapped as their files close (fio's
  // close_file leaves them mapped until the process exits: the model
  // charges the zap at the close).
  void CloseFiles();
  // td_io_open_file for each file: a fresh readahead state.
  void OpenFiles();
  // init_iolog_write: with write_iolog, the log's version line and every
  // file added, its time origin now.
  void IologInit();
  // write_iolog (fio's log_file / log_io_u): a file's add, open (logged
  // at its first I/O, as fio opens it) and close (when its pass ends, or
  // at the job's end), and an I/O of `ddir` ("read", "write", "trim",
  // "sync", "datasync") at a file offset as it is queued. No effect
  // without write_iolog.
  void IologFile(size_t f, const char* act);
  void IologClose(size_t f);
  void IologIo(size_t f, const char* ddir, uint64_t offset, uint64_t bytes);
  // pre_read: each buffered file read into the page cache before the job
  // starts (pre_read_file: read(2) of the job's region in max read-bs
  // chunks), its time before the job's clock.
  sim::Task PreReadFiles();
  // unlink: a regular file deleted; its pages go without writeback (dirty
  // ones too) and what it held is forgotten (verify headers, VERIFY's
  // content): a later job finds it laid out anew.
  void UnlinkFiles();

  // --- verify (job_verify.cc): the written-block log (fio's io_hist_list /
  // io_hist_tree) and the checks ---
  void InitVerify();
  // A write being prepared: populate_verify_io_u's fill and checksums
  // (`bytes` long), then log_io_piece.
  void PopulateVerify(IoU* u, uint64_t bytes);
  void LogPiece(IoU* u);
  bool GetNextVerify(IoU* u);   // the oldest completed logged write as a verify read
  bool CheckGetVerify(IoU* u);  // verify_backlog's turn
  bool NextReplayedVerify(IoU* u);  // experimental_verify: the next replayed write
  void SetVerifyRead(IoU* u, uint32_t file, uint64_t offset, uint32_t len, uint16_t numberio);
  sim::Task VerifyPhase();      // do_verify: read back and check the logged writes
  void CompleteVerify(IoU* u);  // at reap: the device's headers, the checks
  void VerifyRead(IoU* u);
  // A reaped I/O on a disk whose content is kept: writes record what they
  // wrote, trims zeroes, an sg VERIFY compares (a miscompare fails the job
  // with EIO, as the CHECK CONDITION fails fio's SG_IO).
  void CompleteMedium(IoU* u, MediumContent& m);

  // --- statistics, logs, messages (job_report.cc) ---
  void Message(std::string line);
  void MaybeStartStats();
  void FinishStats();

  model::Kernel& kernel_;
  JobThreadConfig config_;
  const workload::JobSpec& spec_;
  FileService gen_;  // the clone's files and their generators
  std::unique_ptr<sim::Thread> thread_;
  stats::JobStatsCollector collector_;
  std::unique_ptr<stats::JobLogger> logger_;  // nullptr: no logs asked for
  stats::JobResult result_;
  std::array<uint64_t, stats::kNumDirs> dir_ios_{};
  std::array<uint64_t, stats::kNumDirs> dir_bytes_{};

  std::vector<IoU> io_us_;
  std::vector<IoU*> free_;
  std::vector<IoU*> queued_;        // prepared, not yet submitted
  std::vector<IoU*> submitting_;    // the batch of the Commit in progress
  IoContext ctx_;                   // what the engine sees (ring, in flight, waiting)
  std::unique_ptr<IoEngineModel> engine_;
  uint32_t batch_submit_ = 1;
  uint32_t batch_complete_min_ = 1;
  uint32_t batch_complete_max_ = 1;
  bool done_ = false;
  std::function<void(JobThread*)> on_done_;
  bool stopping_ = false;
  sim::SimTime finished_at_ = 0;
  sim::SimTime stats_started_at_ = -1;
  int64_t user_ns_at_start_ = 0;
  int64_t sys_ns_at_start_ = 0;
  uint64_t ctx_at_start_ = 0;
  uint64_t faults_at_start_ = 0;        // page faults on the mmap engine's mappings ...
  uint64_t major_faults_at_start_ = 0;  // ... and the major ones, when the stats started
  uint64_t bytes_issued_ = 0;
  uint64_t bytes_limit_ = 0;
  uint64_t loops_done_ = 0;             // sequential passes ended (ClonePlan::pass_end_ends_loop)
  bool counts_toward_limit_[workload::kNumDirections] = {};  // directions io_size counts
  uint64_t ios_issued_ = 0;
  uint64_t ios_completed_ = 0;
  JobRateState rate_;                      // rate, flow, thinktime (job_rate.h)
  bool terminated_ = false;                // fio's td->terminate: runtime over or an error
  bool last_was_sync_ = false;             // td->last_was_sync: the last I/O was a sync
  uint64_t write_issues_ = 0;              // td->io_issues[DDIR_WRITE]
  uint64_t all_bytes_issued_ = 0;          // do_io's bytes_issued (verify reads too)
  uint64_t total_bytes_ = 0;               // do_io's total_bytes (size, doubled with verify_backlog)
  JobVerifyState verify_;                  // verify= (job_verify.h)
  std::vector<model::FileRaState> ra_;  // per file: the open file's readahead state
  // ioengine=mmap, per file: the process's shared mapping of it (mapped at
  // its first I/O, unmapped when the file is closed); empty otherwise.
  std::vector<model::VmArea> vmas_;
  JobIologState iolog_;  // write_iolog (job_iolog.h)
  uint64_t last_offset_ = 0;  // the last I/O's file offset (a sync io_u's stale one)
  // fsync= / fdatasync=: N writes were issued; the next get_io_u is a sync
  // (fill_io_u's DDIR_SYNC), none if the job ends first.
  bool sync_pending_ = false;
  int error_ = 0;
  std::string verror_;  // fio's td_verror text for error_ (empty: the verify check's)
  std::vector<std::string> messages_;
  size_t messages_dropped_ = 0;

  sim::FnId fn_get_io_u_, fn_io_completed_, fn_usec_spin_, fn_flow_, fn_verify_fill_, fn_verify_check_,
      fn_io_sync_, fn_fsync_, fn_pread_file_;
  // fio's user-space work per IO (FioUserCosts): at get_io_u and at
  // io_completed, with the measurements the job's disable_* options keep.
  int64_t user_issue_ns_ = 0;
  int64_t user_complete_ns_ = 0;
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_JOB_THREAD_H_
