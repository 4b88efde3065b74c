#include "service/status_convert.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/fix_hint.h"

namespace dflash::service {

std::string FixHintText(FixHint hint) {
  switch (hint) {
    case FixHint::kLoadTarget: return "(dflash-eval load-target PATH)";
    case FixHint::kLoadDataset: return "(dflash-eval load-dataset PATH)";
    case FixHint::kLoadDrafter: return "(dflash-eval load-drafter PATH)";
    case FixHint::kNameTarget: return "with --target";
    case FixHint::kNameDataset: return "with --dataset";
    case FixHint::kNameDrafter: return "with --drafter";
    case FixHint::kChooseName: return "(--name)";
    case FixHint::kResidentBudget: return "(server flag --max-resident-bytes)";
    case FixHint::kEvalBlockLimit: return "(server flag --max-eval-blocks)";
  }
  return "";
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::optional<FixHint> hint = GetFixHint(status);
  return grpc::Status(
      static_cast<grpc::StatusCode>(status.code()),
      BoundedMessage(hint.has_value() ? absl::StrCat(status.message(), " ", FixHintText(*hint))
                                      : std::string(status.message())));
}

std::string BoundedMessage(absl::string_view message) {
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  size_t cut = kMaxStatusMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(message.substr(0, cut), "... (", message.size() - cut, " more bytes)");
}

}  // namespace dflash::service
