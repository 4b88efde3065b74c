#include "app/tls_credentials.h"

#include <fstream>
#include <sstream>
#include <string>

#include <grpcpp/security/server_credentials.h>

#include "common/status_macros.h"

namespace dflash::app {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read " + std::string(flag) + " file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const ServerConfig& config) {
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together; got only " +
        std::string(config.tls_cert.empty() ? "--tls-key" : "--tls-cert"));
  }
  if (config.tls_cert.empty()) {
    if (!config.tls_client_ca.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(config.tls_cert, "--tls-cert"));
  ASSIGN_OR_RETURN(pair.private_key, ReadPem(config.tls_key, "--tls-key"));
  options.pem_key_cert_pairs.push_back(pair);
  if (!config.tls_client_ca.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs, ReadPem(config.tls_client_ca, "--tls-client-ca"));
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace dflash::app
