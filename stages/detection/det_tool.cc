// det_tool: runs the target geometry and the mask coding for the parity test
// (testdata/detection_parity_test.py), which compares them with references written from
// torchvision.transforms.v2's kernels, the COCO RLE definition and PIL.
//
// Reads commands from stdin, one per line, fields separated by tabs; answers one line each:
//   boxes  GEOMETRY  FORMAT  CW,CH  B1,B2,...        → "CW,CH B1,B2,..." (moved boxes)
//   masks  GEOMETRY  K,W,H  IN  OUT                  → "W,H" (OUT: the moved planes)
//   sanitize  CW,CH  MIN_SIZE,MIN_AREA  B1,B2,...    → "1,0,..." (xyxy boxes kept)
//   poly  H,W  X1,Y1,X2,Y2,...  OUT                  → "ok" (OUT: the h × w mask)
//   rle_decode  H,W  STRING  OUT                     → "ok" or "error: ..."
//   rle_encode  H,W  IN                              → the compressed string
// GEOMETRY: hflip | vflip | crop:T,L,H,W | pad:L,T,R,B | resize:H,W |
//           resized_crop:T,L,H,W,OH,OW | center_crop:H,W.
// Masks are raw row-major bytes, planes one after the other.
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "stages/detection/geometry.h"
#include "stages/detection/rle.h"
#include "stages/detection/targets.h"

namespace flowloader::detection {
namespace {

std::vector<double> Numbers(const std::string& text) {
  std::vector<double> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double v = 0;
    if (!absl::SimpleAtod(part, &v)) v = 0;
    out.push_back(v);
  }
  return out;
}

bool ParseGeometry(const std::string& text, Geometry* g) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  const std::vector<double> n = parts.size() > 1 ? Numbers(parts[1]) : std::vector<double>{};
  auto i = [&](size_t k) { return static_cast<int>(n.at(k)); };
  if (parts[0] == "hflip") *g = Geometry::HorizontalFlip();
  else if (parts[0] == "vflip") *g = Geometry::VerticalFlip();
  else if (parts[0] == "crop" && n.size() == 4) *g = Geometry::Crop(i(0), i(1), i(2), i(3));
  else if (parts[0] == "pad" && n.size() == 4) *g = Geometry::Pad(i(0), i(1), i(2), i(3));
  else if (parts[0] == "resize" && n.size() == 2) *g = Geometry::Resize(i(0), i(1));
  else if (parts[0] == "resized_crop" && n.size() == 6)
    *g = Geometry::ResizedCrop(i(0), i(1), i(2), i(3), i(4), i(5));
  else if (parts[0] == "center_crop" && n.size() == 2) *g = Geometry::CenterCrop(i(0), i(1));
  else return false;
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

std::string Run(const std::vector<std::string>& f) {
  const std::string& cmd = f[0];
  if (cmd == "boxes" && f.size() == 5) {
    Geometry g;
    if (!ParseGeometry(f[1], &g)) return "error: geometry";
    absl::StatusOr<BoxFormat> format = ParseBoxFormat(f[2]);
    if (!format.ok()) return "error: format";
    const std::vector<double> canvas = Numbers(f[3]);
    int cw = static_cast<int>(canvas[0]), ch = static_cast<int>(canvas[1]);
    std::vector<float> boxes;
    for (double v : Numbers(f[4])) boxes.push_back(static_cast<float>(v));
    ApplyToBoxes(g, *format, &cw, &ch, boxes.data(), static_cast<int64_t>(boxes.size() / 4));
    std::vector<std::string> texts;
    for (float v : boxes) texts.push_back(absl::StrFormat("%.9g", v));
    return absl::StrCat(cw, ",", ch, " ", absl::StrJoin(texts, ","));
  }
  if (cmd == "masks" && f.size() == 5) {
    Geometry g;
    if (!ParseGeometry(f[1], &g)) return "error: geometry";
    const std::vector<double> kwh = Numbers(f[2]);
    int w = static_cast<int>(kwh[1]), h = static_cast<int>(kwh[2]);
    const std::string in = ReadFile(f[3]);
    std::vector<uint8_t> out;
    ApplyToMasks(g, reinterpret_cast<const uint8_t*>(in.data()), static_cast<int64_t>(kwh[0]),
                 &w, &h, &out);
    WriteFile(f[4], out.data(), out.size());
    return absl::StrCat(w, ",", h);
  }
  if (cmd == "sanitize" && f.size() == 4) {
    Targets t;
    const std::vector<double> canvas = Numbers(f[1]), limits = Numbers(f[2]);
    t.canvas_width = static_cast<int>(canvas[0]);
    t.canvas_height = static_cast<int>(canvas[1]);
    for (double v : Numbers(f[3])) t.boxes.push_back(static_cast<float>(v));
    t.labels.assign(t.boxes.size() / 4, 0);
    const std::vector<bool> keep = SanitizeKeep(t, SanitizeOptions{limits[0], limits[1]});
    std::vector<int> bits(keep.begin(), keep.end());
    return absl::StrJoin(bits, ",");
  }
  if (cmd == "poly" && f.size() == 4) {
    const std::vector<double> hw = Numbers(f[1]);
    const int h = static_cast<int>(hw[0]), w = static_cast<int>(hw[1]);
    std::vector<uint8_t> mask(static_cast<size_t>(h) * w, 0);
    DecodeRleInto(RleFromPolygon(Numbers(f[2]), h, w), mask.data());
    WriteFile(f[3], mask.data(), mask.size());
    return "ok";
  }
  if (cmd == "rle_decode" && f.size() == 4) {
    const std::vector<double> hw = Numbers(f[1]);
    const int h = static_cast<int>(hw[0]), w = static_cast<int>(hw[1]);
    absl::StatusOr<Rle> rle = RleFromString(f[2], h, w);
    absl::Status status = rle.ok() ? CheckRle(*rle) : rle.status();
    if (!status.ok()) return absl::StrCat("error: ", status.message());
    std::vector<uint8_t> mask(static_cast<size_t>(h) * w, 0);
    DecodeRleInto(*rle, mask.data());
    WriteFile(f[3], mask.data(), mask.size());
    return "ok";
  }
  if (cmd == "rle_encode" && f.size() == 3) {
    const std::vector<double> hw = Numbers(f[1]);
    const std::string in = ReadFile(f[2]);
    return RleToString(RleFromMask(reinterpret_cast<const uint8_t*>(in.data()),
                                   static_cast<int>(hw[0]), static_cast<int>(hw[1])));
  }
  return "error: unknown command";
}

}  // namespace
}  // namespace flowloader::detection

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    std::cout << flowloader::detection::Run(fields) << "\n" << std::flush;
  }
  return 0;
}
