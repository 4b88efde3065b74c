#include "app/listen_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::app {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ListenPolicyTest, LoopbackAddresses) {
  for (const char* a :
       {"127.0.0.1:50051", "127.1.2.3:0", "localhost:80", "LOCALHOST:1", "[::1]:50051",
        "ipv4:127.0.0.1:5", "ipv6:[::1]:5", "::1", "[::ffff:127.0.0.1]:1"}) {
    EXPECT_TRUE(IsLoopbackListen(a)) << a;
  }
  for (const char* a : {"0.0.0.0:50051", "[::]:50051", "10.0.0.1:1", "128.0.0.1:1", "example.com:1",
                        ":50051", "localhost.evil.com:1", "[::2]:1"}) {
    EXPECT_FALSE(IsLoopbackListen(a)) << a;
  }
}

TEST(ListenPolicyTest, RemoteNeedsAuthOrExplicitConsent) {
  EXPECT_OK(CheckListen("127.0.0.1:0", {}));
  EXPECT_THAT(CheckListen("0.0.0.0:50051", {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("refusing to listen on 0.0.0.0:50051: it is not a loopback "
                                 "address and no authentication is configured")));
  EXPECT_THAT(CheckListen("0.0.0.0:50051", {}).message(), HasSubstr("--insecure-allow-remote"));
  ListenSecurity tokens, certs, consent;
  tokens.has_tokens = true;
  certs.has_client_certs = true;
  consent.insecure_allow_remote = true;
  EXPECT_OK(CheckListen("0.0.0.0:50051", tokens));
  EXPECT_OK(CheckListen("0.0.0.0:50051", certs));
  EXPECT_OK(CheckListen("0.0.0.0:50051", consent));
}

}  // namespace
}  // namespace dflash::app
