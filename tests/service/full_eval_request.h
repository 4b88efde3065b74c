// File: full_eval_request.h
// An EvalRequest with every plain field of the request set to a value that
// is not its default (the conversions' tests check each one comes through).
#pragma once

#include "dflash/eval/v1/eval.pb.h"

namespace dflash::service {

::dflash::eval::v1::EvalRequest FullEvalRequest();

}  // namespace dflash::service
