// File: format_fields.h
// A message's set scalar fields as "name value" lines, found by proto
// reflection: what --detail prints for the result fields that no other
// section shows, so a metric added to eval.proto appears there without a
// client edit.
//
//   FormatOtherFields(result, {"tau", "blocks"})
//   // "other fields\n  drafter_fingerprint    sha:..\n  context_positions    1234\n"
#pragma once

#include <set>
#include <string>

#include <google/protobuf/message.h>

namespace dflash::client {

// Every singular non-message field of `m` that is set (proto3: not its
// default) and not named in `shown`, in field-number order, under an
// "other fields" heading; "" when there is none.
std::string FormatOtherFields(const google::protobuf::Message& m,
                              const std::set<std::string>& shown);

}  // namespace dflash::client
