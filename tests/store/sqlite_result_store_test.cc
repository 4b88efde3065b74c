#include "store/sqlite_result_store.h"

#include <sqlite3.h>

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/record_json.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::store {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using types::JobPage;
using types::JobRecord;
using types::JobState;
using types::ListQuery;

JobRecord FullRecord(const std::string& id) {
  JobRecord r;
  r.id = id;
  r.state = JobState::kSucceeded;
  r.request.params.drafter = "m";
  r.request.params.dataset = "d";
  r.request.params.target = "t";
  r.request.params.options.mode = types::Mode::kReplay;
  r.request.params.options.anchors = types::AnchorStrategy::kRandom;
  r.request.params.options.max_blocks = 7;
  r.request.params.options.seed = 0xFFFFFFFFFFFFFFFFull;  // the full uint64 range survives
  r.request.params.options.block_size = 8;
  r.request.params.options.sampling = {{0.6, 0.95, 20}, {0, 1, 0}};
  r.request.run = "run-a";
  r.request.step = 4000;
  r.request.labels = {{"lr", "3e-4"}, {"team", "x y"}};
  r.request.unload_after = true;
  r.progress = {10, 40, 3, 3, 1.25, 0, /*blocks_total_is_bound=*/true};
  types::EvalResult res;
  res.mode = types::Mode::kReplay;
  res.block_size = 8;
  res.samples = 3;
  res.blocks = 10;
  res.tokens_scored = 70;
  res.draft_vocab_size = 48;  // a reduced draft vocabulary round-trips
  res.labels_in_draft_vocab = 66;
  res.accept_length_pooled = 2.0 / 3.0;
  res.tau = 1.1000000000000001;
  for (int j = 1; j < 8; ++j) {
    types::PositionMetrics p;
    p.position = j;
    p.counted = 10;
    p.correct = 10 - j;
    p.accuracy = (10.0 - j) / 10.0;
    p.accepted = 8 - j;
    p.acceptance = (8.0 - j) / 10.0;
    p.conditional_counted = 9;
    p.conditional = 1.0 / 3.0;
    p.mean_cross_entropy = 0.1 * j;
    p.cross_entropy_counted = 10;
    res.positions.push_back(p);
  }
  res.accepted_histogram = {1, 2, 3, 0, 0, 0, 0, 4};
  res.per_sample = {{0, 4, 2.5, 100, 20, 10}, {2, 6, 1.75, 90, 30, 11}};
  res.setup_seconds = 0.5;
  res.compute_seconds = 1.5;
  res.tokens_per_second = 46.666666666666664;
  res.device = "cpu";
  res.dtype = "fp32";
  res.drafter_fingerprint = "dfp";
  res.dataset_fingerprint = "sfp";
  res.warnings = {"w1"};
  res.draft_length_curve = {1.5, 1.75, 2.0};
  types::SampledAcceptance sa;
  sa.setting = {0.6, 0.95, 20};
  sa.mean_alpha = {0.5, 0.25};
  sa.counted = {3, 2};
  sa.expected_accept_length_pooled = 4.75 / 3;
  sa.expected_tau = 1.4375;
  sa.draft_length_curve = {1.5, 4.75 / 3};
  res.sampling = {sa};
  res.target_consistency = {221, 220, 220.0 / 221, true};
  r.result = res;
  r.error_code = 0;
  r.create_unix_micros = 1000;
  r.start_unix_micros = 2000;
  r.end_unix_micros = 3000;
  r.server_version = "0.1.0";
  r.device = "cpu";
  r.dtype = "fp32";
  r.drafter_fingerprint = "dfp";
  r.dataset_fingerprint = "sfp";
  r.resubmitted_from = "ev-0";
  return r;
}

JobRecord Simple(const std::string& id, int64_t created, const std::string& run, int64_t step,
                 JobState state = JobState::kSucceeded) {
  JobRecord r;
  r.id = id;
  r.state = state;
  r.create_unix_micros = created;
  r.request.run = run;
  r.request.step = step;
  r.request.params.drafter = "m";
  r.request.params.dataset = "d";
  return r;
}

std::vector<std::string> Ids(const JobPage& page) {
  std::vector<std::string> ids;
  for (const JobRecord& r : page.jobs) ids.push_back(r.id);
  return ids;
}

class SqliteResultStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<SqliteResultStore> Open() {
    auto store = SqliteResultStore::Open(dir_.Join("results.sqlite3"));
    EXPECT_OK(store.status());
    return store.ok() ? std::move(store).value() : nullptr;
  }
  testing::TempDir dir_;
};

TEST_F(SqliteResultStoreTest, FullRecordRoundTripsExactly) {
  auto store = Open();
  const JobRecord want = FullRecord("ev-1");
  ASSERT_OK(store->Put(want));
  ASSERT_OK_AND_ASSIGN(JobRecord got, store->Get("ev-1"));
  // The JSON form is canonical, so equal text means every field is equal.
  EXPECT_EQ(RecordToJson(got), RecordToJson(want));
  ASSERT_TRUE(got.result.has_value());
  EXPECT_EQ(got.result->tau, want.result->tau);
  EXPECT_EQ(got.result->draft_vocab_size, 48);
  EXPECT_EQ(got.result->labels_in_draft_vocab, 66);
  EXPECT_EQ(got.result->tokens_per_second, want.result->tokens_per_second);
  EXPECT_EQ(got.request.params.options.seed, 0xFFFFFFFFFFFFFFFFull);
  EXPECT_EQ(got.result->per_sample[1].mean_accept_length, 1.75);
  EXPECT_EQ(got.request.labels.at("team"), "x y");
}

// A fleet's shard job (fleet/fleet_shards.h): its range and parent, and the
// part it stores for the parent, come back as written.
TEST_F(SqliteResultStoreTest, ShardRangeAndPartStateRoundTrip) {
  auto store = Open();
  JobRecord want = FullRecord("ev-7.s3");
  types::EvalOptions& o = want.request.params.options;
  o.sample_begin = 24;
  o.sample_end = 32;
  o.shard_of = "ev-7";
  o.shard_index = 3;
  want.result->part_state = R"({"metrics": {"block_size": 4}, "context_positions": 12})";
  ASSERT_OK(store->Put(want));
  ASSERT_OK_AND_ASSIGN(JobRecord got, store->Get("ev-7.s3"));
  EXPECT_EQ(RecordToJson(got), RecordToJson(want));
  EXPECT_EQ(got.request.params.options.sample_begin, 24);
  EXPECT_EQ(got.request.params.options.sample_end, 32);
  EXPECT_EQ(got.request.params.options.shard_of, "ev-7");
  EXPECT_EQ(got.request.params.options.shard_index, 3);
  EXPECT_EQ(got.result->part_state, want.result->part_state);
  // Not a shard: no shard fields written.
  EXPECT_EQ(RecordToJson(FullRecord("ev-8")).find("\"shard\""), std::string::npos);
}

TEST_F(SqliteResultStoreTest, IntervalsGateAndSuitesRoundTripAndSuitesFilter) {
  auto store = Open();
  JobRecord want = FullRecord("ev-1");
  want.request.gate = {"previous", "acceptance[2]", 0.05};
  want.request.params.options.ci = types::CiMethod::kNone;
  want.request.params.options.ci_resamples = 200;
  types::EvalResult& res = *want.result;
  res.per_sample[0].counted = {4, 3};
  res.per_sample[0].accepted = {2, 1};
  res.per_sample[0].correct = {3, 1};
  res.per_sample[0].conditional_counted = {4, 2};
  res.accept_length_ci = types::Interval{1.25, 3.5};
  res.positions[1].conditional_ci = types::Interval{0.125, 0.75};
  res.ci_resamples = 200;
  types::GateVerdict g;
  g.reference_job = "ev-0";
  g.metric = "tau";
  g.delta = -0.5;
  g.delta_ci = types::Interval{-0.75, -0.25};
  g.verdict = "worse";
  g.text = "gate: WORSE";
  res.gate = g;
  ASSERT_OK(store->Put(want));
  JobRecord suite = Simple("ev-s", 5, "r", 10);
  suite.request.params.dataset = "d,e";
  suite.request.suite_datasets = {"d", "e"};
  types::EvalResult macro;
  macro.suite = "d,e";
  macro.suite_results = {{"d", res}, {"e", types::EvalResult{}}};
  suite.result = macro;
  ASSERT_OK(store->Put(suite));
  ASSERT_OK_AND_ASSIGN(JobRecord got, store->Get("ev-1"));
  EXPECT_EQ(RecordToJson(got), RecordToJson(want));
  EXPECT_EQ(got.request.gate.metric, "acceptance[2]");
  EXPECT_EQ(got.request.params.options.ci, types::CiMethod::kNone);
  EXPECT_EQ(got.result->per_sample[0].conditional_counted, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(got.result->positions[1].conditional_ci->hi, 0.75);
  EXPECT_FALSE(got.result->positions[0].conditional_ci.has_value());
  EXPECT_EQ(got.result->gate->delta_ci->lo, -0.75);
  ASSERT_OK_AND_ASSIGN(JobRecord got_suite, store->Get("ev-s"));
  EXPECT_EQ(RecordToJson(got_suite), RecordToJson(suite));
  ASSERT_EQ(got_suite.result->suite_results.size(), 2u);
  EXPECT_EQ(got_suite.result->suite_results[0].result.gate->verdict, "worse");
  ListQuery q;
  q.suite = "d,e";
  ASSERT_OK_AND_ASSIGN(JobPage page, store->List(q));
  EXPECT_THAT(Ids(page), ElementsAre("ev-s"));
  q.suite = "d";
  ASSERT_OK_AND_ASSIGN(JobPage none, store->List(q));
  EXPECT_TRUE(none.jobs.empty());
}

// A listing without per-sample summaries empties exactly them: the rest of
// each record is as stored, a queued record (no result) lists unchanged, and
// the same listing without the flag keeps them.
TEST_F(SqliteResultStoreTest, ListingWithoutPerSampleEmptiesOnlyThem) {
  auto store = Open();
  JobRecord done = FullRecord("ev-1");
  // A suite keeps per-sample lists in each dataset's result, and a label
  // may spell the key: only the lists are emptied.
  done.result->suite_results = {{"d", *done.result}};
  done.request.labels["note"] = R"("per_sample":[1,2])";
  JobRecord queued = FullRecord("ev-2");
  queued.state = JobState::kQueued;
  queued.result.reset();
  ASSERT_OK(store->Put(done));
  ASSERT_OK(store->Put(queued));
  ListQuery q;
  q.without_per_sample = true;
  ASSERT_OK_AND_ASSIGN(JobPage lean, store->List(q));
  ASSERT_EQ(lean.jobs.size(), 2u);
  const JobRecord& got = lean.jobs[0].id == "ev-1" ? lean.jobs[0] : lean.jobs[1];
  const JobRecord& got_queued = lean.jobs[0].id == "ev-1" ? lean.jobs[1] : lean.jobs[0];
  ASSERT_TRUE(got.result.has_value());
  EXPECT_TRUE(got.result->per_sample.empty());
  JobRecord want = done;
  want.result->per_sample.clear();
  want.result->suite_results[0].result.per_sample.clear();
  EXPECT_EQ(RecordToJson(got), RecordToJson(want));
  EXPECT_EQ(got.request.labels.at("note"), R"("per_sample":[1,2])");
  EXPECT_EQ(RecordToJson(got_queued), RecordToJson(queued));
  q.without_per_sample = false;
  ASSERT_OK_AND_ASSIGN(JobPage full, store->List(q));
  const JobRecord& whole = full.jobs[0].id == "ev-1" ? full.jobs[0] : full.jobs[1];
  EXPECT_EQ(RecordToJson(whole), RecordToJson(done));
}

TEST_F(SqliteResultStoreTest, UnknownIdIsNotFound) {
  auto store = Open();
  EXPECT_THAT(store->Get("ev-nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no job with id 'ev-nope'")));
}

TEST_F(SqliteResultStoreTest, PutReplacesTheRecordAndItsLabels) {
  auto store = Open();
  JobRecord r = FullRecord("ev-1");
  ASSERT_OK(store->Put(r));
  r.state = JobState::kFailed;
  r.result.reset();
  r.request.labels = {{"lr", "1e-3"}};
  ASSERT_OK(store->Put(r));
  ASSERT_OK_AND_ASSIGN(JobRecord got, store->Get("ev-1"));
  EXPECT_EQ(got.state, JobState::kFailed);
  EXPECT_FALSE(got.result.has_value());
  ListQuery q;
  q.labels = {{"team", "x y"}};
  ASSERT_OK_AND_ASSIGN(JobPage none, store->List(q));
  EXPECT_TRUE(none.jobs.empty());
  q.labels = {{"lr", "1e-3"}};
  ASSERT_OK_AND_ASSIGN(JobPage one, store->List(q));
  EXPECT_THAT(Ids(one), ElementsAre("ev-1"));
}

TEST_F(SqliteResultStoreTest, FiltersSelectTheRightJobs) {
  auto store = Open();
  JobRecord a = Simple("ev-a", 1, "r1", 100);
  a.request.labels = {{"k", "v"}, {"x", "1"}};
  a.drafter_fingerprint = "fpA";
  JobRecord b = Simple("ev-b", 2, "r1", 200, JobState::kFailed);
  b.request.labels = {{"k", "v"}};
  b.request.params.drafter = "";
  b.request.params.checkpoint_path = "/ckpt/step-200";
  JobRecord c = Simple("ev-c", 3, "r2", 300);
  c.request.params.dataset = "other";
  c.dataset_fingerprint = "dsB";
  for (const JobRecord& r : {a, b, c}) ASSERT_OK(store->Put(r));

  auto ids = [&](ListQuery q) {
    auto page = store->List(q);
    EXPECT_OK(page.status());
    return page.ok() ? Ids(*page) : std::vector<std::string>{};
  };
  ListQuery q;
  EXPECT_THAT(ids(q), ElementsAre("ev-c", "ev-b", "ev-a"));  // newest first
  q.state = JobState::kFailed;
  EXPECT_THAT(ids(q), ElementsAre("ev-b"));
  q = {};
  q.run = "r1";
  EXPECT_THAT(ids(q), ElementsAre("ev-b", "ev-a"));
  q = {};
  q.drafter = "/ckpt/step-200";
  EXPECT_THAT(ids(q), ElementsAre("ev-b"));
  q.drafter = "fpA";
  EXPECT_THAT(ids(q), ElementsAre("ev-a"));
  q = {};
  q.dataset = "dsB";
  EXPECT_THAT(ids(q), ElementsAre("ev-c"));
  q.dataset = "d";
  EXPECT_THAT(ids(q), ElementsAre("ev-b", "ev-a"));
  q = {};
  q.min_step = 150;
  EXPECT_THAT(ids(q), ElementsAre("ev-c", "ev-b"));
  q.max_step = 250;
  EXPECT_THAT(ids(q), ElementsAre("ev-b"));
  q = {};
  q.labels = {{"k", "v"}};
  EXPECT_THAT(ids(q), ElementsAre("ev-b", "ev-a"));
  q.labels = {{"k", "v"}, {"x", "1"}};
  EXPECT_THAT(ids(q), ElementsAre("ev-a"));
  q.labels = {{"k", "w"}};
  EXPECT_THAT(ids(q), ElementsAre());
}

TEST_F(SqliteResultStoreTest, PagesCoverEveryJobOnceInBothOrders) {
  auto store = Open();
  // Steps out of creation order, two jobs with the same step and time.
  const std::vector<int64_t> steps = {500, 100, 300, 300, 200, 400, 0};
  for (size_t i = 0; i < steps.size(); ++i) {
    ASSERT_OK(store->Put(
        Simple(absl::StrCat("ev-", i), i == 3 ? 2 : static_cast<int64_t>(i), "r", steps[i])));
  }
  for (bool by_step : {false, true}) {
    ListQuery q;
    q.order_by_step = by_step;
    q.page_size = 2;
    std::vector<std::string> all;
    std::vector<int64_t> keys;
    int pages = 0;
    do {
      ASSERT_OK_AND_ASSIGN(JobPage page, store->List(q));
      ++pages;
      for (const JobRecord& r : page.jobs) {
        all.push_back(r.id);
        keys.push_back(by_step ? r.request.step : -r.create_unix_micros);
      }
      q.page_token = page.next_page_token;
    } while (!q.page_token.empty());
    EXPECT_EQ(pages, 4) << by_step;
    EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), steps.size()) << by_step;
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end())) << by_step;
  }
  ListQuery by_step;
  by_step.order_by_step = true;
  ASSERT_OK_AND_ASSIGN(JobPage curve, store->List(by_step));
  EXPECT_THAT(Ids(curve), ElementsAre("ev-6", "ev-1", "ev-4", "ev-2", "ev-3", "ev-5", "ev-0"));
}

TEST_F(SqliteResultStoreTest, BadPageTokensAreInvalidArgument) {
  auto store = Open();
  ListQuery q;
  q.page_token = "not a token!";
  EXPECT_THAT(store->List(q), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("is not a token this server issued")));
  ASSERT_OK(store->Put(Simple("ev-1", 1, "r", 1)));
  ASSERT_OK(store->Put(Simple("ev-2", 2, "r", 2)));
  q = {};
  q.page_size = 1;
  ASSERT_OK_AND_ASSIGN(JobPage page, store->List(q));
  ASSERT_FALSE(page.next_page_token.empty());
  q.page_token = page.next_page_token;
  q.order_by_step = true;
  EXPECT_THAT(store->List(q), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("repeat the query with the same order")));
}

TEST_F(SqliteResultStoreTest, MarkInterruptedOnStartupTouchesOnlyUnfinishedJobs) {
  auto store = Open();
  ASSERT_OK(store->Put(Simple("ev-1", 1, "r", 1, JobState::kQueued)));
  ASSERT_OK(store->Put(Simple("ev-2", 2, "r", 2, JobState::kRunning)));
  ASSERT_OK(store->Put(Simple("ev-3", 3, "r", 3, JobState::kSucceeded)));
  ASSERT_OK(store->Put(Simple("ev-4", 4, "r", 4, JobState::kCancelled)));
  ASSERT_OK_AND_ASSIGN(auto changed, store->MarkInterruptedOnStartup(99));
  EXPECT_THAT(changed, ElementsAre("ev-1", "ev-2"));
  ASSERT_OK_AND_ASSIGN(JobRecord two, store->Get("ev-2"));
  EXPECT_EQ(two.state, JobState::kInterrupted);
  EXPECT_TRUE(two.interrupted_by_restart);
  EXPECT_EQ(two.end_unix_micros, 99);
  EXPECT_THAT(two.error_message, HasSubstr("the server stopped while this job was RUNNING"));
  ASSERT_OK_AND_ASSIGN(JobRecord three, store->Get("ev-3"));
  EXPECT_EQ(three.state, JobState::kSucceeded);
  EXPECT_FALSE(three.interrupted_by_restart);
  ListQuery q;
  q.state = JobState::kInterrupted;
  ASSERT_OK_AND_ASSIGN(JobPage page, store->List(q));
  EXPECT_EQ(page.jobs.size(), 2u);
  ASSERT_OK_AND_ASSIGN(auto again, store->MarkInterruptedOnStartup(100));
  EXPECT_TRUE(again.empty());
}

TEST_F(SqliteResultStoreTest, ReopenKeepsEverythingAndTheMaxId) {
  {
    auto store = Open();
    ASSERT_OK_AND_ASSIGN(std::string empty, store->MaxId());
    EXPECT_EQ(empty, "");
    ASSERT_OK(store->Put(FullRecord("ev-20260101-000000-0002")));
    ASSERT_OK(store->Put(Simple("ev-20260101-000000-0001", 1, "r", 1)));
  }
  auto store = Open();
  ASSERT_OK_AND_ASSIGN(JobRecord got, store->Get("ev-20260101-000000-0002"));
  EXPECT_EQ(RecordToJson(got), RecordToJson(FullRecord("ev-20260101-000000-0002")));
  ASSERT_OK_AND_ASSIGN(std::string max, store->MaxId());
  EXPECT_EQ(max, "ev-20260101-000000-0002");
}

TEST_F(SqliteResultStoreTest, UsesWalAndRecordsTheSchemaVersion) {
  Open();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir_.Join("results.sqlite3").c_str(), &db), SQLITE_OK);
  auto scalar = [db](const char* sql) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &s, nullptr);
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return out;
  };
  EXPECT_EQ(scalar("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(scalar("SELECT version FROM schema_version"), "1");
  // A newer schema is refused rather than misread.
  ASSERT_EQ(sqlite3_exec(db, "UPDATE schema_version SET version = 7", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THAT(SqliteResultStore::Open(dir_.Join("results.sqlite3")),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("schema version 7 is newer than this server's (1)")));
}

TEST_F(SqliteResultStoreTest, AFileThatIsNotADatabaseIsRefused) {
  const std::string path = dir_.WriteFile("junk.sqlite3", std::string(4096, 'x'));
  EXPECT_THAT(SqliteResultStore::Open(path),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not an SQLite database")));
}

TEST_F(SqliteResultStoreTest, ConcurrentWritersLoseNothing) {
  auto store = Open();
  // A second connection to the same file, as a second process would have.
  ASSERT_OK_AND_ASSIGN(auto other, SqliteResultStore::Open(dir_.Join("results.sqlite3")));
  constexpr int kPerThread = 40;
  auto write = [](ResultStore* s, const std::string& prefix) {
    for (int i = 0; i < kPerThread; ++i) {
      JobRecord r = FullRecord(absl::StrCat(prefix, i));
      r.create_unix_micros = i;
      ASSERT_OK(s->Put(r));
      r.state = JobState::kRunning;  // and an update of the same row
      ASSERT_OK(s->Put(r));
    }
  };
  std::thread t1(write, store.get(), "a-");
  std::thread t2(write, store.get(), "b-");
  std::thread t3(write, other.get(), "c-");
  t1.join();
  t2.join();
  t3.join();
  ListQuery q;
  q.page_size = 1000;
  q.state = JobState::kRunning;
  ASSERT_OK_AND_ASSIGN(JobPage page, store->List(q));
  EXPECT_EQ(page.jobs.size(), 3u * kPerThread);
}

}  // namespace
}  // namespace dflash::store
