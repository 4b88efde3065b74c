#include "service/status_convert.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace dflash::service {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      BoundedMessage(status.message()));
}

std::string BoundedMessage(absl::string_view message) {
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  size_t cut = kMaxStatusMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(message.substr(0, cut), "... (", message.size() - cut, " more bytes)");
}

}  // namespace dflash::service
