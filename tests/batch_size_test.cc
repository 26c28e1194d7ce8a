// Pipeline::SetBatchSize mid-run, as a trainer's out-of-memory retry uses it: halve the
// batch at a random batch and every sample of the epoch still comes out exactly once, in
// the same order and with the same bytes (the data checksum of an unchanged run); a
// checkpoint taken after the change resumes with exactly the rest; the pool is never
// grown; drop_last and as-completed delivery keep their promises across the change. Also
// the checksum itself: equal for any num_workers, different for another seed.
#include <cstdint>
#include <memory>
#include <random>
#include <set>
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

constexpr int kImages = 60;  // 3 classes × 20.
constexpr int kBatchSize = 8;
constexpr int kEpochs = 2;

PipelineOptions Options(const std::string& data) {
  PipelineOptions o;
  o.data = data;
  o.image_size = 16;
  o.batch_size = kBatchSize;
  o.num_workers = 2;
  o.prefetch_batches = 3;
  o.epochs = kEpochs;
  o.seed = 11;
  o.device = DeviceChoice::kCpu;
  o.checksum = true;
  return o;
}

// Delivery is what a run delivered: keys in order, per epoch, with each batch's size.
struct Delivery {
  std::vector<std::vector<std::string>> keys{1};
  std::vector<std::vector<int64_t>> sizes{1};
  std::vector<std::string> flat;  // Every key in delivery order, across epochs.
};

// Trainer pulls batches like a training loop. Before each batch it asks `hook`, given
// the batches delivered so far, whether to act (halve the batch, checkpoint).
class Trainer {
 public:
  explicit Trainer(Pipeline* p) : p_(p) {}

  // Run pulls until done, or until `stop_after` batches when that is >= 0.
  template <typename Hook>
  Delivery Run(Hook hook, int stop_after = -1) {
    Delivery d;
    int delivered = 0;
    while (stop_after < 0 || delivered < stop_after) {
      hook(delivered);
      std::shared_ptr<const Batch> batch;
      bool end = false;
      const absl::Status s = p_->Next(&batch, &end);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok()) break;
      if (end) {
        if (p_->done()) break;
        d.keys.emplace_back();
        d.sizes.emplace_back();
        continue;
      }
      ++delivered;
      d.keys.back().insert(d.keys.back().end(), batch->keys.begin(), batch->keys.end());
      d.flat.insert(d.flat.end(), batch->keys.begin(), batch->keys.end());
      d.sizes.back().push_back(batch->size());
    }
    return d;
  }

 private:
  Pipeline* const p_;
};

class BatchSizeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(MakeImageFolder(TempDir("batch_size"), 3, kImages / 3));
    auto p = Pipeline::Create(Options(*data_));
    ASSERT_TRUE(p.ok()) << p.status();
    reference_ = new Delivery(Trainer(p->get()).Run([](int) {}));
    reference_checksum_ = new std::string((*p)->data_checksum());
    reference_epochs_ = new std::vector<std::pair<int64_t, std::string>>((*p)->epoch_checksums());
    ASSERT_EQ(reference_->keys.size(), size_t{kEpochs});
  }
  static void TearDownTestSuite() {
    delete data_;
    delete reference_;
    delete reference_checksum_;
    delete reference_epochs_;
  }
  static std::string* data_;
  static Delivery* reference_;  // The same options, the batch size never changed.
  static std::string* reference_checksum_;
  static std::vector<std::pair<int64_t, std::string>>* reference_epochs_;
};
std::string* BatchSizeTest::data_ = nullptr;
Delivery* BatchSizeTest::reference_ = nullptr;
std::string* BatchSizeTest::reference_checksum_ = nullptr;
std::vector<std::pair<int64_t, std::string>>* BatchSizeTest::reference_epochs_ = nullptr;

// ExpectEachOnce checks that `keys` holds every one of the dataset's images once.
void ExpectEachOnce(const std::vector<std::string>& keys) {
  const std::set<std::string> distinct(keys.begin(), keys.end());
  EXPECT_EQ(distinct.size(), keys.size()) << "a sample came twice";
  EXPECT_EQ(keys.size(), size_t{kImages}) << "a sample is missing";
}

TEST_F(BatchSizeTest, HalvingAtARandomBatchDeliversEverySampleOnceAndResumesExactly) {
  std::mt19937 rng(20261203);
  for (int round = 0; round < 4; ++round) {
    // The out-of-memory step, early enough in epoch 0 (8 batches of 8) that the
    // checkpoint two steps later is still in it whatever was in flight.
    const int oom_at = std::uniform_int_distribution<int>(0, 3)(rng);
    const int checkpoint_at = oom_at + 2;
    SCOPED_TRACE(absl::StrCat("halved before batch ", oom_at, ", checkpoint before batch ",
                              checkpoint_at));
    auto p = Pipeline::Create(Options(*data_));
    ASSERT_TRUE(p.ok()) << p.status();
    Cursor cursor;
    const Delivery got = Trainer(p->get()).Run([&](int delivered) {
      if (delivered == oom_at) {
        ASSERT_TRUE((*p)->SetBatchSize((*p)->batch_size() / 2).ok());
        EXPECT_EQ((*p)->batch_size(), kBatchSize / 2);
      }
      if (delivered == checkpoint_at) cursor = (*p)->Checkpoint();
    });
    ASSERT_EQ(got.keys.size(), size_t{kEpochs});
    ASSERT_GT(got.sizes[0].size(), static_cast<size_t>(checkpoint_at));
    size_t keys_before_checkpoint = 0;
    for (int i = 0; i < checkpoint_at; ++i) keys_before_checkpoint += got.sizes[0][i];
    for (const auto& epoch : got.keys) ExpectEachOnce(epoch);
    // Same samples, same order, same bytes: only the grouping changed.
    EXPECT_EQ(got.flat, reference_->flat);
    EXPECT_EQ((*p)->data_checksum(), *reference_checksum_);
    // Batches planned before the change (at most prefetch_batches + 1) keep their size;
    // every one after is half.
    const std::vector<int64_t>& sizes = got.sizes[0];
    int full_after_change = 0;
    for (size_t i = static_cast<size_t>(oom_at); i < sizes.size(); ++i) {
      if (sizes[i] == kBatchSize) {
        ++full_after_change;
        EXPECT_EQ(full_after_change, static_cast<int>(i) - oom_at + 1)
            << "a full batch came after a halved one";
      } else if (i + 1 < sizes.size()) {
        EXPECT_EQ(sizes[i], kBatchSize / 2);
      }
    }
    EXPECT_LE(full_after_change, 3 + 1);
    for (int64_t size : got.sizes[1]) EXPECT_LE(size, kBatchSize / 2);

    // Resume from the checkpoint taken after the change: exactly the rest.
    EXPECT_EQ(cursor.epoch, 0);
    EXPECT_EQ(cursor.batch, checkpoint_at);
    EXPECT_EQ(cursor.batch_size, kBatchSize / 2);
    EXPECT_EQ(cursor.sample, static_cast<int64_t>(keys_before_checkpoint));
    PipelineOptions o = Options(*data_);
    o.resume = cursor;
    auto resumed = Pipeline::Create(o);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    const Delivery rest = Trainer(resumed->get()).Run([](int) {});
    EXPECT_EQ(rest.flat, std::vector<std::string>(got.flat.begin() + keys_before_checkpoint,
                                                  got.flat.end()));
    for (const auto& epoch : rest.sizes) {
      for (int64_t size : epoch) EXPECT_LE(size, kBatchSize / 2);
    }
    // The epoch the resumed run delivered whole has the uninterrupted run's checksum.
    const auto epochs = (*resumed)->epoch_checksums();
    ASSERT_EQ(epochs.size(), 2u);
    EXPECT_EQ(epochs[1], (*reference_epochs_)[1]);
    EXPECT_TRUE((*resumed)->done());
  }
}

TEST_F(BatchSizeTest, AResumeCursorAtABatchBoundaryOfTheOldSizeStillWorks) {
  // A cursor as a version before SetBatchSize wrote it: epoch and batch only.
  PipelineOptions o = Options(*data_);
  o.resume = Cursor{1, 3};
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Checkpoint().sample, 3 * kBatchSize);
  const Delivery rest = Trainer(p->get()).Run([](int) {});
  const size_t skip = kImages + 3 * kBatchSize;
  EXPECT_EQ(rest.flat, std::vector<std::string>(reference_->flat.begin() + skip,
                                                reference_->flat.end()));
}

TEST_F(BatchSizeTest, GrowingPastThePoolIsRefusedAndChangesNothing) {
  auto p = Pipeline::Create(Options(*data_));
  ASSERT_TRUE(p.ok()) << p.status();
  const absl::Status grow = (*p)->SetBatchSize(kBatchSize * 2);
  EXPECT_EQ(grow.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(grow.message().find("batch_size 16 does not fit the batch pool's 8 samples"),
            absl::string_view::npos)
      << grow;
  EXPECT_NE(grow.message().find("create the pipeline with batch_size >= 16"),
            absl::string_view::npos)
      << grow;
  EXPECT_EQ((*p)->SetBatchSize(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*p)->batch_size(), kBatchSize);
  // Shrinking and growing back within the pool is fine.
  EXPECT_TRUE((*p)->SetBatchSize(3).ok());
  EXPECT_TRUE((*p)->SetBatchSize(kBatchSize).ok());
  const Delivery d = Trainer(p->get()).Run([](int) {});
  EXPECT_EQ(d.flat, reference_->flat);
}

TEST_F(BatchSizeTest, AResumeBatchSizeAboveThePoolIsRefusedAtCreate) {
  PipelineOptions o = Options(*data_);
  o.resume = Cursor{0, 1, 8, kBatchSize * 2};
  auto p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("cannot resume with batch size 16"),
            absl::string_view::npos)
      << p.status();
}

TEST_F(BatchSizeTest, WithDropLastEveryBatchIsFullAtItsPlannedSize) {
  PipelineOptions o = Options(*data_);
  o.drop_last = true;
  o.batch_size = 7;  // 60 = 8 × 7 + 4: the tail of 4 is dropped at size 7.
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Delivery d = Trainer(p->get()).Run([&](int delivered) {
    if (delivered == 2) {
      ASSERT_TRUE((*p)->SetBatchSize(2).ok());
    }
  });
  ASSERT_EQ(d.keys.size(), size_t{kEpochs});
  for (size_t e = 0; e < d.keys.size(); ++e) {
    const std::set<std::string> distinct(d.keys[e].begin(), d.keys[e].end());
    EXPECT_EQ(distinct.size(), d.keys[e].size()) << "a sample came twice";
    int64_t sum = 0;
    for (int64_t size : d.sizes[e]) {
      EXPECT_TRUE(size == 7 || size == 2) << "a partial batch under drop_last: " << size;
      sum += size;
    }
    // At size 2 the tail left is under 2: at most one sample is dropped.
    EXPECT_GE(sum, kImages - 1);
  }
}

TEST_F(BatchSizeTest, AsCompletedDeliveryKeepsEpochsExactAcrossAChange) {
  PipelineOptions o = Options(*data_);
  o.in_order = false;
  o.num_workers = 3;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const Delivery d = Trainer(p->get()).Run([&](int delivered) {
    if (delivered == 1) {
      ASSERT_TRUE((*p)->SetBatchSize(3).ok());
    }
  });
  ASSERT_EQ(d.keys.size(), size_t{kEpochs});
  for (const auto& epoch : d.keys) ExpectEachOnce(epoch);
  EXPECT_TRUE((*p)->done());
}

TEST_F(BatchSizeTest, TheChecksumIsTheSameForAnyWorkersAndDiffersForAnotherSeed) {
  PipelineOptions o = Options(*data_);
  o.num_workers = 1;
  auto one = Pipeline::Create(o);
  ASSERT_TRUE(one.ok()) << one.status();
  Trainer(one->get()).Run([](int) {});
  EXPECT_EQ((*one)->data_checksum(), *reference_checksum_);  // 2 workers.
  EXPECT_EQ((*one)->data_checksum().substr(0, 5), "xxh3:");
  EXPECT_EQ((*one)->data_checksum().size(), 5u + 16u);

  o.seed = 12;
  auto other = Pipeline::Create(o);
  ASSERT_TRUE(other.ok()) << other.status();
  Trainer(other->get()).Run([](int) {});
  EXPECT_NE((*other)->data_checksum(), *reference_checksum_);

  o.checksum = false;
  auto off = Pipeline::Create(o);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ((*off)->data_checksum(), "");
}

}  // namespace
}  // namespace flowloader
