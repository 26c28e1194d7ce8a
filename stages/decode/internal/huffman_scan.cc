// huffman_scan.cc: see huffman_scan.h for what it does and why.
#include "stages/decode/internal/huffman_scan.h"

#include <cstring>

// The inner loop's helpers stay inlined even in builds that turn inlining off (the TSan
// config, -fno-inline): called out of line and instrumented they make decoding ~10x
// slower, enough to change what timing-sensitive concurrency tests observe.
#define FLOWLOADER_HOT_INLINE inline __attribute__((always_inline))

namespace flowloader::decode::internal {
namespace {

// kNaturalOrder maps zigzag index k to the natural (row-major) position. 16 extra entries
// of 63 absorb a corrupt run past the end of the block, as libjpeg's table does.
constexpr uint8_t kNaturalOrder[64 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33,
    40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36,
    29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

// Extend turns s magnitude bits into the signed value they code (JPEG F.2.2.1).
// Branchless: the sign of a coded value is as unpredictable as the data.
FLOWLOADER_HOT_INLINE int32_t Extend(uint32_t bits, int s) {
  const int32_t negative = bits < (1u << (s - 1));
  return static_cast<int32_t>(bits) - (negative * ((1 << s) - 1));
}

// BitReader reads MSB-first from unstuffed data with a 64-bit buffer and a branchless
// refill (F. Giesen, "Reading bits in far too many ways", variant 4): the next symbol's
// table lookup depends on a register shift, not on a load.
struct BitReader {
  const uint8_t* ptr;  // The next byte not yet wholly in `buf`.
  uint64_t buf;        // `count` valid bits at the top; lower bits are data or zero.
  int count;

  // Refill leaves 56..63 valid bits.
  FLOWLOADER_HOT_INLINE void Refill() {
    uint64_t word;
    std::memcpy(&word, ptr, sizeof(word));
    buf |= __builtin_bswap64(word) >> count;
    ptr += (63 - count) >> 3;
    count |= 56;
  }
  FLOWLOADER_HOT_INLINE void Consume(int n) {
    buf <<= n;
    count -= n;
  }
};

// DecodeSymbol returns the symbol whose code starts `window` and sets *length, or -1
// for bits that are no code of the table.
FLOWLOADER_HOT_INLINE int DecodeSymbol(const HuffmanTable& table, uint64_t window, int* length) {
  const uint16_t entry = table.fast[window >> (64 - kFastBits)];
  if (entry != 0) {
    *length = entry >> 8;
    return entry & 0xFF;
  }
  const uint32_t top16 = static_cast<uint32_t>(window >> 48);
  for (int l = kFastBits + 1; l <= 16; ++l) {
    if (top16 < table.maxcode[l]) {
      *length = l;
      return table.values[static_cast<int32_t>(top16 >> (16 - l)) + table.offset[l]];
    }
  }
  return -1;
}

// FastSymbol is one whole symbol (code + magnitude) at the top of a kFastBits index.
struct FastSymbol {
  bool fits = false;  // Code and magnitude lie within the index's real bits.
  int length = 0;     // Code + magnitude bits.
  int run = 0;        // AC only; DC symbols have run 0.
  int size = 0;       // Magnitude bits; for AC 0 means EOB (run 0) or ZRL (run 15).
  int32_t value = 0;  // The coefficient, or for DC the difference.
};

// ReadFastSymbol decodes the symbol at the top of `index`, of which only the top
// `available` bits are real data.
FastSymbol ReadFastSymbol(const HuffmanTable& table, uint32_t index, int available) {
  FastSymbol sym;
  const uint16_t entry = table.fast[index];
  if (entry == 0) return sym;  // A longer code.
  const int code_length = entry >> 8;
  sym.run = (entry & 0xFF) >> 4;
  sym.size = entry & 15;
  sym.length = code_length + sym.size;
  if (sym.length > available) return sym;
  if (sym.size == 0 && sym.run != 0 && sym.run != 15) return sym;  // Not a JPEG AC symbol.
  if (sym.size > 0) {
    const uint32_t magnitude =
        (index >> (kFastBits - sym.length)) & ((1u << sym.size) - 1);
    sym.value = Extend(magnitude, sym.size);
  }
  sym.fits = true;
  return sym;
}

// BuildFastDc fills table->fast_dc from table->fast.
void BuildFastDc(HuffmanTable* table) {
  for (uint32_t i = 0; i < (1u << kFastBits); ++i) {
    const FastSymbol sym = ReadFastSymbol(*table, i, kFastBits);
    table->fast_dc[i] =
        sym.fits ? static_cast<int32_t>(static_cast<uint32_t>(sym.value) << 8) | sym.length
                 : 0;
  }
}

// BuildFastAc fills table->fast_ac from table->fast (see FastAc).
void BuildFastAc(HuffmanTable* table) {
  for (uint32_t i = 0; i < (1u << kFastBits); ++i) {
    const FastSymbol a = ReadFastSymbol(*table, i, kFastBits);
    if (!a.fits) {
      table->fast_ac[i] = 0;
      continue;
    }
    // EOB (run 0, value 0) ends the block; ZRL (run 15, value 0) stores a zero on a
    // coefficient that is still zero, fifteen places on. A single entry stores its value
    // twice at the same place (step 0).
    table->fast_ac[i] = FastAc::Pack(a.length, a.size == 0 && a.run == 0, a.run, 0, 63,
                                     a.value, a.value);
    if (a.size == 0) continue;
    const uint32_t rest = (i << a.length) & ((1u << kFastBits) - 1);
    const FastSymbol b = ReadFastSymbol(*table, rest, kFastBits - a.length);
    if (!b.fits || (b.size == 0 && b.run != 0)) continue;  // Pairs end in a value or EOB.
    if (b.size == 0) {  // The value, then EOB.
      table->fast_ac[i] = FastAc::Pack(a.length + b.length, true, a.run, 0, 62 - a.run,
                                       a.value, a.value);
    } else {
      table->fast_ac[i] = FastAc::Pack(a.length + b.length, false, a.run, 1 + b.run,
                                       62 - a.run, a.value, b.value);
    }
  }
}

enum class AcStep { kMore, kEnd, kBad };

// kMaxSymbolBits: the most one Huffman symbol takes with its magnitude bits (a 16-bit
// code and 15 magnitude bits, which libjpeg accepts from a hostile table).
constexpr int kMaxSymbolBits = 31;
// kSlowStepBits: a slow AC step refills first when fewer bits than this remain, so that
// it leaves at least kFastBits for a fast step after it.
constexpr int kSlowStepBits = kMaxSymbolBits + kFastBits;
// kAcStepsPerRefill: DecodeAc refills once per this many AC steps, each of which needs
// kFastBits valid bits when it starts. A refill leaves at least 56 bits; a fast step
// takes at most kFastBits; a slow step leaves at least kFastBits. Before step 2 there
// are at least 56 - kMaxSymbolBits; before step 3 at least 56 - kMaxSymbolBits -
// kFastBits (slow, fast) or kFastBits (after a slow step 2). A fourth step could start
// short: slow (56 -> 25), fast (15), fast (5).
constexpr int kAcStepsPerRefill = 3;
static_assert(56 - kMaxSymbolBits - kFastBits >= kFastBits,
              "three AC steps per refill need this margin");
static_assert(kSlowStepBits <= 56, "a refill must satisfy a slow step");

// DecodeAcStep decodes the next fast_ac entry (one or two symbols) or, when none fits,
// one symbol the slow way, at zigzag position *k, and says whether the block goes on.
// The caller guarantees kFastBits valid bits; the slow way refills for itself.
FLOWLOADER_HOT_INLINE AcStep DecodeAcStep(const HuffmanTable& ac, BitReader* r,
                                          int16_t* block, int* k) {
  const uint64_t fast = ac.fast_ac[r->buf >> (64 - kFastBits)];
  // An empty entry (0) has largest k 0, so one compare tests both.
  if (*k <= static_cast<int>((fast >> 24) & 0xFF)) {
    // The length is the low 6 bits: the shift needs no mask (x86 masks the count).
    r->Consume(static_cast<int>(fast & 63));
    *k += static_cast<int>((fast >> 8) & 0xFF);
    block[kNaturalOrder[*k]] = static_cast<int16_t>(fast >> 32);
    *k += static_cast<int>((fast >> 16) & 0xFF);
    block[kNaturalOrder[*k]] = static_cast<int16_t>(fast >> 48);
    ++*k;
    return (fast & FastAc::kEndOfBlock) ? AcStep::kEnd : AcStep::kMore;
  }
  if (r->count < kSlowStepBits) r->Refill();
  int length;
  const int rs = DecodeSymbol(ac, r->buf, &length);
  if (rs < 0) return AcStep::kBad;
  const int run = rs >> 4;
  const int size = rs & 15;
  if (size == 0) {
    r->Consume(length);
    if (run != 15) return AcStep::kEnd;  // End of block.
    *k += 16;                             // ZRL: sixteen zeros.
    return AcStep::kMore;
  }
  *k += run;
  block[kNaturalOrder[*k]] = static_cast<int16_t>(
      Extend(static_cast<uint32_t>((r->buf << length) >> (64 - size)), size));
  r->Consume(length + size);
  ++*k;
  return AcStep::kMore;
}

// DecodeAc decodes a block's AC coefficients (positions 1..63) into `block`; false for
// bits that are no code. It refills on a fixed cadence, once per kAcStepsPerRefill
// steps: refilling "when low" put a branch in the loop that the data made
// unpredictable, half of DecodeBlock's mispredictions (cachegrind --branch-sim); this is
// ~5% faster (huffman_bench).
FLOWLOADER_HOT_INLINE bool DecodeAc(const HuffmanTable& ac, BitReader* r, int16_t* block) {
  int k = 1;
  for (;;) {
    r->Refill();
#pragma GCC unroll 4
    for (int i = 0; i < kAcStepsPerRefill; ++i) {
      const AcStep step = DecodeAcStep(ac, r, block, &k);
      if (step == AcStep::kBad) return false;
      if (step == AcStep::kEnd || k >= 64) return true;
    }
  }
}

// DecodeBlock decodes one block (DC, then AC) into `block`, which the caller zeroed;
// false for bits that are no code. Inlined into DecodeMcu's loop, so the bit reader
// stays in registers across an MCU's blocks.
FLOWLOADER_HOT_INLINE bool DecodeBlock(BitReader* r, int16_t* block, const HuffmanTable& dc,
                                       const HuffmanTable& ac, int32_t* dc_pred) {
  r->Refill();
  int32_t diff = 0;
  const int32_t fast_dc = dc.fast_dc[r->buf >> (64 - kFastBits)];
  if (fast_dc != 0) {
    diff = fast_dc >> 8;
    r->Consume(fast_dc & 63);
  } else {
    int length;
    const int s = DecodeSymbol(dc, r->buf, &length);
    if (s < 0) return false;
    if (s != 0) diff = Extend(static_cast<uint32_t>((r->buf << length) >> (64 - s)), s);
    r->Consume(length + s);
  }
  // Unsigned: a hostile stream may push the predictor past int's range; the stored
  // coefficient keeps the low 16 bits, as libjpeg's JCOEF cast does.
  *dc_pred = static_cast<int32_t>(static_cast<uint32_t>(*dc_pred) +
                                  static_cast<uint32_t>(diff));
  block[0] = static_cast<int16_t>(*dc_pred);
  return DecodeAc(ac, r, block);
}

}  // namespace

bool BuildHuffmanTable(const uint8_t bits[17], const uint8_t values[256], bool is_ac,
                       HuffmanTable* table) {
  int count = 0;
  for (int l = 1; l <= 16; ++l) count += bits[l];
  if (count > 256) return false;
  std::memset(table->fast, 0, sizeof(table->fast));
  std::memset(table->fast_ac, 0, sizeof(table->fast_ac));
  std::memcpy(table->values, values, static_cast<size_t>(count));
  uint32_t code = 0;  // The next code of the current length.
  int index = 0;      // Its symbol's index in `values`.
  for (int l = 1; l <= 16; ++l) {
    table->offset[l] = index - static_cast<int32_t>(code);
    for (int i = 0; i < bits[l]; ++i, ++index, ++code) {
      if (code >= (1u << l)) return false;  // More codes than this length holds.
      const uint8_t symbol = values[index];
      if (!is_ac && symbol > 15) return false;
      if (l > kFastBits) continue;
      const int spare = kFastBits - l;  // Bits after the code in a fast index.
      const uint32_t first = code << spare;
      for (uint32_t j = 0; j < (1u << spare); ++j) {
        table->fast[first + j] = static_cast<uint16_t>((l << 8) | symbol);
      }
    }
    // All-ones codes are reserved; one past the last code must still fit in l bits.
    if (code >= (1u << l)) return false;
    table->maxcode[l] = code << (16 - l);
    code <<= 1;
  }
  table->maxcode[17] = 0xFFFFFFFFu;
  if (is_ac) {
    BuildFastAc(table);
  } else {
    BuildFastDc(table);
  }
  return true;
}

void UnstuffScan(const uint8_t* data, size_t size, ScanData* out) {
  out->bytes.resize(size + ScanData::kPadding);
  out->segment_ends.clear();
  out->restart_numbers.clear();
  out->ended_at_marker = false;
  uint8_t* dst = out->bytes.data();
  size_t n = 0;
  const uint8_t* p = data;
  const uint8_t* const end = data + size;
  while (p < end) {
    const auto* ff = static_cast<const uint8_t*>(std::memchr(p, 0xFF, end - p));
    if (ff == nullptr) {
      std::memcpy(dst + n, p, end - p);
      n += end - p;
      break;
    }
    std::memcpy(dst + n, p, ff - p);
    n += ff - p;
    const uint8_t* q = ff + 1;
    while (q < end && *q == 0xFF) ++q;  // Fill bytes before a marker (or a stuffed 0).
    if (q == end) break;
    if (*q == 0x00) {  // Stuffed: a data byte 0xFF.
      dst[n++] = 0xFF;
      p = q + 1;
    } else if (*q >= 0xD0 && *q <= 0xD7) {  // RSTn ends a restart interval.
      out->segment_ends.push_back(n);
      out->restart_numbers.push_back(static_cast<uint8_t>(*q - 0xD0));
      p = q + 1;
    } else {  // Any other marker ends the scan.
      out->ended_at_marker = true;
      break;
    }
  }
  out->segment_ends.push_back(n);
  out->size = n;
  std::memset(dst + n, 0, ScanData::kPadding);
}

void ScanDecoder::Start(const ScanData* data, int restart_interval, int num_components) {
  data_ = data;
  SeekToBit(0);
  segment_ = 0;
  limit_ = static_cast<uint64_t>(data->segment_ends[0]) * 8;
  restart_interval_ = restart_interval;
  restarts_to_go_ = restart_interval;
  next_restart_number_ = 0;
  for (int c = 0; c < 4; ++c) dc_pred_[c] = 0;
  num_components_ = num_components;
  index_ = nullptr;
  mcu_ = 0;
  mcu_row_ = 0;
  mcu_col_ = 0;
  resume_at_ = 0;
}

void SeekIndex::Reset(int per_row, int rows, int point_step) {
  mcus_per_row = per_row;
  mcu_rows = rows;
  step = point_step;
  points_per_row = (per_row + point_step - 1) / point_step;
  points.assign(static_cast<size_t>(rows) * points_per_row, SeekPoint());
  grew = false;
}

void ScanDecoder::UseIndex(SeekIndex* index, int first_row, int first_col, int last_col) {
  index_ = index;
  searched_for_ = -1;
  first_row_ = first_row;
  first_col_ = first_col;
  last_col_ = last_col;
}

void ScanDecoder::SeekToBit(uint64_t bit) {
  BitReader r{data_->bytes.data() + (bit >> 3), 0, 0};
  r.Refill();
  r.Consume(static_cast<int>(bit & 7));
  ptr_ = r.ptr;
  buf_ = r.buf;
  count_ = r.count;
}

void ScanDecoder::MaybeJump(int64_t mcu, int row, int col) {
  // The next needed MCU, in raster order.
  int next_row = row, next_col = first_col_;
  if (row < first_row_) {
    next_row = first_row_;
  } else if (col > last_col_) {
    next_row = row + 1;
  }
  if (next_row >= index_->mcu_rows) return;  // Nothing more is needed; decoding stops.
  // While the next needed MCU stays the same, a search that found nothing stays fruitless:
  // the only points filled in since are at or before `mcu`.
  const int64_t next = static_cast<int64_t>(next_row) * index_->mcus_per_row + next_col;
  if (next == searched_for_) return;
  searched_for_ = next;
  // The last known point at or before it, scanning back no further than `mcu`.
  const int64_t per_row = index_->mcus_per_row;
  for (int64_t p = static_cast<int64_t>(next_row) * index_->points_per_row +
                   next_col / index_->step;
       p >= 0; --p) {
    const int64_t point_row = p / index_->points_per_row;
    const int64_t target = point_row * per_row + (p % index_->points_per_row) * index_->step;
    if (target <= mcu) return;
    const SeekPoint& point = index_->points[static_cast<size_t>(p)];
    if (point.bit == SeekPoint::kUnknown) continue;
    SeekToBit(point.bit);
    for (int c = 0; c < num_components_; ++c) dc_pred_[c] = point.dc[c];
    resume_at_ = target;
    return;
  }
}

ScanDecoder::Result ScanDecoder::NextRestartInterval() {
  const bool last = segment_ + 1 >= data_->segment_ends.size();
  if (last) return data_->ended_at_marker ? Result::kCorrupt : Result::kTruncated;
  // The encoder pads the interval to a byte; more whole bytes before RSTn are garbage
  // (libjpeg warns "extraneous data"), a later RSTn number means lost intervals.
  if ((BitPosition() + 7) / 8 != data_->segment_ends[segment_] ||
      data_->restart_numbers[segment_] != next_restart_number_) {
    return Result::kCorrupt;
  }
  next_restart_number_ = (next_restart_number_ + 1) & 7;
  SeekToBit(static_cast<uint64_t>(data_->segment_ends[segment_]) * 8);
  ++segment_;
  limit_ = static_cast<uint64_t>(data_->segment_ends[segment_]) * 8;
  for (int c = 0; c < 4; ++c) dc_pred_[c] = 0;
  restarts_to_go_ = restart_interval_;
  return Result::kOk;
}


ScanDecoder::Result ScanDecoder::DecodeMcu(int16_t* const* blocks, int num_blocks,
                                           const int* component_of,
                                           const HuffmanTable* const* dc_of,
                                           const HuffmanTable* const* ac_of) {
  if (index_ != nullptr) {
    // The MCU's row and column, counted along rather than divided out (a 64-bit
    // division per MCU showed in profiles).
    const int64_t mcu = mcu_++;
    const int row = mcu_row_;
    const int col = mcu_col_;
    if (++mcu_col_ == index_->mcus_per_row) {
      mcu_col_ = 0;
      ++mcu_row_;
    }
    if (mcu < resume_at_) return Result::kOk;  // Jumped over.
    if (col % index_->step == 0 && row < index_->mcu_rows) {
      SeekPoint& point = index_->points[static_cast<size_t>(row) * index_->points_per_row +
                                        col / index_->step];
      const uint64_t bit = BitPosition();
      if (point.bit == SeekPoint::kUnknown && bit < SeekPoint::kUnknown) {
        point.bit = static_cast<uint32_t>(bit);
        for (int c = 0; c < num_components_; ++c) {
          point.dc[c] = static_cast<int16_t>(dc_pred_[c]);
        }
        index_->grew = true;
      }
    }
    const bool needed = row >= first_row_ && col >= first_col_ && col <= last_col_;
    if (!needed) {
      MaybeJump(mcu, row, col);
      if (resume_at_ > mcu) return Result::kOk;  // Jumped: this MCU is not decoded.
    }
  }
  if (restart_interval_ > 0) {
    if (restarts_to_go_ == 0) {
      const Result r = NextRestartInterval();
      if (r != Result::kOk) return r;
    }
    --restarts_to_go_;
  }
  BitReader reader{ptr_, buf_, count_};  // In registers for the whole MCU.
  for (int i = 0; i < num_blocks; ++i) {
    int16_t* block = blocks != nullptr ? blocks[i] : scratch_;
    if (!DecodeBlock(&reader, block, *dc_of[i], *ac_of[i], &dc_pred_[component_of[i]])) {
      return Result::kCorrupt;
    }
    // Bits past the segment's end belong to a marker or to nothing: libjpeg would pad
    // with zeros and warn; the file is corrupt (or truncated, if the input ran out).
    if (BitPositionOf(reader.ptr, reader.count) > limit_) {
      const bool last = segment_ + 1 >= data_->segment_ends.size();
      return last && !data_->ended_at_marker ? Result::kTruncated : Result::kCorrupt;
    }
  }
  ptr_ = reader.ptr;
  buf_ = reader.buf;
  count_ = reader.count;
  return Result::kOk;
}

}  // namespace flowloader::decode::internal
