// dataset_storage.cc: see dataset_storage.h.
#include "stages/reader/dataset_storage.h"

namespace flowloader {

absl::StatusOr<std::unique_ptr<StorageEnv>> OpenStorage(const DatasetOptions& options) {
  return StorageEnv::Create(options.env,
                            StorageOptions{options.http, options.s3, options.cache});
}

}  // namespace flowloader
