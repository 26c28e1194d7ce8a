// Weighted sources through a real pipeline: each epoch's per-source counts are the
// weights' exact shares, each batch row names its source (Batch::sources, the summary's
// per-source counts), the delivery is byte-identical for any num_workers, a checkpoint
// resumes with exactly the rest, ranks split an epoch like one source, and ImageFolder
// sources share one class map by class name.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::MakeImageFolder;
using testing::TempDir;

// Row is one delivered sample: its source, key, label and tensor bytes' first bytes.
struct Row {
  int32_t source = 0;
  std::string key;
  int64_t label = 0;
  std::string bytes;
  bool operator==(const Row& o) const {
    return source == o.source && key == o.key && label == o.label && bytes == o.bytes;
  }
};

class WeightedSourcesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // 3 classes x 10 and 2 classes x 5 ("class_000", "class_001" in both).
    big_ = new std::string(MakeImageFolder(TempDir("ws_big"), 3, 10));
    small_ = new std::string(MakeImageFolder(TempDir("ws_small"), 2, 5));
  }
  PipelineOptions Options() const {
    PipelineOptions o;
    o.sources = {{"big", *big_, 1.0}, {"small", *small_, 3.0}};
    o.image_size = 8;
    o.batch_size = 7;
    o.num_workers = 2;
    o.epochs = 2;
    o.seed = 5;
    o.device = DeviceChoice::kCpu;
    return o;
  }
  // Run delivers every batch, from `resume`, or only `stop_after` batches when >= 0.
  static std::vector<std::vector<Row>> Run(const PipelineOptions& o, Cursor* checkpoint = nullptr,
                                           int stop_after = -1) {
    auto p = Pipeline::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    std::vector<std::vector<Row>> epochs(1);
    int delivered = 0;
    while (stop_after < 0 || delivered < stop_after) {
      std::shared_ptr<const Batch> b;
      bool end = false;
      EXPECT_TRUE((*p)->Next(&b, &end).ok());
      if (end) {
        if ((*p)->done()) break;
        epochs.emplace_back();
        continue;
      }
      ++delivered;
      const size_t row_bytes = b->bytes() / static_cast<size_t>(b->size());
      EXPECT_EQ(b->sources.size(), static_cast<size_t>(b->size()));
      for (int64_t i = 0; i < b->size(); ++i) {
        const char* data = static_cast<const char*>(b->host_data()) + i * row_bytes;
        epochs.back().push_back(Row{b->sources[i], b->keys[i], b->labels[i],
                                    std::string(data, row_bytes)});
      }
    }
    if (checkpoint != nullptr) *checkpoint = (*p)->Checkpoint();
    return epochs;
  }
  static std::string* big_;
  static std::string* small_;
};
std::string* WeightedSourcesTest::big_ = nullptr;
std::string* WeightedSourcesTest::small_ = nullptr;

TEST_F(WeightedSourcesTest, EachEpochDrawsTheWeightsSharesAndEachSourceCyclesItsPasses) {
  PipelineOptions o = Options();
  o.epochs = 3;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->samples_per_epoch(), 40);  // The sources' sizes, 30 + 10.
  EXPECT_EQ((*p)->source_names(), (std::vector<std::string>{"big", "small"}));
  const std::vector<std::vector<Row>> epochs = Run(o);
  ASSERT_EQ(epochs.size(), 3u);
  std::vector<std::vector<std::string>> draws(2);
  for (const std::vector<Row>& epoch : epochs) {
    std::map<int32_t, int> counts;
    for (const Row& r : epoch) {
      ++counts[r.source];
      draws[r.source].push_back(r.key);
    }
    EXPECT_EQ(counts[0], 10);  // 40 x 1/4.
    EXPECT_EQ(counts[1], 30);  // 40 x 3/4: the small source, three times over.
  }
  // Every pass of a source holds each of its samples once.
  for (size_t pass = 0; pass < 9; ++pass) {
    const std::set<std::string> seen(draws[1].begin() + pass * 10,
                                     draws[1].begin() + (pass + 1) * 10);
    EXPECT_EQ(seen.size(), 10u) << "small, pass " << pass;
  }
  EXPECT_EQ(std::set<std::string>(draws[0].begin(), draws[0].end()).size(), 30u);
}

TEST_F(WeightedSourcesTest, CountsPerSourceReachTheStats) {
  PipelineOptions o = Options();
  o.epochs = 1;
  o.epoch_samples = 100;
  auto p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  for (;;) {
    std::shared_ptr<const Batch> b;
    bool end = false;
    ASSERT_TRUE((*p)->Next(&b, &end).ok());
    if (end && (*p)->done()) break;
  }
  const auto counts = (*p)->stats()->SourceSamples();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0], (std::pair<std::string, uint64_t>{"big", 25}));
  EXPECT_EQ(counts[1], (std::pair<std::string, uint64_t>{"small", 75}));
}

TEST_F(WeightedSourcesTest, SameBytesForAnyNumWorkers) {
  PipelineOptions one = Options();
  one.num_workers = 1;
  PipelineOptions two = Options();
  two.num_workers = 2;
  const auto a = Run(one);
  EXPECT_EQ(a.size(), 2u);
  EXPECT_TRUE(a == Run(two));
}

TEST_F(WeightedSourcesTest, ACheckpointResumesWithExactlyTheRest) {
  const std::vector<std::vector<Row>> full = Run(Options());
  Cursor cursor;
  const std::vector<std::vector<Row>> first = Run(Options(), &cursor, /*stop_after=*/8);
  PipelineOptions resumed = Options();
  resumed.resume = cursor;
  const std::vector<std::vector<Row>> rest = Run(resumed);
  std::vector<Row> joined, all;
  for (const auto* part : {&first, &rest}) {
    for (const auto& e : *part) joined.insert(joined.end(), e.begin(), e.end());
  }
  for (const auto& e : full) all.insert(all.end(), e.begin(), e.end());
  EXPECT_EQ(cursor.epoch, 1);  // 8 batches of 7 cross the first epoch's 40 samples.
  EXPECT_TRUE(joined == all) << joined.size() << " vs " << all.size();
}

TEST_F(WeightedSourcesTest, RanksSplitTheEpoch) {
  std::multiset<std::string> keys;
  for (int rank = 0; rank < 2; ++rank) {
    PipelineOptions o = Options();
    o.epochs = 1;
    o.world_size = 2;
    o.rank = rank;
    const std::vector<std::vector<Row>> epochs = Run(o);
    for (const Row& r : epochs[0]) keys.insert(absl::StrCat(r.source, ":", r.key));
  }
  PipelineOptions whole = Options();
  whole.epochs = 1;
  std::multiset<std::string> expected;
  const std::vector<std::vector<Row>> epochs = Run(whole);
  for (const Row& r : epochs[0]) expected.insert(absl::StrCat(r.source, ":", r.key));
  EXPECT_EQ(keys, expected);
}

TEST_F(WeightedSourcesTest, ImageFoldersShareTheClassMapByName) {
  const std::vector<std::vector<Row>> epochs = Run(Options());
  for (const Row& r : epochs[0]) {
    // Both sources name their classes class_000, class_001, ...: the label is the class.
    EXPECT_EQ(r.key.substr(0, 10), absl::StrCat("class_00", r.label, "/")) << r.key;
  }
}

TEST_F(WeightedSourcesTest, RefusesDataAndSourcesTogether) {
  PipelineOptions o = Options();
  o.data = *big_;
  EXPECT_EQ(Pipeline::Create(o).status().message(),
            absl::StrCat("data ('", *big_, "') and sources are both set: give one of them"));
}

}  // namespace
}  // namespace flowloader
