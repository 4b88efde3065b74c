// File: compare_view.cc
// Two or more jobs side by side with the paired differences against the
// first (core/compare_stats.h), and the resident objects page.
#include "absl/strings/str_cat.h"
#include "resident/resource.h"
#include "web/html.h"
#include "web/views.h"

namespace dflash::web {
namespace {

using json = nlohmann::json;

std::string VerdictCell(const std::string& verdict) {
  const char* cls = verdict == "worse" ? "worse" : verdict == "better" ? "pass" : "note";
  return absl::StrCat("<span class=\"", cls, "\">", Escape(verdict), "</span>");
}

}  // namespace

WebPage CompareView(const core::Comparison& c) {
  WebPage page;
  std::vector<std::vector<std::string>> side;
  json jobs = json::array();
  for (size_t k = 0; k < c.jobs.size(); ++k) {
    const types::JobRecord& j = c.jobs[k];
    side.push_back({Link(absl::StrCat("/jobs/", UrlEncode(j.id)), j.id),
                    Escape(j.request.params.drafter.empty() ? j.request.params.checkpoint_path
                                                            : j.request.params.drafter),
                    absl::StrCat(j.request.step), Num(c.accept_length[k]),
                    k == 0 ? "" : Num(c.accept_length_delta[k]), Num(c.tau[k])});
    jobs.push_back({{"id", j.id},
                    {"step", j.request.step},
                    {"accept_length", c.accept_length[k]},
                    {"accept_length_delta", c.accept_length_delta[k]},
                    {"tau", c.tau[k]}});
  }
  std::string body = Table({"job", "drafter", "step", "accept length", "delta", "tau"}, side);
  std::vector<std::vector<std::string>> diffs;
  json differences = json::array();
  for (const core::MetricDifference& d : c.differences) {
    const std::string& id = c.jobs[static_cast<size_t>(d.job_index)].id;
    diffs.push_back({Escape(d.metric), Escape(id), Num(d.reference_value), Num(d.value),
                     WithInterval(d.delta, d.delta_ci), VerdictCell(d.verdict)});
    differences.push_back(
        {{"metric", d.metric},
         {"job", id},
         {"reference_value", d.reference_value},
         {"value", d.value},
         {"delta", d.delta},
         {"delta_ci", d.delta_ci ? json::array({d.delta_ci->lo, d.delta_ci->hi}) : json(nullptr)},
         {"verdict", d.verdict}});
  }
  if (!diffs.empty()) {
    absl::StrAppend(
        &body, "<h2>Paired differences against ", Escape(c.jobs.front().id),
        " (95% paired bootstrap)</h2>",
        Table({"metric", "job", "reference", "value", "delta [95%]", "verdict"}, diffs));
  }
  for (const std::string& w : c.warnings) {
    absl::StrAppend(&body, "<p class=\"note\">warning: ", Escape(w), "</p>");
  }
  std::string ids;
  for (const types::JobRecord& j : c.jobs) absl::StrAppend(&ids, ids.empty() ? "" : ",", j.id);
  page.json = {{"jobs", jobs}, {"differences", differences}, {"warnings", c.warnings}};
  page.html = PageShell("Compare", body, absl::StrCat("/api/compare?jobs=", UrlEncode(ids)));
  return page;
}

WebPage ResourcesView(const std::vector<resident::ResourceInfo>& resources,
                      const core::ServerInfo& info) {
  WebPage page;
  std::vector<std::vector<std::string>> rows;
  json list = json::array();
  int64_t total = 0;
  for (const resident::ResourceInfo& r : resources) {
    const std::string kind = resident::ResourceKindName(r.kind);
    rows.push_back({Escape(kind), Escape(r.name), Escape(r.device), Escape(r.dtype),
                    absl::StrCat(r.bytes), Escape(r.fingerprint), Escape(r.source_path)});
    list.push_back({{"kind", kind},
                    {"name", r.name},
                    {"device", r.device},
                    {"dtype", r.dtype},
                    {"bytes", r.bytes},
                    {"fingerprint", r.fingerprint},
                    {"source_path", r.source_path}});
    total += r.bytes;
  }
  std::string body = absl::StrCat(
      "<p>",
      Escape(absl::StrCat("dflash-evald ", info.server_version, " on ", info.default_device, ", ",
                          info.intra_op_threads, " threads; resident bytes ", total,
                          "; jobs queued ", info.queued_jobs, ", running ", info.running_jobs)),
      "</p>", Table({"kind", "name", "device", "dtype", "bytes", "fingerprint", "source"}, rows));
  page.json = {{"resources", list},
               {"resident_bytes", total},
               {"device", info.default_device},
               {"queued_jobs", info.queued_jobs},
               {"running_jobs", info.running_jobs}};
  page.html = PageShell("Resident objects", body, "/api/resources");
  return page;
}

WebPage ErrorView(int status, const std::string& message) {
  WebPage page;
  page.status = status;
  page.json = {{"status", status}, {"error", message}};
  page.html = PageShell(absl::StrCat("Error ", status),
                        absl::StrCat("<p class=\"error\">", Escape(message), "</p><p>",
                                     Link("/", "back to the runs"), "</p>"),
                        "");
  return page;
}

}  // namespace dflash::web
