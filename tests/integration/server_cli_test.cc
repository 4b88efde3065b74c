// End to end: the real dflash-evald on a loopback port, the real dflash-eval
// binary, reflection as grpcurl uses it, and the error paths' exit codes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "client/eval_client.h"
#include "gmock/gmock.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

using ::dflash::testing::CommandResult;
using ::dflash::testing::RunCommand;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;
using ::testing::Not;

namespace refl = ::grpc::reflection::v1alpha;

// A loopback port nothing listens on (bound, then released).
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class ServerCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    state_ = new testing::TempDir();
    auto server = ServerProcess::Start(state_->path());
    ASSERT_THAT(server, testing::IsOk());
    server_ = std::move(server).value().release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete state_;
  }

  static CommandResult Cli(std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {testing::BinaryFromEnv("DFLASH_EVAL")};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, env);
  }

  static std::vector<refl::ServerReflectionResponse> Reflect(
      const std::vector<refl::ServerReflectionRequest>& requests) {
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    auto stub = refl::ServerReflection::NewStub(channel);
    grpc::ClientContext ctx;
    auto stream = stub->ServerReflectionInfo(&ctx);
    std::vector<refl::ServerReflectionResponse> out;
    for (const auto& req : requests) {
      EXPECT_TRUE(stream->Write(req));
      refl::ServerReflectionResponse resp;
      EXPECT_TRUE(stream->Read(&resp));
      out.push_back(resp);
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
    return out;
  }

  static testing::TempDir* state_;
  static ServerProcess* server_;
};

testing::TempDir* ServerCliTest::state_ = nullptr;
ServerProcess* ServerCliTest::server_ = nullptr;

TEST_F(ServerCliTest, HealthReportsServing) {
  client::EvalClient c(server_->address(), std::chrono::seconds(10));
  EXPECT_OK(c.Health());
  CommandResult r = Cli({"--server", server_->address(), "health"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");
}

TEST_F(ServerCliTest, InfoPrintsReadableTable) {
  CommandResult r = Cli({"--server", server_->address(), "info"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("dflash-evald\n"));
  EXPECT_THAT(r.out, HasSubstr("version            0.1.0 ("));
  EXPECT_THAT(r.out, HasSubstr("libtorch           1.13"));
  EXPECT_THAT(r.out, HasSubstr("cuda               not available"));
  EXPECT_THAT(r.out, HasSubstr("default device     cpu"));
  EXPECT_THAT(r.out, HasSubstr("default dtype      fp32"));
  EXPECT_THAT(r.out, HasSubstr("intra-op threads   2"));
  EXPECT_THAT(r.out, HasSubstr("resident           0 target(s), 0 drafter(s), 0 dataset(s)"));
  EXPECT_THAT(r.out, HasSubstr("  cpu "));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("state dir          ", state_->path())));
}

TEST_F(ServerCliTest, JsonInfoIsTheProtoMessage) {
  CommandResult r = Cli({"--json", "info"}, {"DFLASH_EVAL_SERVER=" + server_->address()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["serverVersion"], "0.1.0");
  EXPECT_EQ(j["cudaAvailable"], false);
  EXPECT_EQ(j["defaultDevice"], "cpu");
  EXPECT_EQ(j["defaultDtype"], "DTYPE_FP32");
  EXPECT_EQ(j["intraOpThreads"], 2);
  ASSERT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["devices"][0]["name"], "cpu");
  EXPECT_GT(std::stoll(j["devices"][0]["totalMemoryBytes"].get<std::string>()), 0);
  EXPECT_EQ(j["residentDrafters"], 0);
  EXPECT_THAT(j["blas"].get<std::string>(), Not(HasSubstr("unknown")));
  // install-deps installs OpenBLAS; info names the kernels it loaded.
  EXPECT_THAT(j["blas"].get<std::string>(), HasSubstr("OpenBLAS ("));
  EXPECT_THAT(j["blas"].get<std::string>(), HasSubstr("), core "));
}

TEST_F(ServerCliTest, ReflectionListsAndDescribesTheService) {
  refl::ServerReflectionRequest list;
  list.set_list_services("*");
  refl::ServerReflectionRequest describe;
  describe.set_file_containing_symbol("dflash.eval.v1.DrafterEval");
  auto responses = Reflect({list, describe});
  ASSERT_EQ(responses.size(), 2u);

  std::vector<std::string> names;
  for (const auto& s : responses[0].list_services_response().service()) names.push_back(s.name());
  EXPECT_THAT(names, ::testing::Contains("dflash.eval.v1.DrafterEval"));
  EXPECT_THAT(names, ::testing::Contains("grpc.health.v1.Health"));

  ASSERT_TRUE(responses[1].has_file_descriptor_response());
  bool found = false;
  for (const std::string& bytes : responses[1].file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    for (const auto& service : file.service()) {
      if (service.name() != "DrafterEval") continue;
      found = true;
      std::vector<std::string> methods;
      for (const auto& m : service.method()) methods.push_back(m.name());
      EXPECT_THAT(methods, ::testing::IsSupersetOf({"GetServerInfo", "ValidateCheckpoint",
                                                    "LoadDrafter", "RunEval", "SubmitEval"}));
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(ServerCliTest, UnreachableServerIsOneLineAndExitTwo) {
  const std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  CommandResult r = Cli({"--server", address, "--timeout", "5", "info"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("dflash-eval: cannot reach server at " + address + ": "));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(ServerCliTest, UsageErrorsExit64) {
  CommandResult none = Cli({});
  EXPECT_EQ(none.exit_code, 64);
  EXPECT_THAT(none.err, HasSubstr("A subcommand is required"));

  CommandResult unknown = Cli({"info", "--no-such-flag"});
  EXPECT_EQ(unknown.exit_code, 64);
  EXPECT_THAT(unknown.err, HasSubstr("--no-such-flag"));

  // The request's rules are the server's (core/request_check.h): its words,
  // exit 1 (an RPC error), the same as SubmitEval and RunEval answer.
  const std::string server = server_->address();
  CommandResult no_drafter = Cli({"--server", server, "eval", "--dataset", "d"});
  EXPECT_EQ(no_drafter.exit_code, 1);
  EXPECT_THAT(no_drafter.err,
              HasSubstr("INVALID_ARGUMENT: give a resident drafter name or a checkpoint path\n"));
  CommandResult both =
      Cli({"--server", server, "eval", "--drafter", "a", "--checkpoint", "/x", "--dataset", "d"});
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.err, HasSubstr("INVALID_ARGUMENT: give a resident drafter name or a checkpoint "
                                  "path, not both"));
  CommandResult no_dataset = Cli({"--server", server, "eval", "--drafter", "a"});
  EXPECT_EQ(no_dataset.exit_code, 1);
  EXPECT_THAT(no_dataset.err, HasSubstr("INVALID_ARGUMENT: dataset is required"));
  // Flag syntax is still the command line's: exit 64 before any connection.
  CommandResult bad_mode = Cli({"eval", "--drafter", "a", "--dataset", "d", "--mode", "fast"});
  EXPECT_EQ(bad_mode.exit_code, 64);
  EXPECT_THAT(bad_mode.err, HasSubstr("fast"));

  CommandResult help = Cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("info"));
}

TEST(ServerStartupTest, PortInUseIsAnErrorNotAHang) {
  testing::TempDir a, b;
  auto first = ServerProcess::Start(a.path());
  ASSERT_THAT(first, testing::IsOk());
  CommandResult r = RunCommand({testing::BinaryFromEnv("DFLASH_EVALD"), "--listen",
                                (*first)->address(), "--state-dir", b.path()},
                               {}, 30);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out + r.err, HasSubstr("cannot listen on " + (*first)->address()));
}

TEST(ServerStartupTest, CudaWithoutCudaIsAClearError) {
  testing::TempDir a;
  CommandResult r = RunCommand({testing::BinaryFromEnv("DFLASH_EVALD"), "--device", "cuda:0",
                                "--state-dir", a.path(), "--listen", "127.0.0.1:0"},
                               {}, 30);
  if (r.exit_code == 0) GTEST_SKIP() << "this machine has CUDA";
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out + r.err, HasSubstr("--device cuda:0: CUDA is not available"));
  CommandResult bad = RunCommand(
      {testing::BinaryFromEnv("DFLASH_EVALD"), "--device", "tpu", "--state-dir", a.path()}, {}, 30);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.out + bad.err, HasSubstr("--device 'tpu' is not one of auto, cpu, cuda, cuda:N"));
}

TEST(ServerStartupTest, SigintShutsDownCleanly) {
  testing::TempDir a;
  auto server = ServerProcess::Start(a.path(), {"--device", "auto"});
  ASSERT_THAT(server, testing::IsOk());
  EXPECT_EQ((*server)->Stop(SIGINT), 0);
  EXPECT_THAT((*server)->log(), HasSubstr("received SIGINT, shutting down"));
  EXPECT_THAT((*server)->log(), HasSubstr("falling back to cpu"));
}

}  // namespace
}  // namespace dflash
