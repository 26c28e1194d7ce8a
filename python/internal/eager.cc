// eager.cc: the native half of calling flowloader.transforms on one image (eager.h).
#include "python/internal/eager.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/stage.h"
#include "python/internal/pil_rows.h"
#include "python/internal/py_lambda.h"
#include "python/internal/worker_gil.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"
#include "stages/core/image.h"
#include "stages/core/rng.h"

namespace py = pybind11;

namespace flowloader {
namespace python_internal {
namespace {

using augment::Op;
using augment::OpImage;
using augment::OpParams;
using augment::OpSize;
using augment::PixelForm;
using pil_rows::Maps;

[[noreturn]] void RaiseValue(const std::string& message) { throw py::value_error(message); }

// EagerOp is one native op, made from its text as a view's list writes it.
class EagerOp {
 public:
  explicit EagerOp(const std::string& text) {
    absl::StatusOr<std::vector<augment::OpText>> ops = augment::ParseOpListText(text);
    if (!ops.ok()) RaiseValue(std::string(ops.status().message()));
    if (ops->size() != 1) RaiseValue(absl::StrCat("one op expected, got ", ops->size(), ": ", text));
    // A Lambda is called by the Python side itself in eager mode.
    if ((*ops)[0].name == kPythonLambdaOp) RaiseValue("python_lambda is not run eagerly");
    absl::StatusOr<std::unique_ptr<Op>> op =
        augment::OpRegistry::Global().Create((*ops)[0].name, (*ops)[0].args);
    if (!op.ok()) RaiseValue(std::string(op.status().message()));
    op_ = *std::move(op);
    text_ = text;
  }

  const Op& op() const { return *op_; }
  const std::string& text() const { return text_; }
  bool reads_float() const { return op_->Input() == PixelForm::kFloatCHW; }
  bool writes_float() const { return op_->Output() == PixelForm::kFloatCHW; }
  double p() const { return op_->p(); }

  std::pair<int, int> OutputSize(int width, int height) const {
    const OpSize out = op_->OutputSize(OpSize{width, height});
    return {out.width, out.height};
  }

  // GatherMaps is the op's Op::Gather maps for `params` on a width × height image, as
  // (x_src, y_src) int32 arrays (-1: the fill), or None where the op is not a gather for
  // them: the pixel moves of a float tensor (python/internal/float_eager.h).
  py::object GatherMaps(const std::vector<double>& params, int width, int height) const {
    OpParams p;
    for (double v : params) p.Push(v);
    augment::GatherMaps g;
    if (!op_->Gather(p, width, height, &g)) return py::none();
    return py::make_tuple(py::array_t<int>(g.x_src.size(), g.x_src.data()),
                          py::array_t<int>(g.y_src.size(), g.y_src.data()));
  }

  // LoaderDraw is the loader's draw for this op at `position` of view `view`'s list
  // (ViewProgram::RunPixelOps' stream and order: p's draw, then Draw).
  std::pair<bool, std::vector<double>> LoaderDraw(int width, int height, uint64_t seed,
                                                  uint64_t epoch, uint64_t index, int view,
                                                  size_t position) const {
    SampleRng rng(seed, epoch, index, augment::OpStream(ViewStream(view), position));
    if (!augment::ShouldApply(*op_, rng)) return {false, {}};
    OpParams params;
    op_->Draw(width, height, rng, &params);
    std::vector<double> values(params.v, params.v + params.n);
    values.insert(values.end(), params.more.begin(), params.more.end());
    return {true, values};
  }

 private:
  std::unique_ptr<Op> op_;
  std::string text_;
};

// Working is one call's pixels: uint8 RGB (a and b: the image and the spare for ops that
// cannot work in place) or the float tensor (chw, 3 × height × width).
struct Working {
  Image a, b;
  std::vector<float> chw;
};

// RunOps runs ops[i] with params[i] (skipped when absent) on `image`, GIL released by
// the caller. The form is tracked in `is_float`.
absl::Status RunOps(const std::vector<const EagerOp*>& ops,
                    const std::vector<std::optional<OpParams>>& params, Working& work,
                    OpImage& image, bool& is_float) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i]->op();
    const bool wants_float = op.Input() == PixelForm::kFloatCHW;
    if (wants_float != is_float) {
      return absl::InvalidArgumentError(absl::StrCat(
          op.name(), " works on ", wants_float ? "a float [3, H, W] tensor" : "uint8 pixels",
          ", got ", is_float ? "a float [3, H, W] tensor" : "uint8 pixels"));
    }
    if (!params[i].has_value()) continue;
    if (!is_float && op.Output() == PixelForm::kFloatCHW) {  // normalize: make the tensor.
      image.width = image.rgb->width;
      image.height = image.rgb->height;
      work.chw.resize(3 * static_cast<size_t>(image.width) * image.height);
      image.chw = work.chw.data();
    }
    if (absl::Status s = op.Apply(*params[i], image); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(op.name(), ": ", s.message()));
    }
    is_float = op.Output() == PixelForm::kFloatCHW;
  }
  return absl::OkStatus();
}

// The size limits of an image: the ops' own (16384 a side, as their size arguments), and
// H × W × 3 within an int, which the ops' index arithmetic uses.
constexpr int64_t kMaxSide = 1 << 14;
constexpr int64_t kMaxPixels = (int64_t{1} << 31) / 4;

// GivenParams turns the parameters Python gave each op (none: the op draws its own) into
// OpParams (past OpParams::kMax into `more`; each op's Apply checks its count).
std::vector<std::optional<OpParams>> GivenParams(
    const std::vector<const EagerOp*>& ops,
    const std::vector<std::optional<std::vector<double>>>& params) {
  std::vector<std::optional<OpParams>> drawn(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].has_value()) continue;
    drawn[i].emplace();
    if (params[i]->size() > static_cast<size_t>(OpParams::kMax)) {
      drawn[i]->more.reserve(params[i]->size() - OpParams::kMax);
    }
    for (double v : *params[i]) drawn[i]->Push(v);
  }
  return drawn;
}

py::array EagerRun(const std::vector<const EagerOp*>& ops,
                   const std::vector<std::optional<std::vector<double>>>& params,
                   const py::array& input) {
  if (ops.size() != params.size()) {
    RaiseValue(absl::StrCat(ops.size(), " ops but ", params.size(), " parameter lists"));
  }
  const std::vector<std::optional<OpParams>> drawn = GivenParams(ops, params);
  const bool in_float = py::isinstance<py::array_t<float>>(input);
  const bool in_uint8 = py::isinstance<py::array_t<uint8_t>>(input);
  if (!(in_float || in_uint8) || input.ndim() != 3 ||
      !(input.flags() & py::array::c_style)) {
    RaiseValue("_eager_run takes a C-contiguous uint8 [H, W, 3] or float32 [3, H, W] array");
  }
  const int64_t h = in_float ? input.shape(1) : input.shape(0);
  const int64_t w = in_float ? input.shape(2) : input.shape(1);
  const int64_t c = in_float ? input.shape(0) : input.shape(2);
  if (c != 3 || h < 1 || w < 1 || h > kMaxSide || w > kMaxSide || h * w > kMaxPixels) {
    RaiseValue(absl::StrCat("flowloader.transforms: an image of 3 channels, sides in [1, ",
                            kMaxSide, "] and at most ", kMaxPixels, " pixels expected, got ",
                            w, "x", h, "x", c));
  }
  // The thread's working images keep their capacity from call to call (a growing
  // std::vector would zero what the copy then overwrites). Nothing in the ops calls back
  // into Python, so a call cannot reenter on its thread.
  thread_local Working work;
  OpImage image;
  image.rgb = &work.a;
  image.spare = &work.b;
  bool is_float = in_float;
  absl::Status status;
  {
    python::ReleasedGil release;  // `input` stays referenced by the caller's frame.
    if (in_float) {
      work.chw.resize(static_cast<size_t>(3 * h * w));
      std::memcpy(work.chw.data(), input.data(), work.chw.size() * sizeof(float));
      image.chw = work.chw.data();
      image.width = static_cast<int>(w);
      image.height = static_cast<int>(h);
    } else {
      work.a.Resize(static_cast<int>(w), static_cast<int>(h), 3);
      std::memcpy(work.a.pixels.data(), input.data(), work.a.pixels.size());
    }
    status = RunOps(ops, drawn, work, image, is_float);
  }
  if (!status.ok()) RaiseValue(std::string(status.message()));
  if (is_float) {
    py::array_t<float> out({int64_t{3}, int64_t{image.height}, int64_t{image.width}});
    std::memcpy(out.mutable_data(), image.chw, sizeof(float) * 3 * image.height * image.width);
    return std::move(out);
  }
  const Image& rgb = *image.rgb;
  py::array_t<uint8_t> out({int64_t{rgb.height}, int64_t{rgb.width}, int64_t{3}});
  if (!rgb.pixels.empty()) std::memcpy(out.mutable_data(), rgb.pixels.data(), rgb.pixels.size());
  return std::move(out);
}

// PIL images are read and written through their row pointers (Pillow's
// Image.core.unsafe_ptrs: `image`, an array of `height` row pointers; RGB rows hold 4
// bytes a pixel, R G B and padding, L rows 1), one pass in C++ in place of
// np.asarray/Image.fromarray and their encoder round trips. _eager.py passes only the
// pointers of a loaded image of the mode and size it names.
uint8_t* const* PilRows(uintptr_t rows) { return reinterpret_cast<uint8_t* const*>(rows); }

void CheckPilMode(const std::string& mode) {
  if (mode != "RGB" && mode != "L") RaiseValue("_pil_read/_pil_write: mode RGB or L only");
}

// PilRead is the box (left, top, width, height) of a PIL image of image_width ×
// image_height as uint8 [height, width, 3] (L: three equal channels).
py::array PilRead(uintptr_t rows, const std::string& mode, int image_width, int image_height,
                  int left, int top, int width, int height) {
  CheckPilMode(mode);
  if (rows == 0 || width < 1 || height < 1 || left < 0 || top < 0 ||
      left > image_width - width || top > image_height - height) {
    RaiseValue(absl::StrCat("_pil_read: box ", width, "x", height, "+", left, "+", top,
                            " outside the image ", image_width, "x", image_height));
  }
  py::array_t<uint8_t> out({int64_t{height}, int64_t{width}, int64_t{3}});
  uint8_t* dst = out.mutable_data();
  const bool rgb = mode == "RGB";
  {
    python::ReleasedGil release;
    for (int y = 0; y < height; ++y) {
      const uint8_t* src = PilRows(rows)[top + y] + (rgb ? 4 : 1) * static_cast<size_t>(left);
      uint8_t* d = dst + static_cast<size_t>(y) * width * 3;
      for (int x = 0; x < width; ++x, d += 3) {
        const uint8_t* s = rgb ? src + 4 * x : src + x;
        d[0] = s[0];
        d[1] = rgb ? s[1] : s[0];
        d[2] = rgb ? s[2] : s[0];
      }
    }
  }
  return std::move(out);
}

// PilWrite writes uint8 [H, W, 3] into a PIL image of the same size (L: channel 0).
void PilWrite(uintptr_t rows, const std::string& mode, const py::array_t<uint8_t>& pixels) {
  CheckPilMode(mode);
  if (rows == 0 || pixels.ndim() != 3 || pixels.shape(2) != 3 ||
      !(pixels.flags() & py::array::c_style)) {
    RaiseValue("_pil_write: a C-contiguous uint8 [H, W, 3] array expected");
  }
  const int height = static_cast<int>(pixels.shape(0));
  const int width = static_cast<int>(pixels.shape(1));
  const uint8_t* src = pixels.data();
  const bool rgb = mode == "RGB";
  python::ReleasedGil release;
  for (int y = 0; y < height; ++y) {
    uint8_t* row = PilRows(rows)[y];
    const uint8_t* s = src + static_cast<size_t>(y) * width * 3;
    if (!rgb) {
      for (int x = 0; x < width; ++x) row[x] = s[3 * x];
      continue;
    }
    for (int x = 0; x < width; ++x, s += 3) {
      row[4 * x] = s[0];
      row[4 * x + 1] = s[1];
      row[4 * x + 2] = s[2];
      row[4 * x + 3] = 255;
    }
  }
}

// PointRun: where ops[i..] (those drawn) are all point ops (Op::PointTables) on the
// image `read` gives, writes dst_rows from the source rows through `read` and the
// ops' tables composed, in one pass, and returns true. Ops needing value counts get
// them from one count of the source through `read`, each value moved by the tables
// before them; the first op, asking only for the extremes (autocontrast), gets them
// from a min/max pass (a read that fills, a pad, is not counted: false there). false:
// nothing was written.
bool PointRun(const std::vector<const EagerOp*>& ops,
              const std::vector<std::optional<OpParams>>& drawn, size_t i,
              uint8_t* const* src, bool rgb, const Maps& read, uint8_t* const* dst_rows) {
  const int width = static_cast<int>(read.g.x_src.size());
  const int height = static_cast<int>(read.g.y_src.size());
  pil_rows::Luts acc, luts;
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) acc[c][v] = static_cast<uint8_t>(v);
  }
  Op::Histogram source;
  bool counted = false, uncountable = false, identity = true;
  auto histogram = [&](Op::Histogram& h, bool extremes_only) {
    std::memset(h, 0, sizeof(Op::Histogram));
    if (read.filled) {
      uncountable = true;
      return;
    }
    int lo[3], hi[3];  // Before any table, the extremes alone: a vector min/max pass.
    if (extremes_only && identity && !counted && pil_rows::Extremes(src, rgb, read, lo, hi)) {
      for (int c = 0; c < 3; ++c) h[c][lo[c]] = h[c][hi[c]] = 1;
      return;
    }
    if (!counted) {
      std::memset(source, 0, sizeof(source));
      pil_rows::CountValues(src, rgb, read, source);
      counted = true;
    }
    for (int c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) h[c][acc[c][v]] += source[c][v];
    }
  };
  for (; i < ops.size(); ++i) {
    if (!drawn[i].has_value()) continue;
    if (!ops[i]->op().PointTables(*drawn[i], width, height, histogram, luts) || uncountable) {
      return false;
    }
    for (int c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) acc[c][v] = luts[c][acc[c][v]];
    }
    identity = false;
  }
  pil_rows::MapRows(src, rgb, read, acc, dst_rows);
  return true;
}

// RowsRun: where ops[i] is the last op drawn and `read` is a plain box of the source (no
// flip, no fill), lets the op write dst_rows from the box's rows itself
// (Op::ApplyRows: the nearest warps) and returns true; false: nothing was written.
bool RowsRun(const std::vector<const EagerOp*>& ops,
             const std::vector<std::optional<OpParams>>& drawn, size_t i,
             uint8_t* const* src, bool rgb, const Maps& read, uint8_t* const* dst_rows,
             int dst_width, int dst_height) {
  while (i < ops.size() && !drawn[i].has_value()) ++i;
  if (i == ops.size()) return false;
  for (size_t k = i + 1; k < ops.size(); ++k) {
    if (drawn[k].has_value()) return false;
  }
  const std::vector<int>& xs = read.g.x_src;
  const std::vector<int>& ys = read.g.y_src;
  if (read.filled || xs.back() - xs.front() != static_cast<int>(xs.size()) - 1 ||
      ys.back() - ys.front() != static_cast<int>(ys.size()) - 1 || xs.front() < 0 ||
      ys.front() < 0) {
    return false;
  }
  for (size_t k = 1; k < xs.size(); ++k) {
    if (xs[k] != xs[k - 1] + 1) return false;
  }
  for (size_t k = 1; k < ys.size(); ++k) {
    if (ys[k] != ys[k - 1] + 1) return false;
  }
  const int bpp = rgb ? 4 : 1;
  std::vector<uint8_t*> box(ys.size());
  for (size_t y = 0; y < ys.size(); ++y) box[y] = src[ys[y]] + bpp * xs.front();
  const augment::RowImage in{box.data(), static_cast<int>(xs.size()),
                             static_cast<int>(ys.size()), bpp};
  const augment::RowImage out{dst_rows, dst_width, dst_height, bpp};
  return ops[i]->op().ApplyRows(*drawn[i], in, out);
}

// PilRun runs ops with params (as EagerRun) on the box (left, top, width, height) of a
// PIL image (rows: its row pointers, mode RGB or L, image_width × image_height). With
// dst_rows (a new PIL image of dst_mode and dst_width × dst_height, the size the ops
// give), it writes that image and returns None; with dst_rows 0, it returns the array
// EagerRun would (uint8 [H, W, 3] or float32 [3, H, W]).
py::object PilRun(const std::vector<const EagerOp*>& ops,
                  const std::vector<std::optional<std::vector<double>>>& params, uintptr_t rows,
                  const std::string& mode, int image_width, int image_height, int left, int top,
                  int width, int height, uintptr_t dst_rows, const std::string& dst_mode,
                  int dst_width, int dst_height) {
  CheckPilMode(mode);
  if (dst_rows != 0) CheckPilMode(dst_mode);
  if (ops.size() != params.size()) {
    RaiseValue(absl::StrCat(ops.size(), " ops but ", params.size(), " parameter lists"));
  }
  if (rows == 0 || width < 1 || height < 1 || left < 0 || top < 0 ||
      left > image_width - width || top > image_height - height) {
    RaiseValue(absl::StrCat("_pil_run: box ", width, "x", height, "+", left, "+", top,
                            " outside the image ", image_width, "x", image_height));
  }
  const std::vector<std::optional<OpParams>> drawn = GivenParams(ops, params);
  thread_local Working work;
  OpImage image;
  image.rgb = &work.a;
  image.spare = &work.b;
  bool is_float = false;
  absl::Status status;
  std::string wrong_size;
  {
    python::ReleasedGil release;  // The caller keeps both PIL images alive.
    uint8_t* const* src = PilRows(rows);
    const bool rgb = mode == "RGB";
    // The read: the box, then every gather op at the start of the list.
    Maps read = pil_rows::BoxMaps(left, top, width, height);
    size_t i = 0;
    augment::GatherMaps g;
    for (; i < ops.size(); ++i) {
      if (!drawn[i].has_value()) continue;
      const Op& op = ops[i]->op();
      if (op.Input() != PixelForm::kUint8HWC ||
          !op.Gather(*drawn[i], static_cast<int>(read.g.x_src.size()),
                     static_cast<int>(read.g.y_src.size()), &g) ||
          !pil_rows::Then(read, g)) {
        break;
      }
    }
    const int out_w = static_cast<int>(read.g.x_src.size());
    const int out_h = static_cast<int>(read.g.y_src.size());
    if (i == ops.size() && dst_rows != 0 && dst_mode == mode) {
      if (out_w != dst_width || out_h != dst_height) {
        wrong_size = absl::StrCat(out_w, "x", out_h);
      } else {
        pil_rows::CopyRows(src, rgb, read, PilRows(dst_rows));
      }
    } else if (dst_rows != 0 && dst_mode == mode && out_w == dst_width &&
               out_h == dst_height && PointRun(ops, drawn, i, src, rgb, read,
                                               PilRows(dst_rows))) {
      // The rest were point ops, run from row to row.
    } else if (dst_rows != 0 && dst_mode == mode && i < ops.size() &&
               RowsRun(ops, drawn, i, src, rgb, read, PilRows(dst_rows), dst_width,
                       dst_height)) {
      // The last op wrote the new image from the source's rows.
    } else {
      pil_rows::ReadRows(src, rgb, read, &work.a);
      // The middle: the ops up to the run of gathers that ends the list (the write's).
      Maps write;
      bool write_found = false;
      for (; i <= ops.size() && status.ok(); ++i) {
        if (dst_rows != 0 && !is_float) {
          write = pil_rows::BoxMaps(0, 0, image.rgb->width, image.rgb->height);
          size_t k = i;
          for (; k < ops.size(); ++k) {
            if (!drawn[k].has_value()) continue;
            const Op& op = ops[k]->op();
            if (op.Input() != PixelForm::kUint8HWC ||
                !op.Gather(*drawn[k], static_cast<int>(write.g.x_src.size()),
                           static_cast<int>(write.g.y_src.size()), &g) ||
                !pil_rows::Then(write, g)) {
              break;
            }
          }
          if (k == ops.size()) {
            write_found = true;
            break;
          }
        }
        if (i == ops.size()) break;
        status = RunOps({ops[i]}, {drawn[i]}, work, image, is_float);
      }
      if (status.ok() && dst_rows != 0) {
        const int w = static_cast<int>(write.g.x_src.size());
        const int h = static_cast<int>(write.g.y_src.size());
        if (!write_found || is_float || w != dst_width || h != dst_height) {
          wrong_size = absl::StrCat(w, "x", h, is_float ? " float" : "");
        } else {
          pil_rows::WriteRows(*image.rgb, write, dst_mode == "RGB", PilRows(dst_rows));
        }
      }
    }
  }
  if (!status.ok()) RaiseValue(std::string(status.message()));
  if (!wrong_size.empty()) {
    RaiseValue(absl::StrCat("_pil_run: the ops give ", wrong_size, ", not the ", dst_width,
                            "x", dst_height, " ", dst_mode, " image given"));
  }
  if (dst_rows != 0) return py::none();
  if (is_float) {
    py::array_t<float> out({int64_t{3}, int64_t{image.height}, int64_t{image.width}});
    std::memcpy(out.mutable_data(), image.chw, sizeof(float) * 3 * image.height * image.width);
    return std::move(out);
  }
  const Image& rgb = *image.rgb;
  py::array_t<uint8_t> out({int64_t{rgb.height}, int64_t{rgb.width}, int64_t{3}});
  if (!rgb.pixels.empty()) std::memcpy(out.mutable_data(), rgb.pixels.data(), rgb.pixels.size());
  return std::move(out);
}

// PixelBuffer is a bytearray of n bytes left unwritten (PyByteArray_FromStringAndSize
// with no source: malloc's memory as it comes), for a new PIL image's rows that a
// native pass then writes whole (_eager.py's _new_pil). A numpy array would do, but
// numpy advises huge pages on arrays of 4 MiB and more, which cost a 1024² RGB image
// ~23 us a call here in faults.
py::object PixelBuffer(int64_t n) {
  if (n < 0 || n > (int64_t{1} << 34)) RaiseValue(absl::StrCat("_pixel_buffer: ", n, " bytes"));
  PyObject* buffer = PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n));
  if (buffer == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(buffer);
}

// RowsOf is the row-pointer array of a PIL core image (its unsafe_ptrs' "image" entry).
uint8_t* const* RowsOf(py::handle core) {
  for (py::handle entry : core.attr("unsafe_ptrs")) {
    const py::tuple pair = py::reinterpret_borrow<py::tuple>(entry);
    if (pair.size() == 2 && py::cast<std::string>(pair[0]) == "image") {
      return PilRows(py::cast<uintptr_t>(pair[1]));
    }
  }
  RaiseValue("_pil_gather: this Pillow's images have no row pointers (unsafe_ptrs)");
}

// PilGather is an eager call of one gather op (Op::Gather: a flip, a crop) on a PIL image
// of mode RGB or L, in one native call, for the classes whose whole work that is (as
// PIL's own transpose and crop): the source's rows are copied through the op's maps
// straight into a new image's rows (a bytearray that Image.core.map_buffer maps, so
// nothing clears it first), the GIL released for the copy; the new image is
// img._new(...) of it, as PIL's transpose and crop make theirs. It saves the ~5 us of
// Python the general path (_eager.State) spends per call, which is what a 224² flip or
// a 224² crop of a 1024² image costs besides its one copy (docs/performance.md).
py::object PilGather(const EagerOp& op, const std::vector<double>& params, py::handle img,
                     py::handle map_buffer) {
  py::object core = img.attr("im");
  if (core.is_none()) {  // An opened file not decoded yet.
    img.attr("load")();
    core = img.attr("im");
  }
  const std::string mode = py::cast<std::string>(core.attr("mode"));
  CheckPilMode(mode);
  const py::tuple size = core.attr("size");
  const int width = py::cast<int>(size[0]);
  const int height = py::cast<int>(size[1]);
  OpParams drawn;
  for (double v : params) drawn.Push(v);
  augment::GatherMaps g;
  if (!op.op().Gather(drawn, width, height, &g)) {
    RaiseValue(absl::StrCat("_pil_gather: ", op.text(), " is not a gather for these parameters"));
  }
  const Maps maps = pil_rows::WholeThen(std::move(g), width, height);
  const int out_w = static_cast<int>(maps.g.x_src.size());
  const int out_h = static_cast<int>(maps.g.y_src.size());
  const bool rgb = mode == "RGB";
  py::object buffer = PixelBuffer(int64_t{out_w} * out_h * (rgb ? 4 : 1));
  py::object out = map_buffer(buffer, py::make_tuple(out_w, out_h), "raw", 0,
                              py::make_tuple(mode, 0, 1));
  uint8_t* const* src = RowsOf(core);
  uint8_t* const* dst = RowsOf(out);
  {
    python::ReleasedGil release;  // The caller holds img; `out` is ours.
    pil_rows::CopyRows(src, rgb, maps, dst);
  }
  return img.attr("_new")(out);
}

}  // namespace

void RegisterEager(py::module_& m) {
  py::class_<EagerOp>(m, "_EagerOp")
      .def(py::init<const std::string&>(), py::arg("text"))
      .def_property_readonly("name", [](const EagerOp& o) { return o.op().name(); })
      .def_property_readonly("text", &EagerOp::text)
      .def_property_readonly("p", &EagerOp::p)
      .def_property_readonly("reads_float", &EagerOp::reads_float)
      .def_property_readonly("writes_float", &EagerOp::writes_float)
      .def("output_size", &EagerOp::OutputSize, py::arg("width"), py::arg("height"))
      .def("gather_maps", &EagerOp::GatherMaps, py::arg("params"), py::arg("width"),
           py::arg("height"))
      .def("loader_draw", &EagerOp::LoaderDraw, py::arg("width"), py::arg("height"),
           py::arg("seed"), py::arg("epoch"), py::arg("index"), py::arg("view"),
           py::arg("position"));
  m.def("_eager_run", &EagerRun, py::arg("ops"), py::arg("params"), py::arg("image"));
  m.def("_pil_read", &PilRead, py::arg("rows"), py::arg("mode"), py::arg("image_width"),
        py::arg("image_height"), py::arg("left"), py::arg("top"), py::arg("width"),
        py::arg("height"));
  m.def("_pixel_buffer", &PixelBuffer, py::arg("n"));
  m.def("_pil_gather", &PilGather, py::arg("op"), py::arg("params"), py::arg("img"),
        py::arg("map_buffer"));
  m.def("_pil_write", &PilWrite, py::arg("rows"), py::arg("mode"), py::arg("pixels"));
  m.def("_pil_run", &PilRun, py::arg("ops"), py::arg("params"), py::arg("rows"),
        py::arg("mode"), py::arg("image_width"), py::arg("image_height"), py::arg("left"),
        py::arg("top"), py::arg("width"), py::arg("height"), py::arg("dst_rows"),
        py::arg("dst_mode"), py::arg("dst_width"), py::arg("dst_height"));
}

}  // namespace python_internal
}  // namespace flowloader
