// engine/workload/option_table.h
//
// The declarative table of fio 3.33 job options (fio's `fio_option[]` in
// options.c, here re-described): every option name and alias fio knows, its
// value kind, default, tier (docs/fio-compatibility.md b: 1 = modelled faithfully,
// 2 = accepted and typed where cheap, 3 = accepted with a warning), whether it
// may appear bare, and for engine-private options the engines that own it.
// Each row carries its binding, in the shape of fio's `struct fio_option`:
// the parse type (FIO_OPT_BOOL, FIO_OPT_INT with minval/maxval, FIO_OPT_STR
// with its posval list, ...), the JobSpec field it writes (fio's `off1`, here
// a member pointer), and for the few options that need more a callback (fio's
// `cb`, option_bind.h). ApplyOption() checks what every option shares (an
// argument where one is required, no empty value) and then applies the row's
// binding generically; with option_bind.h it is the only place where
// option strings are interpreted.
//
// Invariants: names and aliases are unique across the table; entries with
//   OptionId::kGeneric are validated for their kind but set no typed field
//   unless their row has a binding; every other entry has a binding; a kChoice
//   binding's posval words are unique within it.
// Thread-safety: the table is immutable after static initialisation.
// Cost: FindOption is a hash lookup; ApplyOption is linear in the value (a
//   kChoice binding also in its posval list).
#ifndef BLKLAB_ENGINE_WORKLOAD_OPTION_TABLE_H_
#define BLKLAB_ENGINE_WORKLOAD_OPTION_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "engine/workload/job_spec.h"
#include "engine/workload/value_syntax.h"

namespace blklab::workload {

enum class OptionKind : uint8_t {
  kString,         // any text
  kBool,           // 0 or 1, value required
  kFlag,           // bare (= 1) or 0/1
  kInt,            // integer (fio accepts size suffixes)
  kSize,           // size with suffix
  kTime,           // time with suffix
  kChoice,         // one of `choices`, optional `:param`
  kFloatList,      // `:`-separated floats
  kFlagOrString,   // bare, or a string (log file prefix)
};

// Options with a typed JobSpec field; everything else is kGeneric.
enum class OptionId : uint16_t {
  kBlockalign,
  kBs,
  kBsIsSeqRand,
  kBsUnaligned,
  kBsrange,
  kBssplit,
  kBuffered,
  kBwavgtime,
  kClatPercentiles,
  kCmdprioPercentage,
  kCpusAllowed,
  kCpusAllowedPolicy,
  kDescription,
  kDirect,
  kDirectory,
  kDisableClat,
  kDisableLat,
  kDisableSlat,
  kDiskUtil,
  kEndFsync,
  kExitall,
  kFdatasync,
  kFileServiceType,
  kSgWriteMode,
  kSyncIo,
  kFadviseHint,
  kWriteIolog,
  kFilenameFormat,
  kFilename,
  kFilesize,
  kFixedbufs,
  kForceAsync,
  kFsync,
  kGroupReporting,
  kGtodReduce,
  kHipri,
  kHipriPercentage,
  kIoSize,
  kIodepth,
  kIodepthBatchCompleteMax,
  kIodepthBatchCompleteMin,
  kIodepthBatchSubmit,
  kIodepthLow,
  kIoengine,
  kIopsavgtime,
  kIoscheduler,
  kKbBase,
  kLatPercentiles,
  kLogAvgMsec,
  kLogHistCoarseness,
  kLogHistMsec,
  kLogMaxValue,
  kLogOffset,
  kLogPrio,
  kLoops,
  kName,
  kNewGroup,
  kNonvectored,
  kNorandommap,
  kNowait,
  kNrfiles,
  kNumaCpuNodes,
  kNumaMemPolicy,
  kNumberIos,
  kNumjobs,
  kOffset,
  kOffsetAlign,
  kOffsetIncrement,
  kPerJobLogs,
  kPercentageRandom,
  kPercentileList,
  kPrio,
  kPrioclass,
  kRampTime,
  kRandomDistribution,
  kRandomGenerator,
  kRandrepeat,
  kRandseed,
  kRate,
  kRateIops,
  kRateIopsMin,
  kRateMin,
  kRateProcess,
  kRegisterfiles,
  kRuntime,
  kRw,
  kRwSequencer,
  kRwmixread,
  kRwmixwrite,
  kSignificantFigures,
  kSize,
  kSlatPercentiles,
  kSqthreadPoll,
  kSqthreadPollCpu,
  kStartdelay,
  kStonewall,
  kThinktime,
  kThinktimeBlocks,
  kThinktimeBlocksType,
  kThinktimeSpin,
  kThread,
  kTimeBased,
  kTrimPercentage,
  kUncached,
  kUnifiedRwReporting,
  kUnitBase,
  kUserspaceReap,
  kVerify,
  kVerifyAsync,
  kVerifyBacklog,
  kVerifyBacklogBatch,
  kVerifyFatal,
  kVerifyInterval,
  kVerifyOnly,
  kVerifyPattern,
  kDoVerify,
  kExperimentalVerify,
  kWaitFor,
  kWriteBwLog,
  kWriteHistLog,
  kWriteIopsLog,
  kWriteLatLog,
  kZonemode,
  kGeneric,
};

struct OptionDef;
struct ApplyContext;

// One accepted word of a kChoice option (fio's `struct value_pair`): the word
// as written (ival) and the value stored into the bound field (oval, an enum
// or integer converted to the field's type).
struct OptionPosval {
  template <typename T>
  constexpr OptionPosval(const char* word, T value) : ival(word), oval(static_cast<int64_t>(value)) {}
  const char* ival;
  int64_t oval;
};

// An option's custom applier (fio's `o->cb`): parses `value` (the text after
// '=', "1" for a bare option) and writes `spec`. Errors are InvalidArgument,
// formatted like ApplyOption's.
using OptionCallback = absl::Status (*)(const OptionDef& def, const std::string& value, JobSpec* spec,
                                        const ApplyContext& ctx);

// How an option's value is applied (fio's type, off1, minval/maxval, posval
// and cb): the table names the field and the parse (bool, integer range,
// size, time with its default unit, size or percentage, log prefix, text,
// per-direction sizes, a word from a posval list). Options that need more
// (rw's modifier, bs's validation, ioengine, ...) have kind kCallback.
struct OptionBinding {
  enum class Kind : uint8_t {
    kNone,           // no field: validated by OptionKind only (kGeneric rows)
    kBool,           // FIO_OPT_BOOL: 0 or 1
    kU32,            // FIO_OPT_INT: a size-suffixed integer in [lo,hi]
    kU64,            // FIO_OPT_STR_VAL: a size-suffixed integer
    kString,         // FIO_OPT_STR_STORE: the text as written
    kTime,           // FIO_OPT_STR_VAL_TIME: nanoseconds, bare numbers in `unit`
    kSizeOrPercent,  // a size or N% (resolved against the device later)
    kLog,            // bare or 1: on; 0: off; else on with a file-name prefix
    kPerDirSize,     // sizes per direction (read,write,trim)
    kChoice,         // FIO_OPT_STR with posval: the matched word's oval
    kCallback,       // FIO_OPT_STR with cb: `callback` does the work
  };
  Kind kind = Kind::kNone;
  void* (*field)(JobSpec*) = nullptr;  // the typed field (see Bind* below)
  uint64_t lo = 0, hi = 0;             // kU32 range
  TimeUnit unit = TimeUnit::kSeconds;  // kTime default unit
  const OptionPosval* posval = nullptr;  // kChoice (and callbacks that match words)
  uint8_t posval_count = 0;
  void (*store)(void* field, int64_t oval) = nullptr;  // kChoice: writes oval to the field
  OptionCallback callback = nullptr;                    // kCallback
  // An empty value is taken as is instead of failing with "empty value".
  bool empty_ok = false;

  constexpr OptionBinding AllowEmpty() const {
    OptionBinding b = *this;
    b.empty_ok = true;
    return b;
  }
};

namespace binding_internal {
template <auto M>
void* Field(JobSpec* s) { return &(s->*M); }
template <auto M, auto N>
void* Field(JobSpec* s) { return &((s->*M).*N); }
template <auto M>
struct MemberOf;
template <typename C, typename T, T C::*M>
struct MemberOf<M> {
  using type = T;
};
template <auto M, auto... N>
struct Target {
  using type = typename MemberOf<M>::type;
};
template <auto M, auto N>
struct Target<M, N> {
  using type = typename MemberOf<N>::type;
};
template <typename T, auto... M>
constexpr OptionBinding Make(OptionBinding::Kind kind, uint64_t lo = 0, uint64_t hi = 0,
                             TimeUnit unit = TimeUnit::kSeconds) {
  static_assert(std::is_same_v<typename Target<M...>::type, T>, "option bound to a field of another type");
  return OptionBinding{kind, &Field<M...>, lo, hi, unit};
}
template <typename T>
void StoreOval(void* field, int64_t oval) { *static_cast<T*>(field) = static_cast<T>(oval); }
}  // namespace binding_internal

// Bindings for the table: BindBool<&JobSpec::direct>(),
// BindBool<&JobSpec::engine_flags, &EngineFlags::hipri>(), ...
template <auto... M>
constexpr OptionBinding BindBool() { return binding_internal::Make<bool, M...>(OptionBinding::Kind::kBool); }
template <auto... M>
constexpr OptionBinding BindU32(uint64_t lo, uint64_t hi) {
  return binding_internal::Make<uint32_t, M...>(OptionBinding::Kind::kU32, lo, hi);
}
template <auto... M>
constexpr OptionBinding BindU64() { return binding_internal::Make<uint64_t, M...>(OptionBinding::Kind::kU64); }
template <auto... M>
constexpr OptionBinding BindString() {
  return binding_internal::Make<std::string, M...>(OptionBinding::Kind::kString);
}
template <auto... M>
constexpr OptionBinding BindTime(TimeUnit unit) {
  return binding_internal::Make<int64_t, M...>(OptionBinding::Kind::kTime, 0, 0, unit);
}
template <auto... M>
constexpr OptionBinding BindSizeOrPercent() {
  return binding_internal::Make<SizeSpec, M...>(OptionBinding::Kind::kSizeOrPercent);
}
template <auto... M>
constexpr OptionBinding BindLog() { return binding_internal::Make<LogSpec, M...>(OptionBinding::Kind::kLog); }
template <auto... M>
constexpr OptionBinding BindPerDirSize() {
  return binding_internal::Make<PerDir<uint64_t>, M...>(OptionBinding::Kind::kPerDirSize);
}
// BindChoice<&JobSpec::zonemode>(kPosvals): the word matched (up to the
// first ':' or ',') selects the oval written to the enum or integer field;
// "valid values: " lists the words in posval order.
template <auto M, size_t N>
constexpr OptionBinding BindChoice(const OptionPosval (&posval)[N]) {
  using T = typename binding_internal::MemberOf<M>::type;
  static_assert(std::is_enum_v<T> || std::is_integral_v<T>, "a choice is stored in an enum or integer field");
  static_assert(N > 0 && N <= 255, "posval list size");
  OptionBinding b = {OptionBinding::Kind::kChoice, &binding_internal::Field<M>};
  b.posval = posval;
  b.posval_count = static_cast<uint8_t>(N);
  b.store = &binding_internal::StoreOval<T>;
  return b;
}
// BindCallback(&cb) or BindCallback(&cb, kPosvals): `cb` applies the value
// (it may match words from the posval list, see option_bind.h).
constexpr OptionBinding BindCallback(OptionCallback cb) {
  OptionBinding b = {OptionBinding::Kind::kCallback};
  b.callback = cb;
  return b;
}
template <size_t N>
constexpr OptionBinding BindCallback(OptionCallback cb, const OptionPosval (&posval)[N]) {
  static_assert(N > 0 && N <= 255, "posval list size");
  OptionBinding b = BindCallback(cb);
  b.posval = posval;
  b.posval_count = static_cast<uint8_t>(N);
  return b;
}

struct OptionDef {
  const char* name;
  const char* aliases;   // space separated; "" if none
  OptionId id;
  OptionKind kind;
  int tier;              // 1, 2 or 3
  const char* default_value;
  const char* choices;   // space separated (kChoice)
  const char* engines;   // space separated owner engines; "" = general option
  const char* help;
  OptionBinding binding = {};  // kNone: validated only (kGeneric rows)

  bool bare_allowed() const { return kind == OptionKind::kFlag || kind == OptionKind::kFlagOrString; }
  bool is_engine_private() const { return engines[0] != '\0'; }
  bool EngineHasIt(const std::string& engine_name) const;
};

// The whole table, in a stable order.
const std::vector<OptionDef>& AllOptions();

// Finds an option by name or alias (exact, case-sensitive); nullptr if none.
const OptionDef* FindOption(const std::string& name);

// The closest general option name by edit distance (for "did you mean"),
// or "" when nothing is close enough.
std::string SuggestOption(const std::string& name);

// Context for ApplyOption.
struct ApplyContext {
  // Accept engines blklab does not model (IoEngine::kUnmodelled); otherwise
  // `ioengine=X` fails with "ioengine=X is not modelled by blklab".
  bool accept_unmodelled_engines = false;
  // Receives human-readable warnings (quirks). May be null.
  std::vector<std::string>* warnings = nullptr;
};

// Applies one option line to `spec`. `value` is nullopt for a bare option.
// Errors are InvalidArgument and name the option and value, e.g.
// "failed parsing bs=abc: bad value 'abc': not a number". The caller adds
// file and line. Engine-private options are checked against the spec's
// current engine.
absl::Status ApplyOption(const OptionDef& def, const std::optional<std::string>& value,
                         JobSpec* spec, const ApplyContext& ctx);

// Engine names fio 3.33 knows (for `ioengine=`), and the subset blklab models.
bool IsKnownFioEngine(const std::string& name);
// The engine names of IsKnownFioEngine, space separated (for --enghelp).
const char* KnownFioEngines();
std::optional<IoEngine> ModelledEngine(const std::string& name);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_OPTION_TABLE_H_
