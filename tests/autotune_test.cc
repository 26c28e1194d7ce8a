// autotune_test.cc: the running graph changes its worker count and its batch buffers
// (what the online autotuner does) without losing, duplicating, reordering or changing a
// sample; num_workers: auto through the public API delivers what a fixed run delivers.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "graph/pipeline_graph.h"
#include "graph/stage.h"
#include "graph/stage_stats.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
#include "stages/reader/dataset.h"
#include "stages/reader/sampler.h"
#include "stages/upload/device_memory.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::MakeImageFolder;
using testing::TempDir;

// Delivered is one batch as the consumer saw it.
struct Delivered {
  int64_t epoch = 0;
  int64_t index = 0;
  std::vector<int64_t> indices;
  std::vector<uint8_t> bytes;
};

// Bodies counts the bodies of the "autotune_probe" stage running at once, and the most.
std::atomic<int> bodies{0};
std::atomic<int> most_bodies{0};

void RegisterProbeStage() {
  static const bool registered =
      StageRegistry::Global()
          .RegisterFunction("autotune_probe", "counts concurrent bodies (test)",
                            [](SampleContext&) {
                              const int now = bodies.fetch_add(1) + 1;
                              int most = most_bodies.load();
                              while (now > most && !most_bodies.compare_exchange_weak(most, now)) {
                              }
                              // Long enough that bodies on other workers overlap it.
                              std::this_thread::sleep_for(std::chrono::milliseconds(2));
                              bodies.fetch_sub(1);
                              return absl::OkStatus();
                            })
          .ok();
  ASSERT_TRUE(registered);
}

class GraphResizeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(MakeImageFolder(TempDir("autotune_folder"), 3, 15));  // 45.
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }

  void SetUp() override {
    DatasetOptions d;
    d.path = *data_;
    auto dataset = Dataset::Open(d);
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    dataset_ = std::move(*dataset);
    SamplerOptions s;
    s.seed = 7;
    auto sampler = Sampler::Create(dataset_->size(), s);
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    sampler_ = std::move(*sampler);
    DeviceOptions m;
    m.device = DeviceChoice::kCpu;
    auto memory = DeviceMemory::Create(m);
    ASSERT_TRUE(memory.ok()) << memory.status();
    memory_ = std::move(*memory);
  }

  GraphOptions Options() const {
    PipelineOptions p;
    p.image_size = 24;
    GraphOptions o;
    o.stages = *DefaultStages(p);
    o.batch_size = 4;
    o.epochs = 3;
    o.seed = 11;
    return o;
  }

  std::unique_ptr<PipelineGraph> Create(const GraphOptions& o) {
    auto graph = PipelineGraph::Create(o, dataset_, sampler_, memory_,
                                       std::make_shared<PipelineStats>("test"));
    EXPECT_TRUE(graph.ok()) << graph.status();
    return graph.ok() ? std::move(*graph) : nullptr;
  }

  // Run pops every batch; before each pop it calls `between(k)` with the batches popped
  // so far. Batches are released at once unless `hold` of them are kept (then the
  // oldest is released as a new one comes).
  template <typename Between>
  std::vector<Delivered> Run(PipelineGraph& graph, Between between, size_t hold = 0) {
    std::vector<Delivered> out;
    std::vector<std::shared_ptr<const Batch>> held;
    graph.Start();
    for (int k = 0;; ++k) {
      between(k);
      PipelineGraph::Popped popped;
      const absl::Status s = graph.Pop(&popped);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok() || popped.done) break;
      if (popped.batch == nullptr) continue;
      const Batch& b = *popped.batch;
      const auto* bytes = static_cast<const uint8_t*>(b.host_data());
      out.push_back({b.epoch, b.index, b.indices, {bytes, bytes + b.bytes()}});
      held.push_back(std::move(popped.batch));
      if (held.size() > hold) held.erase(held.begin());
    }
    return out;
  }

  static std::string* data_;
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const Sampler> sampler_;
  std::shared_ptr<DeviceMemory> memory_;
};

std::string* GraphResizeTest::data_ = nullptr;

void ExpectSameBatches(const std::vector<Delivered>& fixed, const std::vector<Delivered>& tuned) {
  ASSERT_EQ(fixed.size(), tuned.size());
  for (size_t i = 0; i < fixed.size(); ++i) {
    EXPECT_EQ(fixed[i].epoch, tuned[i].epoch) << "batch " << i;
    EXPECT_EQ(fixed[i].index, tuned[i].index) << "batch " << i;
    EXPECT_EQ(fixed[i].indices, tuned[i].indices) << "batch " << i;
    EXPECT_TRUE(fixed[i].bytes == tuned[i].bytes) << "batch " << i << "'s tensor differs";
  }
}

void ExpectEverySampleOncePerEpoch(const std::vector<Delivered>& run, size_t samples) {
  std::vector<std::multiset<int64_t>> epochs;
  for (const Delivered& d : run) {
    if (epochs.size() <= static_cast<size_t>(d.epoch)) epochs.resize(d.epoch + 1);
    epochs[d.epoch].insert(d.indices.begin(), d.indices.end());
  }
  for (size_t e = 0; e < epochs.size(); ++e) {
    EXPECT_EQ(epochs[e].size(), samples) << "epoch " << e;
    EXPECT_EQ(std::set<int64_t>(epochs[e].begin(), epochs[e].end()).size(), samples)
        << "epoch " << e << " repeats a sample";
  }
}

TEST_F(GraphResizeTest, ResizingWorkersAndBuffersMidRunKeepsBatchesByteIdentical) {
  GraphOptions fixed = Options();
  fixed.num_workers = 2;
  fixed.prefetch_batches = 3;
  auto reference = Create(fixed);
  ASSERT_NE(reference, nullptr);
  const std::vector<Delivered> expected = Run(*reference, [](int) {});

  GraphOptions tuned = Options();
  tuned.num_workers = 1;
  tuned.max_workers = 3;
  tuned.prefetch_batches = 2;
  tuned.max_prefetch_batches = 5;
  auto graph = Create(tuned);
  ASSERT_NE(graph, nullptr);
  PipelineGraph* g = graph.get();
  std::vector<int> buffer_counts;
  // Every pop changes both knobs: workers 1, 2, 3, 1, ...; buffers up and down over
  // [1, 5], while the consumer holds two batches (so shrinking has to wait for them).
  const std::vector<Delivered> got = Run(
      *graph,
      [g, &buffer_counts](int k) {
        ASSERT_TRUE(g->SetWorkers(1 + k % 3).ok());
        ASSERT_TRUE(g->SetPrefetchBatches(1 + (k * 3) % 5).ok());
        buffer_counts.push_back(g->prefetch_batches());
      },
      /*hold=*/2);
  ExpectSameBatches(expected, got);
  ExpectEverySampleOncePerEpoch(got, dataset_->size());
  EXPECT_EQ(*std::max_element(buffer_counts.begin(), buffer_counts.end()), 5);
  EXPECT_EQ(*std::min_element(buffer_counts.begin(), buffer_counts.end()), 1);
}

TEST_F(GraphResizeTest, OneWorkerRunsOneBodyAtATimeInAGraphBuiltForThree) {
  RegisterProbeStage();
  GraphOptions o = Options();
  o.stages.push_back(StageSpec{"autotune_probe", "probe", {}, 0});
  o.epochs = 1;
  o.num_workers = 1;
  o.max_workers = 3;
  auto graph = Create(o);
  ASSERT_NE(graph, nullptr);
  ASSERT_EQ(graph->effective_threads(), 3);
  most_bodies = 0;
  const std::vector<Delivered> got = Run(*graph, [](int) {});
  ExpectEverySampleOncePerEpoch(got, dataset_->size());
  EXPECT_EQ(most_bodies.load(), 1);
}

TEST_F(GraphResizeTest, ABufferThePlanCannotHoldIsRefusedBeforeAllocating) {
  GraphOptions o = Options();
  o.prefetch_batches = 2;
  o.max_prefetch_batches = 6;
  GraphOptions two = o;
  two.max_prefetch_batches = 0;
  two.memory_limit_bytes = int64_t{1} << 50;  // Planned with a limit's parts (sample room).
  auto plan = PipelineGraph::Plan(two, *dataset_, *sampler_, *memory_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Room for two buffers and half of a third; a buffer is 4 rows of 3×24² float32 and
  // their int64 labels. The plan fits the limit less the 48 MiB the process holds itself.
  const int64_t buffer = 4 * 3 * 24 * 24 * 4 + 4 * 8;
  o.memory_limit_bytes = plan->total_bytes() + buffer / 2 + (int64_t{48} << 20);
  auto stats = std::make_shared<PipelineStats>("tight");
  auto graph = PipelineGraph::Create(o, dataset_, sampler_, memory_, stats);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const absl::Status s = (*graph)->SetPrefetchBatches(3);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "prefetch")) << s;
  EXPECT_EQ((*graph)->prefetch_batches(), 2);
  EXPECT_EQ(stats->host_bytes_budget.load(), 2 * buffer);
}

TEST_F(GraphResizeTest, OutOfRangeValuesAreRefusedWithTheRange) {
  GraphOptions o = Options();
  o.num_workers = 1;
  o.max_workers = 2;
  o.prefetch_batches = 2;
  o.max_prefetch_batches = 3;
  auto graph = Create(o);
  ASSERT_NE(graph, nullptr);
  for (int bad : {0, 3}) {
    const absl::Status s = graph->SetWorkers(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(s.message(), "[1, 2]")) << s;
  }
  EXPECT_EQ(graph->SetPrefetchBatches(4).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(graph->workers(), 1);
  GraphOptions below = o;
  below.max_workers = 0;
  below.num_workers = 3;
  below.max_workers = 2;
  auto refused = PipelineGraph::Create(below, dataset_, sampler_, memory_,
                                       std::make_shared<PipelineStats>("below"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
}

// Through the public API: num_workers and prefetch_batches on auto deliver the same
// batches as a fixed run, and the stats say the autotuner ran.
TEST_F(GraphResizeTest, AutoKnobsDeliverWhatAFixedRunDelivers) {
  PipelineOptions p;
  p.data = *data_;
  p.image_size = 24;
  p.batch_size = 4;
  p.epochs = 2;
  p.seed = 5;
  p.device = DeviceChoice::kCpu;
  auto collect = [](Pipeline& pipeline) {
    std::vector<std::vector<uint8_t>> out;
    while (true) {
      std::shared_ptr<const Batch> batch;
      bool end = false;
      const absl::Status s = pipeline.Next(&batch, &end);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok() || (end && pipeline.done())) break;
      if (end) continue;
      const auto* bytes = static_cast<const uint8_t*>(batch->host_data());
      out.emplace_back(bytes, bytes + batch->bytes());
    }
    return out;
  };
  p.num_workers = 2;
  p.prefetch_batches = 3;
  auto fixed = Pipeline::Create(p);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  p.num_workers = PipelineOptions::kAuto;
  p.prefetch_batches = PipelineOptions::kAuto;
  p.cpu_budget = 2;
  auto tuned = Pipeline::Create(p);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_TRUE(collect(**fixed) == collect(**tuned));
  const AutotuneStats& a = (*tuned)->stats()->autotune;
  EXPECT_TRUE(a.enabled.load());
  EXPECT_GE((*tuned)->num_workers(), 1);
  EXPECT_LE((*tuned)->num_workers(), 2);
  EXPECT_EQ((*tuned)->effective_threads(), 2);
  EXPECT_FALSE((*fixed)->stats()->autotune.enabled.load());
}

// num_workers: auto starts at the CPU budget (starting at 1 made the first batch 2×
// later than the best fixed setting), and shrinks to 1 while the consumer is the
// bottleneck (calm windows: it never waits).
TEST_F(GraphResizeTest, AutoWorkersStartAtTheCpuBudgetAndShrinkForASlowConsumer) {
  PipelineOptions p;
  p.data = *data_;
  p.image_size = 24;
  p.batch_size = 2;
  p.epochs = 0;  // Until stopped.
  p.device = DeviceChoice::kCpu;
  p.num_workers = PipelineOptions::kAuto;
  p.prefetch_batches = 3;
  p.cpu_budget = 2;
  auto tuned = Pipeline::Create(p);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ((*tuned)->num_workers(), 2);
  // A consumer far slower than decoding: the workers idle, the consumer never waits.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while ((*tuned)->num_workers() > 1 && absl::Now() < deadline) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    ASSERT_TRUE((*tuned)->Next(&batch, &end).ok());
    absl::SleepFor(absl::Milliseconds(30));
  }
  EXPECT_EQ((*tuned)->num_workers(), 1);
}

TEST_F(GraphResizeTest, ARamBudgetBelowOneBufferIsRefusedNamingIt) {
  PipelineOptions p;
  p.data = *data_;
  p.device = DeviceChoice::kCpu;
  p.prefetch_batches = PipelineOptions::kAuto;
  p.ram_budget_bytes = 1 << 20;
  auto refused = Pipeline::Create(p);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "ram_budget")) << refused.status();
  EXPECT_EQ(std::string(refused.status().message()).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace flowloader
