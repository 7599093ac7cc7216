// blklab: the command-line client.
//
//   blklab fio [options] [job files]   run fio jobs in-process on a simulated host
//   blklab io_uring [options] FILES     fio's t/io_uring benchmark, simulated
//   blklab compare [options] -- FIO     one job on a host and its variants, side by side
//   blklab kernel run|compare|suite    the same job on the real kernel in QEMU
//   blklab hosts list                  list the built-in host presets
//   blklab hosts show NAME             print a preset's YAML
//   blklab hosts auto [fio args]       print the host --host=auto builds for a job
//
// With --server ADDR (or BLKLAB_SERVER) before the command, the commands run
// against a blklabd server instead (clients/cli/remote.h): fio, compare,
// comparisons, hosts, jobs, health. `--server=` (empty) forces the
// in-process path.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "clients/cli/compare_command.h"
#include "clients/cli/fio_command.h"
#include "clients/cli/io_uring_command.h"
#include "clients/cli/kernel_command.h"
#include "engine/host/presets.h"
#ifdef BLKLAB_CLI_REMOTE
#include "clients/cli/remote.h"
#endif

namespace {

void Usage(std::ostream& out) {
  out << "usage: blklab fio [--host=PRESET|FILE|auto] [--seed=N] [--perf-top[=N]] [fio options] [job files]\n"
         "       (local runs: the host also from BLKLAB_HOST; --host= wins)\n"
         "       blklab io_uring [--host=PRESET|FILE] [--cpus=LIST] [--seed=N] [--output-format=normal|json]\n"
         "             [t/io_uring options: -d -s -c -b -p -B -F -n -N -O -t -T -r -R -a -S -X -P -u -D] FILES\n"
         "       blklab compare --host=PRESET|FILE [--variant NAME:PATH=VALUE[,...]]... [--matrix PATH=V1,V2...]...\n"
         "             [--samples=N] [--seed=N] [--jobs=N] [--format=table|markdown|csv|json] [--plot=DIR] -- FIO-ARGS\n"
         "       blklab compare SPEC.yaml [--jobs=N] [--format=...] [--plot=DIR]\n"
         "             (--plot=DIR: also the charts, flame graphs and report.html in DIR; blklab compare --help)\n"
         "       blklab kernel run|compare [--host=PRESET|FILE] [fio options] [job files]   (the real kernel in QEMU)\n"
         "       blklab kernel compare SCENARIO.yaml | suite [--ci] | image\n"
         "       blklab hosts list\n"
         "       blklab hosts show NAME\n"
         "       blklab hosts auto [fio options] [job files]   (the host --host=auto builds for the job)\n"
         "remote (blklabd), ADDR also from BLKLAB_SERVER, the token from BLKLAB_TOKEN:\n"
         "       blklab --server ADDR [--token_file F] [--tls_ca_file F] fio [--host=PRESET|hosts/NAME|FILE]\n"
         "             [--seed=N] [--pace=realtime|fast] [fio options] [job files]\n"
         "       blklab --server ADDR hosts list|get NAME|create NAME FILE|delete NAME|presets [--json]\n"
         "       blklab --server ADDR compare [compare options, as above] -- FIO-ARGS | SPEC.yaml\n"
         "       blklab --server ADDR comparisons list|get ID|output ID [--format=table|markdown|csv|json|--plot=DIR]\n"
         "             |cancel ID|delete ID\n"
         "       blklab --server ADDR jobs list [--state=S] [--host=H]|get ID [--fio=normal|json|terse]|cancel ID\n"
         "             |watch ID|delete ID [--json]\n"
         "       blklab --server ADDR health [SERVICE]\n";
}

int Hosts(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "list") {
    for (const auto& p : blklab::host::ListPresets()) {
      std::cout << p.name << "\t" << p.description << "\n";
    }
    return 0;
  }
  if (args[0] == "auto") return blklab::cli::PrintAutoHost({args.begin() + 1, args.end()});
  if (args[0] == "show" && args.size() == 2) {
    auto yaml = blklab::host::PresetYaml(args[1]);
    if (!yaml.ok()) {
      std::cerr << "blklab hosts: " << yaml.status().message() << "\n";
      return 1;
    }
    std::cout << *yaml;
    return 0;
  }
  Usage(std::cerr);
  return 2;
}

// Connection options before the command: --NAME VALUE or --NAME=VALUE.
struct Globals {
  std::string server;
  bool server_given = false;
  std::string token_file;
  std::string tls_ca_file;
};

}  // namespace

int main(int argc, char** argv) {
  Globals g;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    std::string* target = nullptr;
    std::string name;
    for (const auto& [flag, field] : {std::pair<const char*, std::string*>{"--server", &g.server},
                                      {"--token_file", &g.token_file},
                                      {"--tls_ca_file", &g.tls_ca_file}}) {
      if (a == flag || absl::StartsWith(a, std::string(flag) + "=")) {
        target = field;
        name = flag;
      }
    }
    if (target == nullptr) break;
    if (a.size() > name.size()) {
      *target = a.substr(name.size() + 1);
    } else if (i + 1 < argc) {
      *target = argv[++i];
    } else {
      std::cerr << "blklab: " << name << " needs a value\n";
      return 2;
    }
    if (target == &g.server) g.server_given = true;
  }
  if (!g.server_given) {
    const char* env = std::getenv("BLKLAB_SERVER");
    if (env != nullptr) g.server = env;
  }
  if (i >= argc) {
    Usage(std::cerr);
    return 2;
  }
  const std::string cmd = argv[i];
  std::vector<std::string> rest(argv + i + 1, argv + argc);
  if (!g.server.empty() && cmd != "help" && cmd != "--help" && cmd != "-h") {
#ifdef BLKLAB_CLI_REMOTE
    blklab::cli::RemoteOptions options;
    options.server = g.server;
    options.token_file = g.token_file;
    options.tls_ca_file = g.tls_ca_file;
    if (const char* token = std::getenv("BLKLAB_TOKEN"); token != nullptr) options.token = token;
    return blklab::cli::RunRemoteCommand(options, cmd, rest);
#else
    std::cerr << "blklab: --server: this blklab is built without the gRPC client (BLKLAB_ENGINE_ONLY)\n";
    return 2;
#endif
  }
  if (cmd == "jobs" || cmd == "health" || cmd == "comparisons") {
    std::cerr << "blklab " << cmd << ": needs a server: --server ADDR (or BLKLAB_SERVER)\n";
    return 2;
  }
  if (cmd == "fio") return blklab::cli::RunFioCommand(rest);
  if (cmd == "io_uring") return blklab::cli::RunIoUringCommand(rest);
  if (cmd == "compare") return blklab::cli::RunCompareCommand(rest);
  if (cmd == "hosts") return Hosts(rest);
  if (cmd == "kernel") return blklab::cli::RunKernelCommand(rest);
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    Usage(std::cout);
    return 0;
  }
  std::cerr << "blklab: unknown command '" << cmd << "'\n";
  Usage(std::cerr);
  return 2;
}
