// Resuming at every boundary cursor: each one delivers exactly the batches a full run
// delivers after it, the cursor at the end reports done at once, and a cursor past the
// end is refused at Create. No Next may block forever, whatever the cursor.
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::MakeImageFolder;
using testing::TempDir;

constexpr int kImages = 51;     // 3 classes x 17.
constexpr int kBatchSize = 8;   // 7 batches per epoch, the last one of 3.
constexpr int kBatchesPerEpoch = 7;
constexpr int kEpochs = 2;

PipelineOptions Options(const std::string& data, Cursor resume) {
  PipelineOptions o;
  o.data = data;
  o.image_size = 16;
  o.batch_size = kBatchSize;
  o.num_workers = 2;
  o.epochs = kEpochs;
  o.seed = 5;
  o.device = DeviceChoice::kCpu;
  o.resume = resume;
  return o;
}

// Delivered is every batch's first sample index, and whether done() came true.
struct Delivered {
  std::vector<int64_t> first_index;
  bool done = false;
  bool hung = false;
};

// DrainWithDeadline pulls every batch; a Next that does not return within the deadline
// marks the run hung and stops it (Stop makes a blocked Next return Cancelled), so the
// test fails instead of hanging.
Delivered DrainWithDeadline(Pipeline& p) {
  Delivered d;
  for (int calls = 0; calls < 100; ++calls) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    std::future<absl::Status> next =
        std::async(std::launch::async, [&] { return p.Next(&batch, &end); });
    if (next.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      d.hung = true;
      p.Stop();
      next.wait();
      return d;
    }
    const absl::Status s = next.get();
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return d;
    if (end && p.done()) {
      d.done = true;
      return d;
    }
    if (batch != nullptr) d.first_index.push_back(batch->indices.front());
  }
  return d;
}

class ResumeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(MakeImageFolder(TempDir("resume"), 3, kImages / 3));
    auto full = Pipeline::Create(Options(*data_, {}));
    ASSERT_TRUE(full.ok()) << full.status();
    all_ = new Delivered(DrainWithDeadline(**full));
    ASSERT_EQ(all_->first_index.size(), size_t{kEpochs * kBatchesPerEpoch});
  }
  static void TearDownTestSuite() {
    delete data_;
    delete all_;
  }
  static std::string* data_;
  static Delivered* all_;
};
std::string* ResumeTest::data_ = nullptr;
Delivered* ResumeTest::all_ = nullptr;

TEST_F(ResumeTest, EveryCursorInsideTheRunDeliversExactlyTheRest) {
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
    for (int64_t batch : {0, 1, kBatchesPerEpoch - 1}) {
      SCOPED_TRACE(absl::StrCat("resume at ", epoch, ":", batch));
      auto p = Pipeline::Create(Options(*data_, {epoch, batch}));
      ASSERT_TRUE(p.ok()) << p.status();
      EXPECT_FALSE((*p)->done());
      const Delivered rest = DrainWithDeadline(**p);
      ASSERT_FALSE(rest.hung);
      EXPECT_TRUE(rest.done);
      const size_t skip = static_cast<size_t>(epoch * kBatchesPerEpoch + batch);
      EXPECT_EQ(rest.first_index, std::vector<int64_t>(all_->first_index.begin() + skip,
                                                       all_->first_index.end()));
    }
  }
}

TEST_F(ResumeTest, TheCursorAtTheEndIsDoneAtOnce) {
  // What Checkpoint() returns after the whole run.
  auto p = Pipeline::Create(Options(*data_, {kEpochs, 0}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE((*p)->done());
  const Delivered rest = DrainWithDeadline(**p);
  EXPECT_FALSE(rest.hung);
  EXPECT_TRUE(rest.done);
  EXPECT_TRUE(rest.first_index.empty());
}

TEST_F(ResumeTest, ACursorOutsideTheRunIsRefusedAtCreate) {
  const Cursor outside[] = {{kEpochs, 1}, {kEpochs + 3, 0}, {0, kBatchesPerEpoch}, {-1, 0},
                            {0, -1}};
  for (const Cursor& c : outside) {
    SCOPED_TRACE(absl::StrCat("resume at ", c.epoch, ":", c.batch));
    auto p = Pipeline::Create(Options(*data_, c));
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("cannot resume at epoch"), absl::string_view::npos)
        << p.status();
  }
}

TEST_F(ResumeTest, AnUnboundedRunResumesAtAnyEpoch) {
  PipelineOptions o = Options(*data_, {kEpochs + 3, 0});
  o.epochs = 0;  // Until stopped.
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::shared_ptr<const Batch> batch;
  bool end = false;
  ASSERT_TRUE((*p)->Next(&batch, &end).ok());
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(batch->epoch, kEpochs + 3);
}

}  // namespace
}  // namespace flowloader
