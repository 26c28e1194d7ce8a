// Bad files never crash the pipeline and never silently lose a sample: skip counts and
// names each one; fail stops with the file and the reason.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/reader/fault_env.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Drain;
using testing::Drained;
using testing::LogCapture;
using testing::SmallCpuOptions;
using testing::TempDirForTest;
using testing::ValidJpeg;
using testing::WriteFile;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = TempDirForTest("bad_");
    ::mkdir((root_ + "/a").c_str(), 0755);
    ::mkdir((root_ + "/b").c_str(), 0755);
    for (int i = 0; i < 10; ++i) {
      WriteFile(absl::StrCat(root_, "/", i % 2 ? "a" : "b", "/good_", i, ".jpg"),
                ValidJpeg(40 + i, 50, i));
    }
    const std::string jpeg = ValidJpeg(64, 48, 42);
    WriteFile(root_ + "/a/empty.jpg", "");
    WriteFile(root_ + "/a/header_only.jpg", jpeg.substr(0, 200));
    WriteFile(root_ + "/b/half.jpg", jpeg.substr(0, jpeg.size() / 2));
    std::string noise(3000, '\0');
    for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 7919) >> 3);
    WriteFile(root_ + "/b/random.jpg", noise);
    WriteFile(root_ + "/b/text.jpg", "this is not an image\n");
  }

  PipelineOptions Options() { return SmallCpuOptions(root_, /*batch_size=*/4, &env_); }

  LogCapture log_;
  std::string root_;
  FaultEnv env_{Env::Default()};
};

TEST_F(BadInputTest, SkipDeliversEveryGoodSampleOnceAndCountsEachBadOneByReason) {
  PipelineOptions o = Options();
  o.epochs = 2;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Drained run = Drain(p->get());
  ASSERT_TRUE(run.status.ok()) << run.status;
  const std::multiset<std::string> delivered(run.keys.begin(), run.keys.end());
  const std::vector<SkippedSample>& skipped = run.skipped;
  EXPECT_EQ(run.epochs, 2);
  EXPECT_EQ(delivered.size(), 20u);
  for (const std::string& k : delivered) {
    EXPECT_TRUE(absl::StrContains(k, "good_")) << k;
    EXPECT_EQ(delivered.count(k), 2u) << k;
  }
  std::map<std::string, std::string> reason_of;
  for (const SkippedSample& s : skipped) reason_of[s.key] = s.reason;
  EXPECT_EQ(skipped.size(), 10u);
  EXPECT_EQ(reason_of["a/empty.jpg"], "empty_file");
  EXPECT_EQ(reason_of["a/header_only.jpg"], "truncated");
  EXPECT_EQ(reason_of["b/half.jpg"], "truncated");
  EXPECT_EQ(reason_of["b/random.jpg"], "unknown_format");
  EXPECT_EQ(reason_of["b/text.jpg"], "unknown_format");
  EXPECT_EQ((*p)->stats()->skipped.load(), 10u);
  const auto errors = (*p)->stats()->Stage("decode")->Errors();
  EXPECT_EQ(errors.at("truncated"), 4u);
  EXPECT_EQ(errors.at("unknown_format"), 4u);
  EXPECT_EQ(errors.at("empty_file"), 2u);
  // Each bad file is logged once a run, naming it; each epoch's skips are counted.
  EXPECT_EQ(log_.LinesNaming("b/half.jpg"), 1);
  EXPECT_EQ(log_.LinesNaming("epoch 0: 5 samples skipped"), 1);
  EXPECT_EQ(log_.LinesNaming("epoch 1: 5 samples skipped"), 1);
}

// The stages' error counts (the stage table, stats()["stages"], the metrics'
// flowloader_stage_errors_total) grow when a skipped sample's batch is delivered, as the
// summary's skips do: right after epoch 0, with the workers well into epoch 1 (every
// buffer filled ahead), both say epoch 0's five bad files. They counted when a worker
// failed the sample, so read-ahead made the stages show up to twice the skips.
TEST_F(BadInputTest, StageErrorsCountTheDeliveredSkipsNotTheReadAhead) {
  PipelineOptions o = Options();
  o.epochs = 2;
  o.shuffle = false;
  o.prefetch_batches = 4;  // 15 samples: an epoch's 4 batches fit the buffers ahead.
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const auto stage_errors = [&p] {
    std::map<std::string, uint64_t> by_reason;
    for (const char* name : {"read", "decode", "augment", "collate"}) {
      const StageStats* stage = (*p)->stats()->Stage(name);
      if (stage == nullptr) continue;
      for (const auto& [reason, n] : stage->Errors()) by_reason[reason] += n;
    }
    return by_reason;
  };
  bool end = false;
  while (!end) {
    std::shared_ptr<const Batch> batch;
    ASSERT_TRUE((*p)->Next(&batch, &end).ok());
  }
  // Let the workers read epoch 1 ahead into every free buffer.
  for (int i = 0; i < 100 && (*p)->stats()->Stage("decode")->items_in.load() < 30; ++i) {
    ::usleep(10000);
  }
  EXPECT_EQ((*p)->stats()->skipped.load(), 5u);
  EXPECT_EQ(stage_errors(), (*p)->stats()->SkipReasons());
  const Drained rest = Drain(p->get());
  ASSERT_TRUE(rest.status.ok()) << rest.status;
  EXPECT_EQ((*p)->stats()->skipped.load(), 10u);
  EXPECT_EQ(stage_errors(), (*p)->stats()->SkipReasons());
  EXPECT_EQ((*p)->stats()->Stage("decode")->TotalErrors(), 10u);
}

TEST_F(BadInputTest, FailPolicyStopsWithTheFileAndTheReason) {
  PipelineOptions o = Options();
  o.on_error = ErrorPolicy::kFail;
  o.shuffle = false;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok());
  const absl::Status status = Drain(p->get(), /*max_calls=*/100).status;
  ASSERT_FALSE(status.ok());
  // a/ sorts first: a/empty.jpg is the first bad file in dataset order.
  EXPECT_TRUE(absl::StrContains(status.message(), "a/empty.jpg")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "decode failed")) << status;
}

TEST_F(BadInputTest, MaxErrorsStopsAMostlyBrokenRun) {
  PipelineOptions o = Options();
  o.max_errors = 3;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok());
  const absl::Status status = Drain(p->get()).status;
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "more than max_errors=3 allows; last: "))
      << status;
}

// A path holding a NUL byte (a spec's "data: \"dir\\0/x\"") named the directory before the
// NUL to the system calls, warned about its entries and was refused as "flowloader: dir",
// the message cut at the NUL: refused at Create, the NUL shown.
TEST_F(BadInputTest, APathWithANulByteIsRefusedInOneLine) {
  PipelineOptions o = Options();
  o.data = root_ + std::string("\0/x", 3);
  auto p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  const std::string message(p.status().message());
  EXPECT_TRUE(absl::StrContains(message, "data holds a NUL byte")) << message;
  EXPECT_TRUE(absl::StrContains(message, root_ + "\\0/x")) << message;
  EXPECT_EQ(message.find('\0'), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos);
  o = Options();
  o.annotations = std::string("a.json\0", 7);
  p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::StrContains(p.status().message(), "annotations holds a NUL byte"))
      << p.status();
}

TEST_F(BadInputTest, MaxErrorFractionIsNamedAsTheUserWroteIt) {
  PipelineOptions o = Options();
  o.epochs = 20;              // 300 samples: the fraction is checked after 100.
  o.max_error_fraction = 0.01;  // What --max_errors=1% sets.
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok());
  const absl::Status status = Drain(p->get()).status;
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "more than max_errors=1% allows; last: "))
      << status;
  EXPECT_FALSE(absl::StrContains(status.message(), "max_error_fraction")) << status;
}

TEST_F(BadInputTest, TransientEioIsRetriedAndPermanentFaultsAreSkipped) {
  env_.Inject("good_3.jpg", Fault{EIO, 2});       // Recovers on the third attempt.
  env_.Inject("good_4.jpg", Fault{EIO, -1});      // Never recovers.
  env_.Inject("good_5.jpg", Fault{ENOENT, -1});   // Vanished after listing.
  env_.Inject("good_6.jpg", Fault{EACCES, -1});   // Unreadable.
  env_.Inject("good_7.jpg", Fault{0, 0, 100});    // Short read.
  auto p = Pipeline::Create(Options());
  ASSERT_TRUE(p.ok());
  const Drained run = Drain(p->get());
  ASSERT_TRUE(run.status.ok()) << run.status;
  const std::set<std::string> delivered(run.keys.begin(), run.keys.end());
  std::map<std::string, std::string> reason_of;
  for (const SkippedSample& s : run.skipped) reason_of[s.key] = s.reason;
  EXPECT_TRUE(delivered.count("a/good_3.jpg"));
  EXPECT_EQ(reason_of["b/good_4.jpg"], "read_error");
  EXPECT_EQ(reason_of["a/good_5.jpg"], "not_found");
  EXPECT_EQ(reason_of["b/good_6.jpg"], "permission_denied");
  EXPECT_EQ(reason_of["a/good_7.jpg"], "truncated");
  EXPECT_EQ(env_.Attempts("good_3.jpg"), 3);
  EXPECT_EQ(env_.Attempts("good_4.jpg"), 4);  // 1 + 3 retries.
  EXPECT_EQ(delivered.size(), 6u);
}

TEST_F(BadInputTest, UserStageThatThrowsBecomesAStatusNamingStageAndKey) {
  static bool registered = StageRegistry::Global()
                               .RegisterFunction("explode_on_good_2", "throws on one file",
                                                 [](SampleContext& s) -> absl::Status {
                                                   if (absl::StrContains(s.key(), "good_2."))
                                                     throw std::runtime_error("boom");
                                                   return absl::OkStatus();
                                                 })
                               .ok();
  ASSERT_TRUE(registered);
  for (const char* bad : {"a/empty.jpg", "a/header_only.jpg", "b/half.jpg", "b/random.jpg",
                          "b/text.jpg"}) {
    ASSERT_EQ(::unlink((root_ + "/" + bad).c_str()), 0);
  }
  PipelineOptions o = Options();
  o.on_error = ErrorPolicy::kFail;
  auto stages = DefaultStages(o);
  stages->insert(stages->begin() + 1, StageSpec{"explode_on_good_2", "", {}, 1});
  o.stages = *stages;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const absl::Status status = Drain(p->get()).status;
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "explode_on_good_2 failed on b/good_2.jpg"))
      << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "threw: boom")) << status;
}

}  // namespace
}  // namespace flowloader
