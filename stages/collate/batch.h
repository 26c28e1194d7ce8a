// batch.h: the batch a pipeline hands to its user, and how samples are grouped into it.
//
// Decode/augment write each sample straight into its slot of the batch buffer, so
// collating is bookkeeping: labels, indices and keys, plus removing the slots of skipped
// samples (a memmove of the later slots, done only when something was skipped).
//
// Thread-safety: plain values and pure functions.
#ifndef FLOWLOADER_STAGES_COLLATE_BATCH_H_
#define FLOWLOADER_STAGES_COLLATE_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/detection/targets.h"

namespace flowloader {

// DType is a batch tensor's element type; kInt64 only for class-index labels.
enum class DType { kFloat32, kUint8, kInt64 };

// DTypeBytes is one element's size: 4, 1 or 8.
size_t DTypeBytes(DType dtype);

// MemoryLocation says where a batch's tensor lives.
enum class MemoryLocation {
  kHost,        // Pageable host memory (no CUDA device present).
  kPinnedHost,  // Page-locked host memory (cudaHostAlloc), ready for DMA.
  kDevice,      // CUDA device memory; `device_data` is the pointer.
};

const char* DTypeName(DType dtype);
const char* LocationName(MemoryLocation location);

// SkippedSample names a sample that was dropped from a batch and why.
struct SkippedSample {
  int64_t index = 0;   // Dataset index.
  std::string key;     // Path relative to the dataset root.
  std::string reason;  // Low-cardinality tag (see stages/core/sample_error.h).
  std::string message;
};

// BatchColumn is one extra per-sample column of a batch (a list file's `#columns:`),
// as offsets into one byte string, so a batch's values cost no allocation per sample once
// the batch buffer's strings have grown: row r's value is bytes[offsets[r], offsets[r+1]).
struct BatchColumn {
  std::string name;
  std::vector<int64_t> offsets = {0};  // One per row, plus the leading 0.
  std::string bytes;

  std::string_view value(int64_t row) const {
    return std::string_view(bytes).substr(static_cast<size_t>(offsets[row]),
                                          static_cast<size_t>(offsets[row + 1] - offsets[row]));
  }
  void Append(std::string_view v) {
    bytes.append(v.data(), v.size());
    offsets.push_back(static_cast<int64_t>(bytes.size()));
  }
};

// StartColumns readies `columns` for a new batch: one empty column per name, keeping the
// capacity the strings and vectors already have.
void StartColumns(const std::vector<std::string>& names, std::vector<BatchColumn>* columns);

// BatchTargets are a detection batch's targets: each field flat over the batch's
// instances, row r's at [offsets[r], offsets[r + 1]) (as Batch::columns), so a batch costs
// no allocation once the vectors have grown, and Python slices each row as a view.
// Boxes are xyxy on each row's output canvas (its image tensor's height × width).
struct BatchTargets {
  bool present = false;                // A graph that writes targets.
  std::vector<int64_t> offsets = {0};  // N + 1.
  std::vector<float> boxes;            // total × 4.
  std::vector<int64_t> labels;         // total.
  std::vector<int64_t> iscrowd;        // total.
  std::vector<float> area;             // total.
  std::vector<int64_t> image_ids;      // N.
  bool has_masks = false;
  // Every row's masks are mask_height × mask_width, except in a padded batch
  // (Batch::image_sizes), where each row's are its own image's size.
  int mask_height = 0;
  int mask_width = 0;
  std::vector<uint8_t> masks;          // total × mask_height × mask_width.
  // N + 1: row r's mask bytes are masks[mask_offsets[r], mask_offsets[r + 1]).
  std::vector<int64_t> mask_offsets = {0};
  // Keypoints: total × num_keypoints × 3 floats (x, y, visibility) on each row's canvas,
  // when the rows carry them (a row without gets zeros, visibility 0).
  bool has_keypoints = false;
  int num_keypoints = 0;
  std::vector<float> keypoints;
  // Semantic segmentation: one label map per row, N × mask_height × mask_width class
  // indices (every row's the batch's image size), instead of per-instance masks. int64,
  // what CrossEntropyLoss takes and torchvision's segmentation references feed it: each
  // row's uint8 map is widened as it is appended (ignore_index stays its value, 255), so
  // Python wraps the batch's maps without a copy. The vector keeps its capacity with the
  // batch token: a fresh 33 MB int64 tensor per batch of 16 × 512² cost more in page
  // faults than the rest of the recipe (pipeline_graph.cc, ReserveBatchTargets).
  bool has_semantic = false;
  std::vector<int64_t> semantic;

  // Start empties the targets for a new batch, keeping capacity.
  void Start();
  // Append adds one row's targets (their canvas must be the batch's for masks).
  void Append(const detection::Targets& targets);
  int64_t rows() const { return static_cast<int64_t>(offsets.size()) - 1; }
  size_t bytes() const;

 private:
  void AppendKeypoints(const detection::Targets& targets);
};

// BatchTensor is one named tensor of a batch: a batch tensor field of the graph (an
// augment view), N rows of the field's per-sample shape.
struct BatchTensor {
  std::string name;
  std::vector<int64_t> shape;  // [N, ...per-sample shape].
  DType dtype = DType::kFloat32;
  const void* host_data = nullptr;  // Always set (pinned when a CUDA device is used).
  void* device_data = nullptr;      // Set when the batch's location is kDevice.
  size_t bytes() const;
};

// LabelSpec is the shape of a pipeline's label tensor: int64 [N] class indices when
// num_classes is 0, else float32 [N, num_classes] soft targets.
struct LabelSpec {
  int num_classes = 0;
  bool soft() const { return num_classes > 0; }
  DType dtype() const { return soft() ? DType::kFloat32 : DType::kInt64; }
  // row_bytes is one row's size: 8, or 4 × num_classes.
  size_t row_bytes() const { return soft() ? 4 * static_cast<size_t>(num_classes) : 8; }
  // sample_shape is [] for class indices, [num_classes] for soft targets.
  std::vector<int64_t> sample_shape() const {
    return soft() ? std::vector<int64_t>{num_classes} : std::vector<int64_t>{};
  }
};

// Batch is one collated batch. Its memory belongs to the pipeline's buffer pool and is
// recycled when the user releases the batch.
struct Batch {
  int64_t epoch = 0;
  int64_t index = 0;  // Batch number within the epoch (0-based, in sampler order).
  MemoryLocation location = MemoryLocation::kHost;
  // labels is each row's class index (the dataset's label), always int64, one per row.
  std::vector<int64_t> labels;
  // label is the label tensor the model trains on, named "label": int64 [N] pointing at
  // `labels` by default, or float32 [N, num_classes] soft targets in the batch buffer
  // when a batch stage makes them (mixup_cutmix, label smoothing; graph/batch_stage.h),
  // then also on the device when the batch's location is kDevice.
  BatchTensor label;
  std::vector<int64_t> indices;  // Dataset index of each row.
  std::vector<std::string> keys; // Relative path of each row.
  // The source of each row (index into Pipeline::source_names(); 0 for one source).
  std::vector<int32_t> sources;
  // With repeated augmentation (a sampler's repeated_augment k > 1), which copy of its
  // sample each row is, 0..k-1 (each copy a different random view); empty otherwise.
  std::vector<int32_t> copies;
  // Extra per-sample columns (list files' `#columns:` header), each one value per row.
  std::vector<BatchColumn> columns;
  // Detection targets (targets.present) when the graph writes them; else empty.
  BatchTargets targets;
  // Padded batches (size_divisibility): each row's image size, N × 2 (height, width),
  // the region of its row of tensors[0] that holds the image (top left; the rest is 0);
  // empty otherwise. Row r's instance masks are [K, h, w] at its own size.
  std::vector<int64_t> image_sizes;
  std::vector<SkippedSample> skipped;
  // Every batch tensor, in the graph's order: one per tensor field (a graph with several
  // augment views has several).
  std::vector<BatchTensor> tensors;

  // shape, dtype, host_data, device_data and bytes are tensors[0]'s, the one tensor of a
  // single-view pipeline (empty, float32, null and 0 without tensors). shape is
  // [N, C, H, W] for float32 CHW output, [N, H, W, C] for uint8 HWC. N may be below
  // batch_size for the last batch of an epoch and when samples were skipped; it is 0 only
  // for an epoch's last batch when every one of its samples was skipped (the batch then
  // exists to report them in `skipped`). host_data is on the host (pinned when a CUDA
  // device is used), always; device_data on the CUDA device when location == kDevice,
  // else nullptr.
  const std::vector<int64_t>& shape() const;
  DType dtype() const;
  const void* host_data() const;
  void* device_data() const;
  size_t bytes() const;
  // size is the batch's rows, N.
  int64_t size() const { return shape().empty() ? 0 : shape()[0]; }
};

// BatchRange is one batch's positions [begin, end) within an epoch's sample order.
struct BatchRange {
  int64_t begin = 0;
  int64_t end = 0;
};

// PlanBatches groups `num_samples` positions into batches of `batch_size`; the last one
// is partial unless `drop_last`, in which case it is dropped.
std::vector<BatchRange> PlanBatches(int64_t num_samples, int64_t batch_size, bool drop_last);

// NumBatches is PlanBatches(...).size() without building the vector.
int64_t NumBatches(int64_t num_samples, int64_t batch_size, bool drop_last);

// CompactSlots removes the slots whose `keep` is false from `data` (slots of
// `slot_bytes` each, `keep.size()` of them), moving later slots down in order. Returns
// the number of slots kept. Costs nothing when every slot is kept.
int64_t CompactSlots(void* data, size_t slot_bytes, const std::vector<bool>& keep);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_COLLATE_BATCH_H_
