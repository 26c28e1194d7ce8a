// data_checksum.h: the checksum of what a pipeline delivered (PipelineOptions::checksum,
// Pipeline::data_checksum), so that two runs can be shown to have delivered the same data.
//
// The hash is xxHash's XXH3 (64-bit, seed 0), from Debian's libxxhash: each delivered row's
// tensor bytes are hashed alone, and the checksum is XXH3 over the stream of 16-byte
// records (row hash, label), both little-endian, row after row in delivery order; with
// float32 soft targets (Batch::label [N, C]) the label word is XXH3 of the row's C floats.
// A detection or segmentation row's hash covers its targets too (image id, instance
// count, boxes, labels, iscrowd, area, masks, keypoints, label map), after its pixels. The
// stream is per row, not per batch, so the value depends only on which samples came out,
// in which order and with which bytes: not on num_workers, on completion order, or on how
// rows were grouped into batches (SetBatchSize mid-run gives the same checksum). XXH3 is
// stable across processes, machines and library versions (Abseil's absl::Hash is salted
// per process; Debian 12's Abseil 20220623 has no absl/crc). It reads each byte once, at
// about 5× zlib's CRC-32 speed on these machines, on the consumer's thread.
//
// Thread-safety: a DataChecksum is not thread-safe; its owner serializes access.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_DATA_CHECKSUM_H_
#define FLOWLOADER_RUNTIME_INTERNAL_DATA_CHECKSUM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stages/collate/batch.h"

namespace flowloader {

class DataChecksum {
 public:
  DataChecksum();
  ~DataChecksum();
  DataChecksum(const DataChecksum&) = delete;
  DataChecksum& operator=(const DataChecksum&) = delete;

  // Add hashes `batch`'s rows, in order, into the total and into its epoch's checksum. A
  // row's hash covers its bytes in every tensor of the batch (Batch::tensors, in order),
  // then its targets (Batch::targets) when present; with one tensor and no targets it is
  // that tensor's row, as it always was.
  void Add(const Batch& batch);

  // Text is "xxh3:XXXXXXXXXXXXXXXX" (16 lowercase hex digits) over everything added.
  std::string Text() const;
  // EpochTexts is Text per epoch that had a batch added, in the order epochs were added.
  std::vector<std::pair<int64_t, std::string>> EpochTexts() const;
  // rows is the number of rows hashed.
  uint64_t rows() const { return rows_; }

  // Format writes a hash value as Text does.
  static std::string Format(uint64_t hash);

 private:
  class Stream;  // XXH3's streaming state.
  uint64_t RowHash(const Batch& batch, int64_t row);
  void AddRowTargets(const BatchTargets& targets, int64_t row);
  static uint64_t LabelWord(const Batch& batch, int64_t row);
  std::unique_ptr<Stream> total_;
  std::unique_ptr<Stream> epoch_;  // The epoch of the last batch added.
  std::unique_ptr<Stream> row_;    // One row's bytes across several tensors.
  int64_t epoch_number_ = -1;
  std::vector<std::pair<int64_t, std::string>> finished_epochs_;
  uint64_t rows_ = 0;
};

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_DATA_CHECKSUM_H_
