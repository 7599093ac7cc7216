// blklab: the command-line client.
//
//   blklab fio [options] [job files]   run fio jobs in-process on a simulated host
//   blklab hosts list                  list the built-in host presets
//   blklab hosts show NAME             print a preset's YAML
#include <iostream>
#include <string>
#include <vector>

#include "clients/cli/fio_command.h"
#include "engine/host/presets.h"

namespace {

void Usage(std::ostream& out) {
  out << "usage: blklab fio [--host=PRESET|FILE] [--seed=N] [--perf-top[=N]] [fio options] [job files]\n"
         "       blklab hosts list\n"
         "       blklab hosts show NAME\n";
}

int Hosts(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "list") {
    for (const auto& p : blklab::host::ListPresets()) {
      std::cout << p.name << "\t" << p.description << "\n";
    }
    return 0;
  }
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(std::cerr);
    return 2;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "fio") return blklab::cli::RunFioCommand(rest);
  if (cmd == "hosts") return Hosts(rest);
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    Usage(std::cout);
    return 0;
  }
  std::cerr << "blklab: unknown command '" << cmd << "'\n";
  Usage(std::cerr);
  return 2;
}
