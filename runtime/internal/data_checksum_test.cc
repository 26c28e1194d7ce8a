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

// DetectionBatch is two uint8 rows ("abc", "def") with targets: row 0 has two instances,
// row 1 one, each with a 2×2 mask and one keypoint.
Batch DetectionBatch(const Rows& rows) {
  Batch b = BatchOf(rows, 3, 0, 2);
  BatchTargets& t = b.targets;
  t.present = true;
  t.offsets = {0, 2, 3};
  t.boxes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  t.labels = {4, 5, 6};
  t.iscrowd = {0, 1, 0};
  t.area = {4.5f, 5.5f, 6.5f};
  t.image_ids = {100, 200};
  t.has_masks = true;
  t.mask_height = 2;
  t.mask_width = 2;
  t.masks = {1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1};
  t.has_keypoints = true;
  t.num_keypoints = 1;
  t.keypoints = {1, 1, 2, 3, 3, 2, 5, 5, 0};
  return b;
}

TEST(DataChecksumTest, ARowsTargetsFollowItsPixelsInItsHash) {
  // Row 1's hash, computed here from the library: its pixels, then image id and instance
  // count as little-endian words, then its slice of each field in BatchTargets' order.
  Rows r;
  r.data = {'a', 'b', 'c', 'd', 'e', 'f'};
  r.labels = {0, 0};
  const Batch b = DetectionBatch(r);
  std::string row1 = "def";
  auto put = [&row1](const void* p, size_t n) { row1.append(static_cast<const char*>(p), n); };
  const uint64_t image_id = 200, count = 1;
  put(&image_id, 8);
  put(&count, 8);
  put(b.targets.boxes.data() + 8, 16);
  put(b.targets.labels.data() + 2, 8);
  put(b.targets.iscrowd.data() + 2, 8);
  put(b.targets.area.data() + 2, 4);
  put(b.targets.masks.data() + 8, 4);
  put(b.targets.keypoints.data() + 6, 12);
  DataChecksum only_row1;
  Batch second = b;
  second.tensors[0].shape = {1, 3};
  second.tensors[0].host_data = r.data.data() + 3;
  second.labels = {0};
  second.targets.offsets = {0, 1};
  second.targets.boxes.erase(second.targets.boxes.begin(), second.targets.boxes.begin() + 8);
  second.targets.labels = {6};
  second.targets.iscrowd = {0};
  second.targets.area = {6.5f};
  second.targets.image_ids = {200};
  second.targets.masks.erase(second.targets.masks.begin(), second.targets.masks.begin() + 8);
  second.targets.keypoints.erase(second.targets.keypoints.begin(),
                                 second.targets.keypoints.begin() + 6);
  only_row1.Add(second);
  unsigned char record[16];
  const uint64_t hash = XXH3_64bits(row1.data(), row1.size());
  for (int i = 0; i < 8; ++i) record[i] = static_cast<unsigned char>(hash >> (8 * i));
  std::memset(record + 8, 0, 8);
  EXPECT_EQ(only_row1.Text(), DataChecksum::Format(XXH3_64bits(record, sizeof(record))));
}

TEST(DataChecksumTest, EveryTargetFieldChangesIt) {
  Rows r;
  r.data = {'a', 'b', 'c', 'd', 'e', 'f'};
  r.labels = {0, 0};
  DataChecksum base;
  base.Add(DetectionBatch(r));
  DataChecksum pixels_only;  // The same pixels and labels without targets.
  pixels_only.Add(BatchOf(r, 3, 0, 2));
  EXPECT_NE(base.Text(), pixels_only.Text());
  const std::vector<void (*)(BatchTargets*)> edits = {
      [](BatchTargets* t) { t->boxes[5] += 0.5f; },
      [](BatchTargets* t) { t->labels[2] = 9; },
      [](BatchTargets* t) { t->iscrowd[0] = 1; },
      [](BatchTargets* t) { t->area[1] = 0; },
      [](BatchTargets* t) { t->image_ids[0] = 101; },
      [](BatchTargets* t) { t->masks[11] = 0; },
      [](BatchTargets* t) { t->keypoints[2] = 1; },
      [](BatchTargets* t) { t->offsets = {0, 1, 3}; },  // An instance moves to row 1.
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    Batch edited = DetectionBatch(r);
    edits[i](&edited.targets);
    DataChecksum sum;
    sum.Add(edited);
    EXPECT_NE(sum.Text(), base.Text()) << "edit " << i;
  }
}

TEST(DataChecksumTest, ASemanticLabelMapIsPartOfItsRow) {
  Rows r;
  r.data = {'a', 'b', 'c', 'd', 'e', 'f'};
  r.labels = {0, 0};
  auto with_maps = [&r](int64_t last) {
    Batch b = BatchOf(r, 3, 0, 2);
    b.targets.present = true;
    b.targets.offsets = {0, 0, 0};
    b.targets.image_ids = {1, 2};
    b.targets.has_semantic = true;
    b.targets.mask_height = 1;
    b.targets.mask_width = 2;
    b.targets.semantic = {0, 255, 3, last};
    DataChecksum sum;
    sum.Add(b);
    return sum.Text();
  };
  EXPECT_EQ(with_maps(4), with_maps(4));
  EXPECT_NE(with_maps(4), with_maps(5));
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
