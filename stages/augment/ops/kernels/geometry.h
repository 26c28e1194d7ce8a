// geometry.h: torchvision 0.14's geometric functionals on PIL RGB images, restated on
// interleaved uint8 RGB with PIL's own arithmetic (Image.transform's affine sampling).
//
// Shared by the geometry ops (ops/random_affine.cc, ...) and the augment policies
// (ops/trivial_augment_wide.cc, ...).
//
// Thread-safety: pure functions of their arguments.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_GEOMETRY_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_GEOMETRY_H_

#include <array>
#include <cstdint>

#include "stages/augment/ops/op.h"
#include "stages/augment/transform.h"
#include "stages/core/image.h"

namespace flowloader::augment::kernels {

// F.affine(img, angle, [translate_x, translate_y], scale, [shear_x, shear_y],
// interpolation, fill) about the image centre: PIL's Image.transform(AFFINE) with the
// inverse matrix torchvision computes (_get_inverse_affine_matrix). Writes `dst` at the
// size of `src`; pixels from outside are `fill`.
void Affine(const Image& src, double angle, double translate_x, double translate_y,
            double scale, double shear_x, double shear_y, Interpolation interpolation,
            const std::array<uint8_t, 3>& fill, Image* dst, const double* center = nullptr);

// F.rotate(img, angle, interpolation, expand, center, fill): PIL's Image.rotate.
// `center` (Affine's too): null for the image centre, else [x, y] in pixels (PIL's; a
// rotation with a centre is never one of PIL's transposes).
// With `expand` the output grows to hold the whole rotated image.
void Rotate(const Image& src, double angle, Interpolation interpolation, bool expand,
            const std::array<uint8_t, 3>& fill, Image* dst, const double* center = nullptr);

// AffinePlane and RotatePlane move a one-channel plane (an instance mask, a label map:
// Image with channels 1) as Affine and Rotate move an image of its size with the same
// arguments, by nearest neighbour (PIL's NEAREST on an "L" image, the same inverse map):
// every output byte is one source byte, or `fill` where the map falls outside.
void AffinePlane(const Image& src, double angle, double translate_x, double translate_y,
                 double scale, double shear_x, double shear_y, uint8_t fill, Image* dst,
                 const double* center = nullptr);
void RotatePlane(const Image& src, double angle, bool expand, uint8_t fill, Image* dst,
                 const double* center = nullptr);

// AffineInverse and RotateInverse write the inverse map (output coordinates to source
// coordinates, pixel centres at + 0.5) that Affine and Rotate resample a width × height
// image with, and the output's size: what moves targets exactly as the pixels move
// (Rotate's transposes are this map too, but for PIL's rounding to 15 decimals).
void AffineInverse(int width, int height, double angle, double translate_x,
                   double translate_y, double scale, double shear_x, double shear_y,
                   const double* center, double m[6]);
void RotateInverse(int width, int height, double angle, bool expand, const double* center,
                   double m[6], int* out_width, int* out_height);

// AffineNearestRows and RotateNearestRows are Affine and Rotate with kNearest on
// row-pointer images (op.h's RowImage: Pillow's RGB rows of 4 bytes a pixel, or L rows
// of 1, whose pixels are then `fill[0]` where outside): the same map and engines, each
// pixel copied whole. `dst` must be the size they write. false: not these forms or
// sizes, or a rotation Image.rotate makes by a transpose (0, 90, 180, 270 degrees); then
// nothing is written.
bool AffineNearestRows(const RowImage& src, double angle, double translate_x,
                       double translate_y, double scale, double shear_x, double shear_y,
                       const std::array<uint8_t, 3>& fill, const RowImage& dst,
                       const double* center = nullptr);
bool RotateNearestRows(const RowImage& src, double angle, bool expand,
                       const std::array<uint8_t, 3>& fill, const RowImage& dst,
                       const double* center = nullptr);

// RotatedSize is the size Rotate writes for a width × height image (PIL's, with expand
// the rotated corners' bounding box rounded outwards).
void RotatedSize(int width, int height, double angle, bool expand, int* out_width,
                 int* out_height, const double* center = nullptr);

// _get_perspective_coeffs(startpoints, endpoints): the 8 coefficients of the map from
// output to source pixels, for four (x, y) point pairs given as x0, y0, ..., x3, y3.
// Returns false (coeffs unset) where the points do not fix one map (a 1-pixel side:
// torchvision's lstsq raises there).
bool PerspectiveCoeffs(const double start[8], const double end[8], double coeffs[8]);

// F.perspective on a PIL image with those coefficients: PIL's
// Image.transform(PERSPECTIVE, coeffs, interpolation, fillcolor=fill). Writes `dst` at
// the size of `src`; pixels whose centre maps outside the source are `fill`.
void Perspective(const Image& src, const double coeffs[8], Interpolation interpolation,
                 const std::array<uint8_t, 3>& fill, Image* dst);

// SetAffineAvx2OnlyForTesting(true) keeps Affine and Rotate's bilinear and bicubic warps,
// and Perspective's bilinear one, to their AVX2 kernels where the CPU has AVX-512, so
// that a test compares both with the portable path.
void SetAffineAvx2OnlyForTesting(bool avx2_only);

// F.vflip: mirrors the rows, in place.
void VerticalFlip(Image& img);

// F.hflip: mirrors each row's pixels, in place (flip.cc: SSSE3 shuffles, 16 pixels at a
// time).
void HorizontalFlip(Image& img);

// F.gaussian_blur(img, [kernel_x, kernel_y], [sigma_x, sigma_y]) on a PIL image: the
// tensor path torchvision takes (float kernel, reflect padding, rounded back to uint8).
void GaussianBlur(const Image& src, int kernel_x, int kernel_y, double sigma_x,
                  double sigma_y, Image* dst);

// PIL's ImageFilter.GaussianBlur(radius) (Image.filter -> ImagingGaussianBlur, three box
// passes along the rows, three along the columns), byte for byte as Pillow 9.4. `radius`
// is the C float Pillow receives. Writes `dst` (not `src`) at the size of `src`.
void PilGaussianBlur(const Image& src, float radius, Image* dst);

namespace internal {
// SetPilBlurNoAvx512ForTesting(true) keeps PilGaussianBlur on its AVX2 path where the CPU
// has AVX-512 (with colour_internal.h's SetPortableForTesting, a test compares all three).
void SetPilBlurNoAvx512ForTesting(bool no_avx512);
// SetPilBlurNoVnniForTesting(true) keeps it off the AVX-512 path that needs VNNI and
// VBMI (on the plain AVX-512 one where the CPU has AVX-512).
void SetPilBlurNoVnniForTesting(bool no_vnni);
}  // namespace internal

// PilBoxRadius is Pillow's _gaussian_blur_radius(radius, 3): the box radius (with its
// fractional part) of each of the three passes.
float PilBoxRadius(float radius);

}  // namespace flowloader::augment::kernels

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_GEOMETRY_H_
