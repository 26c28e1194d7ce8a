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
  const std::vector<std::string> knobs = {"batch_size", "image_size", "prefetch_batches"};
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

MemoryPart ColumnsMemoryPart(const Dataset& dataset, int prefetch_batches, int pool_rows) {
  const std::vector<std::string>& names = dataset.column_names();
  int64_t widest_row = 0;  // The longest value of each column, summed.
  for (size_t c = 0; c < names.size(); ++c) {
    size_t longest = 0;
    for (int64_t i = 0; i < dataset.size(); ++i) {
      longest = std::max(longest, dataset.column(i, c).size());
    }
    widest_row += static_cast<int64_t>(longest);
  }
  const int64_t batch_bytes = int64_t{prefetch_batches} * pool_rows * widest_row;
  return {"columns", "columns", dataset.column_bytes() + batch_bytes,
          absl::StrCat(FormatBytes(dataset.column_bytes()), " of ", dataset.size(), " samples' ",
                       absl::StrJoin(names, ","), " + prefetch ", prefetch_batches, " × batch ",
                       pool_rows, " × ", FormatBytes(widest_row), " longest row"),
          {"columns", "column_max_bytes", "prefetch_batches"}};
}

void AddHttpCachePart(const Dataset& dataset, std::vector<MemoryPart>* parts) {
  const HttpEnv* http = dataset.http_env();
  if (http == nullptr || http->admitted_shards() == 0) return;
  int http_shards = 0;
  for (const std::string& shard : dataset.shards()) http_shards += IsUrl(shard) ? 1 : 0;
  parts->push_back({"http cache", "http_cache", http->admitted_bytes(),
                    absl::StrCat("http_cache_mb ", http->cache_budget_bytes() >> 20, ": ",
                                 http->admitted_shards(), " of ", http_shards,
                                 " HTTP shards admitted"),
                    {"http_cache_mb"}});
}

void AddSamplerPart(const Sampler& sampler, std::vector<MemoryPart>* parts) {
  // Under 1 MiB (~60 k samples) it is noise beside the batch pool: left out, so the
  // plans of ordinary datasets read as they did.
  if (sampler.order_bytes() < (int64_t{1} << 20)) return;
  parts->push_back({"sampler order", "sampler_order", sampler.order_bytes(),
                    absl::StrCat("an epoch of ", sampler.samples_per_rank(), " samples × ",
                                 sampler.order_bytes() / sampler.samples_per_rank(),
                                 " B of order"),
                    {"epoch_samples"}});
}

MemoryBudget GraphMemoryBudget(int64_t memory_limit_bytes) {
  MemoryBudget budget = AvailableMemory();
  if (memory_limit_bytes > 0 && (!budget.known() || memory_limit_bytes < budget.bytes)) {
    budget = MemoryBudget{memory_limit_bytes, "memory_limit_mb"};
  }
  return budget;
}

}  // namespace flowloader
