// dataset_storage.h: the StorageEnv a dataset's options describe, made in one place for
// every reader and command that opens data (the datasets, the categories file and the
// COCO file of runtime/pipeline.cc), so each gets all of the remote settings: http_*,
// s3_* and the on-disk cache (cache_*).
//
// Thread-safety: a pure function of its argument.
#ifndef FLOWLOADER_STAGES_READER_DATASET_STORAGE_H_
#define FLOWLOADER_STAGES_READER_DATASET_STORAGE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "stages/reader/dataset.h"
#include "stages/reader/storage_env.h"

namespace flowloader {

// OpenStorage makes the StorageEnv of `options`: local paths through options.env
// (nullptr: the process's file system), remote ones through their scheme's Env with
// options.http, options.s3 and options.cache. Its refusals are StorageEnv::Create's.
absl::StatusOr<std::unique_ptr<StorageEnv>> OpenStorage(const DatasetOptions& options);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_DATASET_STORAGE_H_
