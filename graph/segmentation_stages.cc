// segmentation_stages.cc: the `label_map` stage type of semantic segmentation graphs: it
// reads each image's PNG label map (Dataset::OpenLabelMaps pairs them) and writes it as
// the sample's `masks` field, [H, W] class indices; the transforms stage then moves it
// with the image through every geometric op (augment::LabelPlane), nearest neighbour,
// filling what an op uncovers with ignore_index.
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/internal/view_planning.h"
#include "graph/stage.h"
#include "stages/core/sample_error.h"
#include "stages/decode/label_png.h"

namespace flowloader {
namespace {

class LabelMapStage : public SampleStage {
 public:
  LabelMapStage(const Dataset* dataset, Env* env, int64_t max_bytes, int64_t max_pixels,
                uint8_t ignore_index)
      : dataset_(dataset), env_(env), max_bytes_(max_bytes), max_pixels_(max_pixels),
        ignore_index_(ignore_index) {}

  absl::Status Process(SampleContext& sample) const override {
    detection::Targets& t = sample.targets;
    t.Clear();
    // Per thread, reused across samples (the PNG's bytes live only until decoded).
    thread_local std::string bytes;
    std::string path;
    if (absl::Status s = Read(sample.index, &bytes, &path); !s.ok()) {
      return SampleError(s.code(), ErrorReason(s),
                         absl::StrCat("label map ", path, ": ", s.message()));
    }
    int width = 0, height = 0;
    if (absl::Status s = decode::DecodeLabelPng(bytes, max_pixels_, &width, &height, &t.semantic);
        !s.ok()) {
      return SampleError(s.code(), ErrorReason(s),
                         absl::StrCat("label map ", path, ": ", s.message()));
    }
    t.canvas_width = width;
    t.canvas_height = height;
    t.has_semantic = true;
    t.ignore_index = ignore_index_;
    t.image_id = sample.index;
    return absl::OkStatus();
  }
  size_t BytesProduced(const SampleContext& sample) const override {
    return sample.targets.semantic.size();
  }

 private:
  // Read fills *bytes with sample i's label map, a file or (tar shards) a member of the
  // sample's shard, one ranged read; *path names it for messages.
  absl::Status Read(int64_t i, std::string* bytes, std::string* path) const {
    const SampleMember* member = dataset_->label_map_member(i);
    if (member == nullptr) {
      *path = dataset_->label_map(i);
      return env_->ReadFile(*path, max_bytes_, bytes);
    }
    const SampleSource& source = dataset_->sample(i);
    *path = absl::StrCat(dataset_->shards()[static_cast<size_t>(source.shard)], " member .",
                         dataset_->extensions()[member->extension], " of ", source.key);
    if (member->size > max_bytes_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          member->size, " bytes, over the label_map stage's max_file_bytes ", max_bytes_));
    }
    return env_->ReadRange(dataset_->shards()[static_cast<size_t>(source.shard)],
                           member->offset, member->size, bytes);
  }

  const Dataset* const dataset_;  // Owned by the pipeline.
  Env* const env_;
  const int64_t max_bytes_;
  const int64_t max_pixels_;
  const uint8_t ignore_index_;
};

StageSchema LabelMapSchema() {
  return StageSchema{
      "label_map",
      "reads each image's PNG label map (semantic segmentation, `label_maps`) as the field "
      "masks, [H, W] class indices (a palette PNG's indices, a grayscale PNG's values); "
      "geometric ops move it with the image by nearest neighbour",
      {{"ignore_index", OptionType::kInt, "255",
        "the class index a geometric op writes where it uncovers the map (padding)", {}, 0,
        255},
       {"max_file_bytes", OptionType::kInt, "67108864", "largest label map file read, bytes",
        {}, 1},
       {"max_pixels", OptionType::kInt, "16777216", "largest label map, pixels", {}, 1}},
      0,
      {{kPathField, FieldKind::kMetadata}},
      {{kMasksField, FieldKind::kTargets}},
      {},
      false,
      {},
      false,
      StageKind::kStorage};
}

absl::StatusOr<std::unique_ptr<SampleStage>> CreateLabelMap(const StageArgs& args,
                                                            StageEnv& env) {
  if (env.dataset == nullptr || !env.dataset->has_label_maps()) {
    return absl::InvalidArgumentError(
        "label_map: the data has no label maps: give `label_maps:` (a directory of PNG "
        "label maps paired with `data:`, or a list file of `image label_map` lines)");
  }
  const int64_t max_pixels = args.GetInt("max_pixels");
  // A worker holds one map and, while an op moves it, a second.
  env.memory.push_back({"label maps", "label_maps", 2 * max_pixels * env.num_workers,
                        absl::StrCat("num_workers ", env.num_workers, " × 2 label maps of up "
                                     "to ", max_pixels, " px"),
                        {"max_pixels", "num_workers"}});
  return std::unique_ptr<SampleStage>(new LabelMapStage(
      env.dataset, env.dataset->shard_env(), args.GetInt("max_file_bytes"), max_pixels,
      static_cast<uint8_t>(args.GetInt("ignore_index"))));
}

}  // namespace

void RegisterSegmentationStages(StageRegistry& registry) {
  (void)registry.Register(LabelMapSchema(), CreateLabelMap);
}

}  // namespace flowloader
