// File: web_site.h
// The web view's routes (docs/web.md): fetches from the job service and
// the core, renders views.h, and answers every bad request with a readable
// 400 / 404 page. Read-only: no route changes anything. Torch- and
// gRPC-free; web_server.h puts it on HTTP.
//
//   /                       runs            /api/runs
//   /runs/NAME[?step=S]     one run         /api/runs/NAME
//   /jobs/ID                one job         /api/jobs/ID
//   /compare?jobs=A,B[,..]  paired diffs    /api/compare?jobs=A,B
//   /resources              resident objs   /api/resources
#pragma once

#include <map>
#include <string>

#include "core/eval_core.h"
#include "core/job_service.h"
#include "web/views.h"

namespace dflash::web {

struct WebReply {
  int status = 200;
  std::string content_type;  // "text/html; charset=utf-8" or "application/json"
  std::string body;
};

class WebSite {
 public:
  WebSite(core::JobService& jobs, core::EvalCore& core) : jobs_(jobs), core_(core) {}

  // `path` already percent-decoded; `query` its parameters.
  WebReply Handle(const std::string& path, const std::multimap<std::string, std::string>& query);

 private:
  WebPage Route(const std::string& path, const std::multimap<std::string, std::string>& query);

  core::JobService& jobs_;
  core::EvalCore& core_;
};

}  // namespace dflash::web
