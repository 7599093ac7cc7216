// engine/sim/rng.h
//
// Seeded random number streams for the simulation, one stream per random
// decision (offset, block size, rw mix, think time, device jitter ...), as fio
// keeps one FIO_RAND_* state per decision. Streams are xoshiro256** generators
// whose state is derived with splitmix64 from (seed, stream id), so adding a
// new stream never perturbs the numbers of an existing one.
//
// The distributions are implemented here, not taken from <random>: the
// standard library's distributions are implementation-defined and differ
// between libstdc++ and libc++, which would break bit-identical results.
//
// Invariants: the sequence depends only on (seed, stream id) and the calls.
// Thread-safety: thread-compatible; each stream belongs to one simulation.
// Cost: NextU64 is a handful of ALU operations; no allocation.
#ifndef BLKLAB_ENGINE_SIM_RNG_H_
#define BLKLAB_ENGINE_SIM_RNG_H_

#include <cmath>
#include <cstdint>

namespace blklab::sim {

// splitmix64 step: a good mixer for deriving seeds.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Well-known stream ids. Any uint64_t may be used; these keep the common ones
// apart. Per-job streams mix the job's thread number into the id.
enum class RngStreamId : uint64_t {
  kOffset = 1,
  kBlockSize = 2,
  kRwMix = 3,
  kThinkTime = 4,
  kDeviceLatency = 5,
  kRandomPercentage = 6,
  kRate = 7,
  kStartDelay = 8,
  kCpuPlacement = 9,
  kFileService = 10,
};

class RngStream {
 public:
  RngStream() : RngStream(0, 0) {}
  RngStream(uint64_t seed, uint64_t stream_id) { Seed(seed, stream_id); }
  RngStream(uint64_t seed, RngStreamId id, uint64_t sub = 0)
      : RngStream(seed, (static_cast<uint64_t>(id) << 32) ^ sub) {}

  void Seed(uint64_t seed, uint64_t stream_id) {
    uint64_t sm = seed ^ (stream_id * 0xd1342543de82ef95ULL) ^ 0x2545f4914f6cdd1dULL;
    for (auto& word : s_) word = SplitMix64(sm);
    if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) s_[0] = 1;
  }

  // xoshiro256**
  uint64_t NextU64() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform integer in [0, bound). REQUIRES: bound > 0. Lemire's
  // multiply-shift with rejection, so the result is exactly uniform.
  uint64_t UniformBelow(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(NextU64()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(NextU64()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform integer in [lo, hi]. REQUIRES: lo <= hi.
  uint64_t UniformRange(uint64_t lo, uint64_t hi) {
    if (hi - lo == UINT64_MAX) return NextU64();
    return lo + UniformBelow(hi - lo + 1);
  }

  // Uniform double in [0, 1) with 53 random bits.
  double UniformDouble() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

  // Uniform double in (0, 1].
  double UniformDoubleOpenZero() { return 1.0 - UniformDouble(); }

  // true with probability percent/100.
  bool Percent(uint32_t percent) { return UniformBelow(100) < percent; }

  // Exponential with the given mean.
  double Exponential(double mean) { return -mean * std::log(UniformDoubleOpenZero()); }

  // Standard normal (Box-Muller, the cosine branch only, so one call = one
  // sample and the stream position does not depend on cached state).
  double StandardNormal() {
    const double u1 = UniformDoubleOpenZero();
    const double u2 = UniformDouble();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_RNG_H_
