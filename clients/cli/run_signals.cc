#include "clients/cli/run_signals.h"

#include <atomic>
#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"

namespace blklab::cli {
namespace {

std::atomic<int> g_count{0};
std::atomic<int> g_last{0};

extern "C" void OnTerminationSignal(int sig) {
  g_last.store(sig, std::memory_order_relaxed);
  g_count.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

TerminationSignals::TerminationSignals() {
  g_count.store(0);
  g_last.store(0);
  struct sigaction sa = {};
  sa.sa_handler = OnTerminationSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

TerminationSignals::~TerminationSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int TerminationSignals::count() { return g_count.load(std::memory_order_relaxed); }
int TerminationSignals::last() { return g_last.load(std::memory_order_relaxed); }

std::string FioEtaString(int64_t sec) {
  const int64_t d = sec / 86400, h = (sec / 3600) % 24, m = (sec / 60) % 60, s = sec % 60;
  if (d > 0) return absl::StrFormat("%dd:%02dh:%02dm:%02ds", d, h, m, s);
  if (h > 0) return absl::StrFormat("%02dh:%02dm:%02ds", h, m, s);
  return absl::StrFormat("%02dm:%02ds", m, s);
}

InterruptWatcher::InterruptWatcher(std::function<void()> first, std::function<void()> second) {
  thread_ = std::thread([this, first = std::move(first), second = std::move(second)] {
    bool first_done = false;
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      const int n = TerminationSignals::count();
      if (n >= 1 && !first_done) {
        first_done = true;
        lock.unlock();
        first();
        lock.lock();
      }
      if (n >= 2) {
        second();
        break;
      }
    }
  });
}

InterruptWatcher::~InterruptWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace blklab::cli
