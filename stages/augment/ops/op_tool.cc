// op_tool: runs single ops for the parity and distribution tests (ops_parity_test.py).
//
// Reads commands from stdin, one per line, fields separated by tabs:
//   apply  OP_TEXT  PARAMS  IN  OUT   Apply(PARAMS) to IN, write OUT; prints "ok" or
//                                     "error: ..."
//   draw   OP_TEXT  W  H  N  SEED     N draws for a W x H image, one line each:
//                                     "APPLIED,P1,P2,..." (APPLIED: p's draw, 0 or 1)
//   labels OP_TEXT PARAMS IN OUT FILL MoveLabels(PARAMS) on label map IN (binary PGM, P5),
//                                     fill FILL, write OUT (P5); "ok" or "error: ..."
//   check  OP_TEXT                    prints "ok" or the op's refusal
//   names                             every registered op, one per line
// OP_TEXT is one op as a view's list writes it ("color_jitter(brightness=0.4)"); PARAMS
// comma-separated numbers ("" for none). Images: binary PPM (P6) for uint8 RGB, or
// "F32 C H W\n" followed by C*H*W little-endian floats for a tensor.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "stages/augment/ops/netpbm.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"

namespace flowloader::augment {
namespace {

bool ReadF32(const std::string& path, std::vector<float>* data, int* c, int* h, int* w) {
  std::ifstream in(path, std::ios::binary);
  std::string magic;
  in >> magic >> *c >> *h >> *w;
  in.get();
  if (magic != "F32" || *c != 3 || *h <= 0 || *w <= 0) return false;
  data->resize(static_cast<size_t>(*c) * *h * *w);
  in.read(reinterpret_cast<char*>(data->data()), data->size() * sizeof(float));
  return static_cast<bool>(in);
}

bool WriteF32(const std::string& path, const float* data, int h, int w) {
  std::ofstream out(path, std::ios::binary);
  out << "F32 3 " << h << " " << w << "\n";
  out.write(reinterpret_cast<const char*>(data), sizeof(float) * 3 * h * w);
  return static_cast<bool>(out);
}

absl::StatusOr<std::unique_ptr<Op>> MakeOp(const std::string& text) {
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  if (!ops.ok()) return ops.status();
  if (ops->size() != 1) return absl::InvalidArgumentError("need exactly one op");
  return OpRegistry::Global().Create((*ops)[0].name, (*ops)[0].args);
}

std::string Apply(const std::vector<std::string>& f) {
  if (f.size() != 5) return "error: apply needs OP PARAMS IN OUT";
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
  std::vector<float> tensor;
  OpImage image;
  image.rgb = &rgb;
  image.spare = &spare;
  if ((*op)->Input() == PixelForm::kFloatCHW) {
    int c = 0;
    if (!ReadF32(f[3], &tensor, &c, &image.height, &image.width)) return "error: bad F32 input";
    image.chw = tensor.data();
  } else if (!ReadNetpbm(f[3], 3, &rgb)) {
    return "error: bad PPM input";
  }
  if ((*op)->Output() == PixelForm::kFloatCHW && (*op)->Input() == PixelForm::kUint8HWC) {
    tensor.resize(static_cast<size_t>(3) * rgb.width * rgb.height);
    image.chw = tensor.data();
    image.width = rgb.width;
    image.height = rgb.height;
  }
  if (absl::Status s = (*op)->Apply(params, image); !s.ok()) {
    return absl::StrCat("error: ", s.message());
  }
  const bool ok = (*op)->Output() == PixelForm::kFloatCHW
                      ? WriteF32(f[4], image.chw, image.height, image.width)
                      : WriteNetpbm(f[4], rgb);
  return ok ? "ok" : "error: cannot write output";
}

// Labels moves a label map as the op moves pixels (Op::MoveLabels).
std::string Labels(const std::vector<std::string>& f) {
  if (f.size() != 6) return "error: labels needs OP PARAMS IN OUT FILL";
  absl::StatusOr<std::unique_ptr<Op>> op = MakeOp(f[1]);
  if (!op.ok()) return absl::StrCat("error: ", op.status().message());
  if (!(*op)->MovesLabels()) return "error: the op does not move label maps";
  OpParams params;
  if (!f[2].empty()) {
    for (absl::string_view part : absl::StrSplit(f[2], ',')) {
      double v = 0;
      if (!absl::SimpleAtod(part, &v)) return absl::StrCat("error: bad param ", part);
      params.Push(v);
    }
  }
  int fill = 0;
  if (!absl::SimpleAtoi(f[5], &fill) || fill < 0 || fill > 255) return "error: bad fill";
  Image labels, spare;
  if (!ReadNetpbm(f[3], 1, &labels)) return "error: bad PGM input";
  LabelPlane plane{&labels, &spare, static_cast<uint8_t>(fill)};
  if (absl::Status s = (*op)->MoveLabels(params, plane); !s.ok()) {
    return absl::StrCat("error: ", s.message());
  }
  return WriteNetpbm(f[4], labels) ? "ok" : "error: cannot write output";
}

std::string Draw(const std::vector<std::string>& f) {
  if (f.size() != 6) return "error: draw needs OP W H N SEED";
  absl::StatusOr<std::unique_ptr<Op>> op = MakeOp(f[1]);
  if (!op.ok()) return absl::StrCat("error: ", op.status().message());
  int w = 0, h = 0, n = 0;
  uint64_t seed = 0;
  if (!absl::SimpleAtoi(f[2], &w) || !absl::SimpleAtoi(f[3], &h) || !absl::SimpleAtoi(f[4], &n) ||
      !absl::SimpleAtoi(f[5], &seed)) {
    return "error: bad numbers";
  }
  std::string out;
  for (int i = 0; i < n; ++i) {
    SampleRng rng(seed, 0, static_cast<uint64_t>(i), 1);
    const bool applied = ShouldApply(**op, rng);
    OpParams params;
    (*op)->Draw(w, h, rng, &params);
    std::vector<std::string> parts = {applied ? "1" : "0"};
    for (size_t k = 0; k < params.Size(); ++k) parts.push_back(absl::StrCat(params.At(k)));
    absl::StrAppend(&out, absl::StrJoin(parts, ","), "\n");
  }
  out.pop_back();
  return out;
}

}  // namespace
}  // namespace flowloader::augment

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    std::string reply;
    if (f[0] == "apply") {
      reply = flowloader::augment::Apply(f);
    } else if (f[0] == "labels") {
      reply = flowloader::augment::Labels(f);
    } else if (f[0] == "draw") {
      reply = flowloader::augment::Draw(f);
    } else if (f[0] == "names") {
      reply = absl::StrJoin(flowloader::augment::OpRegistry::Global().Names(), "\n");
    } else if (f[0] == "check" && f.size() == 2) {
      absl::StatusOr<std::unique_ptr<flowloader::augment::Op>> op = flowloader::augment::MakeOp(f[1]);
      reply = op.ok() ? "ok" : absl::StrCat("error: ", op.status().message());
    } else {
      reply = "error: unknown command";
    }
    std::cout << reply << "\nEND" << std::endl;
  }
  return 0;
}
