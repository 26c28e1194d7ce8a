// sample_dataset.h: generates a synthetic ImageFolder dataset of real JPEG files.
//
// Used for the built-in sample dataset (`./dev.sh demo`), the test suites and the
// benchmark. Images are "photo-like" for a JPEG codec: smooth low-frequency structure
// (gradients, blobs), edges, and sensor-like noise, so file sizes and decode cost are in
// ImageNet's range (shorter side 256–512 px, ~40–80 KB at quality 90) rather than the
// tiny files flat synthetic images give. Everything is a pure function of the seed.
//
// Thread-safety: Generate may be called concurrently for different directories.
#ifndef FLOWLOADER_RUNTIME_SAMPLE_DATASET_H_
#define FLOWLOADER_RUNTIME_SAMPLE_DATASET_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "stages/core/image.h"

namespace flowloader {

struct SampleDatasetOptions {
  // Directory to create (ImageFolder root). Required.
  std::string root;
  // Class sub-directories ("class_000", ...); >= 1. Default 10.
  int classes = 10;
  // JPEG files per class; >= 1. Default 30 (300 images).
  int images_per_class = 30;
  // Shorter side range in pixels. Default 256–512.
  int min_short_side = 256;
  int max_short_side = 512;
  // JPEG quality 1–100. Default 90.
  int quality = 90;
  // Noise standard deviation in 8-bit levels: the main knob for file size. Default 7.
  double noise = 7.0;
  uint64_t seed = 0;
  // Write into a `root` that already holds other files (same-named files are replaced,
  // the rest stay). Default false: such a root is refused, so a typo in --out cannot
  // scatter images into a directory that holds something else.
  bool overwrite = false;
};

// GenerateSampleDataset writes the dataset. If `root` already holds a complete dataset
// made with the same options (a stamp file records them), it returns at once; if it
// holds anything else, it refuses unless `overwrite`.
absl::Status GenerateSampleDataset(const SampleDatasetOptions& options);

// CheckEmptyOrMissing refuses a `root` that exists and holds any entry (naming
// --overwrite), so that a typo in --out cannot scatter files into another directory.
absl::Status CheckEmptyOrMissing(const std::string& root);

// HasStamp reports whether the file at `stamp_path` holds exactly `stamp`: the options
// a generated dataset was made with, so making it again with the same ones is a no-op.
bool HasStamp(const std::string& stamp_path, const std::string& stamp);

// SynthesizeImage draws one photo-like RGB image of width × height (class-tinted).
Image SynthesizeImage(int width, int height, int class_index, double noise, uint64_t seed,
                      uint64_t index);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_SAMPLE_DATASET_H_
