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
//    are ignored.
// A sample's key is its path relative to the root (for a list file: the path as written);
// that is what logs and --keys_out name.
//
// Thread-safety: immutable after Open; safe to read from any thread.
#ifndef FLOWLOADER_STAGES_READER_DATASET_H_
#define FLOWLOADER_STAGES_READER_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/reader/env.h"

namespace flowloader {

struct SampleSource {
  std::string key;    // Path relative to the dataset root ("cat/001.jpg"), or absolute.
  int64_t label = 0;  // Class index.
};

struct DatasetOptions {
  // An ImageFolder root directory, or a list file (`path<TAB>label` lines). Required.
  std::string path;
  // File-system access; nullptr means Env::Default(). Not owned; must outlive the Dataset.
  Env* env = nullptr;
};

class Dataset {
 public:
  // Open lists the dataset. Fails if the path is missing, an ImageFolder has no class
  // directory or no image, or a list file has a malformed line (named by line number).
  static absl::StatusOr<std::unique_ptr<Dataset>> Open(const DatasetOptions& options);

  int64_t size() const { return static_cast<int64_t>(samples_.size()); }
  const SampleSource& sample(int64_t i) const { return samples_[static_cast<size_t>(i)]; }
  // root is the directory keys are relative to (no trailing '/').
  const std::string& root() const { return root_; }
  // class_names are the ImageFolder class directories by label; empty for list files.
  const std::vector<std::string>& class_names() const { return class_names_; }
  // FullPath is a sample's file: root and its key joined, or the key itself when absolute.
  std::string FullPath(int64_t i) const;

 private:
  Dataset() = default;
  std::string root_;
  std::vector<std::string> class_names_;
  std::vector<SampleSource> samples_;
};

// HasImageExtension reports whether `name` ends in one of ImageFolder's extensions.
bool HasImageExtension(const std::string& name);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_DATASET_H_
