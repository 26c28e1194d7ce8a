// The data checksum: XXH3 of the (row hash, label) stream, the same however
// rows are grouped into batches, and different when a byte, a label or the order differs.
#include "runtime/internal/data_checksum.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <xxhash.h>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

// Rows is uint8 rows of `row_bytes` each with their labels.
struct Rows {
  std::vector<uint8_t> data;
  std::vector<int64_t> labels;
};

// BatchOf is rows [begin, end) of `rows` as a uint8 batch of epoch `epoch`.
Batch BatchOf(const Rows& rows, size_t row_bytes, size_t begin, size_t end, int64_t epoch = 0) {
  Batch b;
  b.epoch = epoch;
  b.tensors.resize(1);
  b.tensors[0].dtype = DType::kUint8;
  b.tensors[0].shape = {static_cast<int64_t>(end - begin), static_cast<int64_t>(row_bytes)};
  b.tensors[0].host_data = rows.data.data() + begin * row_bytes;
  b.labels.assign(rows.labels.begin() + begin, rows.labels.begin() + end);
  return b;
}

Rows SixRows() {
  Rows r;
  for (int i = 0; i < 6 * 5; ++i) r.data.push_back(static_cast<uint8_t>(i * 37 + 11));
  r.labels = {3, 1, 4, 1, 5, 9};
  return r;
}

TEST(DataChecksumTest, IsXxh3OfRowHashThenLabelRecords) {
  // Two rows: the checksum is XXH3 over (XXH3(row), label) as little-endian records,
  // computed here straight from the library.
  Rows r;
  r.data = {'a', 'b', 'c', 'd', 'e', 'f'};
  r.labels = {7, -1};
  unsigned char stream[32];
  auto put = [](uint64_t v, unsigned char* out) {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
  };
  put(XXH3_64bits("abc", 3), stream);
  put(7, stream + 8);
  put(XXH3_64bits("def", 3), stream + 16);
  put(static_cast<uint64_t>(int64_t{-1}), stream + 24);
  DataChecksum sum;
  sum.Add(BatchOf(r, 3, 0, 2));
  EXPECT_EQ(sum.Text(), DataChecksum::Format(XXH3_64bits(stream, sizeof(stream))));
  EXPECT_EQ(sum.Text().size(), 5u + 16u);
  EXPECT_EQ(sum.rows(), 2u);
}

TEST(DataChecksumTest, TheSameRowsGroupedDifferentlyGiveTheSameChecksum) {
  const Rows r = SixRows();
  DataChecksum whole;
  whole.Add(BatchOf(r, 5, 0, 6));
  DataChecksum halves;  // As after SetBatchSize: batches of 4, then 1 and 1.
  halves.Add(BatchOf(r, 5, 0, 4));
  halves.Add(BatchOf(r, 5, 4, 5));
  halves.Add(BatchOf(r, 5, 5, 6));
  EXPECT_EQ(whole.Text(), halves.Text());
  EXPECT_EQ(whole.rows(), halves.rows());
}

TEST(DataChecksumTest, AByteALabelOrTheOrderChangesIt) {
  const Rows r = SixRows();
  DataChecksum base;
  base.Add(BatchOf(r, 5, 0, 6));

  Rows byte = r;
  byte.data[17] ^= 1;
  DataChecksum byte_sum;
  byte_sum.Add(BatchOf(byte, 5, 0, 6));
  EXPECT_NE(byte_sum.Text(), base.Text());

  Rows label = r;
  label.labels[2] = 2;
  DataChecksum label_sum;
  label_sum.Add(BatchOf(label, 5, 0, 6));
  EXPECT_NE(label_sum.Text(), base.Text());

  DataChecksum swapped;  // Batches [3, 6) then [0, 3).
  swapped.Add(BatchOf(r, 5, 3, 6));
  swapped.Add(BatchOf(r, 5, 0, 3));
  EXPECT_NE(swapped.Text(), base.Text());
}

TEST(DataChecksumTest, SoftTargetsAreHashedByTheirBytesNotTheClassIndex) {
  // Two rows with float32 [2, 3] soft targets: the record's label word is XXH3 of the
  // row's three floats; the class index (labels) does not enter.
  Rows r;
  r.data = {'a', 'b', 'c', 'd', 'e', 'f'};
  r.labels = {7, 8};
  const float targets[6] = {0.8f, 0.1f, 0.1f, 0.05f, 0.05f, 0.9f};
  Batch b = BatchOf(r, 3, 0, 2);
  b.label.shape = {2, 3};
  b.label.dtype = DType::kFloat32;
  b.label.host_data = targets;
  unsigned char stream[32];
  auto put = [](uint64_t v, unsigned char* out) {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
  };
  put(XXH3_64bits("abc", 3), stream);
  put(XXH3_64bits(targets, 12), stream + 8);
  put(XXH3_64bits("def", 3), stream + 16);
  put(XXH3_64bits(targets + 3, 12), stream + 24);
  DataChecksum sum;
  sum.Add(b);
  EXPECT_EQ(sum.Text(), DataChecksum::Format(XXH3_64bits(stream, sizeof(stream))));

  float changed[6];
  std::memcpy(changed, targets, sizeof(changed));
  changed[4] = 0.06f;  // One target's last bits differ: the checksum does.
  b.label.host_data = changed;
  DataChecksum other;
  other.Add(b);
  EXPECT_NE(other.Text(), sum.Text());
}

TEST(DataChecksumTest, EachEpochHasItsOwnChecksumAndTheTotalCoversAll) {
  const Rows r = SixRows();
  DataChecksum sum;
  sum.Add(BatchOf(r, 5, 0, 3, /*epoch=*/0));
  sum.Add(BatchOf(r, 5, 3, 6, /*epoch=*/0));
  sum.Add(BatchOf(r, 5, 0, 6, /*epoch=*/1));
  DataChecksum one_epoch;
  one_epoch.Add(BatchOf(r, 5, 0, 6));
  const auto epochs = sum.EpochTexts();
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].first, 0);
  EXPECT_EQ(epochs[1].first, 1);
  EXPECT_EQ(epochs[0].second, one_epoch.Text());
  EXPECT_EQ(epochs[1].second, one_epoch.Text());
  EXPECT_NE(sum.Text(), one_epoch.Text());
}

}  // namespace
}  // namespace flowloader
