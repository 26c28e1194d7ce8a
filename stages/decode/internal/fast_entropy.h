// fast_entropy.h: puts huffman_scan's ScanDecoder in libjpeg-turbo's entropy-decoder slot
// for baseline single-scan JPEGs; everything else (markers, IDCT, upsampling, colour
// conversion, cropping, skipping) stays libjpeg-turbo's.
//
// libjpeg calls the entropy decoder through cinfo->entropy, a public pointer to a struct
// that jpegint.h (not installed) defines; its 2.x layout is mirrored in libjpeg_private.h
// and used only when compiled against libjpeg-turbo 2.x (3.x added members). Everything
// else read here (Huffman tables, MCU layout, source manager) is public jpeglib.h API.
//
// Thread-safety: the decoder state is thread_local; one decode per thread at a time.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_FAST_ENTROPY_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_FAST_ENTROPY_H_

#include <cstdio>  // jpeglib.h needs FILE.

#include "absl/strings/string_view.h"
#include "jpeglib.h"
#include "stages/decode/internal/seek_index_cache.h"

namespace flowloader::decode::internal {

// FailFn reports a decode error: it must not return (the codec longjmps).
using FailFn = void (*)(j_common_ptr cinfo, absl::string_view reason, const char* text);

// IndexUse asks for a seek index: `file`'s entry in `cache` (keyed by a hash of its
// bytes, computed only when the scan can be indexed), and the part of the output the
// decode will read, in output (scaled, uncropped) pixels: columns [col_begin, col_end)
// of rows >= row_begin.
struct IndexUse {
  SeekIndexCache* cache;
  absl::string_view file;
  int col_begin;
  int col_end;
  int row_begin;
};

// InstallFastEntropyDecoder must be called after jpeg_start_decompress (and
// jpeg_crop_scanline, if any) and before any row is read or skipped, with the whole file
// in memory (jpeg_mem_src). It returns false, leaving libjpeg's decoder in place, for
// anything but a baseline Huffman scan holding every component (progressive, arithmetic,
// 12-bit, multi-scan files). A scan whose data is not ended by a marker is reported as
// truncated through `fail` at once, whatever rows are later asked for. With `index`
// (may be null), MCUs outside the read part are skipped where the file's seek index
// allows (scans without restart markers whose MCU is the iMCU: interleaved scans, or
// one component sampled 1×1).
bool InstallFastEntropyDecoder(jpeg_decompress_struct* cinfo, FailFn fail,
                               const IndexUse* index);

// FinishFastEntropyDecoder, after a successful decode, saves what the seek index learned.
void FinishFastEntropyDecoder(jpeg_decompress_struct* cinfo);

// FastEntropyAvailable says whether this build can install it at all (libjpeg-turbo 2.x).
bool FastEntropyAvailable();

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_FAST_ENTROPY_H_
