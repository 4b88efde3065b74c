// PostgresResultStore against a real PostgreSQL (test_util/postgres_server.h),
// one fresh database per test: schema migration and refusal of a newer one,
// records and listing as in SQLite, and the fleet operations (claims with
// SKIP LOCKED from many connections, leases, attempts, cancel, servers).
#include "store/postgres_result_store.h"

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/record_json.h"
#include "store/sqlite_result_store.h"
#include "test_util/postgres_fixture.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::store {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using types::JobRecord;
using types::JobState;
using types::ListQuery;

class PostgresStoreTest : public ::dflash::testing::PostgresTest {
 protected:
  std::unique_ptr<PostgresResultStore> Open() {
    auto store = PostgresResultStore::Open(url_, "");
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }
};

JobRecord Queued(const std::string& id, const std::string& dataset = "d") {
  JobRecord r;
  r.id = id;
  r.state = JobState::kQueued;
  r.create_unix_micros = 1000 + std::stoll(id.substr(id.rfind('-') + 1));
  r.request.params.checkpoint_path = "/ckpt/" + id;
  r.request.params.dataset = dataset;
  r.request.run = "run-a";
  r.request.step = r.create_unix_micros;
  r.request.labels = {{"team", "x y"}};
  return r;
}

ClaimRequest Server(const std::string& name, int64_t lease_micros = 60'000'000) {
  ClaimRequest c;
  c.server = name;
  c.targets = {"t"};
  c.datasets = {"d"};
  c.lease_micros = lease_micros;
  return c;
}

TEST_F(PostgresStoreTest, MigratesAnEmptyDatabaseAndReopens) {
  ASSERT_NE(Open(), nullptr);
  EXPECT_EQ(*pg_->Sql(db_, "SELECT version FROM schema_version"), "2");
  EXPECT_EQ(*pg_->Sql(db_, "SELECT count(*) FROM jobs"), "0");
  ASSERT_NE(Open(), nullptr);  // already at version 2: nothing to do
  EXPECT_EQ(*pg_->Sql(db_, "SELECT count(*) FROM schema_version"), "1");
}

TEST_F(PostgresStoreTest, MigratesAVersion1DatabaseKeepingItsJobs) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_THAT(store->Create(Queued("ev-1")), IsOk());
  }
  // Version 1 as a server of that version left it.
  ASSERT_THAT(pg_->Sql(db_,
                       "ALTER TABLE jobs DROP COLUMN dataset_path, DROP COLUMN target_path; "
                       "UPDATE schema_version SET version = 1")
                  .status(),
              IsOk());
  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*pg_->Sql(db_, "SELECT version FROM schema_version"), "2");
  EXPECT_EQ(*pg_->Sql(db_, "SELECT id || ' [' || dataset_path || ']' FROM jobs"), "ev-1 []");
  EXPECT_EQ((*store->Claim(Server("a:1")))->id, "ev-1");
}

// The web view's listing: per-sample summaries emptied before parsing, the rest of
// the record as stored, a queued record (no result) unchanged.
TEST_F(PostgresStoreTest, ListingWithoutPerSampleEmptiesOnlyThem) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  JobRecord done = Queued("ev-1");
  done.state = JobState::kSucceeded;
  types::EvalResult res;
  res.positions.push_back({1, 100, 50});
  res.per_sample = {{0, 10, 2.5, 300, 40, 25}, {1, 8, 1.5, 200, 30, 20}};
  res.accepted_histogram.assign(16, 7);
  res.suite_results = {{"d", res}};
  done.result = res;
  const JobRecord queued = Queued("ev-2");
  ASSERT_THAT(store->Put(done), IsOk());
  ASSERT_THAT(store->Create(queued), IsOk());
  ListQuery q;
  q.without_per_sample = true;
  auto lean = store->List(q);
  ASSERT_TRUE(lean.ok()) << lean.status();
  ASSERT_EQ(lean->jobs.size(), 2u);
  const JobRecord& got = lean->jobs[0].id == "ev-1" ? lean->jobs[0] : lean->jobs[1];
  const JobRecord& got_queued = lean->jobs[0].id == "ev-1" ? lean->jobs[1] : lean->jobs[0];
  JobRecord want = done;
  want.result->per_sample.clear();
  want.result->suite_results[0].result.per_sample.clear();
  EXPECT_EQ(RecordToJson(got), RecordToJson(want));
  EXPECT_EQ(RecordToJson(got_queued), RecordToJson(queued));
  q.without_per_sample = false;
  auto full = store->List(q);
  ASSERT_TRUE(full.ok()) << full.status();
  const JobRecord& whole = full->jobs[0].id == "ev-1" ? full->jobs[0] : full->jobs[1];
  EXPECT_EQ(RecordToJson(whole), RecordToJson(done));
}

TEST_F(PostgresStoreTest, RefusesANewerSchema) {
  ASSERT_NE(Open(), nullptr);
  ASSERT_THAT(pg_->Sql(db_, "UPDATE schema_version SET version = 3").status(), IsOk());
  EXPECT_THAT(PostgresResultStore::Open(url_, ""),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the database's schema is version 3, newer than this "
                                 "server's (2): a newer dflash-evald has migrated it")));
}

TEST_F(PostgresStoreTest, RefusesAPasswordInTheUrl) {
  EXPECT_THAT(PostgresResultStore::Open(
                  absl::StrCat("postgresql://postgres:secret@127.0.0.1:", pg_->port(), "/x"), ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the PostgreSQL URL carries a password")));
}

TEST_F(PostgresStoreTest, UnreachableDatabaseIsUnavailable) {
  EXPECT_THAT(PostgresResultStore::Open("postgresql://postgres@127.0.0.1:1/x", ""),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("cannot connect to PostgreSQL at 127.0.0.1:1/x")));
}

TEST_F(PostgresStoreTest, RecordsRoundTripAndList) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_THAT(store->Create(Queued(absl::StrCat("ev-", i))), IsOk());
  }
  EXPECT_THAT(store->Create(Queued("ev-3")),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("duplicate key")));
  JobRecord done = Queued("ev-2");
  done.state = JobState::kSucceeded;
  done.attempts = {{"a:1", 5, 6, "lease expired"}, {"b:2", 7, 9, "SUCCEEDED"}};
  done.server = "b:2";
  ASSERT_THAT(store->Put(done), IsOk());
  auto got = store->Get("ev-2");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(RecordToJson(*got), RecordToJson(done));
  EXPECT_THAT(store->Get("ev-9"), StatusIs(absl::StatusCode::kNotFound, "no job with id 'ev-9'"));
  EXPECT_EQ(*store->MaxId(), "ev-5");

  types::ListQuery q;
  q.page_size = 2;
  std::vector<std::string> ids;
  for (;;) {
    auto page = store->List(q);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const JobRecord& r : page->jobs) ids.push_back(r.id);
    if (page->next_page_token.empty()) break;
    q.page_token = page->next_page_token;
  }
  EXPECT_THAT(ids, ElementsAre("ev-5", "ev-4", "ev-3", "ev-2", "ev-1"));
  types::ListQuery f;
  f.state = JobState::kSucceeded;
  f.labels = {{"team", "x y"}};
  f.drafter = "/ckpt/ev-2";
  EXPECT_EQ(store->List(f)->jobs.size(), 1u);
  f.labels = {{"team", "other"}};
  EXPECT_EQ(store->List(f)->jobs.size(), 0u);
  types::ListQuery bad;
  bad.page_token = "nonsense";
  EXPECT_THAT(store->List(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "page_token 'nonsense' is not a token this server issued"));
}

TEST_F(PostgresStoreTest, ClaimsOnlyWhatTheServerHoldsOldestFirst) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Create(Queued("ev-1", "other")), IsOk());
  ASSERT_THAT(store->Create(Queued("ev-2")), IsOk());
  ASSERT_THAT(store->Create(Queued("ev-3")), IsOk());
  auto first = store->Claim(Server("a:1"));
  ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
  EXPECT_EQ((*first)->id, "ev-2");  // ev-1 needs dataset 'other'
  EXPECT_EQ((*first)->state, JobState::kRunning);
  EXPECT_EQ((*first)->server, "a:1");
  ASSERT_EQ((*first)->attempts.size(), 1u);
  EXPECT_EQ((*first)->attempts[0].server, "a:1");
  EXPECT_EQ((*store->Claim(Server("b:1")))->id, "ev-3");
  EXPECT_FALSE(store->Claim(Server("b:1"))->has_value());
  ClaimRequest other = Server("c:1");
  other.datasets = {"other"};
  EXPECT_EQ((*store->Claim(other))->id, "ev-1");
}

// A fleet job's server runs its own shard jobs (fleet/fleet_shards.h): a
// claim with an id prefix takes only those, oldest first.
TEST_F(PostgresStoreTest, AClaimWithAnIdPrefixTakesOnlyThoseJobs) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Create(Queued("ev-1")), IsOk());
  ASSERT_THAT(store->Create(Queued("ev-2.s0")), IsOk());
  ASSERT_THAT(store->Create(Queued("ev-2.s1")), IsOk());
  ASSERT_THAT(store->Create(Queued("ev-3.s0")), IsOk());
  ClaimRequest own = Server("a:1");
  own.id_prefix = "ev-2.s";
  EXPECT_EQ((*store->Claim(own))->id, "ev-2.s0");
  EXPECT_EQ((*store->Claim(own))->id, "ev-2.s1");
  EXPECT_FALSE(store->Claim(own)->has_value());
  EXPECT_EQ((*store->Claim(Server("b:1")))->id, "ev-1");  // no prefix: any job
  EXPECT_EQ((*store->Claim(Server("b:1")))->id, "ev-3.s0");
}

TEST_F(PostgresStoreTest, PathJobsRunAnywhereResidentOnesFirst) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  // ev-1: dataset and target by paths nobody holds; ev-2: the dataset by a
  // path a:1 holds; ev-3: a dataset by a name only c:1 holds.
  JobRecord load_both = Queued("ev-1", "x");
  load_both.request.dataset_path = "/data/x";
  load_both.request.params.target = "big";
  load_both.request.target_path = "/models/big";
  JobRecord held = Queued("ev-2", "y");
  held.request.dataset_path = "/data/y";
  ASSERT_THAT(store->Create(load_both), IsOk());
  ASSERT_THAT(store->Create(held), IsOk());
  ASSERT_THAT(store->Create(Queued("ev-3", "only-c")), IsOk());
  EXPECT_EQ(*store->CountQueued(), 3);
  ClaimRequest a = Server("a:1");
  a.dataset_paths = {"/data/y"};
  EXPECT_EQ((*store->Claim(a))->id, "ev-2");  // the newer job, but nothing to load
  EXPECT_EQ((*store->Claim(Server("b:1")))->id, "ev-1");
  EXPECT_FALSE(store->Claim(Server("b:1"))->has_value());
  EXPECT_EQ(*store->CountQueued(), 1);
  ClaimRequest c = Server("c:1");
  c.datasets = {"only-c"};
  JobRecord pinned = **store->Claim(c);
  EXPECT_EQ(pinned.id, "ev-3");
  EXPECT_EQ(*store->CountQueued(), 0);
  JobRecord back = *store->Get("ev-1");
  EXPECT_EQ(back.request.dataset_path, "/data/x");
  EXPECT_EQ(back.request.target_path, "/models/big");
}

TEST_F(PostgresStoreTest, AServerThatRefusedAJobIsNotGivenItAgain) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Create(Queued("ev-1")), IsOk());
  JobRecord r = **store->Claim(Server("a:1"));
  r.state = JobState::kQueued;  // handed back, refused (fleet/refusal.h)
  r.attempts.back().end_unix_micros = 1;
  r.attempts.back().outcome = "refused: too big for a:1";
  ASSERT_TRUE(store->PutLeased(r, 1'000'000).ok());
  EXPECT_FALSE(store->Claim(Server("a:1"))->has_value());
  JobRecord b = **store->Claim(Server("b:1"));
  ASSERT_EQ(b.attempts.size(), 2u);
  EXPECT_EQ(b.attempts[0].outcome, "refused: too big for a:1");
  EXPECT_EQ(b.attempts[1].server, "b:1");
}

TEST_F(PostgresStoreTest, ManyConnectionsClaimEachJobOnce) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  constexpr int kJobs = 200, kServers = 6;
  for (int i = 1; i <= kJobs; ++i) {
    ASSERT_THAT(store->Create(Queued(absl::StrCat("ev-", 1000 + i))), IsOk());
  }
  std::mutex mu;
  std::map<std::string, int> claims;
  std::vector<std::thread> threads;
  for (int s = 0; s < kServers; ++s) {
    threads.emplace_back([&, s] {
      auto own = PostgresResultStore::Open(url_, "");  // one connection per "server"
      ASSERT_TRUE(own.ok());
      for (;;) {
        auto c = (*own)->Claim(Server(absl::StrCat("s", s)));
        ASSERT_TRUE(c.ok()) << c.status();
        if (!c->has_value()) return;
        JobRecord r = **c;
        r.state = JobState::kSucceeded;
        ASSERT_THAT((*own)->PutLeased(r, 1000000), IsOk());
        std::lock_guard<std::mutex> lock(mu);
        ++claims[r.id];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(claims.size(), static_cast<size_t>(kJobs));
  for (const auto& [id, n] : claims) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(*pg_->Sql(db_, "SELECT count(*) FROM jobs WHERE state = 'SUCCEEDED'"), "200");
}

TEST_F(PostgresStoreTest, ExpiredLeaseIsTakenOverAndTheLoserCannotWrite) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Create(Queued("ev-1")), IsOk());
  JobRecord a = **store->Claim(Server("a:1", 100'000));
  EXPECT_THAT(store->PutLeased(a, 100'000), IsOk());  // renewed
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto b = store->Claim(Server("b:1"));
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
  ASSERT_EQ((*b)->attempts.size(), 2u);
  EXPECT_EQ((*b)->attempts[0].server, "a:1");
  EXPECT_EQ((*b)->attempts[0].outcome, "lease expired: the server stopped renewing it");
  EXPECT_EQ((*b)->attempts[1].server, "b:1");
  a.state = JobState::kSucceeded;
  EXPECT_THAT(store->PutLeased(a, 100'000),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("lease lost: job ev-1 attempt 1 is no longer a:1's")));
  JobRecord done = **b;
  done.state = JobState::kSucceeded;
  EXPECT_THAT(store->PutLeased(done, 100'000), IsOk());
  EXPECT_EQ(store->Get("ev-1")->state, JobState::kSucceeded);
  EXPECT_EQ(store->Get("ev-1")->attempts.size(), 2u);
}

TEST_F(PostgresStoreTest, FailsAJobThatLostItsServerMaxAttemptsTimes) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Create(Queued("ev-1")), IsOk());
  for (int i = 0; i < 2; ++i) {
    ClaimRequest c = Server(absl::StrCat("s", i), 50'000);
    c.max_attempts = 2;
    ASSERT_TRUE((*store->Claim(c)).has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  ClaimRequest last = Server("s2");
  last.max_attempts = 2;
  EXPECT_FALSE(store->Claim(last)->has_value());
  JobRecord r = *store->Get("ev-1");
  EXPECT_EQ(r.state, JobState::kFailed);
  EXPECT_EQ(r.error_code, static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_EQ(r.error_message,
            "ran 2 times and lost its server each time: attempt 1 on s0: lease expired: the "
            "server stopped renewing it; attempt 2 on s1: lease expired: the server stopped "
            "renewing it");
}

TEST_F(PostgresStoreTest, CancelQueuedAtOnceAndRunningThroughTheLease) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Create(Queued("ev-1")), IsOk());
  ASSERT_THAT(store->Create(Queued("ev-2")), IsOk());
  JobRecord running = **store->Claim(Server("a:1"));
  ASSERT_EQ(running.id, "ev-1");
  auto queued = store->RequestCancel("ev-2", 5);
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(queued->state, JobState::kCancelled);
  EXPECT_EQ(store->Get("ev-2")->error_message, "cancelled before it started");
  EXPECT_EQ(store->RequestCancel("ev-1", 5)->state, JobState::kRunning);
  auto flagged = store->PutLeased(running, 1'000'000);
  ASSERT_TRUE(flagged.ok()) << flagged.status();
  EXPECT_TRUE(*flagged);
  EXPECT_THAT(store->RequestCancel("ev-2", 5),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "job ev-2 already finished (CANCELLED); nothing to cancel"));
  EXPECT_THAT(store->RequestCancel("ev-7", 5),
              StatusIs(absl::StatusCode::kNotFound, "no job with id 'ev-7'"));
}

TEST_F(PostgresStoreTest, ServersTableShowsLiveServers) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_THAT(store->Heartbeat("a:1", R"({"device":"cpu"})"), IsOk());
  ASSERT_THAT(store->Heartbeat("b:1", "{}"), IsOk());
  ASSERT_THAT(store->Heartbeat("a:1", R"({"device":"cuda:0"})"), IsOk());
  auto live = store->LiveServers(10'000'000);
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_EQ(live->size(), 2u);
  EXPECT_EQ((*live)[0].name, "a:1");
  EXPECT_EQ((*live)[0].info_json, R"({"device":"cuda:0"})");
  ASSERT_THAT(store->Leave("b:1"), IsOk());
  EXPECT_EQ(store->LiveServers(10'000'000)->size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(store->LiveServers(10'000)->size(), 0u);  // older than 10 ms: gone
}

// A finished record as big as a real one (per-position metrics, per-sample
// summaries), so the timing below writes realistic rows.
JobRecord WithResult(JobRecord r) {
  types::EvalResult res;
  for (int j = 1; j < 16; ++j) res.positions.push_back({j, 100, 50});
  for (int i = 0; i < 64; ++i) res.per_sample.push_back({i, 10, 2.5, 300, 40, 25});
  res.accepted_histogram.assign(16, 7);
  r.result = res;
  return r;
}

// The store's cost per job, as the queues use it: SQLite 3 Puts (submit,
// start, final with synchronous=FULL); PostgreSQL a Create, a Claim and the
// final PutLeased, with fsync on for the timing. Printed, not asserted: the
// numbers go to docs/operations.md, "Running a fleet".
TEST_F(PostgresStoreTest, MeasuresTheStoresCostPerJob) {
  constexpr int kJobs = 100;
  testing::TempDir dir;
  auto sqlite = SqliteResultStore::Open(dir.Join("results.sqlite3"));
  ASSERT_TRUE(sqlite.ok()) << sqlite.status();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= kJobs; ++i) {
    JobRecord r = Queued(absl::StrCat("ev-", i));
    ASSERT_THAT((*sqlite)->Put(r), IsOk());
    r.state = JobState::kRunning;
    ASSERT_THAT((*sqlite)->Put(r), IsOk());
    r = WithResult(r);
    r.state = JobState::kSucceeded;
    ASSERT_THAT((*sqlite)->Put(r), IsOk());
  }
  const double sqlite_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      kJobs;

  ASSERT_THAT(pg_->Sql("postgres", "ALTER SYSTEM SET fsync = on").status(), IsOk());
  ASSERT_THAT(pg_->Sql("postgres", "SELECT pg_reload_conf()").status(), IsOk());
  auto store = Open();
  ASSERT_NE(store, nullptr);
  t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= kJobs; ++i) {
    ASSERT_THAT(store->Create(Queued(absl::StrCat("ev-", i))), IsOk());
    auto claimed = store->Claim(Server("a:1"));
    ASSERT_TRUE(claimed.ok() && claimed->has_value()) << claimed.status();
    JobRecord r = WithResult(**claimed);
    r.state = JobState::kSucceeded;
    ASSERT_THAT(store->PutLeased(r, 1'000'000), IsOk());
  }
  const double pg_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      kJobs;
  ASSERT_THAT(pg_->Sql("postgres", "ALTER SYSTEM RESET fsync").status(), IsOk());
  ASSERT_THAT(pg_->Sql("postgres", "SELECT pg_reload_conf()").status(), IsOk());
  EXPECT_EQ(*pg_->Sql(db_, "SELECT count(*) FROM jobs WHERE state = 'SUCCEEDED'"), "100");
  std::cout << "[measure] store cost per job over " << kJobs << " jobs: SQLite " << sqlite_ms
            << " ms, PostgreSQL (loopback, fsync on) " << pg_ms << " ms\n";
}

}  // namespace
}  // namespace dflash::store
