#include "engine/workload/option_table.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/util/status_macros.h"

namespace blklab::workload {
namespace {


bool WordIn(const char* list, const std::string& word) {
  for (absl::string_view w : absl::StrSplit(list, ' ', absl::SkipEmpty())) {
    if (w == word) return true;
  }
  return false;
}

const absl::flat_hash_map<std::string, const OptionDef*>& Index() {
  static const auto* index = [] {
    auto* m = new absl::flat_hash_map<std::string, const OptionDef*>();
    for (const OptionDef& d : AllOptions()) {
      (*m)[d.name] = &d;
      for (absl::string_view a : absl::StrSplit(d.aliases, ' ', absl::SkipEmpty())) {
        (*m)[std::string(a)] = &d;
      }
    }
    return m;
  }();
  return *index;
}

constexpr const char* kFioEngines =
    "sync psync vsync pvsync pvsync2 io_uring io_uring_cmd libaio posixaio solarisaio "
    "windowsaio mmap splice sg libzbc null net netsplice cpuio rdma falloc ftruncate "
    "e4defrag rados rbd http gfapi gfapi_async libhdfs mtd pmemblk dev-dax external "
    "filecreate filestat filedelete dircreate dirstat dirdelete libpmem ime_psync "
    "ime_psyncv ime_aio libiscsi nbd libcufile dfs nfs exec xnvme";

absl::Status Failed(const OptionDef& def, const std::string& value, const absl::Status& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("failed parsing ", def.name, "=", QuoteForError(value), ": ", why.message()));
}
absl::Status Failed(const OptionDef& def, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("failed parsing ", def.name, "=", QuoteForError(value), ": ", why));
}

// Matches a choice up to the first ':' or ','. Returns the index into the
// space-separated list, or -1.
int MatchChoice(const char* choices, const std::string& value, std::string* param) {
  const size_t cut = value.find_first_of(":,");
  const std::string head = value.substr(0, cut);
  if (param != nullptr) {
    *param = (cut != std::string::npos && value[cut] == ':') ? value.substr(cut + 1) : "";
  }
  int i = 0;
  for (absl::string_view w : absl::StrSplit(choices, ' ', absl::SkipEmpty())) {
    if (w == head) return i;
    ++i;
  }
  return -1;
}

absl::Status BadChoice(const OptionDef& def, const std::string& value, const char* choices) {
  return Failed(def, value, absl::StrCat("valid values: ", choices));
}

template <typename T>
absl::StatusOr<T> Narrow(const OptionDef& def, const std::string& value, uint64_t v, uint64_t lo,
                         uint64_t hi) {
  if (v < lo || v > hi) {
    return Failed(def, value, absl::StrCat("out of range [", lo, ",", hi, "]"));
  }
  return static_cast<T>(v);
}

// Applies a per-direction list: `parse` is called for the fields that are set.
template <typename T, typename Fn>
absl::Status ApplyPerDir(const OptionDef& def, const std::string& value, PerDir<T>* out, Fn parse) {
  auto fields = SplitPerDirection(value);
  if (!fields.ok()) return Failed(def, value, fields.status());
  for (int d = 0; d < kNumDirections; ++d) {
    if (!(*fields)[d].has_value()) continue;
    auto v = parse(*(*fields)[d]);
    if (!v.ok()) return Failed(def, value, v.status());
    (*out)[d] = std::move(*v);
  }
  return absl::OkStatus();
}

absl::StatusOr<RandomDistribution> ParseDistribution(const std::string& value, uint32_t kb_base) {
  RandomDistribution rd;
  const size_t colon = value.find(':');
  const std::string head = value.substr(0, std::min(colon, value.find(',')));
  const std::string rest = colon == std::string::npos ? "" : value.substr(colon + 1);
  if (head == "random") return rd;
  if (head == "zipf" || head == "pareto" || head == "normal") {
    rd.kind = head == "zipf" ? DistributionKind::kZipf
              : head == "pareto" ? DistributionKind::kPareto
                                 : DistributionKind::kNormal;
    if (rest.empty()) return absl::InvalidArgumentError("missing distribution parameter");
    std::vector<std::string> parts = absl::StrSplit(rest, ':');
    if (parts.size() > 2) return absl::InvalidArgumentError("too many parameters");
    BLKLAB_ASSIGN_OR_RETURN(rd.param, ParseDouble(parts[0]));
    if (parts.size() == 2) {
      BLKLAB_ASSIGN_OR_RETURN(rd.center, ParseDouble(parts[1]));
      if (rd.center < 0 || rd.center > 1) return absl::InvalidArgumentError("center outside [0,1]");
    }
    if (rd.kind == DistributionKind::kZipf && (rd.param <= 0 || rd.param == 1.0)) {
      return absl::InvalidArgumentError("zipf theta must be > 0 and != 1");
    }
    if (rd.kind == DistributionKind::kPareto && (rd.param <= 0 || rd.param >= 1)) {
      return absl::InvalidArgumentError("pareto h must be in (0,1)");
    }
    if (rd.kind == DistributionKind::kNormal && (rd.param <= 0 || rd.param > 100)) {
      return absl::InvalidArgumentError("normal sigma must be in (0,100]");
    }
    return rd;
  }
  if (head == "zoned" || head == "zoned_abs") {
    rd.kind = head == "zoned" ? DistributionKind::kZoned : DistributionKind::kZonedAbs;
    auto fields = SplitPerDirection(rest);
    if (!fields.ok()) return fields.status();
    for (int d = 0; d < kNumDirections; ++d) {
      if (!(*fields)[d].has_value()) continue;
      std::vector<DistributionZone> zones;
      uint32_t access_total = 0;
      double range_total = 0;
      for (absl::string_view z : absl::StrSplit(*(*fields)[d], ':', absl::SkipEmpty())) {
        if (zones.size() >= 256) return absl::InvalidArgumentError("more than 256 zones");
        std::vector<std::string> pr = absl::StrSplit(z, '/');
        if (pr.size() != 2) return absl::InvalidArgumentError("zone must be P/R");
        // An empty range takes what is left of the region (zoned only).
        if (pr[1].empty() && rd.kind == DistributionKind::kZoned) {
          pr[1] = std::to_string(std::max(100.0 - range_total, 0.0));
        }
        DistributionZone zone;
        BLKLAB_ASSIGN_OR_RETURN(uint64_t p, ParseUint(pr[0]));
        if (p > 100) return absl::InvalidArgumentError("zone access above 100%");
        zone.access_percent = static_cast<uint32_t>(p);
        if (rd.kind == DistributionKind::kZoned) {
          BLKLAB_ASSIGN_OR_RETURN(zone.range_percent, ParseDouble(pr[1]));
          if (zone.range_percent <= 0 || zone.range_percent > 100) {
            return absl::InvalidArgumentError("zone range outside (0,100]");
          }
          range_total += zone.range_percent;
        } else {
          BLKLAB_ASSIGN_OR_RETURN(zone.range_bytes, ParseSize(pr[1], kb_base));
          if (zone.range_bytes == 0) return absl::InvalidArgumentError("empty zone");
        }
        access_total += zone.access_percent;
        zones.push_back(zone);
      }
      if (access_total != 100) return absl::InvalidArgumentError("zone access must add up to 100%");
      if (range_total > 100.0 + 1e-9) return absl::InvalidArgumentError("zone ranges above 100%");
      rd.zones[d] = std::move(zones);
    }
    return rd;
  }
  return absl::InvalidArgumentError("valid values: random zipf pareto normal zoned zoned_abs");
}

// Validation for options without a typed field.
absl::Status ValidateGeneric(const OptionDef& def, const std::string& v, uint32_t kb_base) {
  switch (def.kind) {
    case OptionKind::kString:
    case OptionKind::kFlagOrString:
      return absl::OkStatus();
    case OptionKind::kBool:
    case OptionKind::kFlag: {
      auto b = ParseBool(v);
      return b.ok() ? absl::OkStatus() : Failed(def, v, b.status());
    }
    case OptionKind::kInt:
    case OptionKind::kSize: {
      if (!v.empty() && v[0] == '-') {
        auto i = ParseInt(v);
        return i.ok() ? absl::OkStatus() : Failed(def, v, i.status());
      }
      auto s = ParseSize(v, kb_base);
      return s.ok() ? absl::OkStatus() : Failed(def, v, s.status());
    }
    case OptionKind::kTime: {
      auto t = ParseTimeRangeNs(v, TimeUnit::kSeconds);
      return t.ok() ? absl::OkStatus() : Failed(def, v, t.status());
    }
    case OptionKind::kChoice:
      return MatchChoice(def.choices, v, nullptr) >= 0 ? absl::OkStatus()
                                                        : BadChoice(def, v, def.choices);
    case OptionKind::kFloatList: {
      auto l = ParsePercentileList(v, 64);
      return l.ok() ? absl::OkStatus() : Failed(def, v, l.status());
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool OptionDef::EngineHasIt(const std::string& engine_name) const {
  return WordIn(engines, engine_name);
}


const OptionDef* FindOption(const std::string& name) {
  const auto& idx = Index();
  auto it = idx.find(name);
  return it == idx.end() ? nullptr : it->second;
}

std::string SuggestOption(const std::string& name) {
  if (name.size() > 64) return "";
  std::string best;
  size_t best_d = 3;  // suggest only close names
  for (const auto& [key, def] : Index()) {
    // The distance is at least the length difference: skip hopeless keys
    // (keeps "did you mean" cheap on long garbage names).
    const size_t diff = name.size() > key.size() ? name.size() - key.size() : key.size() - name.size();
    if (diff > best_d) continue;
    const size_t d = EditDistance(name, key);
    if (d < best_d || (d == best_d && !best.empty() && key < best)) {
      if (d < best_d || key < best) {
        best_d = d;
        best = key;
      }
    }
  }
  return best;
}

const char* KnownFioEngines() { return kFioEngines; }

bool IsKnownFioEngine(const std::string& name) {
  return WordIn(kFioEngines, name) || name.rfind("external:", 0) == 0;
}

std::optional<IoEngine> ModelledEngine(const std::string& name) {
  static const std::pair<const char*, IoEngine> kModelled[] = {
      {"psync", IoEngine::kPsync},       {"sync", IoEngine::kSync},
      {"vsync", IoEngine::kVsync},       {"pvsync", IoEngine::kPvsync},
      {"pvsync2", IoEngine::kPvsync2},   {"io_uring", IoEngine::kIoUring},
      {"io_uring_cmd", IoEngine::kIoUringCmd}, {"libaio", IoEngine::kLibaio},
      {"posixaio", IoEngine::kPosixaio}, {"null", IoEngine::kNull},
      {"falloc", IoEngine::kFalloc},     {"ftruncate", IoEngine::kFtruncate},
      {"sg", IoEngine::kSg},             {"splice", IoEngine::kSplice},
      {"mmap", IoEngine::kMmap},
  };
  for (const auto& [n, e] : kModelled) {
    if (name == n) return e;
  }
  return std::nullopt;
}

absl::Status ApplyOption(const OptionDef& def, const std::optional<std::string>& value_in,
                         JobSpec* spec, const ApplyContext& ctx) {
  if (!value_in.has_value() && !def.bare_allowed()) {
    return absl::InvalidArgumentError(absl::StrCat("Option ", def.name, " requires an argument"));
  }
  const bool bare = !value_in.has_value();
  const std::string v = bare ? "1" : *value_in;
  const uint32_t kb = spec->kb_base;
  auto size = [&](const std::string& s) { return ParseSize(s, kb); };
  auto u64 = [&](uint64_t* out) -> absl::Status {
    auto r = ParseSize(v, kb);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto u32 = [&](uint32_t* out, uint64_t lo, uint64_t hi) -> absl::Status {
    auto r = ParseSize(v, kb);
    if (!r.ok()) return Failed(def, v, r.status());
    BLKLAB_ASSIGN_OR_RETURN(*out, Narrow<uint32_t>(def, v, *r, lo, hi));
    return absl::OkStatus();
  };
  auto boolean = [&](bool* out) -> absl::Status {
    auto r = ParseBool(v);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto time = [&](int64_t* out, TimeUnit unit) -> absl::Status {
    auto r = ParseTimeNs(v, unit);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto size_or_pct = [&](SizeSpec* out) -> absl::Status {
    auto r = ParseSizeOrPercent(v, kb);
    if (!r.ok()) return Failed(def, v, r.status());
    *out = *r;
    return absl::OkStatus();
  };
  auto log = [&](LogSpec* out) -> absl::Status {
    if (bare || v == "1") {
      *out = LogSpec{true, ""};
    } else if (v == "0") {
      *out = LogSpec{};
    } else {
      *out = LogSpec{true, v};
    }
    return absl::OkStatus();
  };
  auto choice = [&](const char* choices, std::string* param) -> absl::StatusOr<int> {
    const int i = MatchChoice(choices, v, param);
    if (i < 0) return BadChoice(def, v, choices);
    return i;
  };
  if (v.empty() && def.id != OptionId::kGeneric && def.kind != OptionKind::kFlagOrString) {
    switch (def.id) {
      case OptionId::kName: case OptionId::kDescription: case OptionId::kFilename:
      case OptionId::kDirectory: case OptionId::kWaitFor: case OptionId::kIoscheduler:
      case OptionId::kVerify: case OptionId::kNumaMemPolicy:
        break;
      default:
        return Failed(def, v, "empty value");
    }
  }
  if (def.kind == OptionKind::kSize && ctx.warnings != nullptr && !v.empty() &&
      (v[0] == ' ' || v[0] == '\t')) {
    ctx.warnings->push_back(absl::StrCat(def.name, "=", v,
                                         ": white space after '=' disables the unit suffix"));
  }

  const OptionBinding& b = def.binding;
  if (b.kind != OptionBinding::Kind::kNone) {
    void* field = b.field(spec);
    switch (b.kind) {
      case OptionBinding::Kind::kBool: return boolean(static_cast<bool*>(field));
      case OptionBinding::Kind::kU32: return u32(static_cast<uint32_t*>(field), b.lo, b.hi);
      case OptionBinding::Kind::kU64: return u64(static_cast<uint64_t*>(field));
      case OptionBinding::Kind::kString: *static_cast<std::string*>(field) = v; return absl::OkStatus();
      case OptionBinding::Kind::kTime: return time(static_cast<int64_t*>(field), b.unit);
      case OptionBinding::Kind::kSizeOrPercent: return size_or_pct(static_cast<SizeSpec*>(field));
      case OptionBinding::Kind::kLog: return log(static_cast<LogSpec*>(field));
      case OptionBinding::Kind::kPerDirSize:
        return ApplyPerDir(def, v, static_cast<PerDir<uint64_t>*>(field), size);
      case OptionBinding::Kind::kNone: break;
    }
  }
  switch (def.id) {
    case OptionId::kFilename: spec->filenames = SplitColonList(v); return absl::OkStatus();
    case OptionId::kRw: {
      std::string param;
      BLKLAB_ASSIGN_OR_RETURN(
          int i, choice("read write trim randread randwrite randtrim rw readwrite randrw "
                        "trimwrite randtrimwrite",
                        &param));
      static constexpr RwPattern kMap[] = {
          RwPattern::kRead,     RwPattern::kWrite,     RwPattern::kTrim,
          RwPattern::kRandRead, RwPattern::kRandWrite, RwPattern::kRandTrim,
          RwPattern::kReadWrite, RwPattern::kReadWrite, RwPattern::kRandRw,
          RwPattern::kTrimWrite, RwPattern::kRandTrimWrite};
      spec->rw = kMap[i];
      spec->rw_modifier = 0;
      if (!param.empty()) {
        const bool negative = param[0] == '-';
        auto m = size(negative ? param.substr(1) : param);
        if (!m.ok()) return Failed(def, v, m.status());
        if (*m > static_cast<uint64_t>(INT64_MAX)) return Failed(def, v, "modifier too large");
        spec->rw_modifier = negative ? -static_cast<int64_t>(*m) : static_cast<int64_t>(*m);
      }
      return absl::OkStatus();
    }
    case OptionId::kRwSequencer: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("sequential identical", nullptr));
      spec->rw_sequencer = i == 0 ? RwSequencer::kSequential : RwSequencer::kIdentical;
      return absl::OkStatus();
    }
    case OptionId::kRwmixwrite: {
      uint32_t w = 0;
      BLKLAB_RETURN_IF_ERROR(u32(&w, 0, 100));
      spec->rwmixread = 100 - w;
      return absl::OkStatus();
    }
    case OptionId::kBs:
      return ApplyPerDir(def, v, &spec->bs, [&](const std::string& s) -> absl::StatusOr<uint64_t> {
        BLKLAB_ASSIGN_OR_RETURN(uint64_t b, size(s));
        if (b == 0) return absl::InvalidArgumentError("block size must be >= 1");
        return b;
      });
    case OptionId::kBlockalign:
      return ApplyPerDir(def, v, &spec->blockalign, size);
    case OptionId::kBsrange:
      return ApplyPerDir(def, v, &spec->bs_range,
                         [&](const std::string& s) -> absl::StatusOr<SizeRange> {
                           BLKLAB_ASSIGN_OR_RETURN(SizeRange r, ParseSizeRange(s, kb));
                           if (r.lo == 0) return absl::InvalidArgumentError("block size must be >= 1");
                           return r;
                         });
    case OptionId::kBssplit:
      return ApplyPerDir(def, v, &spec->bssplit,
                         [&](const std::string& s) { return ParseBsSplitList(s, kb); });
    case OptionId::kRandseed:
      BLKLAB_RETURN_IF_ERROR(u64(&spec->randseed));
      spec->randseed_set = true;
      return absl::OkStatus();
    case OptionId::kIoengine: {
      spec->ioengine_name = v;
      if (auto e = ModelledEngine(v); e.has_value()) {
        spec->ioengine = *e;
        return absl::OkStatus();
      }
      if (!ctx.accept_unmodelled_engines) {
        return absl::InvalidArgumentError(absl::StrCat("ioengine=", v, " is not modelled by blklab"));
      }
      spec->ioengine = IoEngine::kUnmodelled;
      return absl::OkStatus();
    }
    case OptionId::kFilesize: {
      auto r = ParseSizeRange(v, kb);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->filesize = *r;
      return absl::OkStatus();
    }
    case OptionId::kSyncIo: {
      // sync=: the file opened O_SYNC (sync, 1) or O_DSYNC (dsync).
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("none 0 sync 1 dsync", nullptr));
      spec->sync_io = i <= 1 ? SyncIo::kNone : (i <= 3 ? SyncIo::kSync : SyncIo::kDsync);
      return absl::OkStatus();
    }
    case OptionId::kFadviseHint: {
      // td_io_open_file: posix_fadvise at each open (fio's F_ADV_*).
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("0 1 random sequential", nullptr));
      static constexpr FadviseHint kHints[] = {FadviseHint::kNone, FadviseHint::kType, FadviseHint::kRandom,
                                               FadviseHint::kSequential};
      spec->fadvise_hint = kHints[i];
      return absl::OkStatus();
    }
    case OptionId::kSgWriteMode: {
      // fio's sg engine: what a write direction I/O sends (engines/sg.c).
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("write write_and_verify verify write_same write_same_ndob "
                                            "verify_bytchk_00 verify_bytchk_01 verify_bytchk_11 write_stream",
                                            nullptr));
      static constexpr SgWriteMode kModes[] = {SgWriteMode::kWrite, SgWriteMode::kWriteAndVerify,
                                               SgWriteMode::kWriteAndVerify, SgWriteMode::kWriteSame,
                                               SgWriteMode::kWriteSameNdob, SgWriteMode::kVerifyBytchk00,
                                               SgWriteMode::kVerifyBytchk01, SgWriteMode::kVerifyBytchk11,
                                               SgWriteMode::kWriteStream};
      spec->sg_write_mode = kModes[i];
      return absl::OkStatus();
    }
    case OptionId::kFileServiceType: {
      std::string param;
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("roundrobin random sequential zipf pareto normal gauss", &param));
      spec->file_service_type = static_cast<FileServiceType>(i);
      spec->file_service_nr = 1;
      // roundrobin:N, random:N, sequential:N: N I/Os before the next file
      // (fio's str_fst_cb); the skewed kinds take their parameter there.
      if (!param.empty() && i <= static_cast<int>(FileServiceType::kSequential)) {
        uint64_t n = 0;
        if (!absl::SimpleAtoi(param, &n) || n == 0 || n > (1u << 30)) {
          return Failed(def, v, "the number after ':' is how many I/Os go to a file before the next one (1 or more)");
        }
        spec->file_service_nr = static_cast<uint32_t>(n);
      }
      return absl::OkStatus();
    }
    case OptionId::kRandomGenerator: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("tausworthe lfsr tausworthe64", nullptr));
      spec->random_generator = static_cast<RandomGenerator>(i);
      return absl::OkStatus();
    }
    case OptionId::kRandomDistribution: {
      auto r = ParseDistribution(v, kb);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->random_distribution = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kPercentageRandom:
      return ApplyPerDir(def, v, &spec->percentage_random,
                         [&](const std::string& s) -> absl::StatusOr<uint32_t> {
                           BLKLAB_ASSIGN_OR_RETURN(uint64_t p, ParseUint(s));
                           if (p > 100) return absl::InvalidArgumentError("above 100");
                           return static_cast<uint32_t>(p);
                         });
    case OptionId::kBuffered: {
      bool b = false;
      BLKLAB_RETURN_IF_ERROR(boolean(&b));
      spec->direct = !b;
      return absl::OkStatus();
    }
    case OptionId::kGtodReduce: {
      // str_gtod_reduce_cb: =1 turns off every latency and bandwidth
      // measurement (a later disable_*=0 turns one back on); =0 leaves them.
      bool b = false;
      BLKLAB_RETURN_IF_ERROR(boolean(&b));
      spec->gtod_reduce = b;
      if (b) {
        spec->disable_lat = spec->disable_clat = spec->disable_slat = spec->disable_bw = true;
        spec->clat_percentiles = spec->lat_percentiles = spec->slat_percentiles = false;
      }
      return absl::OkStatus();
    }
    case OptionId::kStartdelay: {
      auto r = ParseTimeRangeNs(v, TimeUnit::kSeconds);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->startdelay_min_ns = r->lo;
      spec->startdelay_max_ns = r->hi;
      return absl::OkStatus();
    }
    case OptionId::kZonemode: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("none strided zbd", nullptr));
      spec->zonemode = static_cast<ZoneMode>(i);
      return absl::OkStatus();
    }
    case OptionId::kThinktimeBlocksType: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("complete issue", nullptr));
      spec->thinktime_blocks_type = i == 0 ? ThinktimeBlocksType::kComplete : ThinktimeBlocksType::kIssue;
      return absl::OkStatus();
    }
    case OptionId::kRateProcess: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("linear poisson", nullptr));
      spec->rate_process = i == 0 ? RateProcess::kLinear : RateProcess::kPoisson;
      return absl::OkStatus();
    }
    case OptionId::kCpusAllowed: {
      auto r = ParseCpuList(v);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->cpus_allowed = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kCpusAllowedPolicy: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("shared split", nullptr));
      spec->cpus_allowed_policy = i == 0 ? CpusAllowedPolicy::kShared : CpusAllowedPolicy::kSplit;
      return absl::OkStatus();
    }
    case OptionId::kNumaCpuNodes: {
      auto r = ParseCpuList(v);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->numa_cpu_nodes = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kPercentileList: {
      auto r = ParsePercentileList(v, 20);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->percentile_list = std::move(*r);
      return absl::OkStatus();
    }
    case OptionId::kUnifiedRwReporting: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("none mixed both 0 1 2", nullptr));
      spec->unified_rw_reporting = static_cast<UnifiedRwReporting>(i % 3);
      return absl::OkStatus();
    }
    case OptionId::kKbBase: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("1024 1000", nullptr));
      spec->kb_base = i == 0 ? 1024 : 1000;
      return absl::OkStatus();
    }
    case OptionId::kUnitBase: {
      BLKLAB_ASSIGN_OR_RETURN(int i, choice("0 8 1", nullptr));
      spec->unit_base = i == 0 ? 0 : i == 1 ? 8 : 1;
      return absl::OkStatus();
    }
    // Engine-private options.
    case OptionId::kCmdprioPercentage: {
      auto f = SplitPerDirection(v);
      if (!f.ok()) return Failed(def, v, f.status());
      if ((*f)[0].has_value()) {
        auto p = ParseUint(*(*f)[0]);
        if (!p.ok() || *p > 100) return Failed(def, v, "expected 0..100");
        spec->engine_flags.cmdprio_percentage = static_cast<uint32_t>(*p);
      }
      return absl::OkStatus();
    }
    case OptionId::kSqthreadPollCpu: {
      auto r = ParseInt(v);
      if (!r.ok() || *r < -1 || *r > kMaxCpuId) return Failed(def, v, "bad CPU number");
      spec->engine_flags.sqthread_poll_cpu = static_cast<int32_t>(*r);
      return absl::OkStatus();
    }
    case OptionId::kNonvectored: {
      auto r = ParseInt(v);
      if (!r.ok()) return Failed(def, v, r.status());
      spec->engine_flags.nonvectored = *r > 0;
      return absl::OkStatus();
    }
    case OptionId::kUncached: {
      uint32_t u = 0;
      BLKLAB_RETURN_IF_ERROR(u32(&u, 0, UINT32_MAX));
      spec->engine_flags.uncached = u != 0;
      return absl::OkStatus();
    }
    case OptionId::kGeneric: {
      BLKLAB_RETURN_IF_ERROR(ValidateGeneric(def, v, kb));
      // Options fio accepts whose effect on the run is not modelled: kept
      // so that a run refuses them by name (a parse still succeeds).
      static const std::pair<const char*, const char*> kEffects[] = {
          {"read_iolog", "replaying an I/O log (fio's iolog replay) is not modelled"},
          {"thp", "the mmap engine's transparent huge pages (MADV_HUGEPAGE on a private mapping) are not modelled"},
          {"steadystate_duration",
           "fio's steady-state detection (ss=, ss_dur=), which ends the job once the criterion holds, is not "
           "modelled"},
      };
      std::string name(def.name);
      for (const auto& [opt, why] : kEffects) {
        if (name != opt) continue;
        const bool off = v.empty() || (name == "steadystate_duration" && (v == "0" || v == "0s")) ||
                         (name == "thp" && v == "0");
        std::erase_if(spec->unmodelled_effects,
                      [&](const std::string& e) { return absl::StartsWith(e, name + "="); });
        if (!off) spec->unmodelled_effects.push_back(absl::StrCat(name, "=", v, ": ", why));
      }
      return absl::OkStatus();
    }
    default:
      // A typed option must have a binding (applied above) or a case here.
      return absl::InternalError(absl::StrCat("option ", def.name, " has neither a binding nor code"));
  }
}

}  // namespace blklab::workload
