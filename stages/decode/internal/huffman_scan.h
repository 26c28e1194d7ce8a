// huffman_scan.h: a fast decoder for the entropy-coded data of one baseline JPEG scan
// (sequential, Huffman, all components interleaved), the part of decoding that dominates
// the loader's CPU time (about 60% of a train run, measured with perf;
// see docs/performance.md).
//
// It differs from libjpeg-turbo's decode_mcu_fast in these ways, which together make
// whole decodes of the benchmark's files 1.40x (full) and 1.45x (crop regions) faster
// than with libjpeg-turbo's own (decode_bench --compare-huffman; huffman_bench times
// the entropy decoder alone; docs/performance.md):
//   - the scan is unstuffed once up front (0xFF00 -> 0xFF, restart markers cut out), so
//     reading bits is one unaligned 64-bit load at a bit position: no per-byte marker
//     checks in the inner loop;
//   - one table lookup decodes up to two whole AC symbols (code and magnitude bits) that
//     fit in kFastBits bits, value and value or value and EOB (FastAc): the loop is
//     bound by the lookup -> shift dependency chain, so halving the lookups pays; DC has
//     a lookup that yields the difference directly;
//   - the bit buffer is refilled on a fixed cadence (every three AC steps) rather than
//     when low, which removed the loop's least predictable branch, and a block's decode
//     runs inlined in the MCU loop with the reader in registers;
//   - a stream that is not terminated by a marker is known to be truncated before any
//     pixel is decoded, so a truncated file fails the same way whatever region is asked.
// Semantics follow libjpeg-turbo: coefficients are stored in natural order into blocks
// the caller zeroed, a run past coefficient 63 lands on 63, DC predictors reset at each
// restart, any bit consumed past the end of a segment is an error (libjpeg's "hit marker"
// warning, which our codec treats as an error).
//
// Thread-safety: HuffmanTable is immutable after Build; a ScanDecoder is used by one
// thread.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_HUFFMAN_SCAN_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_HUFFMAN_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flowloader::decode::internal {

// kFastBits: codes (and, for AC, code + magnitude) up to this many bits decode in one
// lookup. 10 covers almost every symbol of photographic data at q75–q95 with tables of a
// few KB (measured: 9 and 11 were no faster).
inline constexpr int kFastBits = 10;

// FastAc packs what a fast_ac entry says (DecodeAcStep in huffman_scan.cc uses it):
// the first symbol is a coefficient (run, value), EOB or ZRL; a second symbol, a
// coefficient or EOB, is included when it fits too, which halves the table lookups that
// the bit reader's dependency chain waits on (two symbols per lookup: the chain, not the
// work, bounds this loop). Fields, from bit 0:
//   bits  0-5   bits consumed (both symbols)
//   bit   6     the block ends after this entry (EOB)
//   bits  8-15  run before the first value
//   bits 16-23  step from the first value's position to the second's (0: single entry,
//               whose "second" value is the first again, stored twice)
//   bits 24-31  the largest position k before the entry for which it may be used (a
//               pair only while the first value lands before 63: libjpeg ends the block
//               there and the second symbol belongs to the next block); 0 in an
//               empty entry (no symbol fits), which no position k >= 1 passes
//   bits 32-47  first value; bits 48-63 second value
struct FastAc {
  static constexpr uint64_t kEndOfBlock = 64;
  static uint64_t Pack(int length, bool end_of_block, int run, int step, int max_k,
                       int first, int second) {
    return static_cast<uint64_t>(length) | (end_of_block ? kEndOfBlock : 0) |
           static_cast<uint64_t>(run) << 8 | static_cast<uint64_t>(step) << 16 |
           static_cast<uint64_t>(max_k) << 24 |
           static_cast<uint64_t>(static_cast<uint16_t>(first)) << 32 |
           static_cast<uint64_t>(static_cast<uint16_t>(second)) << 48;
  }
};

struct HuffmanTable {
  // By the next kFastBits bits: (code length << 8) | symbol; 0 when the code is longer.
  uint16_t fast[1 << kFastBits];
  // DC tables only: (difference << 8) | (code length + magnitude bits) for a DC code
  // whose code and magnitude fit in kFastBits; 0 otherwise.
  int32_t fast_dc[1 << kFastBits];
  // AC tables only: by the next kFastBits bits, one or two whole symbols (code and
  // magnitude bits) that fit in them, as a FastAc entry; 0 when the first does not fit.
  uint64_t fast_ac[1 << kFastBits];
  // Longer codes: maxcode[l] is one past the largest length-l code, left-aligned to 16
  // bits (all codes of length l compare below it); offset[l] + code indexes `values`.
  uint32_t maxcode[18];
  int32_t offset[17];
  uint8_t values[256];
};

// BuildHuffmanTable prepares a DHT table (bits[1..16] = codes per length, values in code
// order). Returns false for tables libjpeg also refuses: more than 256 codes, codes that
// overflow their length, DC symbols above 15.
bool BuildHuffmanTable(const uint8_t bits[17], const uint8_t values[256], bool is_ac,
                       HuffmanTable* table);

// ScanData is a scan's entropy-coded bytes with stuffing removed, split at restarts.
struct ScanData {
  // kPadding zero bytes follow the data, so the decoder may load past its end.
  static constexpr size_t kPadding = 512;
  std::vector<uint8_t> bytes;
  size_t size = 0;  // Data bytes, without the padding.
  // segment_ends[i]: where restart interval i ends (the last one ends at `size`).
  std::vector<size_t> segment_ends;
  // restart_numbers[i]: the RSTn marker number that ended interval i (not the last).
  std::vector<uint8_t> restart_numbers;
  // True when a marker other than RSTn ended the data (EOI, normally); false when the
  // input ran out first, i.e. the file is truncated.
  bool ended_at_marker = false;
};

// UnstuffScan reads entropy-coded data from `data` up to the first marker other than
// RSTn (or the end) into `out`, reusing its storage.
void UnstuffScan(const uint8_t* data, size_t size, ScanData* out);

// SeekPoint is the decoder state at the start of one MCU: where its bits begin and the
// DC predictors. Huffman codes have no sync points, so reaching MCU m means decoding all
// MCUs before it; with a point at or before m from an earlier decode of the same file
// (an earlier epoch), the decoder jumps there instead. See SeekIndex.
struct SeekPoint {
  static constexpr uint32_t kUnknown = 0xFFFFFFFFu;
  uint32_t bit = kUnknown;
  int16_t dc[4] = {0, 0, 0, 0};
};

// SeekIndex is a file's seek points: one every `step` MCUs of each MCU row, at columns
// 0, step, 2·step, ..., row by row. Points are filled in as decodes pass them.
struct SeekIndex {
  int mcus_per_row = 0;
  int mcu_rows = 0;
  int step = 1;
  int points_per_row = 0;
  std::vector<SeekPoint> points;  // mcu_rows × points_per_row.
  bool grew = false;              // A decode filled in a point.

  // Reset sizes the index for a scan (every point unknown).
  void Reset(int mcus_per_row, int mcu_rows, int step);
};

class ScanDecoder {
 public:
  enum class Result { kOk, kCorrupt, kTruncated };

  // Start decoding `data` (which must outlive the decoder's use) for a scan of
  // `num_components` components with the given restart interval in MCUs (0 = none).
  void Start(const ScanData* data, int restart_interval, int num_components);

  // DecodeMcu decodes the next MCU's `num_blocks` blocks: block i belongs to component
  // component_of[i] and is written, in natural order, to blocks[i], which the caller has
  // zeroed. blocks == nullptr decodes and discards (skipped rows).
  Result DecodeMcu(int16_t* const* blocks, int num_blocks, const int* component_of,
                   const HuffmanTable* const* dc_of, const HuffmanTable* const* ac_of);

  // UseIndex (after Start; scans without restarts only) records seek points into `index`
  // as MCUs are reached, and skips MCUs that are not needed, jumping to the last known
  // point before the next needed MCU. Needed are the MCUs of rows >= first_row and
  // columns first_col..last_col; the caller must guarantee that no other MCU's
  // coefficients are used (the blocks of a skipped MCU are left as the caller zeroed
  // them). MCUs are counted in raster order from the scan's start.
  void UseIndex(SeekIndex* index, int first_row, int first_col, int last_col);

 private:
  // MaybeJump, at the unneeded MCU `mcu` (at row, col), jumps to the last known seek
  // point at or before the next needed MCU, if that point is past `mcu`; resume_at_ then
  // says where decoding resumes.
  void MaybeJump(int64_t mcu, int row, int col);
  // SeekToBit moves the bit reader to absolute bit position `bit` of the data.
  void SeekToBit(uint64_t bit);

  Result NextRestartInterval();

  // The bit position of the next unread bit.
  uint64_t BitPosition() const { return BitPositionOf(ptr_, count_); }
  // ... of a bit reader at `ptr` holding `count` unread bits.
  uint64_t BitPositionOf(const uint8_t* ptr, int count) const {
    return static_cast<uint64_t>(ptr - data_->bytes.data()) * 8 - count;
  }

  const ScanData* data_ = nullptr;
  // Bit reader state (see BitReader in the .cc): kept in locals while an MCU decodes.
  const uint8_t* ptr_ = nullptr;
  uint64_t buf_ = 0;
  int count_ = 0;
  uint64_t limit_ = 0;         // Bit position where the current segment ends.
  size_t segment_ = 0;         // Index into data_->segment_ends.
  int restart_interval_ = 0;
  int restarts_to_go_ = 0;
  int next_restart_number_ = 0;
  int32_t dc_pred_[4] = {0, 0, 0, 0};
  int num_components_ = 0;
  // Seek index (UseIndex); index_ == nullptr when off.
  SeekIndex* index_ = nullptr;
  int64_t mcu_ = 0;         // The MCU the next DecodeMcu call is for,
  int mcu_row_ = 0;         // in this MCU row
  int mcu_col_ = 0;         // and column.
  int64_t resume_at_ = 0;   // Calls for MCUs before this one were jumped over.
  int64_t searched_for_ = -1;  // The next needed MCU the last fruitless search was for.
  int first_row_ = 0, first_col_ = 0, last_col_ = 0;
  alignas(64) int16_t scratch_[64];  // Where discarded blocks go.
};

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_HUFFMAN_SCAN_H_
