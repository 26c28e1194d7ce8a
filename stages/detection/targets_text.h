// targets_text.h: the parity tools' text form of detection targets (det_op_tool,
// multi_sample_tool; the Python tests write and read it).
//
// A header "W H K M [P]" (canvas, instances, 1 when masks follow, keypoints per instance;
// P absent = 0), K lines "x0 y0 x1 y1 label iscrowd area" (xyxy), with P > 0 K lines of
// 3 × P numbers (x y v ...), then, with masks, a line "masks" and K × H × W raw bytes.
#ifndef FLOWLOADER_STAGES_DETECTION_TARGETS_TEXT_H_
#define FLOWLOADER_STAGES_DETECTION_TARGETS_TEXT_H_

#include <string>

#include "stages/detection/targets.h"

namespace flowloader::detection {

// ReadTargets fills *t from `path`; false when the file is missing or malformed.
bool ReadTargets(const std::string& path, Targets* t);
// WriteTargets writes `t` to `path`; false when it cannot be written.
bool WriteTargets(const std::string& path, const Targets& t);

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_TARGETS_TEXT_H_
