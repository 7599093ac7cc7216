// Host specs between the API proto and the engine (convert.h): a proto
// HostSpec walked by reflection into the engine's document form and back.
#include "server/convert.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_spec.h"
#include "engine/util/doc_node.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace blklab::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using util::DocNode;

// A scalar proto field value as a document node.
DocNode ScalarToDoc(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return DocNode::Int(r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return DocNode::Int(r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return DocNode::Int(r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return DocNode::Bool(r->GetBool(m, f));
    case FieldDescriptor::CPPTYPE_STRING:
      return DocNode::String(r->GetString(m, f));
    default:
      return DocNode::Null();  // no other scalar types in HostSpec
  }
}

// Set fields of `m` (by field number) as a document map with the proto's
// field names, which are the host document's keys.
DocNode MessageToDoc(const Message& m) {
  DocNode out = DocNode::Map();
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->is_map()) {
      // Sorted by key: the reflection order of a map is unspecified.
      std::map<std::string, DocNode> sorted;
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        const Message& entry = r->GetRepeatedMessage(m, f, i);
        const FieldDescriptor* key = entry.GetDescriptor()->map_key();
        const FieldDescriptor* value = entry.GetDescriptor()->map_value();
        sorted.emplace(entry.GetReflection()->GetString(entry, key),
                       value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
                           ? MessageToDoc(entry.GetReflection()->GetMessage(entry, value))
                           : ScalarToDoc(entry, value));
      }
      DocNode map = DocNode::Map();
      for (auto& [k, v] : sorted) map.AddEntry(k, {}, std::move(v));
      out.AddEntry(f->name(), {}, std::move(map));
    } else if (f->is_repeated()) {
      DocNode list = DocNode::List();
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        list.Append(MessageToDoc(r->GetRepeatedMessage(m, f, i)));
      }
      out.AddEntry(f->name(), {}, std::move(list));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      out.AddEntry(f->name(), {}, MessageToDoc(r->GetMessage(m, f)));
    } else {
      out.AddEntry(f->name(), {}, ScalarToDoc(m, f));
    }
  }
  return out;
}

absl::Status SetScalar(const DocNode& v, const FieldDescriptor* f, Message* m, const std::string& path) {
  const Reflection* r = m->GetReflection();
  auto as_int = [&]() -> absl::StatusOr<int64_t> {
    if (!v.is_number()) return absl::InternalError(path + ": expected a number");
    return v.AsInt64();
  };
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      absl::StatusOr<int64_t> x = as_int();
      if (!x.ok()) return x.status();
      r->SetInt32(m, f, static_cast<int32_t>(*x));
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      absl::StatusOr<int64_t> x = as_int();
      if (!x.ok()) return x.status();
      r->SetInt64(m, f, *x);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      if (!v.is_bool()) return absl::InternalError(path + ": expected a bool");
      r->SetBool(m, f, v.bool_value());
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_STRING:
      if (!v.is_string()) return absl::InternalError(path + ": expected a string");
      r->SetString(m, f, v.text());
      return absl::OkStatus();
    default:
      return absl::InternalError(path + ": unsupported field type");
  }
}

// The reverse of MessageToDoc for a canonical host document.
absl::Status DocToMessage(const DocNode& doc, Message* m, const std::string& path) {
  if (!doc.is_map()) return absl::InternalError(path + ": expected a map");
  const Reflection* r = m->GetReflection();
  for (const util::DocMapEntry& e : doc.entries()) {
    const std::string field_path = path.empty() ? e.key : path + "." + e.key;
    const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(e.key);
    if (f == nullptr) return absl::InternalError(field_path + ": no such proto field");
    if (e.value.is_null()) continue;
    if (f->is_map()) {
      if (!e.value.is_map()) return absl::InternalError(field_path + ": expected a map");
      for (const util::DocMapEntry& me : e.value.entries()) {
        Message* entry = r->AddMessage(m, f);
        const FieldDescriptor* key = entry->GetDescriptor()->map_key();
        const FieldDescriptor* value = entry->GetDescriptor()->map_value();
        entry->GetReflection()->SetString(entry, key, me.key);
        if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          if (absl::Status s = DocToMessage(me.value, entry->GetReflection()->MutableMessage(entry, value),
                                            field_path + "." + me.key);
              !s.ok()) {
            return s;
          }
        } else if (absl::Status s = SetScalar(me.value, value, entry, field_path + "." + me.key); !s.ok()) {
          return s;
        }
      }
    } else if (f->is_repeated()) {
      if (!e.value.is_list()) return absl::InternalError(field_path + ": expected a list");
      int i = 0;
      for (const DocNode& item : e.value.items()) {
        if (absl::Status s = DocToMessage(item, r->AddMessage(m, f), absl::StrCat(field_path, "[", i++, "]"));
            !s.ok()) {
          return s;
        }
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (absl::Status s = DocToMessage(e.value, r->MutableMessage(m, f), field_path); !s.ok()) return s;
    } else if (absl::Status s = SetScalar(e.value, f, m, field_path); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<host::HostSpec> HostSpecFromProto(const v1::HostSpec& spec, const host::HostLimits& limits,
                                                 const std::string& default_name) {
  DocNode doc = MessageToDoc(spec);
  if (spec.name().empty() && !default_name.empty()) {
    DocNode named = DocNode::Map();
    named.AddEntry("name", {}, DocNode::String(default_name));
    for (const util::DocMapEntry& e : doc.entries()) named.AddEntry(e.key, e.key_pos, e.value);
    doc = std::move(named);
  }
  return host::HostSpecFromDoc(doc, limits);
}

absl::Status HostSpecToProto(const host::HostSpec& spec, v1::HostSpec* out) {
  out->Clear();
  return DocToMessage(host::HostSpecToDoc(spec), out, "");
}

}  // namespace blklab::server
