// op.h: one image transform of a view's op list (torchvision's transform classes, by
// their snake_case names and arguments), its declared schema, and the op registry.
//
// An op is two pure pieces: Draw, which draws the op's random parameters (torchvision's
// get_params, in the same order) from the sample's stream, and Apply, which runs the op
// with given parameters. Keeping them apart lets the parity tests hand Apply torchvision's
// parameters, and the distribution tests compare Draw's output with torchvision's.
//
// Adding an op is one file in stages/augment/ops/ that declares its schema and a factory
// and registers them with FLOWLOADER_REGISTER_OP (the library is alwayslink, so the
// registration runs at start-up), plus its parity and distribution cases in
// ops/testdata/cases/<op>.py and its line in docs/specs.md.
//
// Thread-safety: an Op is immutable after its factory returns; Draw and Apply may run on
// any number of threads at once. The registry is filled during static initialization and
// read-only afterwards.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_OP_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_OP_H_

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/augment/transform.h"
#include "stages/core/image.h"
#include "stages/core/rng.h"
#include "stages/core/worker_memory.h"
#include "stages/detection/targets.h"

namespace flowloader::augment {


// PixelForm is what an op reads and writes: uint8 RGB pixels (interleaved, the form of
// PIL images), or the normalized float32 tensor [3, H, W] that `normalize` writes.
enum class PixelForm { kUint8HWC, kFloatCHW };

// OpValue is one argument's value: numbers (a scalar is a list of one), or a word.
struct OpValue {
  std::vector<double> numbers;
  std::string word;     // Non-empty for a word (`bicubic`, `random`, `imagenet`).
  bool is_list = false;  // Written as [a, b, ...].
  bool is_none = false;  // Written as null / none.
  // An op list written as a value, `[op(...); op(...)]`: its text between the brackets
  // (the sub-ops of compose, random_choice, random_order; internal/sub_ops.h).
  std::string ops;

  bool IsNumber() const { return word.empty() && !is_none && !is_list && numbers.size() == 1; }
};

// OpArgs are one op instance's argument values, every declared argument present (given
// or defaulted). The accessors CHECK nothing: the schema's defaults guarantee presence,
// and each factory validates values with torchvision's ranges.
class OpArgs {
 public:
  const OpValue& Get(const std::string& name) const;
  // Number is a scalar argument; Int one rounded toward zero.
  double Number(const std::string& name) const { return Get(name).numbers.at(0); }
  int Int(const std::string& name) const { return static_cast<int>(Number(name)); }
  bool Bool(const std::string& name) const { return Number(name) != 0; }
  const std::string& Word(const std::string& name) const { return Get(name).word; }
  const std::vector<double>& Numbers(const std::string& name) const {
    return Get(name).numbers;
  }
  bool IsSet(const std::string& name) const { return given_.count(name) > 0; }

  void Set(const std::string& name, OpValue value, bool given);

 private:
  std::map<std::string, OpValue> values_;
  std::map<std::string, bool> given_;
};

// ArgSchema declares one argument: its name, its default as the op-list text writes it,
// what it accepts (for `flowloader stages`) and what it does.
struct ArgSchema {
  std::string name;
  std::string default_text;  // "0.5", "[0.08, 1.0]", "bilinear", "null".
  std::string accepts;       // "a number in [0, 1]", "a number or [min, max]".
  std::string doc;
};

// OpSchema declares an op type.
struct OpSchema {
  std::string name;  // torchvision's class name in snake_case.
  std::string doc;   // One line: what it does, as torchvision's docstring says.
  std::vector<ArgSchema> args;
  // Every op takes `p`, the probability that it applies (torchvision's RandomApply). Ops
  // whose torchvision class has its own p (RandomHorizontalFlip, RandomGrayscale, ...)
  // default to torchvision's value (0.5, 0.1, ...); the others to 1.
  double default_p = 1.0;
};

// OpSize is a view's image size at a point of its list; 0 × 0 = it depends on the image.
struct OpSize {
  int width = 0;
  int height = 0;
  bool Known() const { return width > 0 && height > 0; }
  bool operator==(const OpSize& o) const { return width == o.width && height == o.height; }
};

// OpParams is one draw of an op's random parameters, in torchvision's get_params order
// (the parity tests pass torchvision's values in the same order).
//
// The first kMax values live in `v` (no allocation per sample, which is every op but
// two); values past them go to `more`, as floats: aug_mix's chains (one weight per chain,
// three numbers per sub-op) and elastic_transform's two noise planes (one float32 per
// pixel each, as torch.rand draws them). Size() and At(i) see one list.
struct OpParams {
  static constexpr int kMax = 24;
  double v[kMax] = {};
  int n = 0;
  std::vector<float> more;
  void Push(double value) {
    if (n < kMax) {
      v[n++] = value;
    } else {
      more.push_back(static_cast<float>(value));
    }
  }
  size_t Size() const { return static_cast<size_t>(n) + more.size(); }
  double At(size_t i) const { return i < static_cast<size_t>(kMax) ? v[i] : more[i - kMax]; }
};

// OpImage is the pixels an op works on. kUint8HWC: `rgb` (3 channels, tightly packed);
// an op that cannot work in place writes `spare` and swaps the two (both keep their
// capacity across samples, so nothing allocates once warm). kFloatCHW: `chw`, the
// normalized tensor of 3 × height × width floats, in the batch slot.
struct OpImage {
  Image* rgb = nullptr;
  Image* spare = nullptr;
  float* chw = nullptr;
  int width = 0;   // The tensor's size (kFloatCHW).
  int height = 0;
  // For an op whose output size is known only once it ran (a Python Lambda's array):
  // the worker's memory limit (null: none) and the bytes the sample holds besides the
  // working images, so the op can refuse to copy an output over the limit (op_memory).
  const WorkerMemory* memory = nullptr;
  int64_t held = 0;
};

// LabelPlane is a semantic label map riding with the image (one uint8 class index per
// pixel, `labels` with channels 1): a geometric op moves it with the parameters it drew
// for the pixels, by nearest neighbour (kernels/label_plane.h), and fills what it
// uncovers with `fill` (ignore_index). `spare` is a second buffer an op may swap in.
struct LabelPlane {
  Image* labels = nullptr;
  Image* spare = nullptr;
  uint8_t fill = 255;
};

// GatherMaps is an op that only moves pixels along each axis (a flip, a crop, a pad):
// output pixel (x, y) is input pixel (x_src[x], y_src[y]), or `fill` where either is -1.
struct GatherMaps {
  std::vector<int> x_src, y_src;
  std::array<uint8_t, 3> fill{};
};

// RowImage is an image held as row pointers, as Pillow holds its images: RGB pixels of
// `bpp` 4 bytes (R, G, B and a padding byte, 255) or one-channel pixels of 1 byte (an L
// image: its three channels equal). Op::ApplyRows reads and writes such rows in place.
struct RowImage {
  uint8_t* const* rows = nullptr;
  int width = 0;
  int height = 0;
  int bpp = 4;
};

class Op {
 public:
  virtual ~Op() = default;

  // The pixel form the op reads; it writes Output() (only normalize changes the form).
  virtual PixelForm Input() const { return PixelForm::kUint8HWC; }
  virtual PixelForm Output() const { return Input(); }
  // OutputSize is the image size after the op, given the size before (either may be
  // unknown: 0 × 0).
  virtual OpSize OutputSize(OpSize in) const { return in; }
  // OutputBound is an upper bound on each side of the image after the op, given a bound
  // on the image before it (0 × 0: none): what a padded batch's slot must hold
  // (size_divisibility). By default: the op's fixed output size, or `in` for an op that
  // keeps the size; 0 × 0 (no bound) for any other op that does not say its own (resize
  // without max_size: an image's long side grows with its aspect ratio).
  virtual OpSize OutputBound(OpSize in) const {
    const OpSize fixed = OutputSize(OpSize{});
    if (fixed.Known()) return fixed;
    if (!in.Known()) return {};
    // Keeps the size: the same for two inputs of different aspect ratios.
    const OpSize other{in.width + 1, in.height + 2};
    return OutputSize(in) == in && OutputSize(other) == other ? in : OpSize{};
  }
  // WorkingSize is the image Apply writes for `params` on an `in` image (OutputSize by
  // default, or `in` where that depends on more than the input's size). An op whose
  // size depends on its draw (rotate with expand) says it here, so that the program can
  // check the image against the worker's memory before Apply allocates it.
  virtual OpSize WorkingSize(const OpParams& params, OpSize in) const {
    const OpSize out = OutputSize(in);
    return out.Known() ? out : in;
  }
  // ScratchBytes is what Apply allocates for an `in` image besides the input and output
  // images (float planes, a copy of the input), so that the memory check counts it too:
  // gaussian_blur's float rows are 4x the image they blur.
  virtual int64_t ScratchBytes(OpSize in) const { return 0; }
  // Draw draws the op's random parameters for a width × height image. Ops without
  // randomness draw nothing.
  virtual void Draw(int width, int height, SampleRng& rng, OpParams* params) const {}
  // Apply runs the op with `params` (what Draw drew, or a test's).
  virtual absl::Status Apply(const OpParams& params, OpImage& image) const = 0;
  // PlanHead: an op that can be planned from the header, before decoding, fills `o`
  // (the fused crop-and-resize of transform.h) and returns true; `next` is the op after
  // it, which the head may absorb (a resize absorbs a center_crop; a crop, a horizontal
  // flip), setting *absorbed_next. Such an op's Draw/Apply still work on pixels, for
  // when it is not at the head of its list.
  virtual bool PlanHead(const Op* next, double next_p, TransformOptions* o,
                        bool* absorbed_next) const {
    return false;
  }

  // Gather: an op whose pixels are a GatherMaps of its input fills `maps` for `params` on
  // a width × height input and returns true; Apply then writes exactly those pixels. The
  // eager path (python/internal/eager.cc) moves a PIL image's own pixels through such
  // maps in one pass, with no copy in or out. false: not such an op, or bad params (Apply
  // says what is wrong).
  virtual bool Gather(const OpParams& params, int width, int height, GatherMaps* maps) const {
    return false;
  }
  // PointTables: an op whose pixels are a table per channel of the input's values
  // (posterize, solarize, invert; autocontrast and equalize, whose tables come from the
  // input's value counts) fills `luts` for `params` on a width × height input and
  // returns true; Apply then writes exactly those values. `histogram(h, false)` fills h
  // with the input's counts per channel; `histogram(h, true)` may count only each
  // channel's lowest and highest value (all autocontrast reads; far cheaper to find).
  // Only ops that need them call it. The eager path (python/internal/eager.cc) runs such
  // ops on a PIL image's rows in one pass. false: not such an op, or bad params (Apply
  // says what is wrong).
  using Histogram = uint32_t[3][256];
  using ValueCounts = std::function<void(Histogram&, bool extremes_only)>;
  virtual bool PointTables(const OpParams& params, int width, int height,
                           const ValueCounts& histogram, uint8_t (&luts)[3][256]) const {
    return false;
  }
  // ApplyRows: an op that can write its output for `params` straight from `src`'s rows
  // into `dst`'s (the op's output size for that input, pixels not written yet) does so
  // and returns true: the bytes Apply would write, as RowImage's form holds them (the
  // nearest-neighbour warps). false: not for this draw or form; nothing was written.
  virtual bool ApplyRows(const OpParams& params, const RowImage& src,
                         const RowImage& dst) const {
    return false;
  }
  // GatherMovesMasks: a Gather op whose MoveTargets moves instance masks through the same
  // maps (0 where the fill is), so that a chain of such ops moves them in one gather
  // (internal/geometry_chain.h).
  virtual bool GatherMovesMasks() const { return false; }
  // ResizeTo: an op whose pixels are PIL's resize of the whole image (resize, scale_jitter,
  // random_shortest_size) gives, for `params` on a width × height input, its output size
  // and filter and returns true; its targets then move as Geometry::Resize moves them.
  // false: not such an op, or bad params (Apply says what is wrong).
  virtual bool ResizeTo(const OpParams& params, int width, int height, OpSize* out,
                        Interpolation* filter) const {
    return false;
  }

  // Targets (boxes, labels, masks of a detection sample; stages/detection/targets.h).
  // TargetEffect says what the op does to them: kRefuses (the default: a geometric op
  // that cannot move them, refused when a sample carries targets), kKeeps (the op only
  // recolours pixels), kMoves (MoveTargets moves them as Apply moved the pixels).
  enum class TargetEffect { kRefuses, kKeeps, kMoves };
  virtual TargetEffect Targets() const { return TargetEffect::kRefuses; }
  // DrawWithTargets draws when the sample carries targets: ops whose parameters depend
  // on the boxes (random_iou_crop) override it; the others draw as without them.
  virtual void DrawWithTargets(int width, int height, const detection::Targets& targets,
                               SampleRng& rng, OpParams* params) const {
    Draw(width, height, rng, params);
  }
  // MoveTargets moves `targets` (on the width × height canvas the op's input had) as
  // Apply(params) moved the pixels: boxes, masks (nearest, never blended) and the
  // canvas; an op that drops instances drops them from every field (Targets::Keep).
  virtual absl::Status MoveTargets(const OpParams& params, detection::Targets* targets) const {
    return absl::OkStatus();
  }
  // OwnsP: the op reads p() itself (random_photometric_distort: p is each adjustment's
  // probability, as torchvision's), so the list applies it always.
  virtual bool OwnsP() const { return false; }

  // MovesLabels says the op moves a label map with its pixels (MoveLabels); an op that
  // moves pixels without it refuses a list whose sample carries one.
  virtual bool MovesLabels() const { return false; }
  // MoveLabels moves `plane` as Apply moved the pixels with the same `params`.
  virtual absl::Status MoveLabels(const OpParams& params, LabelPlane& plane) const {
    return absl::UnimplementedError("this op cannot move a label map");
  }

  // Normalization: normalize gives its mean and std (on the [0, 1] scale), so that a
  // bilinear head followed by it is one fused pass.
  virtual bool Normalization(std::array<float, 3>* mean, std::array<float, 3>* std) const {
    return false;
  }

  // SubOps: an op that runs other ops (compose, random_choice, random_order) lists them,
  // so that a check of a list (targets, label maps) can name the sub-op it refuses.
  virtual std::vector<const Op*> SubOps() const { return {}; }

  const std::string& name() const { return name_; }
  double p() const { return p_; }

 private:
  friend class OpRegistry;
  std::string name_;
  double p_ = 1.0;
};

using OpFactory = std::function<absl::StatusOr<std::unique_ptr<Op>>(const OpArgs&)>;

// OpRegistry maps op names to schemas and factories.
class OpRegistry {
 public:
  static OpRegistry& Global();

  // Register adds an op type (at static initialization, FLOWLOADER_REGISTER_OP). Returns
  // false when the name is taken or a default does not parse (a programming error, also
  // caught by ops_test).
  bool Register(OpSchema schema, OpFactory factory);

  // Create makes one op from its argument texts (name → value text as the op list writes
  // it). Errors are one line naming the op and the argument: an unknown op (with the
  // closest name), an unknown argument, a value of the wrong form or out of
  // torchvision's range.
  absl::StatusOr<std::unique_ptr<Op>> Create(
      const std::string& name, const std::map<std::string, std::string>& args) const;

  // Find is the schema of `name`, or nullptr.
  const OpSchema* Find(const std::string& name) const;
  // Names lists every op, sorted.
  std::vector<std::string> Names() const;
  // Help describes every op as YAML comment lines an `ops:` list can copy: the op with
  // every argument at its default, then one line per argument (what it accepts, what it
  // does), `p` included.
  std::string Help() const;

 private:
  struct Entry {
    OpSchema schema;
    OpFactory factory;
  };
  std::map<std::string, Entry> entries_;
};

// ParseOpValue reads an argument's text: a number, a word, true/false, null/none, or a
// flat list [a, b, ...] of numbers.
absl::StatusOr<OpValue> ParseOpValue(const std::string& text);
// OpValueText writes a value back as ParseOpValue reads it.
std::string OpValueText(const OpValue& value);

// ArgError is the one-line refusal "OP: ARG must be WHAT, got VALUE".
absl::Status ArgError(const std::string& op, const std::string& arg, const std::string& what,
                      const OpValue& got);

// Range checks shared by the ops' factories; each returns ArgError on failure.
// CheckProbability: a number in [0, 1].
absl::Status CheckNumberIn(const std::string& op, const OpArgs& args, const std::string& arg,
                           double lo, double hi);
// ReadRange reads "a number or [min, max]": a number v gives [center - v, center + v]
// (clamped below at `floor` when clamp is set, as ColorJitter does), a list its two
// values; both must lie in [lo, hi] with min <= max.
absl::StatusOr<std::pair<double, double>> ReadRange(const std::string& op, const OpArgs& args,
                                                    const std::string& arg, double center,
                                                    double lo, double hi, bool clamp);
// ReadSize reads "an integer or [h, w]" (torchvision's size) into height, width; a
// single number gives both when `square`, else width = 0 (Resize's shorter side).
absl::Status ReadSize(const std::string& op, const OpArgs& args, const std::string& arg,
                      bool square, int* height, int* width);

// ReadInterpolation reads torchvision's InterpolationMode by its value's name: bilinear,
// bicubic or nearest (the modes PIL images support that flowloader implements).
absl::Status ReadInterpolation(const std::string& op, const OpArgs& args, const std::string& arg,
                               Interpolation* out);

}  // namespace flowloader::augment

// FLOWLOADER_REGISTER_OP(Schema(), Factory) registers an op at start-up, from its file.
#define FLOWLOADER_OP_CONCAT_INNER(a, b) a##b
#define FLOWLOADER_OP_CONCAT(a, b) FLOWLOADER_OP_CONCAT_INNER(a, b)
// (Variadic so that a factory lambda's commas need no parentheses.)
#define FLOWLOADER_REGISTER_OP(schema, ...)                                  \
  static const bool FLOWLOADER_OP_CONCAT(kOpRegistered_, __LINE__) =         \
      ::flowloader::augment::OpRegistry::Global().Register((schema), (__VA_ARGS__))

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_OP_H_
