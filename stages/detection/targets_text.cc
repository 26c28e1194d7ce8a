// targets_text.cc: see targets_text.h.
#include "stages/detection/targets_text.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace flowloader::detection {

bool ReadTargets(const std::string& path, Targets* t) {
  std::ifstream in(path, std::ios::binary);
  int64_t k = 0;
  int m = 0;
  std::string header;
  std::getline(in, header);
  std::istringstream fields(header);
  fields >> t->canvas_width >> t->canvas_height >> k >> m;
  if (!fields || k < 0 || t->canvas_width <= 0 || t->canvas_height <= 0) return false;
  if (!(fields >> t->num_keypoints)) t->num_keypoints = 0;
  t->has_keypoints = t->num_keypoints > 0;
  for (int64_t i = 0; i < k; ++i) {
    float b[4], area;
    int64_t label, crowd;
    in >> b[0] >> b[1] >> b[2] >> b[3] >> label >> crowd >> area;
    t->boxes.insert(t->boxes.end(), b, b + 4);
    t->labels.push_back(label);
    t->iscrowd.push_back(crowd);
    t->area.push_back(area);
  }
  t->keypoints.resize(static_cast<size_t>(k) * t->keypoint_stride());
  for (float& v : t->keypoints) in >> v;
  t->has_masks = m != 0;
  if (t->has_masks) {
    std::string word;
    in >> word;
    in.get();
    t->masks.resize(t->mask_plane() * static_cast<size_t>(k));
    in.read(reinterpret_cast<char*>(t->masks.data()), static_cast<std::streamsize>(t->masks.size()));
  }
  return static_cast<bool>(in);
}

bool WriteTargets(const std::string& path, const Targets& t) {
  std::ofstream out(path, std::ios::binary);
  out << t.canvas_width << " " << t.canvas_height << " " << t.size() << " "
      << (t.has_masks ? 1 : 0) << " " << t.num_keypoints << "\n";
  for (int64_t i = 0; i < t.size(); ++i) {
    out << absl::StrFormat("%.9g %.9g %.9g %.9g %d %d %.9g\n", t.boxes[4 * i], t.boxes[4 * i + 1],
                           t.boxes[4 * i + 2], t.boxes[4 * i + 3], t.labels[i], t.iscrowd[i],
                           t.area[i]);
  }
  for (int64_t i = 0; i < t.size(); ++i) {
    std::vector<std::string> row;
    for (size_t j = 0; j < t.keypoint_stride(); ++j) {
      row.push_back(absl::StrFormat("%.9g", t.keypoints[i * t.keypoint_stride() + j]));
    }
    if (!row.empty()) out << absl::StrJoin(row, " ") << "\n";
  }
  if (t.has_masks) {
    out << "masks\n";
    std::vector<uint8_t> planes(t.MaskPlaneBytes());  // Full planes, windowed or not.
    t.WriteMaskPlanes(planes.data());
    out.write(reinterpret_cast<const char*>(planes.data()),
              static_cast<std::streamsize>(planes.size()));
  }
  return static_cast<bool>(out);
}

}  // namespace flowloader::detection
