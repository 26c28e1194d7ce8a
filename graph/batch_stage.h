// batch_stage.h: the batch-stage interface: a stage that runs once per collated batch.
//
// Per-sample stages (stage.h) see one sample; a batch stage sees a whole batch: every
// batch tensor (each augment view) and the label tensor, in the batch buffer, after the
// sequencer (so in batch order) and before upload. MixUp/CutMix and label smoothing are
// batch stages (stages/mix/). Batch stage types live in the same StageRegistry as
// per-sample ones, with StageSchema::batch_stage set: a spec lists them under
// `batch_ops:`, and neither list accepts the other's types.
//
// Determinism: a batch stage's random draws come from BatchContext::Rng, keyed by (seed,
// epoch, batch number), so its output is the same for any num_workers, completion order,
// resume, and after SetBatchSize (batch numbers keep counting within the epoch).
//
// Thread-safety: the graph runs every batch stage serially (concurrency 1), one batch at
// a time, in batch order; Process may still not keep state between batches (a resumed
// run must give the same bytes), so it is const.
#ifndef FLOWLOADER_GRAPH_BATCH_STAGE_H_
#define FLOWLOADER_GRAPH_BATCH_STAGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/stage.h"
#include "stages/collate/batch.h"
#include "stages/core/memory_plan.h"
#include "stages/core/rng.h"
#include "stages/reader/dataset.h"

namespace flowloader {

// kBatchRngDomain separates batch streams from per-sample ones: a SampleRng keyed by
// (seed, epoch, batch number) would otherwise equal the one of the sample whose dataset
// index is that batch number (sample streams are small: 1 + 256·view).
inline constexpr uint64_t kBatchRngDomain = uint64_t{0xBA7C4} << 40;

// BatchContext is one collated batch as a batch stage sees it, skipped rows removed.
struct BatchContext {
  // The batch: tensors (each view, [N, ...]), labels (class indices), label (the label
  // tensor). Its host pointers are const for the consumer; stages write through `data`.
  Batch* batch = nullptr;
  // Writable host rows of each batch tensor, parallel to batch->tensors.
  std::vector<void*> data;
  // The label tensor's writable rows: float32 [N, C] one-hot targets when the plan has
  // soft targets (BatchStageEnv::label), written by the graph before the first batch
  // stage; int64 [N] class indices otherwise.
  void* label_data = nullptr;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t index = 0;  // Batch number within the epoch (Batch::index).

  int64_t rows() const { return batch->size(); }
  // Rng is this batch's random stream `stream`: a pure function of (seed, epoch, batch
  // number, stream).
  SampleRng Rng(uint64_t stream = 0) const {
    return SampleRng(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index),
                     kBatchRngDomain | stream);
  }
};

// BatchStage processes one batch in place. An error stops the pipeline (a batch stage
// fails for a bug or a bad configuration, not for one bad file; per-sample faults such as
// a label outside num_classes are skipped before it runs).
class BatchStage {
 public:
  virtual ~BatchStage() = default;
  virtual absl::Status Process(BatchContext& batch) const = 0;
};

// BatchStageEnv is what a batch stage factory may use and declare. Factories run in list
// order, after every per-sample stage was created.
struct BatchStageEnv {
  const Dataset* dataset = nullptr;
  // Every batch tensor's per-sample shape, in Batch::tensors' order.
  std::vector<OutputSpec> outputs;
  int batch_size = 0;
  bool drop_last = false;
  // The detection targets the batches carry (Batch::targets).
  TargetsSpec targets;
  // The classes the data has: ImageFolder's class count, else the largest label + 1 (a
  // list file's or shards' labels, which may exceed what soft targets can have); 0 for
  // data without labels.
  int64_t data_classes = 0;
  // The label tensor: int64 class indices until a factory asks for soft targets by
  // setting num_classes (every later stage sees it set; two stages must agree).
  LabelSpec label;
  // What the stage keeps in memory besides the batch buffers (checked with the plan).
  std::vector<MemoryPart> memory;
};

using BatchStageFactory =
    std::function<absl::StatusOr<std::unique_ptr<BatchStage>>(const StageArgs&, BatchStageEnv&)>;

// DataClasses is BatchStageEnv::data_classes for `dataset`.
int64_t DataClasses(const Dataset& dataset);

// RegisterBuiltinBatchStages adds mixup_cutmix and label_smoothing (stages/mix/), and the
// multi-sample detection ops.
void RegisterBuiltinBatchStages(StageRegistry& registry);

// RegisterMultiSampleBatchStages adds mosaic and copy_paste (stages/detection/), called by
// RegisterBuiltinBatchStages.
void RegisterMultiSampleBatchStages(StageRegistry& registry);

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_BATCH_STAGE_H_
