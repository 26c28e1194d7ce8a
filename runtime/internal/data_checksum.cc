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

// RowHash is the hash of row `row`'s bytes: XXH3 of the one tensor's row, or of its rows
// in every tensor, one after the other (streamed, so several tensors cost no copy).
uint64_t DataChecksum::RowHash(const Batch& batch, int64_t row) {
  const int64_t rows = batch.size();
  if (batch.tensors.size() <= 1) {
    const size_t row_bytes = batch.bytes() / static_cast<size_t>(rows);
    const auto* data = static_cast<const unsigned char*>(batch.host_data());
    return XXH3_64bits(data + static_cast<size_t>(row) * row_bytes, row_bytes);
  }
  row_->Reset();
  for (const BatchTensor& t : batch.tensors) {
    const size_t row_bytes = t.bytes() / static_cast<size_t>(rows);
    const auto* data = static_cast<const unsigned char*>(t.host_data);
    row_->Update(data + static_cast<size_t>(row) * row_bytes, row_bytes);
  }
  return row_->Digest();
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
