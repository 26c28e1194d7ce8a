// data_checksum.h: the checksum of what a pipeline delivered (PipelineOptions::checksum,
// Pipeline::data_checksum), so that two runs can be shown to have delivered the same data.
//
// The hash is zlib's CRC-32 over a byte stream made of each delivered row's tensor bytes
// followed by its label as 8 little-endian bytes, row after row in delivery order. The
// stream is per row, not per batch, so the value depends only on which samples came out,
// in which order and with which bytes: not on num_workers, on completion order, or on how
// rows were grouped into batches (SetBatchSize mid-run gives the same checksum). CRC-32 is
// a library function that is stable across processes, machines and versions (Abseil's
// absl::Hash is salted per process; Debian 12's Abseil 20220623 has no absl/crc).
//
// Thread-safety: a DataChecksum is a plain value; its owner serializes access.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_DATA_CHECKSUM_H_
#define FLOWLOADER_RUNTIME_INTERNAL_DATA_CHECKSUM_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stages/collate/batch.h"

namespace flowloader {

class DataChecksum {
 public:
  // Add hashes `batch`'s rows, in order, into the total and into its epoch's checksum.
  void Add(const Batch& batch);

  // Text is "crc32:XXXXXXXX" (8 lowercase hex digits) over everything added.
  std::string Text() const;
  // EpochTexts is Text per epoch that had a batch added, in the order epochs were added.
  std::vector<std::pair<int64_t, std::string>> EpochTexts() const;
  // bytes is the length of the hashed stream.
  uint64_t bytes() const { return bytes_; }

  // Format writes a CRC-32 value as Text does.
  static std::string Format(uint32_t crc);

 private:
  struct EpochSum {
    int64_t epoch = 0;
    uint32_t crc = 0;
  };
  uint32_t crc_ = 0;
  uint64_t bytes_ = 0;
  std::vector<EpochSum> epochs_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_DATA_CHECKSUM_H_
