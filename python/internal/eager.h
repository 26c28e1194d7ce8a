// eager.h: flowloader.transforms called on one image (docs/python.md, "Calling
// transforms directly"): the native ops of stages/augment/ops/, run on an array the
// caller hands over, with parameters drawn on the Python side (torch's generator, as
// torchvision's classes draw them).
//
//   _EagerOp(text)              one op as a view's list writes it ("color_jitter(hue=0.1)");
//                               a bad op or argument raises ValueError (the op's one line).
//   _EagerOp.reads_float / writes_float: the pixel forms (only normalize and
//                               random_erasing touch floats).
//   _EagerOp.output_size(w, h)  the size after the op ((0, 0): it depends on the pixels).
//   _EagerOp.loader_draw(w, h, seed, epoch, index, view, position)
//                               -> (applied, params): what the loader's view `view` draws
//                               for op `position` of its list on sample `index`, so a test
//                               can hand the eager call the loader's parameters.
//   _eager_run(ops, params, image) -> array
//                               runs ops in order, params[i] a list of floats (the op's
//                               get_params values in torchvision's order) or None (the op
//                               is skipped: its p's draw failed). image: uint8 [H, W, 3]
//                               or float32 [3, H, W], C-contiguous; the result is a new
//                               array of the form the last op writes. The GIL is released
//                               while the ops run.
//   _pil_run(ops, params, rows, mode, image_w, image_h, left, top, w, h, dst_rows,
//            dst_mode, dst_w, dst_h) -> None or array
//                               _eager_run on the box of a PIL image (RGB or L), read
//                               through its row pointers, written into the new PIL image
//                               dst (or, dst_rows 0, returned as _eager_run's array); the
//                               ops' gathers (Op::Gather: flips, crops, pads) at either end
//                               fold into the read and the write (pil_rows.h); after the
//                               leading gathers, a run of point ops (Op::PointTables) is
//                               one table pass from the source rows into dst, and a last
//                               op with Op::ApplyRows (the nearest warps) writes dst from
//                               the source rows itself.
//   _pixel_buffer(n)            a bytearray of n unwritten bytes (a new PIL image's rows).
//   _pil_gather(op, params, img, map_buffer) -> PIL image
//                               one gather op (a flip, a crop) on a PIL image (RGB or L)
//                               in one call: its rows copied through the op's maps into a
//                               new image (map_buffer: PIL's Image.core.map_buffer), the
//                               Python fast path of the flip and crop classes.
//   _pil_read(rows, mode, image_w, image_h, left, top, w, h) / _pil_write(rows, mode, pixels)
//                               a box of a PIL image (RGB or L) to uint8 [h, w, 3], and
//                               uint8 [H, W, 3] into a PIL image, in one pass through its
//                               row pointers (Pillow's unsafe_ptrs).
//
// The pixels are the loader's: the same Op::Apply on the same bytes, so an eager call
// with the loader's parameters is byte-identical to the loader's per-sample output
// (python/tests/test_eager.py checks it).
//
// Thread-safety: an _EagerOp is immutable; _eager_run may run on many threads at once
// (each thread keeps its own working images, sized by its largest call so far).
#ifndef FLOWLOADER_PYTHON_INTERNAL_EAGER_H_
#define FLOWLOADER_PYTHON_INTERNAL_EAGER_H_

#include <pybind11/pybind11.h>

namespace flowloader {
namespace python_internal {

// RegisterEager adds _EagerOp and _eager_run to the extension module `m`.
void RegisterEager(pybind11::module_& m);

}  // namespace python_internal
}  // namespace flowloader

#endif  // FLOWLOADER_PYTHON_INTERNAL_EAGER_H_
