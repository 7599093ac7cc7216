#include "clients/kernel_lab/kernel_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/report/json.h"

namespace blklab::kernel_lab {
namespace {

using report::Json;

std::vector<std::string> Words(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

int64_t Num(absl::string_view s) {
  int64_t v = 0;
  return absl::SimpleAtoi(s, &v) ? v : 0;
}

const std::string& Section(const GuestOutput& out, const std::string& name) {
  static const std::string kEmpty;
  auto it = out.sections.find(name);
  return it == out.sections.end() ? kEmpty : it->second;
}

// "name n n n ..." lines -> name -> numbers.
std::map<std::string, std::vector<int64_t>> NamedRows(const std::string& text) {
  std::map<std::string, std::vector<int64_t>> rows;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> w = Words(line);
    if (w.size() < 2) continue;
    std::vector<int64_t>& v = rows[w[0]];
    for (size_t i = 1; i < w.size(); ++i) v.push_back(Num(w[i]));
  }
  return rows;
}

std::vector<int64_t> Minus(const std::vector<int64_t>& after, const std::vector<int64_t>* before) {
  std::vector<int64_t> d = after;
  if (before == nullptr) return d;
  for (size_t i = 0; i < d.size() && i < before->size(); ++i) d[i] -= (*before)[i];
  return d;
}

// /proc/interrupts and /proc/softirqs: a header of CPUs, then "NAME: n n ... [description]".
std::vector<CounterRow> CounterDeltas(const std::string& before, const std::string& after) {
  auto parse = [](const std::string& text) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> rows;
    int cpus = -1;
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      std::vector<std::string> w = Words(line);
      if (w.empty()) continue;
      if (cpus < 0) {
        cpus = static_cast<int>(w.size());
        continue;
      }
      std::string name = w[0];
      if (!name.empty() && name.back() == ':') name.pop_back();
      std::vector<int64_t> v;
      size_t i = 1;
      for (; i < w.size() && static_cast<int>(v.size()) < cpus; ++i) {
        int64_t x = 0;
        if (!absl::SimpleAtoi(w[i], &x)) break;
        v.push_back(x);
      }
      std::string what;
      for (; i < w.size(); ++i) absl::StrAppend(&what, what.empty() ? "" : " ", w[i]);
      if (!what.empty()) absl::StrAppend(&name, " (", what, ")");
      rows.emplace_back(name, v);
    }
    return rows;
  };
  const auto b = parse(before);
  std::vector<CounterRow> out;
  for (const auto& [name, v] : parse(after)) {
    CounterRow row{name, v, 0};
    for (const auto& [bn, bv] : b) {
      if (bn == name) row.per_cpu = Minus(v, &bv);
    }
    for (int64_t x : row.per_cpu) row.total += x;
    if (row.total != 0) out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

KernelSection ParseKernelSection(const GuestOutput& out) {
  KernelSection k;
  k.accel = out.accel;
  k.wall_seconds = out.wall_seconds;
  k.release = std::string(absl::StripAsciiWhitespace(Section(out, "uname")));
  for (absl::string_view line : absl::StrSplit(Section(out, "devices"), '\n', absl::SkipEmpty())) {
    std::vector<std::string> w = Words(line);
    if (w.size() == 2) k.devices.emplace_back(w[0], w[1]);
  }
  const auto disk_before = NamedRows(Section(out, "diskstats-before"));
  for (const auto& [guest, after] : NamedRows(Section(out, "diskstats-after"))) {
    auto b = disk_before.find(guest);
    k.disk[SpecName(k, guest)] = Minus(after, b == disk_before.end() ? nullptr : &b->second);
  }
  const auto stat_before = NamedRows(Section(out, "stat-before"));
  const auto stat_after = NamedRows(Section(out, "stat-after"));
  if (auto a = stat_after.find("cpu"); a != stat_after.end()) {
    auto b = stat_before.find("cpu");
    const std::vector<int64_t> d = Minus(a->second, b == stat_before.end() ? nullptr : &b->second);
    const char* modes[] = {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};
    for (size_t i = 0; i < std::size(modes) && i < d.size(); ++i) k.cpu_modes.emplace_back(modes[i], d[i]);
  }
  k.interrupts = CounterDeltas(Section(out, "interrupts-before"), Section(out, "interrupts-after"));
  k.softirqs = CounterDeltas(Section(out, "softirqs-before"), Section(out, "softirqs-after"));
  // /proc/schedstat v15: "cpuN" then 9 numbers; the last three are the time
  // run (ns), the time waiting to run (ns) and the timeslices.
  const auto sched_before = NamedRows(Section(out, "schedstat-before"));
  CounterRow run{"run_ns", {}, 0}, wait{"wait_ns", {}, 0}, slices{"timeslices", {}, 0};
  for (const auto& [name, after] : NamedRows(Section(out, "schedstat-after"))) {
    if (!absl::StartsWith(name, "cpu") || after.size() < 9) continue;
    auto b = sched_before.find(name);
    const std::vector<int64_t> d = Minus(after, b == sched_before.end() ? nullptr : &b->second);
    for (auto [row, idx] : {std::pair{&run, 6}, std::pair{&wait, 7}, std::pair{&slices, 8}}) {
      row->per_cpu.push_back(d[idx]);
      row->total += d[idx];
    }
  }
  if (!run.per_cpu.empty()) k.schedstat = {run, wait, slices};
  k.debugfs = Section(out, "debugfs");
  k.fio_stderr = Section(out, "fio-stderr");
  return k;
}

std::string GuestName(const KernelSection& k, const std::string& spec_name) {
  for (const auto& [spec, guest] : k.devices) {
    if (spec == spec_name) return guest;
  }
  return spec_name;
}

std::string SpecName(const KernelSection& k, const std::string& guest_name) {
  for (const auto& [spec, guest] : k.devices) {
    if (guest == guest_name) return spec;
  }
  return guest_name;
}

double GuestCpuBusy(const KernelSection& k) {
  int64_t total = 0, idle = 0;
  for (const auto& [mode, ticks] : k.cpu_modes) {
    total += ticks;
    if (mode == "idle" || mode == "iowait") idle += ticks;
  }
  return total > 0 ? 1.0 - static_cast<double>(idle) / static_cast<double>(total) : 0.0;
}

std::string KernelSectionText(const KernelSection& k) {
  std::string s = absl::StrFormat("\nkernel (from the guest: Linux %s under QEMU/%s, %.1f s wall):\n", k.release,
                                  k.accel, k.wall_seconds);
  absl::StrAppend(&s, "  devices:");
  for (const auto& [spec, guest] : k.devices) {
    absl::StrAppend(&s, " ", spec, spec == guest ? "" : absl::StrCat(" (", guest, ")"));
  }
  absl::StrAppend(&s, "\n");
  for (const auto& [spec, guest] : k.devices) {
    auto it = k.disk.find(spec);
    if (it == k.disk.end() || it->second.size() < 11) continue;
    const std::vector<int64_t>& d = it->second;
    auto per_io = [](int64_t sectors, int64_t ios) { return ios > 0 ? 512.0 * sectors / ios / 1024.0 : 0.0; };
    absl::StrAppendFormat(&s,
                          "  %s: ios=%d/%d, merge=%d/%d, sectors=%d/%d, KiB/io=%.1f/%.1f, ticks=%d/%d ms, "
                          "io_ticks=%d ms, in_queue=%d ms\n",
                          spec, d[0], d[4], d[1], d[5], d[2], d[6], per_io(d[2], d[0]), per_io(d[6], d[4]), d[3], d[7],
                          d[9], d[10]);
  }
  int64_t total = 0;
  for (const auto& [mode, ticks] : k.cpu_modes) total += ticks;
  if (total > 0) {
    absl::StrAppend(&s, "  cpu:");
    for (const auto& [mode, ticks] : k.cpu_modes) absl::StrAppendFormat(&s, " %s=%.1f%%", mode, 100.0 * ticks / total);
    absl::StrAppend(&s, "\n");
  }
  auto rows = [&s](const char* title, const std::vector<CounterRow>& rows) {
    if (rows.empty()) return;
    absl::StrAppend(&s, "  ", title, ":\n");
    for (const CounterRow& r : rows) {
      absl::StrAppend(&s, "    ", r.name, ": ", r.total, " (per CPU:");
      for (int64_t x : r.per_cpu) absl::StrAppend(&s, " ", x);
      absl::StrAppend(&s, ")\n");
    }
  };
  rows("interrupts", k.interrupts);
  rows("softirqs", k.softirqs);
  rows("schedstat", k.schedstat);
  if (!k.debugfs.empty()) {
    absl::StrAppend(&s, "  blk-mq debugfs after the run:\n");
    for (absl::string_view line : absl::StrSplit(k.debugfs, '\n', absl::SkipEmpty())) {
      absl::StrAppend(&s, "    ", line, "\n");
    }
  }
  return s;
}

std::string KernelSectionJson(const KernelSection& k) {
  Json o = Json::Object();
  o.Add("release", k.release);
  o.Add("accel", k.accel);
  o.AddDouble("wall_seconds", k.wall_seconds);
  Json devices = Json::Array();
  for (const auto& [spec, guest] : k.devices) {
    Json d = Json::Object();
    d.Add("name", spec);
    d.Add("guest_name", guest);
    if (auto it = k.disk.find(spec); it != k.disk.end()) {
      for (size_t i = 0; i < it->second.size() && i < std::size(kDiskStatFields); ++i) {
        d.AddInt(kDiskStatFields[i], it->second[i]);
      }
    }
    devices.Push(std::move(d));
  }
  o.Add("devices", std::move(devices));
  Json cpu = Json::Object();
  for (const auto& [mode, ticks] : k.cpu_modes) cpu.AddInt(mode, ticks);
  o.Add("cpu_ticks", std::move(cpu));
  auto rows = [](const std::vector<CounterRow>& rows) {
    Json a = Json::Object();
    for (const CounterRow& r : rows) {
      Json v = Json::Array();
      for (int64_t x : r.per_cpu) v.Push(Json::Int(x));
      a.Add(r.name, std::move(v));
    }
    return a;
  };
  o.Add("interrupts", rows(k.interrupts));
  o.Add("softirqs", rows(k.softirqs));
  o.Add("schedstat", rows(k.schedstat));
  o.Add("debugfs", k.debugfs);
  return o.Print();
}

std::string WithKernelJson(const std::string& fio_json, const KernelSection& k) {
  const size_t end = fio_json.rfind('}');
  if (end == std::string::npos) return fio_json;
  return absl::StrCat(fio_json.substr(0, end), ",\n  \"kernel\" : ", KernelSectionJson(k), "\n}\n");
}

}  // namespace blklab::kernel_lab
