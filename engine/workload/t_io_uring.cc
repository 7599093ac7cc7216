#include "engine/workload/t_io_uring.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace blklab::workload {

namespace {

constexpr char kOptions[] = "d:s:c:b:p:B:F:n:N:O:t:T:a:r:D:R:X:S:P:u:h?";

// C's atoi: leading space, sign, digits; anything else stops (0 if none).
int Atoi(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  int64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    v = v * 10 + (s[i] - '0');
    if (v > (int64_t{1} << 31)) v = int64_t{1} << 31;
  }
  return static_cast<int>(neg ? -v : v);
}

bool TakesArgument(char c) {
  const char* p = std::char_traits<char>::find(kOptions, sizeof(kOptions) - 1, c);
  return p != nullptr && p[1] == ':';
}

bool Known(char c) {
  return c != ':' && std::char_traits<char>::find(kOptions, sizeof(kOptions) - 1, c) != nullptr;
}

void Apply(char c, const std::string& v, TioUringSpec& s) {
  switch (c) {
    case 'd': s.depth = Atoi(v); break;
    case 's': s.batch_submit = std::max(Atoi(v), 1); break;
    case 'c': s.batch_complete = std::max(Atoi(v), 1); break;
    case 'b': s.bs = Atoi(v); break;
    case 'p': s.polled = Atoi(v) != 0; break;
    case 'B': s.fixedbufs = Atoi(v) != 0; break;
    case 'D': s.dma_map = Atoi(v) != 0; break;
    case 'F': s.register_files = Atoi(v) != 0; break;
    case 'n': s.nthreads = Atoi(v); break;
    case 'O': s.buffered = Atoi(v) == 0; break;
    case 'N': s.nop = Atoi(v) != 0; break;
    case 't': s.stats = Atoi(v) != 0; break;
    case 'T': s.tsc_rate = std::strtoull(v.c_str(), nullptr, 10); break;
    case 'r': s.runtime_s = Atoi(v); break;
    case 'R': s.random_io = Atoi(v) != 0; break;
    case 'a': s.aio = Atoi(v) != 0; break;
    case 'S': s.use_sync = Atoi(v) != 0; break;
    case 'X': s.register_ring = Atoi(v) != 0; break;
    case 'P': s.numa_placement = Atoi(v) != 0; break;
    case 'u': s.passthrough = Atoi(v) != 0; break;
    default: break;
  }
}

}  // namespace

std::string TioUringUsage(const std::string& argv0, const TioUringSpec& s) {
  return absl::StrCat(
      argv0, " [options] -- [filenames]\n",
      " -d <int>  : IO Depth, default 128\n",
      " -s <int>  : Batch submit, default 32\n",
      " -c <int>  : Batch complete, default 32\n",
      " -b <int>  : Block size, default 4096\n",
      " -p <bool> : Polled IO, default ", s.polled ? 1 : 0, "\n",
      " -B <bool> : Fixed buffers, default ", s.fixedbufs ? 1 : 0, "\n",
      " -D <bool> : DMA map fixed buffers, default ", s.dma_map ? 1 : 0, "\n",
      " -F <bool> : Register files, default ", s.register_files ? 1 : 0, "\n",
      " -n <int>  : Number of threads, default ", s.nthreads, "\n",
      " -O <bool> : Use O_DIRECT, default ", s.buffered ? 0 : 1, "\n",
      " -N <bool> : Perform just no-op requests, default ", s.nop ? 1 : 0, "\n",
      " -t <bool> : Track IO latencies, default ", s.stats ? 1 : 0, "\n",
      " -T <int>  : TSC rate in HZ\n",
      " -r <int>  : Runtime in seconds, default ",
      s.runtime_s == 0 ? std::string("unlimited") : std::to_string(s.runtime_s), "\n",
      " -R <bool> : Use random IO, default ", s.random_io ? 1 : 0, "\n",
      " -a <bool> : Use legacy aio, default ", s.aio ? 1 : 0, "\n",
      " -S <bool> : Use sync IO (preadv2), default ", s.use_sync ? 1 : 0, "\n",
      " -X <bool> : Use registered ring ", s.register_ring ? 1 : 0, "\n",
      " -P <bool> : Automatically place on device home node ", s.numa_placement ? 1 : 0, "\n",
      " -u <bool> : Use nvme-passthrough I/O, default ", s.passthrough ? 1 : 0, "\n");
}

std::vector<std::vector<int>> TioUringThreadFiles(const TioUringSpec& spec) {
  const int nthreads = std::max(spec.nthreads, 1);
  std::vector<std::vector<int>> out(nthreads);
  const int nfiles = static_cast<int>(spec.files.size());
  if (nfiles == 0) return out;
  int per = nthreads / nfiles;
  int rem = 0;
  if (per == 0) {
    per = 1;
  } else {
    rem = nthreads - per * nfiles;
  }
  int j = 0;
  for (int f = 0; f < nfiles; ++f) {
    const int limit = per + (rem > 0 ? 1 : 0);
    for (int k = 0; k < limit; ++k) {
      std::vector<int>& files = out[(j + k) % nthreads];
      if (files.size() >= 16) break;  // MAX_FDS
      files.push_back(f);
    }
    --rem;
    j += limit;
  }
  return out;
}

std::string TioUringApplyAioLimits(TioUringSpec& spec) {
  if (!spec.aio) return "";
  std::string said;
  if (spec.polled) said += "aio does not support polled IO\n";
  if (spec.nop) said += "aio does not support polled IO\n";
  if (spec.fixedbufs || spec.register_files) said += "aio does not support registered files or buffers\n";
  spec.polled = spec.nop = spec.fixedbufs = spec.register_files = false;
  return said;
}

absl::StatusOr<TioUringArgs> ParseTioUringArgs(const std::vector<std::string>& args) {
  TioUringArgs out;
  TioUringSpec& s = out.spec;
  const std::string argv0 = "t/io_uring";
  if (args.empty()) {
    out.show_usage = true;
    out.exit_code = 1;
    return out;
  }
  std::vector<std::string> operands;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      operands.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    // A cluster of single-letter options: -p1, -d 128, -hp ...
    for (size_t k = 1; k < a.size(); ++k) {
      const char c = a[k];
      if (!Known(c)) {
        out.stderr_text = absl::StrCat(argv0, ": invalid option -- '", std::string(1, c), "'\n");
        out.show_usage = true;
        return out;
      }
      if (c == 'h' || c == '?') {
        out.show_usage = true;
        return out;
      }
      if (!TakesArgument(c)) continue;
      std::string value;
      if (k + 1 < a.size()) {
        value = a.substr(k + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        out.stderr_text = absl::StrCat(argv0, ": option requires an argument -- '", std::string(1, c), "'\n");
        out.show_usage = true;
        return out;
      }
      Apply(c, value, s);
      break;
    }
  }
  s.files = operands;
  if (s.nthreads == 0) {
    return absl::InvalidArgumentError(absl::StrCat("Threads must be non-zero\n", TioUringUsage(argv0, s)));
  }
  if (!s.nop && s.files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("No files specified\n", TioUringUsage(argv0, s)));
  }
  s.batch_submit = std::min(s.batch_submit, std::max(s.depth, 1));
  s.batch_complete = std::min(s.batch_complete, std::max(s.depth, 1));
  return out;
}

}  // namespace blklab::workload
