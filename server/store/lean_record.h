// File: lean_record.h
// A stored record's JSON text with every per-sample summary list emptied
// ("per_sample": [...] -> "per_sample": []), at the top of the result and
// in each suite dataset's result alike: what a listing that never shows
// them (the web view's) parses instead of the whole record. A 64-sample
// suite record is ~87 KB whole and ~29 KB without them, and parsing is most
// of a run page's time.
//
//   ASSIGN_OR_RETURN(JobRecord r, RecordFromJson(WithoutPerSample(text)));
//
// A lexical pass (strings and escapes honoured, so a label that spells the
// key is left alone), linear in the text; text it cannot follow is returned
// unchanged and the parser reports it.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace dflash::store {

std::string WithoutPerSample(absl::string_view json);

}  // namespace dflash::store
