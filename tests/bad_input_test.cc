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
#include "stages/core/log.h"
#include "stages/reader/fault_env.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::TempDir;
using testing::ValidJpeg;
using testing::WriteFile;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetMinLogLevel(LogLevel::kInfo);
    SetLogSink([this](LogLevel, absl::string_view line) { log_.emplace_back(line); });
    root_ = TempDir("bad_" + std::string(::testing::UnitTest::GetInstance()
                                             ->current_test_info()
                                             ->name()));
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
  void TearDown() override { SetLogSink(nullptr); }

  PipelineOptions Options() {
    PipelineOptions o;
    o.data = root_;
    o.image_size = 16;
    o.batch_size = 4;
    o.num_workers = 2;
    o.device = DeviceChoice::kCpu;
    o.env = &env_;
    return o;
  }

  std::string root_;
  std::vector<std::string> log_;
  FaultEnv env_{Env::Default()};
};

TEST_F(BadInputTest, SkipDeliversEveryGoodSampleOnceAndCountsEachBadOneByReason) {
  PipelineOptions o = Options();
  o.epochs = 2;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::multiset<std::string> delivered;
  std::vector<SkippedSample> skipped;
  int epochs = 0;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    ASSERT_TRUE((*p)->Next(&batch, &end).ok());
    if (end) {
      ++epochs;
      if ((*p)->done()) break;
      continue;
    }
    delivered.insert(batch->keys.begin(), batch->keys.end());
    skipped.insert(skipped.end(), batch->skipped.begin(), batch->skipped.end());
  }
  EXPECT_EQ(epochs, 2);
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
  // Each skip is logged, naming the file.
  int logged_half = 0;
  for (const std::string& line : log_) logged_half += absl::StrContains(line, "b/half.jpg");
  EXPECT_EQ(logged_half, 2);  // Once per epoch.
}

TEST_F(BadInputTest, FailPolicyStopsWithTheFileAndTheReason) {
  PipelineOptions o = Options();
  o.on_error = ErrorPolicy::kFail;
  o.shuffle = false;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok());
  absl::Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    status = (*p)->Next(&batch, &end);
    if (end && (*p)->done()) break;
  }
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
  absl::Status status;
  while (status.ok()) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    status = (*p)->Next(&batch, &end);
    if (end && (*p)->done()) break;
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "max_errors=3")) << status;
}

TEST_F(BadInputTest, TransientEioIsRetriedAndPermanentFaultsAreSkipped) {
  env_.Inject("good_3.jpg", Fault{EIO, 2});       // Recovers on the third attempt.
  env_.Inject("good_4.jpg", Fault{EIO, -1});      // Never recovers.
  env_.Inject("good_5.jpg", Fault{ENOENT, -1});   // Vanished after listing.
  env_.Inject("good_6.jpg", Fault{EACCES, -1});   // Unreadable.
  env_.Inject("good_7.jpg", Fault{0, 0, 100});    // Short read.
  auto p = Pipeline::Create(Options());
  ASSERT_TRUE(p.ok());
  std::set<std::string> delivered;
  std::map<std::string, std::string> reason_of;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    ASSERT_TRUE((*p)->Next(&batch, &end).ok());
    if (end && (*p)->done()) break;
    if (end) continue;
    delivered.insert(batch->keys.begin(), batch->keys.end());
    for (const auto& s : batch->skipped) reason_of[s.key] = s.reason;
  }
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
  absl::Status status;
  while (status.ok()) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    status = (*p)->Next(&batch, &end);
    if (end && (*p)->done()) break;
  }
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(), "explode_on_good_2 failed on b/good_2.jpg"))
      << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "threw: boom")) << status;
}

}  // namespace
}  // namespace flowloader
