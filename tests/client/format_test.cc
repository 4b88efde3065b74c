// The client's human renderings: numbers, bars and the +1 explanation.
#include "client/format.h"
#include "client/format_jobs.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::client {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(FormatTest, HumanBytesAndSeconds) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3ll << 30), "3.0 GiB");
  EXPECT_EQ(HumanSeconds(1.25), "1.2s");
  EXPECT_EQ(HumanSeconds(125), "2m 5s");
  EXPECT_EQ(HumanSeconds(3 * 86400 + 4 * 3600), "3d 4h");
}

TEST(FormatTest, EvalResultShowsTablesAndTheBonusToken) {
  pb::EvalResult r;
  r.set_mode(pb::EVAL_MODE_REPLAY);
  r.set_block_size(4);
  r.set_samples(2);
  r.set_blocks(10);
  r.set_accept_length_pooled(2.5);
  r.set_tau(2.25);
  for (int j = 1; j <= 3; ++j) {
    pb::PositionMetrics* p = r.add_positions();
    p->set_position(j);
    p->set_counted(10);
    p->set_accuracy(j == 1 ? 1.0 : 0.5);
    p->set_acceptance(0.5);
    p->set_conditional(0.5);
  }
  for (int h : {2, 3, 5, 0}) r.add_accepted_histogram(h);
  const std::string s = FormatEvalResult(r);
  EXPECT_THAT(s, HasSubstr("replay mode, block size 4: 2 sample(s), 10 block(s)"));
  EXPECT_THAT(s, HasSubstr("accept length (pooled over blocks) 2.500"));
  EXPECT_THAT(s, HasSubstr("tau (z-lab: mean over samples) 2.250"));
  EXPECT_THAT(s, HasSubstr("+ 1 bonus token from the target"));
  EXPECT_THAT(
      s, HasSubstr("     1        10   1.0000     0.5000      0.5000  " + std::string(30, '#')));
  EXPECT_THAT(s, HasSubstr("  n=2          5  " + std::string(15, '#') + std::string(15, '.')));
}

TEST(FormatTest, ServerInfoShowsTheCudaAllocatorOnlyWhereItHoldsMemory) {
  pb::ServerInfo info;
  pb::DeviceInfo* cpu = info.add_devices();
  cpu->set_name("cpu");
  pb::DeviceInfo* gpu = info.add_devices();
  gpu->set_name("cuda:0");
  gpu->set_allocator_allocated_bytes(3ll << 30);
  gpu->set_allocator_peak_allocated_bytes(5ll << 30);
  gpu->set_allocator_reserved_bytes(4ll << 30);
  gpu->set_allocator_peak_reserved_bytes(6ll << 30);
  gpu->set_allocator_alloc_retries(2);
  gpu->set_allocator_ooms(1);
  const std::string s = FormatServerInfo(info);
  EXPECT_THAT(s, HasSubstr("allocator: 3.0 GiB allocated (peak 5.0 GiB), 4.0 GiB reserved "
                           "(peak 6.0 GiB), 2 retries, 1 OOMs"));
  EXPECT_EQ(s.find("allocator:"), s.rfind("allocator:"));  // the GPU's line only
}

TEST(FormatTest, ReportPutsProblemsFirstAndHidesFoundTensors) {
  pb::WeightReport rep;
  rep.set_ok(false);
  rep.set_path("/m/ckpt");
  rep.set_missing(1);
  rep.add_problems("missing tensor 'layers.3.mlp.up_proj.weight'");
  pb::TensorEntry* found = rep.add_tensors();
  found->set_name("fc.weight");
  found->set_status(pb::TensorEntry::STATUS_FOUND);
  pb::TensorEntry* missing = rep.add_tensors();
  missing->set_name("layers.3.mlp.up_proj.weight");
  missing->set_status(pb::TensorEntry::STATUS_MISSING);
  missing->add_expected_shape(48);
  missing->add_expected_shape(32);
  const std::string s = FormatReport(rep, false);
  EXPECT_THAT(s, HasSubstr("FAILED  /m/ckpt"));
  EXPECT_LT(s.find("\nproblems\n"), s.find("\ntensors\n"));
  EXPECT_THAT(s, HasSubstr("expected [48, 32]"));
  EXPECT_EQ(s.find("fc.weight"), std::string::npos);
  EXPECT_NE(FormatReport(rep, true).find("fc.weight"), std::string::npos);
}

TEST(FormatTest, JsonUsesTheProtoMapping) {
  pb::Resource r;
  r.set_name("x");
  r.set_bytes(5);
  const std::string j = ToJson(r);
  EXPECT_THAT(j, HasSubstr("\"name\": \"x\""));
  EXPECT_THAT(j, HasSubstr("\"bytes\": \"5\""));      // int64 as a string, per the mapping
  EXPECT_THAT(j, HasSubstr("\"sourcePath\": \"\""));  // defaults printed
}

TEST(FormatTest, ResourceLineSaysHowManyBytesAreMapped) {
  pb::Resource r;
  r.set_name("d");
  r.set_bytes(3ll << 30);
  r.set_summary("V=8");
  EXPECT_THAT(FormatResource(r), Not(HasSubstr("mapped")));
  r.set_mapped_bytes(1536);
  EXPECT_THAT(FormatResource(r), HasSubstr("3.0 GiB  V=8 (1.5 KiB mapped)\n"));
}

pb::EvalJob DoneJob(const std::string& id, const std::string& drafter, int64_t step,
                    double accept_length, std::vector<double> accuracy) {
  pb::EvalJob j;
  j.set_id(id);
  j.set_state(pb::JOB_STATE_SUCCEEDED);
  j.mutable_request()->set_drafter(drafter);
  j.mutable_request()->set_dataset("gsm8k");
  j.mutable_request()->set_run("run-a");
  j.mutable_request()->set_step(step);
  j.mutable_create_time()->set_seconds(1714564984);  // 2024-05-01 12:03:04Z
  pb::EvalResult* r = j.mutable_result();
  r->set_block_size(static_cast<int>(accuracy.size()) + 1);
  r->set_blocks(40);
  r->set_accept_length_pooled(accept_length);
  r->set_tau(accept_length - 0.1);
  for (size_t i = 0; i < accuracy.size(); ++i) {
    pb::PositionMetrics* p = r->add_positions();
    p->set_position(static_cast<int>(i) + 1);
    p->set_accuracy(accuracy[i]);
  }
  return j;
}

TEST(FormatJobsTest, ProgressLineHasBarCountsPercentAndEta) {
  pb::EvalProgress p;
  p.set_blocks_done(12);
  p.set_blocks_total(40);
  p.set_elapsed_seconds(3.5);
  p.set_eta_seconds(125);
  EXPECT_EQ(FormatProgressLine(p, 10), "[###.......] 12/40 blocks  30%  elapsed 3.5s  ETA 2m 5s");
  p.set_blocks_done(40);
  EXPECT_EQ(FormatProgressLine(p, 10), "[##########] 40/40 blocks 100%  elapsed 3.5s");
  pb::EvalProgress empty;  // nothing known yet: no division by zero
  EXPECT_EQ(FormatProgressLine(empty, 4), "[....] 0/0 blocks   0%  elapsed 0.0s");
  // Replay: the total is a bound while walks run.
  pb::EvalProgress replay;
  replay.set_blocks_done(12);
  replay.set_blocks_total(40);
  replay.set_blocks_total_is_upper_bound(true);
  EXPECT_EQ(FormatProgressLine(replay, 10), "[###.......] 12/<=40 blocks  30%  elapsed 0.0s");
}

TEST(FormatJobsTest, StatusShowsStateRequestTimingsAndError) {
  pb::EvalJob j;
  j.set_id("job-1");
  j.set_state(pb::JOB_STATE_FAILED);
  j.mutable_request()->set_checkpoint_path("/m/run-a/step-4000/");
  j.mutable_request()->set_dataset("gsm8k");
  j.mutable_request()->set_run("run-a");
  j.mutable_request()->set_step(4000);
  (*j.mutable_request()->mutable_labels())["lr"] = "3e-4";
  j.mutable_create_time()->set_seconds(1714564984);
  j.mutable_start_time()->set_seconds(1714564986);
  j.mutable_end_time()->set_seconds(1714565111);
  j.set_error_code(9);
  j.set_error_message("drafter needs layer 9; dataset holds [1, 3, 5, 7]");
  const std::string s = FormatJobStatus(j);
  EXPECT_THAT(s, HasSubstr("job job-1  FAILED\n"));
  EXPECT_THAT(s, HasSubstr("  checkpoint   /m/run-a/step-4000/\n"));
  EXPECT_THAT(s, HasSubstr("  run / step   run-a / 4000\n"));
  EXPECT_THAT(s, HasSubstr("  labels       lr=3e-4\n"));
  EXPECT_THAT(s, HasSubstr("  created      2024-05-01 12:03:04Z\n"));
  EXPECT_THAT(s, HasSubstr("(queued 2.0s)"));
  EXPECT_THAT(s, HasSubstr("(ran 2m 5s)"));
  EXPECT_THAT(s, HasSubstr("  error        FAILED: FAILED_PRECONDITION: drafter needs layer 9"));
  EXPECT_EQ(DrafterLabel(j.request()), "step-4000");
  EXPECT_EQ(FormatTimestamp(google::protobuf::Timestamp()), "-");

  pb::EvalJob interrupted;
  interrupted.set_id("job-2");
  interrupted.set_state(pb::JOB_STATE_INTERRUPTED);
  interrupted.set_interrupted_by_restart(true);
  EXPECT_THAT(
      FormatJobOutcome(interrupted),
      HasSubstr("INTERRUPTED (the server stopped while it ran; 'dflash-eval resubmit job-2'"));
}

TEST(FormatJobsTest, ListIsATableWithTheNextPage) {
  pb::ListEvalsResponse list;
  *list.add_jobs() = DoneJob("job-2", "step-200", 200, 3.25, {0.9});
  pb::EvalJob* queued = list.add_jobs();
  queued->set_id("job-1");
  queued->set_state(pb::JOB_STATE_QUEUED);
  queued->mutable_request()->set_drafter("m");
  queued->mutable_request()->set_dataset("d");
  list.set_next_page_token("tok");
  const std::string s = FormatJobList(list);
  EXPECT_THAT(s, HasSubstr("ID    STATE       DRAFTER"));
  EXPECT_THAT(s, HasSubstr("job-2 SUCCEEDED   step-200             gsm8k        run-a             "
                           "200    3.250  2024-05-01 12:03:04Z\n"));
  EXPECT_THAT(s, HasSubstr("job-1 QUEUED      m                    d            -                  "
                           " -        -  -\n"));
  EXPECT_THAT(s, HasSubstr("more: --page-token tok\n"));
  EXPECT_LT(s.find("job-2"), s.find("job-1"));  // the server's order kept
  EXPECT_EQ(FormatJobList(pb::ListEvalsResponse()), "no evaluations\n");
}

TEST(FormatJobsTest, ComparisonShowsDifferencesFromTheFirstJob) {
  pb::CompareEvalsResponse cmp;
  *cmp.add_jobs() = DoneJob("job-a", "step-100", 100, 2.5, {0.8, 0.5});
  *cmp.add_jobs() = DoneJob("job-b", "step-200", 200, 2.75, {0.85, 0.45, 0.3});
  cmp.add_warnings("jobs were scored on different datasets: gsm8k, mtbench");
  const std::string s = FormatComparison(cmp);
  EXPECT_THAT(s, HasSubstr("job              job-a              job-b\n"));
  EXPECT_THAT(s, HasSubstr("accept length    2.500              2.750 (+0.250)\n"));
  EXPECT_THAT(s, HasSubstr("tau              2.400              2.650 (+0.250)\n"));
  EXPECT_THAT(s, HasSubstr("  pos 1          0.8000             0.8500 (+0.0500)\n"));
  EXPECT_THAT(s, HasSubstr("  pos 2          0.5000             0.4500 (-0.0500)\n"));
  EXPECT_THAT(s, HasSubstr("  pos 3          -                  0.3000\n"));  // only one job has it
  EXPECT_THAT(s, HasSubstr("warning: jobs were scored on different datasets"));
}

TEST(FormatJobsTest, HistoryHasStepAcceptLengthAndFirstPositions) {
  std::vector<pb::EvalJob> jobs = {DoneJob("job-a", "s100", 100, 2.5, {0.8, 0.5, 0.4, 0.3, 0.2}),
                                   DoneJob("job-b", "s200", 200, 2.75, {0.85})};
  const std::string s = FormatHistory("run-a", jobs);
  EXPECT_THAT(s, HasSubstr("run run-a: 2 evaluation(s)\n"));
  EXPECT_THAT(s, HasSubstr("      STEP ACCEPT LEN     TAU   ACC@1   ACC@2   ACC@3   ACC@4"));
  EXPECT_THAT(
      s,
      HasSubstr(
          "       100      2.500   2.400  0.8000  0.5000  0.4000  0.3000  gsm8k        job-a\n"));
  EXPECT_THAT(
      s,
      HasSubstr(
          "       200      2.750   2.650  0.8500       -       -       -  gsm8k        job-b\n"));
  EXPECT_EQ(FormatHistory("x", {}), "no finished evaluations for run 'x'\n");
}

TEST(FormatJobsTest, JobJsonUsesStableProtoNames) {
  const std::string j = ToJson(DoneJob("job-a", "m", 100, 2.5, {0.8}));
  EXPECT_THAT(j, HasSubstr("\"state\": \"JOB_STATE_SUCCEEDED\""));
  EXPECT_THAT(j, HasSubstr("\"acceptLengthPooled\": 2.5"));
  EXPECT_THAT(j, HasSubstr("\"step\": \"100\""));
  EXPECT_THAT(j, HasSubstr("\"createTime\": \"2024-05-01T12:03:04Z\""));
}

TEST(FormatJobsTest, IntervalsAndTheGateVerdict) {
  pb::EvalResult r;
  r.set_ci_resamples(1000);
  r.mutable_accept_length_ci()->set_lo(2.125);
  r.mutable_accept_length_ci()->set_hi(2.5);
  pb::PositionMetrics* p = r.add_positions();
  p->set_position(1);
  p->mutable_acceptance_ci()->set_lo(0.75);
  p->mutable_acceptance_ci()->set_hi(0.875);
  r.mutable_gate()->set_text("gate: pass against ev-1");
  EXPECT_EQ(FormatIntervals(r),
            "95% intervals (percentile bootstrap over samples, 1000 resamples):\n"
            "  accept length [2.1250, 2.5000]   tau -\n"
            "   pos accuracy          acceptance        conditional      \n"
            "     1 -                 [0.7500, 0.8750]  -                \n"
            "gate: pass against ev-1\n");
  EXPECT_EQ(FormatIntervals(pb::EvalResult()), "");
}

TEST(FormatJobsTest, DifferencesSayBetterWorseOrNoDifference) {
  pb::CompareEvalsResponse cmp;
  cmp.add_jobs()->set_id("ev-a");
  cmp.add_jobs()->set_id("ev-b");
  pb::MetricDifference* d = cmp.add_differences();
  d->set_metric("tau");
  d->set_job_index(1);
  d->set_delta(-0.25);
  d->mutable_delta_ci()->set_lo(-0.5);
  d->mutable_delta_ci()->set_hi(-0.125);
  d->set_verdict("worse");
  EXPECT_EQ(FormatDifferences(cmp),
            "paired differences against ev-a (95% paired bootstrap over the shared samples)\n"
            "  metric           job                delta 95% interval        verdict\n"
            "  tau              ev-b             -0.2500 [-0.5000, -0.1250]  worse\n");
}

TEST(FormatJobsTest, SuiteIsATableWithTheMacroAverage) {
  pb::EvalResult r;
  r.set_suite("d1,d2");
  r.set_block_size(4);
  r.set_accept_length_pooled(2.5);
  for (const char* name : {"d1", "d2"}) {
    pb::DatasetResult* d = r.add_suite_results();
    d->set_dataset(name);
    d->mutable_result()->set_samples(3);
    d->mutable_result()->set_accept_length_pooled(name[1] == '1' ? 3.0 : 2.0);
    d->mutable_result()->mutable_tau_ci()->set_lo(1.0);
    d->mutable_result()->mutable_tau_ci()->set_hi(2.0);
  }
  const std::string out = FormatEvalResult(r);
  EXPECT_THAT(out, HasSubstr("suite d1,d2: 2 datasets, anchor mode, block size 4"));
  EXPECT_THAT(out, HasSubstr("\n  d1                      3        0 3.000"));
  EXPECT_THAT(out, HasSubstr("0.000 [1.000, 2.000]"));
  EXPECT_THAT(out, HasSubstr("\n  macro average           0        0 2.500 "));
}

}  // namespace
}  // namespace dflash::client
