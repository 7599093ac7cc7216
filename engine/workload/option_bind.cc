// The generic appliers of option bindings (option_bind.h): one per binding
// kind, plus the helpers the option callbacks share.
#include "engine/workload/option_bind.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine/util/status_macros.h"

namespace blklab::workload::option_bind {

absl::Status Failed(const OptionDef& def, const std::string& value, const absl::Status& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("failed parsing ", def.name, "=", QuoteForError(value), ": ", why.message()));
}

absl::Status Failed(const OptionDef& def, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("failed parsing ", def.name, "=", QuoteForError(value), ": ", why));
}

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

absl::StatusOr<const OptionPosval*> MatchPosval(const OptionDef& def, const std::string& value,
                                                std::string* param) {
  const OptionBinding& b = def.binding;
  const size_t cut = value.find_first_of(":,");
  const std::string head = value.substr(0, cut);
  if (param != nullptr) {
    *param = (cut != std::string::npos && value[cut] == ':') ? value.substr(cut + 1) : "";
  }
  for (int i = 0; i < b.posval_count; ++i) {
    if (head == b.posval[i].ival) return &b.posval[i];
  }
  std::string words;
  for (int i = 0; i < b.posval_count; ++i) absl::StrAppend(&words, i == 0 ? "" : " ", b.posval[i].ival);
  return Failed(def, value, absl::StrCat("valid values: ", words));
}

absl::Status ParseBoolInto(const OptionDef& def, const std::string& value, bool* out) {
  auto r = ParseBool(value);
  if (!r.ok()) return Failed(def, value, r.status());
  *out = *r;
  return absl::OkStatus();
}

absl::Status ParseU64Into(const OptionDef& def, const std::string& value, uint32_t kb_base, uint64_t* out) {
  auto r = ParseSize(value, kb_base);
  if (!r.ok()) return Failed(def, value, r.status());
  *out = *r;
  return absl::OkStatus();
}

absl::Status ParseU32Into(const OptionDef& def, const std::string& value, uint32_t kb_base, uint32_t* out,
                          uint64_t lo, uint64_t hi) {
  auto r = ParseSize(value, kb_base);
  if (!r.ok()) return Failed(def, value, r.status());
  if (*r < lo || *r > hi) return Failed(def, value, absl::StrCat("out of range [", lo, ",", hi, "]"));
  *out = static_cast<uint32_t>(*r);
  return absl::OkStatus();
}

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
      return MatchChoice(def.choices, v, nullptr) >= 0
                 ? absl::OkStatus()
                 : Failed(def, v, absl::StrCat("valid values: ", def.choices));
    case OptionKind::kFloatList: {
      auto l = ParsePercentileList(v, 64);
      return l.ok() ? absl::OkStatus() : Failed(def, v, l.status());
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyBinding(const OptionDef& def, const std::string& v, JobSpec* spec, const ApplyContext& ctx) {
  const OptionBinding& b = def.binding;
  const uint32_t kb = spec->kb_base;
  switch (b.kind) {
    case OptionBinding::Kind::kNone:
      if (def.id == OptionId::kGeneric) return ValidateGeneric(def, v, kb);
      // A typed option must have a binding.
      return absl::InternalError(absl::StrCat("option ", def.name, " has neither a binding nor code"));
    case OptionBinding::Kind::kCallback:
      return b.callback(def, v, spec, ctx);
    default:
      break;
  }
  void* field = b.field(spec);
  switch (b.kind) {
    case OptionBinding::Kind::kBool:
      return ParseBoolInto(def, v, static_cast<bool*>(field));
    case OptionBinding::Kind::kU32:
      return ParseU32Into(def, v, kb, static_cast<uint32_t*>(field), b.lo, b.hi);
    case OptionBinding::Kind::kU64:
      return ParseU64Into(def, v, kb, static_cast<uint64_t*>(field));
    case OptionBinding::Kind::kString:
      *static_cast<std::string*>(field) = v;
      return absl::OkStatus();
    case OptionBinding::Kind::kTime: {
      auto r = ParseTimeNs(v, b.unit);
      if (!r.ok()) return Failed(def, v, r.status());
      *static_cast<int64_t*>(field) = *r;
      return absl::OkStatus();
    }
    case OptionBinding::Kind::kSizeOrPercent: {
      auto r = ParseSizeOrPercent(v, kb);
      if (!r.ok()) return Failed(def, v, r.status());
      *static_cast<SizeSpec*>(field) = *r;
      return absl::OkStatus();
    }
    case OptionBinding::Kind::kLog: {
      // A bare option arrives as "1".
      auto* log = static_cast<LogSpec*>(field);
      if (v == "1") {
        *log = LogSpec{true, ""};
      } else if (v == "0") {
        *log = LogSpec{};
      } else {
        *log = LogSpec{true, v};
      }
      return absl::OkStatus();
    }
    case OptionBinding::Kind::kPerDirSize:
      return ApplyPerDir(def, v, static_cast<PerDir<uint64_t>*>(field),
                         [kb](const std::string& s) { return ParseSize(s, kb); });
    case OptionBinding::Kind::kChoice: {
      BLKLAB_ASSIGN_OR_RETURN(const OptionPosval* pv, MatchPosval(def, v, nullptr));
      b.store(field, pv->oval);
      return absl::OkStatus();
    }
    case OptionBinding::Kind::kNone:
    case OptionBinding::Kind::kCallback:
      break;
  }
  return absl::OkStatus();
}

}  // namespace blklab::workload::option_bind
