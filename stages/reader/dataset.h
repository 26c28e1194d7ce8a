// dataset.h: the list of samples (file key + integer label) a pipeline reads.
//
// Two sources:
//  * An ImageFolder directory, exactly as torchvision's ImageFolder sees it: each
//    sub-directory of the root is a class, classes get labels 0..K-1 in sorted order, and
//    every file below a class directory (recursively, links followed) whose extension is an
//    image extension (.jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case) is a
//    sample, ordered by (directory, file name).
//  * A list file: one `path<TAB>label` per line, a relative path relative to the list
//    file's directory, an absolute one used as is; blank lines and lines starting with '#'
//    are ignored. Extra per-sample columns: a header line `#columns: path label NAME...`
//    (before the first sample; names are letters, digits and _) makes every line carry
//    that many tab-separated fields; the fields after the label are the sample's column
//    values (strings, any bytes but tab and newline), column(i, c). The `columns` option,
//    when set, keeps only the columns it names (each must be in the header).
// A sample's key is its path relative to the root (for a list file: the path as written);
// that is what logs and --keys_out name.
//
// Any of these may be remote: an s3:// prefix is an ImageFolder (its next path component
// is the class) or a directory of shards; an s3:// key a list file or a shard; http(s)://
// URLs name shards. StorageEnv (storage_env.h) routes each path by its scheme.
//
// Or WebDataset tar shards (shard_dataset.cc), local or over HTTP(S) or S3:
//  * `DIR/train-{000000..000146}.tar` (brace ranges and lists, as webdataset expands
//    them), one `.tar` path or `http(s)://` URL, a directory holding `.tar` files and no
//    sub-directory, or a shard list: a text file whose every line names a `.tar` (a path
//    relative to the list's directory, absolute, or a URL).
//  * Members are grouped into samples as webdataset groups them: consecutive members
//    with the same key (the name up to the first dot of its basename); `__meta__` members
//    and members without an extension are ignored. The image is the sample's first
//    member with an image extension; the label is the integer in its `.cls` member, or
//    the `label_key` field of its `.json` member. Every member stays recorded (offset,
//    size, extension) as per-sample data. The `columns` option names extensions
//    (`txt,json`) whose members become the sample's column values, read while indexing
//    (they sit beside the headers, so over HTTP they come in the index's own range
//    requests, never one more request per sample): a sample without one fails as
//    missing_column, one larger than column_max_bytes as column_too_large.
//  * Each shard is indexed once, in memory, when the dataset is opened: only the tar
//    headers are read (and the small label members beside them); images are then read
//    with one positioned read (pread, or an HTTP range request) per sample, so the sampler,
//    sharding, resume and skip accounting work exactly as for files.
//  * A key is `SHARD_FILE_NAME/IMAGE_MEMBER` ("train-000003.tar/n01440764_10026.JPEG").
//  * Bad input is a sample that fails with a reason every epoch, counted like a bad file:
//    a sample without an image (missing_image) or label (missing_label), and, for each
//    shard that cannot be read (not_found, http_404, ...) or is damaged (truncated,
//    corrupt, unknown_format for a non-tar file), one entry keyed by the shard that fails
//    with that reason, after the samples indexed before the damage.
//
// Or several of these as the weighted sources of a mixture (OpenSources): one Dataset
// holding each source's samples in turn, source i's at [source_offset(i),
// source_offset(i) + source_size(i)), keys relative to their own source's root. Labels:
// ImageFolder sources share one class map, the sorted union of their class names (so
// "cat" is one label in every source); list files and tar shards keep their numbers.
//
// Thread-safety: immutable after Open; safe to read from any thread.
#ifndef FLOWLOADER_STAGES_READER_DATASET_H_
#define FLOWLOADER_STAGES_READER_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "stages/detection/coco.h"
#include "stages/reader/cache_options.h"
#include "stages/reader/env.h"
#include "stages/reader/http_env.h"
#include "stages/reader/s3_options.h"
#include "stages/reader/storage_env.h"
#include "stages/reader/tar_index.h"

namespace flowloader {

// SampleMember is one member of a tar-shard sample (per-sample data for the graph).
struct SampleMember {
  uint32_t extension = 0;  // Index into Dataset::extensions() ("jpg", "cls", "seg.png").
  int64_t offset = 0;      // Of the member's data in its shard.
  int64_t size = 0;
};

struct SampleSource {
  std::string key;    // Path relative to the dataset root ("cat/001.jpg"), or absolute.
  int64_t label = 0;  // Class index.
  // The source it comes from (index into Dataset::source_names()); 0 for one source.
  int32_t source = 0;
  // Tar shards: the image member's shard (index into Dataset::shards()), offset and size;
  // shard < 0 for a sample that is a file of its own.
  int32_t shard = -1;
  int64_t offset = 0;
  int64_t size = 0;
  // The sample's members: [first_member, first_member + member_count) of members().
  uint32_t member_count = 0;
  int64_t first_member = 0;
  // Set for a sample known bad when listed (no image, no label, a damaged shard): reading
  // it fails with this status, so it is skipped and counted by its reason every epoch.
  absl::Status error;
};

struct DatasetOptions {
  // An ImageFolder root directory, or a list file (`path<TAB>label` lines). Required.
  std::string path;
  // File-system access; nullptr means Env::Default(). Not owned; must outlive the Dataset.
  Env* env = nullptr;
  // Tar shards: the `.json` member's top-level integer field that holds the label; empty
  // (default) reads the label from the `.cls` member.
  std::string label_key;
  // Tar shards: each sample needs a label (`.cls`, or label_key of its `.json`); false
  // reads none (label 0), for detection and segmentation shards whose targets are other
  // members (OpenShardAnnotations, OpenLabelMaps with a member extension).
  bool labels = true;
  // Extra per-sample columns: for tar shards, the member extensions to read as columns
  // ("txt", "json", "seg.txt"); for a list file, the `#columns:` header's columns to
  // keep. Empty (default): none from shards, every header column from a list file. Names
  // follow CheckColumnNames.
  std::vector<std::string> columns;
  // Tar shards: the largest column member read, bytes; a larger one makes its sample
  // fail as column_too_large. >= 1. Default 64 KiB.
  int64_t column_max_bytes = 65536;
  // Remote data (http(s)://, s3://): timeouts, retries, backoff, block cache (see
  // http_env.h).
  HttpOptions http;
  // s3://: endpoint, region, profile, addressing, anonymous (see s3_env.h).
  S3Options s3;
  // Remote data: the on-disk cache (cache_dir, cache_bytes; disk_cache_env.h); dir empty
  // (default) = none.
  DiskCacheOptions cache;
  // Tar shards indexed at once when opening (for HTTP, requests in flight); >= 1.
  int index_threads = 8;
  // HTTP shards are indexed in windows of this many bytes (one range request serves
  // every header inside it); > 0. Default 1 MiB. When it equals http.block_bytes (the
  // default), the windows of the shards the block cache admits are kept as its blocks
  // (within cache_bytes), so the first epoch does not fetch them again.
  int64_t http_index_window_bytes = int64_t{1} << 20;
  // Windows of a remote shard read ahead of its index's walk (so its round trips
  // overlap; internal/window_prefetch.h); >= 0, 0 = one window at a time. Default 4.
  int index_prefetch_windows = 4;
  // Open a tar shard from the index beside it (SHARD.idx, which `flowloader pack`
  // writes; shard_index_load.h) when there is one and it matches the shard: two small
  // reads instead of a walk over every header. Default true; false always scans.
  bool use_shard_index = true;
};

// DatasetSource is one named source of a mixture (Dataset::OpenSources).
struct DatasetSource {
  std::string name;  // The `source` label in metrics and --samples_out; unique, not empty.
  DatasetOptions options;
  // Relative share of each epoch's samples when mixed by weight (OpenDataSources); > 0.
  double weight = 1.0;
};

class Dataset {
 public:
  // Open lists the dataset. Fails if the path is missing, an ImageFolder has no class
  // directory or no image, or a list file has a malformed line (named by line number).
  static absl::StatusOr<std::unique_ptr<Dataset>> Open(const DatasetOptions& options);

  // OpenSources opens each source (as Open does) and lays their samples end to end, in
  // the order given. Fails on no source, an empty or repeated name, or what Open fails on
  // (the message then starts with "source NAME: ").
  static absl::StatusOr<std::unique_ptr<Dataset>> OpenSources(
      const std::vector<DatasetSource>& sources);

  // OfSize is `size` samples with no file behind them, for a read stage that fetches
  // sample i itself (the Python module's dataset=, python/internal/py_dataset.h): keys
  // "0".."size-1", label 0 (that read stage supplies the labels), FullPath "ROOT/KEY"
  // with `root` naming where they come from. InvalidArgument unless size >= 1.
  // Its samples are computed, not stored (computed() is true): it takes no memory per
  // sample (table_bytes() is 0), so a dataset of 2^24 samples costs nothing until read.
  static absl::StatusOr<std::unique_ptr<Dataset>> OfSize(int64_t size, std::string root);

  // OfCoco is the images of a COCO instances file (stages/detection/coco.h), in its
  // order: sample i is annotations->images()[i], its key the image's file_name under
  // annotations->options().images, label 0 (its targets come from annotations()).
  // `storage`, when given, reads the images (so they may lie in a bucket: s3://).
  static std::unique_ptr<Dataset> OfCoco(
      std::shared_ptr<const detection::CocoDataset> annotations,
      std::unique_ptr<StorageEnv> storage = nullptr);
  // annotations is the COCO file the dataset was made from (OfCoco), else nullptr.
  const detection::CocoDataset* annotations() const { return annotations_.get(); }

  // OpenLabelMaps is a semantic segmentation dataset (label_map_dataset.cc): images and
  // PNG label maps paired by key. `label_maps` is either a directory, paired with the
  // image directory options.path (IMAGES/a/b.jpg with LABEL_MAPS/a/b.png: VOC, ADE20K),
  // or a list file of `image label_map` lines (two paths, relative to the list's
  // directory, absolute, or URLs; Cityscapes' differing names), options.path then unused
  // unless the list's paths are relative to it. An image without its label map stays a
  // sample that fails as missing_label (counted every epoch, never silently lost).
  static absl::StatusOr<std::unique_ptr<Dataset>> OpenLabelMaps(const DatasetOptions& options,
                                                              const std::string& label_maps);
  // With tar-shard data (options.path names shards), `label_maps` is instead a member
  // extension written with its dot (".png", ".seg.png"; IsMemberExtension): each
  // sample's label map is that member (shard_targets.cc), a sample without one fails as
  // missing_label, and the image is the sample's first other image member.
  // label_map is sample i's label map path (full, or a URL); empty without one, and for
  // shards (see label_map_member).
  const std::string& label_map(int64_t i) const;
  // label_map_member is sample i's label map member of its shard (tar-shard label maps),
  // else nullptr.
  const SampleMember* label_map_member(int64_t i) const;
  bool has_label_maps() const { return !label_maps_.empty() || !label_map_members_.empty(); }

  // OpenShardAnnotations is a detection dataset from tar shards (shard_targets.cc): each
  // sample's member with `extension` (".json") holds its image's COCO annotations,
  //   {"image_id": N, "width": W, "height": H, "file_name": "...",
  //    "annotations": [{"bbox": [x, y, w, h], "category_id": C, "iscrowd": 0,
  //                     "area": A, "segmentation": ..., "keypoints": [...]}, ...]}
  // (what `flowloader pack --annotations=` writes; image_id defaults to the sample's
  // position, file_name to its key). They are read while indexing (as columns) and
  // assembled into one COCO instances document, checked and mapped by
  // detection::CocoDataset (`coco` gives skip_empty, masks, ...): the same targets as
  // the COCO file they came from. Categories: the `categories` list of
  // `categories_json` (a COCO file's, or what pack writes as OUT/categories.json;
  // `categories_file` names it in messages), else the sorted category ids seen in the
  // shards (labels 1..C; named by their id). A sample without the member fails as
  // missing_label, one whose member is not such a JSON object, lacks a width or height,
  // or repeats an image_id, as corrupt, each named and counted every epoch.
  static absl::StatusOr<std::unique_ptr<Dataset>> OpenShardAnnotations(
      const DatasetOptions& options, detection::CocoOptions coco, const std::string& extension,
      const std::string& categories_json = "", const std::string& categories_file = "");
  // annotation_image is sample i's image in annotations() (OfCoco: i itself).
  size_t annotation_image(int64_t i) const {
    return annotation_images_.empty() ? static_cast<size_t>(i)
                                      : annotation_images_[static_cast<size_t>(i)];
  }
  // IsMemberExtension: `value` (an annotations or label_maps option) names a tar-shard
  // member extension (".json", ".seg.png": a dot, then no '/'), not a file.
  static bool IsMemberExtension(const std::string& value);

  int64_t size() const {
    return computed() ? computed_size_ : static_cast<int64_t>(samples_.size());
  }
  // The sources, by number: one named "default" for a Dataset opened with Open.
  const std::vector<std::string>& source_names() const { return source_names_; }
  int64_t source_offset(int32_t source) const { return source_offsets_[source]; }
  int64_t source_size(int32_t source) const;
  // sample is sample i's entry in the table. Not for a computed() dataset (OfSize), whose
  // samples no table holds: use SampleAt.
  const SampleSource& sample(int64_t i) const { return samples_[static_cast<size_t>(i)]; }
  // computed is true for a Dataset made by OfSize: its samples are made when asked for.
  bool computed() const { return computed_size_ > 0; }
  // SampleAt is sample i: the table's entry, or for a computed() dataset `*scratch` set
  // to it (key the decimal index, label 0) and returned. Valid while both live.
  const SampleSource& SampleAt(int64_t i, SampleSource* scratch) const;
  // label is sample i's label (0 for a computed() dataset).
  int64_t label(int64_t i) const { return computed() ? 0 : sample(i).label; }
  // table_bytes is the heap the sample table holds: each sample's entry, its key where
  // the key is too long for the string's inline buffer, the shards' members and columns
  // (0 for a computed() dataset). Counted in the memory plan (`sample_table`).
  int64_t table_bytes() const;
  // root is the directory keys are relative to (no trailing '/').
  const std::string& root() const { return root_; }
  // class_names are the ImageFolder class directories by label; empty for list files.
  const std::vector<std::string>& class_names() const { return class_names_; }
  // FullPath is a sample's file: root and its key joined, or the key itself when absolute;
  // for a tar-shard sample, its shard's path or URL.
  std::string FullPath(int64_t i) const;

  // Tar shards (empty otherwise): the shards' paths or URLs, each sample's members and
  // the extension names they index.
  const std::vector<std::string>& shards() const { return shards_; }
  absl::Span<const SampleMember> members(int64_t i) const;
  const std::vector<std::string>& extensions() const { return extensions_; }

  // Extra per-sample columns (list files' `#columns:` header, tar shards' members named
  // by DatasetOptions::columns): their names, and sample i's value of column c ("" where
  // its source has no such column, or the sample failed).
  const std::vector<std::string>& column_names() const { return column_names_; }
  absl::string_view column(int64_t i, size_t c) const {
    const size_t k = static_cast<size_t>(i) * column_names_.size() + c;
    const uint64_t begin = k == 0 ? 0 : column_ends_[k - 1];
    return absl::string_view(column_text_).substr(begin, column_ends_[k] - begin);
  }
  // column_bytes is the memory the column values take (text and offsets).
  int64_t column_bytes() const {
    return static_cast<int64_t>(column_text_.size() + column_ends_.size() * sizeof(uint64_t));
  }
  // shard_env reads the samples (the StorageEnv, wrapping DatasetOptions::env); valid
  // while the Dataset lives.
  Env* shard_env() const { return storage_ != nullptr ? storage_.get() : env_; }
  // storage is the Env that routes remote paths (its block cache's admission, Cancel,
  // Describe), or nullptr for a Dataset made by OfSize.
  const StorageEnv* storage() const { return storage_.get(); }
  // Tar shards opened from the index file beside them (`flowloader pack` writes one,
  // tar_index_file.h), and those whose headers were scanned instead because their index
  // was missing, stale (it does not match the shard) or damaged; each stale or damaged
  // one is named in a warning when opening.
  struct ShardIndexCounts {
    int64_t used = 0;
    int64_t missing = 0;
    int64_t stale = 0;
    int64_t damaged = 0;
  };
  const ShardIndexCounts& shard_index_counts() const { return shard_index_counts_; }

  // ShardPaths turns `path` into shard locations when it names tar shards: brace
  // pattern, `.tar` file, URL, directory of `.tar` files or shard list. Empty otherwise
  // (also `flowloader index`'s list of shards).
  static absl::StatusOr<std::vector<std::string>> ShardPaths(Env* env, const std::string& path,
                                                             bool is_directory);

 private:
  Dataset() = default;
  // OpenOne is Open; with `in_mixture`, a list file or ImageFolder that lacks a column
  // the columns option names gives "" for it (another source has it) instead of failing.
  static absl::StatusOr<std::unique_ptr<Dataset>> OpenOne(const DatasetOptions& options,
                                                         bool in_mixture);
  // OpenShards lists and indexes tar shards (shard_dataset.cc).
  static absl::StatusOr<std::unique_ptr<Dataset>> OpenShards(
      const DatasetOptions& options, std::unique_ptr<StorageEnv> storage,
      const std::vector<std::string>& shards, std::string root);

  // KeepSamples keeps the samples `keep` (increasing indices) and the columns `columns`
  // (indices into column_names_), with their label maps and annotation images
  // (shard_targets.cc).
  void KeepSamples(const std::vector<int64_t>& keep, const std::vector<size_t>& columns);
  // OpenShardLabelMaps is OpenLabelMaps for tar shards (shard_targets.cc).
  static absl::StatusOr<std::unique_ptr<Dataset>> OpenShardLabelMaps(
      const DatasetOptions& options, const std::string& extension);

  // AddColumnsLine adds the sample of list-file line `line` (`path<TAB>label<TAB>values`,
  // one per column_names_) with its column values (list_columns.cc).
  absl::Status AddColumnsLine(const std::string& path, int line_number, absl::string_view line);
  // SelectColumns keeps the list-file (or ImageFolder) columns `wanted`, in that order; a
  // name not in the header is refused, naming `path`, unless `absent_is_empty`, when its
  // values are "" (list_columns.cc).
  absl::Status SelectColumns(const std::string& path, const std::vector<std::string>& wanted,
                             bool absent_is_empty);
  // AddShardColumns appends a tar-shard sample's column values, from its (extension,
  // member) list; "" for each when `ok` is false (a failed sample is never delivered).
  void AddShardColumns(const std::vector<std::pair<std::string, const TarMember*>>& members,
                       bool ok);
  // Append moves `other`'s samples (and shards, members, extensions) after this one's,
  // as source number `source` (dataset_sources.cc).
  void Append(Dataset&& other, int32_t source);
  // AppendColumns adds `other`'s column values in this dataset's column layout.
  void AppendColumns(const Dataset& other);

  std::string root_;
  // Mixtures: each source's root (FullPath's), by source; empty for one source.
  std::vector<std::string> source_roots_;
  std::vector<std::string> source_names_ = {"default"};
  std::vector<int64_t> source_offsets_ = {0};
  std::vector<std::string> class_names_;
  std::vector<SampleSource> samples_;
  int64_t computed_size_ = 0;  // OfSize: the number of samples, none stored; else 0.
  // Tar shards.
  std::vector<std::string> shards_;
  std::vector<SampleMember> members_;
  std::vector<std::string> extensions_;
  ShardIndexCounts shard_index_counts_;
  // Columns: sample i's value of column c ends at column_ends_[i * C + c] in column_text_.
  std::vector<std::string> column_names_;
  std::string column_text_;
  std::vector<uint64_t> column_ends_;
  Env* env_ = nullptr;
  std::unique_ptr<StorageEnv> storage_;
  std::shared_ptr<const detection::CocoDataset> annotations_;  // OfCoco.
  std::vector<std::string> label_maps_;  // OpenLabelMaps: by sample.
  // Tar-shard label maps: sample i's member index in members_, -1 without one.
  std::vector<int64_t> label_map_members_;
  // OpenShardAnnotations: sample i's image in annotations_ (failed samples: 0, unread).
  std::vector<size_t> annotation_images_;
};

// CheckColumnNames refuses a `columns` option with a name that is not letters, digits and
// _ with dots only between them (not starting with a digit), or a repeated name; the
// message names the value and reads after the option's name ("has 'a b', not a ...").
absl::Status CheckColumnNames(const std::vector<std::string>& names);

// HasImageExtension reports whether `name` ends in one of ImageFolder's extensions.
bool HasImageExtension(const std::string& name);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_DATASET_H_
