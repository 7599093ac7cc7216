// engine/job/job_iolog.cc
//
// JobThread's files (fio's filesetup.c: open, close, invalidate, pre_read,
// unlink, the generators' reseeding) and its write_iolog (iolog.c).
#include "engine/job/job_thread.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/job/job_iolog.h"

namespace blklab::job {

void JobThread::SetFile(IoU* u, uint32_t f) {
  const JobFile& file = config_.files[f];
  u->file = f;
  u->queue = file.queue;
  u->inode = file.inode;
  u->mapping = file.mapping;
  u->ra = &ra_[f];
  u->vma = vmas_.empty() ? nullptr : &vmas_[f];
}

void JobThread::OpenRaState(size_t f) {
  const model::AddressSpace* m = config_.files[f].mapping;
  if (m == nullptr) return;
  ra_[f] = model::OpenRaState(*m, FadviseOf(spec_));
}

void JobThread::CloseFiles() {
  for (model::VmArea& vma : vmas_) {
    if (vma.m != nullptr) ctx_.page_cache->Munmap(cpu(), vma);
  }
  for (size_t f = 0; f < config_.files.size(); ++f) IologClose(f);
}

void JobThread::OpenFiles() {
  for (size_t f = 0; f < config_.files.size(); ++f) OpenRaState(f);
}

void JobThread::ReopenFiles() {
  CloseFiles();
  if (spec_.unlink_each_loop) UnlinkFiles();
  InvalidateFiles();
  OpenFiles();
}

void JobThread::InvalidateFiles() {
  // pre_read clears invalidate: what it read stays.
  if (!spec_.invalidate || spec_.pre_read || ctx_.page_cache == nullptr) return;
  for (const JobFile& f : config_.files) {
    if (f.mapping != nullptr) ctx_.page_cache->Invalidate(cpu(), *f.mapping);
  }
}

sim::Task JobThread::PreReadFiles() {
  if (!spec_.pre_read || ctx_.page_cache == nullptr) co_return;
  const sim::SimTime started = cpu().now();
  const uint64_t chunk = std::max<uint64_t>(workload::MaxBlockSize(spec_, workload::Direction::kRead), 1);
  for (size_t f = 0; f < config_.files.size(); ++f) {
    model::AddressSpace* m = config_.files[f].mapping;
    if (m == nullptr) continue;
    const uint64_t start = config_.files[f].plan.region_start - m->base_bytes;
    const uint64_t end = start + config_.files[f].plan.region_bytes;
    for (uint64_t pos = start; pos < end && !terminated_; pos += chunk) {
      co_await cpu().Sync();
      sim::Cpu& c = cpu();
      sim::StackFrame frame(c, fn_pread_file_);
      c.Charge(fn_pread_file_, kernel_.costs().syscall_entry_exit);
      co_await ctx_.page_cache->Read(c, ra_[f], *m, pos, static_cast<uint32_t>(std::min(chunk, end - pos)));
      co_await cpu().PreemptPoint();
    }
    OpenRaState(f);  // fio closes the file after its pre-read
  }
  // The job's clock (ramp_time, runtime) starts after the pre-read.
  const sim::SimTime spent = cpu().now() - started;
  config_.ramp_end += spent;
  if (config_.end_at != sim::kSimTimeNever) config_.end_at += spent;
}

void JobThread::UnlinkFiles() {
  for (const JobFile& f : config_.files) {
    if (f.inode == nullptr) continue;  // a device: nothing to delete
    if (f.mapping != nullptr) {
      ctx_.page_cache->TruncateRange(cpu(), *f.mapping, 0, (std::max<uint64_t>(f.mapping->size_bytes, 1) - 1) >> model::kPageShift);
    }
    const uint64_t start = f.inode->base_bytes;
    const uint64_t len = f.inode->size_bytes;
    if (f.content != nullptr) f.content->Trim(start, len);
    if (f.medium != nullptr) f.medium->Write(start >> model::kSectorShift, len >> model::kSectorShift, MediumContent::kZero);
  }
}

FileService JobThread::FreshFiles() const {
  std::vector<workload::ClonePlan> plans;
  for (const JobFile& f : config_.files) plans.push_back(f.plan);
  absl::StatusOr<FileService> g = FileService::Create(spec_, plans, config_.thread_number, config_.seed);
  BLKLAB_CHECK(g.ok());  // the same inputs made gen_
  return *std::move(g);
}

void JobThread::IologInit() {
  if (spec_.write_iolog.empty()) return;
  // init_iolog_write: the version line and every file added.
  iolog_.start = cpu().now();
  iolog_.text = "fio version 3 iolog\n";
  iolog_.open.assign(config_.files.size(), false);
  for (size_t f = 0; f < config_.files.size(); ++f) IologFile(f, "add");
}

void JobThread::IologClose(size_t f) {
  if (spec_.write_iolog.empty() || !iolog_.open[f]) return;
  iolog_.open[f] = false;
  IologFile(f, "close");
}

void JobThread::IologFile(size_t f, const char* act) {
  if (spec_.write_iolog.empty()) return;
  absl::StrAppend(&iolog_.text, (cpu().now() - iolog_.start) / 1000, " ", config_.files[f].name, " ", act, "\n");
}

void JobThread::IologIo(size_t f, const char* ddir, uint64_t offset, uint64_t bytes) {
  if (spec_.write_iolog.empty()) return;
  if (!iolog_.open[f]) {
    iolog_.open[f] = true;
    IologFile(f, "open");
  }
  absl::StrAppend(&iolog_.text, (cpu().now() - iolog_.start) / 1000, " ", config_.files[f].name, " ", ddir, " ", offset,
                  " ", bytes, "\n");
}

}  // namespace blklab::job
