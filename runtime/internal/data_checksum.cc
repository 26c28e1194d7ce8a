// data_checksum.cc: DataChecksum (see data_checksum.h).
#include "runtime/internal/data_checksum.h"

#include <zlib.h>

#include "absl/strings/str_format.h"

namespace flowloader {
namespace {

// Crc extends `crc` over `size` bytes at `data` (crc32_z takes a size_t length).
uint32_t Crc(uint32_t crc, const void* data, size_t size) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), size));
}

// LabelBytes is `label` as 8 little-endian bytes, the same on every machine.
void LabelBytes(int64_t label, unsigned char out[8]) {
  const uint64_t v = static_cast<uint64_t>(label);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

void DataChecksum::Add(const Batch& batch) {
  if (epochs_.empty() || epochs_.back().epoch != batch.epoch) {
    epochs_.push_back(EpochSum{batch.epoch, 0});
  }
  const int64_t rows = batch.size();
  if (rows == 0) return;
  // Each byte is read once, into the batch's CRC; the epoch's and the total are extended
  // with crc32_combine, which costs O(log length), not another pass.
  const size_t row_bytes = batch.bytes() / static_cast<size_t>(rows);
  const auto* data = static_cast<const unsigned char*>(batch.host_data);
  uint32_t batch_crc = 0;
  for (int64_t row = 0; row < rows; ++row) {
    unsigned char label[8];
    LabelBytes(batch.labels[static_cast<size_t>(row)], label);
    batch_crc = Crc(batch_crc, data + static_cast<size_t>(row) * row_bytes, row_bytes);
    batch_crc = Crc(batch_crc, label, sizeof(label));
  }
  const auto batch_bytes = static_cast<z_off_t>((row_bytes + 8) * static_cast<size_t>(rows));
  uint32_t& epoch_crc = epochs_.back().crc;
  epoch_crc = static_cast<uint32_t>(crc32_combine(epoch_crc, batch_crc, batch_bytes));
  crc_ = static_cast<uint32_t>(crc32_combine(crc_, batch_crc, batch_bytes));
  bytes_ += static_cast<uint64_t>(batch_bytes);
}

std::string DataChecksum::Format(uint32_t crc) { return absl::StrFormat("crc32:%08x", crc); }

std::string DataChecksum::Text() const { return Format(crc_); }

std::vector<std::pair<int64_t, std::string>> DataChecksum::EpochTexts() const {
  std::vector<std::pair<int64_t, std::string>> out;
  out.reserve(epochs_.size());
  for (const EpochSum& e : epochs_) out.emplace_back(e.epoch, Format(e.crc));
  return out;
}

}  // namespace flowloader
