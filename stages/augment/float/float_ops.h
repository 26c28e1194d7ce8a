// float_ops.h: torchvision 0.14's tensor kernels (transforms/functional_tensor.py and
// the torch ops they call) on a float [C, H, W] image, for flowloader.transforms called
// on a float tensor (python/internal/float_eager.cc; docs/python.md, "Calling transforms
// directly"). One kernel per file; each is instantiated for float and double and does
// its arithmetic in that type, in torch's order, so that the results are torch's within
// rounding (python/tests/test_eager_float.py states the bounds).
//
// The pixel moves (flips, crops, pads) are not here: they are the uint8 ops' own
// Op::Gather maps applied to planes of any element size (GatherPlanes).
//
// Thread-safety: pure functions of their arguments; `in` and `out` do not overlap unless
// said.
#ifndef FLOWLOADER_STAGES_AUGMENT_FLOAT_FLOAT_OPS_H_
#define FLOWLOADER_STAGES_AUGMENT_FLOAT_FLOAT_OPS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/augment/float/chw.h"

namespace flowloader::augment::floats {

// GatherPlanes: out pixel (x, y) of each of `channels` planes is in pixel (x_src[x],
// y_src[y]), or fill[c] (elem_size bytes per channel) where either is -1. Elements are
// moved as bytes, so any dtype gives exact results.
void GatherPlanes(const void* in, int channels, int in_h, int in_w, size_t elem_size,
                  const int* x_src, int out_w, const int* y_src, int out_h, const void* fill,
                  void* out);

// Interpolation of torch.nn.functional.interpolate as torchvision's F.resize uses it.
enum class Mode { kNearest, kBilinear, kBicubic };

// Resize: interpolate(mode, align_corners=False, antialias=False) from in to out's size
// (ATen's upsample kernels: bilinear and bicubic (A = -0.75) weights per axis, nearest
// floor(dst * in / out)). in and out have the same channels.
template <typename T>
void Resize(const Chw<const T>& in, const Chw<T>& out, Mode mode);
// ResizeAntialias: interpolate(..., antialias=True), bilinear or bicubic (ATen's
// _upsample_*_aa: PIL-like support scaled by the ratio, a = -0.5 for bicubic), width
// first, then height, each axis only where its size changes.
template <typename T>
void ResizeAntialias(const Chw<const T>& in, const Chw<T>& out, Mode mode);

// rgb_to_grayscale of 3 channels: 0.2989 R + 0.587 G + 0.114 B, into one plane `out`.
template <typename T>
void Grayscale(const Chw<const T>& in, T* out);
// adjust_brightness: _blend(img, 0, factor). In place allowed (in.data == out.data).
template <typename T>
void AdjustBrightness(const Chw<const T>& in, const Chw<T>& out, double factor);
// adjust_contrast: _blend(img, mean of the grayscale image (of the image, 1 channel)).
template <typename T>
void AdjustContrast(const Chw<const T>& in, const Chw<T>& out, double factor);
// adjust_saturation (3 channels): _blend(img, grayscale(img)).
template <typename T>
void AdjustSaturation(const Chw<const T>& in, const Chw<T>& out, double factor);
// adjust_hue (3 channels): _rgb2hsv, h = (h + factor) mod 1, _hsv2rgb. In place allowed.
template <typename T>
void AdjustHue(const Chw<const T>& in, const Chw<T>& out, double hue_factor);
// adjust_gamma on floats: clamp(gain * img ** gamma, 0, 1). In place allowed.
template <typename T>
void AdjustGamma(const Chw<const T>& in, const Chw<T>& out, double gamma, double gain);
// adjust_sharpness: _blend(img, the 3x3 [1 1 1; 1 5 1; 1 1 1] / 13 smoothing inside a
// one-pixel border that keeps img); images of a side <= 2 are copied.
template <typename T>
void AdjustSharpness(const Chw<const T>& in, const Chw<T>& out, double factor);
// invert on floats: 1 - img. In place allowed.
template <typename T>
void Invert(const Chw<const T>& in, const Chw<T>& out);
// solarize on floats: img >= threshold ? 1 - img : img. In place allowed.
template <typename T>
void Solarize(const Chw<const T>& in, const Chw<T>& out, double threshold);
// autocontrast on floats: each channel (img - min) / (max - min) clamped to [0, 1]; a
// flat channel (max == min) kept. In place allowed.
template <typename T>
void Autocontrast(const Chw<const T>& in, const Chw<T>& out);
// gaussian_blur: the kernel of kernel_x × kernel_y (odd) taps with sigma_x, sigma_y
// (torchvision's float32 kernel), the image reflect-padded by half a kernel. The
// caller checks that each half kernel is less than its side (torch's reflect pad's
// limit); ReflectPadError says it in one line.
template <typename T>
void GaussianBlur(const Chw<const T>& in, const Chw<T>& out, int kernel_x, int kernel_y,
                  double sigma_x, double sigma_y);
std::string ReflectPadError(int kernel_x, int kernel_y, int height, int width);

// AffineGrid: _gen_affine_grid of the 2 x 3 inverse matrix `theta` (torchvision's
// _get_inverse_affine_matrix, centred) for a w × h input and an ow × oh output: oh × ow
// (x, y) points in [-1, 1], into `grid`.
template <typename T>
void AffineGrid(const double theta[6], int w, int h, int ow, int oh, T* grid);
// PerspectiveGrid: _perspective_grid of the 8 perspective coefficients, ow × oh.
template <typename T>
void PerspectiveGrid(const double coeffs[8], int ow, int oh, T* grid);
// ElasticGrid: ElasticTransform's sampling grid (identity + displacement, float32) from
// get_params' two torch.rand planes `noise` (dx's, then dy's, height × width each), for
// alpha and sigma [x, y]; "" or, where torch's reflect pad of the blur cannot pad the
// image, ReflectPadError's line (nothing written).
std::string ElasticGrid(const float* noise, int height, int width, const double alpha[2],
                        const double sigma[2], float* grid);
// GridSample: grid_sample(mode nearest or bilinear, padding zeros, align_corners=False)
// of `in` at out's oh × ow grid points; with `fill` (one value per channel, or null for
// none), _apply_grid_transform's fill of what the mask of ones says lies outside.
template <typename T>
void GridSample(const Chw<const T>& in, const Chw<T>& out, const T* grid, Mode mode,
                const double* fill);

}  // namespace flowloader::augment::floats

#endif  // FLOWLOADER_STAGES_AUGMENT_FLOAT_FLOAT_OPS_H_
