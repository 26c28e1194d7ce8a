#include "tests/testing/pipeline_helpers.h"

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/detection_dataset.h"
#include "stages/core/log.h"

namespace flowloader::testing {

PipelineOptions SmallCpuOptions(const std::string& data, int batch_size, Env* env) {
  PipelineOptions o;
  o.data = data;
  o.image_size = 16;
  o.batch_size = batch_size;
  o.num_workers = 2;
  o.device = DeviceChoice::kCpu;
  o.env = env;
  return o;
}

absl::Status MakeKeypointDataset(const std::string& root, int images, int max_instances) {
  DetectionDatasetOptions d;
  d.root = root;
  d.images = images;
  d.min_side = 64;
  d.max_side = 96;
  d.max_instances = max_instances;
  d.keypoints = true;
  return GenerateDetectionDataset(d);
}

Drained Drain(Pipeline* pipeline, int max_calls) {
  Drained d;
  for (int call = 0; call < max_calls; ++call) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    d.status = pipeline->Next(&batch, &end);
    if (!d.status.ok()) break;
    if (end) {
      ++d.epochs;
      if (pipeline->done()) break;
      continue;
    }
    d.samples += batch->size();
    d.keys.insert(d.keys.end(), batch->keys.begin(), batch->keys.end());
    d.skipped.insert(d.skipped.end(), batch->skipped.begin(), batch->skipped.end());
  }
  return d;
}

absl::Status EachBatch(Pipeline& pipeline, const std::function<void(int)>& before,
                       const std::function<void(const Batch&)>& on_batch, int max_batches) {
  for (int n = 0; n < max_batches;) {
    if (before) before(n);
    std::shared_ptr<const Batch> batch;
    bool end = false;
    if (absl::Status s = pipeline.Next(&batch, &end); !s.ok()) return s;
    if (end) {
      if (pipeline.done()) break;
      continue;
    }
    on_batch(*batch);
    ++n;
  }
  return absl::OkStatus();
}

void AppendTensorBytes(const Batch& batch, std::vector<std::string>* bytes) {
  if (bytes->size() < batch.tensors.size()) bytes->resize(batch.tensors.size());
  for (size_t k = 0; k < batch.tensors.size(); ++k) {
    const BatchTensor& t = batch.tensors[k];
    (*bytes)[k].append(static_cast<const char*>(t.host_data), t.bytes());
  }
}

LogCapture::LogCapture() {
  SetMinLogLevel(LogLevel::kInfo);
  SetLogSink([this](LogLevel, absl::string_view line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.emplace_back(line);
  });
}

LogCapture::~LogCapture() { SetLogSink(nullptr); }

int LogCapture::LinesNaming(absl::string_view text) const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const std::string& line : lines_) n += absl::StrContains(line, text);
  return n;
}

Delivered RunAll(const PipelineOptions& o, const std::function<void(int)>& before) {
  Delivered run;
  auto p = Pipeline::Create(o);
  if (!p.ok()) {
    run.status = p.status();
    return run;
  }
  while (true) {
    if (before) before(static_cast<int>(run.batches.size()));
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    run.status = (*p)->Next(&batch, &end_of_epoch);
    if (!run.status.ok() || (end_of_epoch && (*p)->done())) break;
    if (batch == nullptr) continue;
    std::string b(static_cast<const char*>(batch->host_data()), batch->bytes());
    for (size_t i = 0; i < batch->labels.size(); ++i) {
      absl::StrAppend(&b, "|", batch->labels[i], ":", batch->indices[i]);
    }
    run.batches.push_back(std::move(b));
    run.keys.insert(run.keys.end(), batch->keys.begin(), batch->keys.end());
    for (const SkippedSample& s : batch->skipped) {
      ++run.skipped[s.reason];
      ++run.skipped_keys[s.key];
    }
  }
  return run;
}

}  // namespace flowloader::testing
