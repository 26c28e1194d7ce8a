// cache_options.h: the settings of the on-disk cache of remote data (spec keys cache_dir,
// cache_bytes; runtime/spec.cc). See internal/disk_cache.h for what it keeps and how.
#ifndef FLOWLOADER_STAGES_READER_CACHE_OPTIONS_H_
#define FLOWLOADER_STAGES_READER_CACHE_OPTIONS_H_

#include <cstdint>
#include <string>

namespace flowloader {

struct DiskCacheOptions {
  // The directory (made if missing; the cache lives in DIR/flowloader-cache); empty
  // (default) = no disk cache. Processes naming the same directory share it.
  std::string dir;
  // Most bytes the cached entries may take; the least recently used are removed past it;
  // >= 1. Default 10 GiB.
  int64_t bytes = int64_t{10} << 30;
  // Size of one cached block of a shard (one ranged GET each); > 0. Default 1 MiB.
  int64_t block_bytes = int64_t{1} << 20;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_CACHE_OPTIONS_H_
