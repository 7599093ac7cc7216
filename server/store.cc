#include "server/store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "engine/util/status_macros.h"
#include "engine/workload/value_syntax.h"
#include "server/log.h"
#include "server/proto_time.h"
#include "server/resource_name.h"

namespace blklab::server {
namespace {

// PRAGMA application_id of a blklab store: "blkl".
constexpr int32_t kApplicationId = 0x626c6b6c;
constexpr const char* kSetApplicationId = "PRAGMA application_id = 1651272556;";
static_assert(kApplicationId == 1651272556);

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS hosts (
  id TEXT PRIMARY KEY,
  spec BLOB NOT NULL,
  create_ms INTEGER NOT NULL,
  update_ms INTEGER NOT NULL,
  etag TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  request_id TEXT UNIQUE,
  host TEXT NOT NULL,
  preset TEXT NOT NULL,
  state INTEGER NOT NULL,
  create_ms INTEGER NOT NULL,
  job BLOB NOT NULL,
  result_json TEXT,
  result_normal TEXT,
  result BLOB
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, seq);
)sql";

int64_t TimestampMs(const google::protobuf::Timestamp& t) { return absl::ToUnixMillis(TimeFromProto(t)); }

// Mkdir -p.
absl::Status MakeDirs(const std::string& path) {
  std::string cur;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    cur += std::string(part);
    if (!cur.empty() && ::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create data directory ", cur, ": ", std::strerror(errno)));
    }
    cur += "/";
  }
  return absl::OkStatus();
}

std::string Column(sqlite3_stmt* st, int i) {
  const void* p = sqlite3_column_blob(st, i);
  const int n = sqlite3_column_bytes(st, i);
  return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
}

void BindText(sqlite3_stmt* st, int i, const std::string& s) {
  sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}
void BindBlob(sqlite3_stmt* st, int i, const std::string& s) {
  sqlite3_bind_blob(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

// AIP-160's lexical level, for the subset ListJobs takes: words (field
// names, bare values, the keywords AND, OR, NOT), double-quoted strings with
// backslash escapes, and the comparison operators.
struct FilterToken {
  enum Kind { kWord, kString, kOp, kEnd } kind;
  std::string text;
  size_t pos = 0;
  size_t length = 0;
};

bool IsFilterKeyword(const std::string& w) { return w == "AND" || w == "OR" || w == "NOT"; }

absl::Status FilterError(const std::string& text, const FilterToken& at, absl::string_view what) {
  const std::string got = at.kind == FilterToken::kEnd
                              ? "the end of the filter"
                              : absl::StrCat("\"", workload::QuoteForError(absl::string_view(text).substr(at.pos, at.length)),
                                             "\"");
  return absl::InvalidArgumentError(absl::StrCat("filter: ", what, ", got ", got, " at offset ", at.pos));
}

absl::StatusOr<std::vector<FilterToken>> TokenizeFilter(const std::string& text) {
  std::vector<FilterToken> out;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size()) ++j;
        v.push_back(text[j]);
      }
      if (j >= text.size()) {
        return absl::InvalidArgumentError(absl::StrCat("filter: unterminated string starting at offset ", i));
      }
      out.push_back({FilterToken::kString, v, i, j + 1 - i});
      i = j + 1;
    } else if (c == '\'') {
      return absl::InvalidArgumentError(
          absl::StrCat("filter: strings are double-quoted (AIP-160), got ' at offset ", i));
    } else if (c == '=' || c == '<' || c == '>' || c == '!' || c == ':') {
      size_t n = (i + 1 < text.size() && text[i + 1] == '=') ? 2 : 1;
      const std::string op = text.substr(i, n);
      if (op == "!" || op == "!=" || op == ":") {
        return absl::InvalidArgumentError(
            absl::StrCat("filter: operator ", op, " at offset ", i, " is not supported (=, <, <=, >, >=)"));
      }
      out.push_back({FilterToken::kOp, op, i, n});
      i += n;
    } else if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/') {
      size_t j = i;
      while (j < text.size() && (absl::ascii_isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_' ||
                                 text[j] == '-' || text[j] == '.' || text[j] == '/' || text[j] == ':')) {
        ++j;
      }
      out.push_back({FilterToken::kWord, text.substr(i, j - i), i, j - i});
      i = j;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("filter: unexpected character '",
                                                     workload::QuoteForError(text.substr(i, 1)), "' at offset ", i));
    }
  }
  out.push_back({FilterToken::kEnd, "", text.size(), 0});
  return out;
}

}  // namespace

absl::StatusOr<JobFilter> ParseJobFilter(const std::string& text) {
  // Bounded complexity: each field at most once (create_time twice, a
  // range), so the statement shapes (one prepared statement each) are few.
  constexpr size_t kMaxFilterBytes = 1024;
  constexpr int kMaxCreateTimeTerms = 2;
  JobFilter f;
  if (absl::StripAsciiWhitespace(text).empty()) return f;
  if (text.size() > kMaxFilterBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("filter: ", text.size(), " bytes, the limit is ", kMaxFilterBytes));
  }
  BLKLAB_ASSIGN_OR_RETURN(std::vector<FilterToken> tokens, TokenizeFilter(text));
  // AIP-160's conjunction of comparisons: FIELD OP VALUE (AND FIELD OP VALUE)*.
  size_t i = 0;
  auto at = [&](size_t k) -> const FilterToken& { return tokens[std::min(k, tokens.size() - 1)]; };
  while (true) {
    const FilterToken& name = at(i);
    const FilterToken& oper = at(i + 1);
    const FilterToken& val = at(i + 2);
    if (name.kind != FilterToken::kWord || IsFilterKeyword(name.text)) {
      return FilterError(text, name, "expected a field name (state, host, preset, create_time)");
    }
    if (oper.kind != FilterToken::kOp) return FilterError(text, oper, "expected an operator (=, <, <=, >, >=)");
    if (val.kind != FilterToken::kWord && val.kind != FilterToken::kString) {
      return FilterError(text, val, "expected a value");
    }
    const std::string& field = name.text;
    const std::string& op = oper.text;
    const std::string& value = val.text;
    const std::string quoted = workload::QuoteForError(
        absl::string_view(text).substr(name.pos, val.pos + val.length - name.pos));
    const bool repeated = (field == "state" && f.state) || (field == "host" && f.host) ||
                          (field == "preset" && f.preset) ||
                          (field == "create_time" && static_cast<int>(f.create_ms.size()) >= kMaxCreateTimeTerms);
    if (repeated) {
      return absl::InvalidArgumentError(absl::StrCat("filter: ", field, " given too often (each field once, ",
                                                     "create_time twice): \"", quoted, "\""));
    }
    if (field == "state" && op == "=") {
      v1::Job::State s;
      if (!v1::Job::State_Parse(value, &s) || s == v1::Job::STATE_UNSPECIFIED) {
        return absl::InvalidArgumentError(absl::StrCat("filter: unknown state \"", workload::QuoteForError(value), "\""));
      }
      f.state = s;
    } else if (field == "host" && op == "=") {
      f.host = value;
    } else if (field == "preset" && op == "=") {
      f.preset = value;
    } else if (field == "create_time" && op != "=") {
      absl::Time t;
      std::string err;
      if (!absl::ParseTime(absl::RFC3339_full, value, &t, &err)) {
        return absl::InvalidArgumentError(
            absl::StrCat("filter: create_time: not RFC 3339: \"", workload::QuoteForError(value), "\""));
      }
      f.create_ms.emplace_back(op, absl::ToUnixMillis(t));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "filter: unsupported term \"", quoted,
          "\" (use state = S, host = \"hosts/x\", preset = \"p\", create_time OP \"RFC3339\")"));
    }
    i += 3;
    const FilterToken& next = at(i);
    if (next.kind == FilterToken::kEnd) break;
    if (next.kind == FilterToken::kWord && next.text == "AND") {
      ++i;
      continue;
    }
    if (next.kind == FilterToken::kWord && next.text == "OR") {
      return FilterError(text, next, "OR is not supported: terms are joined by AND only");
    }
    if (next.kind == FilterToken::kWord && absl::AsciiStrToUpper(next.text) == "AND") {
      return FilterError(text, next, "AND is a keyword in upper case (AIP-160)");
    }
    return FilterError(text, next, "expected AND or the end of the filter");
  }
  return f;
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& data_dir) {
  if (absl::Status s = MakeDirs(data_dir); !s.ok()) return s;
  const std::string path = data_dir + "/blklab.db";
  // An existing but empty file is a store that lost its contents (SQLite would
  // take it for a new database and start empty without a word).
  {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) == 0 && !ec) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " is empty (0 bytes): a truncated store? Move it aside to start with an empty store."));
    }
  }
  // Before SQLite opens the file (opening may create a -wal).
  const bool had_wal = [&] {
    std::error_code ec;
    return std::filesystem::exists(path + "-wal", ec);
  }();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::FailedPreconditionError(absl::StrCat("cannot open ", path, ": ", msg));
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<Store> store(new Store(db, path));
  absl::MutexLock lock(&store->mu_);
  // Integrity first: a damaged file is refused, never half-read.
  {
    absl::StatusOr<std::string> check = store->QueryText("PRAGMA quick_check;");
    if (!check.ok() || *check != "ok") {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " is damaged (quick_check: ",
          check.ok() ? check->substr(0, 200) : std::string(check.status().message()).substr(0, 200),
          "). Move it aside (with its -wal file) to start with an empty store, or restore a copy."));
    }
  }
  // application_id marks the file as blklab's: a database with other tables
  // and no mark is someone else's.
  absl::StatusOr<std::string> app_id = store->QueryText("PRAGMA application_id;");
  absl::StatusOr<std::string> tables = store->QueryText(
      "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
      "'sqlite_%' AND name NOT IN ('hosts', 'jobs') ORDER BY name);");
  if (!app_id.ok()) return app_id.status();
  if (!tables.ok()) return tables.status();
  if (*app_id != absl::StrCat(kApplicationId) && !(*app_id == "0" && tables->empty())) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is not a blklab store (application_id ", *app_id,
        tables->empty() ? "" : absl::StrCat(", tables ", tables->substr(0, 100)), ")."));
  }
  // journal_size_limit: after a checkpoint restarts the WAL, its file is cut
  // back to 16 MiB.
  for (const char* sql : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;",
                          "PRAGMA journal_size_limit=16777216;", kSchema, kSetApplicationId}) {
    if (absl::Status s = store->Exec(sql); !s.ok()) return s;
  }
  // The open mark: still set from the previous server means it never
  // closed the file; without its -wal its last writes may be gone. The
  // mark goes into the database file now, so a -wal lost later is noticed
  // too.
  absl::StatusOr<std::string> mark = store->QueryText("PRAGMA user_version;");
  if (!mark.ok()) return mark.status();
  store->opened_after_lost_wal_ = *mark == absl::StrCat(kOpenMark) && !had_wal;
  if (absl::Status s = store->Exec(absl::StrCat("PRAGMA user_version=", kOpenMark, ";").c_str()); !s.ok()) return s;
  store->mark_set_ = true;
  sqlite3_wal_checkpoint_v2(store->db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  Store* raw = store.get();
  store->checkpointer_ = std::thread([raw] { raw->CheckpointLoop(); });
  return store;
}

absl::StatusOr<std::string> Store::QueryText(const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) return Error("query");
  std::string out;
  const int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    if (t != nullptr) out = reinterpret_cast<const char*>(t);
  }
  const bool ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
  sqlite3_finalize(st);
  if (!ok) return Error("query");
  return out;
}

Store::~Store() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (checkpointer_.joinable()) checkpointer_.join();
  absl::MutexLock lock(&mu_);
  for (auto& [sql, st] : statements_) sqlite3_finalize(st);
  // A clean close: the mark cleared, then SQLite's last-connection
  // checkpoint copies it into the file and removes the -wal. Only a store
  // that set the mark clears it: an Open that failed (a damaged or foreign
  // file) writes nothing.
  if (mark_set_) (void)Exec("PRAGMA user_version=0;");
  sqlite3_close(db_);
}

absl::Status Store::Error(const std::string& what) {
  const int code = sqlite3_extended_errcode(db_);
  const std::string msg = absl::StrCat(what, ": ", sqlite3_errmsg(db_));
  if ((code & 0xff) == SQLITE_CONSTRAINT) return absl::AlreadyExistsError(msg);
  return absl::InternalError(absl::StrCat("store: ", msg));
}

absl::Status Store::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    return absl::InternalError(absl::StrCat("store: ", msg));
  }
  return absl::OkStatus();
}

void Store::CheckpointLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    // Idle until a write marks the store dirty; then the writes of the next
    // interval share one checkpoint.
    mu_.Await(absl::Condition(this, &Store::DirtyOrStopping));
    if (stopping_) break;
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(kCheckpointIntervalMs));
    dirty_ = false;
    ResetStatements();
    // A failed checkpoint loses nothing (the writes are committed in the
    // WAL); the next write retries it.
    int wal_frames = 0;
    int checkpointed_frames = 0;
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &checkpointed_frames);
  }
}

void Store::ResetStatements() {
  for (auto& [sql, st] : statements_) {
    if (sqlite3_stmt_busy(st)) sqlite3_reset(st);
  }
}

absl::StatusOr<sqlite3_stmt*> Store::Prepare(const char* sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) {
    sqlite3_reset(it->second);
    sqlite3_clear_bindings(it->second);
    return it->second;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr) != SQLITE_OK) {
    return Error("prepare");
  }
  statements_.emplace(sql, st);
  return st;
}

absl::Status Store::CreateHost(const v1::Host& host) {
  BLKLAB_ASSIGN_OR_RETURN(const std::string id, ParseResourceName(host.name(), "hosts"));
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st =
      Prepare("INSERT INTO hosts(id, spec, create_ms, update_ms, etag) VALUES(?, ?, ?, ?, ?)");
  if (!st.ok()) return st.status();
  BindText(*st, 1, id);
  BindBlob(*st, 2, host.spec().SerializeAsString());
  sqlite3_bind_int64(*st, 3, TimestampMs(host.create_time()));
  sqlite3_bind_int64(*st, 4, TimestampMs(host.update_time()));
  BindText(*st, 5, host.etag());
  if (sqlite3_step(*st) != SQLITE_DONE) {
    absl::Status s = Error("insert host");
    if (absl::IsAlreadyExists(s)) return absl::AlreadyExistsError(host.name() + " already exists");
    return s;
  }
  MarkDirty();
  return absl::OkStatus();
}

namespace {
v1::Host ReadHost(sqlite3_stmt* st) {
  v1::Host h;
  h.set_name(absl::StrCat("hosts/", Column(st, 0)));
  h.mutable_spec()->ParseFromString(Column(st, 1));
  SetTimestamp(absl::FromUnixMillis(sqlite3_column_int64(st, 2)), h.mutable_create_time());
  SetTimestamp(absl::FromUnixMillis(sqlite3_column_int64(st, 3)), h.mutable_update_time());
  h.set_etag(Column(st, 4));
  return h;
}
}  // namespace

absl::StatusOr<v1::Host> Store::GetHost(const std::string& id) {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st =
      Prepare("SELECT id, spec, create_ms, update_ms, etag FROM hosts WHERE id = ?");
  if (!st.ok()) return st.status();
  BindText(*st, 1, id);
  const int rc = sqlite3_step(*st);
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("hosts/", id, " not found"));
  if (rc != SQLITE_ROW) return Error("get host");
  return ReadHost(*st);
}

absl::Status Store::UpdateHost(const v1::Host& host) {
  BLKLAB_ASSIGN_OR_RETURN(const std::string id, ParseResourceName(host.name(), "hosts"));
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st = Prepare("UPDATE hosts SET spec = ?, update_ms = ?, etag = ? WHERE id = ?");
  if (!st.ok()) return st.status();
  BindBlob(*st, 1, host.spec().SerializeAsString());
  sqlite3_bind_int64(*st, 2, TimestampMs(host.update_time()));
  BindText(*st, 3, host.etag());
  BindText(*st, 4, id);
  if (sqlite3_step(*st) != SQLITE_DONE) return Error("update host");
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(host.name() + " not found");
  MarkDirty();
  return absl::OkStatus();
}

absl::Status Store::DeleteHost(const std::string& id) {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st = Prepare("DELETE FROM hosts WHERE id = ?");
  if (!st.ok()) return st.status();
  BindText(*st, 1, id);
  if (sqlite3_step(*st) != SQLITE_DONE) return Error("delete host");
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("hosts/", id, " not found"));
  MarkDirty();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Host>> Store::ListHosts(const std::string& after_id, int limit) {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st = Prepare(
      "SELECT id, spec, create_ms, update_ms, etag FROM hosts WHERE id > ? ORDER BY id LIMIT ?");
  if (!st.ok()) return st.status();
  BindText(*st, 1, after_id);
  sqlite3_bind_int(*st, 2, limit);
  std::vector<v1::Host> out;
  int rc;
  while ((rc = sqlite3_step(*st)) == SQLITE_ROW) out.push_back(ReadHost(*st));
  if (rc != SQLITE_DONE) return Error("list hosts");
  return out;
}

absl::Status Store::InsertJob(const v1::Job& job) {
  BLKLAB_ASSIGN_OR_RETURN(const std::string id, ParseResourceName(job.name(), "jobs"));
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st = Prepare(
      "INSERT INTO jobs(id, request_id, host, preset, state, create_ms, job) VALUES(?, ?, ?, ?, ?, ?, ?)");
  if (!st.ok()) return st.status();
  v1::Job copy = job;
  copy.clear_result();
  BindText(*st, 1, id);
  if (job.request_id().empty()) {
    sqlite3_bind_null(*st, 2);
  } else {
    BindText(*st, 2, job.request_id());
  }
  BindText(*st, 3, job.host());
  BindText(*st, 4, job.preset());
  sqlite3_bind_int(*st, 5, job.state());
  sqlite3_bind_int64(*st, 6, TimestampMs(job.create_time()));
  BindBlob(*st, 7, copy.SerializeAsString());
  if (sqlite3_step(*st) != SQLITE_DONE) return Error("insert " + job.name());
  MarkDirty();
  return absl::OkStatus();
}

absl::Status Store::UpdateJob(const v1::Job& job) {
  BLKLAB_ASSIGN_OR_RETURN(const std::string id, ParseResourceName(job.name(), "jobs"));
  CallLock lock(this);
  v1::Job copy = job;
  copy.clear_result();
  absl::StatusOr<sqlite3_stmt*> st;
  if (job.has_result()) {
    // State and result in one statement: never SUCCEEDED without a result.
    st = Prepare(
        "UPDATE jobs SET state = ?, job = ?, result_json = ?, result_normal = ?, result = ? WHERE id = ?");
    if (!st.ok()) return st.status();
    v1::JobResult typed = job.result();
    typed.clear_fio_json();
    typed.clear_fio_normal();
    sqlite3_bind_int(*st, 1, job.state());
    BindBlob(*st, 2, copy.SerializeAsString());
    BindText(*st, 3, job.result().fio_json());
    BindText(*st, 4, job.result().fio_normal());
    BindBlob(*st, 5, typed.SerializeAsString());
    BindText(*st, 6, id);
  } else {
    st = Prepare("UPDATE jobs SET state = ?, job = ? WHERE id = ?");
    if (!st.ok()) return st.status();
    sqlite3_bind_int(*st, 1, job.state());
    BindBlob(*st, 2, copy.SerializeAsString());
    BindText(*st, 3, id);
  }
  if (sqlite3_step(*st) != SQLITE_DONE) return Error("update " + job.name());
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(job.name() + " not found");
  // Queued and running states are not checkpointed: a job found in either
  // after a restart runs again.
  if (job.state() != v1::Job::QUEUED && job.state() != v1::Job::RUNNING) MarkDirty();
  return absl::OkStatus();
}

// Columns: seq, job, result_json, result_normal, result, id, state,
// create_ms. A row whose blobs do not parse (or name another job) is
// quarantined, not an error: the job reads as FAILED with DATA_LOSS naming
// what is damaged, from the plain columns, and the row stays as it is for
// inspection. One bad row never blocks start-up or a listing.
absl::StatusOr<v1::Job> Store::ReadJob(sqlite3_stmt* st, bool full) {
  const std::string id = Column(st, 5);
  auto quarantined = [&](v1::Job job, const std::string& what) {
    if (sqlite3_column_int(st, 6) != v1::Job::FAILED) quarantine_.push_back(id);
    job.set_name(absl::StrCat("jobs/", id));
    job.set_state(v1::Job::FAILED);
    if (!job.has_create_time()) SetTimestamp(absl::FromUnixMillis(sqlite3_column_int64(st, 7)), job.mutable_create_time());
    job.clear_result();
    job.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kDataLoss));
    job.mutable_error()->set_message(absl::StrCat(
        "store: the stored ", what, " of jobs/", id,
        " does not parse; the row is quarantined (kept as is, the job reads as FAILED)"));
    return job;
  };
  v1::Job job;
  if (!job.ParseFromString(Column(st, 1)) || job.name() != absl::StrCat("jobs/", id)) {
    return quarantined(v1::Job(), absl::StrCat("definition (", sqlite3_column_bytes(st, 1), " bytes)"));
  }
  if (sqlite3_column_int(st, 6) == v1::Job::FAILED && job.state() != v1::Job::FAILED) {
    // Quarantined before, for its result (the definition still parses).
    return quarantined(std::move(job), "result");
  }
  if (!full) {
    job.clear_resolved_host();
    // A comparison's cells all hold its bundle: a listing names the cell only.
    if (job.has_comparison_cell()) job.mutable_comparison_cell()->clear_bundle();
    return job;
  }
  if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
    v1::JobResult* r = job.mutable_result();
    if (!r->ParseFromString(Column(st, 4))) {
      return quarantined(std::move(job), absl::StrCat("result (", sqlite3_column_bytes(st, 4), " bytes)"));
    }
    r->set_fio_json(Column(st, 2));
    r->set_fio_normal(Column(st, 3));
  }
  return job;
}

absl::Status Store::FlushQuarantine() {
  // The rows ReadJob quarantined read as FAILED; their state column says so
  // from now on, so that state filters and restarts agree with the reads.
  std::vector<std::string> ids;
  ids.swap(quarantine_);
  for (const std::string& id : ids) {
    Log("warn", "job_quarantined", {{"job", absl::StrCat("jobs/", id)}, {"error", "a stored blob does not parse"}});
    absl::StatusOr<sqlite3_stmt*> up = Prepare("UPDATE jobs SET state = ? WHERE id = ?");
    if (!up.ok()) return up.status();
    sqlite3_bind_int(*up, 1, v1::Job::FAILED);
    BindText(*up, 2, id);
    if (sqlite3_step(*up) != SQLITE_DONE) return Error("quarantine jobs/" + id);
    sqlite3_reset(*up);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> Store::GetJob(const std::string& id, bool full) {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st =
      Prepare("SELECT seq, job, result_json, result_normal, result, id, state, create_ms FROM jobs WHERE id = ?");
  if (!st.ok()) return st.status();
  BindText(*st, 1, id);
  const int rc = sqlite3_step(*st);
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("jobs/", id, " not found"));
  if (rc != SQLITE_ROW) return Error("get job");
  absl::StatusOr<v1::Job> job = ReadJob(*st, full);
  sqlite3_reset(*st);
  BLKLAB_RETURN_IF_ERROR(FlushQuarantine());
  return job;
}

absl::StatusOr<std::optional<v1::Job>> Store::FindJobByRequestId(const std::string& request_id,
                                                                 int64_t not_before_ms) {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> release = Prepare("UPDATE jobs SET request_id = NULL WHERE request_id = ? AND create_ms < ?");
  if (!release.ok()) return release.status();
  BindText(*release, 1, request_id);
  sqlite3_bind_int64(*release, 2, not_before_ms);
  if (sqlite3_step(*release) != SQLITE_DONE) return Error("release request id");
  absl::StatusOr<sqlite3_stmt*> st =
      Prepare("SELECT seq, job, result_json, result_normal, result, id, state, create_ms FROM jobs WHERE request_id = ?");
  if (!st.ok()) return st.status();
  BindText(*st, 1, request_id);
  const int rc = sqlite3_step(*st);
  if (rc == SQLITE_DONE) return std::optional<v1::Job>();
  if (rc != SQLITE_ROW) return Error("find job");
  absl::StatusOr<v1::Job> job = ReadJob(*st, /*full=*/true);
  if (!job.ok()) return job.status();
  sqlite3_reset(*st);
  BLKLAB_RETURN_IF_ERROR(FlushQuarantine());
  return std::optional<v1::Job>(*std::move(job));
}

absl::Status Store::DeleteJob(const std::string& id) {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st = Prepare("DELETE FROM jobs WHERE id = ?");
  if (!st.ok()) return st.status();
  BindText(*st, 1, id);
  if (sqlite3_step(*st) != SQLITE_DONE) return Error("delete job");
  if (sqlite3_changes(db_) == 0) return absl::NotFoundError(absl::StrCat("jobs/", id, " not found"));
  MarkDirty();
  return absl::OkStatus();
}

absl::StatusOr<Store::JobPage> Store::ListJobs(const JobFilter& filter, int64_t before_seq, int limit,
                                               bool full) {
  CallLock lock(this);
  // One statement shape per filter shape; each is prepared once.
  std::string sql = "SELECT seq, job, result_json, result_normal, result, id, state, create_ms FROM jobs WHERE seq < ?";
  if (filter.state) sql += " AND state = ?";
  if (filter.host) sql += " AND host = ?";
  if (filter.preset) sql += " AND preset = ?";
  for (const auto& [op, ms] : filter.create_ms) sql += " AND create_ms " + op + " ?";
  sql += " ORDER BY seq DESC LIMIT ?";
  // The cache is keyed by the SQL text; keep the string alive in the map key.
  absl::StatusOr<sqlite3_stmt*> st = Prepare(sql.c_str());
  if (!st.ok()) return st.status();
  int i = 1;
  sqlite3_bind_int64(*st, i++, before_seq > 0 ? before_seq : INT64_MAX);
  if (filter.state) sqlite3_bind_int(*st, i++, *filter.state);
  if (filter.host) BindText(*st, i++, *filter.host);
  if (filter.preset) BindText(*st, i++, *filter.preset);
  for (const auto& [op, ms] : filter.create_ms) sqlite3_bind_int64(*st, i++, ms);
  sqlite3_bind_int(*st, i++, limit + 1);
  JobPage page;
  int rc;
  while ((rc = sqlite3_step(*st)) == SQLITE_ROW) {
    if (static_cast<int>(page.jobs.size()) == limit) {
      page.more = true;
      break;
    }
    absl::StatusOr<v1::Job> job = ReadJob(*st, full);
    if (!job.ok()) return job.status();
    page.jobs.push_back(*std::move(job));
    page.last_seq = sqlite3_column_int64(*st, 0);
    page.seqs.push_back(page.last_seq);
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("list jobs");
  sqlite3_reset(*st);
  BLKLAB_RETURN_IF_ERROR(FlushQuarantine());
  return page;
}

absl::StatusOr<std::vector<v1::Job>> Store::UnfinishedJobs() {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st = Prepare(
      "SELECT seq, job, result_json, result_normal, result, id, state, create_ms FROM jobs WHERE state IN (?, ?) ORDER BY seq");
  if (!st.ok()) return st.status();
  sqlite3_bind_int(*st, 1, v1::Job::QUEUED);
  sqlite3_bind_int(*st, 2, v1::Job::RUNNING);
  std::vector<v1::Job> out;
  int rc;
  while ((rc = sqlite3_step(*st)) == SQLITE_ROW) {
    absl::StatusOr<v1::Job> job = ReadJob(*st, /*full=*/true);
    if (!job.ok()) return job.status();
    if (job->state() == v1::Job::FAILED) continue;  // quarantined: it cannot run again
    out.push_back(*std::move(job));
  }
  if (rc != SQLITE_DONE) return Error("unfinished jobs");
  sqlite3_reset(*st);
  BLKLAB_RETURN_IF_ERROR(FlushQuarantine());
  return out;
}

absl::StatusOr<std::map<v1::Job::State, int64_t>> Store::CountJobsByState() {
  CallLock lock(this);
  absl::StatusOr<sqlite3_stmt*> st = Prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state");
  if (!st.ok()) return st.status();
  std::map<v1::Job::State, int64_t> out;
  int rc;
  while ((rc = sqlite3_step(*st)) == SQLITE_ROW) {
    const int state = sqlite3_column_int(*st, 0);
    if (v1::Job::State_IsValid(state)) out[static_cast<v1::Job::State>(state)] = sqlite3_column_int64(*st, 1);
  }
  if (rc != SQLITE_DONE) return Error("count jobs");
  return out;
}

int64_t Store::SizeBytes() const {
  int64_t total = 0;
  for (const std::string& p : {path_, path_ + "-wal"}) {
    std::error_code ec;
    const uintmax_t n = std::filesystem::file_size(p, ec);
    if (!ec) total += static_cast<int64_t>(n);
  }
  return total;
}

}  // namespace blklab::server
