#include "stages/collate/batch.h"

#include <cstring>

namespace flowloader {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kUint8:
      return "uint8";
    case DType::kInt64:
      return "int64";
  }
  return "unknown";
}

size_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kUint8:
      return 1;
    case DType::kInt64:
      return 8;
  }
  return 1;
}

const char* LocationName(MemoryLocation location) {
  switch (location) {
    case MemoryLocation::kHost:
      return "host";
    case MemoryLocation::kPinnedHost:
      return "pinned_host";
    case MemoryLocation::kDevice:
      return "cuda";
  }
  return "unknown";
}

namespace {

// AppendWidened appends `labels` to `out` as int64 class indices. insert() from the uint8
// range constructs each element in place (no zero fill first, as resize() would do).
void AppendWidened(const std::vector<uint8_t>& labels, std::vector<int64_t>* out) {
  out->insert(out->end(), labels.begin(), labels.end());
}

// TensorBytes is the size of a dense tensor of `shape` and `dtype`; 0 for no shape.
size_t TensorBytes(const std::vector<int64_t>& shape, DType dtype) {
  if (shape.empty()) return 0;
  size_t n = DTypeBytes(dtype);
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace

const std::vector<int64_t>& Batch::shape() const {
  static const std::vector<int64_t>* const kNoShape = new std::vector<int64_t>();
  return tensors.empty() ? *kNoShape : tensors.front().shape;
}

DType Batch::dtype() const { return tensors.empty() ? DType::kFloat32 : tensors.front().dtype; }

const void* Batch::host_data() const {
  return tensors.empty() ? nullptr : tensors.front().host_data;
}

void* Batch::device_data() const {
  return tensors.empty() ? nullptr : tensors.front().device_data;
}

size_t Batch::bytes() const { return tensors.empty() ? 0 : tensors.front().bytes(); }

size_t BatchTensor::bytes() const { return TensorBytes(shape, dtype); }

int64_t NumBatches(int64_t num_samples, int64_t batch_size, bool drop_last) {
  if (num_samples <= 0 || batch_size <= 0) return 0;
  return drop_last ? num_samples / batch_size : (num_samples + batch_size - 1) / batch_size;
}

std::vector<BatchRange> PlanBatches(int64_t num_samples, int64_t batch_size, bool drop_last) {
  std::vector<BatchRange> ranges;
  const int64_t n = NumBatches(num_samples, batch_size, drop_last);
  ranges.reserve(static_cast<size_t>(n));
  for (int64_t b = 0; b < n; ++b) {
    const int64_t begin = b * batch_size;
    ranges.push_back(BatchRange{begin, std::min(begin + batch_size, num_samples)});
  }
  return ranges;
}

int64_t CompactSlots(void* data, size_t slot_bytes, const std::vector<bool>& keep) {
  auto* bytes = static_cast<uint8_t*>(data);
  int64_t kept = 0;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!keep[i]) continue;
    if (static_cast<size_t>(kept) != i) {
      std::memmove(bytes + kept * slot_bytes, bytes + i * slot_bytes, slot_bytes);
    }
    ++kept;
  }
  return kept;
}

void StartColumns(const std::vector<std::string>& names, std::vector<BatchColumn>* columns) {
  columns->resize(names.size());
  for (size_t c = 0; c < names.size(); ++c) {
    BatchColumn& column = (*columns)[c];
    if (column.name != names[c]) column.name = names[c];
    column.offsets.assign(1, 0);
    column.bytes.clear();
  }
}

void BatchTargets::Start() {
  present = false;
  offsets.assign(1, 0);
  boxes.clear();
  labels.clear();
  iscrowd.clear();
  area.clear();
  image_ids.clear();
  has_masks = false;
  mask_height = mask_width = 0;
  masks.clear();
  mask_offsets.assign(1, 0);
  has_semantic = false;
  semantic.clear();
  has_keypoints = false;
  num_keypoints = 0;
  keypoints.clear();
}

// AppendKeypoints adds a row's keypoints, keeping the flat array aligned with the
// instances when only some rows carry them (the others get zeros: visibility 0).
void BatchTargets::AppendKeypoints(const detection::Targets& t) {
  if (t.has_keypoints && !has_keypoints) {
    has_keypoints = true;
    num_keypoints = t.num_keypoints;
    keypoints.assign(labels.size() * t.keypoint_stride(), 0.0f);
  }
  if (!has_keypoints) return;
  const size_t stride = static_cast<size_t>(num_keypoints) * 3;
  if (t.has_keypoints && t.num_keypoints == num_keypoints &&
      t.keypoints.size() == t.labels.size() * stride) {
    keypoints.insert(keypoints.end(), t.keypoints.begin(), t.keypoints.end());
  } else {
    keypoints.resize(keypoints.size() + t.labels.size() * stride, 0.0f);
  }
}

void BatchTargets::Append(const detection::Targets& t) {
  present = true;
  std::vector<float> xyxy;
  const std::vector<float>* b = &t.boxes;
  if (t.format != detection::BoxFormat::kXYXY) {
    xyxy = t.boxes;
    detection::ConvertBoxes(t.format, detection::BoxFormat::kXYXY, &xyxy);
    b = &xyxy;
  }
  AppendKeypoints(t);
  boxes.insert(boxes.end(), b->begin(), b->end());
  labels.insert(labels.end(), t.labels.begin(), t.labels.end());
  iscrowd.insert(iscrowd.end(), t.iscrowd.begin(), t.iscrowd.end());
  area.insert(area.end(), t.area.begin(), t.area.end());
  image_ids.push_back(t.image_id);
  offsets.push_back(static_cast<int64_t>(labels.size()));
  if (t.has_semantic) {
    has_semantic = true;
    mask_height = t.canvas_height;
    mask_width = t.canvas_width;
    AppendWidened(t.semantic, &semantic);
  }
  if (t.has_masks) {
    has_masks = true;
    mask_height = t.canvas_height;
    mask_width = t.canvas_width;
    const size_t at = masks.size();
    masks.resize(at + t.MaskPlaneBytes());  // Windowed masks expand straight into the batch.
    t.WriteMaskPlanes(masks.data() + at);
  }
  mask_offsets.push_back(static_cast<int64_t>(masks.size()));
}

size_t BatchTargets::bytes() const {
  return offsets.size() * 8 + mask_offsets.size() * 8 + boxes.size() * 4 +
         labels.size() * 8 + iscrowd.size() * 8 + area.size() * 4 + image_ids.size() * 8 +
         masks.size() + semantic.size() * 8 + keypoints.size() * 4;
}

}  // namespace flowloader
