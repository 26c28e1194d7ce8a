// float_eager.h: flowloader.transforms called on a float tensor (docs/python.md,
// "Calling transforms directly"): torchvision 0.14's tensor kernels
// (stages/augment/float/float_ops.h) on a float32 or float64 [C, H, W] numpy array (the
// tensor's own memory, C-contiguous), the GIL released while they run. _float.py picks
// the kernel and its arguments from the op and the parameters drawn.
//
//   _float_gather(image, x_src, y_src, fill) -> array
//                       a pixel move (flip, crop, pad: an _EagerOp's gather_maps) of an
//                       array of any dtype [C, H, W]; fill: one number per channel.
//   _float_resize(image, height, width, mode, antialias) -> array
//                       interpolate(mode in nearest / bilinear / bicubic,
//                       align_corners=False, antialias).
//   _float_colour(name, image, args) -> array
//                       one colour kernel by name: grayscale (gives [1, H, W]),
//                       brightness, contrast, saturation, hue (args: the factor),
//                       gamma (gamma, gain), sharpness (factor), invert, solarize
//                       (threshold), autocontrast, gaussian_blur (kernel_x, kernel_y,
//                       sigma_x, sigma_y). A bad name or argument count raises
//                       ValueError.
//   _float_warp(image, kind, coeffs, height, width, mode, fill) -> array
//                       grid_sample (nearest / bilinear, zeros, align_corners=False) on
//                       torchvision's grid: kind "affine" (coeffs: the 6 of the inverse
//                       matrix) or "perspective" (its 8 coefficients), a height × width
//                       output; fill None or one value per channel (the mask's fill).
//   _float_elastic(image, noise, alpha, sigma, mode, fill) -> array
//                       ElasticTransform of a float32 image: its grid from get_params'
//                       two torch.rand planes (noise: 2 × H × W float32), grid_sample with
//                       the fill mask (fill: one value per channel).
//
// Thread-safety: every call allocates its own output; calls may run on many threads.
#ifndef FLOWLOADER_PYTHON_INTERNAL_FLOAT_EAGER_H_
#define FLOWLOADER_PYTHON_INTERNAL_FLOAT_EAGER_H_

#include <pybind11/pybind11.h>

namespace flowloader {
namespace python_internal {

// RegisterFloatEager adds the _float_* functions above to `m`.
void RegisterFloatEager(pybind11::module_& m);

}  // namespace python_internal
}  // namespace flowloader

#endif  // FLOWLOADER_PYTHON_INTERNAL_FLOAT_EAGER_H_
