// engine/workload/io_engine_info.h
//
// The I/O engines blklab models, as the parser and the run plan see them:
// each engine's compact id (IoEngine, what a JobSpec holds), fio's name for
// it (`ioengine=`) and its aliases, and its flags -- the part of fio's
// registered `struct ioengine_ops` that says what an engine is (its name and
// FIO_SYNCIO, FIO_DISKLESSIO, FIO_FAKEIO, ... in ioengines.h), plus the
// capabilities blklab's own checks test. Code asks a flag
// (IoEngineHas(e, IoEngineFlag::kSync)), never a list of engine names.
//
// The table has one row per engine (io_engine_info.cc). What an engine does
// -- its model's factory and its own checks of a job -- is registered one
// layer up under the same id (engine/job/io_engine_type.h), since this layer
// may not include engine/job.
//
// Invariants: one row per IoEngine value except kUnmodelled, in IoEngine
// order (row i has id i; a static_assert holds it); names and aliases are
// unique across rows. kUnmodelled has no row: it has no name (the job's
// ioengine_name keeps what was written) and no flag.
// Thread-safety: immutable constant data; safe from any thread.
// Cost: lookups by id are an array index (IsSynchronous is on the I/O path);
// lookups by name scan the rows (parse time only). No allocation.
#ifndef BLKLAB_ENGINE_WORKLOAD_IO_ENGINE_INFO_H_
#define BLKLAB_ENGINE_WORKLOAD_IO_ENGINE_INFO_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace blklab::workload {

// Engines blklab models. kUnmodelled: any other engine name (kept in
// JobSpec::ioengine_name); only accepted with ParseOptions::accept_unmodelled.
enum class IoEngine : uint8_t {
  kPsync,
  kSync,
  kVsync,
  kPvsync,
  kPvsync2,
  kIoUring,
  kIoUringCmd,
  kLibaio,
  kPosixaio,
  kNull,
  kFalloc,     // fallocate(2) per I/O: reads allocate (KEEP_SIZE), writes allocate, trims punch holes
  kFtruncate,  // ftruncate(2) to each write's offset
  kSg,         // SG_IO per I/O on a SCSI disk (sg_write_mode= picks the command)
  kSplice,     // splice(2) and vmsplice(2) through a pipe, buffered
  kMmap,       // memcpy to or from a shared mapping of the file (page faults)
  kUnmodelled,
};
inline constexpr int kNumModelledIoEngines = static_cast<int>(IoEngine::kUnmodelled);

// What an engine is (bits; combine with |). fio's flag where fio has one.
enum class IoEngineFlag : uint32_t {
  kNone = 0,
  // FIO_SYNCIO: every I/O completes inside its own call, so a job keeps at
  // most one in flight (iodepth does not apply) and fio reports no slat.
  kSync = 1u << 0,
  // A file operation per I/O instead of moving data (falloc, ftruncate):
  // no bio and no page cache; the engine's check wants a regular file.
  kFileOperation = 1u << 1,
  // FIO_DISKLESSIO: no file or device; its I/O never enters the kernel
  // (fio's null engine).
  kDiskless = 1u << 2,
  // FIO_FAKEIO: I/O is only pretended, so verify checks nothing (and fio's
  // verify threads, verify_async=, have nothing to do).
  kFakeIo = 1u << 3,
  // Never through the page cache, whatever direct= says (passthrough
  // commands, file operations, no I/O at all).
  kNoPageCache = 1u << 4,
  // Always through the page cache, even with direct=1 (the mmap engine:
  // direct=1 only makes it msync each I/O).
  kAlwaysPageCache = 1u << 5,
  // NVMe commands through a namespace's generic character device
  // (/dev/ngXnY): passthrough requests (blk_execute_rq_nowait), and the
  // only engine such a device accepts.
  kNvmePassthrough = 1u << 6,
  // SCSI commands through SG_IO on a SCSI disk's block device (sg); its
  // VERIFY commands compare against the disk's medium content.
  kScsiPassthrough = 1u << 7,
};
constexpr IoEngineFlag operator|(IoEngineFlag a, IoEngineFlag b) {
  return static_cast<IoEngineFlag>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

// One modelled engine.
struct IoEngineInfo {
  IoEngine id;
  const char* name;     // fio's name, as `ioengine=` takes it
  const char* aliases;  // other names fio accepts for it, space separated ("" if none)
  IoEngineFlag flags;

  constexpr bool Has(IoEngineFlag flag) const {
    return (static_cast<uint32_t>(flags) & static_cast<uint32_t>(flag)) != 0;
  }
};

// Every modelled engine, in IoEngine order.
std::span<const IoEngineInfo> ModelledIoEngines();
// The row of `e`; null for kUnmodelled.
const IoEngineInfo* FindIoEngineInfo(IoEngine e);
// The row whose name or one of whose aliases is `name` (exact match, as
// fio's); null if no modelled engine has it.
const IoEngineInfo* FindIoEngineInfoByName(std::string_view name);
// Whether engine `e` has `flag`; false for kUnmodelled.
bool IoEngineHas(IoEngine e, IoEngineFlag flag);

// True for engines that keep at most one I/O in flight per job:
// IoEngineHas(e, IoEngineFlag::kSync), and true for kUnmodelled (as before
// the table: an engine blklab does not model counts as synchronous).
bool IsSynchronous(IoEngine e);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_IO_ENGINE_INFO_H_
