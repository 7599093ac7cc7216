#include "server/comparison_manager.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "compare/plot.h"
#include "engine/host/presets.h"
#include "engine/util/status_macros.h"
#include "server/comparison_fleet_internal.h"
#include "server/convert.h"
#include "server/log.h"
#include "server/proto_time.h"
#include "server/resource_name.h"
#include "server/rpc.h"

namespace blklab::server {

namespace {

constexpr char kCollection[] = "comparisons";

absl::Status CheckBundle(const v1::ComparisonBundle& b, const ComparisonConfig& config) {
  if (b.args().empty()) return absl::InvalidArgumentError("bundle.args: empty (a spec file or -- and fio options)");
  if (b.files_size() > config.max_bundle_files) {
    return absl::ResourceExhaustedError(
        absl::StrCat("bundle.files: ", b.files_size(), " files, at most ", config.max_bundle_files));
  }
  const int64_t bytes = static_cast<int64_t>(BundleBytes(b));
  if (bytes > config.max_bundle_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("bundle: ", bytes, " bytes of arguments, files and variables, at most ",
                                                     config.max_bundle_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CellError(absl::Status s) {
  s.SetPayload(kCellErrorPayload, absl::Cord("1"));
  return s;
}

bool IsCellError(const absl::Status& s) { return s.GetPayload(kCellErrorPayload).has_value(); }

ComparisonManager::ComparisonManager(ComparisonConfig config)
    : config_(std::move(config)), local_workers_(config_.jobs != nullptr ? config_.local_workers : 0) {
  local_free_ = local_workers_;
  if (!config_.fleet.empty()) {
    const std::string target = comparison_internal::FleetTarget(config_.fleet).first;
    grpc::ChannelArguments args;
    args.SetLoadBalancingPolicyName("round_robin");
    // A connection lost without a reset (a lost node) is noticed in under a
    // minute, not after TCP's timeout; blklabd accepts these pings. (A
    // server that keeps its connection but stops answering is the silence
    // watch's: RunCellOnFleet.)
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kFleetKeepaliveMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    std::shared_ptr<grpc::ChannelCredentials> creds =
        config_.tls_ca_pem.empty()
            ? grpc::InsecureChannelCredentials()
            : grpc::SslCredentials(grpc::SslCredentialsOptions{config_.tls_ca_pem, "", ""});
    fleet_channel_ = grpc::CreateCustomChannel(target, creds, args);
    fleet_stub_ = v1::ComparisonService::NewStub(fleet_channel_);
    // Connect now, so the first comparison finds every server ready
    // (round_robin picks among the ready ones only).
    fleet_channel_->GetState(/*try_to_connect=*/true);
  }
}

void ComparisonManager::Shutdown() {
  shutdown_.store(true);
  absl::MutexLock lock(&mu_);
  for (auto& [name, e] : comparisons_) {
    e->cancel.store(true);
    for (grpc::ClientContext* c : e->fleet_calls) c->TryCancel();
  }
  changed_.SignalAll();
}

ComparisonManager::~ComparisonManager() {
  shutdown_.store(true);
  std::map<std::string, std::unique_ptr<Entry>> all;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [name, e] : comparisons_) {
      e->cancel.store(true);
      for (grpc::ClientContext* c : e->fleet_calls) c->TryCancel();
    }
    changed_.SignalAll();
    all.swap(comparisons_);
  }
  for (auto& [name, e] : all) {
    for (std::thread& t : e->threads) t.join();
  }
}

bool ComparisonManager::AcquireLocal(const std::atomic<bool>* cancel) {
  absl::MutexLock lock(&local_mu_);
  while (!local_mu_.AwaitWithTimeout(absl::Condition(+[](int* free) { return *free > 0; }, &local_free_),
                                     absl::Milliseconds(50))) {
    if ((cancel != nullptr && cancel->load()) || shutdown_.load()) return false;
  }
  if ((cancel != nullptr && cancel->load()) || shutdown_.load()) return false;
  --local_free_;
  return true;
}

void ComparisonManager::ReleaseLocal() {
  absl::MutexLock lock(&local_mu_);
  ++local_free_;
}

absl::StatusOr<v1::Comparison> ComparisonManager::Create(const v1::ComparisonBundle& bundle, const std::string& id) {
  if (local_workers_ <= 0 && !fleet_stub_) {
    return absl::FailedPreconditionError("this server runs no comparisons (--compare_workers=0 and no --fleet)");
  }
  if (!id.empty()) {
    if (!IsValidResourceId(id)) return absl::InvalidArgumentError("comparison_id: expected [a-z0-9][a-z0-9-]{0,62}");
  }
  if (absl::Status s = CheckBundle(bundle, config_); !s.ok()) return s;
  auto e = std::make_unique<Entry>();
  e->bundle = bundle;
  e->inputs = BundleInputs(&e->bundle);
  absl::StatusOr<compare::Comparison> parsed = ParseComparisonBundle(e->bundle, e->inputs);
  if (!parsed.ok()) return parsed.status();
  // What would fail cell by cell (an unknown fio option, a matrix value its
  // field refuses, a variant's or axis's host setting beyond this server's
  // limits) is refused now, naming the variant or the axis.
  if (absl::Status s = compare::CheckSettings(*parsed, e->inputs, config_.limits); !s.ok()) return s;
  e->comparison = *std::move(parsed);
  e->results.cells = compare::Cells(e->comparison);
  const size_t n = e->results.cells.size();
  e->results.results.resize(n);
  e->cells.resize(n);
  e->fleet_attempts.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    e->cells[i].set_label(compare::CellLabel(e->comparison, e->results.cells[i]));
    e->cells[i].set_state(v1::ComparisonCell::PENDING);
    e->pending.push_back(static_cast<int>(i));
  }
  e->create_time = absl::Now();
  // The fleet as it resolves now (a scaled StatefulSet adds addresses).
  const int fleet_size = fleet_stub_ ? comparison_internal::FleetTarget(config_.fleet).second : 0;
  v1::Comparison out;
  std::vector<std::unique_ptr<Entry>> forgotten;  // joined outside the lock
  {
    absl::MutexLock lock(&mu_);
    e->name = absl::StrCat(kCollection, "/", id.empty() ? RandomHex(8) : id);
    if (comparisons_.count(e->name) != 0) return absl::AlreadyExistsError(e->name + " exists");
    // Room: forget the oldest finished comparisons.
    while (static_cast<int>(comparisons_.size()) >= config_.max_comparisons) {
      auto oldest = comparisons_.end();
      for (auto it = comparisons_.begin(); it != comparisons_.end(); ++it) {
        if (it->second->state == v1::Comparison::RUNNING) continue;
        if (oldest == comparisons_.end() || it->second->seq < oldest->second->seq) oldest = it;
      }
      if (oldest == comparisons_.end()) {
        return absl::ResourceExhaustedError(
            absl::StrCat(comparisons_.size(), " comparisons running: at most ", config_.max_comparisons));
      }
      forgotten.push_back(std::move(oldest->second));
      comparisons_.erase(oldest);
    }
    e->seq = next_seq_++;
    Entry* raw = e.get();
    const int local = std::min<int>(local_workers_, static_cast<int>(n));
    const int remote = fleet_stub_ ? std::min<int>(fleet_size * config_.cells_per_server, static_cast<int>(n)) : 0;
    for (int t = 0; t < local; ++t) raw->threads.emplace_back([this, raw] { Worker(raw, false); });
    for (int t = 0; t < remote; ++t) raw->threads.emplace_back([this, raw] { Worker(raw, true); });
    out = ToProto(*raw, true, false);
    comparisons_[raw->name] = std::move(e);
  }
  for (auto& f : forgotten) {
    for (std::thread& t : f->threads) t.join();
  }
  Log("info", "comparison_created", {{"comparison", out.name()}, {"cells", absl::StrCat(n)}});
  return out;
}

int ComparisonManager::TakeCell(Entry* e, bool fleet, bool wait, int* attempt, int64_t* version) {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (e->cancel.load() || e->state != v1::Comparison::RUNNING) return kNoMoreCells;
    for (auto it = e->pending.begin(); it != e->pending.end(); ++it) {
      const int i = *it;
      if (fleet && local_workers_ > 0 && e->fleet_attempts[static_cast<size_t>(i)] >= kMaxFleetAttempts) {
        continue;
      }
      e->pending.erase(it);
      v1::ComparisonCell& cell = e->cells[static_cast<size_t>(i)];
      cell.set_state(v1::ComparisonCell::RUNNING);
      cell.set_server(fleet ? config_.fleet : "local");
      cell.clear_job();  // named once the new attempt is a job
      cell.set_attempts(cell.attempts() + 1);
      *attempt = cell.attempts();
      ++e->running;
      ++e->version;
      changed_.SignalAll();
      return i;
    }
    // Nothing this worker may take: done when nothing runs either (no
    // failed fleet call can put a cell back), else wait for a change.
    if (e->running == 0) return kNoMoreCells;
    if (!wait) {
      *version = e->version;
      return kNoCellNow;
    }
    changed_.Wait(&mu_);
  }
}

void ComparisonManager::AwaitChange(Entry* e, int64_t version) {
  absl::MutexLock lock(&mu_);
  while (e->version == version && !e->cancel.load()) changed_.Wait(&mu_);
}

void ComparisonManager::CellDone(Entry* e, int index, absl::StatusOr<compare::CellResult> r, bool retry) {
  absl::MutexLock lock(&mu_);
  --e->running;
  ++e->version;
  changed_.SignalAll();
  v1::ComparisonCell& cell = e->cells[static_cast<size_t>(index)];
  if (e->state != v1::Comparison::RUNNING) {
    cell.set_state(v1::ComparisonCell::PENDING);
    return;
  }
  if (retry) {
    cell.set_state(v1::ComparisonCell::PENDING);
    cell.set_error(std::string(r.status().message()));
    e->pending.push_front(index);
    return;
  }
  if (!r.ok()) {
    cell.set_state(v1::ComparisonCell::FAILED);
    cell.set_error(std::string(r.status().message()));
    e->state = r.status().code() == absl::StatusCode::kCancelled ? v1::Comparison::CANCELLED : v1::Comparison::FAILED;
    e->error = absl::StrCat(cell.label(), ": ", r.status().message());
    e->cancel.store(true);
    for (grpc::ClientContext* c : e->fleet_calls) c->TryCancel();
    Finish(e);
    return;
  }
  cell.set_state(v1::ComparisonCell::DONE);
  cell.clear_error();
  cell.set_iops(r->iops);
  cell.set_stalled(r->stalled);
  e->results.results[static_cast<size_t>(index)] = *std::move(r);
  ++e->done;
  if (e->done == static_cast<int>(e->cells.size())) {
    compare::Summarize(e->comparison, e->results);
    e->state = v1::Comparison::SUCCEEDED;
    Finish(e);
  }
}

void ComparisonManager::Finish(Entry* e) {
  e->end_time = absl::Now();
  ++e->version;
  changed_.SignalAll();
  Log("info", "comparison_finished", {{"comparison", e->name},
                                  {"state", v1::Comparison::State_Name(e->state)},
                                  {"error", e->error}});
}

void ComparisonManager::Worker(Entry* e, bool fleet) {
  while (true) {
    // A local worker takes a cell only once it holds one of the server's
    // workers, and holds none while it waits for cells to come back.
    if (!fleet && !AcquireLocal(&e->cancel)) return;
    int attempt = 0;
    int64_t version = 0;
    const int i = TakeCell(e, fleet, /*wait=*/fleet, &attempt, &version);
    if (i == kNoCellNow) {
      ReleaseLocal();
      AwaitChange(e, version);
      continue;
    }
    if (i == kNoMoreCells) {
      if (!fleet) ReleaseLocal();
      return;
    }
    if (!fleet) {
      absl::StatusOr<compare::CellResult> r =
          RunCellJob(e->bundle, e->comparison, i, e->name, &e->cancel, [this, e, i](const std::string& job) {
            absl::MutexLock lock(&mu_);
            e->cells[static_cast<size_t>(i)].set_job(job);
            ++e->version;
            changed_.SignalAll();
          });
      ReleaseLocal();
      // A full job queue or a server going down is not the cell's fault:
      // the cell waits for the next free worker (here or on the fleet).
      const bool retry = !r.ok() && !IsCellError(r.status()) && !e->cancel.load() && !shutdown_.load() &&
                         (absl::IsUnavailable(r.status()) || absl::IsResourceExhausted(r.status()));
      CellDone(e, i, std::move(r), retry);
      // The queue is full (or closing): wait a while before the next try,
      // here or by another worker (the cell shows the error meanwhile).
      for (int step = 0; retry && step < 10 && !e->cancel.load() && !shutdown_.load(); ++step) {
        absl::SleepFor(absl::Milliseconds(50));
      }
      continue;
    }
    std::string server;
    bool server_fault = false;
    absl::StatusOr<compare::CellResult> r = RunCellOnFleet(e, i, &server, &server_fault);
    if (r.ok()) {
      CellDone(e, i, std::move(r), false);
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      ++e->fleet_attempts[static_cast<size_t>(i)];
    }
    // Without local workers a cell that failed on every attempt fails.
    bool retry = server_fault && !e->cancel.load();
    if (local_workers_ <= 0 && attempt >= kMaxFleetAttempts) retry = false;
    const absl::Status error(r.status().code(), absl::StrCat("fleet server ", server, ": ", r.status().message()));
    if (retry) {
      Log("info", "comparison_cell_retry", {{"comparison", e->name},
                                        {"cell", absl::StrCat(i)},
                                        {"server", server},
                                        {"code", absl::StrCat(static_cast<int>(error.code()))},
                                        {"error", std::string(r.status().message())}});
    }
    CellDone(e, i, error, retry);
    if (retry) {
      // Let the balancer see the failure before the next call.
      absl::MutexLock lock(&mu_);
      changed_.WaitWithTimeout(&mu_, absl::Milliseconds(200));
    }
  }
}

absl::StatusOr<compare::CellResult> ComparisonManager::RunCellHere(
    const v1::ComparisonBundle& bundle, int index, const std::string& comparison, const std::atomic<bool>* cancel,
    const std::function<void(const std::string&)>& on_job) {
  if (local_workers_ <= 0) {
    return absl::UnavailableError("this server runs no comparison cells (--compare_workers=0)");
  }
  if (absl::Status s = CheckBundle(bundle, config_); !s.ok()) return CellError(s);
  const compare::Inputs inputs = BundleInputs(&bundle);
  absl::StatusOr<compare::Comparison> c = ParseComparisonBundle(bundle, inputs);
  if (!c.ok()) return CellError(c.status());
  const size_t n = compare::Cells(*c).size();
  if (index < 0 || static_cast<size_t>(index) >= n) {
    return CellError(absl::InvalidArgumentError(absl::StrCat("cell: ", index, " out of range [0, ", n, ")")));
  }
  {
    absl::MutexLock lock(&local_mu_);
    if (local_waiting_ >= kMaxWaitingCells) {
      return absl::ResourceExhaustedError(
          absl::StrCat(local_waiting_, " cells wait for this server's comparison workers: try another server"));
    }
    ++local_waiting_;
  }
  const bool acquired = AcquireLocal(cancel);
  {
    absl::MutexLock lock(&local_mu_);
    --local_waiting_;
  }
  if (!acquired) return absl::CancelledError("cancelled while waiting for a comparison worker");
  absl::StatusOr<compare::CellResult> r = RunCellJob(bundle, *c, index, comparison, cancel, on_job);
  ReleaseLocal();
  return r;
}

namespace {

// Waits for a cell job's end: its final snapshot (the job as it ended), or
// the stream's close when the server shuts down.
class CellJobWaiter final : public WatchSink {
 public:
  void Push(const v1::Snapshot& snapshot) override {
    if (!snapshot.has_final_job()) return;
    absl::MutexLock lock(&mu_);
    if (!end_.has_value()) end_ = snapshot.final_job();
  }
  void Close(const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    if (!end_.has_value()) end_ = status.ok() ? absl::UnavailableError("the job's watch ended") : status;
  }
  // The final job, once there is one (false on timeout).
  bool Wait(absl::Duration timeout, absl::StatusOr<v1::Job>* out) {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(
                                  +[](std::optional<absl::StatusOr<v1::Job>>* end) { return end->has_value(); },
                                  &end_),
                              timeout)) {
      return false;
    }
    *out = **std::move(end_);
    return true;
  }

 private:
  absl::Mutex mu_;
  std::optional<absl::StatusOr<v1::Job>> end_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<compare::CellResult> ComparisonManager::RunCellJob(
    const v1::ComparisonBundle& bundle, const compare::Comparison& c, int index, const std::string& comparison,
    const std::atomic<bool>* cancel, const std::function<void(const std::string&)>& on_job) {
  if (config_.jobs == nullptr) return absl::FailedPreconditionError("this server has no job queue for cells");
  const compare::Cell cell = compare::Cells(c)[static_cast<size_t>(index)];
  // The job's host: the cell's, as it will run (the job is prepared again
  // from the bundle by the runner, within the server's per-job limits).
  absl::StatusOr<RunRequest> prepared = compare::PrepareCell(c, cell, BundleInputs(&bundle), config_.limits);
  if (!prepared.ok()) return CellError(prepared.status());
  auto definition = std::make_shared<v1::Job>();
  if (absl::Status s = HostSpecToProto(prepared->host, definition->mutable_host_spec()); !s.ok()) {
    return CellError(s);
  }
  *definition->mutable_resolved_host() = definition->host_spec();
  v1::ComparisonCellWork* work = definition->mutable_comparison_cell();
  work->set_comparison(comparison);
  work->set_cell(index);
  work->set_label(compare::CellLabel(c, cell));
  *work->mutable_bundle() = bundle;
  definition->set_seed(c.seed);
  definition->set_collect_stacks(c.collect_stacks);
  JobRecord record;
  record.id = "j-" + RandomHex(8);
  record.definition = std::move(definition);
  record.state = JobState::kQueued;
  record.create_time = absl::Now();
  const std::string id = record.id;
  const std::string job_name = record.name();
  if (absl::Status s = config_.jobs->Submit(std::move(record)); !s.ok()) return s;
  Log("info", "comparison_cell_job", {{"comparison", comparison}, {"cell", absl::StrCat(index)}, {"job", job_name}});
  if (on_job) on_job(job_name);
  auto waiter = std::make_shared<CellJobWaiter>();
  if (absl::Status s = config_.jobs->Watch(id, waiter); !s.ok()) return s;
  absl::StatusOr<v1::Job> end = absl::UnknownError("no end");
  bool cancelled = false;
  while (!waiter->Wait(absl::Milliseconds(50), &end)) {
    if (!cancelled && ((cancel != nullptr && cancel->load()) || shutdown_.load())) {
      cancelled = true;
      (void)config_.jobs->Cancel(id);
    }
  }
  config_.jobs->Unwatch(id, waiter.get());
  // The server shuts down (the job ends CANCELLED at the next start; a
  // fleet caller runs the cell elsewhere).
  if (!end.ok()) return end.status();
  if (end->result().has_comparison_cell()) {
    // Figures no run gives (NaN, say) fail the cell here, not the outputs
    // that print them later.
    absl::StatusOr<compare::CellResult> r = comparison_internal::CheckedCellResult(end->result().comparison_cell());
    if (!r.ok()) return CellError(absl::Status(r.status().code(), absl::StrCat(job_name, ": ", r.status().message())));
    return r;
  }
  const absl::Status error(static_cast<absl::StatusCode>(end->error().code()),
                           absl::StrCat(job_name, ": ", end->error().message()));
  switch (end->state()) {
    case v1::Job::CANCELLED:
      return absl::CancelledError(absl::StrCat(job_name, " was cancelled"));
    case v1::Job::FAILED:
      return CellError(error);
    default:
      return absl::InternalError(absl::StrCat(job_name, " ended ", v1::Job::State_Name(end->state()),
                                              " without the cell's figures"));
  }
}

v1::Comparison ComparisonManager::ToProto(const Entry& e, bool with_cells, bool full) const {
  v1::Comparison out;
  out.set_name(e.name);
  out.set_state(e.state);
  out.set_host(e.comparison.host_label);
  out.set_cell_count(static_cast<int32_t>(e.cells.size()));
  out.set_cells_done(e.done);
  if (with_cells) {
    for (const v1::ComparisonCell& c : e.cells) *out.add_cells() = c;
  }
  out.set_error(e.error);
  SetTimestamp(e.create_time, out.mutable_create_time());
  if (e.state != v1::Comparison::RUNNING) SetTimestamp(e.end_time, out.mutable_end_time());
  if (full) *out.mutable_bundle() = e.bundle;
  return out;
}

absl::StatusOr<v1::Comparison> ComparisonManager::Get(const std::string& name, bool full) const {
  absl::MutexLock lock(&mu_);
  auto it = comparisons_.find(name);
  if (it == comparisons_.end()) return absl::NotFoundError(name + " not found");
  return ToProto(*it->second, true, full);
}

absl::StatusOr<v1::ListComparisonsResponse> ComparisonManager::List(int page_size,
                                                                    const std::string& page_token) const {
  BLKLAB_ASSIGN_OR_RETURN(const int size, PageSize(page_size));
  absl::MutexLock lock(&mu_);
  std::vector<const Entry*> all;
  for (const auto& [name, e] : comparisons_) all.push_back(e.get());
  std::sort(all.begin(), all.end(), [](const Entry* a, const Entry* b) { return a->seq > b->seq; });
  int64_t after = -1;
  if (!page_token.empty() && (!absl::SimpleAtoi(page_token, &after) || after < 0)) {
    return absl::InvalidArgumentError("page_token: not a token of this server's");
  }
  v1::ListComparisonsResponse resp;
  int64_t last = -1;
  for (const Entry* e : all) {
    if (after >= 0 && e->seq >= after) continue;
    if (resp.comparisons_size() == size) {
      resp.set_next_page_token(absl::StrCat(last));
      break;
    }
    *resp.add_comparisons() = ToProto(*e, false, false);
    last = e->seq;
  }
  return resp;
}

absl::StatusOr<v1::Comparison> ComparisonManager::Cancel(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = comparisons_.find(name);
  if (it == comparisons_.end()) return absl::NotFoundError(name + " not found");
  Entry* e = it->second.get();
  if (e->state == v1::Comparison::RUNNING) {
    e->state = v1::Comparison::CANCELLED;
    e->error = "cancelled";
    e->cancel.store(true);
    for (grpc::ClientContext* c : e->fleet_calls) c->TryCancel();
    Finish(e);
  }
  return ToProto(*e, true, false);
}

absl::Status ComparisonManager::Delete(const std::string& name) {
  std::unique_ptr<Entry> gone;
  {
    absl::MutexLock lock(&mu_);
    auto it = comparisons_.find(name);
    if (it == comparisons_.end()) return absl::NotFoundError(name + " not found");
    if (it->second->state == v1::Comparison::RUNNING) {
      return absl::FailedPreconditionError(name + " is running: cancel it first");
    }
    gone = std::move(it->second);
    comparisons_.erase(it);
    ++gone->version;
    changed_.SignalAll();
  }
  for (std::thread& t : gone->threads) t.join();
  return absl::OkStatus();
}

absl::StatusOr<v1::Comparison> ComparisonManager::WaitChange(const std::string& name, int64_t* version,
                                                             absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  while (true) {
    auto it = comparisons_.find(name);
    if (it == comparisons_.end()) return absl::NotFoundError(name + " not found");
    const Entry& e = *it->second;
    if (*version < 0 || e.version != *version || absl::Now() >= deadline) {
      *version = e.version;
      return ToProto(e, true, false);
    }
    changed_.WaitWithDeadline(&mu_, deadline);
  }
}

absl::StatusOr<v1::ComparisonOutput> ComparisonManager::Output(const std::string& name,
                                                              const std::string& format) const {
  const bool charts = format == "charts";
  absl::StatusOr<compare::Format> f = compare::ParseFormat(format.empty() || charts ? "table" : format);
  if (!f.ok()) return absl::InvalidArgumentError("format: expected table, markdown, csv, json or charts, got " + format);
  v1::ComparisonOutput out;
  std::optional<compare::PlotInput> plot;
  {
    absl::MutexLock lock(&mu_);
    auto it = comparisons_.find(name);
    if (it == comparisons_.end()) return absl::NotFoundError(name + " not found");
    const Entry& e = *it->second;
    if (e.state != v1::Comparison::SUCCEEDED) {
      return absl::FailedPreconditionError(name + " is " + v1::Comparison::State_Name(e.state) +
                                           (e.error.empty() ? "" : ": " + e.error));
    }
    if (!charts) {
      out.set_text(compare::Render(e.comparison, e.results, *f));
      return out;
    }
    // What to draw, copied: the drawing (flame graphs) happens outside the
    // lock every comparison shares.
    plot = compare::PlotInputFor(e.comparison, e.results);
  }
  for (auto& [file, content] : compare::PlotFiles(*plot)) {
    v1::ComparisonOutput::File* o = out.add_files();
    o->set_name(file);
    o->set_content(std::move(content));
  }
  return out;
}

ComparisonGauges ComparisonManager::Gauges(size_t max_cells) const {
  ComparisonGauges g;
  for (const char* s : {"running", "succeeded", "failed", "cancelled"}) g.by_state[s] = 0;
  absl::MutexLock lock(&mu_);
  std::vector<const Entry*> all;
  for (const auto& [name, e] : comparisons_) all.push_back(e.get());
  std::sort(all.begin(), all.end(), [](const Entry* a, const Entry* b) { return a->seq > b->seq; });
  size_t cells = 0;
  for (const Entry* e : all) {
    ComparisonGauges::One one;
    one.name = e->name;
    one.host = e->comparison.host_label;
    one.state = absl::AsciiStrToLower(v1::Comparison::State_Name(e->state));
    ++g.by_state[one.state];
    for (const char* s : {"pending", "running", "done", "failed"}) one.cells_by_state[s] = 0;
    for (const v1::ComparisonCell& c : e->cells) {
      ++one.cells_by_state[absl::AsciiStrToLower(v1::ComparisonCell::State_Name(c.state()))];
      if (c.state() == v1::ComparisonCell::DONE && cells < max_cells) {
        one.done.push_back({c.label(), c.server(), c.iops()});
        ++cells;
      }
    }
    g.comparisons.push_back(std::move(one));
  }
  return g;
}

}  // namespace blklab::server
