// Weighted sources: the mixture schedule's exact shares, per-source passes, its sharding
// through Sampler, and Dataset::OpenSources on real directories and list files.
#include "stages/reader/mixture_sampler.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/reader/dataset.h"
#include "stages/reader/sampler.h"

namespace flowloader {
namespace {

MixtureSchedule MustCreate(const MixtureOptions& options) {
  absl::StatusOr<MixtureSchedule> s = MixtureSchedule::Create(options);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

// SourceOf maps a global index to its source, for sources laid end to end.
int SourceOf(const std::vector<MixtureComponent>& sources, int64_t index) {
  for (size_t i = 0; i < sources.size(); ++i) {
    if (index < sources[i].size) return static_cast<int>(i);
    index -= sources[i].size;
  }
  return -1;
}

TEST(MixtureScheduleTest, EverySourceGetsItsWeightShareOfEachEpoch) {
  MixtureOptions o;
  o.sources = {{300, 3.0}, {900, 1.0}, {37, 0.5}};  // 1237 samples per epoch.
  o.seed = 7;
  const MixtureSchedule s = MustCreate(o);
  ASSERT_EQ(s.epoch_samples(), 1237);
  for (int64_t epoch : {0, 1, 5}) {
    std::map<int, int64_t> counts;
    for (int64_t index : s.EpochOrder(epoch)) ++counts[SourceOf(o.sources, index)];
    const double exact[] = {1237 * 3 / 4.5, 1237 * 1 / 4.5, 1237 * 0.5 / 4.5};
    for (int i = 0; i < 3; ++i) {
      EXPECT_LE(std::abs(counts[i] - exact[i]), 1.0) << "source " << i << " epoch " << epoch;
      EXPECT_LT(std::abs(counts[i] / 1237.0 - exact[i] / 1237.0), 0.01);
    }
  }
}

TEST(MixtureScheduleTest, EachSourceDrawsEverySampleOncePerPass) {
  MixtureOptions o;
  o.sources = {{50, 3.0}, {400, 1.0}};  // Source 0 is drawn 337 times an epoch: 6+ passes.
  o.seed = 11;
  const MixtureSchedule s = MustCreate(o);
  std::vector<std::vector<int64_t>> draws(2);
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    for (int64_t index : s.EpochOrder(epoch)) draws[SourceOf(o.sources, index)].push_back(index);
  }
  for (int i = 0; i < 2; ++i) {
    const int64_t size = o.sources[i].size;
    const int64_t offset = i == 0 ? 0 : 50;
    ASSERT_GE(static_cast<int64_t>(draws[i].size()), size);
    for (size_t pass = 0; (pass + 1) * size <= draws[i].size(); ++pass) {
      std::set<int64_t> seen(draws[i].begin() + pass * size, draws[i].begin() + (pass + 1) * size);
      EXPECT_EQ(static_cast<int64_t>(seen.size()), size) << "source " << i << " pass " << pass;
      EXPECT_EQ(*seen.begin(), offset);
      EXPECT_EQ(*seen.rbegin(), offset + size - 1);
    }
  }
  // Passes are shuffled differently.
  EXPECT_FALSE(std::equal(draws[0].begin(), draws[0].begin() + 50, draws[0].begin() + 50));
}

TEST(MixtureScheduleTest, DeterministicPerSeedAndDifferentPerEpoch) {
  MixtureOptions o;
  o.sources = {{100, 1.0}, {100, 1.0}};
  o.seed = 3;
  EXPECT_EQ(MustCreate(o).EpochOrder(2), MustCreate(o).EpochOrder(2));
  EXPECT_NE(MustCreate(o).EpochOrder(2), MustCreate(o).EpochOrder(3));
  MixtureOptions other = o;
  other.seed = 4;
  EXPECT_NE(MustCreate(o).EpochOrder(0), MustCreate(other).EpochOrder(0));
}

TEST(MixtureScheduleTest, EpochSamplesSetsTheEpochLength) {
  MixtureOptions o;
  o.sources = {{10, 1.0}, {10, 1.0}};
  o.epoch_samples = 1000;
  const MixtureSchedule s = MustCreate(o);
  EXPECT_EQ(s.EpochOrder(0).size(), 1000u);
  EXPECT_EQ(s.draws_per_epoch(), (std::vector<int64_t>{500, 500}));
}

TEST(MixtureScheduleTest, UnshuffledSpreadsSourcesEvenlyInDatasetOrder) {
  MixtureOptions o;
  o.sources = {{4, 1.0}, {2, 1.0}};
  o.shuffle = false;
  o.epoch_samples = 6;
  // Three draws each: source 0 in order 0,1,2 (then 3 next epoch), source 1 wrapping.
  EXPECT_EQ(MustCreate(o).EpochOrder(0), (std::vector<int64_t>{0, 4, 1, 5, 2, 4}));
  EXPECT_EQ(MustCreate(o).EpochOrder(1), (std::vector<int64_t>{3, 5, 0, 4, 1, 5}));
}

// Weights whose sum overflows a double (each finite, so accepted) split the epoch as their
// ratio does: two of 1e308 half and half (the sum was inf, every share NaN, and Create
// looped for 2^63 steps).
TEST(MixtureScheduleTest, HugeWeightsSplitAsTheirRatio) {
  MixtureOptions o;
  o.sources = {{40, 1e308}, {40, 1e308}, {20, 5e307}};
  const MixtureSchedule s = MustCreate(o);
  ASSERT_EQ(s.epoch_samples(), 100);
  std::map<int, int64_t> counts;
  for (int64_t index : s.EpochOrder(0)) ++counts[SourceOf(o.sources, index)];
  EXPECT_EQ(counts, (std::map<int, int64_t>{{0, 40}, {1, 40}, {2, 20}}));
}

// One weight near the largest double beside a tiny one: the sum is finite, but the epoch's
// length times the large weight was not (a hostile spec, weights 1e308 and 1e-308, hung
// in Create).
TEST(MixtureScheduleTest, AHugeWeightBesideATinyOneTakesTheEpoch) {
  MixtureOptions o;
  o.sources = {{6, 1e308}, {6, 1e-308}};
  const MixtureSchedule s = MustCreate(o);
  ASSERT_EQ(s.epoch_samples(), 12);
  std::map<int, int64_t> counts;
  for (int64_t index : s.EpochOrder(0)) ++counts[SourceOf(o.sources, index)];
  EXPECT_EQ(counts, (std::map<int, int64_t>{{0, 12}}));
}

TEST(MixtureScheduleTest, RefusesBadWeightsAndEmptySources) {
  MixtureOptions o;
  EXPECT_FALSE(MixtureSchedule::Create(o).ok());
  o.sources = {{10, 0.0}};
  EXPECT_EQ(MixtureSchedule::Create(o).status().message(),
            "source 0: weight must be a number > 0, got 0");
  o.sources = {{0, 1.0}};
  EXPECT_FALSE(MixtureSchedule::Create(o).ok());
}

TEST(MixtureSamplerTest, OneSourceOfItsOwnSizeIsThePlainOrder) {
  SamplerOptions plain;
  plain.shuffle = true;
  plain.seed = 9;
  SamplerOptions mixed = plain;
  mixed.mixture = {{123, 2.0}};
  auto a = Sampler::Create(123, plain);
  auto b = Sampler::Create(123, mixed);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int64_t epoch : {0, 1, 4}) EXPECT_EQ((*a)->EpochIndices(epoch), (*b)->EpochIndices(epoch));
}

TEST(MixtureSamplerTest, RanksShareTheEpochLikeOneSource) {
  SamplerOptions o;
  o.shuffle = true;
  o.seed = 5;
  o.world_size = 3;
  o.mixture = {{40, 3.0}, {61, 1.0}};  // 101 samples: ranks of 34, padded by 1.
  MixtureOptions m;
  m.sources = o.mixture;
  m.seed = 5;
  const std::vector<int64_t> epoch = MustCreate(m).EpochOrder(1);
  std::vector<int64_t> interleaved(102);
  for (int rank = 0; rank < 3; ++rank) {
    o.rank = rank;
    auto s = Sampler::Create(101, o);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_EQ((*s)->samples_per_rank(), 34);
    const std::vector<int64_t> mine = (*s)->EpochIndices(1);
    for (size_t k = 0; k < mine.size(); ++k) interleaved[k * 3 + rank] = mine[k];
  }
  EXPECT_TRUE(std::equal(epoch.begin(), epoch.end(), interleaved.begin()));
  EXPECT_EQ(interleaved[101], epoch[0]);  // pad repeats the epoch's first sample.
  o.rank = 0;
  o.drop_remainder = true;
  EXPECT_EQ((*Sampler::Create(101, o))->samples_per_rank(), 33);
}

TEST(MixtureSamplerTest, RefusesSourcesThatDoNotAddUpToTheDataset) {
  SamplerOptions o;
  o.mixture = {{40, 1.0}, {60, 1.0}};
  EXPECT_EQ(Sampler::Create(99, o).status().message(),
            "the mixture's sources hold 100 samples, the dataset 99");
}

class OpenSourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::string(std::getenv("TEST_TMPDIR")) + "/src_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ::mkdir(root_.c_str(), 0755);
  }
  void MakeFile(const std::string& rel, const std::string& body = "x") {
    const size_t slash = rel.rfind('/');
    if (slash != std::string::npos) {
      std::string dir = root_;
      for (const std::string& part : {rel.substr(0, rel.find('/')), rel.substr(0, slash)}) {
        ::mkdir((root_ + "/" + part).c_str(), 0755);
      }
    }
    std::ofstream(root_ + "/" + rel) << body;
  }
  DatasetSource Source(const std::string& name, const std::string& rel) {
    DatasetSource s;
    s.name = name;
    s.options.path = root_ + "/" + rel;
    return s;
  }
  std::string root_;
};

TEST_F(OpenSourcesTest, ImageFoldersShareOneClassMapByNameAndListsKeepNumbers) {
  MakeFile("a/dog/1.jpg");
  MakeFile("a/zebra/1.jpg");
  MakeFile("b/cat/1.jpg");
  MakeFile("b/dog/2.jpg");
  MakeFile("c/list.txt", "x.jpg\t7\n");
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      Dataset::OpenSources({Source("a", "a"), Source("b", "b"), Source("c", "c/list.txt")});
  ASSERT_TRUE(ds.ok()) << ds.status();
  const Dataset& d = **ds;
  EXPECT_EQ(d.class_names(), (std::vector<std::string>{"cat", "dog", "zebra"}));
  EXPECT_EQ(d.source_names(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(d.size(), 5);
  EXPECT_EQ(d.source_size(0), 2);
  EXPECT_EQ(d.source_offset(1), 2);
  EXPECT_EQ(d.source_size(2), 1);
  // a: dog=1, zebra=2; b: cat=0, dog=1 (the same label as a's dog); c keeps 7.
  EXPECT_EQ(d.sample(0).label, 1);
  EXPECT_EQ(d.sample(1).label, 2);
  EXPECT_EQ(d.sample(2).label, 0);
  EXPECT_EQ(d.sample(3).label, 1);
  EXPECT_EQ(d.sample(4).label, 7);
  EXPECT_EQ(d.sample(3).source, 1);
  EXPECT_EQ(d.sample(4).source, 2);
  // Each key is relative to its own source's root.
  EXPECT_EQ(d.FullPath(0), root_ + "/a/dog/1.jpg");
  EXPECT_EQ(d.FullPath(3), root_ + "/b/dog/2.jpg");
  EXPECT_EQ(d.FullPath(4), root_ + "/c/x.jpg");
}

TEST_F(OpenSourcesTest, ErrorsNameTheSource) {
  MakeFile("a/dog/1.jpg");
  EXPECT_EQ(Dataset::OpenSources({Source("a", "a"), Source("a", "a")}).status().message(),
            "two sources are named 'a' (names must be unique)");
  absl::Status missing = Dataset::OpenSources({Source("a", "a"), Source("gone", "nope")}).status();
  EXPECT_TRUE(absl::StartsWith(missing.message(), "source gone: data ")) << missing;
}

}  // namespace
}  // namespace flowloader
