// data_checksum.cc: DataChecksum (see data_checksum.h).
#include "runtime/internal/data_checksum.h"

#include <xxhash.h>

#include "absl/strings/str_format.h"

namespace flowloader {
namespace {

// PutLittleEndian writes `v` as 8 little-endian bytes, the same on every machine.
void PutLittleEndian(uint64_t v, unsigned char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

class DataChecksum::Stream {
 public:
  Stream() : state_(XXH3_createState()) { XXH3_64bits_reset(state_); }
  ~Stream() { XXH3_freeState(state_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void Update(const unsigned char* data, size_t size) { XXH3_64bits_update(state_, data, size); }
  void Reset() { XXH3_64bits_reset(state_); }
  uint64_t Digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* const state_;
};

DataChecksum::DataChecksum()
    : total_(std::make_unique<Stream>()), row_(std::make_unique<Stream>()) {}

// RowHash is the hash of row `row`'s bytes: XXH3 of its rows in every tensor, one after
// the other (streamed, so several tensors cost no copy), then the row's detection /
// segmentation targets when the batch has them. With one tensor and no targets that is
// XXH3 of the tensor's row alone (XXH3's streaming digest equals its one-shot hash).
uint64_t DataChecksum::RowHash(const Batch& batch, int64_t row) {
  const int64_t rows = batch.size();
  row_->Reset();
  for (const BatchTensor& t : batch.tensors) {
    const size_t row_bytes = t.bytes() / static_cast<size_t>(rows);
    const auto* data = static_cast<const unsigned char*>(t.host_data);
    row_->Update(data + static_cast<size_t>(row) * row_bytes, row_bytes);
  }
  if (batch.targets.present) AddRowTargets(batch.targets, row);
  return row_->Digest();
}

// AddRowTargets streams row `row`'s targets into the row hash: its image id and instance
// count (8 bytes each, little-endian), then its slice of each field the batch carries, in
// BatchTargets' order (boxes, labels, iscrowd, area, masks, keypoints, the label map),
// as their bytes in memory (x86-64 is little-endian, as the records are).
void DataChecksum::AddRowTargets(const BatchTargets& targets, int64_t row) {
  const auto r = static_cast<size_t>(row);
  const auto first = static_cast<size_t>(targets.offsets[r]);
  const size_t count = static_cast<size_t>(targets.offsets[r + 1]) - first;
  unsigned char header[16];
  PutLittleEndian(static_cast<uint64_t>(targets.image_ids[r]), header);
  PutLittleEndian(count, header + 8);
  row_->Update(header, sizeof(header));
  const auto add = [this](const auto& values, size_t begin, size_t n) {
    row_->Update(reinterpret_cast<const unsigned char*>(values.data() + begin),
                 n * sizeof(values[0]));
  };
  add(targets.boxes, first * 4, count * 4);
  add(targets.labels, first, count);
  add(targets.iscrowd, first, count);
  add(targets.area, first, count);
  const size_t plane =
      static_cast<size_t>(targets.mask_height) * static_cast<size_t>(targets.mask_width);
  if (targets.has_masks && targets.mask_offsets.size() == targets.offsets.size()) {
    // The row's own bytes (a padded batch's rows differ in size), as Append recorded
    // them: the same bytes as count planes from first when every row is one size.
    const auto begin = static_cast<size_t>(targets.mask_offsets[r]);
    add(targets.masks, begin, static_cast<size_t>(targets.mask_offsets[r + 1]) - begin);
  } else if (targets.has_masks) {  // Targets filled by hand, without mask_offsets.
    add(targets.masks, first * plane, count * plane);
  }
  if (targets.has_keypoints) {
    const size_t stride = static_cast<size_t>(targets.num_keypoints) * 3;
    add(targets.keypoints, first * stride, count * stride);
  }
  if (targets.has_semantic) add(targets.semantic, r * plane, plane);
}
DataChecksum::~DataChecksum() = default;

// LabelWord is row `row`'s label as 8 bytes of the record: the class index itself for
// int64 labels (so checksums made before the label tensor existed are unchanged), else
// XXH3 of the row's float32 soft targets, every byte counted.
uint64_t DataChecksum::LabelWord(const Batch& batch, int64_t row) {
  const BatchTensor& label = batch.label;
  if (label.dtype != DType::kFloat32 || label.host_data == nullptr) {
    return static_cast<uint64_t>(batch.labels[static_cast<size_t>(row)]);
  }
  const size_t row_bytes = label.bytes() / static_cast<size_t>(batch.size());
  const auto* data = static_cast<const unsigned char*>(label.host_data);
  return XXH3_64bits(data + static_cast<size_t>(row) * row_bytes, row_bytes);
}

void DataChecksum::Add(const Batch& batch) {
  if (epoch_ == nullptr || batch.epoch != epoch_number_) {
    if (epoch_ != nullptr) finished_epochs_.emplace_back(epoch_number_, Format(epoch_->Digest()));
    epoch_ = std::make_unique<Stream>();
    epoch_number_ = batch.epoch;
  }
  const int64_t rows = batch.size();
  if (rows == 0) return;
  for (int64_t row = 0; row < rows; ++row) {
    unsigned char record[16];
    PutLittleEndian(RowHash(batch, row), record);
    PutLittleEndian(LabelWord(batch, row), record + 8);
    total_->Update(record, sizeof(record));
    epoch_->Update(record, sizeof(record));
  }
  rows_ += static_cast<uint64_t>(rows);
}

std::string DataChecksum::Format(uint64_t hash) { return absl::StrFormat("xxh3:%016x", hash); }

std::string DataChecksum::Text() const { return Format(total_->Digest()); }

std::vector<std::pair<int64_t, std::string>> DataChecksum::EpochTexts() const {
  std::vector<std::pair<int64_t, std::string>> out = finished_epochs_;
  if (epoch_ != nullptr) out.emplace_back(epoch_number_, Format(epoch_->Digest()));
  return out;
}

}  // namespace flowloader
