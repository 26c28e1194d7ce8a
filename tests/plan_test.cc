// plan_test.cc: Pipeline::PlanMemory is the plan Pipeline::Create checks, made without
// allocating the batch pool, and it is what a run really holds: the peak RSS a real run
// adds to the process is within 10% of the plan's total.
//
// For the plan's parts to be really held, the dataset fills decode's seek index budget:
// 200 tall JPEGs (256×4096, 4:2:0) cost a full index of 256 MCU rows × 16 points × 12 bytes
// (~48 KiB) each, 9.4 MiB in all, above the 8 MiB budget (TallFilesFillTheSeekIndexBudget
// checks this on a Decoder of its own). The batch pool (3 × 32 × 3×224² float32) is mapped
// with its pages populated at Create; decode's scratch is per worker.
//
// RSS is measured from /proc/self/status: "5" written to /proc/self/clear_refs resets
// VmHWM (the peak) to the current RSS (Linux >= 4.0). Sanitizer builds keep freed memory
// in quarantine and map shadow memory, so their RSS says nothing of the plan: there the
// RSS comparisons are skipped (the runs still happen).
#include <malloc.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/resources.h"
#include "stages/decode/decoder.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FLOWLOADER_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FLOWLOADER_SANITIZED 1
#endif
#endif

namespace flowloader {
namespace {

#ifdef FLOWLOADER_SANITIZED
constexpr bool kRssIsMeaningful = false;
#else
constexpr bool kRssIsMeaningful = true;
#endif

constexpr int kClasses = 2;
constexpr int kPerClass = 100;
constexpr int kWidth = 256;
constexpr int kHeight = 4096;
constexpr int64_t kSeekIndexMb = 8;


// ResetPeakRss makes VmHWM the current RSS and returns that RSS, after handing freed heap
// pages back to the kernel (so that what the pipeline allocates shows as growth rather
// than reusing pages the test's dataset generation left resident).
int64_t ResetPeakRss() {
  malloc_trim(0);
  ResetPeakResident();
  return ResidentBytes();
}

class PlanTest : public ::testing::Test {
 protected:
  // One tall JPEG, written kClasses × kPerClass times, each copy made distinct by a
  // comment segment after SOI: the seek index is keyed by a hash of the file's bytes, so
  // each copy is a file of its own to it (and one image is synthesized instead of 200).
  static void SetUpTestSuite() {
    data_ = new std::string(testing::TempDir("plan_tall_jpegs"));
    const std::string jpeg = testing::ValidJpeg(kWidth, kHeight);
    for (int c = 0; c < kClasses; ++c) {
      const std::string dir = absl::StrCat(*data_, "/class_", c);
      ::mkdir(dir.c_str(), 0755);
      for (int i = 0; i < kPerClass; ++i) {
        const std::string comment = absl::StrCat("plan_test file ", c, "/", i);
        const size_t length = comment.size() + 2;  // The length field counts itself.
        const std::string segment =
            absl::StrCat("\xFF\xFE", std::string(1, static_cast<char>(length >> 8)),
                         std::string(1, static_cast<char>(length & 0xFF)), comment);
        testing::WriteFile(absl::StrCat(dir, "/img_", i, ".jpg"),
                           absl::StrCat(jpeg.substr(0, 2), segment, jpeg.substr(2)));
      }
    }
  }
  static void TearDownTestSuite() { delete data_; }

  // Options are batch 32 × 3×224² float32, prefetch 3, 2 workers, 2 epochs, CPU only,
  // decode's seek index at kSeekIndexMb.
  static PipelineOptions Options() {
    PipelineOptions o;
    o.data = *data_;
    o.batch_size = 32;
    o.prefetch_batches = 3;
    o.num_workers = 2;
    o.epochs = 2;
    o.device = DeviceChoice::kCpu;
    absl::StatusOr<std::vector<StageSpec>> stages = DefaultStages(o);
    EXPECT_TRUE(stages.ok()) << stages.status();
    o.stages = *std::move(stages);
    o.stages[1].args["seek_index_mb"] = absl::StrCat(kSeekIndexMb);
    // Baseline files never touch the codec budget (a bound for progressive JPEGs and
    // lossless WebPs): 1 MiB keeps it from dominating the comparison with peak RSS.
    o.stages[1].args["max_decode_mb"] = "1";
    return o;
  }

  static std::string* data_;
};

std::string* PlanTest::data_ = nullptr;

TEST_F(PlanTest, PlanIsWhatCreateChecks) {
  const PipelineOptions o = Options();
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  std::vector<std::pair<std::string, int64_t>> created = (*pipeline)->stats()->memory_plan;
  ASSERT_FALSE(created.empty());
  ASSERT_EQ(created.back().first, "available_bytes");
  created.pop_back();
  EXPECT_EQ(plan->BytesByKey(), created);
  const int64_t sample_bytes = int64_t{3} * 224 * 224 * 4;
  std::map<std::string, int64_t> bytes(created.begin(), created.end());
  EXPECT_EQ(bytes["batch_pool_bytes"], 3 * 32 * sample_bytes);
  // The budget as the dataset's files can use it (8 KiB each), within seek_index_mb.
  EXPECT_EQ(bytes["seek_index_bytes"],
            std::min<int64_t>(kSeekIndexMb << 20, kClasses * kPerClass * (8 << 10)));
  EXPECT_EQ(bytes["decode_scratch_bytes"], 2 * (2 * 2 * 224 * 224 * 3));
  EXPECT_EQ(Pipeline::MemoryBudgetFor(o).source.empty(), false);
}

TEST_F(PlanTest, PlanRefusesWhatCreateRefusesInTheSameWords) {
  PipelineOptions o = Options();
  o.stages[1].args["seek_index_mb"] = "-1";
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_FALSE(plan.ok());
  ASSERT_FALSE(pipeline.ok());
  EXPECT_EQ(plan.status(), pipeline.status());
  o = Options();
  o.resume = Cursor{5, 0};  // Past the 2-epoch run.
  EXPECT_EQ(Pipeline::PlanMemory(o).status(), Pipeline::Create(o).status());
  EXPECT_FALSE(Pipeline::PlanMemory(o).ok());
}

TEST_F(PlanTest, PlanningAllocatesNoBatchBuffer) {
  const int64_t before = ResetPeakRss();
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(Options());
  const int64_t growth = PeakResidentBytes() - before;
  ASSERT_TRUE(plan.ok()) << plan.status();
  if (!kRssIsMeaningful) GTEST_SKIP() << "RSS under a sanitizer says nothing of the plan";
  // The pool alone is 55 MiB; planning it maps none of it.
  EXPECT_LT(growth, plan->parts()[0].bytes / 10) << "planning grew RSS by " << growth;
}

TEST_F(PlanTest, TallFilesFillTheSeekIndexBudget) {
  decode::DecoderOptions options;
  options.seek_index_bytes = kSeekIndexMb << 20;
  absl::StatusOr<std::unique_ptr<decode::Decoder>> decoder = decode::Decoder::Create(options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  // The crop train mode plans for a 256-wide file: its full width, 4:3, centred.
  decode::RegionRequest request;
  request.region = RectF{0, kHeight / 2.0 - 170, kWidth, 341};
  request.target_width = 224;
  request.target_height = 224;
  decode::DecodedImage out;
  for (int c = 0; c < kClasses; ++c) {
    for (int i = 0; i < kPerClass; ++i) {
      const std::string bytes =
          testing::ReadFile(absl::StrCat(*data_, "/class_", c, "/img_", i, ".jpg"));
      ASSERT_TRUE((*decoder)->Decode(bytes, {}, &request, &out).ok());
    }
  }
  // Filled up to the last file that fit: within one file's index (~48 KiB) of the budget.
  EXPECT_GT((*decoder)->seek_index_bytes(), (kSeekIndexMb << 20) - (64 << 10));
  EXPECT_LT((*decoder)->seek_indexed_files(), static_cast<size_t>(kClasses * kPerClass));
}

TEST_F(PlanTest, PeakRssOfARunIsWithinTenPercentOfThePlan) {
  const PipelineOptions o = Options();
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int64_t before = ResetPeakRss();
  int64_t growth = 0;
  {
    absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status();
    const testing::Drained d = testing::Drain(pipeline->get());
    ASSERT_TRUE(d.status.ok()) << d.status;
    ASSERT_EQ(d.samples, 2 * kClasses * kPerClass);
    ASSERT_TRUE(d.skipped.empty());
    growth = PeakResidentBytes() - before;
  }
  if (!kRssIsMeaningful) GTEST_SKIP() << "RSS under a sanitizer says nothing of the plan";
  const int64_t total = plan->total_bytes();
  EXPECT_NEAR(static_cast<double>(growth), static_cast<double>(total), 0.10 * total)
      << "peak RSS grew by " << FormatBytes(growth) << " (" << growth << " B); the plan says "
      << plan->Describe() << " (" << total << " B)";
  std::printf("plan_test: peak RSS growth %s (%lld B), plan %s (%lld B), ratio %.3f\n",
              FormatBytes(growth).c_str(), static_cast<long long>(growth),
              FormatBytes(total).c_str(), static_cast<long long>(total),
              static_cast<double>(growth) / static_cast<double>(total));
}

}  // namespace
}  // namespace flowloader
