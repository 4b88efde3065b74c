#include "web/view_records.h"

namespace dflash::testing {

types::JobRecord Job(const std::string& id, const std::string& run, int64_t step, double accept) {
  types::JobRecord j;
  j.id = id;
  j.request.run = run;
  j.request.step = step;
  j.request.params.dataset = "d";
  j.state = types::JobState::kSucceeded;
  types::EvalResult r;
  r.accept_length_pooled = accept;
  r.tau = accept - 0.1;
  r.accept_length_ci = types::Interval{accept - 0.2, accept + 0.2};
  j.result = r;
  j.create_unix_micros = 1000000 * (1700000000 + step);
  return j;
}

}  // namespace dflash::testing
