// File: pickle_reader.h
// A restricted unpickler for the data.pkl of torch.save archives, in the
// spirit of PyTorch's weights_only loader: no code runs, only an allowlist of
// globals is accepted, and every read and container is bounded so that
// adversarial bytes yield InvalidArgument (never a crash or a huge
// allocation). Torch-free (absl + std only) so that it can be fuzzed alone.
//
//   ASSIGN_OR_RETURN(PickleValuePtr root, ParsePickle(bytes));
//   if (root->kind == PickleKind::kDict) for (auto& [k, v] : root->dict) ...
//
// Supported: protocols 2-5, the opcodes torch.save emits for state dicts and
// training checkpoints (see pickle_reader.cc). The values it yields:
// pickle_value.h. Allowed globals: the table kAllowedGlobals in
// pickle_globals.cc (collections.OrderedDict, the torch
// tensor/parameter rebuild functions, torch.<Type>Storage classes); a refusal
// lists them.
// Persistent ids ('storage', torch.FloatStorage, '0', 'cpu', numel) become
// kStorage values; _rebuild_tensor_v2 becomes a kTensor value (a reference
// into a storage record, no bytes). BUILD on an OrderedDict (the _metadata
// attribute of state_dict()) is accepted and its state dropped.
//
// Recursive (self-containing) structures are refused: a list or dict may not
// be modified once it has been placed inside another value.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formats/pickle_limits.h"
#include "formats/pickle_value.h"

namespace dflash::formats {

// Parses one pickle, up to STOP (later bytes are ignored, as in Python). Bad or
// unsupported input -> InvalidArgument starting with "pickle: ", e.g.
// "pickle: global 'os.system' is not allowed (allowed: ...)",
// "pickle: unknown opcode 0xff at byte 12", "pickle: truncated at byte 40".
absl::StatusOr<PickleValuePtr> ParsePickle(absl::string_view data, const PickleLimits& limits = {});

}  // namespace dflash::formats
