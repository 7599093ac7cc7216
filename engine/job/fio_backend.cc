#include "engine/job/fio_backend.h"

#include <algorithm>

namespace blklab::job {

namespace {
constexpr int64_t kMainSleepNs = 10 * sim::kNsPerMs;          // run_threads: do_usleep(10000)
constexpr int64_t kMainStartingSleepNs = 100 * sim::kNsPerMs;  // while jobs are still to start
constexpr int64_t kTimerSlackNs = 50 * 1000;                   // a task's default timer_slack_ns
constexpr int64_t kDiskUtilNs = 250 * sim::kNsPerMs;           // DISK_UTIL_MSEC
}  // namespace

FioBackend::FioBackend(model::Kernel& kernel, const FioBackendConfig& config,
                       const std::vector<std::unique_ptr<JobThread>>& clones)
    : kernel_(kernel),
      config_(config),
      clones_(clones),
      cpu_(kernel.machine().cpu(config.cpu)),
      main_(std::make_unique<sim::Thread>(kernel.machine(), "fio", config.cpu)),
      helper_(std::make_unique<sim::Thread>(kernel.machine(), "fio-helper", config.cpu)) {
  main_->set_wakeup_preempts(true);
  helper_->set_wakeup_preempts(true);
  main_timer_.Init(&kernel.machine(), config.cpu, &waker_, 0);
  helper_timer_.Init(&kernel.machine(), config.cpu, &waker_, 1);
  auto& r = kernel.machine().functions();
  fn_reap_threads_ = r.Intern("fio:reap_threads", /*user=*/true);
  fn_nanosleep_ = r.Intern("do_nanosleep");
  fn_helper_ = r.Intern("fio:helper_thread_main", /*user=*/true);
  fn_select_ = r.Intern("do_select");
  fn_part_stat_ = r.Intern("part_stat_show");
}

void FioBackend::Start() {
  main_->Start(MainBody(), 0);
  helper_->Start(HelperBody(), 0);
}

sim::Task FioBackend::Waker::Handle(sim::Cpu& cpu, uint64_t arg) {
  model::Kernel& k = b_->kernel_;
  cpu.Charge(k.fn.hrtimer_interrupt, k.costs().hrtimer_fire);
  sim::Thread& t = arg == 0 ? *b_->main_ : *b_->helper_;
  if (t.sleeping()) {
    cpu.Charge(k.fn.try_to_wake_up, k.costs().try_to_wake_up);
    t.Wake(cpu.now());
  }
  co_return;
}

bool FioBackend::AllDone() const {
  return std::all_of(clones_.begin(), clones_.end(), [](const auto& c) { return c->done(); });
}

bool FioBackend::AllStarted() const {
  return std::all_of(clones_.begin(), clones_.end(),
                     [](const auto& c) { return c->thread().state() != sim::Thread::State::kNew; });
}

sim::Task FioBackend::MainBody() {
  const host::CostTable& c = kernel_.costs();
  for (;;) {
    co_await cpu_.Sync();
    // reap_threads: every job's run state.
    cpu_.Charge(fn_reap_threads_, c.fio_main_loop + c.fio_reap_per_job * static_cast<int64_t>(clones_.size()));
    if (AllDone()) co_return;
    const int64_t sleep_ns = AllStarted() ? kMainSleepNs : kMainStartingSleepNs;
    cpu_.Charge(fn_nanosleep_, c.clock_nanosleep);
    main_timer_.Start(std::max(cpu_.now(), kernel_.machine().sim().Now()) + sleep_ns + kTimerSlackNs);
    co_await cpu_.Sleep();
  }
}

sim::SimTime FioBackend::NextHelperWake(sim::SimTime now, bool* disk_util_due) {
  *disk_util_due = false;
  while (disk_util_next_ <= now) {
    disk_util_next_ += kDiskUtilNs;
    *disk_util_due = true;
  }
  sim::SimTime next = disk_util_next_;
  for (const auto& clone : clones_) {
    if (clone->done()) continue;
    const workload::JobSpec& spec = *clone->config().spec;
    const int64_t period_ns = static_cast<int64_t>(std::min(spec.bwavgtime_ms, spec.iopsavgtime_ms)) * sim::kNsPerMs;
    if (period_ns <= 0) continue;
    const sim::SimTime start = clone->stats_started_at();
    if (start < 0 || start > now) {
      next = std::min(next, now + period_ns);  // not measuring yet: ask again after a period
      continue;
    }
    next = std::min(next, start + ((now - start) / period_ns + 1) * period_ns);
  }
  return next;
}

sim::Task FioBackend::HelperBody() {
  const host::CostTable& c = kernel_.costs();
  bool first = true;
  for (;;) {
    co_await cpu_.Sync();
    if (AllDone()) co_return;
    bool disk_util_due = false;
    const sim::SimTime next = NextHelperWake(cpu_.now(), &disk_util_due);
    if (!first) {
      // The wake-up's timerfd read, the timers and the log samples.
      cpu_.Charge(fn_helper_, c.fio_helper_loop);
      if (disk_util_due) {
        for (int d = 0; d < config_.disk_util_disks; ++d) {
          cpu_.Charge(fn_part_stat_,
                      c.diskstats_read + c.part_stat_per_cpu * static_cast<int64_t>(kernel_.machine().num_cpus()));
        }
      }
    }
    first = false;
    // wait_for_action: timerfd_settime, select.
    cpu_.Charge(fn_select_, c.fio_helper_syscalls);
    helper_timer_.Start(std::max({next, cpu_.now(), kernel_.machine().sim().Now()}));
    co_await cpu_.Sleep();
  }
}

}  // namespace blklab::job
