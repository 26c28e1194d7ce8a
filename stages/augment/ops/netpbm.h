// netpbm.h: binary PPM (P6, RGB) and PGM (P5, one channel) files with maxval 255, the
// image format the op tools (op_tool, det_op_tool) exchange with their Python parity
// tests. Header-only; for tools, not the loader.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_NETPBM_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_NETPBM_H_

#include <fstream>
#include <string>

#include "stages/core/image.h"

namespace flowloader {

// ReadNetpbm reads `path` into *img: P6 when channels is 3, P5 when 1. false: not such
// a file (another magic, a bad size, a maxval other than 255, too few bytes).
inline bool ReadNetpbm(const std::string& path, int channels, Image* img) {
  std::ifstream in(path, std::ios::binary);
  std::string magic;
  int w = 0, h = 0, maxval = 0;
  in >> magic >> w >> h >> maxval;
  in.get();
  if (magic != (channels == 3 ? "P6" : "P5") || w <= 0 || h <= 0 || maxval != 255) {
    return false;
  }
  img->Resize(w, h, channels);
  in.read(reinterpret_cast<char*>(img->pixels.data()), img->pixels.size());
  return static_cast<bool>(in);
}

// WriteNetpbm writes `img` (3 channels: P6, 1: P5) to `path`; false on a write error.
inline bool WriteNetpbm(const std::string& path, const Image& img) {
  std::ofstream out(path, std::ios::binary);
  out << (img.channels == 3 ? "P6\n" : "P5\n") << img.width << " " << img.height << "\n255\n";
  out.write(reinterpret_cast<const char*>(img.pixels.data()), img.pixels.size());
  return static_cast<bool>(out);
}

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_NETPBM_H_
