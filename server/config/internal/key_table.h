// File: key_table.h
// Internal to config/: every top-level key of a drafter's config.json this
// service knows, in one declarative table, and what it does with each:
// reads it (implemented), reads it as a draft key (dflash_config first, then
// the top level; some only for DFlash 2), skips it (known not to change the
// computation: listed in DrafterConfig::skipped_keys) or refuses it by name
// (with why). Any other key is unknown: a warning naming it.
//
// The lists the readers use (the draft keys, the DFlash 2 keys) and the
// check of the top level (draft_keys.h, CheckTopLevelKeys) are derived from
// this table, and the readers look every top-level key up through
// CheckReadable (config_fields.h, TopLevel): a reader that reads a key the
// table does not declare gets an InternalError naming it.
//
//   const KeyRule* rule = FindKeyRule("quantization_config");
//   if (rule != nullptr && rule->kind == KeyKind::kRefused) ... rule->why ...
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dflash::config::internal {

enum class KeyKind {
  kImplemented,   // read at the top level (drafter_config_reader.cc, draft_keys.cc)
  kDraft,         // a draft key of DFlash 1 and 2: dflash_config, else the top level
  kDFlash2Draft,  // a draft key only a DFlash 2 drafter has (refused for DFlash 1)
  kHarmless,      // known not to change a drafter's forward: skipped, and said so
  kRefused,       // changes the computation in a way not implemented: refused
};

struct KeyRule {
  const char* key;
  KeyKind kind;
  const char* why = "";  // kRefused: the end of the message ("... is present: <why>")
};

// The table, in the order the draft keys are read and named in messages.
// Every key appears once.
const std::vector<KeyRule>& KeyTable();

// The rule for `key`, or nullptr when the table does not know it.
const KeyRule* FindKeyRule(absl::string_view key);

// The keys of these kinds, in table order.
std::vector<std::string> KeysOfKind(std::initializer_list<KeyKind> kinds);

// The draft keys (kDraft and kDFlash2Draft) and the DFlash 2 ones alone, in
// table order.
const std::vector<std::string>& DraftKeyNames();
const std::vector<std::string>& DFlash2KeyNames();

// OK when the table lists `key` as one of `kinds`; otherwise InternalError
// naming the key and what the table says of it: a reader out of step with
// the table, which is our bug.
absl::Status CheckReadable(absl::string_view key, std::initializer_list<KeyKind> kinds);

}  // namespace dflash::config::internal
