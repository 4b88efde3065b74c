// File: torch_guard.h
// libtorch reports errors by throwing c10::Error (and std::exception).
// TorchGuard runs a callable and turns any exception into an absl::Status,
// so no exception crosses a module boundary. Use it at weights/, model/,
// data/ and eval/ entry points:
//
//   return TorchGuard("projecting context", [&] { return fc(x); });
#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace dflash {

// Maps an exception message to a status: CUDA out-of-memory becomes
// ResourceExhausted; anything else from libtorch is Internal (our bug: the
// inputs were supposed to be validated before reaching the library).
absl::Status StatusFromException(absl::string_view what_we_did, const std::exception& e);

template <typename F>
auto TorchGuard(absl::string_view what_we_did, F&& f)
    -> std::conditional_t<std::is_void_v<std::invoke_result_t<F>>, absl::Status,
                          absl::StatusOr<std::invoke_result_t<F>>> {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
      std::forward<F>(f)();
      return absl::OkStatus();
    } else {
      return std::forward<F>(f)();
    }
  } catch (const std::exception& e) {
    return StatusFromException(what_we_did, e);
  } catch (...) {
    return absl::InternalError(absl::StrCat(what_we_did, ": unknown exception"));
  }
}

}  // namespace dflash
