#include "clients/cli/run_signals.h"

#include <atomic>

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

}  // namespace blklab::cli
