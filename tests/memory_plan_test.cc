// memory_plan_test.cc: Pipeline::Create plans its memory before allocating it: the batch
// pool holds at most an epoch's samples per buffer, and a plan above the memory the
// pipeline may use is refused in one line naming the bytes and the knobs.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/graph_builder.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "runtime/tune.h"
#include "stages/core/memory_plan.h"
#include "stages/core/resources.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Drain;
using testing::RunAll;
using testing::MakeImageFolder;
using testing::SmallCpuOptions;
using testing::TempDirForTest;

constexpr int kImages = 10;
// What the plan leaves of memory_limit_mb for the process itself (kUnplannedBytes,
// graph/internal/memory_planning.h): the plan fits the limit less this.
constexpr int64_t kProcessBytes = int64_t{48} << 20;
// A memory_limit_mb far above any machine's memory: a plan made under it has the parts
// only a limit adds (the workers' sample room), so a limit set from its total fits it.
constexpr int64_t kAnyLimitMb = int64_t{1} << 30;

class MemoryPlanTest : public ::testing::Test {
 protected:
  void SetUp() override { data_ = MakeImageFolder(TempDirForTest("memory_plan_"), 2, 5); }

  // PartBytes is the bytes of `plan`'s part `key`, 0 when it has none.
  static int64_t PartBytes(const MemoryPlan& plan, const std::string& key) {
    int64_t bytes = 0;
    for (const MemoryPart& part : plan.parts()) bytes += part.key == key ? part.bytes : 0;
    return bytes;
  }
  static std::map<std::string, int64_t> Plan(const Pipeline& pipeline) {
    std::map<std::string, int64_t> plan;
    for (const auto& [key, bytes] : pipeline.stats()->memory_plan) plan[key] = bytes;
    return plan;
  }

  std::string data_;
};

TEST_F(MemoryPlanTest, BatchSizeAboveTheDatasetAllocatesOnlyTheEpochsRows) {
  PipelineOptions o = SmallCpuOptions(data_, /*batch_size=*/100000, nullptr);
  o.prefetch_batches = 3;  // A fixed pool (auto would start at 2 buffers and grow).
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const int64_t sample_bytes = static_cast<int64_t>((*pipeline)->output().sample_bytes);
  const int64_t pool = int64_t{o.prefetch_batches} * kImages * sample_bytes;
  const int64_t labels = int64_t{o.prefetch_batches} * kImages * 8;  // int64 labels.
  // The gauge of what the pool holds, and the plan, both count 10 rows, not 100000.
  EXPECT_EQ((*pipeline)->stats()->host_bytes_budget.load(), pool + labels);
  EXPECT_EQ(Plan(**pipeline)["batch_pool_bytes"], pool);
  EXPECT_EQ(Plan(**pipeline)["batch_labels_bytes"], labels);
  const testing::Drained d = Drain(pipeline->get());
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.samples, kImages);
}

TEST_F(MemoryPlanTest, PlanIsInTheStatsWithItsParts) {
  PipelineOptions o = SmallCpuOptions(data_, /*batch_size=*/4, nullptr);
  o.prefetch_batches = 3;
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  std::map<std::string, int64_t> plan = Plan(**pipeline);
  const int64_t sample_bytes = static_cast<int64_t>((*pipeline)->output().sample_bytes);
  EXPECT_EQ(plan["batch_pool_bytes"], 3 * 4 * sample_bytes);
  // decode's budget as the dataset can use it: 10 files × 8 KiB, within the 256 MiB.
  EXPECT_EQ(plan["seek_index_bytes"], 10 * (8 << 10));
  EXPECT_EQ(plan["decode_scratch_bytes"], 2 * (2 * 2 * 16 * 16 * 3));  // 2 workers.
  // decode's per-decode codec budget (max_decode_mb 8), once per worker.
  EXPECT_EQ(plan["decode_codec_bytes"], 2 * (8 << 20));
  // What each decode thread keeps between samples: a file's bytes up to 1 MiB and a
  // JPEG's scan copy up to 1 MiB, once per worker.
  EXPECT_EQ(plan["decode_kept_bytes"], 2 * (2 << 20));
  EXPECT_EQ(plan["batch_labels_bytes"], 3 * 4 * 8);  // int64 labels in each buffer.
  EXPECT_EQ(plan["total_bytes"], plan["batch_pool_bytes"] + plan["batch_labels_bytes"] +
                                     plan["seek_index_bytes"] + plan["decode_codec_bytes"] +
                                     plan["decode_kept_bytes"] + plan["decode_scratch_bytes"]);
  EXPECT_GT(plan["available_bytes"], 0);  // MemAvailable is always readable on Linux.
}

TEST_F(MemoryPlanTest, LargeImagesAreRefusedAtCreateAboveTheLimit) {
  PipelineOptions o = SmallCpuOptions(data_, /*batch_size=*/4, nullptr);
  o.image_size = 5000;
  o.prefetch_batches = 3;
  o.memory_limit_mb = 1024;
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_FALSE(pipeline.ok());
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(pipeline.status().message(),
            "the batch pool needs 3.4 GiB (prefetch 3 × batch 4 × 3×5000² float32) but 976.0 MiB "
            "is available (memory_limit_mb 1.0 GiB less 48.0 MiB the process holds itself): "
            "lower batch_size, image_size or prefetch_batches");
}

// The seek index is planned from the dataset (files × 8 KiB, within seek_index_mb), not
// at its whole 256 MiB budget: a small dataset runs in a small container, under a limit
// far below 257 MiB.
TEST_F(MemoryPlanTest, TheSeekIndexIsPlannedFromTheDatasetsSize) {
  PipelineOptions o = SmallCpuOptions(data_, 4, nullptr);
  // Codec memory 2 × 8 MiB + kept buffers 2 × 2 MiB + pool 36 KiB + seek index 80 KiB
  // + scratch 6 KiB, the sample room (2 × 32 MiB less the scratch) and the 48 MiB the
  // process holds itself.
  o.memory_limit_mb = 21 + 64 + (kProcessBytes >> 20);
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(plan->Describe().find("seek index 80.0 KiB (10 files × 8.0 KiB, within decode "
                                  "seek_index_mb 256)"),
            std::string::npos)
      << plan->Describe();
  EXPECT_TRUE(Pipeline::Create(o).ok());
  // A budget below what the files could use is the budget.
  o.stages = *DefaultStages(o);
  o.stages[1].args["seek_index_mb"] = "0";
  plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const MemoryPart& part : plan->parts()) EXPECT_NE(part.key, "seek_index");
}

// Over its budget, a configuration first gives up its optional caches: the seek index
// shrinks (here to about half, at MiB steps) and the pipeline runs within the limit,
// where before it was refused; without any seek index it would still be refused.
TEST_F(MemoryPlanTest, TheSeekIndexShrinksToFitTheLimitBeforeARefusal) {
  // 2 × 300 files: a seek index of 600 × 8 KiB = 4.7 MiB.
  const std::string data = MakeImageFolder(TempDirForTest("memory_plan_seek_"), 2, 300);
  PipelineOptions o = SmallCpuOptions(data, 4, nullptr);
  o.prefetch_batches = 2;
  o.epochs = 1;
  o.memory_limit_mb = kAnyLimitMb;
  absl::StatusOr<MemoryPlan> full = Pipeline::PlanMemoryAsGiven(o);
  ASSERT_TRUE(full.ok()) << full.status();
  int64_t seek = 0;
  for (const MemoryPart& part : full->parts()) {
    if (part.key == "seek_index") seek = part.bytes;
  }
  ASSERT_EQ(seek, 600 * (8 << 10));
  o.memory_limit_mb = (full->total_bytes() - seek / 2 + kProcessBytes) >> 20;
  const int64_t limit = (o.memory_limit_mb << 20) - kProcessBytes;  // The plan's.
  ASSERT_LT(full->total_bytes() - seek, limit);
  ASSERT_FALSE(full->CheckFits(Pipeline::MemoryBudgetFor(o)).ok());  // Refused as given.
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  std::map<std::string, int64_t> plan = Plan(**pipeline);
  EXPECT_LT(plan["seek_index_bytes"], seek);
  EXPECT_LE(plan["total_bytes"], limit);
  EXPECT_EQ(Drain(pipeline->get()).samples, 600);
  // PlanMemory (flowloader plan) shows the plan Create made.
  absl::StatusOr<MemoryPlan> planned = Pipeline::PlanMemory(o);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->total_bytes(), plan["total_bytes"]);
  // A limit that the plan does not fit even without a seek index, one buffer and the
  // workers' sample room: the refusal stands.
  o.memory_limit_mb = (full->total_bytes() - seek - PartBytes(*full, "sample_room") -
                       (2 << 20) + kProcessBytes) >> 20;
  EXPECT_EQ(Pipeline::Create(o).status().code(), absl::StatusCode::kResourceExhausted);
}

// An op list's working images are in the plan at the sizes its ops' arguments give: a
// center_crop or a padded random_crop of 16384 (two 768 MiB images a worker) is refused
// at Create under memory_limit_mb 1024, naming the op and its argument, instead of
// being allocated.
TEST_F(MemoryPlanTest, AnOpsLargestImageIsPlannedAndRefusedNamingTheOp) {
  for (const auto& [ops, knob] : std::vector<std::pair<std::string, std::string>>{
           {"center_crop(size=16384); resize(size=[32, 32]); normalize()", "center_crop size"},
           {"random_crop(size=16384, pad_if_needed=true); resize(size=[32, 32]); normalize()",
            "random_crop size"}}) {
    PipelineOptions o = SmallCpuOptions(data_, 4, nullptr);
    o.memory_limit_mb = 1024;
    o.stages = {StageSpec{"read"}, StageSpec{"decode"},
                StageSpec{"transforms", "", {{"ops", ops}}, 0}};
    absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
    ASSERT_FALSE(pipeline.ok()) << ops;
    EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kResourceExhausted);
    const std::string message(pipeline.status().message());
    EXPECT_NE(message.find("transforms scratch"), std::string::npos) << message;
    EXPECT_NE(message.find(knob), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// A part too big for the limit names the argument the user wrote, not image_size, which
// the list does not have: the batch pool of five_crop's or ten_crop's crops, the decode
// scratch of a random_resized_crop head (or a resize head's absorbed center_crop).
TEST_F(MemoryPlanTest, APartsRefusalNamesTheOpArgumentThatSizesIt) {
  struct Case {
    std::string ops, part, knob;
  };
  for (const Case& c : std::vector<Case>{
           {"resize(size=8000); five_crop(size=4000); normalize()", "batch pool",
            "five_crop size"},
           {"resize(size=6000); ten_crop(size=3000); normalize()", "batch pool",
            "ten_crop size"},
           {"random_resized_crop(size=16384); resize(size=[32, 32]); normalize()",
            "decode scratch", "random_resized_crop size"},
           {"resize(size=16384); center_crop(size=16384); resize(size=[32, 32]); normalize()",
            "decode scratch", "center_crop size"}}) {
    PipelineOptions o = SmallCpuOptions(data_, 4, nullptr);
    o.prefetch_batches = 1;
    o.memory_limit_mb = 1024;
    o.stages = {StageSpec{"read"}, StageSpec{"decode"},
                StageSpec{"transforms", "", {{"ops", c.ops}}, 0}};
    absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
    ASSERT_FALSE(pipeline.ok()) << c.ops;
    EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kResourceExhausted);
    const std::string message(pipeline.status().message());
    EXPECT_NE(message.find("the " + c.part + " needs"), std::string::npos) << message;
    EXPECT_NE(message.find(c.knob), std::string::npos) << message;
    EXPECT_EQ(message.find("image_size"), std::string::npos) << message;
  }
}

// `flowloader tune`: a ram_budget that fits the smallest configuration only with less
// seek index measures configurations (the index shrunk) instead of refusing them all.
TEST_F(MemoryPlanTest, TuneShrinksTheSeekIndexToItsRamBudget) {
  const std::string data = MakeImageFolder(TempDirForTest("memory_plan_tune_"), 2, 300);
  TuneOptions t;
  t.pipeline = SmallCpuOptions(data, 4, nullptr);
  t.cpu_budget = 1;
  t.batch_sizes = {4};
  t.prefetch_choices = {2};
  t.trial_seconds = 0.1;
  t.time_budget_seconds = 20;
  PipelineOptions smallest = t.pipeline;
  smallest.num_workers = 1;
  smallest.batch_size = 4;
  smallest.prefetch_batches = 2;
  absl::StatusOr<MemoryPlan> full = Pipeline::PlanMemoryAsGiven(smallest);
  ASSERT_TRUE(full.ok()) << full.status();
  const int64_t seek = 600 * (8 << 10);
  // The process's memory, the plan without a third of the index: below what it asks.
  t.ram_budget_bytes = ResidentBytes() + full->total_bytes() - seek / 3;
  absl::StatusOr<TuneResult> result = Tune(t);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->trials.empty());
}

// An op whose image size only the sample knows (resize of the shorter side) is checked
// at run time against what a worker may hold for one sample (the budget the plan leaves,
// shared by the workers): over it, the sample is skipped as op_memory, naming the size
// and the knob, instead of being allocated; the same list at a size that fits delivers
// every sample under the same limit.
TEST_F(MemoryPlanTest, AnOpImageOverAWorkersShareIsSkippedAsOpMemory) {
  const auto with_ops = [this](const std::string& ops) {
    GraphBuilder graph;
    graph.Add("read");
    graph.Add("decode");
    graph.Add("transforms").Option("ops", ops);
    absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
    EXPECT_TRUE(stages.ok()) << stages.status();
    PipelineOptions o = SmallCpuOptions(data_, 4, nullptr);
    o.stages = stages.ok() ? *stages : std::vector<StageSpec>{};
    o.prefetch_batches = 2;
    return o;
  };
  // 4096 on the shorter side: 4096 × ~5000 × 3 B ≈ 60 MiB an image, in and out.
  PipelineOptions big = with_ops("resize(size=4096); random_crop(size=16); normalize()");
  big.memory_limit_mb = kAnyLimitMb;
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(big);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // 48 MiB for the process and ~8 MiB for the workers' images beyond the plan.
  big.memory_limit_mb = ((plan->total_bytes() + (int64_t{56} << 20)) >> 20) + 1;
  {
    testing::LogCapture log;
    absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(big);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status();
    EXPECT_EQ(Drain(pipeline->get()).samples, 0);  // Every sample is skipped.
    const StageStats* transforms = (*pipeline)->stats()->Stage("transforms");
    ASSERT_NE(transforms, nullptr);
    EXPECT_EQ(transforms->Errors(), (std::map<std::string, uint64_t>{{"op_memory", kImages}}));
    EXPECT_GE(log.LinesNaming("resize (op 1) making "), 1);
    EXPECT_GE(log.LinesNaming("a worker may hold for one sample (memory_limit_mb"), 1);
    EXPECT_GE(log.LinesNaming("raise memory_limit_mb or lower num_workers"), 1);
  }

  PipelineOptions fits = with_ops("resize(size=64); random_crop(size=16); normalize()");
  fits.memory_limit_mb = big.memory_limit_mb;
  const testing::Delivered out = RunAll(fits);
  EXPECT_TRUE(out.status.ok()) << out.status;
  EXPECT_TRUE(out.skipped.empty());
  EXPECT_EQ(out.keys.size(), static_cast<size_t>(kImages));
}

// A whole decode over a worker's share is skipped as decode_memory, and the message
// names both parts of what it would hold: the pixels and 2 × the encoded file (its bytes
// and the decoder's copy), so that the sum it states adds up.
TEST_F(MemoryPlanTest, ADecodeMemorySkipNamesTheEncodedBytesItCounts) {
  const std::string data = TempDirForTest("memory_plan_decode_");
  std::filesystem::create_directories(data + "/a");
  testing::WriteFile(data + "/a/big.jpg", testing::ValidJpeg(4000, 3000));  // 34.3 MiB.
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode");
  graph.Add("transforms").Option(
      "ops", "random_rotation(degrees=[30, 30], expand=true); resize(size=[16, 16]); "
             "normalize()");
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  ASSERT_TRUE(stages.ok()) << stages.status();
  PipelineOptions o = SmallCpuOptions(data, 1, nullptr);
  o.stages = *stages;
  o.num_workers = 1;
  o.prefetch_batches = 1;
  o.memory_limit_mb = kAnyLimitMb;
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Just the unplanned 48 MiB beyond the plan: the worker's share is its 32 MiB minimum,
  // the plan's sample room and decode scratch.
  o.memory_limit_mb = ((plan->total_bytes() + (int64_t{48} << 20)) >> 20) + 1;
  testing::LogCapture log;
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  EXPECT_EQ(Drain(pipeline->get()).samples, 0);
  const StageStats* decode = (*pipeline)->stats()->Stage("decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->Errors(), (std::map<std::string, uint64_t>{{"decode_memory", 1}}));
  const int64_t file_bytes = static_cast<int64_t>(testing::ReadFile(data + "/a/big.jpg").size());
  EXPECT_EQ(log.LinesNaming(absl::StrCat("decoding the whole 4000x3000 image (34.3 MiB of "
                                         "pixels, and 2 × the ",
                                         FormatBytes(file_bytes),
                                         " encoded file: its bytes and the decoder's copy of "
                                         "them) needs ")),
            1);
}

// With a fixed prefetch_batches, a plan over its budget even without the seek index runs
// with fewer batch buffers (as many as fit, logged) before it is refused; one buffer that
// does not fit is still refused.
TEST_F(MemoryPlanTest, PrefetchShrinksToFitTheLimitBeforeARefusal) {
  PipelineOptions o = SmallCpuOptions(data_, 4, nullptr);
  o.image_size = 256;  // 768 KiB a sample: 3 MiB a buffer of 4.
  o.prefetch_batches = 8;
  o.memory_limit_mb = kAnyLimitMb;
  absl::StatusOr<MemoryPlan> full = Pipeline::PlanMemoryAsGiven(o);
  ASSERT_TRUE(full.ok()) << full.status();
  int64_t pool = 0;
  for (const MemoryPart& part : full->parts()) {
    if (part.key == "batch_pool") pool = part.bytes;
  }
  const int64_t per_buffer = pool / 8;
  ASSERT_GT(per_buffer, int64_t{1} << 20);
  // Room for about 4 of the 8 buffers.
  o.memory_limit_mb = (full->total_bytes() - 4 * per_buffer + kProcessBytes) >> 20;
  {
    testing::LogCapture log;
    absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status();
    EXPECT_GE((*pipeline)->prefetch_batches(), 2);
    EXPECT_LT((*pipeline)->prefetch_batches(), 8);
    EXPECT_LE(Plan(**pipeline)["total_bytes"], (o.memory_limit_mb << 20) - kProcessBytes);
    EXPECT_EQ(log.LinesNaming("prefetch_batches cut from 8 to"), 1);
    EXPECT_EQ(Drain(pipeline->get()).samples, kImages);
  }
  // Not even one buffer fits, without the workers' sample room: the refusal.
  o.memory_limit_mb =
      (full->total_bytes() - pool - PartBytes(*full, "sample_room") + kProcessBytes) >> 20;
  absl::StatusOr<std::unique_ptr<Pipeline>> refused = Pipeline::Create(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
}

// Under memory_limit_mb the least a worker may hold for one sample (32 MiB, less the
// decode memory the plan gives it) is a plan part, the sample room: a plan that filled
// the limit less the process's 48 MiB let each worker hold 32 MiB beside it. Over the
// limit, the seek index and prefetch_batches are cut first, then the room (logged, naming
// memory_limit_mb and num_workers), down to none; only a plan that does not fit without
// it is refused. Without a limit there is no room.
TEST_F(MemoryPlanTest, TheSampleRoomIsPlannedUnderALimitAndCutLast) {
  PipelineOptions o = SmallCpuOptions(data_, 4, nullptr);
  o.prefetch_batches = 2;
  absl::StatusOr<MemoryPlan> free = Pipeline::PlanMemoryAsGiven(o);
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_EQ(PartBytes(*free, "sample_room"), 0);
  o.memory_limit_mb = kAnyLimitMb;
  absl::StatusOr<MemoryPlan> full = Pipeline::PlanMemoryAsGiven(o);
  ASSERT_TRUE(full.ok()) << full.status();
  const int64_t room = PartBytes(*full, "sample_room");
  EXPECT_EQ(room, o.num_workers * (int64_t{32} << 20) - PartBytes(*full, "decode_scratch") -
                      PartBytes(*full, "decode_kept"));
  EXPECT_EQ(full->total_bytes(), free->total_bytes() + room);
  // Room for everything but the seek index, one buffer and half the sample room.
  const int64_t pool = PartBytes(*full, "batch_pool") + PartBytes(*full, "batch_labels");
  o.memory_limit_mb = (full->total_bytes() - PartBytes(*full, "seek_index") - pool / 2 -
                       room / 2 + kProcessBytes) >> 20;
  {
    testing::LogCapture log;
    absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status();
    std::map<std::string, int64_t> plan = Plan(**pipeline);
    EXPECT_GT(plan["sample_room_bytes"], 0);
    EXPECT_LT(plan["sample_room_bytes"], room);
    EXPECT_LE(plan["total_bytes"], (o.memory_limit_mb << 20) - kProcessBytes);
    EXPECT_EQ((*pipeline)->prefetch_batches(), 1);
    EXPECT_EQ(log.LinesNaming("sample room (32 MiB a worker less its planned decode memory) "
                              "cut to"),
              1);
    EXPECT_EQ(log.LinesNaming("raise memory_limit_mb or lower num_workers"), 1);
    EXPECT_EQ(Drain(pipeline->get()).samples, kImages);  // Small photos fit what is left.
  }
  // Without room for one buffer beside the rest: refused in one line naming the limit
  // and num_workers, all the parts, never the room alone (which is cut first).
  o.memory_limit_mb =
      (full->total_bytes() - room - PartBytes(*full, "seek_index") - pool + kProcessBytes) >> 20;
  const absl::Status refused = Pipeline::Create(o).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  const std::string message(refused.message());
  EXPECT_EQ(message.find("the sample room needs"), std::string::npos) << message;
  EXPECT_NE(message.find("the pipeline needs"), std::string::npos) << message;
  EXPECT_NE(message.find("memory_limit_mb"), std::string::npos) << message;
  EXPECT_NE(message.find("num_workers"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace flowloader
