#include "server/resource_name.h"

#include "gtest/gtest.h"

namespace blklab::server {
namespace {

TEST(ResourceNameTest, ParsesTheIdOfItsCollection) {
  EXPECT_EQ(*ParseResourceName("jobs/abc-1", "jobs"), "abc-1");
  EXPECT_FALSE(ParseResourceName("jobs/ABC", "jobs").ok());
  EXPECT_FALSE(ParseResourceName("hosts/abc", "jobs").ok());
  EXPECT_FALSE(ParseResourceName("jobs/", "jobs").ok());
}

TEST(ResourceNameTest, ValidIds) {
  EXPECT_TRUE(IsValidResourceId("a"));
  EXPECT_TRUE(IsValidResourceId("j-0123abcd"));
  EXPECT_FALSE(IsValidResourceId(""));
  EXPECT_FALSE(IsValidResourceId("-a"));
  EXPECT_FALSE(IsValidResourceId(std::string(64, 'a')));
  EXPECT_TRUE(IsValidResourceId(std::string(63, 'a')));
}

}  // namespace
}  // namespace blklab::server
