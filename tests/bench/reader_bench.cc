// reader_bench: blklab's own YAML reader (engine/util/yaml_reader.h) against
// yaml-cpp (Debian's libyaml-cpp-dev) on what the server parses: host specs
// and comparison specs from clients it does not trust. Prints, for each
// reader, the time per parse of a typical spec and of a large one, and what
// each does with hostile or ambiguous input (deep nesting, an alias bomb,
// duplicate keys, YAML 1.1 booleans, a syntax error's location). Each
// hostile case runs in a child process, so a crash is reported, not
// suffered. docs/readers.md quotes the figures and the decision they back.
//
// Built only when yaml-cpp is installed (it is not a dependency of blklab).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <csignal>
#include <cstdio>
#include <functional>
#include <string>

#include "engine/util/yaml_reader.h"
#include "yaml-cpp/yaml.h"

namespace {

double MicrosPerCall(int n, const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn();
  const std::chrono::duration<double, std::micro> d = std::chrono::steady_clock::now() - start;
  return d.count() / n;
}

// Runs fn in a child with a 10 s CPU limit and a 64 MiB stack; returns what
// happened to it in words.
std::string InChild(const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    rlimit cpu{10, 10};
    setrlimit(RLIMIT_CPU, &cpu);
    rlimit mem{2ull << 30, 2ull << 30};
    setrlimit(RLIMIT_AS, &mem);
    const std::string out = fn();
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    return std::string("killed by signal ") + strsignal(WTERMSIG(status)) +
           (WTERMSIG(status) == SIGXCPU ? " (over 10 s of CPU)" : "");
  }
  return out;
}

std::string Ours(const std::string& text) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<blklab::util::DocNode> doc = blklab::util::ParseYaml(text);
  const std::chrono::duration<double, std::milli> d = std::chrono::steady_clock::now() - start;
  char ms[32];
  std::snprintf(ms, sizeof(ms), " (%.2f ms)", d.count());
  if (!doc.ok()) return "refused: " + std::string(doc.status().message()) + ms;
  return std::string("accepted") + ms;
}

size_t CountNodes(const YAML::Node& n, size_t cap) {
  size_t count = 1;
  if (n.IsMap() || n.IsSequence()) {
    for (auto it = n.begin(); it != n.end() && count < cap; ++it) {
      count += CountNodes(n.IsMap() ? it->second : *it, cap - count);
    }
  }
  return count;
}

std::string Theirs(const std::string& text, const std::function<std::string(const YAML::Node&)>& look) {
  const auto start = std::chrono::steady_clock::now();
  try {
    YAML::Node n = YAML::Load(text);
    std::string seen = look ? look(n) : "";
    const std::chrono::duration<double, std::milli> d = std::chrono::steady_clock::now() - start;
    char ms[32];
    std::snprintf(ms, sizeof(ms), " (%.2f ms)", d.count());
    return "accepted" + seen + ms;
  } catch (const YAML::Exception& e) {
    return std::string("refused: ") + e.what();
  }
}

void Case(const char* title, const std::string& text,
          const std::function<std::string(const YAML::Node&)>& look = nullptr) {
  std::printf("%s\n  blklab:   %s\n", title, InChild([&] { return Ours(text); }).c_str());
  std::printf("  yaml-cpp: %s\n", InChild([&] { return Theirs(text, look); }).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : BLKLAB_SOURCE_DIR "/examples/hosts/rc1-mpi3mr-64vd.yaml";
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string spec = buf.str();
  if (!in || spec.empty()) {
    std::fprintf(stderr, "reader_bench: cannot read %s\n", path.c_str());
    return 2;
  }
  std::string large = "items:\n";
  for (int i = 0; large.size() < 900 * 1024; ++i) large += "  - {name: dev" + std::to_string(i) + ", depth: 32}\n";

  std::printf("reader_bench: blklab's YAML reader against yaml-cpp %s\n\n", "(libyaml-cpp-dev)");
  const int n = 2000;
  const double ours_us = MicrosPerCall(n, [&] { (void)blklab::util::ParseYaml(spec); });
  const double theirs_us = MicrosPerCall(n, [&] { (void)YAML::Load(spec); });
  std::printf("a host spec (%s, %zu bytes): blklab %.1f us, yaml-cpp %.1f us per parse (%.2fx)\n",
              path.substr(path.rfind('/') + 1).c_str(), spec.size(), ours_us, theirs_us, theirs_us / ours_us);
  const double ours_large = MicrosPerCall(5, [&] { (void)blklab::util::ParseYaml(large); });
  const double theirs_large = MicrosPerCall(5, [&] { (void)YAML::Load(large); });
  std::printf("a 900 KiB list of flow maps: blklab %.1f ms, yaml-cpp %.1f ms per parse (%.2fx)\n\n",
              ours_large / 1000, theirs_large / 1000, theirs_large / ours_large);

  Case("deep nesting (100,000 '[')", std::string(100000, '['));
  Case("deep nesting (100,000 '- ' levels of block sequences, 200 KB)", [] {
    std::string t;
    for (int i = 0; i < 100000; ++i) t += "- ";
    return t + "x\n";
  }());
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  Case("an alias bomb (10 levels of 10 aliases: 10^10 nodes when walked)", bomb, [](const YAML::Node& n) {
    return ", a walk visited " + std::to_string(CountNodes(n, 50000000)) + " nodes before its cap of 5e7";
  });
  Case("duplicate keys (\"a: 1\\na: 2\")", "a: 1\na: 2\n",
       [](const YAML::Node& n) { return ", a = " + n["a"].as<std::string>(); });
  Case("a YAML 1.1 boolean (\"rotational: yes\")", "rotational: yes\n", [](const YAML::Node& n) {
    try {
      return std::string(", as<bool>() = ") + (n["rotational"].as<bool>() ? "true" : "false");
    } catch (const YAML::Exception&) {
      return std::string(", as<bool>() throws");
    }
  });
  Case("a syntax error (an unclosed flow sequence on line 2)", "name: h\ncpus: [1, 2\nkernel: {}\n");
  Case("a tab in the indentation", "cpus:\n\tcount: 4\n");
  return 0;
}
