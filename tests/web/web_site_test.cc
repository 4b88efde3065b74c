// The web view's routes (web/web_site.h) over a fake job service and core:
// what each page asks of them (every page of a listing, a run in step
// order, the compared ids and flag), the HTML page or its JSON twin under
// /api, and every bad request's status and message: 400 for a bad step or
// id list, 404 for an unknown run or page, the job service's errors mapped
// to 404 / 400 / 503 / 500.
#include "web/web_site.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fakes/fake_eval_core.h"
#include "fakes/fake_job_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "web/view_records.h"

namespace dflash::web {
namespace {

using ::dflash::testing::Job;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::json;
using Query = std::multimap<std::string, std::string>;

constexpr char kHtml[] = "text/html; charset=utf-8";
constexpr char kJson[] = "application/json";

// Lists run "r" in three pages of one job each (steps 0, 1, 2; tokens "1",
// "2", then none), recording each query.
class PagedJobService : public dflash::testing::FakeJobService {
 public:
  absl::StatusOr<types::JobPage> List(const types::ListQuery& q) override {
    queries.push_back(q);
    const int n = q.page_token.empty() ? 0 : std::stoi(q.page_token);
    types::JobPage page;
    page.jobs = {Job(absl::StrCat("j", n), "r", n, 2.0 + n)};
    if (n < 2) page.next_page_token = absl::StrCat(n + 1);
    return page;
  }
  std::vector<types::ListQuery> queries;
};

class WebSiteTest : public ::testing::Test {
 protected:
  WebReply Get(const std::string& path, const Query& query = {}) {
    return site_.Handle(path, query);
  }
  // The JSON twin's error of `path`, as "STATUS error".
  std::string ApiError(const std::string& path, const Query& query = {}) {
    const WebReply r = Get(path, query);
    EXPECT_EQ(r.content_type, kJson) << path;
    const json j = json::parse(r.body);
    EXPECT_EQ(j["status"], r.status) << path;
    return absl::StrCat(r.status, " ", j["error"].get<std::string>());
  }

  PagedJobService jobs_;
  dflash::testing::FakeEvalCore core_;
  WebSite site_{jobs_, core_};
};

TEST_F(WebSiteTest, TheRunsPageReadsEveryPageOfTheListing) {
  const WebReply page = Get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, kHtml);
  EXPECT_THAT(page.body, HasSubstr("<title>Runs - dflash-evald</title>"));
  EXPECT_THAT(page.body, HasSubstr("<td>2 (4)</td>"));  // best step 2, accept length 4
  ASSERT_EQ(jobs_.queries.size(), 3u);
  std::vector<std::string> tokens;
  for (const types::ListQuery& q : jobs_.queries) {
    tokens.push_back(q.page_token);
    EXPECT_EQ(q.page_size, 1000);
    EXPECT_TRUE(q.without_per_sample);
    EXPECT_EQ(q.run, "");
    EXPECT_FALSE(q.order_by_step);
  }
  EXPECT_THAT(tokens, ElementsAre("", "1", "2"));

  for (const char* path : {"/api", "/api/", "/api/runs"}) {
    const WebReply twin = Get(path);
    EXPECT_EQ(twin.status, 200) << path;
    EXPECT_EQ(twin.content_type, kJson) << path;
    const json runs = json::parse(twin.body);
    ASSERT_EQ(runs.size(), 1u) << path;
    EXPECT_EQ(runs[0]["jobs"], 3);
    EXPECT_EQ(runs[0]["best_job"], "j2");
  }
  EXPECT_EQ(Get("/runs").body, page.body);
}

TEST_F(WebSiteTest, ARunPageAsksForTheRunInStepOrder) {
  const WebReply page = Get("/runs/my run", {{"step", "1"}});
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<title>Run my run - dflash-evald</title>"));
  ASSERT_EQ(jobs_.queries.size(), 3u);
  EXPECT_EQ(jobs_.queries[0].run, "my run");
  EXPECT_TRUE(jobs_.queries[0].order_by_step);
  EXPECT_TRUE(jobs_.queries[0].without_per_sample);
  const json twin = json::parse(Get("/api/runs/my run", {{"step", "1"}}).body);
  EXPECT_EQ(twin["run"], "my run");
  EXPECT_EQ(twin["jobs"].size(), 3u);
  EXPECT_EQ(json::parse(Get("/api/runs/my run", {{"step", "-5"}}).body)["chosen_job"],
            json(nullptr));
}

TEST_F(WebSiteTest, AStepThatIsNotAnIntegerIs400BeforeAnythingIsListed) {
  const WebReply page = Get("/runs/r", {{"step", "2<x>"}});
  EXPECT_EQ(page.status, 400);
  EXPECT_EQ(page.content_type, kHtml);
  EXPECT_THAT(page.body,
              HasSubstr("<p class=\"error\">step &#39;2&lt;x&gt;&#39; is not an integer</p>"));
  EXPECT_EQ(ApiError("/api/runs/r", {{"step", ""}}), "400 step '' is not an integer");
  EXPECT_EQ(ApiError("/api/runs/r", {{"step", "1.5"}}), "400 step '1.5' is not an integer");
  EXPECT_THAT(jobs_.queries, IsEmpty());
}

TEST_F(WebSiteTest, UnknownRunsAndPagesAre404) {
  dflash::testing::FakeJobService empty;  // lists nothing
  WebSite site(empty, core_);
  const WebReply run = site.Handle("/runs/<ghost>", {});
  EXPECT_EQ(run.status, 404);
  EXPECT_THAT(run.body, HasSubstr("<p class=\"error\">no run named &#39;&lt;ghost&gt;&#39;</p>"));
  EXPECT_EQ(json::parse(site.Handle("/api/runs/ghost", {}).body)["error"], "no run named 'ghost'");

  EXPECT_EQ(ApiError("/api/nope"), "404 no page at '/nope'");
  EXPECT_EQ(ApiError("/api/jobs/"), "404 no page at '/jobs/'");  // no id
  EXPECT_EQ(ApiError("/api/runs/"), "404 no page at '/runs/'");  // no name
  EXPECT_EQ(ApiError("/api/compare/x"), "404 no page at '/compare/x'");
  const WebReply page = Get("/<script>");
  EXPECT_EQ(page.status, 404);
  EXPECT_EQ(page.content_type, kHtml);
  EXPECT_THAT(page.body, HasSubstr("no page at &#39;/&lt;script&gt;&#39;"));
  EXPECT_THAT(page.body, ::testing::Not(HasSubstr("<script>")));
}

// Only /api and /api/... are JSON twins: /apix is an unknown HTML page
// named as asked (it was JSON, naming the page "x").
TEST_F(WebSiteTest, OnlyTheApiFolderIsJson) {
  const WebReply page = Get("/apix");
  EXPECT_EQ(page.status, 404);
  EXPECT_EQ(page.content_type, kHtml);
  EXPECT_THAT(page.body, HasSubstr("no page at &#39;/apix&#39;"));
  EXPECT_EQ(Get("/apiruns").content_type, kHtml);
}

TEST_F(WebSiteTest, AJobPageShowsTheJobTheServiceReturns) {
  jobs_.Answer([](auto& a) { a.record = Job("ev-1", "r", 3, 2.5); });
  const WebReply page = Get("/jobs/ev-1");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<title>Job ev-1 - dflash-evald</title>"));
  const json twin = json::parse(Get("/api/jobs/ev-1").body);
  EXPECT_EQ(twin["id"], "ev-1");
  EXPECT_EQ(twin["state"], "SUCCEEDED");
  EXPECT_THAT(jobs_.calls().got, ElementsAre("ev-1", "ev-1"));
}

TEST_F(WebSiteTest, TheJobServicesErrorsBecomeHttpStatuses) {
  const std::vector<std::pair<absl::Status, std::string>> cases = {
      {absl::NotFoundError("no job 'x'"), "404 NOT_FOUND: no job 'x'"},
      {absl::InvalidArgumentError("id 'x' is malformed"),
       "400 INVALID_ARGUMENT: id 'x' is malformed"},
      {absl::FailedPreconditionError("not yet"), "400 FAILED_PRECONDITION: not yet"},
      {absl::UnavailableError("store down"), "503 UNAVAILABLE: store down"},
      {absl::InternalError("bug"), "500 INTERNAL: bug"},
      {absl::PermissionDeniedError("no"), "500 PERMISSION_DENIED: no"},
  };
  for (const auto& [error, expected] : cases) {
    jobs_.Answer([&, e = error](auto& a) { a.error = e; });
    EXPECT_EQ(ApiError("/api/jobs/x"), expected);
  }
  // A listing's error too (the plain fake lists through its answers).
  dflash::testing::FakeJobService failing;
  failing.Answer([](auto& a) { a.error = absl::UnavailableError("store down"); });
  WebSite site(failing, core_);
  const WebReply runs = site.Handle("/", {});
  EXPECT_EQ(runs.status, 503);
  EXPECT_THAT(runs.body, HasSubstr("<p class=\"error\">UNAVAILABLE: store down</p>"));
  EXPECT_EQ(site.Handle("/runs/r", {}).status, 503);
}

TEST_F(WebSiteTest, CompareNeedsTwoToSixteenIds) {
  const auto refused = [](size_t n) {
    return absl::StrCat("400 compare needs 2 to 16 job ids: /compare?jobs=ID,ID; got ", n);
  };
  EXPECT_EQ(ApiError("/api/compare"), refused(0));
  EXPECT_EQ(ApiError("/api/compare", {{"jobs", ""}}), refused(0));
  EXPECT_EQ(ApiError("/api/compare", {{"jobs", "a"}}), refused(1));
  EXPECT_EQ(ApiError("/api/compare", {{"jobs", ",a,,"}}), refused(1));  // empty ids skipped
  std::string seventeen = "j0";
  for (int i = 1; i < 17; ++i) absl::StrAppend(&seventeen, ",j", i);
  EXPECT_EQ(ApiError("/api/compare", {{"jobs", seventeen}}), refused(17));
  const WebReply page = Get("/compare", {{"jobs", "a"}});
  EXPECT_EQ(page.content_type, kHtml);
  EXPECT_THAT(page.body, HasSubstr("compare needs 2 to 16 job ids: /compare?jobs=ID,ID; got 1"));
  EXPECT_THAT(jobs_.calls().compared, IsEmpty());

  const std::string sixteen = seventeen.substr(0, seventeen.rfind(','));
  EXPECT_EQ(Get("/api/compare", {{"jobs", sixteen}}).status, 200);
  ASSERT_EQ(jobs_.calls().compared.size(), 1u);
  EXPECT_EQ(jobs_.calls().compared[0].first.size(), 16u);
}

TEST_F(WebSiteTest, CompareAsksForTheIdsAndTheRecipeFlag) {
  jobs_.Answer([](auto& a) {
    a.comparison.jobs = {Job("a", "r", 1, 2.0), Job("b", "r", 2, 2.5)};
    a.comparison.accept_length = {2.0, 2.5};
    a.comparison.accept_length_delta = {0, 0.5};
    a.comparison.tau = {1.9, 2.4};
  });
  const WebReply page = Get("/compare", {{"jobs", "a,,b"}});
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<td>2.5</td><td>0.5</td><td>2.4</td>"));
  Get("/compare", {{"jobs", "a,b"}, {"allow_recipe_mismatch", ""}});
  const auto compared = jobs_.calls().compared;
  ASSERT_EQ(compared.size(), 2u);
  EXPECT_THAT(compared[0].first, ElementsAre("a", "b"));
  EXPECT_FALSE(compared[0].second.allow_recipe_mismatch);
  EXPECT_FALSE(compared[0].second.require_paired);
  EXPECT_TRUE(compared[1].second.allow_recipe_mismatch);

  jobs_.Answer([](auto& a) { a.error = absl::FailedPreconditionError("recipes differ"); });
  EXPECT_EQ(ApiError("/api/compare", {{"jobs", "a,b"}}), "400 FAILED_PRECONDITION: recipes differ");
}

TEST_F(WebSiteTest, TheResourcesPageShowsWhatTheCoreHolds) {
  core_.resources.resize(1);
  core_.resources[0].kind = resident::ResourceKind::kDrafter;
  core_.resources[0].name = "m";
  core_.resources[0].bytes = 4096;
  core_.info.server_version = "9.9.9";
  core_.info.default_device = "cpu";
  const WebReply page = Get("/resources");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<td>drafter</td><td>m</td>"));
  EXPECT_THAT(page.body, HasSubstr("dflash-evald 9.9.9 on cpu"));
  const json twin = json::parse(Get("/api/resources").body);
  EXPECT_EQ(twin["resident_bytes"], 4096);
  EXPECT_EQ(twin["resources"][0]["name"], "m");
}

}  // namespace
}  // namespace dflash::web
