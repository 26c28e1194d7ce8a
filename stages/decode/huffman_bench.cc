// huffman_bench.cc: the entropy decoder alone (internal/huffman_scan.h) on real files:
// unstuff + decode every MCU of each file's scan into zeroed blocks, nothing else, so a
// change to the hot loop can be timed without IDCT, upsampling and libjpeg set-up around
// it. Prints thread-CPU ns per file, per coded bit and per decoded symbol (best round of
// several), and a checksum of all coefficients, which must not change when only speed
// was meant to.
//
//   bazel run -c opt //stages/decode:huffman_bench -- [--rounds=N] FILE...
//
// A developer tool, not a test. Thread-safety: single-threaded program.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "jpeglib.h"
#include "stages/decode/internal/huffman_scan.h"

namespace {

using namespace flowloader::decode::internal;

// ScanJob is one file's scan, ready to decode again and again.
struct ScanJob {
  std::string bytes;
  size_t scan_offset = 0;  // Where the entropy-coded data starts.
  int restart_interval = 0;
  int components = 0;
  int64_t mcus = 0;
  int blocks_in_mcu = 0;
  int component_of[10];
  int dc_table_of[10];
  int ac_table_of[10];
  std::unique_ptr<HuffmanTable> dc[4], ac[4];
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Prepare reads the header with libjpeg (tables, MCU layout); false for files that the
// fast decoder does not take (progressive, multi-scan, ...).
bool Prepare(const std::string& path, ScanJob* job) {
  job->bytes = ReadFile(path);
  jpeg_decompress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_decompress(&c);
  jpeg_mem_src(&c, reinterpret_cast<const unsigned char*>(job->bytes.data()),
               job->bytes.size());
  bool ok = jpeg_read_header(&c, TRUE) == JPEG_HEADER_OK && !c.progressive_mode &&
            !c.arith_code;
  if (ok) {
    jpeg_start_decompress(&c);  // Sets the scan's MCU layout.
    ok = c.comps_in_scan == c.num_components;
  }
  if (ok) {
    job->scan_offset = job->bytes.size() - c.src->bytes_in_buffer;
    job->restart_interval = static_cast<int>(c.restart_interval);
    job->components = c.comps_in_scan;
    job->mcus = static_cast<int64_t>(c.MCUs_per_row) * c.MCU_rows_in_scan;
    job->blocks_in_mcu = c.blocks_in_MCU;
    for (int b = 0; b < c.blocks_in_MCU; ++b) {
      const jpeg_component_info* comp = c.cur_comp_info[c.MCU_membership[b]];
      job->component_of[b] = c.MCU_membership[b];
      job->dc_table_of[b] = comp->dc_tbl_no;
      job->ac_table_of[b] = comp->ac_tbl_no;
    }
    for (int t = 0; t < 4 && ok; ++t) {
      if (c.dc_huff_tbl_ptrs[t] != nullptr) {
        job->dc[t] = std::make_unique<HuffmanTable>();
        ok = BuildHuffmanTable(c.dc_huff_tbl_ptrs[t]->bits, c.dc_huff_tbl_ptrs[t]->huffval,
                               false, job->dc[t].get());
      }
      if (ok && c.ac_huff_tbl_ptrs[t] != nullptr) {
        job->ac[t] = std::make_unique<HuffmanTable>();
        ok = BuildHuffmanTable(c.ac_huff_tbl_ptrs[t]->bits, c.ac_huff_tbl_ptrs[t]->huffval,
                               true, job->ac[t].get());
      }
    }
  }
  jpeg_destroy_decompress(&c);
  return ok;
}

struct PassResult {
  uint64_t checksum = 0;
  int64_t nonzero = 0;  // Nonzero coefficients, each at least one symbol.
  int64_t blocks = 0;
  bool ok = true;
};

// DecodeAll decodes every MCU of `job` as the codec does: blocks zeroed, then filled.
PassResult DecodeAll(const ScanJob& job, ScanData* scan, ScanDecoder* decoder,
                     std::vector<int16_t>* storage, bool count) {
  PassResult result;
  const auto* data = reinterpret_cast<const uint8_t*>(job.bytes.data());
  UnstuffScan(data + job.scan_offset, job.bytes.size() - job.scan_offset, scan);
  decoder->Start(scan, job.restart_interval, job.components);
  storage->resize(static_cast<size_t>(job.blocks_in_mcu) * 64);
  int16_t* blocks[10];
  const HuffmanTable* dc_of[10];
  const HuffmanTable* ac_of[10];
  for (int b = 0; b < job.blocks_in_mcu; ++b) {
    blocks[b] = storage->data() + b * 64;
    dc_of[b] = job.dc[job.dc_table_of[b]].get();
    ac_of[b] = job.ac[job.ac_table_of[b]].get();
  }
  for (int64_t m = 0; m < job.mcus; ++m) {
    std::memset(storage->data(), 0, storage->size() * sizeof(int16_t));
    if (decoder->DecodeMcu(blocks, job.blocks_in_mcu, job.component_of, dc_of, ac_of) !=
        ScanDecoder::Result::kOk) {
      result.ok = false;
      return result;
    }
    if (count) {
      for (size_t i = 0; i < storage->size(); ++i) {
        const int16_t v = (*storage)[i];
        result.checksum = result.checksum * 1000003u + static_cast<uint16_t>(v);
        result.nonzero += v != 0;
      }
      result.blocks += job.blocks_in_mcu;
    }
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  std::vector<ScanJob> jobs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::atoi(arg.c_str() + 9));
      continue;
    }
    jobs.emplace_back();
    if (!Prepare(arg, &jobs.back())) {
      std::fprintf(stderr, "%s: not a single-scan baseline JPEG, left out\n", arg.c_str());
      jobs.pop_back();
    }
  }
  if (jobs.empty()) {
    std::fprintf(stderr, "usage: huffman_bench [--rounds=N] FILE...\n");
    return 2;
  }
  ScanData scan;
  ScanDecoder decoder;
  std::vector<int16_t> storage;
  PassResult total;
  int64_t coded_bytes = 0;
  for (const ScanJob& job : jobs) {
    const PassResult r = DecodeAll(job, &scan, &decoder, &storage, true);
    if (!r.ok) {
      std::fprintf(stderr, "a file failed to decode\n");
      return 3;
    }
    total.checksum = total.checksum * 31 + r.checksum;
    total.nonzero += r.nonzero;
    total.blocks += r.blocks;
    coded_bytes += static_cast<int64_t>(scan.size);
  }
  double best = 1e9;
  for (int round = 0; round < rounds; ++round) {
    const double start = ThreadCpuSeconds();
    for (const ScanJob& job : jobs) DecodeAll(job, &scan, &decoder, &storage, false);
    best = std::min(best, ThreadCpuSeconds() - start);
  }
  const double n = static_cast<double>(jobs.size());
  // Every block has one DC symbol; AC symbols are at least the nonzero AC coefficients
  // (plus EOB/ZRL), so nonzero + blocks is a close lower bound on symbols decoded.
  const double symbols = static_cast<double>(total.nonzero + total.blocks);
  std::printf("%zu files, %.1f KB coded data each, %.0f blocks each; best of %d rounds:\n",
              jobs.size(), coded_bytes / n / 1024, total.blocks / n, rounds);
  std::printf("  %.1f us/file  %.2f ns/coded bit  %.2f ns/symbol (%.1f symbols/block)\n",
              best / n * 1e6, best / (coded_bytes * 8.0) * 1e9, best / symbols * 1e9,
              symbols / total.blocks);
  std::printf("  coefficient checksum %016llx\n",
              static_cast<unsigned long long>(total.checksum));
  return 0;
}
