#include "engine/workload/io_generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/check.h"

namespace blklab::workload {
namespace {

// Zipf rejection-inversion helpers: log1p(x)/x and expm1(x)/x, stable at 0.
double Helper1(double x) { return std::fabs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x / 2.0; }
double Helper2(double x) { return std::fabs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x / 2.0; }

}  // namespace

bool DirectionActive(RwPattern rw, Direction d) {
  switch (rw) {
    case RwPattern::kRead:
    case RwPattern::kRandRead:
      return d == Direction::kRead;
    case RwPattern::kWrite:
    case RwPattern::kRandWrite:
      return d == Direction::kWrite;
    case RwPattern::kTrim:
    case RwPattern::kRandTrim:
      return d == Direction::kTrim;
    case RwPattern::kReadWrite:
    case RwPattern::kRandRw:
      return d != Direction::kTrim;
    case RwPattern::kTrimWrite:
    case RwPattern::kRandTrimWrite:
      return d != Direction::kRead;
  }
  return false;
}

// ---------------- BlockMap ----------------

BlockMap::BlockMap(uint64_t nbits) : nbits_(nbits) {
  uint64_t n = nbits;
  do {
    const uint64_t words = std::max<uint64_t>(1, (n + 63) / 64);
    levels_.emplace_back(words, 0);
    n = words;
  } while (n > 1);
}

bool BlockMap::Test(uint64_t bit) const {
  return (levels_[0][bit / 64] >> (bit % 64)) & 1;
}

void BlockMap::Set(uint64_t bit) {
  BLKLAB_DCHECK(bit < nbits_);
  if (Test(bit)) return;
  ++set_count_;
  uint64_t idx = bit;
  for (size_t l = 0; l < levels_.size(); ++l) {
    uint64_t& w = levels_[l][idx / 64];
    w |= uint64_t{1} << (idx % 64);
    // The word is full when all its valid bits are set.
    const uint64_t level_bits = l == 0 ? nbits_ : levels_[l - 1].size();
    const uint64_t first = (idx / 64) * 64;
    const uint64_t valid = std::min<uint64_t>(64, level_bits - first);
    const uint64_t full = valid == 64 ? ~uint64_t{0} : ((uint64_t{1} << valid) - 1);
    if (w != full) break;
    idx /= 64;
  }
}

void BlockMap::Clear() {
  for (auto& level : levels_) std::fill(level.begin(), level.end(), 0);
  set_count_ = 0;
}

uint64_t BlockMap::FindClearFrom(uint64_t from) const {
  if (from >= nbits_) return nbits_;
  // Walk up until a level has a clear bit after the current position, then
  // walk down taking the first clear bit.
  uint64_t idx = from;
  size_t l = 0;
  while (true) {
    const auto& level = levels_[l];
    const uint64_t word = idx / 64;
    const uint64_t masked = ~level[word] & (~uint64_t{0} << (idx % 64));
    const uint64_t level_bits = l == 0 ? nbits_ : levels_[l - 1].size();
    if (masked != 0) {
      idx = word * 64 + static_cast<uint64_t>(__builtin_ctzll(masked));
      if (idx >= level_bits) return nbits_;
      break;
    }
    // Nothing in this word: continue from the next word, one level up.
    const uint64_t next_word = word + 1;
    if (next_word >= level.size()) return nbits_;
    if (l + 1 == levels_.size()) return nbits_;
    idx = next_word;
    ++l;
  }
  while (l > 0) {
    --l;
    const uint64_t w = ~levels_[l][idx];
    if (w == 0) return nbits_;  // cannot happen: the parent bit said not full
    idx = idx * 64 + static_cast<uint64_t>(__builtin_ctzll(w));
  }
  return idx < nbits_ ? idx : nbits_;
}

uint64_t BlockMap::FindClear(uint64_t from) const {
  const uint64_t r = FindClearFrom(from);
  if (r < nbits_ || from == 0) return r;
  return FindClearFrom(0);
}

// ---------------- ResolveClone ----------------

absl::StatusOr<ClonePlan> ResolveClone(const JobSpec& spec, uint32_t clone_index,
                                       uint64_t device_bytes, uint32_t nfiles) {
  nfiles = std::max<uint32_t>(nfiles, 1);
  ClonePlan p;
  p.min_block = UINT64_MAX;
  p.max_block = 0;
  for (int i = 0; i < kNumDirections; ++i) {
    const Direction d = static_cast<Direction>(i);
    if (!DirectionActive(spec.rw, d)) continue;
    p.min_block = std::min(p.min_block, MinBlockSize(spec, d));
    p.max_block = std::max(p.max_block, MaxBlockSize(spec, d));
  }
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("job ", spec.name, ": ", why));
  };
  if (device_bytes == 0) return fail("target has size 0");
  uint64_t offset = spec.offset.Resolve(device_bytes);
  if (spec.offset.is_percent()) {
    const uint64_t align = spec.offset_align != 0 ? spec.offset_align : p.min_block;
    offset -= offset % align;
  }
  const uint64_t inc = spec.offset_increment.Resolve(device_bytes);
  unsigned __int128 start = offset + static_cast<unsigned __int128>(inc) * clone_index;
  if (start >= device_bytes) {
    return fail(absl::StrCat("offset ", static_cast<uint64_t>(start), " beyond the target size ", device_bytes));
  }
  p.region_start = static_cast<uint64_t>(start);
  // filesize: the file's own size bounds where I/O goes, whatever size (the
  // job's total) says; on a device target it is the region. A range takes
  // one size per clone within it (fio draws it at random per file).
  const uint64_t total = spec.size.Resolve(device_bytes);
  uint64_t file = spec.filesize.lo;
  if (spec.filesize.hi > spec.filesize.lo) {
    uint64_t h = (uint64_t{clone_index} + 1) * 0x9E3779B97F4A7C15ULL;
    file += sim::SplitMix64(h) % (spec.filesize.hi - spec.filesize.lo + 1);
  }
  // A percentage of size= is of each file; bytes are the job's total.
  uint64_t size = file != 0 ? file : (spec.size.is_percent() ? total : total / nfiles);
  if (size == 0) size = device_bytes - p.region_start;
  size = std::min(size, device_bytes - p.region_start);
  size -= size % p.min_block;
  if (size < p.max_block) {
    return fail(absl::StrCat("region of ", size, " bytes smaller than the block size ", p.max_block));
  }
  p.region_bytes = size;
  const uint64_t io = spec.io_size.Resolve(device_bytes);
  const uint64_t all_files = size * nfiles;
  p.io_limit_bytes = io != 0 ? io : (file != 0 && total != 0 ? std::min(total, all_files) : all_files);
  p.number_ios = spec.number_ios;
  p.device_bytes = device_bytes;
  p.pass_end_ends_loop = !spec.time_based && p.io_limit_bytes <= all_files;
  return p;
}

// ---------------- IoGenerator ----------------

absl::StatusOr<IoGenerator> IoGenerator::Create(const JobSpec& spec, const ClonePlan& plan,
                                                uint32_t thread_number, uint64_t seed, uint32_t file_index) {
  if (plan.region_bytes == 0 || plan.min_block == 0 || plan.max_block > plan.region_bytes) {
    return absl::InvalidArgumentError("IoGenerator: unresolved or empty ClonePlan");
  }
  IoGenerator g;
  g.rw_ = spec.rw;
  g.rw_modifier_ = spec.rw_modifier;
  g.rw_sequencer_ = spec.rw_sequencer;
  g.rwmixread_ = spec.rwmixread;
  g.bs_ = spec.bs;
  g.bs_range_ = spec.bs_range;
  g.bssplit_ = spec.bssplit;
  for (int d = 0; d < kNumDirections; ++d) {
    uint32_t total = 0;
    for (const auto& e : g.bssplit_[d]) total += e.percent;
    g.bssplit_total_[d] = total;
    if (!g.bssplit_[d].empty() && total == 0) g.bssplit_[d].clear();  // all-zero split: use bs
  }
  g.bs_unaligned_ = spec.bs_unaligned;
  g.percentage_random_ = spec.percentage_random;
  g.dist_ = spec.random_distribution.kind;
  g.dist_param_ = spec.random_distribution.param;
  g.dist_center_ = spec.random_distribution.center;
  g.zones_ = spec.random_distribution.zones;
  g.plan_ = plan;
  if (spec.zonemode == ZoneMode::kStrided) {
    g.zone_size_ = spec.zonesize.Resolve(plan.device_bytes);
    g.zone_range_ = spec.zonerange.Resolve(plan.device_bytes);
    if (g.zone_range_ == 0) g.zone_range_ = g.zone_size_;
    g.zone_skip_ = spec.zoneskip.Resolve(plan.device_bytes);
  }

  bool blockalign_set = false;
  uint64_t align = plan.min_block;
  for (int d = 0; d < kNumDirections; ++d) {
    if (spec.blockalign[d] != 0 && DirectionActive(spec.rw, static_cast<Direction>(d))) {
      blockalign_set = true;
      align = std::min(align, spec.blockalign[d]);
    }
  }
  g.align_ = std::max<uint64_t>(1, align);

  uint64_t base_seed = spec.randseed_set ? spec.randseed : kFioDefaultSeed;
  if (!spec.randrepeat && !spec.randseed_set) base_seed = seed;
  const uint64_t sub = thread_number ^ (uint64_t{file_index} << 48);
  g.rng_offset_ = sim::RngStream(base_seed, sim::RngStreamId::kOffset, sub);
  g.rng_bs_ = sim::RngStream(base_seed, sim::RngStreamId::kBlockSize, sub);
  g.rng_mix_ = sim::RngStream(base_seed, sim::RngStreamId::kRwMix, sub);
  g.rng_pct_ = sim::RngStream(base_seed, sim::RngStreamId::kRandomPercentage, sub);

  const uint64_t nblocks = plan.region_bytes / g.align_;
  g.lfsr_ = spec.random_generator == RandomGenerator::kLfsr && g.dist_ == DistributionKind::kRandom;
  if (g.lfsr_) {
    uint64_t k = base_seed ^ (uint64_t{thread_number} << 32) ^ (uint64_t{file_index} << 16);
    for (uint64_t& key : g.lfsr_keys_) key = sim::SplitMix64(k);
    // The smallest even width whose range covers the region's blocks.
    int bits = 2;
    while (bits < 64 && (uint64_t{1} << bits) < nblocks) bits += 2;
    g.lfsr_half_bits_ = bits / 2;
  }
  g.use_map_ = IsRandom(spec.rw) && !spec.norandommap && !blockalign_set && !g.lfsr_ &&
               g.dist_ == DistributionKind::kRandom && nblocks <= kMaxRandomMapBlocks;
  if (g.use_map_) g.map_ = BlockMap(nblocks);

  if (g.dist_ == DistributionKind::kZipf || g.dist_ == DistributionKind::kPareto) {
    // A multiplier coprime with nblocks permutes ranks over the region.
    uint64_t m = 0x9E3779B97F4A7C15ULL % std::max<uint64_t>(nblocks, 1);
    if (m == 0) m = 1;
    while (std::gcd(m, nblocks) != 1) ++m;
    g.scatter_mult_ = m;
  }
  if (g.dist_ == DistributionKind::kZipf) {
    g.zipf_s_ = g.dist_param_;
    g.zipf_n_ = std::max<uint64_t>(nblocks, 1);
    auto h_integral = [s = g.zipf_s_](double x) {
      const double lx = std::log(x);
      return Helper2((1.0 - s) * lx) * lx;
    };
    g.zipf_hx1_ = h_integral(1.5) - 1.0;
    g.zipf_hn_ = h_integral(static_cast<double>(g.zipf_n_) + 0.5);
  }
  return g;
}

Direction IoGenerator::NextDirection() {
  switch (rw_) {
    case RwPattern::kRead:
    case RwPattern::kRandRead:
      return Direction::kRead;
    case RwPattern::kWrite:
    case RwPattern::kRandWrite:
      return Direction::kWrite;
    case RwPattern::kTrim:
    case RwPattern::kRandTrim:
      return Direction::kTrim;
    case RwPattern::kReadWrite:
    case RwPattern::kRandRw:
      if (rwmixread_ >= 100) return Direction::kRead;
      if (rwmixread_ == 0) return Direction::kWrite;
      return rng_mix_.UniformBelow(100) < rwmixread_ ? Direction::kRead : Direction::kWrite;
    case RwPattern::kTrimWrite:
    case RwPattern::kRandTrimWrite:
      return Direction::kTrim;  // the paired write is produced by Next()
  }
  return Direction::kRead;
}

uint64_t IoGenerator::NextLength(Direction d) {
  const int i = static_cast<int>(d);
  if (!bssplit_[i].empty()) {
    const uint32_t total = bssplit_total_[i];
    uint64_t r = rng_bs_.UniformBelow(total);
    for (const BsSplitEntry& e : bssplit_[i]) {
      if (r < e.percent) return e.bs;
      r -= e.percent;
    }
    return bssplit_[i].back().bs;
  }
  if (bs_range_[i].lo != 0 && bs_range_[i].hi > bs_range_[i].lo) {
    // fio's get_next_buflen: minbs + maxbs x r / (rand_max + 1), aligned
    // down to minbs, at most maxbs: every multiple of minbs up to maxbs
    // about equally likely (512-4k: 512, 1k, ... 4k each 1/8).
    const uint64_t lo = bs_range_[i].lo;
    const uint64_t hi = bs_range_[i].hi;
    uint64_t len = lo + static_cast<uint64_t>(static_cast<double>(hi) * rng_bs_.UniformDouble());
    if (!bs_unaligned_) len = (lo & (lo - 1)) == 0 ? len & ~(lo - 1) : len - len % lo;
    return std::min(len, hi);
  }
  if (bs_range_[i].lo != 0) return bs_range_[i].lo;
  return bs_[i];
}

bool IoGenerator::VariableLength(Direction d) const {
  const int i = static_cast<int>(d);
  if (!bssplit_[i].empty()) {
    for (const BsSplitEntry& e : bssplit_[i]) {
      if (e.percent != 0 && e.bs != bssplit_[i].front().bs) return true;
    }
    return false;
  }
  return bs_range_[i].lo != 0 && bs_range_[i].hi > bs_range_[i].lo;
}

uint64_t IoGenerator::MinLength(Direction d) const {
  const int i = static_cast<int>(d);
  if (!bssplit_[i].empty()) {
    uint64_t m = UINT64_MAX;
    for (const BsSplitEntry& e : bssplit_[i]) {
      if (e.percent != 0) m = std::min(m, e.bs);
    }
    return m;
  }
  return bs_range_[i].lo;
}

uint64_t IoGenerator::NextLengthFitting(Direction d, uint64_t room) {
  const uint64_t min = MinLength(d);
  if (room < min) return min;
  // fio redraws until the size fits; a few hundred draws find one unless
  // only the smallest does.
  for (int tries = 0; tries < 256; ++tries) {
    const uint64_t len = NextLength(d);
    if (len <= room) return len;
  }
  return min;
}

uint64_t IoGenerator::NextSequentialOffset(Direction d, uint64_t len, bool* new_pass) {
  uint64_t& pos = seq_pos_[static_cast<int>(d)];
  // As fio's get_next_seq_offset: a pass ends when the position reaches the
  // region's end; an I/O that starts inside the region may run past it, as
  // long as it stays on the device (fill_io_u's real_file_size check).
  const uint64_t device_end = plan_.device_bytes > plan_.region_start ? plan_.device_bytes - plan_.region_start
                                                                      : plan_.region_bytes;
  if (pos >= plan_.region_bytes || pos + len > std::max(device_end, plan_.region_bytes)) {
    pos = 0;
    ++passes_;
    *new_pass = true;
  }
  const uint64_t off = pos;
  const int64_t gap = IsRandom(rw_) ? 0 : rw_modifier_;
  // A negative gap walks backwards (`rw=read:-8k`); below the start it
  // wraps to the last block of the region.
  const __int128 next = static_cast<__int128>(pos) + len + gap;
  if (next < 0) {
    pos = plan_.region_bytes - len;
    ++passes_;
  } else {
    pos = static_cast<uint64_t>(std::min<__int128>(next, plan_.region_bytes));
  }
  return off;
}

uint64_t IoGenerator::LfsrBlock(uint64_t nblocks) {
  // fio's LFSR visits every block of the file once per period, in a
  // scrambled order. The model keeps that property with a bijection of
  // [0, nblocks): a 4-round Feistel network over the smallest even number of
  // bits that covers nblocks, cycle-walked back into range (a different
  // order than fio's taps, the same coverage).
  if (lfsr_index_ >= nblocks) {
    lfsr_index_ = 0;
    ++passes_;
  }
  const int half = lfsr_half_bits_;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  uint64_t x = lfsr_index_++;
  do {
    uint64_t l = x >> half, r = x & mask;
    for (uint64_t key : lfsr_keys_) {
      uint64_t f = r ^ key;
      const uint64_t nl = r;
      r = l ^ (sim::SplitMix64(f) & mask);
      l = nl;
    }
    x = (l << half) | r;
  } while (x >= nblocks);
  return x;
}

uint64_t IoGenerator::ZipfRank(uint64_t n) {
  const double s = zipf_s_;
  auto h = [s](double x) { return std::exp(-s * std::log(x)); };
  auto h_integral = [s](double x) {
    const double lx = std::log(x);
    return Helper2((1.0 - s) * lx) * lx;
  };
  auto h_integral_inv = [s](double x) {
    double t = x * (1.0 - s);
    if (t < -1.0) t = -1.0;
    return std::exp(Helper1(t) * x);
  };
  const double s_div = 2.0 - h_integral_inv(h_integral(2.5) - h(2.0));
  for (int tries = 0; tries < 64; ++tries) {
    const double u = zipf_hn_ + rng_offset_.UniformDouble() * (zipf_hx1_ - zipf_hn_);
    const double x = h_integral_inv(u);
    double kd = std::floor(x + 0.5);
    if (kd < 1) kd = 1;
    if (kd > static_cast<double>(n)) kd = static_cast<double>(n);
    const uint64_t k = static_cast<uint64_t>(kd);
    if (kd - x <= s_div || u >= h_integral(kd + 0.5) - h(kd)) return k;
  }
  return 1;
}

uint64_t IoGenerator::DistributionBlock(Direction d, uint64_t nblocks) {
  auto scatter = [&](uint64_t rank) -> uint64_t {
    if (dist_center_ >= 0) {
      const uint64_t shift = static_cast<uint64_t>(dist_center_ * static_cast<double>(nblocks));
      return (rank + shift) % nblocks;
    }
    return static_cast<uint64_t>((static_cast<unsigned __int128>(rank) * scatter_mult_) % nblocks);
  };
  switch (dist_) {
    case DistributionKind::kRandom:
      return rng_offset_.UniformBelow(nblocks);
    case DistributionKind::kZipf:
      return scatter(ZipfRank(zipf_n_) - 1);
    case DistributionKind::kPareto: {
      // P(rank >= (1-h) * n) = h: the h/(1-h) rule (80/20 for h = 0.8).
      const double power = std::log(dist_param_) / std::log(1.0 - dist_param_);
      const double v = std::pow(rng_offset_.UniformDouble(), power);
      uint64_t rank = static_cast<uint64_t>(v * static_cast<double>(nblocks - 1));
      rank = nblocks - 1 - std::min(rank, nblocks - 1);
      return scatter(rank);
    }
    case DistributionKind::kNormal: {
      const double center = dist_center_ >= 0 ? dist_center_ : 0.5;
      const double n = static_cast<double>(nblocks);
      double x = center * n + rng_offset_.StandardNormal() * (dist_param_ / 100.0) * n;
      x = std::fmod(x, n);
      if (x < 0) x += n;
      return std::min(static_cast<uint64_t>(x), nblocks - 1);
    }
    case DistributionKind::kZoned:
    case DistributionKind::kZonedAbs: {
      const auto& zones = zones_[static_cast<int>(d)].empty() ? zones_[0] : zones_[static_cast<int>(d)];
      if (zones.empty()) return rng_offset_.UniformBelow(nblocks);
      uint64_t r = rng_offset_.UniformBelow(100);
      uint64_t first = 0;
      for (const DistributionZone& z : zones) {
        const uint64_t len =
            dist_ == DistributionKind::kZoned
                ? static_cast<uint64_t>(z.range_percent / 100.0 * static_cast<double>(nblocks))
                : z.range_bytes / align_;
        if (r < z.access_percent) {
          const uint64_t span = std::max<uint64_t>(1, std::min(len, nblocks - std::min(first, nblocks - 1)));
          return std::min(first + rng_offset_.UniformBelow(span), nblocks - 1);
        }
        r -= z.access_percent;
        first += len;
      }
      return rng_offset_.UniformBelow(nblocks);
    }
  }
  return 0;
}

uint64_t IoGenerator::NextRandomOffset(Direction d, uint64_t* len_inout, bool variable) {
  // Variable sizes: the offset is any block the smallest I/O fits at.
  const uint64_t len = variable ? MinLength(d) : *len_inout;
  // Divisions only when the length changes (fixed bs: once).
  if (len != cached_len_) {
    cached_len_ = len;
    cached_nblocks_ = plan_.region_bytes / align_;
    cached_len_blocks_ = std::max<uint64_t>(1, (len + align_ - 1) / align_);
  }
  const uint64_t nblocks = cached_nblocks_;
  const uint64_t len_blocks = cached_len_blocks_;
  const uint64_t fit = nblocks >= len_blocks ? nblocks - len_blocks + 1 : 1;
  uint64_t block;
  if (use_map_) {
    if (map_.set_count() >= map_.size()) {
      map_.Clear();
      ++passes_;
    }
    block = map_.FindClear(rng_offset_.UniformBelow(nblocks));
    if (block >= map_.size()) {  // full (cannot happen after the reset above)
      map_.Clear();
      ++passes_;
      block = 0;
    }
    if (block >= fit) block = fit - 1;
    if (variable) {
      // The size is drawn after the offset, then cut at the first block
      // already touched in this pass (fio's axmap_set_nr).
      uint64_t want = NextLengthFitting(d, plan_.region_bytes - block * align_);
      const uint64_t want_blocks = std::max<uint64_t>(1, (want + align_ - 1) / align_);
      uint64_t b = block;
      while (b < block + want_blocks && b < nblocks && !map_.Test(b)) map_.Set(b++);
      if (b == block) map_.Set(b++);  // FindClear gave a clear block; fit moved it onto a set one
      if ((b - block) * align_ < want) want = (b - block) * align_;
      *len_inout = want;
    } else {
      for (uint64_t b = block; b < block + len_blocks && b < nblocks; ++b) map_.Set(b);
    }
    // A pass ends when no I/O of this length can find a free block any more.
    if (map_.FindClear(0) >= map_.size()) {
      map_.Clear();
      ++passes_;
    }
  } else {
    block = lfsr_ ? LfsrBlock(nblocks) : DistributionBlock(d, nblocks);
    if (block >= fit) block = fit - 1;
    if (variable) *len_inout = NextLengthFitting(d, plan_.region_bytes - block * align_);
  }
  return block * align_;
}

GeneratedIo IoGenerator::Next() {
  if (pending_trim_write_) {
    pending_trim_write_ = false;
    GeneratedIo w = last_trim_;
    w.direction = Direction::kWrite;
    w.new_pass = false;
    return w;
  }
  return NextIn(NextDirection());
}

GeneratedIo IoGenerator::Next(absl::FunctionRef<Direction(Direction)> adjust) {
  if (rw_ != RwPattern::kReadWrite && rw_ != RwPattern::kRandRw) return Next();
  return NextIn(adjust(NextDirection()));
}

GeneratedIo IoGenerator::NextIn(Direction d) {
  GeneratedIo io;
  io.direction = d;
  const bool variable = VariableLength(d);
  io.length = variable ? MinLength(d) : NextLength(io.direction);
  if (io.length > plan_.region_bytes) io.length = plan_.region_bytes;
  uint64_t rel;
  const int di = static_cast<int>(io.direction);
  bool random = IsRandom(rw_);
  if (random && percentage_random_[di] < 100) {
    random = rng_pct_.UniformBelow(100) < percentage_random_[di];
  }
  if (!random && zone_size_ > 0) {
    uint64_t& pos = seq_pos_[di];
    if (zone_bytes_ >= zone_size_) {
      zone_bytes_ = 0;
      zone_start_ += zone_range_ + zone_skip_;
      if (zone_start_ >= plan_.region_bytes) zone_start_ = 0;
      pos = zone_start_;
    }
    // A zone range shorter than zone_size is gone over again.
    if (pos >= zone_start_ + zone_range_) pos = zone_start_;
    zone_bytes_ += io.length;
  }
  if (!random && variable) {
    // fio picks the offset, then a size that fits before the region's end
    // (io_u_fits), and the next offset follows that size.
    uint64_t& pos = seq_pos_[di];
    if (pos + io.length > plan_.region_bytes) {
      pos = 0;
      ++passes_;
      io.new_pass = true;
    }
    io.length = std::min(NextLengthFitting(io.direction, plan_.region_bytes - pos), plan_.region_bytes);
    bool wrapped = false;
    rel = NextSequentialOffset(io.direction, io.length, &wrapped);
  } else if (!random) {
    rel = NextSequentialOffset(io.direction, io.length, &io.new_pass);
  } else if (rw_modifier_ > 1 &&
             (modifier_count_++ % static_cast<uint64_t>(rw_modifier_)) != 0) {
    if (variable) io.length = std::min(NextLength(io.direction), plan_.region_bytes);
    if (rw_sequencer_ == RwSequencer::kIdentical) {
      rel = last_random_off_;
    } else {
      rel = last_random_end_;
      if (rel + io.length > plan_.region_bytes) rel = 0;
    }
    last_random_end_ = rel + io.length;
  } else {
    rel = NextRandomOffset(io.direction, &io.length, variable);
    last_random_off_ = rel;
    last_random_end_ = rel + io.length;
  }
  if (random && rel + io.length > plan_.region_bytes) rel = plan_.region_bytes - io.length;
  io.offset = plan_.region_start + rel;
  if (rw_ == RwPattern::kTrimWrite || rw_ == RwPattern::kRandTrimWrite) {
    pending_trim_write_ = true;
    last_trim_ = io;
  }
  return io;
}

}  // namespace blklab::workload
