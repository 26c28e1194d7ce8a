// jpeg_roofline.cc: the decode roofline for the side-by-side benchmark.
//
//   jpeg_roofline --data=DIR --threads=2 [--passes=1]
//
// Lists an ImageFolder (the same listing flowloader uses), then, with --threads
// std::threads pulling file indices from one atomic counter, reads each file into memory
// and decodes it fully with libjpeg-turbo (JCS_RGB, the default ISLOW IDCT, default fancy
// upsampling): no crop, no DCT scaling, no resize, nothing else. The time covers the
// threads only (listing excluded), file read included (page cache warm in the benchmark).
// Prints one JSON object on stdout: images, pixels, seconds, images_per_second, ...
//
// Thread-safety: each worker owns its decompressor and buffers; only the counters are
// shared (atomics).
#include <setjmp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "stages/reader/dataset.h"

// jpeglib.h needs <cstdio> first.
#include "jpeglib.h"

ABSL_FLAG(std::string, data, "", "ImageFolder root");
ABSL_FLAG(int, threads, 2, "decode threads");
ABSL_FLAG(int, passes, 1, "times over the whole dataset");

namespace {

// JumpError is libjpeg's error manager with a longjmp out of error_exit.
struct JumpError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
};

void ErrorExit(j_common_ptr cinfo) {
  longjmp(reinterpret_cast<JumpError*>(cinfo->err)->jump, 1);
}

void Quiet(j_common_ptr, int) {}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  out->resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(&(*out)[0], static_cast<std::streamsize>(out->size()));
  return static_cast<bool>(in);
}

// Decode decodes `bytes` fully to RGB into `pixels`; returns false on a libjpeg error.
// Kept free of C++ objects with destructors between setjmp and longjmp.
bool Decode(jpeg_decompress_struct* cinfo, JumpError* err, const std::string& bytes,
            std::vector<unsigned char>* pixels, int64_t* num_pixels) {
  if (setjmp(err->jump)) {
    jpeg_abort_decompress(cinfo);
    return false;
  }
  jpeg_mem_src(cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(cinfo, TRUE);
  cinfo->out_color_space = JCS_RGB;
  cinfo->dct_method = JDCT_ISLOW;
  jpeg_start_decompress(cinfo);
  const size_t stride = static_cast<size_t>(cinfo->output_width) * 3;
  pixels->resize(stride * cinfo->output_height);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = pixels->data() + stride * cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  *num_pixels = static_cast<int64_t>(cinfo->output_width) * cinfo->output_height;
  jpeg_finish_decompress(cinfo);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  flowloader::DatasetOptions options;
  options.path = absl::GetFlag(FLAGS_data);
  auto dataset = flowloader::Dataset::Open(options);
  if (!dataset.ok()) {
    std::fprintf(stderr, "jpeg_roofline: %s\n", std::string(dataset.status().message()).c_str());
    return 2;
  }
  const int threads = absl::GetFlag(FLAGS_threads);
  const int passes = absl::GetFlag(FLAGS_passes);
  const int64_t n = (*dataset)->size();
  std::vector<std::string> paths;
  paths.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) paths.push_back((*dataset)->FullPath(i));

  std::atomic<int64_t> next{0};
  std::atomic<int64_t> images{0}, pixels{0}, bytes{0}, errors{0}, decode_ns{0};
  const int64_t total = n * passes;
  auto worker = [&] {
    jpeg_decompress_struct cinfo;
    JumpError err;
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = ErrorExit;
    err.mgr.emit_message = Quiet;
    jpeg_create_decompress(&cinfo);
    std::string file;
    std::vector<unsigned char> out;
    int64_t my_images = 0, my_pixels = 0, my_bytes = 0, my_errors = 0, my_ns = 0;
    for (int64_t i; (i = next.fetch_add(1)) < total;) {
      if (!ReadFile(paths[static_cast<size_t>(i % n)], &file)) {
        ++my_errors;
        continue;
      }
      my_bytes += static_cast<int64_t>(file.size());
      const auto t0 = std::chrono::steady_clock::now();
      int64_t px = 0;
      if (Decode(&cinfo, &err, file, &out, &px)) {
        ++my_images;
        my_pixels += px;
      } else {
        ++my_errors;
      }
      my_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - t0).count();
    }
    jpeg_destroy_decompress(&cinfo);
    images += my_images;
    pixels += my_pixels;
    bytes += my_bytes;
    errors += my_errors;
    decode_ns += my_ns;
  };

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf(
      "%s\n",
      absl::StrFormat(
          "{\"images\": %d, \"errors\": %d, \"threads\": %d, \"passes\": %d, "
          "\"pixels\": %d, \"bytes\": %d, \"seconds\": %.6f, \"images_per_second\": %.3f, "
          "\"megapixels_per_second\": %.3f, \"decode_thread_seconds\": %.6f}",
          images.load(), errors.load(), threads, passes, pixels.load(), bytes.load(), seconds,
          seconds > 0 ? images.load() / seconds : 0.0,
          seconds > 0 ? pixels.load() / seconds / 1e6 : 0.0, decode_ns.load() / 1e9)
          .c_str());
  return errors.load() == 0 ? 0 : 1;
}
