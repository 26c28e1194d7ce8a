// float_eager.cc: the float kernels called from Python (float_eager.h).
#include "python/internal/float_eager.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "python/internal/worker_gil.h"
#include "stages/augment/float/float_ops.h"

namespace py = pybind11;

namespace flowloader {
namespace python_internal {
namespace {

namespace fl = augment::floats;

[[noreturn]] void Raise(const std::string& message) { throw py::value_error(message); }

// The size limits of eager.cc (16384 a side).
constexpr int64_t kMaxSide = 1 << 14;

// Shape is a [C, H, W] array's channels, height and width, checked.
struct Shape {
  int c, h, w;
};

Shape CheckChw(const py::array& image, const char* what) {
  if (image.ndim() != 3 || !(image.flags() & py::array::c_style)) {
    Raise(absl::StrCat(what, ": a C-contiguous [C, H, W] array expected"));
  }
  const int64_t c = image.shape(0), h = image.shape(1), w = image.shape(2);
  if (c < 1 || h < 1 || w < 1 || h > kMaxSide || w > kMaxSide || c > 4) {
    Raise(absl::StrCat(what, ": an image of 1 to 4 channels and sides in [1, ", kMaxSide,
                       "] expected, got ", c, "x", h, "x", w));
  }
  return {static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)};
}

bool IsDouble(const py::array& image, const char* what) {
  if (py::isinstance<py::array_t<double>>(image)) return true;
  if (py::isinstance<py::array_t<float>>(image)) return false;
  Raise(absl::StrCat(what, ": a float32 or float64 array expected"));
}

template <typename T>
fl::Chw<const T> In(const py::array& a, Shape s) {
  return {static_cast<const T*>(a.data()), s.c, s.h, s.w};
}

template <typename T>
fl::Chw<T> Out(py::array& a) {
  return {static_cast<T*>(a.mutable_data()), static_cast<int>(a.shape(0)),
          static_cast<int>(a.shape(1)), static_cast<int>(a.shape(2))};
}

py::array NewLike(const py::array& image, int c, int h, int w) {
  return py::array(image.dtype(), std::vector<py::ssize_t>{c, h, w});
}

py::array FloatGather(const py::array& image, const py::array_t<int>& x_src,
                      const py::array_t<int>& y_src, const std::vector<double>& fill) {
  const Shape s = CheckChw(image, "_float_gather");
  const size_t elem = static_cast<size_t>(image.itemsize());
  if (elem != 1 && elem != 2 && elem != 4 && elem != 8) {
    Raise(absl::StrCat("_float_gather: elements of 1, 2, 4 or 8 bytes, got ", elem));
  }
  const int out_w = static_cast<int>(x_src.size()), out_h = static_cast<int>(y_src.size());
  if (out_w < 1 || out_h < 1 || out_w > kMaxSide || out_h > kMaxSide) {
    Raise(absl::StrCat("_float_gather: an output of ", out_w, "x", out_h));
  }
  // Checked through the raw pointers: array_t::at's per-element checks were ~2 µs of a
  // 224² flip's ~15.
  const int* xs = x_src.data();
  const int* ys = y_src.data();
  for (int i = 0; i < out_w; ++i) {
    if (xs[i] < -1 || xs[i] >= s.w) Raise("_float_gather: x_src outside the image");
  }
  for (int i = 0; i < out_h; ++i) {
    if (ys[i] < -1 || ys[i] >= s.h) Raise("_float_gather: y_src outside the image");
  }
  if (fill.size() != static_cast<size_t>(s.c)) {
    Raise(absl::StrCat("_float_gather: ", fill.size(), " fill values for ", s.c, " channels"));
  }
  // The fill values as the array's own dtype: float and double here, numpy's conversion
  // for other sizes (importing numpy per call cost ~1 µs).
  std::vector<float> fill32(fill.begin(), fill.end());
  py::array fills;
  const void* f = fill.data();
  if (py::isinstance<py::array_t<float>>(image)) {
    f = fill32.data();
  } else if (!py::isinstance<py::array_t<double>>(image)) {
    fills = py::module_::import("numpy").attr("asarray")(fill, image.dtype());
    f = fills.data();
  }
  py::array out = NewLike(image, s.c, out_h, out_w);
  const void* in = image.data();
  void* dst = out.mutable_data();
  {
    python::ReleasedGil release;
    fl::GatherPlanes(in, s.c, s.h, s.w, elem, xs, out_w, ys, out_h, f, dst);
  }
  return out;
}

fl::Mode ModeOf(const std::string& mode) {
  if (mode == "nearest") return fl::Mode::kNearest;
  if (mode == "bilinear") return fl::Mode::kBilinear;
  if (mode == "bicubic") return fl::Mode::kBicubic;
  Raise(absl::StrCat("_float_resize: mode nearest, bilinear or bicubic, got ", mode));
}

// Strided is image as a Chw of T that may be a crop of a larger array (positive strides,
// whole elements, each row dense): resize reads it in place.
template <typename T>
fl::Chw<const T> Strided(const py::array& a, Shape s) {
  fl::Chw<const T> in = In<T>(a, s);
  in.row_stride = static_cast<size_t>(a.strides(1)) / sizeof(T);
  in.plane_stride = static_cast<size_t>(a.strides(0)) / sizeof(T);
  return in;
}

// CheckStrided is CheckChw for an array whose rows are dense but that may be a crop.
Shape CheckStrided(const py::array& image, const char* what) {
  if (image.ndim() != 3) Raise(absl::StrCat(what, ": a [C, H, W] array expected"));
  const py::ssize_t item = image.itemsize();
  if (image.strides(2) != item || image.strides(1) < item * image.shape(2) ||
      image.strides(0) < image.strides(1) * image.shape(1) || image.strides(1) % item != 0 ||
      image.strides(0) % item != 0) {
    Raise(absl::StrCat(what, ": an array with dense rows and positive strides expected"));
  }
  const int64_t c = image.shape(0), h = image.shape(1), w = image.shape(2);
  if (c < 1 || h < 1 || w < 1 || h > kMaxSide || w > kMaxSide || c > 4) {
    Raise(absl::StrCat(what, ": an image of 1 to 4 channels and sides in [1, ", kMaxSide,
                       "] expected, got ", c, "x", h, "x", w));
  }
  return {static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)};
}

template <typename T>
void ResizeAs(const py::array& image, Shape s, py::array& out, fl::Mode mode, bool antialias) {
  const fl::Chw<const T> in = Strided<T>(image, s);
  const fl::Chw<T> o = Out<T>(out);
  python::ReleasedGil release;
  if (antialias) {
    fl::ResizeAntialias(in, o, mode);
  } else {
    fl::Resize(in, o, mode);
  }
}

py::array FloatResize(const py::array& image, int height, int width, const std::string& mode,
                      bool antialias) {
  const Shape s = CheckStrided(image, "_float_resize");
  const bool is_double = IsDouble(image, "_float_resize");
  const fl::Mode m = ModeOf(mode);
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide) {
    Raise(absl::StrCat("_float_resize: an output of ", width, "x", height));
  }
  if (antialias && m == fl::Mode::kNearest) {
    Raise("Antialias option is supported for bilinear and bicubic interpolation modes only");
  }
  py::array out = NewLike(image, s.c, height, width);
  if (is_double) {
    ResizeAs<double>(image, s, out, m, antialias);
  } else {
    ResizeAs<float>(image, s, out, m, antialias);
  }
  return out;
}

// Colour runs kernel `name` with `args` on in → out (GIL released by the caller).
template <typename T>
void Colour(const std::string& name, const std::vector<double>& a, const fl::Chw<const T>& in,
            const fl::Chw<T>& out) {
  if (name == "grayscale") return fl::Grayscale(in, out.data);
  if (name == "brightness") return fl::AdjustBrightness(in, out, a[0]);
  if (name == "contrast") return fl::AdjustContrast(in, out, a[0]);
  if (name == "saturation") return fl::AdjustSaturation(in, out, a[0]);
  if (name == "hue") return fl::AdjustHue(in, out, a[0]);
  if (name == "gamma") return fl::AdjustGamma(in, out, a[0], a[1]);
  if (name == "sharpness") return fl::AdjustSharpness(in, out, a[0]);
  if (name == "invert") return fl::Invert(in, out);
  if (name == "solarize") return fl::Solarize(in, out, a[0]);
  if (name == "autocontrast") return fl::Autocontrast(in, out);
  fl::GaussianBlur(in, out, static_cast<int>(a[0]), static_cast<int>(a[1]), a[2], a[3]);
}

// ArgCount is how many numbers kernel `name` takes (-1: no such kernel).
int ArgCount(const std::string& name) {
  if (name == "grayscale" || name == "invert" || name == "autocontrast") return 0;
  if (name == "brightness" || name == "contrast" || name == "saturation" || name == "hue" ||
      name == "sharpness" || name == "solarize") {
    return 1;
  }
  if (name == "gamma") return 2;
  if (name == "gaussian_blur") return 4;
  return -1;
}

py::array FloatColour(const std::string& name, const py::array& image,
                      const std::vector<double>& args) {
  const Shape s = CheckChw(image, "_float_colour");
  const bool is_double = IsDouble(image, "_float_colour");
  const int count = ArgCount(name);
  if (count < 0) Raise(absl::StrCat("_float_colour: no kernel ", name));
  if (args.size() != static_cast<size_t>(count)) {
    Raise(absl::StrCat("_float_colour: ", name, " takes ", count, " numbers, got ", args.size()));
  }
  const bool rgb_only = name == "grayscale" || name == "saturation" || name == "hue";
  if (rgb_only && s.c != 3) {
    Raise(absl::StrCat("_float_colour: ", name, " takes 3 channels, got ", s.c));
  }
  if (name == "gaussian_blur") {
    const int kx = static_cast<int>(args[0]), ky = static_cast<int>(args[1]);
    if (kx < 1 || ky < 1 || kx % 2 == 0 || ky % 2 == 0 || !(args[2] > 0) || !(args[3] > 0)) {
      Raise(absl::StrCat("_float_colour: gaussian_blur takes odd positive kernel sizes and "
                         "positive sigmas, got ", kx, ", ", ky, ", ", args[2], ", ", args[3]));
    }
    const std::string error = fl::ReflectPadError(kx, ky, s.h, s.w);
    if (!error.empty()) Raise(error);
  }
  py::array out = NewLike(image, name == "grayscale" ? 1 : s.c, s.h, s.w);
  if (is_double) {
    const fl::Chw<const double> in = In<double>(image, s);
    const fl::Chw<double> o = Out<double>(out);
    python::ReleasedGil release;
    Colour(name, args, in, o);
  } else {
    const fl::Chw<const float> in = In<float>(image, s);
    const fl::Chw<float> o = Out<float>(out);
    python::ReleasedGil release;
    Colour(name, args, in, o);
  }
  return out;
}

template <typename T>
void WarpAs(const py::array& image, Shape s, py::array& out, bool affine,
            const std::vector<double>& coeffs, fl::Mode mode, const double* fill) {
  const fl::Chw<const T> in = In<T>(image, s);
  const fl::Chw<T> o = Out<T>(out);
  python::ReleasedGil release;
  std::vector<T> grid(static_cast<size_t>(o.height) * o.width * 2);
  if (affine) {
    fl::AffineGrid<T>(coeffs.data(), s.w, s.h, o.width, o.height, grid.data());
  } else {
    fl::PerspectiveGrid<T>(coeffs.data(), o.width, o.height, grid.data());
  }
  fl::GridSample<T>(in, o, grid.data(), mode, fill);
}

py::array FloatWarp(const py::array& image, const std::string& kind,
                    const std::vector<double>& coeffs, int height, int width,
                    const std::string& mode, const std::optional<std::vector<double>>& fill) {
  const Shape s = CheckChw(image, "_float_warp");
  const bool is_double = IsDouble(image, "_float_warp");
  const bool affine = kind == "affine";
  if (!affine && kind != "perspective") Raise("_float_warp: kind affine or perspective");
  if (coeffs.size() != (affine ? 6u : 8u)) {
    Raise(absl::StrCat("_float_warp: ", kind, " takes ", affine ? 6 : 8, " coefficients, got ",
                       coeffs.size()));
  }
  const fl::Mode m = ModeOf(mode);
  if (m == fl::Mode::kBicubic) Raise("_float_warp: mode nearest or bilinear");
  if (height < 1 || width < 1 || height > kMaxSide || width > kMaxSide) {
    Raise(absl::StrCat("_float_warp: an output of ", width, "x", height));
  }
  if (fill.has_value() && fill->size() != static_cast<size_t>(s.c)) {
    Raise(absl::StrCat("_float_warp: ", fill->size(), " fill values for ", s.c, " channels"));
  }
  const double* f = fill.has_value() ? fill->data() : nullptr;
  py::array out = NewLike(image, s.c, height, width);
  if (is_double) {
    WarpAs<double>(image, s, out, affine, coeffs, m, f);
  } else {
    WarpAs<float>(image, s, out, affine, coeffs, m, f);
  }
  return out;
}

py::array FloatElastic(const py::array_t<float>& image, const py::array_t<float>& noise,
                       const std::vector<double>& alpha, const std::vector<double>& sigma,
                       const std::string& mode, const std::vector<double>& fill) {
  const Shape s = CheckChw(image, "_float_elastic");
  const fl::Mode m = ModeOf(mode);
  if (m == fl::Mode::kBicubic) Raise("_float_elastic: mode nearest or bilinear");
  if (noise.size() != 2 * static_cast<py::ssize_t>(s.h) * s.w || alpha.size() != 2 ||
      sigma.size() != 2 || !(noise.flags() & py::array::c_style)) {
    Raise(absl::StrCat("_float_elastic: 2 noise planes of ", s.w, "x", s.h,
                       ", 2 alphas and 2 sigmas expected"));
  }
  if (fill.size() != static_cast<size_t>(s.c)) {
    Raise(absl::StrCat("_float_elastic: ", fill.size(), " fill values for ", s.c, " channels"));
  }
  py::array out = NewLike(image, s.c, s.h, s.w);
  const fl::Chw<const float> in = In<float>(image, s);
  const fl::Chw<float> o = Out<float>(out);
  const float* planes = noise.data();
  std::string error;
  {
    python::ReleasedGil release;
    std::vector<float> grid(static_cast<size_t>(s.h) * s.w * 2);
    error = fl::ElasticGrid(planes, s.h, s.w, alpha.data(), sigma.data(), grid.data());
    if (error.empty()) fl::GridSample<float>(in, o, grid.data(), m, fill.data());
  }
  if (!error.empty()) Raise(absl::StrCat("flowloader.transforms: elastic_transform's ", error));
  return out;
}

}  // namespace

void RegisterFloatEager(py::module_& m) {
  m.def("_float_elastic", &FloatElastic, py::arg("image"), py::arg("noise"), py::arg("alpha"),
        py::arg("sigma"), py::arg("mode"), py::arg("fill"));
  m.def("_float_warp", &FloatWarp, py::arg("image"), py::arg("kind"), py::arg("coeffs"),
        py::arg("height"), py::arg("width"), py::arg("mode"), py::arg("fill"));
  m.def("_float_gather", &FloatGather, py::arg("image"), py::arg("x_src"), py::arg("y_src"),
        py::arg("fill"));
  m.def("_float_resize", &FloatResize, py::arg("image"), py::arg("height"), py::arg("width"),
        py::arg("mode"), py::arg("antialias"));
  m.def("_float_colour", &FloatColour, py::arg("name"), py::arg("image"), py::arg("args"));
}

}  // namespace python_internal
}  // namespace flowloader
