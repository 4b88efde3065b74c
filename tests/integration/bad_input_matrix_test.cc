// Bad input against the real dflash-evald, over every DrafterEval RPC: each
// request field that matters missing, empty, negative, huge and wrong-typed
// (raw bytes through grpc::GenericStub: wrong wire type, truncated bytes, an
// enum out of range, invalid UTF-8), each with its exact status code and
// full message (the table: bad_input_cases.h). The case table is one
// value-parameterised test: each case reports on its own, against one server
// started for the suite. After the suite the server still answers and a job
// stored before is unchanged, in the server and in its SQLite file. The
// WatchEval stream limit has a server of its own (stream_limit_test.cc).
#include <cctype>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "integration/bad_input_cases.h"
#include "integration/matrix_server.h"
#include "test_util/process.h"

namespace dflash::testing::bad_input {
namespace {

// A case as the test runner names it: its place in the table and its RPC
// and defect (the request bytes and expected message need the live server).
struct CaseName {
  size_t index = 0;
  std::string rpc, what;
};
void PrintTo(const CaseName& c, std::ostream* os) {
  *os << c.rpc << " " << c.what;
}

// The table's names, built once from a placeholder context.
const std::vector<CaseName>& CaseNames() {
  static const std::vector<CaseName>* names = [] {
    auto* out = new std::vector<CaseName>();
    const std::vector<Case> cases = MatrixCases({"/placeholder", "/placeholder", "ev-placeholder"});
    for (size_t i = 0; i < cases.size(); ++i) out->push_back({i, cases[i].rpc, cases[i].what});
    return out;
  }();
  return *names;
}

// "ValidateCheckpoint" + "path: absent file" -> "ValidateCheckpoint_path_absent_file";
// "block_size: -1" -> "..._block_size_minus_1".
std::string TestName(const CaseName& c) {
  std::string name = c.rpc + "_";
  for (size_t i = 0; i < c.what.size(); ++i) {
    const unsigned char ch = c.what[i];
    if (std::isalnum(ch)) {
      name += static_cast<char>(ch);
    } else if (ch == '-' && name.back() == '_' && i + 1 < c.what.size() &&
               std::isdigit(static_cast<unsigned char>(c.what[i + 1]))) {
      name += "minus_";  // a negative number, not a hyphen as in "UTF-8"
    } else if (name.back() != '_') {
      name += '_';
    }
  }
  while (name.back() == '_') name.pop_back();
  return name;
}

// The matrix: one test per case, on one server. The suite first stores a
// finished job (the cases about a finished job name it); afterwards
// (TearDownTestSuite) that job is unchanged and still the only one.
class BadInputMatrixTest : public MatrixServerTest, public ::testing::WithParamInterface<CaseName> {
 protected:
  static void SetUpTestSuite() {
    SetUpMatrixServer();
    if (jobs_ == nullptr) return;
    pb::EvalRequest small;
    small.set_drafter("m");
    small.set_dataset("d");
    small.set_max_samples(1);
    small.set_max_blocks(2);
    small.set_run("before-matrix");
    small.set_step(7);
    (*small.mutable_labels())["phase"] = "before";
    const std::string done_id = Submit(small).id();
    ASSERT_FALSE(done_id.empty());
    before_ = new pb::EvalJob(WaitFor(done_id, [](const pb::EvalJob& j) {
      return j.state() == pb::JOB_STATE_SUCCEEDED || j.state() == pb::JOB_STATE_FAILED;
    }));
    ASSERT_EQ(before_->state(), pb::JOB_STATE_SUCCEEDED) << before_->DebugString();
    listed_before_ = new pb::ListEvalsResponse(ListRun("before-matrix"));
    ASSERT_EQ(listed_before_->jobs_size(), 1);
    cases_ = new std::vector<Case>(MatrixCases({data_, DataCanon(), done_id}));
  }

  static void TearDownTestSuite() {
    if (cases_ != nullptr) ExpectNothingCorrupted(before_->id());
    delete cases_;
    cases_ = nullptr;
    delete listed_before_;
    listed_before_ = nullptr;
    delete before_;
    before_ = nullptr;
    TearDownMatrixServer();
  }

  void SetUp() override {
    MatrixServerTest::SetUp();
    ASSERT_NE(cases_, nullptr) << "the job stored before the matrix did not succeed";
  }

  // The server still answers; the job stored before is unchanged and is the
  // only job (no bad request queued one); the store checks clean.
  static void ExpectNothingCorrupted(const std::string& done_id) {
    Reply info = Call("GetServerInfo", "");
    EXPECT_TRUE(info.status.ok()) << info.status.error_message();
    google::protobuf::util::MessageDifferencer diff;
    std::string differences;
    diff.ReportDifferencesToString(&differences);
    EXPECT_TRUE(diff.Compare(*before_, GetEval(done_id))) << differences;
    EXPECT_TRUE(diff.Compare(*listed_before_, ListRun("before-matrix"))) << differences;
    Reply all = Call("ListEvals", "");
    ASSERT_TRUE(all.status.ok()) << all.status.error_message();
    ASSERT_EQ(all.messages.size(), 1u);
    pb::ListEvalsResponse listed_all;
    ASSERT_TRUE(listed_all.ParseFromString(all.messages[0]));
    ASSERT_EQ(listed_all.jobs_size(), 1);
    EXPECT_EQ(listed_all.jobs(0).id(), done_id);

    // The results store opens from outside the server and checks clean.
    const std::string db = dir_->Join("state") + "/results.sqlite3";
    CommandResult check =
        RunCommand({BinaryFromEnv("DFLASH_FIXTURE_PY"), "-c",
                    "import sqlite3, sys\n"
                    "db = sqlite3.connect(sys.argv[1])\n"
                    "print(db.execute('PRAGMA integrity_check').fetchone()[0])\n"
                    "print(db.execute('SELECT id, state, step FROM jobs').fetchall())\n",
                    db},
                   {}, 60);
    EXPECT_EQ(check.exit_code, 0) << check.err;
    EXPECT_EQ(check.out, "ok\n[('" + done_id + "', 'SUCCEEDED', 7)]\n") << check.err;
  }

  static pb::EvalJob* before_;
  static pb::ListEvalsResponse* listed_before_;
  static std::vector<Case>* cases_;
};

pb::EvalJob* BadInputMatrixTest::before_ = nullptr;
pb::ListEvalsResponse* BadInputMatrixTest::listed_before_ = nullptr;
std::vector<Case>* BadInputMatrixTest::cases_ = nullptr;

TEST_P(BadInputMatrixTest, ExactStatusAndMessage) {
  const CaseName& name = GetParam();
  ASSERT_LT(name.index, cases_->size());
  const Case& c = (*cases_)[name.index];
  ASSERT_EQ(c.rpc, name.rpc);
  ASSERT_EQ(c.what, name.what);
  Run(c);
}

INSTANTIATE_TEST_SUITE_P(Every, BadInputMatrixTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<CaseName>& info) {
                           return TestName(info.param);
                         });

// Every RPC of the service has cases, and the test names are distinct.
TEST(BadInputMatrixTableTest, EveryRpcHasCasesWithDistinctNames) {
  std::set<std::string> rpcs, names;
  for (const CaseName& c : CaseNames()) {
    rpcs.insert(c.rpc);
    EXPECT_TRUE(names.insert(TestName(c)).second) << "two cases are named " << TestName(c);
  }
  const google::protobuf::ServiceDescriptor* service =
      pb::GetEvalRequest::descriptor()->file()->FindServiceByName("DrafterEval");
  ASSERT_NE(service, nullptr);
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_EQ(rpcs.count(service->method(i)->name()), 1u)
        << service->method(i)->name() << " has no bad-input cases";
  }
}

}  // namespace
}  // namespace dflash::testing::bad_input
