// memory_planning.cc: PoolRows, PlanGraphMemory and GraphMemoryBudget.
#include "graph/internal/memory_planning.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace flowloader {

int PoolRows(int batch_size, int64_t samples_per_epoch) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(batch_size, samples_per_epoch)));
}

bool BatchFitsPool(int64_t batch_size, int pool_rows, int64_t samples_per_epoch) {
  return batch_size <= pool_rows || pool_rows >= samples_per_epoch;
}

std::string ShapeText(const OutputSpec& output) {
  const size_t element = output.is_float ? 4 : 1;
  size_t elements = 1;
  for (int64_t d : output.sample_shape) elements *= static_cast<size_t>(d);
  if (output.sample_shape.empty() || elements * element != output.sample_bytes) {
    // A user stage's declaration that is not a plain tensor: say its size.
    return absl::StrCat(FormatBytes(static_cast<int64_t>(output.sample_bytes)), " a sample");
  }
  std::string text;
  const std::vector<int64_t>& shape = output.sample_shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!text.empty()) text += "×";
    if (i + 1 < shape.size() && shape[i] == shape[i + 1]) {
      absl::StrAppend(&text, shape[i], "²");  // 224×224 reads as 224².
      ++i;
    } else {
      absl::StrAppend(&text, shape[i]);
    }
  }
  return absl::StrCat(text, output.is_float ? " float32" : " uint8");
}

std::vector<TensorRegion> LayOutTensors(const std::vector<OutputSpec>& outputs, int rows) {
  constexpr size_t kAlign = 64;
  std::vector<TensorRegion> regions;
  size_t offset = 0;
  for (const OutputSpec& spec : outputs) {
    offset = (offset + kAlign - 1) / kAlign * kAlign;
    const size_t bytes = spec.sample_bytes * static_cast<size_t>(rows);
    regions.push_back(TensorRegion{spec, offset, bytes});
    offset += bytes;
  }
  return regions;
}

size_t LayoutBytes(const std::vector<TensorRegion>& regions) {
  return regions.empty() ? 0 : regions.back().offset + regions.back().bytes;
}

TensorRegion LabelRegion(const std::vector<TensorRegion>& tensors, const LabelSpec& label,
                         int rows) {
  constexpr size_t kAlign = 64;
  const size_t offset = (LayoutBytes(tensors) + kAlign - 1) / kAlign * kAlign;
  OutputSpec spec;
  spec.name = "label";
  spec.sample_shape = label.sample_shape();
  spec.is_float = label.soft();
  spec.sample_bytes = label.row_bytes();
  return TensorRegion{spec, offset, label.row_bytes() * static_cast<size_t>(rows)};
}

std::string LabelText(const LabelSpec& label) {
  return label.soft() ? absl::StrCat(label.num_classes, " float32 soft label") : "int64 label";
}

// OutputsText is "3×224² float32", or "(3×224² float32 + 3×96² float32)" for several.
std::string OutputsText(const std::vector<OutputSpec>& outputs) {
  if (outputs.size() == 1) return ShapeText(outputs.front());
  std::string text;
  for (const OutputSpec& o : outputs) absl::StrAppend(&text, text.empty() ? "(" : " + ", ShapeText(o));
  return text + ")";
}

MemoryPlan PlanGraphMemory(const GraphOptions& options, const std::vector<OutputSpec>& outputs,
                           int pool_rows, bool pinned, bool on_device,
                           const std::vector<MemoryPart>& stage_parts,
                           const LabelSpec& label) {
  const std::string rows =
      pool_rows < options.batch_size
          ? absl::StrCat("batch ", pool_rows, " (an epoch's samples; batch_size ",
                         options.batch_size, ")")
          : absl::StrCat("batch ", pool_rows);
  const int64_t pool_bytes = int64_t{options.prefetch_batches} *
                             static_cast<int64_t>(LayoutBytes(LayOutTensors(outputs, pool_rows)));
  // The label tensor shares each batch buffer (so it is pinned and uploaded with it); its
  // rows are a part of their own so that soft targets' size is visible.
  const std::string pool_formula = absl::StrCat("prefetch ", options.prefetch_batches, " × ",
                                                rows, " × ", OutputsText(outputs));
  // batch_size, the options that set the samples' sizes (image_size, or an op list's
  // last op of a fixed size: "five_crop size"), prefetch_batches.
  std::vector<std::string> knobs = {"batch_size"};
  for (const OutputSpec& o : outputs) {
    const std::string knob = o.size_knob.empty() ? "image_size" : o.size_knob;
    if (std::find(knobs.begin(), knobs.end(), knob) == knobs.end()) knobs.push_back(knob);
  }
  if (outputs.empty()) knobs.push_back("image_size");
  knobs.push_back("prefetch_batches");
  MemoryPlan plan;
  plan.Add({"batch pool", "batch_pool", pool_bytes, pool_formula, knobs, pinned});
  // (Counted from the tensors' end: the up to 63 bytes aligning it are its own.)
  const std::vector<TensorRegion> regions = LayOutTensors(outputs, pool_rows);
  const TensorRegion label_region = LabelRegion(regions, label, pool_rows);
  const int64_t label_bytes =
      int64_t{options.prefetch_batches} *
      static_cast<int64_t>(label_region.offset + label_region.bytes - LayoutBytes(regions));
  plan.Add({"batch labels", "batch_labels", label_bytes,
            absl::StrCat("prefetch ", options.prefetch_batches, " × ", rows, " × ",
                         LabelText(label)),
            {"batch_size", "prefetch_batches", "num_classes"}, pinned});
  for (const MemoryPart& part : stage_parts) plan.Add(part);
  if (on_device) {
    // DeviceMemory::Allocate pairs each host batch buffer with a device buffer.
    plan.Add({"device batches", "device_batches", pool_bytes + label_bytes,
              absl::StrCat(pool_formula, " + labels, a device buffer per batch buffer"), knobs,
              /*pinned=*/false, /*device=*/true});
  }
  return plan;
}

MemoryBudget GraphMemoryBudget(int64_t memory_limit_bytes) {
  MemoryBudget budget = AvailableMemory();
  if (memory_limit_bytes > 0 && (!budget.known() || memory_limit_bytes < budget.bytes)) {
    budget = MemoryBudget{memory_limit_bytes, "memory_limit_mb"};
  }
  return budget;
}

MemoryBudget PlanBudget(const MemoryBudget& budget) {
  if (!budget.known() || budget.source != "memory_limit_mb") return budget;
  return MemoryBudget{std::max<int64_t>(0, budget.bytes - kUnplannedBytes),
                      absl::StrCat("memory_limit_mb ", FormatBytes(budget.bytes), " less ",
                                   FormatBytes(kUnplannedBytes),
                                   " the process holds itself")};
}

int64_t SampleBytesPlanned(const MemoryPlan& plan) {
  int64_t bytes = 0;
  for (const MemoryPart& part : plan.parts()) {
    if (part.key == "decode_scratch" || part.key == "decode_kept") bytes += part.bytes;
  }
  return bytes;
}

MemoryPart SampleRoomPart(const MemoryPlan& plan, int workers, int64_t memory_limit_bytes,
                          int64_t most_bytes) {
  workers = std::max(workers, 1);
  MemoryPart part;
  part.name = "sample room";
  part.key = "sample_room";
  if (memory_limit_bytes <= 0) return part;
  const int64_t full =
      std::max<int64_t>(0, workers * kMinWorkerImageBytes - SampleBytesPlanned(plan));
  part.bytes = most_bytes >= 0 ? std::min(full, most_bytes) : full;
  part.formula = absl::StrCat("num_workers ", workers, " × ", FormatBytes(kMinWorkerImageBytes),
                              " one sample's images at the least, less its planned decode memory");
  if (part.bytes < full) {
    absl::StrAppend(&part.formula, " (cut from ", FormatBytes(full),
                    " to fit memory_limit_mb: larger samples are skipped)");
  }
  part.knobs = {"num_workers"};
  return part;
}

int64_t WorkerImageBytes(const MemoryPlan& plan, const MemoryBudget& budget, int workers) {
  if (!budget.known()) return 0;
  workers = std::max(workers, 1);
  // The decode scratch holds the sample's own decode. The transforms scratch (the op
  // list's working images) is not given back: a thread keeps its working images between
  // samples up to that size, so they are resident while the next sample decodes and
  // copies beside them (an 8192² random_crop's 192 MiB, then a 13000² decode and its
  // copy, went 1.2 GB past memory_limit_mb=1024 when both were counted once).
  // The sample room is what the plan sets aside for exactly these images.
  int64_t scratch = SampleBytesPlanned(plan);
  for (const MemoryPart& part : plan.parts()) {
    if (part.key == "sample_room") scratch += part.bytes;
  }
  const int64_t headroom =
      std::max<int64_t>(0, budget.bytes - plan.total_bytes() - kUnplannedBytes);
  const int64_t share = (headroom + scratch) / workers;
  // Under memory_limit_mb the plan's sample room is the minimum: a floor above it would
  // take the run past the limit (32 MiB a worker beside a plan that fills it).
  if (budget.source == "memory_limit_mb") return std::max<int64_t>(share, 1);
  return std::max<int64_t>(kMinWorkerImageBytes, share);
}

}  // namespace flowloader
