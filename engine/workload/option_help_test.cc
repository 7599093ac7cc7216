// Tests for --cmdhelp / --enghelp: the fields of a few options and fio 3.33's
// layout (compared with `fio --cmdhelp=bs` etc. by hand; the help sentences
// are blklab's own).
#include "engine/workload/option_help.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "engine/workload/option_table.h"
#include "gtest/gtest.h"

namespace blklab::workload {
namespace {

TEST(OptionHelpTest, BsFields) {
  auto h = GetOptionHelp("blocksize");  // by alias
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->name, "bs");
  EXPECT_EQ(h->alias, "blocksize");
  EXPECT_EQ(h->type, "integer value (opt=100)");
  EXPECT_EQ(h->default_value, "4096");
  EXPECT_EQ(h->range, "min=1, max=-1");
  EXPECT_TRUE(h->valid_values.empty());
}

TEST(OptionHelpTest, IodepthRuntimeDirectTimeBased) {
  auto iodepth = GetOptionHelp("iodepth");
  ASSERT_TRUE(iodepth.ok());
  EXPECT_EQ(iodepth->alias, "");
  EXPECT_EQ(iodepth->type, "integer value (opt=100)");
  EXPECT_EQ(iodepth->default_value, "1");
  auto runtime = GetOptionHelp("runtime");
  ASSERT_TRUE(runtime.ok());
  EXPECT_EQ(runtime->alias, "timeout");
  EXPECT_EQ(runtime->type, "string with time postfix (opt=10s)");
  EXPECT_EQ(runtime->default_value, "0");
  auto direct = GetOptionHelp("direct");
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->type, "boolean value (opt=1)");
  EXPECT_EQ(direct->range, "min=0, max=1");
  auto tb = GetOptionHelp("time_based");
  ASSERT_TRUE(tb.ok());
  EXPECT_EQ(tb->type, "empty or boolean value ([0|1])");
  EXPECT_EQ(tb->default_value, "no default");
}

TEST(OptionHelpTest, RwValidValues) {
  auto h = GetOptionHelp("readwrite");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->name, "rw");
  EXPECT_EQ(h->alias, "readwrite");
  EXPECT_EQ(h->type, "string (opt=bla)");
  EXPECT_EQ(h->default_value, "read");
  ASSERT_EQ(h->valid_values.size(), 11u);
  EXPECT_EQ(h->valid_values.front(), "read");
  EXPECT_EQ(h->valid_values.back(), "randtrimwrite");
}

TEST(OptionHelpTest, CmdHelpLayout) {
  auto text = CmdHelp("bs");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "                  bs: Block size of each I/O, per direction\n"
            "               alias: blocksize\n"
            "                type: integer value (opt=100)\n"
            "             default: 4096\n"
            "               range: min=1, max=-1\n"
            "\n");
  auto rw = CmdHelp("rw");
  ASSERT_TRUE(rw.ok());
  EXPECT_NE(rw->find("        valid values: read\n                    : write\n"), std::string::npos);
  auto unknown = CmdHelp("nonexist");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "No such command: nonexist");
  // Engine options are not general commands (fio: "No such command: hipri").
  EXPECT_FALSE(CmdHelp("hipri").ok());
}

TEST(OptionHelpTest, CmdHelpAllListsGeneralOptions) {
  auto all = CmdHelp("");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->rfind("description             : ", 0), 0u);
  EXPECT_NE(all->find("\nbs                      : "), std::string::npos);
  EXPECT_EQ(all->find("\nhipri "), std::string::npos);
  EXPECT_EQ(*CmdHelp("all"), *all);
}

TEST(OptionHelpTest, EngHelp) {
  auto engines = EngHelp("");
  ASSERT_TRUE(engines.ok());
  EXPECT_EQ(engines->rfind("Available IO engines:\n\t", 0), 0u);
  EXPECT_NE(engines->find("\tio_uring\n"), std::string::npos);
  auto uring = EngHelp("io_uring");
  ASSERT_TRUE(uring.ok());
  EXPECT_NE(uring->find("hipri                   : "), std::string::npos);
  EXPECT_NE(uring->find("\nfixedbufs               : "), std::string::npos);
  EXPECT_EQ(uring->find("userspace_reap"), std::string::npos);
  auto hipri = EngHelp("io_uring,hipri");
  ASSERT_TRUE(hipri.ok());
  EXPECT_EQ(hipri->rfind("               hipri: ", 0), 0u);
  EXPECT_NE(hipri->find("type: empty or boolean value ([0|1])\n"), std::string::npos);
  EXPECT_FALSE(EngHelp("nosuchengine").ok());
  EXPECT_FALSE(EngHelp("psync,hipri").ok());
}

// Every option, general or engine-private, has its own description: in the
// table and in every help text that shows it.
TEST(OptionHelpTest, EveryOptionHasADescription) {
  for (const OptionDef& def : AllOptions()) {
    SCOPED_TRACE(def.name);
    EXPECT_NE(absl::string_view(def.help), "");
    auto h = GetOptionHelp(def.name);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_NE(h->help, "");
    EXPECT_NE(h->help, "(no description)");
  }
  auto all = CmdHelp("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->find("(no description)"), std::string::npos);
  for (const char* engine : {"io_uring", "libaio", "pvsync2", "sg", "net", "cpuio", "rbd"}) {
    auto eng = EngHelp(engine);
    ASSERT_TRUE(eng.ok()) << engine;
    EXPECT_EQ(eng->find("(no description)"), std::string::npos) << engine;
  }
}

// Options blklab accepts but does not model carry a marker after their help,
// in --cmdhelp=all, --cmdhelp=OPTION and --enghelp; modelled ones do not.
TEST(OptionHelpTest, MarksUnmodelledOptions) {
  auto nice = GetOptionHelp("nice");  // tier 3: the parser warns and ignores it
  ASSERT_TRUE(nice.ok());
  EXPECT_EQ(nice->modelling, OptionModelling::kIgnored);
  auto read_iolog = GetOptionHelp("read_iolog");  // a run refuses it
  ASSERT_TRUE(read_iolog.ok());
  EXPECT_EQ(read_iolog->modelling, OptionModelling::kRefusedByRun);
  auto zones = GetOptionHelp("max_open_zones");  // kGeneric, no binding: no effect
  ASSERT_TRUE(zones.ok());
  EXPECT_EQ(zones->modelling, OptionModelling::kIgnored);
  auto bs = GetOptionHelp("bs");
  ASSERT_TRUE(bs.ok());
  EXPECT_EQ(bs->modelling, OptionModelling::kModelled);
  EXPECT_EQ(GetOptionHelp("cgroup")->modelling, OptionModelling::kModelled);  // kGeneric with a binding

  auto all = CmdHelp("all");
  ASSERT_TRUE(all.ok());
  EXPECT_NE(all->find(absl::StrFormat("\nnice                    : %s (accepted, not modelled)\n", nice->help)),
            std::string::npos);
  EXPECT_NE(all->find(absl::StrFormat("\nread_iolog              : %s (accepted, not modelled: a run refuses it)\n",
                                      read_iolog->help)),
            std::string::npos);
  EXPECT_NE(all->find("\nbs                      : Block size of each I/O, per direction\n"), std::string::npos);

  auto one = CmdHelp("nice");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->rfind(absl::StrFormat("                nice: %s (accepted, not modelled)\n", nice->help), 0), 0u);
  auto net = EngHelp("net");
  ASSERT_TRUE(net.ok());
  EXPECT_NE(net->find("\nnodelay                 : "), std::string::npos);
  EXPECT_NE(net->find(" (accepted, not modelled)\nlisten "), std::string::npos);

  // Every option the parser warns about (tier 3) is marked wherever it is listed.
  for (const OptionDef& def : AllOptions()) {
    if (def.tier != 3) continue;
    SCOPED_TRACE(def.name);
    auto h = GetOptionHelp(def.name);
    ASSERT_TRUE(h.ok());
    EXPECT_NE(h->modelling, OptionModelling::kModelled);
    const std::string line = absl::StrFormat("%-24s: %s %s\n", def.name, h->help, ModellingMarker(h->modelling));
    if (!def.is_engine_private()) {
      EXPECT_NE(all->find(absl::StrCat("\n", line)), std::string::npos);
    } else {
      const std::string engine(absl::string_view(def.engines).substr(0, absl::string_view(def.engines).find(' ')));
      auto eng = EngHelp(engine);
      ASSERT_TRUE(eng.ok()) << engine;
      EXPECT_NE(eng->find(line), std::string::npos) << engine;
    }
  }
}

}  // namespace
}  // namespace blklab::workload
