#include "server/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace blklab::server {
namespace {

// Directories made by TempDir, removed when the test program ends (after
// every store in them is closed).
std::vector<std::string>& TempDirs() {
  static auto* dirs = new std::vector<std::string>;
  return *dirs;
}

class RemoveTempDirs : public testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& d : TempDirs()) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
    TempDirs().clear();
  }
};
[[maybe_unused]] testing::Environment* const kRemoveTempDirs =
    testing::AddGlobalTestEnvironment(new RemoveTempDirs);

std::string TempDir() {
  const std::string base = (std::filesystem::temp_directory_path() / "blklab_store_test.XXXXXX").string();
  std::vector<char> tmpl(base.begin(), base.end());
  tmpl.push_back('\0');
  const char* made = mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << base;
  std::string dir = made != nullptr ? made : "";
  TempDirs().push_back(dir);
  return dir;
}

v1::Job MakeJob(const std::string& id, v1::Job::State state, const std::string& rid = "") {
  v1::Job j;
  j.set_name("jobs/" + id);
  j.set_preset("default");
  j.set_state(state);
  j.set_request_id(rid);
  return j;
}

TEST(StoreTest, JobsSurviveReopenAndResultIsKept) {
  const std::string dir = TempDir();
  {
    auto store = Store::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(MakeJob("a", v1::Job::QUEUED, "r1")).ok());
    ASSERT_TRUE((*store)->InsertJob(MakeJob("b", v1::Job::RUNNING)).ok());
    v1::Job c = MakeJob("c", v1::Job::QUEUED);
    ASSERT_TRUE((*store)->InsertJob(c).ok());
    c.set_state(v1::Job::SUCCEEDED);
    c.mutable_result()->set_fio_json("{}\n");
    c.mutable_result()->set_total_ios(7);
    ASSERT_TRUE((*store)->UpdateJob(c).ok());
    EXPECT_TRUE(absl::IsAlreadyExists((*store)->InsertJob(MakeJob("d", v1::Job::QUEUED, "r1"))));
  }
  auto store = Store::Open(dir);
  ASSERT_TRUE(store.ok());
  auto unfinished = (*store)->UnfinishedJobs();
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 2u);
  EXPECT_EQ((*unfinished)[0].name(), "jobs/a");
  auto c = (*store)->GetJob("c", true);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->result().fio_json(), "{}\n");
  EXPECT_EQ(c->result().total_ios(), 7u);
  auto basic = (*store)->GetJob("c", false);
  EXPECT_FALSE(basic->has_result());
  auto found = (*store)->FindJobByRequestId("r1", 0);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->name(), "jobs/a");
}

// Reads between writes must not hold back the WAL checkpoint: a statement
// left on a row keeps a read transaction open, and SQLite cannot restart the
// WAL behind a reader, so it grew with every result (hostile-input finding:
// 216 MB of WAL against a 4 KiB database). With every statement reset when
// its call ends, the WAL stays near the auto-checkpoint size while the
// database takes the data.
TEST(StoreTest, ReadsBetweenWritesDoNotHoldBackTheCheckpoint) {
  const std::string dir = TempDir();
  auto store = Store::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string blob(64 * 1024, 'x');
  for (int i = 0; i < 400; ++i) {
    const std::string id = "j" + std::to_string(i);
    v1::Job j = MakeJob(id, v1::Job::QUEUED, "r" + std::to_string(i));
    ASSERT_TRUE((*store)->InsertJob(j).ok());
    j.set_state(v1::Job::SUCCEEDED);
    j.mutable_result()->set_fio_json(blob);
    ASSERT_TRUE((*store)->UpdateJob(j).ok());
    // What a client does meanwhile: get, look up, list a page, count.
    ASSERT_TRUE((*store)->GetJob(id, true).ok());
    ASSERT_TRUE((*store)->FindJobByRequestId("r0", 0).ok());
    ASSERT_TRUE((*store)->ListJobs(JobFilter{}, 0, 5, true).ok());
    ASSERT_TRUE((*store)->CountJobsByState().ok());
  }
  std::error_code ec;
  const auto db = std::filesystem::file_size(dir + "/blklab.db", ec);
  const auto wal = std::filesystem::file_size(dir + "/blklab.db-wal", ec);
  EXPECT_GT(db, 20u << 20) << "the results went to the WAL only";
  EXPECT_LT(wal, 20u << 20) << "WAL " << wal << " bytes against a database of " << db;
}

// A crash that also loses the -wal file (hostile-input finding: 169 of 300
// acknowledged jobs gone, 109 back to QUEUED): every job created, ended or
// deleted and every host written reaches the database file within
// kCheckpointIntervalMs, so the file as it is on disk while the server runs
// - copied here without its -wal - holds all of them. Only a running job's
// state may be older (it runs again after a restart). The copy is retried
// for up to 10 s (100 checkpoint intervals) on a loaded machine.
TEST(StoreTest, TheDatabaseFileAloneHoldsEveryAcknowledgedWrite) {
  const std::string dir = TempDir();
  auto store = Store::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  v1::Host host;
  host.set_name("hosts/h");
  ASSERT_TRUE((*store)->CreateHost(host).ok());
  auto result_of = [](int i) { return "{\"i\": " + std::to_string(i) + "}\n"; };
  for (int i = 0; i < 60; ++i) {
    const std::string id = "j" + std::to_string(i);
    v1::Job j = MakeJob(id, v1::Job::QUEUED, "r" + std::to_string(i));
    ASSERT_TRUE((*store)->InsertJob(j).ok());
    if (i % 3 == 0) continue;  // stays queued
    j.set_state(v1::Job::RUNNING);
    ASSERT_TRUE((*store)->UpdateJob(j).ok());
    if (i % 3 == 1) continue;  // stays running
    j.set_state(v1::Job::SUCCEEDED);
    j.mutable_result()->set_fio_json(result_of(i));
    ASSERT_TRUE((*store)->UpdateJob(j).ok());
  }
  ASSERT_TRUE((*store)->DeleteJob("j2").ok());
  std::error_code ec;
  ASSERT_GT(std::filesystem::file_size(dir + "/blklab.db-wal", ec), 0u) << "the test needs a live WAL";
  // What the database file alone says is missing ("" when nothing is).
  auto missing_without_wal = [&]() -> std::string {
    const std::string copy = TempDir();
    std::filesystem::copy_file(dir + "/blklab.db", copy + "/blklab.db", ec);
    if (ec) return "copy: " + ec.message();
    auto lost_wal = Store::Open(copy);
    if (!lost_wal.ok()) return std::string(lost_wal.status().message());
    if (!(*lost_wal)->opened_after_lost_wal()) return "the lost -wal went unnoticed";
    if (!(*lost_wal)->GetHost("h").ok()) return "hosts/h";
    for (int i = 0; i < 60; ++i) {
      const std::string id = "j" + std::to_string(i);
      auto j = (*lost_wal)->GetJob(id, true);
      if (i == 2) {
        if (!absl::IsNotFound(j.status())) return "a deleted job came back: " + id;
        continue;
      }
      if (!j.ok()) return id + ": " + std::string(j.status().message());
      if (i % 3 == 2 && (j->state() != v1::Job::SUCCEEDED || j->result().fio_json() != result_of(i))) {
        return id + "'s result";
      }
    }
    return "";
  };
  std::string missing;
  for (int attempt = 0; attempt < 100; ++attempt) {
    missing = missing_without_wal();
    if (missing.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(Store::kCheckpointIntervalMs));
  }
  EXPECT_EQ(missing, "") << "the database file alone still lacks it after 10 s";
}

// The open mark tells a crash that kept its -wal (recovered, nothing lost)
// and a clean close from a crash whose -wal is gone.
TEST(StoreTest, ALostWalAfterACrashIsReportedAndACleanCloseIsNot) {
  const std::string dir = TempDir();
  {
    auto store = Store::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_FALSE((*store)->opened_after_lost_wal());  // a new file
    ASSERT_TRUE((*store)->InsertJob(MakeJob("a", v1::Job::QUEUED, "r1")).ok());
    // A crash with the -wal kept: the copy of both files.
    const std::string crash = TempDir();
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * Store::kCheckpointIntervalMs));
    std::filesystem::copy_file(dir + "/blklab.db", crash + "/blklab.db");
    std::filesystem::copy_file(dir + "/blklab.db-wal", crash + "/blklab.db-wal");
    auto recovered = Store::Open(crash);
    ASSERT_TRUE(recovered.ok()) << recovered.status();
    EXPECT_FALSE((*recovered)->opened_after_lost_wal());
    EXPECT_TRUE((*recovered)->GetJob("a", true).ok());
  }
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(dir + "/blklab.db-wal", ec)) << "a clean close removes the -wal";
  auto reopened = Store::Open(dir);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_FALSE((*reopened)->opened_after_lost_wal()) << "a clean close is not a crash";
  EXPECT_TRUE((*reopened)->GetJob("a", true).ok());
}

// Opening refuses, naming the file, what would otherwise start silently
// empty or half-read: an empty file, a damaged one, another program's
// database. A store written before the application id was set opens.
TEST(StoreTest, DamagedEmptyOrForeignFilesAreRefusedAtOpen) {
  auto write = [](const std::string& path, const std::string& bytes) {
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  };
  {
    const std::string dir = TempDir();
    write(dir + "/blklab.db", "");
    auto store = Store::Open(dir);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(store.status().message().find("blklab.db is empty"), std::string::npos) << store.status();
  }
  {
    // A good store, then garbage over a page in the middle of the file.
    const std::string dir = TempDir();
    {
      auto store = Store::Open(dir);
      ASSERT_TRUE(store.ok());
      const std::string blob(8 * 1024, 'x');
      for (int i = 0; i < 40; ++i) {
        v1::Job j = MakeJob("j" + std::to_string(i), v1::Job::QUEUED);
        ASSERT_TRUE((*store)->InsertJob(j).ok());
        j.set_state(v1::Job::SUCCEEDED);
        j.mutable_result()->set_fio_json(blob);
        ASSERT_TRUE((*store)->UpdateJob(j).ok());
      }
    }
    // Fold the WAL into the file first, as a clean shutdown leaves it.
    {
      auto store = Store::Open(dir);
      ASSERT_TRUE(store.ok());
    }
    const std::string path = dir + "/blklab.db";
    FILE* f = fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    ASSERT_GT(size, 16 * 4096);
    fseek(f, size / 2 / 4096 * 4096, SEEK_SET);
    const std::string junk(4096, '\x5a');
    fwrite(junk.data(), 1, junk.size(), f);
    fclose(f);
    std::filesystem::remove(path + "-wal");
    auto store = Store::Open(dir);
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("is damaged"), std::string::npos) << store.status();
  }
  {
    // Another program's SQLite database.
    const std::string dir = TempDir();
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "/blklab.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos(id INTEGER); INSERT INTO photos VALUES(1); PRAGMA user_version = 7;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    {
      auto store = Store::Open(dir);
      ASSERT_FALSE(store.ok());
      EXPECT_NE(store.status().message().find("is not a blklab store"), std::string::npos) << store.status();
    }
    // Refused means untouched: its own user_version is still there.
    ASSERT_EQ(sqlite3_open((dir + "/blklab.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version;", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 7);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  {
    // A store from before the mark (our tables, application_id 0) opens.
    const std::string dir = TempDir();
    {
      auto store = Store::Open(dir);
      ASSERT_TRUE(store.ok());
      ASSERT_TRUE((*store)->InsertJob(MakeJob("old", v1::Job::QUEUED)).ok());
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "/blklab.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA application_id = 0;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    auto store = Store::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->GetJob("old", false).ok());
  }
}

// A row that does not parse is quarantined: its job reads as FAILED with
// DATA_LOSS naming it, listings and start-up go on, and an unfinished one is
// not run again.
TEST(StoreTest, UnparsableRowsAreQuarantinedNotFatal) {
  const std::string dir = TempDir();
  {
    auto store = Store::Open(dir);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->InsertJob(MakeJob("good", v1::Job::QUEUED)).ok());
    ASSERT_TRUE((*store)->InsertJob(MakeJob("queued", v1::Job::QUEUED)).ok());
    v1::Job done = MakeJob("done", v1::Job::QUEUED);
    ASSERT_TRUE((*store)->InsertJob(done).ok());
    done.set_state(v1::Job::SUCCEEDED);
    done.mutable_result()->set_total_ios(3);
    ASSERT_TRUE((*store)->UpdateJob(done).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/blklab.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE jobs SET job = x'ffffffff0102' WHERE id = 'queued';"
                         "UPDATE jobs SET result = x'ffffffffffff' WHERE id = 'done';",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = Store::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto unfinished = (*store)->UnfinishedJobs();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  ASSERT_EQ(unfinished->size(), 1u);
  EXPECT_EQ((*unfinished)[0].name(), "jobs/good");
  auto queued = (*store)->GetJob("queued", true);
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(queued->state(), v1::Job::FAILED);
  EXPECT_EQ(queued->error().code(), static_cast<int>(absl::StatusCode::kDataLoss));
  EXPECT_NE(queued->error().message().find("jobs/queued"), std::string::npos) << queued->error().message();
  auto done = (*store)->GetJob("done", true);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::Job::FAILED);
  EXPECT_FALSE(done->has_result());
  EXPECT_NE(done->error().message().find("result"), std::string::npos) << done->error().message();
  auto basic = (*store)->GetJob("done", false);  // after the full read found the damage
  ASSERT_TRUE(basic.ok()) << basic.status();
  EXPECT_EQ(basic->state(), v1::Job::FAILED);
  auto page = (*store)->ListJobs(JobFilter{}, 0, 10, true);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->jobs.size(), 3u);
  // The quarantined unfinished job stays out of later restarts.
  auto again = (*store)->UnfinishedJobs();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 1u);
  JobFilter failed_only;
  failed_only.state = v1::Job::FAILED;
  auto failed = (*store)->ListJobs(failed_only, 0, 10, false);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->jobs.size(), 2u);
}

// A request id older than the caller's horizon is released: the lookup
// finds nothing, and a new job may take the id.
TEST(StoreTest, ExpiredRequestIdIsReleasedForANewJob) {
  auto store = Store::Open(TempDir());
  ASSERT_TRUE(store.ok());
  v1::Job old = MakeJob("old", v1::Job::SUCCEEDED, "r2");
  old.mutable_create_time()->set_seconds(1);
  ASSERT_TRUE((*store)->InsertJob(old).ok());
  auto fresh = (*store)->FindJobByRequestId("r2", 500);
  ASSERT_TRUE(fresh.ok() && fresh->has_value()) << "created at 1000 ms, horizon 500 ms: still answers";
  auto expired = (*store)->FindJobByRequestId("r2", 2000);
  ASSERT_TRUE(expired.ok());
  EXPECT_FALSE(expired->has_value());
  ASSERT_TRUE((*store)->InsertJob(MakeJob("new", v1::Job::QUEUED, "r2")).ok());
  auto found = (*store)->FindJobByRequestId("r2", 0);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->name(), "jobs/new");
  EXPECT_TRUE((*store)->GetJob("old", false).ok()) << "the old job itself is kept";
}

TEST(StoreTest, ListJobsPagesNewestFirstWithFilter) {
  auto store = Store::Open(TempDir());
  ASSERT_TRUE(store.ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*store)->InsertJob(MakeJob("j" + std::to_string(i), i % 2 ? v1::Job::QUEUED : v1::Job::FAILED)).ok());
  }
  auto page = (*store)->ListJobs({}, 0, 2, false);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->jobs.size(), 2u);
  EXPECT_EQ(page->jobs[0].name(), "jobs/j4");
  EXPECT_TRUE(page->more);
  auto page2 = (*store)->ListJobs({}, page->last_seq, 10, false);
  ASSERT_EQ(page2->jobs.size(), 3u);
  EXPECT_FALSE(page2->more);
  auto filter = ParseJobFilter("state = QUEUED AND preset = \"default\"");
  ASSERT_TRUE(filter.ok());
  auto queued = (*store)->ListJobs(*filter, 0, 10, false);
  EXPECT_EQ(queued->jobs.size(), 2u);
  EXPECT_FALSE(ParseJobFilter("color = red").ok());
  // Bounded complexity: a field twice, create_time thrice, or a long filter
  // is INVALID_ARGUMENT (each shape is a prepared statement kept for reuse).
  EXPECT_EQ(ParseJobFilter("state = QUEUED AND state = RUNNING").status().code(), absl::StatusCode::kInvalidArgument);
  const std::string t = "create_time > \"2026-01-01T00:00:00Z\"";
  EXPECT_TRUE(ParseJobFilter(t + " AND " + t).ok());
  EXPECT_EQ(ParseJobFilter(t + " AND " + t + " AND " + t).status().code(), absl::StatusCode::kInvalidArgument);
  std::string many = "state = QUEUED";
  for (int i = 0; i < 1100; ++i) many += " AND host = \"hosts/h" + std::to_string(i) + "\"";
  const absl::Status big = ParseJobFilter(many).status();
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(big.message().size(), 200u) << big;
}

// AIP-160's grammar for the subset taken: AND/OR are upper-case keywords,
// strings double-quoted, and anything the parser does not take is an error
// that says where, never a filter that silently matches nothing.
TEST(StoreTest, FilterGrammarIsAip160s) {
  auto ok = ParseJobFilter("host = \"hosts/a\" AND state = SUCCEEDED");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->host.value_or(""), "hosts/a");
  EXPECT_EQ(ok->state.value_or(v1::Job::STATE_UNSPECIFIED), v1::Job::SUCCEEDED);
  EXPECT_TRUE(ParseJobFilter("host=hosts/a AND create_time>=2026-01-01T00:00:00Z").ok());
  EXPECT_TRUE(ParseJobFilter("host = \"a \\\"b\\\"\"").ok());
  const std::pair<const char*, const char*> bad[] = {
      {"host = \"hosts/a\" and state = SUCCEEDED", "AND is a keyword in upper case"},
      {"host = \"hosts/a", "unterminated string starting at offset 7"},
      {"host = 'hosts/a'", "strings are double-quoted"},
      {"state = QUEUED OR state = RUNNING", "OR is not supported"},
      {"state = QUEUED junk", "expected AND or the end of the filter, got \"junk\" at offset 15"},
      {"state = QUEUED AND", "expected a field name (state, host, preset, create_time), got the end of the filter"},
      {"state QUEUED", "expected an operator"},
      {"state != QUEUED", "operator != at offset 6 is not supported"},
      {"NOT state = QUEUED", "expected a field name"},
      {"state = ", "expected a value, got the end of the filter"},
      {"state = QUEUED;", "unexpected character ';'"},
  };
  for (const auto& [filter, message] : bad) {
    const absl::Status st = ParseJobFilter(filter).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << filter;
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(message)) << filter;
  }
}

}  // namespace
}  // namespace blklab::server
