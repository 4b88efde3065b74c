// File: proto_convert.h
// proto <-> core types. Requests are checked here for shape: enums in range,
// counts not negative, names, ids and labels well formed, page and list sizes
// within the API's limits. Meaning (does the object exist, does the drafter
// fit the dataset) is checked by the core. One header per concept:
//   proto_fields.h      the shared field checks (names, ids, labels, counts)
//   resource_convert.h  server info, resources, weight reports, loads
//   eval_convert.h      EvalRequest -> EvalParams, EvalResult
//   job_convert.h       jobs, listings, CompareEvals
//   served_convert.h    calibrations (served counters against a job)
#pragma once

#include "service/eval_convert.h"      // IWYU pragma: export
#include "service/job_convert.h"       // IWYU pragma: export
#include "service/proto_fields.h"      // IWYU pragma: export
#include "service/resource_convert.h"  // IWYU pragma: export
#include "service/served_convert.h"    // IWYU pragma: export
