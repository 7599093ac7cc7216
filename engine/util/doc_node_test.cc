#include "engine/util/doc_node.h"

#include "gtest/gtest.h"

namespace blklab::util {
namespace {

TEST(DocNodeTest, NumberAccessors) {
  EXPECT_EQ(*DocNode::Number("42").AsInt64(), 42);
  EXPECT_EQ(*DocNode::Number("-7").AsInt64(), -7);
  EXPECT_EQ(*DocNode::Number("1e3").AsInt64(), 1000);
  EXPECT_EQ(*DocNode::Number("64.0").AsInt64(), 64);
  EXPECT_FALSE(DocNode::Number("1.5").AsInt64().ok());
  EXPECT_FALSE(DocNode::Number("1e30").AsInt64().ok());
  EXPECT_FALSE(DocNode::String("1").AsInt64().ok());
  EXPECT_DOUBLE_EQ(*DocNode::Number("2.5").AsDouble(), 2.5);
  EXPECT_FALSE(DocNode::Number("1e999").AsDouble().ok());
}

TEST(DocNodeTest, MapKeepsOrderAndRejectsDuplicates) {
  DocNode m = DocNode::Map();
  EXPECT_TRUE(m.AddEntry("b", {}, DocNode::Int(1)));
  EXPECT_TRUE(m.AddEntry("a", {}, DocNode::Int(2)));
  EXPECT_FALSE(m.AddEntry("b", {}, DocNode::Int(3)));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.entries()[0].key, "b");
  EXPECT_EQ(m.Find("a")->text(), "2");
  EXPECT_EQ(m.Find("c"), nullptr);
}

TEST(DocNodeTest, WriteJsonCompactAndIndented) {
  DocNode m = DocNode::Map();
  DocNode l = DocNode::List();
  l.Append(DocNode::Bool(true));
  l.Append(DocNode::Null());
  l.Append(DocNode::String("a\"b\n\x01"));
  m.AddEntry("list", {}, l);
  m.AddEntry("n", {}, DocNode::Double(0.1));
  m.AddEntry("e", {}, DocNode::Map());
  EXPECT_EQ(WriteJson(m), R"({"list":[true,null,"a\"b\n\u0001"],"n":0.1,"e":{}})");
  EXPECT_EQ(WriteJson(m, 2),
            "{\n  \"list\": [\n    true,\n    null,\n    \"a\\\"b\\n\\u0001\"\n  ],\n  \"n\": 0.1,\n  \"e\": {}\n}");
}

TEST(DocNodeTest, WriteJsonNormalisesYamlNumbers) {
  EXPECT_EQ(WriteJson(DocNode::Number("+5")), "5");
  EXPECT_EQ(WriteJson(DocNode::Number("007")), "7");
  EXPECT_EQ(WriteJson(DocNode::Number(".5")), "0.5");
  EXPECT_EQ(WriteJson(DocNode::Number("1.")), "1");
}

TEST(DocNodeTest, EqualityIgnoresPositions) {
  EXPECT_EQ(DocNode::Int(3, {1, 2}), DocNode::Int(3, {4, 5}));
  EXPECT_FALSE(DocNode::Int(3) == DocNode::String("3"));
}

}  // namespace
}  // namespace blklab::util
