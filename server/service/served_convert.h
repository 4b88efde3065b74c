// File: served_convert.h
// served/ -> proto: a calibration of served counters against a job.
#pragma once

#include "dflash/eval/v1/eval.pb.h"
#include "served/calibration.h"

namespace dflash::service {

namespace pb = ::dflash::eval::v1;

void ToProto(const served::Calibration& in, pb::Calibration* out);

}  // namespace dflash::service
