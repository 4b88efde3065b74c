// File: web_bench.cc
// Renders the run page (web/views.h RunView) of a synthetic run with N
// SUCCEEDED steps, each a 3-dataset suite job with intervals and 15
// positions, R times; prints the median milliseconds per page and its size.
//   web_bench [steps=200] [repeats=21]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "web/views.h"

namespace {

dflash::jobs::JobRecord Step(int64_t step) {
  dflash::jobs::JobRecord j;
  j.id = "ev-bench-" + std::to_string(step);
  j.request.run = "bench";
  j.request.step = step;
  j.state = dflash::jobs::JobState::kSucceeded;
  dflash::eval::EvalResult r;
  r.suite = "a,b,c";
  r.accept_length_pooled = 3 + 0.001 * step;
  r.tau = r.accept_length_pooled - 0.1;
  r.accept_length_ci =
      dflash::eval::Interval{r.accept_length_pooled - 0.2, r.accept_length_pooled + 0.2};
  for (int k = 1; k <= 15; ++k) {
    dflash::eval::PositionMetrics p;
    p.position = k;
    p.counted = 1000;
    p.acceptance = 0.9 / k;
    r.positions.push_back(p);
  }
  for (const char* d : {"a", "b", "c"}) {
    dflash::eval::DatasetResult part{d, {}};
    part.result.accept_length_pooled = r.accept_length_pooled;
    part.result.accept_length_ci = r.accept_length_ci;
    r.suite_results.push_back(part);
  }
  j.result = r;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 21;
  std::vector<dflash::jobs::JobRecord> jobs;
  for (int s = 1; s <= steps; ++s) jobs.push_back(Step(s * 100));
  std::vector<double> ms;
  size_t bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const dflash::web::WebPage page = dflash::web::RunView("bench", jobs, std::nullopt);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    bytes = page.html.size();
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "run page, %d steps x (suite of 3 + macro mean), %d repeats: median %.2f ms, "
      "%zu bytes of HTML (budget 200 ms: x%.1f under)\n",
      steps, repeats, ms[ms.size() / 2], bytes, 200.0 / ms[ms.size() / 2]);
  return 0;
}
