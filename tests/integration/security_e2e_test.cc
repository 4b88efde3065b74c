// Safe on a shared network, through the real dflash-evald and dflash-eval:
// bearer tokens (full and read-only), health left open, the loopback-only
// bind rule, TLS and mutual TLS with a CA made here by the openssl CLI, path
// escapes (.., absolute, symlinks, NUL bytes) and the limits (memory budget,
// blocks per evaluation). The bad-input matrix over every RPC, the request
// size limit and the WatchEval stream limit are in bad_input_matrix_test.cc.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::RunCommand;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;

constexpr char kFullToken[] = "full-token-for-tests-0123456789";
constexpr char kReadToken[] = "read-token-for-tests-0123456789";

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

class SecurityE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    data_ = dir_->Join("data");
    testing::MakeTinyFixture(data_);
    ASSERT_FALSE(::testing::Test::HasFailure());
    WriteFile(dir_->Join("tokens"),
              absl::StrCat("# test tokens\n", kFullToken, "\nro:", kReadToken, "\n"));
    WriteFile(dir_->Join("full.token"), absl::StrCat(kFullToken, "\n"));
    WriteFile(dir_->Join("read.token"), absl::StrCat(kReadToken, "\n"));
    WriteFile(dir_->Join("wrong.token"), "wrong-token-0123456789\n");
    auto server = ServerProcess::Start(
        dir_->Join("auth-state"), {"--data-root", data_, "--auth-token-file", dir_->Join("tokens"),
                                   "--max-eval-blocks", "4", "--max-request-bytes", "65536"});
    ASSERT_THAT(server, testing::IsOk());
    auth_ = std::move(server).value().release();
  }
  static void TearDownTestSuite() {
    delete auth_;
    auth_ = nullptr;
    delete dir_;
  }

  static CommandResult Cli(const std::string& server, std::vector<std::string> args,
                           std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {BinaryFromEnv("DFLASH_EVAL"), "--server", server};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, env, 120);
  }
  // On the token server with the full token.
  static CommandResult Admin(std::vector<std::string> args) {
    args.insert(args.begin(), {"--token-file", dir_->Join("full.token")});
    return Cli(auth_->address(), args);
  }

  // A raw stub, for what the CLI cannot send (NUL bytes, negative numbers).
  static std::unique_ptr<pb::DrafterEval::Stub> Stub() {
    return pb::DrafterEval::NewStub(
        grpc::CreateChannel(auth_->address(), grpc::InsecureChannelCredentials()));
  }
  static void Authorize(grpc::ClientContext* ctx) {
    ctx->AddMetadata("authorization", absl::StrCat("Bearer ", kFullToken));
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  }

  static testing::TempDir* dir_;
  static std::string data_;
  static ServerProcess* auth_;
};

testing::TempDir* SecurityE2eTest::dir_ = nullptr;
std::string SecurityE2eTest::data_;
ServerProcess* SecurityE2eTest::auth_ = nullptr;

// --- authentication --------------------------------------------------------

TEST_F(SecurityE2eTest, NoTokenIsUnauthenticated) {
  CommandResult r = Cli(auth_->address(), {"info"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("UNAUTHENTICATED: missing or invalid bearer token"));
}

TEST_F(SecurityE2eTest, WrongTokenIsUnauthenticatedAndNeverLogged) {
  CommandResult r = Cli(auth_->address(), {"--token-file", dir_->Join("wrong.token"), "ls"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("UNAUTHENTICATED: missing or invalid bearer token"));
  EXPECT_EQ(auth_->log().find("wrong-token-0123456789"), std::string::npos);
  EXPECT_EQ(auth_->log().find(kFullToken), std::string::npos);
}

TEST_F(SecurityE2eTest, TokenFromEnvironmentAndFileWinsOverIt) {
  CommandResult env =
      Cli(auth_->address(), {"info"}, {absl::StrCat("DFLASH_EVAL_TOKEN=", kFullToken)});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  CommandResult file_wins =
      Cli(auth_->address(), {"--token-file", dir_->Join("full.token"), "info"},
          {"DFLASH_EVAL_TOKEN=wrong-token-0123456789"});
  EXPECT_EQ(file_wins.exit_code, 0) << file_wins.err;
  CommandResult missing = Cli(auth_->address(), {"--token-file", dir_->Join("absent"), "info"});
  EXPECT_EQ(missing.exit_code, 64);
  EXPECT_THAT(missing.err, HasSubstr("cannot read --token-file file"));
}

TEST_F(SecurityE2eTest, ReadOnlyTokenReadsButCannotChangeAnything) {
  const std::vector<std::string> ro = {"--token-file", dir_->Join("read.token")};
  auto with_ro = [&](std::vector<std::string> args) {
    args.insert(args.begin(), ro.begin(), ro.end());
    return Cli(auth_->address(), args);
  };
  EXPECT_EQ(with_ro({"ls"}).exit_code, 0);
  EXPECT_EQ(with_ro({"info"}).exit_code, 0);
  EXPECT_EQ(with_ro({"list"}).exit_code, 0);
  CommandResult load = with_ro({"load-target", data_ + "/target", "--name", "ro-t"});
  EXPECT_EQ(load.exit_code, 1);
  EXPECT_THAT(load.err, HasSubstr("PERMISSION_DENIED: read-only token cannot call LoadTarget"));
  CommandResult unload = with_ro({"unload", "target", "whatever"});
  EXPECT_THAT(unload.err, HasSubstr("read-only token cannot call UnloadTarget"));
  CommandResult cancel = with_ro({"cancel", "job-x"});
  EXPECT_THAT(cancel.err, HasSubstr("read-only token cannot call CancelEval"));
  CommandResult eval = with_ro({"eval", "--drafter", "m", "--dataset", "d", "--detach"});
  EXPECT_THAT(eval.err, HasSubstr("read-only token cannot call SubmitEval"));
}

TEST_F(SecurityE2eTest, HealthAndReflectionStayOpen) {
  CommandResult r = Cli(auth_->address(), {"health"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // grpc.health.v1 without any token, through a raw stub too.
  auto channel = grpc::CreateChannel(auth_->address(), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(health->Check(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

// --- path escapes ----------------------------------------------------------

TEST_F(SecurityE2eTest, PathEscapesAreRefused) {
  // A directory outside the root with a target in it, and a link to it.
  const std::string outside = dir_->Join("outside");
  fs::create_directories(outside);
  fs::copy(data_ + "/target", outside + "/target", fs::copy_options::recursive);
  fs::create_symlink(outside + "/target", data_ + "/link-out");
  // A model directory inside the root whose shard file links outside.
  fs::create_directories(data_ + "/inner-link");
  for (const auto& e : fs::directory_iterator(data_ + "/target")) {
    const std::string name = e.path().filename().string();
    if (name == "config.json") {
      fs::copy(e.path(), data_ + "/inner-link/" + name);
    } else {
      fs::create_symlink(outside + "/target/" + name, data_ + "/inner-link/" + name);
    }
  }
  for (const std::string& path :
       {data_ + "/../outside/target", outside + "/target", std::string("/etc"),
        std::string("../../../../etc/passwd"), data_ + "/link-out"}) {
    CommandResult r = Admin({"load-target", path});
    EXPECT_EQ(r.exit_code, 1) << path;
    EXPECT_THAT(r.err, HasSubstr("PERMISSION_DENIED: path '" + path +
                                 "' is outside the server's data roots"));
  }
  CommandResult inner = Admin({"load-target", data_ + "/inner-link"});
  EXPECT_EQ(inner.exit_code, 1);
  EXPECT_THAT(inner.err, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(inner.err,
              HasSubstr("is a symbolic link to a place outside the server's data roots"));
  CommandResult validate = Admin({"validate", data_ + "/../outside/target"});
  EXPECT_THAT(validate.err, HasSubstr("PERMISSION_DENIED"));
  CommandResult dataset = Admin({"load-dataset", "/tmp"});
  EXPECT_THAT(dataset.err, HasSubstr("PERMISSION_DENIED: path '/tmp' is outside"));

  // A NUL byte: the CLI cannot pass one, a raw stub can.
  auto stub = Stub();
  grpc::ClientContext ctx;
  Authorize(&ctx);
  pb::LoadTargetRequest req;
  std::string with_nul = data_ + "/target";
  with_nul.push_back('\0');
  with_nul += "/../../x";
  req.set_path(with_nul);
  pb::LoadResponse resp;
  grpc::Status st = stub->LoadTarget(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("path contains a NUL byte"));
}

// --- limits ----------------------------------------------------------------

TEST_F(SecurityE2eTest, EvaluationOverTheBlockLimitIsRefusedBeforeScoring) {
  ASSERT_EQ(Admin({"load-target", data_ + "/target", "--name", "t"}).exit_code, 0);
  ASSERT_EQ(Admin({"load-dataset", data_ + "/dataset", "--name", "d"}).exit_code, 0);
  ASSERT_EQ(Admin({"load-drafter", data_ + "/drafter", "--name", "m"}).exit_code, 0);
  CommandResult big = Admin({"eval", "--drafter", "m", "--dataset", "d", "--sync"});
  EXPECT_EQ(big.exit_code, 1) << big.out;
  EXPECT_THAT(big.err, HasSubstr("RESOURCE_EXHAUSTED: this evaluation would score "));
  EXPECT_THAT(big.err, HasSubstr("the server allows at most 4 per evaluation; lower max_samples or "
                                 "max_blocks (server flag --max-eval-blocks)"));
  CommandResult small = Admin({"eval", "--drafter", "m", "--dataset", "d", "--sync",
                               "--max-samples", "1", "--max-blocks", "2"});
  EXPECT_EQ(small.exit_code, 0) << small.err;
}

TEST_F(SecurityE2eTest, LoadOverTheMemoryBudgetIsRefusedWithTheNumbers) {
  testing::TempDir state;
  auto server =
      ServerProcess::Start(state.Join("s"), {"--data-root", data_, "--max-resident-bytes", "1000"});
  ASSERT_THAT(server, testing::IsOk());
  const std::string addr = (*server)->address();
  CommandResult target = Cli(addr, {"load-target", data_ + "/target"});
  EXPECT_EQ(target.exit_code, 1);
  EXPECT_THAT(target.err, HasSubstr("RESOURCE_EXHAUSTED: loading target 'target' needs "));
  EXPECT_THAT(target.err, HasSubstr("(estimated from config.json) but 0 bytes (0.00 GiB) of the "
                                    "1000 bytes (0.00 GiB) resident budget is in use; unload "
                                    "something first (server flag --max-resident-bytes)"));
  CommandResult drafter = Cli(addr, {"load-drafter", data_ + "/drafter"});
  EXPECT_THAT(drafter.err, HasSubstr("estimated from the tensor headers"));
  // A dataset over the budget is not refused: it stays on disk (issue 30),
  // and the load says why, with the numbers; nothing of it is resident.
  CommandResult dataset = Cli(addr, {"load-dataset", data_ + "/dataset"});
  EXPECT_EQ(dataset.exit_code, 0) << dataset.err;
  EXPECT_THAT(dataset.out + dataset.err,
              HasSubstr("(estimated from the sizes of its files) but 0 bytes (0.00 GiB) of the "
                        "1000 bytes (0.00 GiB) resident budget is in use; unload something "
                        "first"));
  EXPECT_THAT(dataset.out + dataset.err, HasSubstr("streamed from disk instead"));
  CommandResult ls = Cli(addr, {"--json", "ls"});
  EXPECT_EQ(ls.exit_code, 0);
  EXPECT_THAT(ls.out, HasSubstr("\"streamed\": true")) << ls.out;
}

// --- binding ---------------------------------------------------------------

TEST_F(SecurityE2eTest, RemoteBindNeedsAuthOrExplicitConsent) {
  testing::TempDir state;
  // The gRPC port and the web view's follow one rule.
  for (const std::string flag : {"--listen", "--http-listen"}) {
    auto refused = ServerProcess::Start(state.Join("a" + flag), {flag, "0.0.0.0:0"});
    ASSERT_FALSE(refused.ok()) << flag;
    EXPECT_THAT(refused.status().message(),
                HasSubstr((flag == "--listen" ? "" : "--http-listen: ") +
                          std::string("refusing to listen on 0.0.0.0:0: it is not a loopback "
                                      "address and no authentication is configured")));
  }
  // Allowed, but nothing is sent to it here (only loopback traffic in tests).
  auto allowed =
      ServerProcess::Start(state.Join("b"), {"--listen", "0.0.0.0:0", "--insecure-allow-remote"});
  ASSERT_THAT(allowed, testing::IsOk());
  EXPECT_THAT((*allowed)->log(), HasSubstr("without authentication (--insecure-allow-remote)"));
  auto with_tokens = ServerProcess::Start(
      state.Join("c"), {"--listen", "0.0.0.0:0", "--auth-token-file", dir_->Join("tokens")});
  ASSERT_THAT(with_tokens, testing::IsOk());
}

TEST_F(SecurityE2eTest, WebViewAsksForATokenWhenTheServerHasThem) {
  testing::TempDir state;
  auto web = ServerProcess::Start(
      state.Join("b"), {"--auth-token-file", dir_->Join("tokens"), "--http-listen", "127.0.0.1:0",
                        "--http-port-file", state.Join("http-port")});
  ASSERT_THAT(web, testing::IsOk());
  std::string port;
  std::ifstream(state.Join("http-port")) >> port;
  const auto status = [&](const std::vector<std::string>& headers) {
    std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-o",
                                     "/dev/null",     "-w", "%{http_code}"};
    for (const std::string& h : headers) argv.insert(argv.end(), {"-H", h});
    argv.push_back("http://127.0.0.1:" + port + "/api/runs");
    return RunCommand(argv).out;
  };
  EXPECT_EQ(status({}), "401");
  EXPECT_EQ(status({"Authorization: Bearer wrong-token-0123456789"}), "401");
  EXPECT_EQ(status({absl::StrCat("Authorization: Bearer ", kFullToken)}), "200");
  EXPECT_EQ(status({absl::StrCat("Authorization: Bearer ", kReadToken)}), "200");  // it only reads
}

// --- TLS -------------------------------------------------------------------

class TlsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A CA, a server certificate for localhost and a client certificate.
    const std::string script =
        absl::StrCat("set -e; cd '", dir_.path(), "';",
                     "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
                     "-subj /CN=test-ca 2>/dev/null;",
                     "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext;",
                     "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
                     "-subj /CN=localhost 2>/dev/null;",
                     "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                     "-out server.pem -days 2 -extfile server.ext 2>/dev/null;",
                     "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
                     "-subj /CN=client 2>/dev/null;",
                     "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                     "-out client.pem -days 2 2>/dev/null;");
    CommandResult r = RunCommand({"/bin/sh", "-c", script}, {}, 60);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  CommandResult Cli(int port, std::vector<std::string> args) {
    std::vector<std::string> argv = {BinaryFromEnv("DFLASH_EVAL"), "--timeout", "10", "--server",
                                     absl::StrCat("localhost:", port)};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {}, 60);
  }

  testing::TempDir dir_;
};

TEST_F(TlsE2eTest, TlsServerAnswersTlsClientsOnly) {
  auto server = ServerProcess::Start(dir_.Join("s"), {"--tls-cert", dir_.Join("server.pem"),
                                                      "--tls-key", dir_.Join("server.key")});
  ASSERT_THAT(server, testing::IsOk());
  const int port = (*server)->port();
  CommandResult tls = Cli(port, {"--tls-ca", dir_.Join("ca.pem"), "info"});
  EXPECT_EQ(tls.exit_code, 0) << tls.err;
  CommandResult plain = Cli(port, {"info"});
  EXPECT_EQ(plain.exit_code, 2) << plain.err;  // UNAVAILABLE
  EXPECT_THAT(plain.err, HasSubstr("cannot reach server at localhost:"));
  CommandResult wrong_ca = Cli(port, {"--tls-ca", dir_.Join("client.pem"), "info"});
  EXPECT_EQ(wrong_ca.exit_code, 2) << wrong_ca.err;
}

TEST_F(TlsE2eTest, MutualTlsNeedsAClientCertificate) {
  auto server = ServerProcess::Start(
      dir_.Join("s"), {"--tls-cert", dir_.Join("server.pem"), "--tls-key", dir_.Join("server.key"),
                       "--tls-client-ca", dir_.Join("ca.pem")});
  ASSERT_THAT(server, testing::IsOk());
  const int port = (*server)->port();
  CommandResult with_cert =
      Cli(port, {"--tls-ca", dir_.Join("ca.pem"), "--tls-cert", dir_.Join("client.pem"),
                 "--tls-key", dir_.Join("client.key"), "info"});
  EXPECT_EQ(with_cert.exit_code, 0) << with_cert.err;
  CommandResult without = Cli(port, {"--tls-ca", dir_.Join("ca.pem"), "info"});
  EXPECT_EQ(without.exit_code, 2) << without.err;
}

TEST_F(TlsE2eTest, HalfConfiguredTlsIsAStartupError) {
  auto server = ServerProcess::Start(dir_.Join("s"), {"--tls-cert", dir_.Join("server.pem")});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(),
              HasSubstr("--tls-cert and --tls-key go together; got only --tls-cert"));
}

}  // namespace
}  // namespace dflash
