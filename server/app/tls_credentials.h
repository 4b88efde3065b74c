// File: tls_credentials.h
// The gRPC server credentials the TLS flags ask for: TLS from --tls-cert and
// --tls-key (PEM files), with --tls-client-ca also requiring and verifying
// client certificates signed by that CA (mutual TLS); plain text without
// them. Example:
//
//   ASSIGN_OR_RETURN(auto credentials, ServerCredentials(config));
//   builder.AddListeningPort(config.listen, credentials, &port);
#pragma once

#include <memory>

#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "app/server_config.h"

namespace dflash::app {

// InvalidArgument when only one of --tls-cert/--tls-key is given, or
// --tls-client-ca without them; NotFound naming the flag and path of a PEM
// file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const ServerConfig& config);

}  // namespace dflash::app
