// File: job_view.cc
// One job: what was asked, its state and progress (while it runs a small
// script polls the JSON twin, updates the progress in place and reloads the
// page once the job ends), the result (job_sections.h) and the recipe.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/recipe.h"
#include "store/record_json.h"
#include "web/html.h"
#include "web/job_sections.h"
#include "web/views.h"

namespace dflash::web {
namespace {

using types::JobRecord;

bool Live(const JobRecord& j) {
  return j.state == types::JobState::kRunning || j.state == types::JobState::kQueued;
}

// "12 of 900 blocks, 3 of 300 samples": the script below writes the same
// words from the twin's progress array.
std::string ProgressText(const types::JobProgress& p) {
  return absl::StrFormat("%d of %s%d blocks, %d of %d samples", p.blocks_done,
                         p.blocks_total_is_bound ? "&le;" : "", p.blocks_total, p.samples_done,
                         p.samples_total);
}

// Polls /api/jobs/ID every two seconds: the state and progress change in
// place (data-polls counts the updates); a job that ended reloads the page
// to show its result; an unreadable answer falls back to a slow reload.
std::string PollScript(const std::string& id) {
  return absl::StrCat(
      "<script>(function(){var n=0,s=document.getElementById('state'),"
      "g=document.getElementById('progress');"
      "function show(j){var p=j.progress;s.textContent=j.state;"
      "g.textContent=p[0]+' of '+(p[6]?'\\u2264':'')+p[1]+' blocks, '+p[2]+' of '+p[3]+"
      "' samples';g.setAttribute('data-polls',++n);}"
      "function poll(){fetch('/api/jobs/",
      UrlEncode(id),  // unreserved characters and %XX only: safe in the string
      "',{cache:'no-store'}).then(function(r){if(!r.ok)throw r.status;return r.json();})"
      ".then(function(j){if(j.state!=='RUNNING'&&j.state!=='QUEUED'){location.reload();return;}"
      "show(j);setTimeout(poll,2000);})"
      ".catch(function(){setTimeout(function(){location.reload();},10000);});}"
      "setTimeout(poll,2000);})();</script>");
}

std::string Summary(const JobRecord& j) {
  const types::EvalParams& p = j.request.params;
  std::string out = "<table>";
  absl::StrAppend(&out,
                  Row2("state", absl::StrCat("<span id=\"state\">",
                                             Escape(types::JobStateName(j.state)), "</span>")),
                  Row2("drafter", Escape(p.drafter.empty() ? p.checkpoint_path : p.drafter)),
                  Row2("dataset", Escape(p.dataset)), Row2("target", Escape(p.target)));
  if (!j.request.run.empty()) {
    absl::StrAppend(
        &out, Row2("run / step", absl::StrCat(Link(absl::StrCat("/runs/", UrlEncode(j.request.run)),
                                                   j.request.run),
                                              " / ", j.request.step)));
  }
  absl::StrAppend(&out, Row2("created", Time(j.create_unix_micros)),
                  Row2("ended", Time(j.end_unix_micros)),
                  Row2("device", Escape(absl::StrCat(j.device, " ", j.dtype))));
  if (Live(j)) {
    absl::StrAppend(&out, Row2("progress", absl::StrCat("<span id=\"progress\" data-polls=\"0\">",
                                                        ProgressText(j.progress), "</span>")));
  }
  if (!j.error_message.empty()) absl::StrAppend(&out, Row2("error", Escape(j.error_message)));
  return absl::StrCat(out, "</table>");
}

std::string RecipeTable(const JobRecord& j) {
  const core::Recipe recipe = core::RecipeOf(j);
  std::vector<std::vector<std::string>> rows;
  for (const core::RecipeField& f : recipe.fields)
    rows.push_back({Escape(f.name), Escape(f.value)});
  return absl::StrCat("<h2>Recipe ", Escape(recipe.fingerprint), "</h2>",
                      Table({"field", "value"}, rows));
}

}  // namespace

WebPage JobView(const JobRecord& job) {
  WebPage page;
  std::string body = Summary(job);
  // The recipe holds the result's fingerprints: a finished job's only.
  if (job.result) absl::StrAppend(&body, ResultSections(*job.result), RecipeTable(job));
  if (Live(job)) absl::StrAppend(&body, PollScript(job.id));
  page.json = nlohmann::json::parse(store::RecordToJson(job));
  page.html =
      PageShell(absl::StrCat("Job ", job.id), body, absl::StrCat("/api/jobs/", UrlEncode(job.id)));
  return page;
}

}  // namespace dflash::web
