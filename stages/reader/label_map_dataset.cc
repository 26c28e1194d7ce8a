// label_map_dataset.cc: Dataset::OpenLabelMaps, semantic segmentation pairs (an image
// and a PNG label map with the same key), from two directories or a list file.
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "stages/core/sample_error.h"
#include "stages/reader/dataset.h"
#include "stages/reader/dataset_storage.h"
#include "stages/reader/env_util.h"
#include "stages/reader/schemes.h"

namespace flowloader {
namespace {

// Stem is `key` without its extension ("a/b.jpg" -> "a/b").
std::string Stem(const std::string& key) {
  const size_t dot = key.rfind('.');
  const size_t slash = key.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return key;
  return key.substr(0, dot);
}

// ListFiles appends every file below `dir` as a key relative to the walk's root (prefix
// "" at the root), sorted by key afterwards by the caller. `keep` picks the names.
absl::Status ListFiles(Env* env, const std::string& dir, const std::string& prefix, int depth,
                       bool (*keep)(const std::string&), std::vector<std::string>* keys) {
  if (depth > 16) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": more than 16 directory levels"));
  }
  absl::StatusOr<std::vector<DirEntry>> entries = env->ListDirectory(dir);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& e : *entries) {
    const std::string key = prefix.empty() ? e.name : absl::StrCat(prefix, "/", e.name);
    if (e.is_directory) {
      absl::Status s = ListFiles(env, dir + "/" + e.name, key, depth + 1, keep, keys);
      if (!s.ok()) return s;
    } else if (keep(e.name)) {
      keys->push_back(key);
    }
  }
  return absl::OkStatus();
}

bool IsPng(const std::string& name) {
  return absl::EndsWith(absl::AsciiStrToLower(name), ".png");
}

// Joined is `path` under `base` unless it is absolute or a URL.
std::string Joined(const std::string& base, const std::string& path) {
  if (path.empty() || path[0] == '/' || IsRemotePath(path) || base.empty()) return path;
  return absl::StrCat(base, "/", path);
}

}  // namespace

const std::string& Dataset::label_map(int64_t i) const {
  static const std::string* const kNone = new std::string;
  return label_maps_.empty() ? *kNone : label_maps_[static_cast<size_t>(i)];
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::OpenLabelMaps(const DatasetOptions& options,
                                                              const std::string& label_maps) {
  if (IsMemberExtension(label_maps)) return OpenShardLabelMaps(options, label_maps);
  absl::StatusOr<std::unique_ptr<StorageEnv>> storage = OpenStorage(options);
  if (!storage.ok()) return storage.status();
  Env* env = storage->get();
  const std::string maps = StripTrailingSlashes(label_maps);
  absl::StatusOr<bool> maps_dir = IsListablePath(maps) ? env->IsDirectory(maps) : false;
  if (!maps_dir.ok()) {
    // The Env's message starts with the path again: once is enough.
    return absl::NotFoundError(
        absl::StrCat("label_maps ", maps, " not found: ",
                     absl::StripPrefix(maps_dir.status().message(), absl::StrCat(maps, ": "))));
  }
  std::unique_ptr<Dataset> dataset(new Dataset());
  dataset->env_ = env;
  if (*maps_dir) {
    // Two directories: every image under `data`, its map LABEL_MAPS/<stem>.png.
    const std::string images = StripTrailingSlashes(options.path);
    if (images.empty()) {
      return absl::InvalidArgumentError(
          "label_maps is a directory: give `data:` the images' directory to pair with it");
    }
    std::vector<std::string> image_keys, map_keys;
    if (absl::Status s = ListFiles(env, images, "", 0, HasImageExtension, &image_keys);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ListFiles(env, maps, "", 0, IsPng, &map_keys); !s.ok()) return s;
    std::sort(image_keys.begin(), image_keys.end());
    std::map<std::string, std::string> map_of_stem;
    for (const std::string& key : map_keys) map_of_stem.emplace(Stem(key), key);
    dataset->root_ = images;
    for (const std::string& key : image_keys) {
      SampleSource source{key, 0};
      auto it = map_of_stem.find(Stem(key));
      if (it == map_of_stem.end()) {
        source.error = SampleError(absl::StatusCode::kNotFound, reason::kMissingLabel,
                                   absl::StrCat("no label map ", maps, "/", Stem(key),
                                                ".png for image ", key));
        dataset->label_maps_.emplace_back();
      } else {
        dataset->label_maps_.push_back(absl::StrCat(maps, "/", it->second));
      }
      dataset->samples_.push_back(std::move(source));
    }
    if (dataset->samples_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(images, ": no image files found"));
    }
  } else {
    // A list file: `image label_map` per line, relative to `data` when given, else to
    // the list's directory.
    std::string text;
    if (absl::Status s = env->ReadFile(maps, int64_t{1} << 30, &text); !s.ok()) return s;
    const size_t slash = maps.rfind('/');
    const std::string base = !options.path.empty() ? StripTrailingSlashes(options.path)
                             : slash == std::string::npos ? std::string(".")
                                                          : maps.substr(0, slash);
    dataset->root_ = base;
    int line_number = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++line_number;
      line = absl::StripAsciiWhitespace(line);
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> fields =
          absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (fields.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            maps, ":", line_number, ": want `image label_map` (two paths), got ",
            fields.size(), " fields: '", line, "'"));
      }
      dataset->samples_.push_back(SampleSource{fields[0], 0});
      dataset->label_maps_.push_back(Joined(base, fields[1]));
    }
    if (dataset->samples_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(maps, ": no `image label_map` line"));
    }
  }
  dataset->storage_ = std::move(*storage);
  return dataset;
}

}  // namespace flowloader
