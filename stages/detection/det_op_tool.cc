// det_op_tool: runs one op of a view's list on an image and its detection targets, for
// testdata/detection_ops_parity_test.py, which compares the pixels, boxes, labels and
// masks with the torchvision reference transforms given the same parameters, and the
// draws of ops that look at the boxes (random_iou_crop) with the reference's loop.
//
// Reads commands from stdin, one per line, fields separated by tabs:
//   apply  OP_TEXT  PARAMS  IMAGE_IN  IMAGE_OUT  TARGETS_IN  TARGETS_OUT
//       Apply(PARAMS) to the image, MoveTargets(PARAMS) to the targets; "ok" or
//       "error: ...". PARAMS: comma-separated numbers ("" for none).
//   draw   OP_TEXT  W  H  TARGETS_IN  N  SEED
//       N draws for a W x H image with those targets (DrawWithTargets), one line each:
//       "APPLIED,P1,P2,..." (APPLIED: p's draw, 0 or 1).
// Images: binary PPM (P6). Targets: targets_text.h's text form.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "stages/augment/ops/netpbm.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"
#include "stages/detection/targets.h"
#include "stages/detection/targets_text.h"

namespace flowloader {
namespace {

using augment::Op;
using augment::OpParams;
using detection::ReadTargets;
using detection::WriteTargets;

absl::StatusOr<std::unique_ptr<Op>> MakeOp(const std::string& text) {
  absl::StatusOr<std::vector<augment::OpText>> ops = augment::ParseOpListText(text);
  if (!ops.ok()) return ops.status();
  if (ops->size() != 1) return absl::InvalidArgumentError("need exactly one op");
  return augment::OpRegistry::Global().Create((*ops)[0].name, (*ops)[0].args);
}

std::string Apply(const std::vector<std::string>& f) {
  if (f.size() != 7) return "error: apply needs OP PARAMS IMAGE_IN IMAGE_OUT TARGETS_IN TARGETS_OUT";
  absl::StatusOr<std::unique_ptr<Op>> op = MakeOp(f[1]);
  if (!op.ok()) return absl::StrCat("error: ", op.status().message());
  OpParams params;
  if (!f[2].empty()) {
    for (absl::string_view part : absl::StrSplit(f[2], ',')) {
      double v = 0;
      if (!absl::SimpleAtod(part, &v)) return absl::StrCat("error: bad param ", part);
      params.Push(v);
    }
  }
  Image rgb, spare;
  if (!ReadNetpbm(f[3], 3, &rgb)) return absl::StrCat("error: cannot read ", f[3]);
  detection::Targets targets;
  if (!ReadTargets(f[5], &targets)) return absl::StrCat("error: cannot read ", f[5]);
  if ((*op)->Targets() == Op::TargetEffect::kRefuses) return "error: the op refuses targets";
  augment::OpImage image;
  image.rgb = &rgb;
  image.spare = &spare;
  if (absl::Status s = (*op)->Apply(params, image); !s.ok()) {
    return absl::StrCat("error: ", s.message());
  }
  if (absl::Status s = (*op)->MoveTargets(params, &targets); !s.ok()) {
    return absl::StrCat("error: ", s.message());
  }
  if (targets.canvas_width != rgb.width || targets.canvas_height != rgb.height) {
    return absl::StrCat("error: the image became ", rgb.width, "x", rgb.height,
                        ", the targets' canvas ", targets.canvas_width, "x",
                        targets.canvas_height);
  }
  if (!WriteNetpbm(f[4], rgb) || !WriteTargets(f[6], targets)) return "error: cannot write";
  return "ok";
}

std::string Draw(const std::vector<std::string>& f) {
  int w = 0, h = 0, n = 0;
  uint64_t seed = 0;
  if (f.size() != 7 || !absl::SimpleAtoi(f[2], &w) || !absl::SimpleAtoi(f[3], &h) ||
      !absl::SimpleAtoi(f[5], &n) || !absl::SimpleAtoi(f[6], &seed)) {
    return "error: draw needs OP W H TARGETS N SEED";
  }
  absl::StatusOr<std::unique_ptr<Op>> op = MakeOp(f[1]);
  if (!op.ok()) return absl::StrCat("error: ", op.status().message());
  detection::Targets targets;
  if (!ReadTargets(f[4], &targets)) return absl::StrCat("error: cannot read ", f[4]);
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i) {
    SampleRng rng(seed, 0, static_cast<uint64_t>(i), augment::OpStream(0, 0));
    const bool applied = augment::ShouldApply(**op, rng);
    OpParams params;
    if (applied) (*op)->DrawWithTargets(w, h, targets, rng, &params);
    std::vector<std::string> fields = {applied ? "1" : "0"};
    for (int k = 0; k < params.n; ++k) fields.push_back(absl::StrCat(params.v[k]));
    lines.push_back(absl::StrJoin(fields, ","));
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace
}  // namespace flowloader

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    std::string reply;
    if (f[0] == "apply") reply = flowloader::Apply(f);
    else if (f[0] == "draw") reply = flowloader::Draw(f);
    else reply = "error: unknown command " + f[0];
    std::cout << reply << "\nEND" << std::endl;
  }
  return 0;
}
