// shard_index_bench: how long opening tar shards over HTTP takes, and how many requests
// it sends, for several index window sizes (DatasetOptions::http_index_window_bytes):
// 512 bytes is one range request per tar header; larger windows serve every header
// inside them from one request.
//
//   bazel run //tests/benchmarks:shard_index_bench -- 'http://HOST:PORT/train-{0..3}.tar'
//
// Prints one JSON object per window: {"window_bytes", "seconds", "requests", "samples"}.
#include <cstdio>
#include <memory>

#include "absl/time/clock.h"
#include "stages/reader/dataset.h"
#include "stages/reader/http_env.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: shard_index_bench URL_PATTERN\n");
    return 2;
  }
  for (const int64_t window : {int64_t{512}, int64_t{64} << 10, int64_t{1} << 20, int64_t{4} << 20}) {
    flowloader::DatasetOptions o;
    o.path = argv[1];
    o.http_index_window_bytes = window;
    const absl::Time t0 = absl::Now();
    auto ds = flowloader::Dataset::Open(o);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
    if (!ds.ok()) {
      std::fprintf(stderr, "%s\n", std::string(ds.status().message()).c_str());
      return 1;
    }
    const flowloader::StorageEnv* http = (*ds)->storage();
    std::printf("{\"window_bytes\": %lld, \"seconds\": %.4f, \"requests\": %lld, \"samples\": %lld}\n",
                static_cast<long long>(window), seconds,  // NOLINT(runtime/int)
                static_cast<long long>(http != nullptr ? http->requests() : -1),  // NOLINT
                static_cast<long long>((*ds)->size()));  // NOLINT(runtime/int)
  }
  return 0;
}
