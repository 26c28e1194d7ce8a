// view_program.h: one view's op list (torchvision's Compose), parsed, checked and
// compiled into the passes that run per sample.
//
// The list's text is what `flowloader graph` prints and the `transforms` stage's `ops`
// option holds: ops separated by ';', each `name(arg=value, ...)`, a value a number, a
// word or a flat list:
//
//   random_resized_crop(size=224, scale=[0.4, 1.0], interpolation=bicubic);
//   random_horizontal_flip(); color_jitter(brightness=0.4, p=0.8); normalize()
//
// How a list runs:
// - The head. A list that starts with a crop-and-resize (random_resized_crop, or resize
//   then center_crop), optionally followed by random_horizontal_flip, is planned from
//   the image header before decoding (transform.h's Transform): decode then decodes only
//   that box, DCT-scaled, as YCbCr planes where faster. The head hands the rest of the list
//   RGB pixels at its output size on every machine: the decoder's shortcuts stay between
//   the head and the decoder. A list without such a head sees the whole image, decoded
//   at full scale in RGB.
// - The fused head. A bilinear head followed directly by normalize is one pass straight
//   into the batch slot (the `augment` stage's pass, byte for byte).
// - Otherwise the head writes a small uint8 RGB image (224² × 3 = 150 KB, in L2), the
//   pixel ops run on it in place or through one spare buffer, normalize writes the
//   float tensor into the batch slot (without normalize the view is uint8 [H, W, 3]),
//   and tensor ops (random_erasing) then work in the slot.
// - Geometric chains. Ops after the head that only move pixels (flips, crops, pads, zoom
//   out: Op::Gather) around at most one resize (Op::ResizeTo) run as one pass when two or
//   more of them apply (internal/geometry_chain.h): no intermediate canvas, the resize
//   computes only the window the crops keep, masks move once; the same bytes.
// - Several crops. five_crop / ten_crop (internal/multi_crop.h) split the list: the ops
//   before it run once, then each crop runs the ops after it into its own part of the
//   slot, from its own stream (derived from the view's and the crop's index).
// - Randomness: the head draws from the view's stream (what `augment` draws for the same
//   view); op i draws from a stream derived from (view stream, i). Every draw is a pure
//   function of (seed, epoch, sample, view, op position), whatever the thread count.
//
// Thread-safety: a ViewProgram is immutable after Create; Run may be called from any
// number of threads at once (its working images are thread-local). Costs are atomics.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_VIEW_PROGRAM_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_VIEW_PROGRAM_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/transform.h"
#include "stages/core/worker_memory.h"
#include "stages/decode/decoder.h"

namespace flowloader::augment {

// OpText is one op as the list's text writes it: its name and its arguments' texts.
struct OpText {
  std::string name;
  std::map<std::string, std::string> args;
};

// ParseOpListText splits a list's text into its ops (no check of names or values).
absl::StatusOr<std::vector<OpText>> ParseOpListText(const std::string& text);
// OpListText writes ops back as ParseOpListText reads them.
std::string OpListText(const std::vector<OpText>& ops);

// OpCost is one op's accumulated busy time and applications, across threads.
struct OpCost {
  std::atomic<int64_t> busy_ns{0};
  std::atomic<int64_t> runs{0};
};

// OpObserver, given to ViewProgram::Run, hears of every op applied to the sample (for
// a trace): its position (0 for the head, which covers cost_span(0) ops) and its times.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void OpRan(size_t op, int64_t start_nanos, int64_t duration_nanos) const = 0;
};

struct WorkingImages;  // A thread's images (view_program.cc).

class ViewProgram {
 public:
  // Create checks the list: every op known and its arguments valid; pixel ops before
  // normalize, tensor ops after it, at most one normalize; a fixed output size. A failure
  // is one line starting "op N (NAME): " (N from 1), with *failed_op set to N - 1 (-1 for
  // a failure of the whole list), so a spec can point at the op.
  // `bounded`: a list whose output size depends on the image is accepted when its sides
  // have an upper bound (Op::OutputBound: resize with max_size, scale_jitter, ...), for a
  // padded batch (size_divisibility); its shape() is then that bound, each sample's
  // image is written compactly ([C, h, w] or [h, w, C]) at the start of the slot, and
  // Run reports its size. Without a bound it is refused naming the op to bound.
  static absl::StatusOr<std::unique_ptr<ViewProgram>> Create(const std::vector<OpText>& ops,
                                                            int* failed_op = nullptr,
                                                            bool bounded = false);
  // variable is whether the output size depends on the image (Create with bounded).
  bool variable() const { return variable_; }

  // head is the planned crop-and-resize (nullptr for a list that needs the whole image).
  const Transform* head() const { return head_.get(); }

  // The batch tensor one sample of this view writes: float32 [C, H, W] after normalize,
  // else uint8 [H, W, C]. C is 3, or 1 after grayscale(num_output_channels=1) (the ops
  // still work on three equal channels; the view keeps the first) unless normalize's mean
  // or std has three values (torch broadcasts them over the one channel: 3 again).
  bool is_float() const { return normalize_index_ >= 0; }
  std::array<int64_t, 3> shape() const;
  // crops is how many images one sample's view holds: 5 or 10 for a list with five_crop
  // or ten_crop (the view is then [crops] + shape(), the crops stacked), else 1.
  int crops() const { return crop_index_ >= 0 ? crops_ : 1; }
  // output_bytes is the whole view's (every crop's).
  size_t output_bytes() const;
  // CropBytes is one crop's (output_bytes() without several crops).
  size_t CropBytes() const;
  // Working memory per thread besides the slot (two uint8 images at the largest size a
  // pixel op sees; 0 where the list's sizes depend on the image or nothing is kept).
  size_t scratch_bytes() const { return scratch_bytes_; }
  // largest_op is the op whose output is that largest image (-1 when scratch_bytes is 0):
  // its size argument is the knob that shrinks it.
  int largest_op() const { return largest_op_; }

  // set_worker_memory makes Run check, before an op allocates an image whose size only
  // the sample knows (the whole decoded image copied in, a resize of the shorter side, a
  // rotation with expand), that the sample's images fit what one worker may hold, and
  // skip the sample as op_memory otherwise. Call before sharing the program.
  void set_worker_memory(std::shared_ptr<const WorkerMemory> memory) {
    worker_memory_ = std::move(memory);
  }
  // set_planned_mask_bytes is what the memory plan holds for a sample's instance masks
  // (annotation targets: two copies at the most instances and the largest image): an op
  // that moves masks onto a larger canvas (random_zoom_out, rotate with expand) counts
  // the planes beyond it in its check. Call before sharing the program.
  void set_planned_mask_bytes(int64_t bytes) { planned_mask_bytes_ = bytes; }

  // Run writes one sample's view to `dst` (output_bytes() bytes). `plan` is the head's
  // crop drawn from the header (nullptr: the head is planned here, on the whole decoded
  // image); `decoded` must then be what decode made for it. `key` identifies the
  // sample; view_stream is the view's random stream (the head's).
  struct SampleKey {
    uint64_t seed = 0;
    uint64_t epoch = 0;
    uint64_t index = 0;
  };
  // `observer`, when not null, hears of each op applied (see OpObserver). `targets`, when
  // not null, are the sample's detection targets on the canvas the ops after the head
  // start from (the caller moves them through the head, whose geometry the plan holds):
  // each op after the head moves them as it moves the pixels (Op::MoveTargets).
  // `labels`, when not null, is the sample's label map at the decoded image's size: the
  // head and every op that applies move it with the pixels (Create's caller refuses
  // lists with an op that cannot: MovesLabels).
  // `made`, when not null, gets the image size written (shape()'s for a fixed list).
  absl::Status Run(const decode::DecodedImage& decoded, const CropPlan* plan,
                   const SampleKey& key, uint64_t view_stream, void* dst,
                   const OpObserver* observer = nullptr,
                   detection::Targets* targets = nullptr,
                   LabelPlane* labels = nullptr, OpSize* made = nullptr) const;

  // The ops, in order (a head counts as its first op), their names and their costs.
  size_t size() const { return ops_.size(); }
  const std::string& op_name(size_t i) const { return ops_[i]->name(); }
  const Op& op(size_t i) const { return *ops_[i]; }
  const OpCost& cost(size_t i) const { return costs_[i]; }
  // cost_span is how many ops cost(i) covers: the head's ops (with normalize when fused)
  // for op 0 of a list with a head, else 1. The ops it absorbs count nothing themselves.
  size_t cost_span(size_t i) const {
    return i == 0 && head_ != nullptr ? head_ops_ + (fused_ ? 1 : 0) : 1;
  }
  // text is the list as given, canonical (OpListText).
  const std::string& text() const { return text_; }

 private:
  ViewProgram() = default;
  absl::Status RunPixelOps(const SampleKey& key, uint64_t view_stream, size_t begin,
                           size_t end, OpImage& image, int64_t held,
                           const OpObserver* observer, detection::Targets* targets,
                           LabelPlane* labels) const;
  // RunTail runs ops [begin, end) on work.rgb (the head's output, or one crop) and writes
  // the result (one crop's part of the slot) to dst; `made`, when not null (a list whose
  // size depends on the image), gets the size written, at the slot's start.
  absl::Status RunTail(WorkingImages& work, const SampleKey& key, uint64_t view_stream,
                       size_t begin, OpImage& image, int64_t held, void* dst,
                       const OpObserver* observer, detection::Targets* targets,
                       LabelPlane* labels, OpSize* made) const;
  // RunCrops runs the ops from `begin` up to the multi-crop op, then each crop and the
  // ops after it (RunTail) into its part of dst.
  absl::Status RunCrops(WorkingImages& work, const SampleKey& key, uint64_t view_stream,
                        size_t begin, OpImage& image, int64_t held, void* dst,
                        const OpObserver* observer) const;
  // RunIn is Run on the thread's working images `work`.
  absl::Status RunIn(WorkingImages& work, const decode::DecodedImage& decoded,
                     const CropPlan* plan, const SampleKey& key, uint64_t view_stream,
                     void* dst, const OpObserver* observer,
                     detection::Targets* targets, LabelPlane* labels,
                     OpSize* made) const;
  // PlanChannels sets channels_ (shape()'s C) from the list.
  absl::Status PlanChannels(const std::vector<OpText>& ops,
                            const std::function<absl::Status(size_t, const std::string&)>& fail);
  // CheckMemory is OK when images of `need` bytes, with the `held` bytes of the decoded
  // image, fit the worker's memory (or no limit is set); else op_memory naming `what`.
  absl::Status CheckMemory(int64_t held, int64_t need, const std::string& what) const;
  // CheckOpMemory is CheckMemory for op `i` drawn with `params` on a w × h uint8 image:
  // its input and output side by side (Op::WorkingSize), with the decoded image held.
  // With `targets` carrying instance masks that op i moves, the K planes on each side
  // beyond planned_mask_bytes_ count too.
  // With `labels` (a semantic label map that op i moves), its plane before and after the
  // move counts too (a pad of 4000 made a 126 MiB map beside a 378 MiB image unchecked).
  absl::Status CheckOpMemory(size_t i, const OpParams& params, int w, int h, int64_t held,
                             const detection::Targets* targets = nullptr,
                             const LabelPlane* labels = nullptr) const;
  // CheckDrawMemory is CheckMemory for op `i` before its draw on a w × h uint8 image
  // (internal/op_memory.h's BeforeDraw: the input and the op's scratch).
  absl::Status CheckDrawMemory(size_t i, int w, int h, int64_t held) const;
  // MaskBytesPastPlan is what `targets`' instance masks (none: 0) take beyond
  // planned_mask_bytes_ while they move from a w × h canvas to out_w × out_h, K planes
  // each; CheckMaskMemory checks those bytes alone (a geometry chain's one move).
  int64_t MaskBytesPastPlan(const detection::Targets* targets, int w, int h, int out_w,
                            int out_h) const;
  absl::Status CheckMaskMemory(const detection::Targets* targets, int w, int h, int out_w,
                               int out_h, int64_t held) const;

  std::vector<std::unique_ptr<Op>> ops_;
  std::unique_ptr<OpCost[]> costs_;
  std::unique_ptr<Transform> head_;
  size_t head_ops_ = 0;          // Ops the head runs (1 or 2).
  bool fused_ = false;           // The head writes the normalized slot itself.
  int normalize_index_ = -1;     // Position of normalize, or -1.
  int crop_index_ = -1;          // Position of five_crop / ten_crop, or -1.
  int crops_ = 1;                // The crops it makes.
  int64_t channels_ = 3;         // The view's channels (PlanChannels).
  OpSize output_size_;           // The fixed size, or the bound of a variable list.
  bool variable_ = false;        // The size depends on the image (bounded by output_size_).
  size_t scratch_bytes_ = 0;
  size_t crops_source_bytes_ = 0;  // The image the crops come from, where known.
  int largest_op_ = -1;
  std::string text_;
  std::shared_ptr<const WorkerMemory> worker_memory_;  // Null: no limit.
  int64_t planned_mask_bytes_ = 0;  // set_planned_mask_bytes.
};

// ShouldApply draws whether `op` applies to this sample (its p; RandomApply's draw).
bool ShouldApply(const Op& op, SampleRng& rng);

// OpStream is op `op`'s random stream in a view whose stream is view_stream: derived by
// mixing, so neither the op nor the view numbers streams by hand.
uint64_t OpStream(uint64_t view_stream, size_t op);

}  // namespace flowloader::augment

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_VIEW_PROGRAM_H_
