// engine/job/job_verify.cc
//
// JobThread's verify (fio's verify.c, backend.c do_verify, io_u.c
// check_get_verify, the io_piece log of log_io_piece / get_next_verify),
// and the content a kept medium records at reap (sg VERIFY).
#include "engine/job/job_thread.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/job/job_verify.h"

namespace blklab::job {

namespace {
// fio's checksum per verify= type: its name in messages and its cost row
// (nullptr: none over the data).
struct VerifyAlgo {
  const char* option;
  const char* name;
  int64_t host::CostTable::*per_kib;
};
constexpr VerifyAlgo kVerifyAlgos[] = {
    {"md5", "md5", &host::CostTable::fio_verify_md5_per_kib},
    {"crc64", "crc64", &host::CostTable::fio_verify_crc64_per_kib},
    {"crc32", "crc32", &host::CostTable::fio_verify_crc32_per_kib},
    {"crc32c", "crc32c", &host::CostTable::fio_verify_crc32c_per_kib},
    {"crc32c-intel", "crc32c", &host::CostTable::fio_verify_crc32c_per_kib},
    {"crc16", "crc16", &host::CostTable::fio_verify_crc16_per_kib},
    {"crc7", "crc7", &host::CostTable::fio_verify_crc7_per_kib},
    {"sha1", "sha1", &host::CostTable::fio_verify_sha1_per_kib},
    {"sha256", "sha256", &host::CostTable::fio_verify_sha256_per_kib},
    {"sha512", "sha512", &host::CostTable::fio_verify_sha512_per_kib},
    {"sha3-224", "sha3-224", &host::CostTable::fio_verify_sha3_224_per_kib},
    {"sha3-256", "sha3-256", &host::CostTable::fio_verify_sha3_256_per_kib},
    {"sha3-384", "sha3-384", &host::CostTable::fio_verify_sha3_384_per_kib},
    {"sha3-512", "sha3-512", &host::CostTable::fio_verify_sha3_512_per_kib},
    {"xxhash", "xxhash", &host::CostTable::fio_verify_xxhash_per_kib},
    {"meta", "meta", nullptr},
    {"pattern", "pattern", nullptr},
};

int64_t PerKib(int64_t ns_per_kib, uint64_t bytes) {
  return static_cast<int64_t>((static_cast<unsigned __int128>(bytes) * static_cast<uint64_t>(ns_per_kib)) >> 10);
}
}  // namespace

void JobThread::InitVerify() {
  verify_.enabled = !spec_.verify.empty() && spec_.verify != "0";
  if (!verify_.enabled) return;
  using workload::Direction;
  const bool writes = workload::DirectionActive(spec_.rw, Direction::kWrite);
  const bool reads = workload::DirectionActive(spec_.rw, Direction::kRead);
  verify_.headers = spec_.verify != "null";
  // ioengine=null is FIO_FAKEIO: verify_io_u pretends every block checked.
  verify_.checks = verify_.headers && config_.files.front().queue != nullptr;
  verify_.log_pieces = writes && spec_.do_verify && !spec_.experimental_verify;
  verify_.piece_list = gen_.random_map_enabled();  // file_randommap(): write order, else sorted by offset
  // fixup_options: the header interval.
  const uint64_t wmin = workload::MinBlockSize(spec_, Direction::kWrite);
  const uint64_t wmax = workload::MaxBlockSize(spec_, Direction::kWrite);
  uint64_t iv = spec_.verify_interval;
  if (wmax != wmin && iv == 0) iv = wmin;
  if (iv > wmin) {
    iv = wmin;
  } else if (reads && iv > workload::MinBlockSize(spec_, Direction::kRead)) {
    iv = workload::MinBlockSize(spec_, Direction::kRead);
  }
  if (iv == 0 || wmin % iv != 0 || wmax % iv != 0) iv = std::gcd(wmin, wmax);
  verify_.interval = static_cast<uint32_t>(std::min<uint64_t>(iv, UINT32_MAX));
  // verify_header checks numberio for jobs that write fixed-size blocks and
  // are not time_based.
  verify_.check_numberio = writes && wmin == wmax && !spec_.time_based;
  const host::CostTable& c = kernel_.costs();
  verify_.fill_per_kib = verify_.headers && spec_.verify_pattern.empty() ? c.fio_verify_fill_per_kib : 0;
  for (const VerifyAlgo& a : kVerifyAlgos) {
    if (spec_.verify != a.option) continue;
    verify_.name = a.name;
    verify_.hash_per_kib = a.per_kib != nullptr ? c.*a.per_kib : 0;
  }
  // do_io's total_bytes: size (io_size for random overwrites without a
  // map), and size again for the backlog's verify reads.
  total_bytes_ = config_.plan.region_bytes;
  if (writes && workload::IsRandom(spec_.rw) && spec_.norandommap) {
    total_bytes_ = std::max(total_bytes_, config_.plan.io_limit_bytes);
  }
  if (writes && spec_.verify_backlog > 0) total_bytes_ += config_.plan.region_bytes;
}

void JobThread::PopulateVerify(IoU* u, uint64_t bytes) {
  // populate_verify_io_u fills the buffer and checksums each header's
  // chunk; log_io_piece logs the write.
  if (verify_.headers) cpu().Charge(fn_verify_fill_, PerKib(verify_.fill_per_kib + verify_.hash_per_kib, bytes));
  if (verify_.log_pieces) LogPiece(u);
}

void JobThread::LogPiece(IoU* u) {
  // log_io_piece: in flight until reaped. Without a random map the log is
  // sorted by offset and a new write drops the entries it overlaps.
  int32_t idx;
  if (!verify_.free_pieces.empty()) {
    idx = verify_.free_pieces.back();
    verify_.free_pieces.pop_back();
  } else {
    if (verify_.pieces.size() >= DeviceContent::kMaxRecords) {
      // fio allocates an io_piece per logged write; the model bounds them
      // as it bounds the device's headers.
      kernel_.Fail(absl::ResourceExhaustedError(absl::StrCat(
          "job '", spec_.name, "': verify: more than ", DeviceContent::kMaxRecords,
          " written blocks wait to be verified; write less (size=) or verify as the job goes (verify_backlog=)")));
      stopping_ = terminated_ = true;
      return;
    }
    idx = static_cast<int32_t>(verify_.pieces.size());
    verify_.pieces.emplace_back();
  }
  const uint64_t off = u->bio.sector << model::kSectorShift;
  verify_.pieces[idx] = VerifyPiece{off, u->file, u->bio.bytes, u->numberio, /*in_flight=*/true, /*orphan=*/false};
  u->piece = idx;
  ++verify_.hist_len;
  if (verify_.piece_list) {
    verify_.hist_list.push_back(idx);
    return;
  }
  const uint64_t end = off + u->bio.bytes;
  auto it = verify_.hist_tree.lower_bound({u->file, off});
  if (it != verify_.hist_tree.begin()) {
    auto prev = std::prev(it);
    const VerifyPiece& p = verify_.pieces[prev->second];
    if (prev->first.first == u->file && p.offset + p.len > off) it = prev;
  }
  while (it != verify_.hist_tree.end() && it->first.first == u->file && it->first.second < end) {
    VerifyPiece& old = verify_.pieces[it->second];
    if (old.in_flight) {
      old.orphan = true;
    } else {
      verify_.free_pieces.push_back(it->second);
    }
    --verify_.hist_len;
    it = verify_.hist_tree.erase(it);
  }
  verify_.hist_tree.emplace(std::make_pair(u->file, off), idx);
}

void JobThread::SetVerifyRead(IoU* u, uint32_t file, uint64_t offset, uint32_t len, uint16_t numberio) {
  SetFile(u, file);
  u->dir = stats::Dir::kRead;
  u->bio.op = model::ReqOp::kRead;
  u->bio.sector = offset >> model::kSectorShift;
  u->bio.bytes = len;
  u->numberio = numberio;
  u->verify = true;
}

bool JobThread::GetNextVerify(IoU* u) {
  // get_next_verify: the first entry, once its write has been reaped.
  int32_t idx = -1;
  if (!verify_.hist_tree.empty()) {
    auto it = verify_.hist_tree.begin();
    if (verify_.pieces[it->second].in_flight) return false;
    idx = it->second;
    verify_.hist_tree.erase(it);
  } else if (!verify_.hist_list.empty()) {
    if (verify_.pieces[verify_.hist_list.front()].in_flight) return false;
    idx = verify_.hist_list.front();
    verify_.hist_list.pop_front();
  } else {
    return false;
  }
  --verify_.hist_len;
  const VerifyPiece p = verify_.pieces[idx];
  verify_.free_pieces.push_back(idx);
  SetVerifyRead(u, p.file, p.offset, p.len, p.numberio);
  u->ver_list = true;
  return true;
}

bool JobThread::CheckGetVerify(IoU* u) {
  // check_get_verify: every verify_backlog logged writes (unless the last
  // reaped I/O was a read), a batch of verify reads.
  if (verify_.hist_len == 0) return false;
  bool get = verify_.batch > 0;
  if (!get && verify_.hist_len % spec_.verify_backlog == 0 && !verify_.last_reaped_read) {
    verify_.batch = spec_.verify_backlog_batch > 0 ? spec_.verify_backlog_batch : spec_.verify_backlog;
    get = true;
  }
  if (get && GetNextVerify(u)) {
    --verify_.batch;
    return true;
  }
  return false;
}

bool JobThread::NextReplayedVerify(IoU* u) {
  // experimental_verify: replay the job's I/O sequence; reads are skipped,
  // writes (and trims) become verify reads, until the bytes verified reach
  // the bytes written.
  const uint64_t min_bs = config_.plan.min_block;
  for (;;) {
    if (verify_.bytes_done + min_bs > verify_.write_bytes_done) return false;
    const FileService::Next next = verify_.replay->NextIo();
    const workload::GeneratedIo& io = next.io;
    if (io.direction == workload::Direction::kRead) continue;
    const uint16_t n = static_cast<uint16_t>(verify_.read_issues++);
    SetVerifyRead(u, next.file, io.offset, static_cast<uint32_t>(io.length), n);
    // A trimmed block reads as zeroes (trim_verify_zero): not a header check.
    if (io.direction == workload::Direction::kTrim) u->verify = false;
    return true;
  }
}

sim::Task JobThread::VerifyPhase() {
  // do_verify: sync the file first (one syscall: the simulated devices have
  // no volatile cache to flush), then read back what the log holds (or the
  // replayed writes) until it is empty, the runtime is over or a check fails.
  if (config_.files.front().queue != nullptr) cpu().Charge(fn_io_sync_, kernel_.costs().syscall_entry_exit);
  if (spec_.experimental_verify) {
    // The job's sequence from its start: the inputs that made gen_.
    verify_.replay.emplace(FreshFiles());
    // td->verify_read_issues counts on across loops, as the writes' numberio.
    verify_.bytes_done = 0;
  }
  for (;;) {
    co_await cpu().Sync();
    if (cpu().now() >= config_.end_at) {
      terminated_ = true;
      break;
    }
    if (error_ != 0) break;
    IoU* u = free_.back();
    u->verify = false;
    u->ver_list = false;
    u->piece = -1;
    if (!(spec_.experimental_verify ? NextReplayedVerify(u) : GetNextVerify(u))) break;
    free_.pop_back();
    cpu().Charge(fn_get_io_u_, user_issue_ns_);
    StartIo(u);
    co_await QueueAndMaybeReap(u);
  }
  if (!queued_.empty()) co_await Commit();
  while (ctx_.in_flight > 0) co_await Reap(1, ctx_.in_flight);
}

void JobThread::CompleteVerify(IoU* u) {
  const uint64_t off = u->bio.sector << model::kSectorShift;
  if (u->dir == stats::Dir::kWrite) {
    if (u->piece >= 0) {
      VerifyPiece& p = verify_.pieces[u->piece];
      p.in_flight = false;
      if (p.orphan) verify_.free_pieces.push_back(u->piece);
    }
    if (!u->error) verify_.write_bytes_done += u->bio.bytes;
    DeviceContent* content = config_.files[u->file].content;
    if (content != nullptr && !u->error &&
        !content->Write(off, u->bio.bytes, verify_.headers ? verify_.interval : 0, u->numberio)) {
      kernel_.Fail(absl::ResourceExhaustedError(absl::StrCat(
          "job '", spec_.name, "': verify: the simulated ", config_.files[u->file].name, " would hold more than ",
          DeviceContent::kMaxRecords, " verify headers (", verify_.interval,
          "-byte verify_interval); write less (size=) or raise verify_interval")));
    }
  } else if (u->dir == stats::Dir::kTrim) {
    if (!u->error) verify_.write_bytes_done += u->bio.bytes;
    DeviceContent* content = config_.files[u->file].content;
    if (content != nullptr && !u->error) content->Trim(off, u->bio.bytes);
  } else if (u->verify && !u->error) {
    if (spec_.experimental_verify) verify_.bytes_done += u->bio.bytes;
    if (verify_.checks) VerifyRead(u);
  }
}

void JobThread::VerifyRead(IoU* u) {
  // verify_io_u: the header of each verify_interval chunk, then its
  // checksum. A bad header ends the block's check; a bad checksum too with
  // verify_fatal. Any failure is the job's error (EILSEQ).
  const uint64_t off = u->bio.sector << model::kSectorShift;
  const JobFile& file = config_.files[u->file];
  const uint32_t h = verify_.interval;
  cpu().Charge(fn_verify_check_, PerKib(verify_.hash_per_kib, u->bio.bytes));
  const std::optional<uint16_t> numberio =
      verify_.check_numberio && (u->ver_list || spec_.experimental_verify) ? std::optional<uint16_t>(u->numberio)
                                                                            : std::nullopt;
  bool failed = false;
  for (uint64_t k = 0; h > 0 && (k + 1) * h <= u->bio.bytes; ++k) {
    const uint64_t at = off + k * h;
    const DeviceContent::Check c = file.content->Verify(at, h, numberio);
    if (c.fault == DeviceContent::Fault::kNone) continue;
    if (c.fault == DeviceContent::Fault::kChecksum && spec_.verify == "meta") continue;  // header only
    failed = true;
    const std::string at_text = absl::StrFormat(
        " at file %s offset %d, length %d (requested block: offset=%d, length=%d)", file.name, at - file.base_bytes, h,
        off - file.base_bytes, u->bio.bytes);
    switch (c.fault) {
      case DeviceContent::Fault::kMagic:
        Message(absl::StrCat("verify: bad magic header 0, wanted acca", at_text));
        break;
      case DeviceContent::Fault::kLength:
        Message(absl::StrCat("verify: bad header length ", c.found_len, ", wanted ", h, at_text));
        break;
      case DeviceContent::Fault::kNumberio:
        Message(absl::StrCat("verify: bad header numberio ", c.found_numberio, ", wanted ", *numberio, at_text));
        break;
      case DeviceContent::Fault::kChecksum:
        Message(absl::StrFormat("%.8s: verify failed at file %s offset %d, length %d (requested block: offset=%d, "
                                "length=%d, flags=%x)",
                                verify_.name, file.name, at - file.base_bytes, h, off - file.base_bytes, u->bio.bytes,
                                u->ver_list ? 0x88 : 0x8));
        break;
      case DeviceContent::Fault::kNone:
        break;
    }
    if (c.fault != DeviceContent::Fault::kChecksum || spec_.verify_fatal) break;
  }
  if (failed && error_ == 0) {
    error_ = 84;  // EILSEQ
    stopping_ = terminated_ = true;
  }
}

void JobThread::CompleteMedium(IoU* u, MediumContent& m) {
  if (u->error) return;
  const uint64_t sector = u->bio.sector;
  const uint64_t count = u->bio.bytes >> model::kSectorShift;
  const bool sg = spec_.ioengine == workload::IoEngine::kSg;
  if (u->dir == stats::Dir::kTrim) {
    m.Write(sector, count, MediumContent::kZero);  // unmapped blocks read as zeroes
    return;
  }
  if (u->dir != stats::Dir::kWrite) return;
  const workload::SgWriteMode mode = spec_.sg_write_mode;
  const uint64_t id = config_.data_id.has_value() ? *config_.data_id : m.UniqueId();
  if (sg && IsSgVerify(mode)) {
    if (mode == workload::SgWriteMode::kVerifyBytchk00) return;  // the medium only, no data compared
    const std::optional<uint64_t> bad = m.Compare(sector, count, id);
    if (!bad.has_value() || error_ != 0) return;
    // CHECK CONDITION, MISCOMPARE: SG_INFO_CHECK, so fio's sg engine sets
    // EIO and td_verror(fio_sgio_doio); io_completed logs the io_u.
    const JobFile& file = config_.files[u->file];
    Message(absl::StrCat("fio: io_u error on file ", file.name, ": Input/output error: write offset=",
                         (u->bio.sector << model::kSectorShift) - file.base_bytes, ", buflen=", u->bio.bytes,
                         " (blklab: VERIFY miscompare at LBA ", *bad - (file.base_bytes >> model::kSectorShift),
                         ")"));
    error_ = 5;  // EIO
    verror_ = "file:engines/sg.c:545, func=fio_sgio_doio, error=Input/output error";
    stopping_ = terminated_ = true;
    return;
  }
  const uint64_t written = sg && mode == workload::SgWriteMode::kWriteSameNdob ? MediumContent::kZero : id;
  if (!m.Write(sector, count, written)) {
    kernel_.Fail(absl::ResourceExhaustedError(absl::StrCat(
        "job '", spec_.name, "': the simulated ", config_.files[u->file].name, "'s content would need more than ",
        MediumContent::kMaxExtents, " extents; write less (size=) or use buffer_pattern=")));
  }
}

}  // namespace blklab::job
