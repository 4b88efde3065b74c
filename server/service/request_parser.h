// File: request_parser.h
// A request's bytes parsed strictly, with one named error per defect.
//
// gRPC's generated handlers hand the bytes to protobuf's parser, which
// silently moves a known field sent with the wrong wire type into the unknown
// fields (the request then looks as if the field were absent), truncates an
// int32 varint to its low 32 bits, and takes any non-zero bool as true; and a
// request it cannot parse (truncated, invalid UTF-8 in a string) reaches the
// callback API as UNIMPLEMENTED with an empty message. ParseRequest walks the
// wire format against the message's descriptor first, so each of these is
// INVALID_ARGUMENT naming the field, what it held and what was expected:
//
//   request is not a valid dflash.eval.v1.GetEvalRequest: field 'id' (1) has
//   wire type 0 (varint); expected 2 (length-delimited)
//
// Field numbers the message does not declare are skipped (a newer client may
// send them), but their bytes must still be well formed. Enum values are not
// range-checked here (proto3 enums are open): the service names them.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dflash::service {

// Checks `wire` against `out`'s type, then parses it into `out`.
absl::Status ParseRequest(absl::string_view wire, google::protobuf::Message* out);
absl::Status ParseRequest(const grpc::ByteBuffer& wire, google::protobuf::Message* out);

// `message` serialized into a ByteBuffer (for raw-callback handlers).
grpc::ByteBuffer ToByteBuffer(const google::protobuf::MessageLite& message);

}  // namespace dflash::service
