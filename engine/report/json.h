// engine/report/json.h
//
// Json is a small ordered JSON value with a printer that reproduces fio's own
// JSON writer byte for byte (docs/fio-compatibility.md c.3): two-space indentation,
// `"key" : value`, one member per line, integers plain, every float `%f`,
// strings escaping only `\` and `"`, an empty object printed as "{", newline,
// newline, "}".
//
// Thread-safety: a plain value type. Cost: not on any hot path.
#ifndef BLKLAB_ENGINE_REPORT_JSON_H_
#define BLKLAB_ENGINE_REPORT_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

namespace blklab::report {

class Json {
 public:
  enum class Kind { kObject, kArray, kString, kInt, kUint, kDouble };

  static Json Object() { return Json(Kind::kObject); }
  static Json Array() { return Json(Kind::kArray); }
  static Json Str(std::string s);
  static Json Int(int64_t v);
  static Json Uint(uint64_t v);
  static Json Double(double v);

  // Object: appends a member (keys are not de-duplicated; order is kept).
  Json& Add(std::string key, Json value);
  Json& Add(std::string key, const char* s) { return Add(std::move(key), Str(s)); }
  Json& Add(std::string key, const std::string& s) { return Add(std::move(key), Str(s)); }
  Json& AddInt(std::string key, int64_t v) { return Add(std::move(key), Int(v)); }
  Json& AddUint(std::string key, uint64_t v) { return Add(std::move(key), Uint(v)); }
  Json& AddDouble(std::string key, double v) { return Add(std::move(key), Double(v)); }
  // Array: appends an element.
  Json& Push(Json value);

  Kind kind() const { return kind_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::vector<Json>& values() const { return values_; }

  // fio's layout; a top-level document is followed by "\n" by the caller.
  std::string Print() const;

 private:
  explicit Json(Kind kind) : kind_(kind) {}
  void PrintTo(std::string* out, int depth) const;

  Kind kind_;
  std::string str_;
  int64_t int_ = 0;
  uint64_t uint_ = 0;
  double double_ = 0;
  std::vector<std::string> keys_;  // objects only
  std::vector<Json> values_;       // members or elements
};

}  // namespace blklab::report

#endif  // BLKLAB_ENGINE_REPORT_JSON_H_
