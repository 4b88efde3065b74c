// File: job_sections.h
// The job page's result sections (job_view.cc lays them out): the headline
// table with DFlash 2's selector diagnostics, the per-position table and
// chart, the histogram, the draft-length curve, sampled acceptance and
// slices. Internal to web/.
#pragma once

#include <string>

#include "types/eval_types.h"

namespace dflash::web {

// The whole result as HTML, suite datasets each in their own section.
std::string ResultSections(const types::EvalResult& r);

}  // namespace dflash::web
