// server/store.h
//
// Store keeps blklabd's resources in one SQLite database (libsqlite3) in a
// data directory, so hosts, jobs and results survive a restart:
//
//   hosts(id PRIMARY KEY, spec BLOB = serialized v1::HostSpec, create_ms,
//         update_ms, etag)
//   jobs(seq INTEGER PRIMARY KEY (creation order), id UNIQUE, request_id
//        UNIQUE, host, preset, state, create_ms, job BLOB = serialized v1::Job
//        without its result, result_json TEXT, result_normal TEXT, result BLOB
//        = serialized v1::JobResult without the two texts)
//
// The database runs in WAL mode with synchronous=NORMAL; every write is one
// transaction, so a crash leaves each job either as it was before or after a
// write. Each write a client could notice losing (a job created, ended or
// deleted, a host written) is checkpointed by a background thread within
// kCheckpointIntervalMs, so the database file alone holds all but the last
// 100 ms of them: losing the -wal file after a crash loses at most those
// and running jobs' progress (they run again), and the next Open notices
// (opened_after_lost_wal). Statements are prepared once
// and reused, and reset when each call ends, so no read transaction outlives
// its call and SQLite's automatic checkpoints can restart the WAL
// (journal_size_limit then truncates it).
//
// Opening refuses, naming the file, a store that is empty (0 bytes), fails
// SQLite's quick_check, or is another program's database (application_id).
// A single job row whose blobs do not parse is quarantined, not fatal: reads
// return the job as FAILED with DATA_LOSS naming the damaged part, the row's
// state column becomes FAILED (so filters and restarts agree; it never runs
// again), and the blobs stay as they are for inspection.
//
// Invariants: a job row with state SUCCEEDED has its result columns set (the
//   state and the result are written in the same statement).
// Thread-safety: thread-safe; one connection serialised by an internal mutex,
//   shared with the checkpointer thread.
// Cost: each call is one or a few indexed SQLite statements; ListJobs and
//   ListHosts read one page.
#ifndef BLKLAB_SERVER_STORE_H_
#define BLKLAB_SERVER_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "blklab/v1/host.pb.h"
#include "blklab/v1/job.pb.h"

struct sqlite3;
struct sqlite3_stmt;

namespace blklab::server {

// A conjunction of ListJobs filter terms (empty members match all).
struct JobFilter {
  std::optional<v1::Job::State> state;
  std::optional<std::string> host;    // "hosts/x"
  std::optional<std::string> preset;
  // create_time comparisons, in ms since the epoch: op is one of <, <=, >, >=.
  std::vector<std::pair<std::string, int64_t>> create_ms;
};

// Parses the ListJobs filter grammar (service.proto, ListJobsRequest.filter).
absl::StatusOr<JobFilter> ParseJobFilter(const std::string& text);

class Store {
 public:
  // Opens (creating if needed) `data_dir`/blklab.db.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& data_dir);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Hosts. `host.name` is "hosts/{id}"; etag and times are stored as given.
  absl::Status CreateHost(const v1::Host& host);                  // AlreadyExists
  absl::StatusOr<v1::Host> GetHost(const std::string& id);        // NotFound
  absl::Status UpdateHost(const v1::Host& host);                  // NotFound
  absl::Status DeleteHost(const std::string& id);                 // NotFound
  // Hosts with id > `after_id`, ascending, at most `limit`.
  absl::StatusOr<std::vector<v1::Host>> ListHosts(const std::string& after_id, int limit);

  // Jobs. `job.name` is "jobs/{id}". InsertJob fails with AlreadyExists when
  // the id or the request id is taken.
  absl::Status InsertJob(const v1::Job& job);
  // Rewrites a job's row (state, times, error...); stores `job.result` in
  // the result columns when it is set. NotFound when the row is gone.
  absl::Status UpdateJob(const v1::Job& job);
  // With `full`, the result is included.
  absl::StatusOr<v1::Job> GetJob(const std::string& id, bool full);
  // The job created with `request_id` at or after `not_before_ms` (Unix
  // milliseconds), or none. A job created earlier releases the id (its
  // request_id is cleared) so that a new job may take it.
  absl::StatusOr<std::optional<v1::Job>> FindJobByRequestId(const std::string& request_id, int64_t not_before_ms);
  absl::Status DeleteJob(const std::string& id);
  struct JobPage {
    std::vector<v1::Job> jobs;
    int64_t last_seq = 0;  // seq of the last job returned
    std::vector<int64_t> seqs;  // each returned job's, in order
    bool more = false;
  };
  // Newest first: jobs with seq < `before_seq` (0: from the newest).
  absl::StatusOr<JobPage> ListJobs(const JobFilter& filter, int64_t before_seq, int limit, bool full);
  // Jobs in state QUEUED or RUNNING, oldest first (for re-queueing at start).
  absl::StatusOr<std::vector<v1::Job>> UnfinishedJobs();

  // Stored jobs per state (index scan). States without jobs are absent.
  absl::StatusOr<std::map<v1::Job::State, int64_t>> CountJobsByState();
  // Bytes of the database file and its write-ahead log.
  int64_t SizeBytes() const;

  // The longest a job's creation, end or deletion, or a host write, stays in
  // the write-ahead log only: after that the database file alone holds it.
  static constexpr int64_t kCheckpointIntervalMs = 100;

  // True when the previous server using this file did not close it (a
  // crash, a kill -9, a lost machine) and its -wal file was gone when this
  // one opened it: up to kCheckpointIntervalMs of acknowledged writes
  // before that stop may be lost. Detected with a mark in the database
  // header (PRAGMA user_version): set and checkpointed at open, cleared at
  // a clean close, when SQLite also removes the -wal file. blklabd logs it.
  // "May": another program that opened the file after the crash (the
  // sqlite3 shell, a backup) recovered the -wal and removed it, which looks
  // the same. Not detected: a power loss that keeps the -wal file but not
  // its unsynced tail (synchronous=NORMAL).
  bool opened_after_lost_wal() const { return opened_after_lost_wal_; }

 private:
  Store(sqlite3* db, std::string path) : path_(std::move(path)), db_(db) {}
  // PRAGMA user_version while a server has the file open.
  static constexpr int kOpenMark = 1;
  // Returns a cached prepared statement, reset and with bindings cleared.
  absl::StatusOr<sqlite3_stmt*> Prepare(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resets every statement a call left mid-result. A statement stopped on a
  // row keeps its read transaction open, and SQLite cannot restart the WAL
  // behind a reader: the WAL would grow without bound.
  void ResetStatements() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Holds mu_ for one call and resets the statements when it ends.
  class CallLock {
   public:
    explicit CallLock(Store* s) ABSL_EXCLUSIVE_LOCK_FUNCTION(s->mu_) : s_(s), lock_(&s->mu_) {}
    ~CallLock() ABSL_UNLOCK_FUNCTION() { s_->ResetStatements(); }
    CallLock(const CallLock&) = delete;
    CallLock& operator=(const CallLock&) = delete;

   private:
    Store* s_;
    absl::MutexLock lock_;
  };
  // A write whose loss would show (a job created, ended or deleted; a host
  // written) marks the store dirty; the checkpointer thread then copies the
  // WAL into the database file within kCheckpointIntervalMs (a PASSIVE
  // checkpoint: with this one connection and every statement reset, there
  // is no reader to wait for). Batched, so the checkpoint's fsyncs cost one
  // pause of the calls per interval at most, not one per write (checkpointing
  // in each call cut CreateJob from about 1,000/s to 400/s on a 2-CPU VM).
  void MarkDirty() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { dirty_ = true; }
  // The checkpointer's wake-up condition: nothing wakes it while the store
  // is idle.
  bool DirtyOrStopping() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return dirty_ || stopping_; }
  // The checkpointer thread's loop, until the destructor says stop.
  void CheckpointLoop();
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The first column of the first row of `sql` as text ("" when none).
  absl::StatusOr<std::string> QueryText(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<v1::Job> ReadJob(sqlite3_stmt* st, bool full) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks the rows ReadJob found unparsable FAILED in their state column.
  absl::Status FlushQuarantine() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::string path_;  // the database file
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, sqlite3_stmt*, std::less<>> statements_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> quarantine_ ABSL_GUARDED_BY(mu_);  // ids ReadJob found unparsable
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;     // a write since the last checkpoint
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // the destructor runs
  std::thread checkpointer_;
  bool opened_after_lost_wal_ = false;
  bool mark_set_ = false;  // this store set the open mark (Open succeeded)
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_STORE_H_
