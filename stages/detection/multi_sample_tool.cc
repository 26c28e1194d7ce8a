// multi_sample_tool: runs the multi-sample kernels (mosaic.h, copy_paste.h) on given
// images, targets and draws, for testdata/multi_sample_parity_test.py, which runs
// YOLOv5's load_mosaic and torchvision's _copy_paste on the same inputs.
//
// Reads commands from stdin, one per line, fields separated by tabs; answers "ok" or
// "error: ...", then "END":
//   copy_paste  BLENDING(0|1)  SELECTION(i,j,..)  PASTE_PPM  PASTE_TARGETS  PPM  TARGETS
//               OUT_PPM  OUT_TARGETS
//   mosaic      XC  YC  AREA_RATIO  PPM0..PPM3  TARGETS0..TARGETS3  OUT_PPM  OUT_TARGETS
// Images: binary PPM (P6). Targets: targets_text.h's text form.
#include <array>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "stages/augment/ops/netpbm.h"
#include "stages/detection/copy_paste.h"
#include "stages/detection/mosaic.h"
#include "stages/detection/targets_text.h"

namespace flowloader {
namespace {

using detection::BatchImage;
using detection::ReadTargets;
using detection::Targets;
using detection::WriteTargets;

BatchImage View(Image& img) {
  return BatchImage{img.pixels.data(), img.height, img.width, img.channels, false};
}

std::string CopyPasteCommand(const std::vector<std::string>& f) {
  if (f.size() != 9) return "error: copy_paste needs 8 fields";
  std::vector<int64_t> selection;
  if (!f[2].empty()) {
    for (absl::string_view part : absl::StrSplit(f[2], ',')) {
      int64_t k = 0;
      if (!absl::SimpleAtoi(part, &k)) return absl::StrCat("error: bad index ", part);
      selection.push_back(k);
    }
  }
  Image paste_image, image;
  Targets paste, target;
  if (!ReadNetpbm(f[3], 3, &paste_image) || !ReadTargets(f[4], &paste) ||
      !ReadNetpbm(f[5], 3, &image) || !ReadTargets(f[6], &target)) {
    return "error: cannot read the inputs";
  }
  for (int64_t k : selection) {
    if (k < 0 || k >= paste.size()) return absl::StrCat("error: no instance ", k);
  }
  std::vector<uint8_t> alpha;
  detection::CopyPaste(selection, f[1] == "1", View(paste_image), paste, View(image), &target,
                       &alpha);
  if (!WriteNetpbm(f[7], image) || !WriteTargets(f[8], target)) return "error: cannot write";
  return "ok";
}

std::string MosaicCommand(const std::vector<std::string>& f) {
  detection::MosaicDraw d;
  detection::MosaicOptions o;
  if (f.size() != 14 || !absl::SimpleAtoi(f[1], &d.xc) || !absl::SimpleAtoi(f[2], &d.yc) ||
      !absl::SimpleAtod(f[3], &o.area_ratio)) {
    return "error: mosaic needs XC YC AREA_RATIO, 4 images, 4 targets, 2 outputs";
  }
  d.applied = true;
  std::array<Image, 4> images;
  std::array<Targets, 4> targets;
  std::array<const BatchImage*, 4> tiles;
  std::array<BatchImage, 4> views;
  std::array<const Targets*, 4> tile_targets;
  for (int i = 0; i < 4; ++i) {
    if (!ReadNetpbm(f[4 + i], 3, &images[i]) || !ReadTargets(f[8 + i], &targets[i])) {
      return "error: cannot read the inputs";
    }
    if (images[i].width != images[0].width || images[i].height != images[0].height) {
      return "error: the tiles differ in size";
    }
    views[i] = View(images[i]);
    tiles[i] = &views[i];
    tile_targets[i] = &targets[i];
  }
  Image out;
  out.Resize(images[0].width, images[0].height, 3);
  Targets got;
  detection::Mosaic(d, o, tiles, tile_targets, View(out), &got);
  if (!WriteNetpbm(f[12], out) || !WriteTargets(f[13], got)) return "error: cannot write";
  return "ok";
}

}  // namespace
}  // namespace flowloader

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    std::string reply;
    if (f[0] == "copy_paste") reply = flowloader::CopyPasteCommand(f);
    else if (f[0] == "mosaic") reply = flowloader::MosaicCommand(f);
    else reply = "error: unknown command " + f[0];
    std::cout << reply << "\nEND" << std::endl;
  }
  return 0;
}
