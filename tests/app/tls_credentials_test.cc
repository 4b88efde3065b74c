// The TLS flags' combinations and unreadable PEM files (app/tls_credentials.h);
// a real handshake is tested end to end in security_e2e_test.
#include "app/tls_credentials.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::app {
namespace {

using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;

TEST(TlsCredentialsTest, NoTlsFlagsIsPlainText) {
  ServerConfig config;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> c = ServerCredentials(config);
  ASSERT_OK(c.status());
  EXPECT_NE(*c, nullptr);
}

TEST(TlsCredentialsTest, CertAndKeyGoTogether) {
  ServerConfig only_cert;
  only_cert.tls_cert = "/x/cert.pem";
  EXPECT_THAT(ServerCredentials(only_cert),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--tls-cert and --tls-key go together; got only --tls-cert"));
  ServerConfig only_key;
  only_key.tls_key = "/x/key.pem";
  EXPECT_THAT(ServerCredentials(only_key),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--tls-cert and --tls-key go together; got only --tls-key"));
}

TEST(TlsCredentialsTest, ClientCaNeedsServerCertificate) {
  ServerConfig config;
  config.tls_client_ca = "/x/ca.pem";
  EXPECT_THAT(ServerCredentials(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--tls-client-ca needs --tls-cert and --tls-key"));
}

TEST(TlsCredentialsTest, UnreadablePemNamesFlagAndPath) {
  TempDir dir;
  ServerConfig config;
  config.tls_cert = dir.WriteFile("cert.pem", "not checked here");
  config.tls_key = dir.Join("missing-key.pem");
  EXPECT_THAT(ServerCredentials(config),
              StatusIs(absl::StatusCode::kNotFound,
                       "cannot read --tls-key file '" + dir.Join("missing-key.pem") + "'"));
  config.tls_key = dir.WriteFile("key.pem", "not checked here");
  config.tls_client_ca = dir.Join("missing-ca.pem");
  EXPECT_THAT(ServerCredentials(config),
              StatusIs(absl::StatusCode::kNotFound,
                       "cannot read --tls-client-ca file '" + dir.Join("missing-ca.pem") + "'"));
  config.tls_cert = dir.Join("missing-cert.pem");
  EXPECT_THAT(ServerCredentials(config),
              StatusIs(absl::StatusCode::kNotFound,
                       "cannot read --tls-cert file '" + dir.Join("missing-cert.pem") + "'"));
}

}  // namespace
}  // namespace dflash::app
