// File: web_site.cc
#include "web/web_site.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "web/views.h"

namespace dflash::web {

namespace {

constexpr size_t kMaxCompared = 16;
// A page reads at most this many jobs of one listing (a bound on its memory
// and time, far above any run's checkpoints).
constexpr size_t kMaxListed = 100000;

int HttpStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition: return 400;
    case absl::StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

WebPage FromStatus(const absl::Status& s) {
  return ErrorView(HttpStatus(s),
                   absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message()));
}

// Every page of a listing, stopping once kMaxListed jobs are read.
absl::StatusOr<std::vector<types::JobRecord>> ListAll(core::JobService& service,
                                                      types::ListQuery q) {
  std::vector<types::JobRecord> out;
  q.page_size = 1000;
  q.without_per_sample = true;  // no listing page shows them; parsing them was most of its time
  for (;;) {
    absl::StatusOr<types::JobPage> page = service.List(q);
    if (!page.ok()) return page.status();
    for (types::JobRecord& j : page->jobs) out.push_back(std::move(j));
    if (page->next_page_token.empty() || out.size() >= kMaxListed) return out;
    q.page_token = page->next_page_token;
  }
}

}  // namespace

WebPage WebSite::Route(const std::string& path,
                       const std::multimap<std::string, std::string>& query) {
  absl::string_view rest = path;
  if (rest == "/" || rest == "/runs") {
    absl::StatusOr<std::vector<types::JobRecord>> all = ListAll(jobs_, {});
    if (!all.ok()) return FromStatus(all.status());
    return RunsView(SummarizeRuns(*all));
  }
  if (absl::ConsumePrefix(&rest, "/runs/") && !rest.empty()) {
    std::optional<int64_t> step;
    if (auto it = query.find("step"); it != query.end()) {
      int64_t s = 0;
      if (!absl::SimpleAtoi(it->second, &s)) {
        return ErrorView(400, absl::StrCat("step '", it->second, "' is not an integer"));
      }
      step = s;
    }
    types::ListQuery q;
    q.run = std::string(rest);
    q.order_by_step = true;
    absl::StatusOr<std::vector<types::JobRecord>> run = ListAll(jobs_, q);
    if (!run.ok()) return FromStatus(run.status());
    if (run->empty()) return ErrorView(404, absl::StrCat("no run named '", rest, "'"));
    return RunView(std::string(rest), *run, step);
  }
  if (absl::ConsumePrefix(&rest, "/jobs/") && !rest.empty()) {
    absl::StatusOr<types::JobRecord> job = jobs_.Get(std::string(rest));
    if (!job.ok()) return FromStatus(job.status());
    return JobView(*job);
  }
  if (rest == "/compare") {
    auto it = query.find("jobs");
    std::vector<std::string> ids;
    if (it != query.end()) ids = absl::StrSplit(it->second, ',', absl::SkipEmpty());
    if (ids.size() < 2 || ids.size() > kMaxCompared) {
      return ErrorView(400, absl::StrCat("compare needs 2 to ", kMaxCompared,
                                         " job ids: /compare?jobs=ID,ID; got ", ids.size()));
    }
    core::CompareOptions options;
    options.allow_recipe_mismatch = query.count("allow_recipe_mismatch") > 0;
    absl::StatusOr<core::Comparison> c = jobs_.Compare(ids, options);
    if (!c.ok()) return FromStatus(c.status());
    return CompareView(*c);
  }
  if (rest == "/resources")
    return ResourcesView(core_.ListResources(std::nullopt), core_.GetServerInfo());
  return ErrorView(404, absl::StrCat("no page at '", path, "'"));
}

WebReply WebSite::Handle(const std::string& path,
                         const std::multimap<std::string, std::string>& query) {
  absl::string_view p = path;
  // The twins live under /api/ (and /api itself is the runs' twin); /apix
  // is an unknown page, not the twin of "x".
  const bool api = p == "/api" || absl::StartsWith(p, "/api/");
  if (api) p.remove_prefix(4);
  if (api && p.empty()) p = "/";
  WebPage page = Route(std::string(p), query);
  if (api) return {page.status, "application/json", page.json.dump(1)};
  return {page.status, "text/html; charset=utf-8", std::move(page.html)};
}

}  // namespace dflash::web
