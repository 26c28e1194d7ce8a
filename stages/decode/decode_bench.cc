// decode_bench.cc: single-thread decode throughput on real files, and a raw dump mode.
//
//   bazel run -c opt //stages/decode:decode_bench -- FILE... [--iters=N]
//   bazel run //stages/decode:decode_bench -- --dump FILE OUT.rgb   (full decode, raw RGB)
//   bazel run -c opt //stages/decode:decode_bench -- --compare-huffman --iters=ROUNDS FILE...
//   Flags: --fast-idct, --no-fancy, --libjpeg-huffman, --no-dct-scaling (DecoderOptions); --per-scale also times whole-
//   image decodes for targets of k/8 of the image (k = 1..8).
//
// Times ReadInfo + full decode, and ReadInfo + region decode for RandomResizedCrop(224)
// boxes (torchvision's default scale and ratio ranges), which lets DCT scaling and
// cropping work. A developer tool, not a test.
//
// Thread-safety: single-threaded program.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stages/core/rng.h"
#include "stages/decode/decoder.h"

namespace {

using flowloader::RectF;
using flowloader::SampleRng;
using namespace flowloader::decode;

// RandomResizedCropBox mirrors torchvision's RandomResizedCrop.get_params.
RectF RandomResizedCropBox(int w, int h, SampleRng& rng) {
  for (int i = 0; i < 10; ++i) {
    const double area = w * h * rng.Uniform(0.08, 1.0);
    const double ratio = std::exp(rng.Uniform(std::log(3.0 / 4), std::log(4.0 / 3)));
    const int cw = static_cast<int>(std::round(std::sqrt(area * ratio)));
    const int ch = static_cast<int>(std::round(std::sqrt(area / ratio)));
    if (cw > 0 && ch > 0 && cw <= w && ch <= h) {
      return RectF{static_cast<double>(rng.UniformInt(0, w - cw + 1)),
                   static_cast<double>(rng.UniformInt(0, h - ch + 1)),
                   static_cast<double>(cw), static_cast<double>(ch)};
    }
  }
  const int s = std::min(w, h);
  return RectF{(w - s) / 2.0, (h - s) / 2.0, static_cast<double>(s), static_cast<double>(s)};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ThreadCpuSeconds: CPU time of this thread, so that time spent descheduled while other
// processes run (the machine is shared) does not count.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// CompareHuffman times whole-set passes (full decodes, then RandomResizedCrop(224) region
// decodes) with libjpeg-turbo's Huffman decoder, with flowloader's, and with flowloader's
// plus seek indexes (which pay off from the second pass over the files on: an epoch),
// alternating them round by round so that load from other processes hits all alike, and
// checks that all give the same pixels. Prints the best round of each.
int CompareHuffman(const std::vector<std::string>& paths, DecoderOptions options,
                   int rounds) {
  std::vector<std::string> files;
  for (const std::string& p : paths) files.push_back(ReadFile(p));
  constexpr int kDecoders = 3;
  const char* names[kDecoders] = {"libjpeg-turbo Huffman", "flowloader Huffman",
                                  "flowloader Huffman + seek index (warm)"};
  std::unique_ptr<Decoder> decoders[kDecoders];
  for (int d = 0; d < kDecoders; ++d) {
    options.fast_huffman = d > 0;
    options.seek_index_bytes = d == 2 ? int64_t{1} << 30 : 0;
    auto decoder = Decoder::Create(options);
    if (!decoder.ok()) return 1;
    decoders[d] = *std::move(decoder);
  }
  double best[kDecoders][2];  // [decoder][full, region] seconds.
  for (auto& b : best) b[0] = b[1] = 1e9;
  DecodedImage out[kDecoders];
  for (int round = 0; round < rounds; ++round) {
    for (int d = 0; d < kDecoders; ++d) {
      for (int mode = 0; mode < 2; ++mode) {
        SampleRng rng(1 + round, 0, 0);  // The same boxes for all decoders; new each round.
        const double start = ThreadCpuSeconds();
        for (const std::string& bytes : files) {
          auto header = decoders[d]->ReadInfo(bytes);
          if (!header.ok()) return 3;
          RegionRequest request{RandomResizedCropBox(header->width, header->height, rng),
                                224, 224};
          if (!decoders[d]->Decode(bytes, *header, mode ? &request : nullptr, &out[d]).ok()) {
            return 3;
          }
        }
        // The indexed decoder's first region pass builds its indexes: not a warm pass.
        if (d == 2 && mode == 1 && round == 0) continue;
        best[d][mode] = std::min(best[d][mode], ThreadCpuSeconds() - start);
      }
    }
  }
  SampleRng rng(99, 0, 0);
  for (size_t i = 0; i < files.size(); ++i) {  // Same pixels, file by file.
    auto header = decoders[0]->ReadInfo(files[i]);
    if (!header.ok()) return 3;
    RegionRequest request{RandomResizedCropBox(header->width, header->height, rng), 224,
                          224};
    for (int mode = 0; mode < 2; ++mode) {
      for (int d = 0; d < kDecoders; ++d) {
        if (!decoders[d]->Decode(files[i], *header, mode ? &request : nullptr, &out[d]).ok()) {
          return 3;
        }
        if (out[d].image.pixels != out[0].image.pixels) {
          std::fprintf(stderr, "%s: %s gives other pixels than %s\n", paths[i].c_str(),
                       names[d], names[0]);
          return 4;
        }
      }
    }
  }
  const double n = static_cast<double>(files.size());
  std::printf("%zu files, best of %d alternating rounds (img/s of thread CPU time):\n",
              files.size(), rounds);
  for (int mode = 0; mode < 2; ++mode) {
    std::printf("  %s\n", mode ? "RandomResizedCrop(224) region decode:" : "full decode:");
    for (int d = 0; d < kDecoders; ++d) {
      if (mode == 0 && d == 2) continue;  // Indexes serve region decodes only.
      std::printf("    %-40s %6.0f (%.2fx)\n", names[d], n / best[d][mode],
                  best[0][mode] / best[d][mode]);
    }
  }
  std::printf("  pixels identical on every file; seek indexes: %zu files, %.1f KB each\n",
              decoders[2]->seek_indexed_files(),
              decoders[2]->seek_index_bytes() / 1024.0 /
                  std::max<size_t>(1, decoders[2]->seek_indexed_files()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  DecoderOptions options;
  bool per_scale = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--fast-idct") options.fast_idct = true;
    if (arg == "--no-fancy") options.fancy_upsampling = false;
    if (arg == "--libjpeg-huffman") options.fast_huffman = false;
    if (arg == "--no-dct-scaling") options.dct_scaling = false;
    if (arg == "--per-scale") per_scale = true;
  }
  auto decoder = Decoder::Create(options);
  if (!decoder.ok()) return 1;
  std::vector<std::string> files;
  int iters = 2000;
  bool compare_huffman = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--fast-idct" || arg == "--no-dct-scaling" || arg == "--per-scale" ||
        arg == "--no-fancy" || arg == "--libjpeg-huffman") {
      continue;
    }
    if (arg == "--dump" && i + 2 < argc) {
      const std::string bytes = ReadFile(argv[i + 1]);
      DecodedImage out;
      auto info = (*decoder)->ReadInfo(bytes);
      absl::Status s = info.ok() ? (*decoder)->Decode(bytes, *info, nullptr, &out) : info.status();
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 2;
      }
      std::ofstream(argv[i + 2], std::ios::binary)
          .write(reinterpret_cast<const char*>(out.image.pixels.data()),
                 static_cast<std::streamsize>(out.image.pixels.size()));
      return 0;
    }
    if (arg.rfind("--iters=", 0) == 0) {
      iters = std::stoi(arg.substr(8));
    } else if (arg == "--compare-huffman") {
      compare_huffman = true;
    } else {
      files.push_back(arg);
    }
  }
  if (compare_huffman) return CompareHuffman(files, options, std::max(1, iters));
  for (const std::string& path : files) {
    const std::string bytes = ReadFile(path);
    auto info = (*decoder)->ReadInfo(bytes);
    if (!info.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), info.status().ToString().c_str());
      continue;
    }
    // Best of kRounds: other processes share these cores, and a slow round says more
    // about them than about the decoder.
    constexpr int kRounds = 7;
    const int per_round = std::max(1, iters / kRounds);
    DecodedImage out;
    double full = 0, region = 0, info_us = 1e9, decoded_px = 0, scale_sum = 0;
    for (int round = 0; round < kRounds; ++round) {
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < per_round; ++i) {
        auto header = (*decoder)->ReadInfo(bytes);
        if (!header.ok() || !(*decoder)->Decode(bytes, *header, nullptr, &out).ok()) return 3;
      }
      full = std::max(full, per_round / Seconds(start));

      SampleRng rng(1, 0, 0);  // The same boxes every round.
      decoded_px = scale_sum = 0;
      start = std::chrono::steady_clock::now();
      for (int i = 0; i < per_round; ++i) {
        auto header = (*decoder)->ReadInfo(bytes);
        if (!header.ok()) return 3;
        RegionRequest request{RandomResizedCropBox(header->width, header->height, rng), 224,
                              224};
        if (!(*decoder)->Decode(bytes, *header, &request, &out).ok()) return 3;
        decoded_px += static_cast<double>(out.image.width) * out.image.height;
        scale_sum += out.scale_x;
      }
      region = std::max(region, per_round / Seconds(start));

      start = std::chrono::steady_clock::now();
      for (int i = 0; i < per_round; ++i) {
        if (!(*decoder)->ReadInfo(bytes).ok()) return 3;
      }
      info_us = std::min(info_us, Seconds(start) / per_round * 1e6);
    }
    const int n = per_round;
    if (per_scale) {
      // Whole image for a target of k/8 of it: the scale the decoder picks and its cost.
      for (int k = 1; k <= 8; ++k) {
        const int tw = info->width * k / 8, th = info->height * k / 8;
        RegionRequest request{RectF{0, 0, static_cast<double>(info->width),
                                    static_cast<double>(info->height)}, tw, th};
        double best = 0;
        for (int round = 0; round < kRounds; ++round) {
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < per_round; ++i) {
            if (!(*decoder)->Decode(bytes, *info, &request, &out).ok()) return 3;
          }
          best = std::max(best, per_round / Seconds(start));
        }
        std::printf("  target %d/8 of the image -> scale %.3f (%dx%d): %.0f img/s\n", k,
                    out.scale_x, out.image.width, out.image.height, best);
      }
    }
    std::printf(
        "%s (%dx%d, %zu bytes): full decode %.0f img/s (%.0f Mpx/s); "
        "RandomResizedCrop(224) region decode %.0f img/s (mean scale %.3f, mean %.0f px "
        "decoded); ReadInfo alone %.1f us\n",
        path.c_str(), info->width, info->height, bytes.size(), full,
        full * info->width * info->height / 1e6, region, scale_sum / n, decoded_px / n,
        info_us);
  }
  return 0;
}
