#include "engine/util/json_reader.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::util {
namespace {

using ::testing::HasSubstr;

TEST(JsonReaderTest, ParsesAllKinds) {
  absl::StatusOr<DocNode> doc =
      ParseJson(R"( {"a": 1, "b": [true, false, null, -0.5e+3], "c": "x\u00e9\ud83d\ude00\n", "d": {}} )");
  ASSERT_TRUE(doc.ok()) << doc.status();
  ASSERT_TRUE(doc->is_map());
  EXPECT_EQ(*doc->Find("a")->AsInt64(), 1);
  const DocNode* b = doc->Find("b");
  ASSERT_EQ(b->size(), 4u);
  EXPECT_TRUE(b->items()[0].bool_value());
  EXPECT_TRUE(b->items()[2].is_null());
  EXPECT_EQ(b->items()[3].text(), "-0.5e+3");
  EXPECT_EQ(doc->Find("c")->text(), "x\xc3\xa9\xf0\x9f\x98\x80\n");
  EXPECT_TRUE(doc->Find("d")->is_map());
}

TEST(JsonReaderTest, Positions) {
  absl::StatusOr<DocNode> doc = ParseJson("{\n  \"a\":\n    [1,\n  2]}");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->entries()[0].key_pos.line, 2);
  EXPECT_EQ(doc->entries()[0].key_pos.column, 3);
  const DocNode* a = doc->Find("a");
  EXPECT_EQ(a->pos().line, 3);
  EXPECT_EQ(a->pos().column, 5);
  EXPECT_EQ(a->items()[1].pos().line, 4);
  EXPECT_EQ(a->items()[1].pos().column, 3);
}

TEST(JsonReaderTest, RoundTripsThroughWriter) {
  const std::string text = R"({"x":[1,2.5,"s",{"y":null}],"z":false})";
  absl::StatusOr<DocNode> doc = ParseJson(text);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(WriteJson(*doc), text);
  absl::StatusOr<DocNode> again = ParseJson(WriteJson(*doc, 4));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *doc);
}

struct BadCase {
  const char* text;
  const char* message;
};

TEST(JsonReaderTest, RejectsMalformedInput) {
  const BadCase cases[] = {
      {"", "empty document"},
      {"{", "expected a string key"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\":1,}", "expected a string key"},
      {"[1,]", "unexpected character"},
      {"[1 2]", "expected ',' or ']'"},
      {"01", "leading zero"},
      {"1.", "digit after '.'"},
      {"-", "expected a digit"},
      {"1e", "exponent"},
      {"NaN", "unexpected character"},
      {"tru", "invalid literal"},
      {"truex", "invalid literal"},
      {"'a'", "unexpected character"},
      {"\"abc", "unterminated string"},
      {"\"a\tb\"", "control character"},
      {"\"\\x\"", "invalid escape"},
      {"\"\\ud800\"", "high surrogate"},
      {"\"\\udc00\"", "lone low surrogate"},
      {"\"\\u12g4\"", "invalid hex"},
      {"{\"a\":1,\"a\":2}", "duplicate key \"a\""},
      {"1 2", "unexpected content"},
      {"// c\n1", "unexpected character"},
      {"\"\xff\"", "invalid UTF-8"},
      {"\"\xc0\xaf\"", "invalid UTF-8"},
      {"\x01", "control character"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<DocNode> doc = ParseJson(c.text);
    ASSERT_FALSE(doc.ok()) << "accepted: " << c.text;
    EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr(c.message)) << c.text;
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr("JSON line ")) << c.text;
  }
}

TEST(JsonReaderTest, ErrorNamesLineAndColumn) {
  absl::StatusOr<DocNode> doc = ParseJson("{\n  \"a\": [1,\n    x]}");
  ASSERT_FALSE(doc.ok());
  EXPECT_THAT(std::string(doc.status().message()), HasSubstr("line 3, column 5"));
}

TEST(JsonReaderTest, Limits) {
  ParseLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(ParseJson("[[[1]]]", limits).ok());
  absl::StatusOr<DocNode> deep = ParseJson("[[[[1]]]]", limits);
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kResourceExhausted);

  limits = ParseLimits();
  limits.max_nodes = 4;
  EXPECT_TRUE(ParseJson("[1,2,3]", limits).ok());
  EXPECT_EQ(ParseJson("[1,2,3,4]", limits).status().code(), absl::StatusCode::kResourceExhausted);

  limits = ParseLimits();
  limits.max_bytes = 8;
  EXPECT_EQ(ParseJson("[1,2,3,4,5]", limits).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(JsonReaderTest, DeepNestingDoesNotCrash) {
  std::string deep(100000, '[');
  EXPECT_EQ(ParseJson(deep).status().code(), absl::StatusCode::kResourceExhausted);
  std::string deep_obj;
  for (int i = 0; i < 10000; ++i) deep_obj += "{\"a\":";
  EXPECT_EQ(ParseJson(deep_obj).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(JsonReaderTest, SkipsBom) {
  absl::StatusOr<DocNode> doc = ParseJson("\xEF\xBB\xBF[1]");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(doc->size(), 1u);
}

}  // namespace
}  // namespace blklab::util
