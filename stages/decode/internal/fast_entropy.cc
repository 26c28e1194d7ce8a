// fast_entropy.cc: see fast_entropy.h.
#include "stages/decode/internal/fast_entropy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "absl/hash/hash.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"
#include "stages/decode/internal/huffman_scan.h"
#include "stages/decode/internal/libjpeg_private.h"

namespace flowloader::decode::internal {
namespace {

#if FLOWLOADER_LIBJPEG_TURBO_2

// CachedTable remembers which DHT a prepared table was built from: consecutive files
// from one encoder share tables, and rebuilding costs about as much as a small MCU row.
struct CachedTable {
  bool valid = false;
  uint8_t bits[17];
  uint8_t values[256];
  HuffmanTable table;
};

struct FastEntropy {
  EntropyDecoderV2 pub;  // First: libjpeg casts cinfo->entropy to this.
  FailFn fail;
  ScanData scan;
  ScanDecoder decoder;
  CachedTable dc[NUM_HUFF_TBLS];
  CachedTable ac[NUM_HUFF_TBLS];
  int num_blocks;
  // The seek index in use (index_cache == nullptr: none).
  SeekIndexCache* index_cache;
  uint64_t index_key;
  SeekIndex index;
  int component_of[D_MAX_BLOCKS_IN_MCU];
  const HuffmanTable* dc_of[D_MAX_BLOCKS_IN_MCU];
  const HuffmanTable* ac_of[D_MAX_BLOCKS_IN_MCU];
};

// FreeHugeScan frees fe's scan copy when it is over kKeptScanBytes (decoder.h): a decode
// that held a huge scan gives its buffer back rather than keep it per thread.
void FreeHugeScan(FastEntropy* fe) {
  if (fe->scan.bytes.capacity() > static_cast<size_t>(kKeptScanBytes)) {
    ScanData().bytes.swap(fe->scan.bytes);
  }
}

FastEntropy* ThreadState() {
  // On the heap (about 55 KB of tables); freed when the thread exits.
  thread_local std::unique_ptr<FastEntropy> state(new FastEntropy());
  return state.get();
}

const HuffmanTable* Prepare(const JHUFF_TBL* source, bool is_ac, CachedTable* cache) {
  if (source == nullptr) return nullptr;
  if (cache->valid && std::memcmp(cache->bits, source->bits, sizeof(cache->bits)) == 0 &&
      std::memcmp(cache->values, source->huffval, sizeof(cache->values)) == 0) {
    return &cache->table;
  }
  cache->valid = false;
  if (!BuildHuffmanTable(source->bits, source->huffval, is_ac, &cache->table)) {
    return nullptr;
  }
  std::memcpy(cache->bits, source->bits, sizeof(cache->bits));
  std::memcpy(cache->values, source->huffval, sizeof(cache->values));
  cache->valid = true;
  return &cache->table;
}

void StartPass(j_decompress_ptr cinfo) {
  // A second scan in a file we took for single-scan: never expected; refuse it.
  ThreadState()->fail(reinterpret_cast<j_common_ptr>(cinfo), reason::kCorrupt,
                      "unexpected second scan");
}

boolean DecodeMcu(j_decompress_ptr cinfo, JBLOCKROW* mcu_data) {
  FastEntropy* fe = reinterpret_cast<FastEntropy*>(cinfo->entropy);
  int16_t* blocks[D_MAX_BLOCKS_IN_MCU];
  if (mcu_data != nullptr) {
    for (int i = 0; i < fe->num_blocks; ++i) blocks[i] = mcu_data[i][0];
  }
  const ScanDecoder::Result r =
      fe->decoder.DecodeMcu(mcu_data != nullptr ? blocks : nullptr, fe->num_blocks,
                            fe->component_of, fe->dc_of, fe->ac_of);
  if (r == ScanDecoder::Result::kTruncated) {
    fe->fail(reinterpret_cast<j_common_ptr>(cinfo), reason::kTruncated,
             "entropy-coded data ends early");
  } else if (r != ScanDecoder::Result::kOk) {
    fe->fail(reinterpret_cast<j_common_ptr>(cinfo), reason::kCorrupt,
             "corrupt entropy-coded data");
  }
  return TRUE;
}

// kPointsPerRow: seek points per MCU row. A jump lands on average half a step before the
// needed column; 16 points cost about 4.2 KB for a 500×375 4:2:0 file.
constexpr int kPointsPerRow = 16;

// StartIndex sets up the seek index for the part of the output `use` reads.
void StartIndex(jpeg_decompress_struct* cinfo, const IndexUse& use, FastEntropy* fe) {
  const bool interleaved = cinfo->comps_in_scan > 1;
  const jpeg_component_info* first = cinfo->cur_comp_info[0];
  if (cinfo->restart_interval != 0 ||
      (!interleaved && (first->h_samp_factor != 1 || first->v_samp_factor != 1))) {
    return;
  }
  // An MCU's size in output pixels (libjpeg's iMCU, as jpeg_crop_scanline aligns to).
  const int mcu_w = cinfo->min_DCT_scaled_size * (interleaved ? cinfo->max_h_samp_factor : 1);
  const int mcu_h = cinfo->min_DCT_scaled_size * (interleaved ? cinfo->max_v_samp_factor : 1);
  const int per_row = static_cast<int>(cinfo->MCUs_per_row);
  const int rows = static_cast<int>(cinfo->MCU_rows_in_scan);
  const int step = (per_row + kPointsPerRow - 1) / kPointsPerRow;
  // The key is the content, hashed: a file changed between epochs is a new file.
  const uint64_t key = absl::HashOf(use.file);
  use.cache->Load(key, per_row, rows, step, &fe->index);
  // Columns exactly as jpeg_crop_scanline's first/last iMCU column: libjpeg inverse-
  // transforms no other, and its upsampler treats the crop's edges as image edges. Rows:
  // one MCU row above the first one read, which fancy upsampling uses as context (so
  // jpeg_skip_scanlines stops an iMCU row early). huffman_scan_test checks both limits
  // on every kind of file against libjpeg's own decode.
  const int first_col = use.col_begin / mcu_w;
  const int last_col = std::min(per_row - 1, (use.col_end + mcu_w - 1) / mcu_w - 1);
  const int first_row = std::max(0, use.row_begin / mcu_h - 1);
  fe->decoder.UseIndex(&fe->index, first_row, first_col, last_col);
  fe->index_cache = use.cache;
  fe->index_key = key;
}

#endif  // FLOWLOADER_LIBJPEG_TURBO_2

}  // namespace

bool FastEntropyAvailable() { return FLOWLOADER_LIBJPEG_TURBO_2 != 0; }

bool InstallFastEntropyDecoder(jpeg_decompress_struct* cinfo, FailFn fail,
                               const IndexUse* index) {
#if FLOWLOADER_LIBJPEG_TURBO_2
  if (cinfo->progressive_mode || cinfo->arith_code || cinfo->data_precision != 8 ||
      cinfo->comps_in_scan != cinfo->num_components || jpeg_input_complete(cinfo) ||
      cinfo->Ss != 0 || cinfo->Se != DCTSIZE2 - 1 || cinfo->Ah != 0 || cinfo->Al != 0 ||
      cinfo->unread_marker != 0 || cinfo->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU ||
      cinfo->src == nullptr) {
    return false;
  }
  FastEntropy* fe = ThreadState();
  fe->num_blocks = cinfo->blocks_in_MCU;
  for (int b = 0; b < cinfo->blocks_in_MCU; ++b) {
    const int ci = cinfo->MCU_membership[b];
    const jpeg_component_info* comp = cinfo->cur_comp_info[ci];
    if (comp->dc_tbl_no < 0 || comp->dc_tbl_no >= NUM_HUFF_TBLS || comp->ac_tbl_no < 0 ||
        comp->ac_tbl_no >= NUM_HUFF_TBLS) {
      return false;
    }
    fe->component_of[b] = ci;
    fe->dc_of[b] = Prepare(cinfo->dc_huff_tbl_ptrs[comp->dc_tbl_no], false,
                           &fe->dc[comp->dc_tbl_no]);
    fe->ac_of[b] = Prepare(cinfo->ac_huff_tbl_ptrs[comp->ac_tbl_no], true,
                           &fe->ac[comp->ac_tbl_no]);
    if (fe->dc_of[b] == nullptr || fe->ac_of[b] == nullptr) return false;  // libjpeg's.
  }
  FreeHugeScan(fe);
  UnstuffScan(cinfo->src->next_input_byte, cinfo->src->bytes_in_buffer, &fe->scan);
  fe->fail = fail;
  if (!fe->scan.ended_at_marker) {
    fail(reinterpret_cast<j_common_ptr>(cinfo), reason::kTruncated,
         "entropy-coded data is not ended by a marker (file truncated)");
  }
  fe->decoder.Start(&fe->scan, static_cast<int>(cinfo->restart_interval),
                    cinfo->comps_in_scan);
  fe->index_cache = nullptr;
  if (index != nullptr && index->cache != nullptr) StartIndex(cinfo, *index, fe);
  fe->pub.start_pass = StartPass;
  fe->pub.decode_mcu = DecodeMcu;
  fe->pub.insufficient_data = FALSE;
  cinfo->entropy = reinterpret_cast<jpeg_entropy_decoder*>(&fe->pub);
  return true;
#else
  (void)cinfo;
  (void)fail;
  (void)index;
  return false;
#endif
}

void FinishFastEntropyDecoder(jpeg_decompress_struct* cinfo) {
#if FLOWLOADER_LIBJPEG_TURBO_2
  FastEntropy* fe = ThreadState();
  if (cinfo->entropy != reinterpret_cast<jpeg_entropy_decoder*>(&fe->pub)) return;
  if (fe->index_cache != nullptr) fe->index_cache->Save(fe->index_key, fe->index);
  fe->index_cache = nullptr;
  // A huge scan's copy (about the file's size) is given back now, not at the next decode:
  // kept, it stayed resident beside the sample's transforms, outside the memory plan (a
  // 24 MB JPEG of 6950x6950 went 12 MiB past memory_limit_mb=1024).
  FreeHugeScan(fe);
#else
  (void)cinfo;
#endif
}

}  // namespace flowloader::decode::internal
