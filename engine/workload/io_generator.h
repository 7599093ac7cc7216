// engine/workload/io_generator.h
//
// IoGenerator produces the I/O stream of one job clone, as fio's
// get_io_u()/get_next_offset()/get_next_buflen() (io_u.c) do: the direction
// of each I/O (rw pattern and rwmixread), its length (bs, bsrange or
// bssplit) and its offset (sequential with wrap and `:N` gaps, or random:
// uniform through a random map that touches every block once per pass unless
// norandommap, or zipf / pareto / normal / zoned distributions, mixed with
// sequential I/O by percentage_random).
//
// The generator does not decide when to stop: the engine stops a clone on
// ClonePlan::io_limit_bytes, number_ios, runtime or loops.
//
// Determinism: every random decision draws from its own sim::RngStream,
// seeded from (seed, decision, thread number); the same inputs give the same
// sequence, a different seed a different one.
// Invariants: every I/O lies inside [region_start, region_start + region_bytes)
//   and its offset is a multiple of the block alignment from region_start.
// Thread-safety: thread-compatible; one generator per clone.
// Cost: Next() does not allocate. The random map is a hierarchical bitmap
//   (one bit per minimum block, ~1.016 bits per block in all) allocated once
//   in Create(); finding a free block is O(levels).
#ifndef BLKLAB_ENGINE_WORKLOAD_IO_GENERATOR_H_
#define BLKLAB_ENGINE_WORKLOAD_IO_GENERATOR_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "engine/sim/rng.h"
#include "engine/workload/job_spec.h"

namespace blklab::workload {

// fio's default random seed (randrepeat without randseed=).
inline constexpr uint64_t kFioDefaultSeed = 0x89;

// What a clone works on once the device size is known (percentages,
// offset_increment and defaults resolved).
struct ClonePlan {
  uint64_t region_start = 0;   // bytes from the start of the device
  uint64_t region_bytes = 0;   // multiple of the minimum block size
  uint64_t io_limit_bytes = 0; // bytes to transfer per loop (io_size, else size)
  uint64_t number_ios = 0;     // 0: no limit
  uint64_t min_block = 0;      // smallest I/O of any active direction
  uint64_t max_block = 0;
  uint64_t device_bytes = 0;   // the target's size (fio's real_file_size)
  // A sequential pass that reaches the region's end ends the loop (fio
  // without time_based, io_size not above size); else it wraps around.
  bool pass_end_ends_loop = false;
};

// Resolves `spec` for clone `clone_index` on a device of `device_bytes`.
// With `nfiles` > 1 (filename=a:b, nrfiles=) this is one of the clone's
// files: size= is the job's total, each file gets an equal share of it
// (fio's setup_files), and io_limit_bytes stays the job's total.
// Errors (InvalidArgument) when the region is empty, beyond the device, or
// smaller than one maximal block.
absl::StatusOr<ClonePlan> ResolveClone(const JobSpec& spec, uint32_t clone_index,
                                       uint64_t device_bytes, uint32_t nfiles = 1);

// Whether pattern `rw` issues I/O in direction `d` (trimwrite: trims and
// writes).
bool DirectionActive(RwPattern rw, Direction d);

// One generated I/O.
struct GeneratedIo {
  uint64_t offset = 0;  // bytes from the start of the device
  uint64_t length = 0;
  Direction direction = Direction::kRead;
  // Sequential: the previous pass reached the region's end and this I/O
  // starts the next one at the beginning.
  bool new_pass = false;
};

// Hierarchical bitmap over `nbits` (fio's lib/axmap idea): level 0 has one
// bit per block, each higher level one bit per full word below.
class BlockMap {
 public:
  explicit BlockMap(uint64_t nbits = 0);
  uint64_t size() const { return nbits_; }
  uint64_t set_count() const { return set_count_; }
  bool Test(uint64_t bit) const;
  void Set(uint64_t bit);  // REQUIRES: bit < size()
  // First clear bit at or after `from`, wrapping to 0; size() if all set.
  uint64_t FindClear(uint64_t from) const;
  void Clear();

 private:
  uint64_t FindClearFrom(uint64_t from) const;  // no wrap; size() if none
  uint64_t nbits_ = 0;
  uint64_t set_count_ = 0;
  std::vector<std::vector<uint64_t>> levels_;
};

class IoGenerator {
 public:
  // Largest random map allocated (in blocks); larger regions run as if
  // norandommap were set (random_map_enabled() tells).
  static constexpr uint64_t kMaxRandomMapBlocks = uint64_t{1} << 31;

  // `seed`: the run's seed, used when the job has randrepeat=0 and no
  // randseed; otherwise the job's own seed is used (randseed, else fio's
  // fixed default), so runs repeat. `thread_number` separates clones,
  // `file_index` the files of a clone that works on several (one generator
  // per file: its own position, random map and draws).
  static absl::StatusOr<IoGenerator> Create(const JobSpec& spec, const ClonePlan& plan,
                                            uint32_t thread_number, uint64_t seed, uint32_t file_index = 0);

  IoGenerator(IoGenerator&&) = default;
  IoGenerator& operator=(IoGenerator&&) = default;
  IoGenerator(const IoGenerator&) = delete;
  IoGenerator& operator=(const IoGenerator&) = delete;

  // The next I/O. Never fails.
  GeneratedIo Next();
  // The same, with the direction the mix picked passed through `adjust`
  // before the length and offset are drawn (fio's rate_ddir switching a
  // mixed job to the direction that is behind its rate). `adjust` sees only
  // read or write picks of mixed patterns.
  GeneratedIo Next(absl::FunctionRef<Direction(Direction)> adjust);

  bool random_map_enabled() const { return use_map_; }
  // Completed passes over the region (random map resets, sequential wraps).
  uint64_t passes() const { return passes_; }

 private:
  IoGenerator() = default;
  Direction NextDirection();
  GeneratedIo NextIn(Direction d);
  uint64_t NextLength(Direction d);
  // True when direction d draws its block size per I/O (bsrange, bssplit):
  // fio then picks the offset first and a size that fits after it.
  bool VariableLength(Direction d) const;
  uint64_t MinLength(Direction d) const;
  // get_next_buflen with a range or split: drawn until the I/O fits in
  // `room` bytes (io_u_fits); the minimum when nothing larger does.
  uint64_t NextLengthFitting(Direction d, uint64_t room);
  uint64_t NextSequentialOffset(Direction d, uint64_t len, bool* new_pass);
  // *len: the I/O's length; with `variable`, drawn here after the offset
  // and cut at the first block the random map already has (fio's
  // mark_random_map), so each block is touched once per pass.
  uint64_t NextRandomOffset(Direction d, uint64_t* len, bool variable);
  uint64_t DistributionBlock(Direction d, uint64_t nblocks);
  uint64_t ZipfRank(uint64_t n);  // 1-based rank
  // random_generator=lfsr: the next block of a seeded permutation of
  // [0, nblocks), each block once per pass.
  uint64_t LfsrBlock(uint64_t nblocks);

  // Copied configuration (no reference to the JobSpec is kept).
  RwPattern rw_ = RwPattern::kRead;
  int64_t rw_modifier_ = 0;
  RwSequencer rw_sequencer_ = RwSequencer::kSequential;
  uint32_t rwmixread_ = 50;
  PerDir<uint64_t> bs_{};
  PerDir<SizeRange> bs_range_{};
  PerDir<std::vector<BsSplitEntry>> bssplit_;
  PerDir<uint32_t> bssplit_total_{};
  bool bs_unaligned_ = false;
  PerDir<uint32_t> percentage_random_{};
  DistributionKind dist_ = DistributionKind::kRandom;
  double dist_param_ = 0;
  double dist_center_ = -1;
  PerDir<std::vector<DistributionZone>> zones_;
  ClonePlan plan_;
  uint64_t align_ = 0;  // offset granularity (random map block)
  uint64_t cached_len_ = 0;         // NextRandomOffset's per-length divisions
  uint64_t cached_nblocks_ = 0;
  uint64_t cached_len_blocks_ = 0;

  sim::RngStream rng_offset_;
  sim::RngStream rng_bs_;
  sim::RngStream rng_mix_;
  sim::RngStream rng_pct_;

  bool use_map_ = false;
  BlockMap map_;
  PerDir<uint64_t> seq_pos_{};  // next sequential offset, relative to region
  // zonemode=strided (io_u.c setup_strided_zone_mode): sequential I/O stays
  // in the zone at zone_start_ until zone_size_ bytes were done there, then
  // moves zone_range_ + zone_skip_ on, wrapping to the region's start.
  uint64_t zone_size_ = 0;  // 0: no zones
  uint64_t zone_range_ = 0;
  uint64_t zone_skip_ = 0;
  uint64_t zone_start_ = 0;
  uint64_t zone_bytes_ = 0;
  uint64_t passes_ = 0;
  bool lfsr_ = false;                 // random_generator=lfsr (uniform random only)
  uint64_t lfsr_index_ = 0;           // position in the current pass
  std::array<uint64_t, 4> lfsr_keys_{};  // Feistel round keys
  int lfsr_half_bits_ = 1;               // each Feistel half's width
  uint64_t modifier_count_ = 0;  // I/Os since the last random offset (`:N`)
  uint64_t last_random_end_ = 0;
  uint64_t last_random_off_ = 0;
  bool pending_trim_write_ = false;
  GeneratedIo last_trim_{};
  uint64_t scatter_mult_ = 1;  // permutation of ranks for zipf/pareto
  // Zipf rejection-inversion constants (Hörmann & Derflinger).
  double zipf_hx1_ = 0, zipf_hn_ = 0, zipf_s_ = 0;
  uint64_t zipf_n_ = 0;
};

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_IO_GENERATOR_H_
