#include "clients/kernel_lab/vm.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/util/file.h"
#include "engine/util/status_macros.h"

#ifndef BLKLAB_SOURCE_DIR
#define BLKLAB_SOURCE_DIR "."
#endif

namespace blklab::kernel_lab {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<LabImage> ImageAt(const std::string& dir) {
  LabImage image;
  image.dir = dir;
  for (const char* f : {"vmlinuz", "base.cpio.gz", "image.txt"}) {
    if (!fs::exists(fs::path(dir) / f)) {
      return absl::FailedPreconditionError(absl::StrCat("kernel lab image ", dir, " has no ", f,
                                                        " (build one with scripts/kernel-lab-image)"));
    }
  }
  BLKLAB_ASSIGN_OR_RETURN(image.description, ReadFile(dir + "/image.txt"));
  for (absl::string_view line : absl::StrSplit(image.description, '\n')) {
    if (absl::ConsumePrefix(&line, "kernel ")) image.kernel_release = std::string(line);
  }
  return image;
}

// The command's stdout; its stderr goes to ours (progress of an install).
absl::StatusOr<std::string> Capture(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return absl::InternalError(absl::StrCat("cannot run ", command));
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  if (status != 0) return absl::FailedPreconditionError(absl::StrCat(command, " failed (status ", status, ")"));
  return out;
}

bool KvmUsable() {
  if (access("/dev/kvm", R_OK | W_OK) != 0) return false;
  absl::StatusOr<std::string> cpuinfo = ReadFile("/proc/cpuinfo");
  if (!cpuinfo.ok()) return false;
  for (absl::string_view line : absl::StrSplit(*cpuinfo, '\n')) {
    if (!absl::StartsWith(line, "flags")) continue;
    for (absl::string_view flag : absl::StrSplit(line, ' ')) {
      if (flag == "vmx" || flag == "svm") return true;
    }
    return false;
  }
  return false;
}

std::string Tail(const std::string& text, int lines) {
  size_t pos = text.size();
  for (int i = 0; i <= lines && pos != std::string::npos && pos > 0; ++i) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

void AppendHex(std::string& out, uint32_t v) { absl::StrAppendFormat(&out, "%08X", v); }

void AppendEntry(std::string& out, uint32_t ino, const std::string& name, uint32_t mode, const std::string& data) {
  out += "070701";
  const uint32_t fields[] = {ino, mode, 0, 0, 1, 0, static_cast<uint32_t>(data.size()), 0, 0, 0, 0,
                             static_cast<uint32_t>(name.size() + 1), 0};
  for (uint32_t f : fields) AppendHex(out, f);
  out += name;
  out.push_back('\0');
  while (out.size() % 4 != 0) out.push_back('\0');
  out += data;
  while (out.size() % 4 != 0) out.push_back('\0');
}

}  // namespace

std::string ShellQuote(const std::string& word) {
  std::string q = "'";
  for (char c : word) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q.push_back(c);
    }
  }
  return q + "'";
}

std::string NewcArchive(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  uint32_t ino = 1;
  std::set<std::string> dirs;
  for (const auto& [path, data] : files) {
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      const std::string dir = path.substr(0, slash);
      if (dirs.insert(dir).second) AppendEntry(out, ino++, dir, 040755, "");
    }
    const bool script = absl::EndsWith(path, ".sh");
    AppendEntry(out, ino++, path, script ? 0100755 : 0100644, data);
  }
  AppendEntry(out, 0, "TRAILER!!!", 0, "");
  return out;
}

absl::StatusOr<LabImage> FindImage() {
  if (const char* dir = std::getenv("BLKLAB_LAB_IMAGE"); dir != nullptr && *dir != '\0') return ImageAt(dir);
  const std::string script = std::string(BLKLAB_SOURCE_DIR) + "/scripts/kernel-lab-image";
  if (!fs::exists(script)) {
    return absl::FailedPreconditionError(
        absl::StrCat("no kernel lab image: set BLKLAB_LAB_IMAGE to one built by scripts/kernel-lab-image (", script,
                     " is not here)"));
  }
  BLKLAB_ASSIGN_OR_RETURN(std::string out, Capture(ShellQuote(script)));
  // The script's last line names the image directory.
  const std::string last = Tail(std::string(absl::StripAsciiWhitespace(out)), 0);
  return ImageAt(std::string(absl::StripAsciiWhitespace(last)));
}

void ParseTranscript(const std::string& transcript, GuestOutput& out) {
  std::string text = transcript;
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  std::string current;
  std::string body;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "@@blklab-begin ") && absl::ConsumeSuffix(&rest, "@@")) {
      current = std::string(rest);
      body.clear();
      continue;
    }
    if (absl::ConsumePrefix(&rest, "@@blklab-end ") && absl::ConsumeSuffix(&rest, "@@")) {
      out.sections[std::string(rest)] = body;
      current.clear();
      continue;
    }
    // A line that ends with the exit marker (the last output had no newline).
    if (size_t at = line.find("@@blklab-exit "); at != absl::string_view::npos) {
      absl::string_view n = line.substr(at + 14);
      absl::ConsumeSuffix(&n, "@@");
      int status = -1;
      if (absl::SimpleAtoi(n, &status)) out.exit_status = status;
      if (!current.empty() && at > 0) absl::StrAppend(&body, line.substr(0, at), "\n");
      continue;
    }
    if (!current.empty()) absl::StrAppend(&body, line, "\n");
  }
  if (!current.empty()) out.sections[current] = body;  // cut short
}

absl::StatusOr<GuestOutput> RunGuest(const LabImage& image, const GuestRun& run) {
  char tmpl[] = "/tmp/blklab-lab-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("cannot make a work directory under /tmp");
  const std::string work = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{work};

  // The image's archive, NUL padding to a 4-byte boundary, then this run's.
  BLKLAB_ASSIGN_OR_RETURN(std::string initrd, ReadFile(image.dir + "/base.cpio.gz"));
  while (initrd.size() % 4 != 0) initrd.push_back('\0');
  std::vector<std::pair<std::string, std::string>> files = {{"lab/run.sh", run.run_script}};
  files.insert(files.end(), run.files.begin(), run.files.end());
  initrd += NewcArchive(files);
  BLKLAB_RETURN_IF_ERROR(util::WriteStringToFile(work + "/initrd", initrd, "the run's initramfs"));

  GuestOutput out;
  out.accel = KvmUsable() ? "kvm" : "tcg";
  std::vector<std::string> args = {"qemu-system-x86_64"};
  if (out.accel == "kvm") {
    args.insert(args.end(), {"-accel", "kvm", "-cpu", "host"});
  } else {
    args.insert(args.end(), {"-accel", "tcg,thread=multi", "-cpu", "max"});
  }
  std::vector<std::string> cmdline = {"console=ttyS0", "panic=-1", "loglevel=1"};
  cmdline.insert(cmdline.end(), run.kernel_cmdline.begin(), run.kernel_cmdline.end());
  args.insert(args.end(), {"-smp", absl::StrCat(run.vcpus), "-m", absl::StrCat(run.memory_mib), "-nic", "none",
                           "-kernel", image.dir + "/vmlinuz", "-initrd", work + "/initrd", "-append",
                           absl::StrJoin(cmdline, " "), "-display", "none", "-monitor", "none", "-serial",
                           "file:" + work + "/console", "-serial", "file:" + work + "/out", "-no-reboot"});
  args.insert(args.end(), run.qemu_args.begin(), run.qemu_args.end());

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    const int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  bool timed_out = false;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(run.timeout_s)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.transcript = ReadFile(work + "/out").value_or("");
  out.console_tail = Tail(ReadFile(work + "/console").value_or(""), 15);
  ParseTranscript(out.transcript, out);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out.transcript.empty()) {
    return absl::FailedPreconditionError("qemu-system-x86_64 could not be started (scripts/kernel-lab-image installs it)");
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("the guest did not power off within ", run.timeout_s,
                                                    " s; its console ended:\n", out.console_tail));
  }
  if (out.exit_status < 0) {
    return absl::InternalError(absl::StrCat("the guest stopped before its script ended; console:\n", out.console_tail,
                                            "\noutput:\n", Tail(out.transcript, 15)));
  }
  return out;
}

}  // namespace blklab::kernel_lab
