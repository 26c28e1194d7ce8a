#include "stages/reader/dataset.h"

#include <algorithm>
#include <atomic>
#include <thread>  // NOLINT(build/c++11)
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "stages/core/log.h"
#include "stages/reader/dataset_storage.h"
#include "stages/reader/env_util.h"
#include "stages/reader/internal/list_columns.h"
#include "stages/reader/internal/shard_names.h"
#include "stages/reader/schemes.h"

namespace flowloader {
namespace {

using reader_internal::kColumnsHeader;
using reader_internal::ParseColumnsHeader;

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// ListClassFiles appends every image file below `dir` (relative key prefix `prefix`) in
// torchvision's order: sorted(os.walk(dir)) visits directories by path string, and each
// directory's file names sorted. Collected as (directory, name) and sorted once.
// Links are followed (followlinks=True), except a link back to a directory the walk is
// already inside (`ancestors`, canonical paths): that would list the same files again
// and again, so it is skipped with one log line.
absl::Status ListClassFiles(Env* env, const std::string& dir, const std::string& prefix,
                            std::vector<std::string>* ancestors,
                            std::vector<std::pair<std::string, std::string>>* files) {
  absl::StatusOr<std::vector<DirEntry>> entries = env->ListDirectory(dir);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& e : *entries) {
    if (e.is_directory) {
      const std::string child = dir + "/" + e.name;
      absl::StatusOr<std::string> canonical = env->CanonicalPath(child);
      if (!canonical.ok()) return canonical.status();
      if (std::find(ancestors->begin(), ancestors->end(), *canonical) != ancestors->end()) {
        LogWarning(absl::StrCat("dataset: not following ", child, ": it links back to ",
                                *canonical, ", which contains it"));
        continue;
      }
      ancestors->push_back(*canonical);
      absl::Status s = ListClassFiles(env, child, prefix + "/" + e.name, ancestors, files);
      ancestors->pop_back();
      if (!s.ok()) return s;
    } else if (HasImageExtension(e.name)) {
      files->emplace_back(prefix, e.name);
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool HasImageExtension(const std::string& name) {
  static constexpr const char* kExtensions[] = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                                ".pgm", ".tif",  ".tiff", ".webp"};
  const std::string lower = absl::AsciiStrToLower(name);
  for (const char* ext : kExtensions) {
    if (absl::EndsWith(lower, ext)) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::OfSize(int64_t size, std::string root) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a dataset needs at least one sample, got size ", size));
  }
  std::unique_ptr<Dataset> dataset(new Dataset());
  dataset->root_ = std::move(root);
  dataset->computed_size_ = size;  // No table: SampleAt makes each sample when asked.
  return dataset;
}

const SampleSource& Dataset::SampleAt(int64_t i, SampleSource* scratch) const {
  if (!computed()) return sample(i);
  *scratch = SampleSource();
  scratch->key = absl::StrCat(i);
  return *scratch;
}

std::unique_ptr<Dataset> Dataset::OfCoco(
    std::shared_ptr<const detection::CocoDataset> annotations,
    std::unique_ptr<StorageEnv> storage) {
  std::unique_ptr<Dataset> dataset(new Dataset());
  dataset->env_ = storage.get();
  dataset->storage_ = std::move(storage);
  dataset->root_ = StripTrailingSlashes(annotations->options().images);
  dataset->samples_.resize(annotations->images().size());
  for (size_t i = 0; i < dataset->samples_.size(); ++i) {
    dataset->samples_[i].key = annotations->images()[i].file_name;
  }
  dataset->annotations_ = std::move(annotations);
  return dataset;
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::Open(const DatasetOptions& options) {
  return OpenOne(options, /*in_mixture=*/false);
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::OpenOne(const DatasetOptions& options,
                                                          bool in_mixture) {
  if (options.path.empty()) return absl::InvalidArgumentError("dataset path is empty");
  if (absl::Status s = CheckColumnNames(options.columns); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("columns ", s.message()));
  }
  if (options.column_max_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("column_max_bytes must be >= 1, got ",
                                                   options.column_max_bytes));
  }
  // Every path goes through the StorageEnv: local ones to options.env, remote ones to
  // their scheme's Env (made on first use).
  absl::StatusOr<std::unique_ptr<StorageEnv>> storage = OpenStorage(options);
  if (!storage.ok()) return storage.status();
  Env* env = storage->get();
  const std::string path = StripTrailingSlashes(options.path);
  // A URL that cannot be listed or a brace pattern names shards that need not exist as
  // one file.
  const bool pattern = !IsListablePath(path) || shard_internal::HasBraces(path);
  absl::StatusOr<bool> is_dir = pattern ? false : env->IsDirectory(path);
  if (!is_dir.ok()) {
    // A store's refusal (credentials, bucket, endpoint) already names the path and why;
    // one the user must fix (an endpoint that does not answer included), not an internal
    // fault.
    if (IsRemotePath(path) && is_dir.status().code() != absl::StatusCode::kNotFound) {
      const absl::StatusCode code = is_dir.status().code() == absl::StatusCode::kInternal
                                        ? absl::StatusCode::kFailedPrecondition
                                        : is_dir.status().code();
      return absl::Status(code, is_dir.status().message());
    }
    // The Env's message starts with the path again: once is enough (a long path made a
    // 500-character line), and `data` is the setting that named it.
    return absl::NotFoundError(
        absl::StrCat("data ", path, " not found: ",
                     absl::StripPrefix(is_dir.status().message(), absl::StrCat(path, ": "))));
  }
  absl::StatusOr<std::vector<std::string>> shards = ShardPaths(env, path, *is_dir);
  if (!shards.ok()) return shards.status();
  if (!shards->empty()) {
    return OpenShards(options, std::move(*storage), *shards, *is_dir ? path : DirName(path));
  }
  if (!options.label_key.empty() && !in_mixture) {
    // Not ignored: whoever set it expects labels from JSON, which only shards carry (in a
    // mixture it is for the sources that are shards).
    return absl::InvalidArgumentError(absl::StrCat(
        "label_key '", options.label_key, "' is for tar shards (the .json member's field that "
        "holds the label), but ", path,
        *is_dir ? " is an ImageFolder directory (labels from its class directories)"
                : " is a list file (labels from its label column)",
        ": remove label_key"));
  }
  std::unique_ptr<Dataset> dataset(new Dataset());
  dataset->env_ = env;
  dataset->storage_ = std::move(*storage);

  if (*is_dir) {
    dataset->root_ = path;
    absl::StatusOr<std::vector<DirEntry>> entries = env->ListDirectory(path);
    if (!entries.ok()) return entries.status();
    for (const DirEntry& e : *entries) {
      if (e.is_directory) dataset->class_names_.push_back(e.name);
    }
    std::sort(dataset->class_names_.begin(), dataset->class_names_.end());
    if (dataset->class_names_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": no class sub-directories (ImageFolder layout is ",
                       "ROOT/CLASS/IMAGE)"));
    }
    const size_t classes = dataset->class_names_.size();
    std::vector<std::vector<std::pair<std::string, std::string>>> files(classes);
    std::vector<absl::Status> listed(classes);
    auto list_class = [&](size_t label) -> absl::Status {
      const std::string& name = dataset->class_names_[label];
      const std::string class_dir = path + "/" + name;
      absl::StatusOr<std::string> canonical_root = env->CanonicalPath(path);
      absl::StatusOr<std::string> canonical_class = env->CanonicalPath(class_dir);
      if (!canonical_root.ok()) return canonical_root.status();
      if (!canonical_class.ok()) return canonical_class.status();
      std::vector<std::string> ancestors = {*canonical_root, *canonical_class};
      absl::Status s = ListClassFiles(env, class_dir, name, &ancestors, &files[label]);
      std::sort(files[label].begin(), files[label].end());
      return s;
    };
    // A remote class is one listing request (or more) each: index_threads of them at once
    // (an s3:// prefix of 10 classes through a 20 ms proxy took 0.22 s one after another).
    // The samples come out in label order whatever order the listings finish in.
    const size_t threads = IsRemotePath(path)
                               ? std::min<size_t>(std::max(1, options.index_threads), classes)
                               : 1;
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t label = next++; label < classes; label = next++) listed[label] = list_class(label);
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (size_t label = 0; label < classes; ++label) {
      if (!listed[label].ok()) return listed[label];  // The first class's error, in order.
      for (const auto& [dir, file] : files[label]) {
        dataset->samples_.push_back(
            SampleSource{absl::StrCat(dir, "/", file), static_cast<int64_t>(label)});
      }
      files[label] = {};  // Freed as the table grows.
    }
    if (dataset->samples_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": no image files found"));
    }
    if (!options.columns.empty()) {
      absl::Status s = dataset->SelectColumns(path, options.columns, in_mixture);
      if (!s.ok()) return s;
    }
    return dataset;
  }

  // A list file.
  dataset->root_ = DirName(path);
  std::string text;
  // List files are small; 1 GiB is only a guard against a wrong path.
  if (absl::Status s = env->ReadFile(path, int64_t{1} << 30, &text); !s.ok()) return s;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripSuffix(line, "\r");
    if (absl::StartsWith(line, kColumnsHeader) && dataset->samples_.empty()) {
      absl::Status s = ParseColumnsHeader(path, line_number, line, &dataset->column_names_);
      if (!s.ok()) return s;
      continue;
    }
    if (absl::StripAsciiWhitespace(line).empty() || absl::StartsWith(line, "#")) continue;
    if (!dataset->column_names_.empty()) {
      absl::Status s = dataset->AddColumnsLine(path, line_number, line);
      if (!s.ok()) return s;
      continue;
    }
    const size_t tab = line.rfind('\t');
    if (tab != absl::string_view::npos && line.find('\t') != tab) {
      // Two tabs are a third column or a tab in a path: either way not `path<TAB>label`.
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number, ": more than one tab (expected `path<TAB>label`, "
                       "and a path cannot hold a tab; more columns need a first line "
                       "`#columns: path label NAME...`), got \"", line.substr(0, 200), "\""));
    }
    int64_t label = 0;
    if (tab == absl::string_view::npos || tab == 0 ||
        !absl::SimpleAtoi(line.substr(tab + 1), &label) || label < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number,
                       ": expected `path<TAB>label` with a label >= 0, got \"",
                       line.substr(0, 200), "\""));
    }
    if (line.substr(0, tab).find('\0') != absl::string_view::npos) {
      // The system calls would read the path up to the NUL (another file), and every
      // message naming it was cut there.
      std::string shown(line.substr(0, std::min<size_t>(tab, 200)));
      std::replace(shown.begin(), shown.end(), '\0', '?');
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": the path holds a NUL byte, which no path can: \"", shown,
          "\" (shown as ?; remove it)"));
    }
    dataset->samples_.push_back(SampleSource{std::string(line.substr(0, tab)), label});
  }
  if (dataset->samples_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the list file has no samples"));
  }
  if (!options.columns.empty()) {
    absl::Status s = dataset->SelectColumns(path, options.columns, in_mixture);
    if (!s.ok()) return s;
  }
  return dataset;
}

int64_t Dataset::table_bytes() const {
  // A std::string keeps up to 15 characters inline (libstdc++); a longer key is a heap
  // block of capacity + 1 bytes, rounded up to malloc's 16-byte chunks (plus its 8-byte
  // header).
  auto heap = [](const std::string& s) -> int64_t {
    if (s.capacity() <= 15) return 0;
    return (static_cast<int64_t>(s.capacity()) + 1 + 8 + 15) / 16 * 16;
  };
  int64_t bytes = static_cast<int64_t>(samples_.capacity() * sizeof(SampleSource));
  for (const SampleSource& s : samples_) bytes += heap(s.key);
  bytes += static_cast<int64_t>(members_.capacity() * sizeof(SampleMember));
  for (const std::string& shard : shards_) bytes += sizeof(std::string) + heap(shard);
  bytes += heap(column_text_) + static_cast<int64_t>(column_ends_.capacity() * 8);
  return bytes;
}

std::string Dataset::FullPath(int64_t i) const {
  if (computed()) return absl::StrCat(root_, "/", i);
  const SampleSource& source = samples_[static_cast<size_t>(i)];
  if (source.shard >= 0) return shards_[static_cast<size_t>(source.shard)];
  const std::string& key = source.key;
  // A list file may name files anywhere; joining "/data" to "/data/a.jpg" would not exist.
  if (absl::StartsWith(key, "/") || IsRemotePath(key)) return key;
  const std::string& root =
      source_roots_.empty() ? root_ : source_roots_[static_cast<size_t>(source.source)];
  return root + "/" + key;
}

}  // namespace flowloader
