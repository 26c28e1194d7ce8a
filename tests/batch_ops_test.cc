// Batch stages in a real pipeline (graph/batch_stage.h): the label tensor (int64 [N] by
// default, float32 [N, C] soft targets with mixup_cutmix or label_smoothing), batch ops'
// output byte-identical for any num_workers, across resume and after SetBatchSize, every
// view mixed, a statistics row per op, labels outside num_classes skipped and counted,
// and the refusals at Create (a batch op in stages, a per-sample one in batch_ops, bad
// options).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/graph_builder.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
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
  d->tensors.resize(b.tensors.size());
  for (size_t k = 0; k < b.tensors.size(); ++k) {
    d->tensors[k].append(static_cast<const char*>(b.tensors[k].host_data), b.tensors[k].bytes());
  }
  d->labels.append(static_cast<const char*>(b.label.host_data), b.label.bytes());
  d->classes.insert(d->classes.end(), b.labels.begin(), b.labels.end());
  d->keys.insert(d->keys.end(), b.keys.begin(), b.keys.end());
  for (const SkippedSample& s : b.skipped) d->skip_reasons.push_back(s.reason);
  ++d->batches;
}

// Drain pulls up to `max_batches` batches, calling `before(n)` before the n-th.
template <typename Hook>
Delivered Drain(Pipeline& p, Hook before, int max_batches = 1 << 30) {
  Delivered d;
  for (int n = 0; n < max_batches;) {
    before(n);
    std::shared_ptr<const Batch> batch;
    bool end = false;
    const absl::Status s = p.Next(&batch, &end);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) break;
    if (end) {
      if (p.done()) break;
      continue;
    }
    Append(*batch, &d);
    ++n;
  }
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

TEST_F(BatchOpsTest, AfterSetBatchSizeTheSameForAnyWorkersAndOnResume) {
  // Halve the batch before the third batch: the mixing follows (seed, epoch, batch
  // number), so 1 and 2 workers agree, and a resume after the change continues exactly.
  auto run = [&](int workers, int max_batches, Pipeline** keep,
                 std::unique_ptr<Pipeline>* owner) {
    *owner = MustCreate(Options(*data_, workers));
    *keep = owner->get();
    return Drain(**owner, [&](int n) {
      if (n == 2) {
        EXPECT_TRUE((*owner)->SetBatchSize(4).ok());
      }
    }, max_batches);
  };
  std::unique_ptr<Pipeline> a, b, c;
  Pipeline* raw = nullptr;
  const Delivered one = run(1, 1 << 30, &raw, &a);
  const Delivered two = run(2, 1 << 30, &raw, &b);
  EXPECT_TRUE(one.tensors[0] == two.tensors[0]);
  EXPECT_TRUE(one.labels == two.labels);
  const Delivered head = run(2, 5, &raw, &c);
  PipelineOptions o = Options(*data_, 2);
  o.batch_size = 4;  // The size the trainer had moved to.
  o.resume = c->Checkpoint();
  c.reset();
  const Delivered tail = Drain(*MustCreate(o));
  EXPECT_TRUE(head.tensors[0] + tail.tensors[0] == one.tensors[0]);
  EXPECT_TRUE(head.labels + tail.labels == one.labels);
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
