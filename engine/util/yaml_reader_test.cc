#include "engine/util/yaml_reader.h"

#include <cstdint>
#include <string>

#include "engine/util/json_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::util {
namespace {

using ::testing::HasSubstr;

DocNode MustParse(const std::string& text) {
  absl::StatusOr<DocNode> doc = ParseYaml(text);
  EXPECT_TRUE(doc.ok()) << doc.status() << "\n" << text;
  return doc.ok() ? *doc : DocNode();
}

// The YAML text must produce the same tree as the JSON text.
void ExpectSameAsJson(const std::string& yaml, const std::string& json) {
  absl::StatusOr<DocNode> y = ParseYaml(yaml);
  ASSERT_TRUE(y.ok()) << y.status() << "\n" << yaml;
  absl::StatusOr<DocNode> j = ParseJson(json);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(WriteJson(*y), WriteJson(*j)) << yaml;
}

TEST(YamlReaderTest, BlockMappingsAndSequences) {
  ExpectSameAsJson(R"(# a host
---
name: desktop-7950x   # trailing comment
cpus:
  count: 32
  threads_per_core: 2
devices:
  - name: nullb0
    null_blk:
      irqmode: 1
  - name: nullb1
list_at_key_indent:
- a
- b
empty:
nested:
  - - x
    - y
  - z
)",
                   R"({"name":"desktop-7950x","cpus":{"count":32,"threads_per_core":2},
                      "devices":[{"name":"nullb0","null_blk":{"irqmode":1}},{"name":"nullb1"}],
                      "list_at_key_indent":["a","b"],"empty":null,"nested":[["x","y"],"z"]})");
}

TEST(YamlReaderTest, FlowCollections) {
  ExpectSameAsJson("cpus: {count: 32, threads_per_core: 2, list: [x, 'y z', \"w\"], e: {}, f: []}\n",
                   R"({"cpus":{"count":32,"threads_per_core":2,"list":["x","y z","w"],"e":{},"f":[]}})");
  ExpectSameAsJson("a: [1, 2,\n    3, # comment\n  4]\nb: 5\n", R"({"a":[1,2,3,4],"b":5})");
  ExpectSameAsJson("a: {x: , y: 1,}\n", R"({"a":{"x":null,"y":1}})");
  ExpectSameAsJson("{\"a\": [1, {\"b\": null}]}", R"({"a":[1,{"b":null}]})");
  ExpectSameAsJson("- [a, b]\n- {k: v}\n", R"([["a","b"],{"k":"v"}])");
}

TEST(YamlReaderTest, ScalarResolution) {
  DocNode d = MustParse(
      "a: null\nb: ~\nc: true\nd: False\ne: 42\nf: -3.5e2\ng: yes\nh: '42'\ni: 0x10\nj: .5\n"
      "k: http://x:80/y\nl: a#b\nm: \"tab\\tq\\\"\\u00e9\"\nn: 'it''s'\no: +7\np: 0o17\nq: 0x1g\nr: 0x\n");
  EXPECT_TRUE(d.Find("a")->is_null());
  EXPECT_TRUE(d.Find("b")->is_null());
  EXPECT_TRUE(d.Find("c")->bool_value());
  EXPECT_FALSE(d.Find("d")->bool_value());
  EXPECT_EQ(*d.Find("e")->AsInt64(), 42);
  EXPECT_EQ(*d.Find("f")->AsDouble(), -350.0);
  EXPECT_TRUE(d.Find("g")->is_string());
  EXPECT_TRUE(d.Find("h")->is_string());
  EXPECT_EQ(*d.Find("i")->AsInt64(), 16);  // core schema: 0x hex, 0o octal
  EXPECT_EQ(*d.Find("p")->AsInt64(), 15);
  EXPECT_TRUE(d.Find("q")->is_string());
  EXPECT_TRUE(d.Find("r")->is_string());
  EXPECT_TRUE(d.Find("j")->is_number());
  EXPECT_EQ(d.Find("k")->text(), "http://x:80/y");
  EXPECT_EQ(d.Find("l")->text(), "a#b");
  EXPECT_EQ(d.Find("m")->text(), "tab\tq\"\xc3\xa9");
  EXPECT_EQ(d.Find("n")->text(), "it's");
  EXPECT_EQ(*d.Find("o")->AsInt64(), 7);
}

TEST(YamlReaderTest, QuotedKeysAndDocumentEnd) {
  ExpectSameAsJson("\"a b\": 1\n'c': 2\n...\n# done\n", R"({"a b":1,"c":2})");
}

// Quoted values spanning lines fold as YAML 1.2 says (and as PyYAML's dump
// writes long strings): a break and its surrounding blanks are one space,
// each empty line a newline, an escaped break nothing; escaped blanks stay.
TEST(YamlReaderTest, QuotedScalarsFoldAcrossLines) {
  DocNode d = MustParse(
      "a: \"one   \n   two\"\n"
      "b: 'three\n\n  four'\n"
      "c: \"five\\\n    six\"\n"
      "d: \"tab\\t\n  end\"\n"
      "e: [\"x\n  y\", 'z']\n"
      "f:\n  - \"long # not a comment\n    line\"\n"
      "g: 1\n");
  EXPECT_EQ(d.Find("a")->text(), "one two");
  EXPECT_EQ(d.Find("b")->text(), "three\nfour");
  EXPECT_EQ(d.Find("c")->text(), "fivesix");
  EXPECT_EQ(d.Find("d")->text(), "tab\t end");
  EXPECT_EQ(d.Find("e")->items()[0].text(), "x y");
  EXPECT_EQ(d.Find("e")->items()[1].text(), "z");
  EXPECT_EQ(d.Find("f")->items()[0].text(), "long # not a comment line");
  EXPECT_EQ(*d.Find("g")->AsInt64(), 1);
  EXPECT_EQ(d.Find("g")->pos().line, 15);
}

TEST(YamlReaderTest, EmptyDocumentIsNull) {
  EXPECT_TRUE(MustParse("").is_null());
  EXPECT_TRUE(MustParse("# only a comment\n\n").is_null());
  EXPECT_TRUE(MustParse("---\n").is_null());
}

TEST(YamlReaderTest, TopLevelScalarAndCrlf) {
  EXPECT_EQ(MustParse("hello world\n").text(), "hello world");
  ExpectSameAsJson("a: 1\r\nb:\r\n  - x\r\n", R"({"a":1,"b":["x"]})");
}

TEST(YamlReaderTest, Positions) {
  DocNode d = MustParse("a:\n  b: [1,\n      2]\n  c: x\n");
  const DocNode* a = d.Find("a");
  EXPECT_EQ(a->pos().line, 2);
  EXPECT_EQ(a->pos().column, 3);
  EXPECT_EQ(a->entries()[1].key_pos.line, 4);
  EXPECT_EQ(a->entries()[1].key_pos.column, 3);
  EXPECT_EQ(a->Find("b")->items()[1].pos().line, 3);
  EXPECT_EQ(a->Find("b")->items()[1].pos().column, 7);
  EXPECT_EQ(a->Find("c")->pos().column, 6);
}

struct YamlBadCase {
  const char* text;
  const char* message;
  const char* where;
};

TEST(YamlReaderTest, RejectsUnsupportedAndMalformed) {
  const YamlBadCase cases[] = {
      {"a: &x 1\n", "anchors", "line 1, column 4"},
      {"a: *x\n", "aliases", "line 1, column 4"},
      {"a: !!str 1\n", "tags", "line 1, column 4"},
      {"a: |\n  text\n", "block scalars", "line 1, column 4"},
      {"%YAML 1.2\n---\na: 1\n", "directives", "line 1, column 1"},
      {"? a\n: b\n", "explicit keys", "line 1, column 1"},
      {"a: 1\n---\nb: 2\n", "multiple documents", "line 2, column 1"},
      {"a: 1\na: 2\n", "duplicate key \"a\"", "line 2, column 1"},
      {"a:\n\tb: 1\n", "tab in indentation", "line 2"},
      {"a: 1\n  b: 2\n", "unexpected indentation", "line 2"},
      {"a: b: c\n", "mapping values are not allowed", "line 1, column 5"},
      {"a: 'abc\n", "unterminated quoted", "line 1, column 4"},
      {"a: 'abc\n\nb: 1\n", "unterminated quoted", "line 1, column 4"},
      {"a: \"abc\n---\nb\"\n", "before a document marker", "line 1, column 4"},
      {"\"a\n b\": 1\n", "unexpected text", "line 2"},
      {"a: {'b\n c': 1}\n", "a quoted key must end on its line", "line 1, column 5"},
      {"a: \"x\n  \\q\"\n", "invalid escape", "line 2, column 3"},
      {"a: \"x\\q\"\n", "invalid escape", "line 1"},
      {"a: [1, 2\n", "unterminated flow", "line 1, column 4"},
      {"a: [1, 2}\n", "expected ',' or ']'", "line 1, column 9"},
      {"a: {b 1}\n", "expected ':'", "line 1"},
      {"a: {b: 1, b: 2}\n", "duplicate key", "line 1"},
      {"a: [b: 1]\n", "flow sequences need braces", "line 1"},
      {"- a\nb: 1\n", "unexpected content", "line 2, column 1"},
      {"a: 1\n- b\n", "expected a mapping key", "line 2, column 1"},
      {"a: - b\n", "block sequence cannot start", "line 1, column 4"},
      {"a: \"x\" y\n", "unexpected text", "line 1, column 8"},
      {"a: 1\nfoo\n", "expected ':'", "line 2"},
      {"a: \"\xff\"\n", "invalid UTF-8", "line 1, column 5"},
      {"a: 1\rb: 2\n", "carriage return", "line 1"},
      {"--- a: 1\n", "'---' line", "line 1"},
      {"a: {[x]: 1}\n", "flow collections as keys", "line 1"},
      {"a: [1, ]]\n", "unexpected text", "line 1"},
      {"a: \"\\ud800\"\n", "Unicode scalar", "line 1"},
      {": 1\n", "empty key", "line 1"},
  };
  for (const YamlBadCase& c : cases) {
    absl::StatusOr<DocNode> doc = ParseYaml(c.text);
    ASSERT_FALSE(doc.ok()) << "accepted: " << c.text;
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr(c.message)) << c.text;
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr(c.where)) << c.text;
  }
}

TEST(YamlReaderTest, Limits) {
  ParseLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(ParseYaml("a:\n  b:\n    c: 1\n", limits).ok());
  EXPECT_EQ(ParseYaml("a:\n  b:\n    c:\n      d: 1\n", limits).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ParseYaml("a: [[[[1]]]]\n", limits).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ParseYaml("- - - - 1\n", limits).status().code(), absl::StatusCode::kResourceExhausted);

  limits = ParseLimits();
  limits.max_nodes = 10;
  std::string many;
  for (int i = 0; i < 20; ++i) many += "-\n";
  EXPECT_EQ(ParseYaml(many, limits).status().code(), absl::StatusCode::kResourceExhausted);

  limits = ParseLimits();
  limits.max_bytes = 4;
  EXPECT_EQ(ParseYaml("a: 12345\n", limits).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(YamlReaderTest, PathologicalInputsTerminate) {
  EXPECT_EQ(ParseYaml(std::string(200000, '[')).status().code(), absl::StatusCode::kResourceExhausted);
  std::string maps;
  for (int i = 0; i < 50000; ++i) maps += "{a: ";
  EXPECT_EQ(ParseYaml(maps).status().code(), absl::StatusCode::kResourceExhausted);
  std::string stairs;
  for (int i = 0; i < 500; ++i) stairs += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  EXPECT_EQ(ParseYaml(stairs).status().code(), absl::StatusCode::kResourceExhausted);
  std::string dashes;
  for (int i = 0; i < 500; ++i) dashes += "- ";
  EXPECT_EQ(ParseYaml(dashes).status().code(), absl::StatusCode::kResourceExhausted);
}

// Deterministic mutation fuzzing: every mutant must return (OK or an error),
// never crash or hang. Run under ASan/UBSan for full value.
TEST(YamlReaderTest, MutatedDocumentsNeverCrash) {
  const std::string seed_doc = R"(---
name: "host \u00e9"
cpus: {count: 32, threads_per_core: 2, list: [a, 'b', "c"]}
devices:
  - name: nullb0   # comment
    null_blk:
      irqmode: 1
  - [x, {y: z}]
...
)";
  const char alphabet[] = "-:#[]{},'\"\\ \n\t&*!|>?%ux0a";
  uint64_t state = 12345;
  auto next = [&state]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  for (int iter = 0; iter < 5000; ++iter) {
    std::string doc = seed_doc;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = next() % (doc.size() + 1);
      switch (next() % 3) {
        case 0:
          doc.insert(at, 1, alphabet[next() % (sizeof(alphabet) - 1)]);
          break;
        case 1:
          if (at < doc.size()) doc.erase(at, 1 + next() % 3);
          break;
        default:
          if (at < doc.size()) doc[at] = alphabet[next() % (sizeof(alphabet) - 1)];
      }
    }
    absl::StatusOr<DocNode> y = ParseYaml(doc);
    absl::StatusOr<DocNode> j = ParseJson(doc);
    if (y.ok()) {
      // Whatever parsed must serialise to JSON that the JSON reader accepts.
      absl::StatusOr<DocNode> back = ParseJson(WriteJson(*y));
      ASSERT_TRUE(back.ok()) << back.status() << "\n" << doc;
    }
  }
}

}  // namespace
}  // namespace blklab::util
