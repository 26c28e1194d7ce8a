// The end-of-run diagnosis names the right bottleneck on real pipelines with three
// injected faults: a slow reader (slow storage through FaultEnv), a slow CPU stage in the
// workers, and a slow consumer (a training step that sleeps).
#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "exporters/report.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
#include "stages/reader/fault_env.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

class DiagnosisTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(testing::MakeImageFolder(testing::TempDir("diag"), 2, 24));
  }
  static void TearDownTestSuite() { delete data_; }

  PipelineOptions Options() {
    PipelineOptions o;
    o.data = *data_;
    o.image_size = 32;
    o.batch_size = 8;
    o.num_workers = 2;
    o.epochs = 2;
    o.device = DeviceChoice::kCpu;
    return o;
  }

  // Run drains the pipeline, sleeping `step` per batch, and diagnoses the run.
  Diagnosis Run(const PipelineOptions& o, absl::Duration step = absl::ZeroDuration()) {
    auto p = Pipeline::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    const absl::Time start = absl::Now();
    while (true) {
      std::shared_ptr<const Batch> batch;
      bool end = false;
      EXPECT_TRUE((*p)->Next(&batch, &end).ok());
      if (end && (*p)->done()) break;
      if (batch != nullptr) absl::SleepFor(step);
    }
    RunFacts facts;
    facts.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
    facts.epochs = o.epochs;
    facts.num_workers = o.num_workers;
    facts.batch_size = o.batch_size;
    facts.cores_available = 2;
    (*p)->Stop();
    const Diagnosis d = Diagnose(Snapshot(*(*p)->stats(), facts));
    std::printf("diagnosis: %s\n", d.advice.c_str());
    for (const std::string& n : d.notes) std::printf("  %s\n", n.c_str());
    return d;
  }

  static std::string* data_;
};
std::string* DiagnosisTest::data_ = nullptr;

TEST_F(DiagnosisTest, SlowReaderIsNamedAsStorage) {
  FaultEnv env(Env::Default());
  env.Inject(".jpg", Fault{0, 0, -1, absl::Milliseconds(8)});  // Every read takes 8 ms.
  PipelineOptions o = Options();
  o.env = &env;
  const Diagnosis d = Run(o);
  EXPECT_EQ(d.bottleneck, "read");
  EXPECT_TRUE(d.loader_bound);
  EXPECT_TRUE(absl::StrContains(d.advice, "storage, not CPU")) << d.advice;
}

TEST_F(DiagnosisTest, SlowCpuStageInTheWorkersIsNamedWithMoreWorkersAdvice) {
  // A CPU-heavy stage next to decode and augment, on the same workers.
  static const bool registered =
      StageRegistry::Global()
          .RegisterFunction("heavy_filter", "burns ~4 ms of CPU per sample",
                            [](SampleContext&) {
                              const auto end =
                                  std::chrono::steady_clock::now() + std::chrono::milliseconds(4);
                              volatile uint64_t x = 0;
                              while (std::chrono::steady_clock::now() < end) x = x + 1;
                              return absl::OkStatus();
                            })
          .ok();
  ASSERT_TRUE(registered);
  PipelineOptions o = Options();
  o.epochs = 5;  // Long enough that the start-up and the last batch's tail are small.
  auto stages = DefaultStages(o);
  ASSERT_TRUE(stages.ok());
  stages->push_back(StageSpec{"heavy_filter", "", {}, 0});
  o.stages = *stages;
  const Diagnosis d = Run(o);
  EXPECT_EQ(d.bottleneck, "heavy_filter");
  EXPECT_TRUE(d.loader_bound);
  EXPECT_GT(d.busiest_utilization, 0.8);
  EXPECT_TRUE(absl::StrContains(d.advice, "raise num_workers")) << d.advice;
}

TEST_F(DiagnosisTest, SlowConsumerMeansTheLoaderKeepsUp) {
  PipelineOptions o = Options();
  o.epochs = 4;  // The wait for the first batch (slow under sanitizers) stays a small share.
  // 80 ms per batch: under TSan on a slow 2-core machine the workers need ~30 ms per
  // batch of 8, and at 40 ms the consumer's wait share reached 7% (CI, 2026-12-02).
  const Diagnosis d = Run(o, absl::Milliseconds(80));
  EXPECT_EQ(d.bottleneck, "consumer");
  EXPECT_FALSE(d.loader_bound);
  EXPECT_LT(d.consumer_wait_share, 0.05);
  EXPECT_TRUE(absl::StrContains(d.advice, "nothing to tune")) << d.advice;
}

}  // namespace
}  // namespace flowloader
