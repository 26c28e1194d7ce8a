// Batch stages in a real pipeline (graph/batch_stage.h): the label tensor (int64 [N] by
// default, float32 [N, C] soft targets with mixup_cutmix or label_smoothing), batch ops'
// output byte-identical for any num_workers, across resume and after SetBatchSize, every
// view mixed, a statistics row per op, labels outside num_classes skipped and counted,
// and the refusals at Create (a batch op in stages, a per-sample one in batch_ops, bad
// options).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/graph_builder.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "runtime/spec.h"
#include "stages/core/log.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::MakeImageFolder;
using testing::TempDir;

constexpr int kClasses = 3;
constexpr int kImages = 3 * 10;

StageSpec Op(const std::string& type, std::map<std::string, std::string> args) {
  StageSpec spec;
  spec.type = type;
  spec.args = std::move(args);
  return spec;
}

StageSpec Mixup(std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> args = {
      {"mixup_alpha", "0.8"}, {"cutmix_alpha", "1.0"}, {"label_smoothing", "0.1"}};
  for (auto& [k, v] : extra) args[k] = v;
  return Op("mixup_cutmix", args);
}

PipelineOptions Options(const std::string& data, int workers,
                        std::vector<StageSpec> batch_ops = {Mixup()}) {
  PipelineOptions o;
  o.data = data;
  o.image_size = 16;
  o.batch_size = 8;
  o.num_workers = workers;
  o.prefetch_batches = 3;
  o.epochs = 2;
  o.seed = 5;
  o.device = DeviceChoice::kCpu;
  o.batch_ops = std::move(batch_ops);
  return o;
}

// Delivered is every delivered row's tensor bytes and label-tensor bytes, in order.
struct Delivered {
  std::vector<std::string> tensors;  // Per batch tensor.
  std::string labels;                // The label tensor's bytes.
  std::vector<int64_t> classes;      // Batch::labels.
  std::vector<std::string> keys;
  std::vector<std::string> skip_reasons;
  int64_t batches = 0;
};

void Append(const Batch& b, Delivered* d) {
  testing::AppendTensorBytes(b, &d->tensors);
  d->labels.append(static_cast<const char*>(b.label.host_data), b.label.bytes());
  d->classes.insert(d->classes.end(), b.labels.begin(), b.labels.end());
  d->keys.insert(d->keys.end(), b.keys.begin(), b.keys.end());
  for (const SkippedSample& s : b.skipped) d->skip_reasons.push_back(s.reason);
  ++d->batches;
}

// Drain pulls up to `max_batches` batches, calling `before(n)` before the n-th.
Delivered Drain(Pipeline& p, const std::function<void(int)>& before,
                int max_batches = 1 << 30) {
  Delivered d;
  const absl::Status s = testing::EachBatch(
      p, before, [&d](const Batch& batch) { Append(batch, &d); }, max_batches);
  EXPECT_TRUE(s.ok()) << s;
  return d;
}
Delivered Drain(Pipeline& p, int max_batches = 1 << 30) {
  return Drain(p, [](int) {}, max_batches);
}

std::unique_ptr<Pipeline> MustCreate(const PipelineOptions& o) {
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

std::vector<float> Floats(const std::string& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

class BatchOpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kError);
    data_ = new std::string(MakeImageFolder(TempDir("batch_ops"), kClasses, 10));
  }
  static void TearDownTestSuite() { delete data_; }
  static std::string* data_;
};
std::string* BatchOpsTest::data_ = nullptr;

TEST_F(BatchOpsTest, TheDefaultLabelTensorIsInt64ClassIndices) {
  auto p = MustCreate(Options(*data_, 2, {}));
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->label().soft());
  std::shared_ptr<const Batch> b;
  bool end = false;
  ASSERT_TRUE(p->Next(&b, &end).ok());
  EXPECT_EQ(b->label.name, "label");
  EXPECT_EQ(b->label.dtype, DType::kInt64);
  EXPECT_EQ(b->label.shape, (std::vector<int64_t>{b->size()}));
  ASSERT_EQ(b->label.bytes(), b->labels.size() * 8);
  EXPECT_EQ(std::memcmp(b->label.host_data, b->labels.data(), b->label.bytes()), 0);
  EXPECT_EQ(p->stats()->Stage("mixup_cutmix"), nullptr);  // No batch op, no row.
}

TEST_F(BatchOpsTest, MixupMakesSoftTargetsOverTheDataClassesThatSumToOne) {
  auto p = MustCreate(Options(*data_, 2));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->label().num_classes, kClasses);  // ImageFolder's classes.
  const Delivered d = Drain(*p);
  const std::vector<float> t = Floats(d.labels);
  ASSERT_EQ(t.size(), size_t{2} * kImages * kClasses);  // Two epochs, float32 [N, 3].
  int mixed_rows = 0;
  for (size_t r = 0; r < t.size() / kClasses; ++r) {
    double sum = 0;
    for (int c = 0; c < kClasses; ++c) sum += t[r * kClasses + c];
    EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
    // Smoothed one-hot: 0.9333 on the class; mixed rows carry less there.
    mixed_rows += t[r * kClasses + d.classes[r]] < 0.93f;
  }
  EXPECT_GT(mixed_rows, 0);
  // Its statistics row: one item per batch, serial.
  const StageStats* row = p->stats()->Stage("mixup_cutmix");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->items_out.load(), static_cast<uint64_t>(d.batches));
  EXPECT_EQ(row->concurrency(), 1);
}

TEST_F(BatchOpsTest, WithoutMixingTheImagesAreUnchangedAndTargetsSmoothed) {
  const Delivered plain = Drain(*MustCreate(Options(*data_, 2, {})));
  const Delivered smoothed =
      Drain(*MustCreate(Options(*data_, 2, {Op("label_smoothing", {{"smoothing", "0.3"}})})));
  EXPECT_TRUE(plain.tensors[0] == smoothed.tensors[0]);
  const std::vector<float> t = Floats(smoothed.labels);
  ASSERT_EQ(t.size(), smoothed.classes.size() * kClasses);
  for (size_t r = 0; r < smoothed.classes.size(); ++r) {
    for (int c = 0; c < kClasses; ++c) {
      EXPECT_FLOAT_EQ(t[r * kClasses + c], c == smoothed.classes[r] ? 0.8f : 0.1f);
    }
  }
  const Delivered mixed = Drain(*MustCreate(Options(*data_, 2)));
  EXPECT_EQ(mixed.keys, plain.keys);  // The same samples, mixed.
  EXPECT_FALSE(mixed.tensors[0] == plain.tensors[0]);
}

TEST_F(BatchOpsTest, ByteIdenticalForOneOrTwoWorkersInEveryMode) {
  for (const char* mode : {"batch", "pair", "elem"}) {
    const Delivered one = Drain(*MustCreate(Options(*data_, 1, {Mixup({{"mode", mode}})})));
    const Delivered two = Drain(*MustCreate(Options(*data_, 2, {Mixup({{"mode", mode}})})));
    EXPECT_TRUE(one.tensors[0] == two.tensors[0]) << mode;
    EXPECT_TRUE(one.labels == two.labels) << mode;
  }
}

TEST_F(BatchOpsTest, ResumeMidEpochIsByteIdentical) {
  const Delivered whole = Drain(*MustCreate(Options(*data_, 2)));
  auto first = MustCreate(Options(*data_, 2));
  ASSERT_NE(first, nullptr);
  const Delivered head = Drain(*first, 6);  // Epoch 0's 4 batches and 2 of epoch 1.
  PipelineOptions o = Options(*data_, 2);
  o.resume = first->Checkpoint();
  first.reset();
  const Delivered tail = Drain(*MustCreate(o));
  EXPECT_TRUE(head.tensors[0] + tail.tensors[0] == whole.tensors[0]);
  EXPECT_TRUE(head.labels + tail.labels == whole.labels);
}

// Batches is each delivered batch's rows and bytes by (epoch, batch number).
using Batches = std::map<std::pair<int64_t, int64_t>, std::pair<std::vector<std::string>, std::string>>;

// DrainHalving pulls up to `max_batches` batches, halving the batch size before the third;
// it returns each batch's keys and mixed bytes (images then targets).
Batches DrainHalving(Pipeline& p, int max_batches = 1 << 30) {
  Batches out;
  for (int n = 0; n < max_batches;) {
    if (n == 2) {
      EXPECT_TRUE(p.SetBatchSize(4).ok());
    }
    std::shared_ptr<const Batch> b;
    bool end = false;
    const absl::Status s = p.Next(&b, &end);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok() || (end && p.done())) break;
    if (end) continue;
    std::string bytes(static_cast<const char*>(b->host_data()), b->bytes());
    bytes.append(static_cast<const char*>(b->label.host_data), b->label.bytes());
    out[{b->epoch, b->index}] = {b->keys, bytes};
    ++n;
  }
  return out;
}

// SameWhereTheRowsAgree checks that batches holding the same rows hold the same bytes,
// and returns how many were compared. Which batches the size change reaches first depends
// on how far the source had planned ahead (timing), so only batches of equal rows compare.
int SameWhereTheRowsAgree(const Batches& a, const Batches& b) {
  int compared = 0;
  for (const auto& [at, rows] : a) {
    auto it = b.find(at);
    if (it == b.end() || it->second.first != rows.first) continue;
    EXPECT_TRUE(it->second.second == rows.second) << "epoch " << at.first << " batch " << at.second;
    ++compared;
  }
  return compared;
}

TEST_F(BatchOpsTest, AfterSetBatchSizeTheSameForAnyWorkersAndOnResume) {
  // The mixing is a function of (seed, epoch, batch number) and the batch's rows: after
  // the batch size changes, 1 and 2 workers agree on every batch of the same rows, and a
  // checkpoint taken after the change resumes to exactly what the run went on to deliver.
  const Batches one = DrainHalving(*MustCreate(Options(*data_, 1)));
  const Batches two = DrainHalving(*MustCreate(Options(*data_, 2)));
  int halved = 0;  // Batches of 4 compared: the change is covered.
  for (const auto& [at, rows] : one) {
    auto it = two.find(at);
    halved += rows.first.size() == 4 && it != two.end() && it->second.first == rows.first;
  }
  EXPECT_GT(SameWhereTheRowsAgree(one, two), 0);
  EXPECT_GT(halved, 4);

  auto first = MustCreate(Options(*data_, 2));
  ASSERT_NE(first, nullptr);
  DrainHalving(*first, 5);
  PipelineOptions o = Options(*data_, 2);
  o.batch_size = 4;  // The size the trainer had moved to.
  o.resume = first->Checkpoint();
  ASSERT_EQ(o.resume.batch_size, 4);
  Batches rest;  // What the checkpointed run delivers next.
  for (;;) {
    std::shared_ptr<const Batch> b;
    bool end = false;
    ASSERT_TRUE(first->Next(&b, &end).ok());
    if (end && first->done()) break;
    if (end) continue;
    std::string bytes(static_cast<const char*>(b->host_data()), b->bytes());
    bytes.append(static_cast<const char*>(b->label.host_data), b->label.bytes());
    rest[{b->epoch, b->index}] = {b->keys, bytes};
  }
  first.reset();
  const Batches resumed = DrainHalving(*MustCreate(o), 1 << 30);
  EXPECT_EQ(resumed.size(), rest.size());
  EXPECT_EQ(SameWhereTheRowsAgree(rest, resumed), static_cast<int>(rest.size()));
}

TEST_F(BatchOpsTest, EveryViewIsMixedWithTheSameDraw) {
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode");
  graph.Add("augment").Outputs({"big", "small"}).Option("image_size", "16");
  graph.Add("augment").Name("half").Outputs({"half"}).Option("image_size", "8");
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  ASSERT_TRUE(stages.ok()) << stages.status();
  PipelineOptions plain_o = Options(*data_, 2, {});
  plain_o.stages = *stages;
  PipelineOptions mixed_o = Options(*data_, 2, {Mixup({{"mixup_alpha", "0"}})});  // Cutmix.
  mixed_o.stages = *stages;
  const Delivered plain = Drain(*MustCreate(plain_o));
  const Delivered mixed = Drain(*MustCreate(mixed_o));
  ASSERT_EQ(mixed.tensors.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_FALSE(plain.tensors[k] == mixed.tensors[k]) << k;
}

TEST_F(BatchOpsTest, ALabelOutsideNumClassesIsSkippedAndCounted) {
  // num_classes 2 over 3 classes: class 2's ten samples are skipped, each epoch.
  auto p = MustCreate(Options(*data_, 2, {Op("label_smoothing", {{"num_classes", "2"}})}));
  ASSERT_NE(p, nullptr);
  const Delivered d = Drain(*p);
  EXPECT_EQ(d.classes.size(), size_t{2} * 20);
  for (int64_t c : d.classes) EXPECT_LT(c, 2);
  ASSERT_EQ(d.skip_reasons.size(), size_t{2} * 10);
  for (const std::string& r : d.skip_reasons) EXPECT_EQ(r, "label_out_of_range");
  EXPECT_EQ(p->stats()->Stage("collate")->Errors().at("label_out_of_range"), 20u);
}

// Repeated augmentation (RASampler): 260 images, so that the cut floor(n // 256 * 256 /
// world_size) keeps 256 a rank (128 with two ranks).
class RepeatedAugmentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kError);
    data_ = new std::string(MakeImageFolder(TempDir("repeated"), 2, 130));
  }
  static void TearDownTestSuite() { delete data_; }
  static PipelineOptions Repeats(int workers, int rank = 0, int world_size = 1) {
    PipelineOptions o = Options(*data_, workers, {Mixup()});
    o.repeated_augment = 3;
    o.batch_size = 16;
    o.rank = rank;
    o.world_size = world_size;
    return o;
  }
  static std::string* data_;
};
std::string* RepeatedAugmentTest::data_ = nullptr;

TEST_F(RepeatedAugmentTest, EachSampleComesThreeTimesInARowEachADifferentView) {
  PipelineOptions o = Repeats(2);
  o.batch_ops.clear();  // Unmixed, to compare the copies' own pixels.
  o.epochs = 1;
  auto p = MustCreate(o);
  ASSERT_NE(p, nullptr);
  Delivered d = Drain(*p);
  ASSERT_EQ(d.keys.size(), 256u);  // floor(260 // 256 * 256 / 1).
  const size_t row = 3 * 16 * 16 * 4;
  for (size_t i = 0; i + 2 < d.keys.size(); i += 3) {
    EXPECT_EQ(d.keys[i], d.keys[i + 1]);
    EXPECT_EQ(d.keys[i], d.keys[i + 2]);
    if (i + 3 < d.keys.size()) {
      EXPECT_NE(d.keys[i], d.keys[i + 3]);
    }
    const std::string a = d.tensors[0].substr(i * row, row);
    const std::string b = d.tensors[0].substr((i + 1) * row, row);
    const std::string c = d.tensors[0].substr((i + 2) * row, row);
    EXPECT_TRUE(a != b && b != c && a != c) << "copies of " << d.keys[i] << " are one view";
  }
}

TEST_F(RepeatedAugmentTest, ATransformsStagesCopiesAreDifferentViewsToo) {
  // The op-list stage keys its draws by SampleContext::rng_key as augment does: a fixed
  // resize, then a random brightness, which alone tells the copies apart.
  absl::StatusOr<PipelineOptions> o = ParseSpec(
      absl::StrCat("data: ", *data_,
                   "\nbatch_size: 16\nepochs: 1\nrepeated_augment: 3\ndevice: cpu\n"
                   "stages:\n  - type: read\n  - type: decode\n  - type: transforms\n"
                   "    ops:\n      - resize: {size: [16, 16]}\n"
                   "      - color_jitter: {brightness: 0.8}\n"
                   "      - normalize: {mean: [0.5, 0.5, 0.5], std: [0.2, 0.2, 0.2]}\n"),
      "", "t.yaml");
  ASSERT_TRUE(o.ok()) << o.status();
  auto p = MustCreate(*o);
  ASSERT_NE(p, nullptr);
  const Delivered d = Drain(*p, 2);
  const size_t row = 3 * 16 * 16 * 4;
  ASSERT_EQ(d.keys.size(), 32u);
  for (size_t i = 0; i + 2 < d.keys.size(); i += 3) {
    ASSERT_EQ(d.keys[i], d.keys[i + 1]);
    EXPECT_NE(d.tensors[0].substr(i * row, row), d.tensors[0].substr((i + 1) * row, row));
  }
}

TEST_F(RepeatedAugmentTest, BatchesSayWhichCopyEachRowIs) {
  auto p = MustCreate(Repeats(2));
  ASSERT_NE(p, nullptr);
  std::shared_ptr<const Batch> b;
  bool end = false;
  ASSERT_TRUE(p->Next(&b, &end).ok());
  ASSERT_EQ(b->copies.size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(b->copies[i], static_cast<int32_t>(i % 3));
}

TEST_F(RepeatedAugmentTest, TwoRanksInterleavedAreTheOneRankSequenceCut) {
  // RASampler spreads the repeated order round-robin: rank 0 takes even positions, rank 1
  // odd ones, each cut to 128; interleaved they are the first 256 of the repeated order.
  PipelineOptions o0 = Repeats(2, 0, 2), o1 = Repeats(2, 1, 2), one = Repeats(2);
  for (PipelineOptions* o : {&o0, &o1, &one}) o->epochs = 1;
  const Delivered r0 = Drain(*MustCreate(o0));
  const Delivered r1 = Drain(*MustCreate(o1));
  const Delivered all = Drain(*MustCreate(one));
  ASSERT_EQ(r0.keys.size(), 128u);
  ASSERT_EQ(r1.keys.size(), 128u);
  for (size_t m = 0; m < 128; ++m) {
    EXPECT_EQ(r0.keys[m], all.keys[2 * m]) << m;
    EXPECT_EQ(r1.keys[m], all.keys[2 * m + 1]) << m;
  }
}

TEST_F(RepeatedAugmentTest, ResumeMidEpochWithMixupAndRepeatsIsByteIdentical) {
  const Delivered whole = Drain(*MustCreate(Repeats(2)));
  auto first = MustCreate(Repeats(1));
  ASSERT_NE(first, nullptr);
  const Delivered head = Drain(*first, 21);  // Epoch 0's 16 batches and 5 of epoch 1.
  PipelineOptions o = Repeats(2);
  o.resume = first->Checkpoint();
  first.reset();
  const Delivered tail = Drain(*MustCreate(o));
  EXPECT_EQ(head.keys.size() + tail.keys.size(), 512u);
  EXPECT_TRUE(head.tensors[0] + tail.tensors[0] == whole.tensors[0]);
  EXPECT_TRUE(head.labels + tail.labels == whole.labels);
}

TEST_F(RepeatedAugmentTest, WithoutRepeatsEverySampleOnceAndNoCopies) {
  PipelineOptions o = Repeats(2);
  o.repeated_augment = 1;
  o.epochs = 1;
  o.batch_ops.clear();
  auto p = MustCreate(o);
  ASSERT_NE(p, nullptr);
  std::shared_ptr<const Batch> b;
  bool end = false;
  ASSERT_TRUE(p->Next(&b, &end).ok());
  EXPECT_TRUE(b->copies.empty());
  b.reset();
  Delivered d = Drain(*p);
  std::set<std::string> distinct(d.keys.begin(), d.keys.end());
  EXPECT_EQ(distinct.size(), d.keys.size());
  EXPECT_EQ(d.keys.size(), 260u - 16u);  // The first batch was taken above.
}

// A list file whose largest label does not fit soft targets' int columns: said as what
// it is (the label, the columns, their memory), not "the data has no labels".
TEST_F(BatchOpsTest, ALargestLabelBeyondSoftTargetsIsNamedWithItsMemory) {
  for (const char* label : {"2147483647", "4294967298"}) {
    const std::string dir = TempDir(absl::StrCat("batch_ops_label_", label));
    testing::WriteFile(dir + "/a.jpg", testing::ValidJpeg(32, 32));
    testing::WriteFile(dir + "/list.txt", absl::StrCat("a.jpg\t0\na.jpg\t", label, "\n"));
    for (const StageSpec& op : {Mixup(), Op("label_smoothing", {})}) {
      absl::StatusOr<std::unique_ptr<Pipeline>> p =
          Pipeline::Create(Options(dir + "/list.txt", 1, {op}));
      ASSERT_FALSE(p.ok()) << label;
      EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
      const std::string message(p.status().message());
      EXPECT_NE(message.find(absl::StrCat("the data's largest label is ", label)),
                std::string::npos) << message;
      EXPECT_NE(message.find(" a row, "), std::string::npos) << message;
      EXPECT_NE(message.find("set option 'num_classes'"), std::string::npos) << message;
      EXPECT_EQ(message.find("no labels"), std::string::npos) << message;
    }
  }
}

// num_classes within int range but too many for memory: the plan refuses it, naming
// num_classes among the knobs.
TEST_F(BatchOpsTest, SoftTargetsTooLargeForMemoryAreRefusedByThePlan) {
  PipelineOptions o = Options(*data_, 1, {Mixup({{"num_classes", "2147483647"}})});
  o.memory_limit_mb = 1024;
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("num_classes"), absl::string_view::npos) << p.status();
  EXPECT_EQ(p.status().message().find('\n'), absl::string_view::npos) << p.status();
}

struct Refusal {
  const char* name;
  std::vector<StageSpec> stages_extra;  // Appended to the built-in stages.
  std::vector<StageSpec> batch_ops;
  int batch_size;
  const char* message;
};

class RefusalTest : public BatchOpsTest, public ::testing::WithParamInterface<Refusal> {};

TEST_P(RefusalTest, CreateRefusesInOneLineNamingTheOp) {
  const Refusal& c = GetParam();
  PipelineOptions o = Options(*data_, 1, c.batch_ops);
  o.batch_size = c.batch_size;
  if (!c.stages_extra.empty()) {
    absl::StatusOr<std::vector<StageSpec>> stages = DefaultStages(o);
    ASSERT_TRUE(stages.ok());
    o.stages = *stages;
    for (const StageSpec& s : c.stages_extra) o.stages.push_back(s);
  }
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  EXPECT_NE(p.status().message().find(c.message), absl::string_view::npos) << p.status();
  EXPECT_EQ(p.status().message().find('\n'), absl::string_view::npos) << p.status();
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, RefusalTest,
    ::testing::Values(
        Refusal{"negative_alpha", {}, {Mixup({{"mixup_alpha", "-1"}})}, 8,
                "option 'mixup_alpha' must be >= 0, got -1"},
        Refusal{"prob_2", {}, {Mixup({{"prob", "2"}})}, 8, "option 'prob' must be in [0, 1], got 2"},
        Refusal{"mode_foo", {}, {Mixup({{"mode", "foo"}})}, 8, "must be one of batch, pair, elem"},
        Refusal{"num_classes_0", {}, {Mixup({{"num_classes", "0"}})}, 8,
                "option 'num_classes' must be >= 1"},
        // Range-checked as int64 before becoming the int width (4294967299 is not 3).
        Refusal{"num_classes_2_pow_32_plus_3", {}, {Mixup({{"num_classes", "4294967299"}})}, 8,
                "option 'num_classes' must be at most 2147483647 (soft targets' columns), got "
                "4294967299"},
        Refusal{"smoothing_num_classes_2_pow_32_plus_3", {},
                {Op("label_smoothing", {{"num_classes", "4294967299"}})}, 8,
                "option 'num_classes' must be at most 2147483647"},
        Refusal{"num_classes_2_pow_31", {}, {Mixup({{"num_classes", "2147483648"}})}, 8,
                "got 2147483648; its soft targets would take 8.0 GiB a row, 64.0 GiB a batch "
                "of 8"},
        Refusal{"pair_odd", {}, {Mixup({{"mode", "pair"}})}, 7, "needs an even batch_size, got 7"},
        Refusal{"nothing_to_mix", {}, {Mixup({{"mixup_alpha", "0"}, {"cutmix_alpha", "0"}})}, 8,
                "mixes nothing"},
        Refusal{"batch_op_in_stages", {Op("mixup_cutmix", {})}, {}, 8,
                "is a batch stage: list it under batch_ops:, not stages:"},
        Refusal{"stage_in_batch_ops", {}, {Op("augment", {})}, 8,
                "is a per-sample stage: list it under stages:, not batch_ops:"},
        Refusal{"reserved_name", {}, {[] { StageSpec s = Mixup(); s.name = "upload"; return s; }()},
                8, "is the pipeline's own"}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return info.param.name; });

}  // namespace
}  // namespace flowloader
