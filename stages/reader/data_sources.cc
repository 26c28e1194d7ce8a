// data_sources.cc: OpenDataSources and the sources' memory parts (see data_sources.h).
#include "stages/reader/data_sources.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "stages/reader/schemes.h"
#include "stages/reader/storage_env.h"

namespace flowloader {
namespace {

absl::StatusOr<std::shared_ptr<const Dataset>> OpenDataset(const DataSourcesOptions& options) {
  if (options.opened != nullptr) return options.opened;
  absl::StatusOr<std::unique_ptr<Dataset>> dataset =
      options.sources.empty() ? Dataset::Open(options.dataset)
                              : Dataset::OpenSources(options.sources);
  if (!dataset.ok()) return dataset.status();
  return std::shared_ptr<const Dataset>(std::move(*dataset));
}

// MixtureOf is the sampler's view of the sources: each one's size and weight.
std::vector<MixtureComponent> MixtureOf(const std::vector<DatasetSource>& sources,
                                        const Dataset& dataset) {
  std::vector<MixtureComponent> mixture;
  for (size_t i = 0; i < sources.size(); ++i) {
    mixture.push_back(
        MixtureComponent{dataset.source_size(static_cast<int32_t>(i)), sources[i].weight});
  }
  return mixture;
}

}  // namespace

absl::StatusOr<DataSources> OpenDataSources(const DataSourcesOptions& options) {
  DataSources data;
  absl::StatusOr<std::shared_ptr<const Dataset>> dataset = OpenDataset(options);
  if (!dataset.ok()) return dataset.status();
  data.dataset = *std::move(dataset);
  SamplerOptions sampler_options = options.sampler;
  sampler_options.mixture = MixtureOf(options.sources, *data.dataset);
  absl::StatusOr<std::unique_ptr<Sampler>> sampler =
      Sampler::Create(data.dataset->size(), sampler_options);
  if (!sampler.ok()) return sampler.status();
  data.sampler = std::move(*sampler);
  AddSampleTablePart(*data.dataset, &data.memory);
  AddHttpCachePart(*data.dataset, &data.memory);
  AddSamplerPart(*data.sampler, &data.memory);
  return data;
}

void AddSampleTablePart(const Dataset& dataset, std::vector<MemoryPart>* parts) {
  const int64_t bytes = dataset.table_bytes();
  // Under 1 MiB (~12 k samples) it is noise beside the batch pool, as the sampler's.
  if (bytes < (int64_t{1} << 20)) return;
  parts->push_back({"sample table", "sample_table", bytes,
                    absl::StrCat(dataset.size(), " samples × ", bytes / dataset.size(),
                                 " B (entry and key)"),
                    {"data"}});
}

void AddHttpCachePart(const Dataset& dataset, std::vector<MemoryPart>* parts) {
  const StorageEnv* http = dataset.storage();
  if (http == nullptr || http->admitted_shards() == 0) return;
  int http_shards = 0;
  for (const std::string& shard : dataset.shards()) http_shards += IsRemotePath(shard) ? 1 : 0;
  parts->push_back({"http cache", "http_cache", http->admitted_bytes(),
                    absl::StrCat("http_cache_mb ", http->cache_budget_bytes() >> 20, ": ",
                                 http->admitted_shards(), " of ", http_shards,
                                 " HTTP shards admitted"),
                    {"http_cache_mb"}});
}

void AddSamplerPart(const Sampler& sampler, std::vector<MemoryPart>* parts) {
  // Under 1 MiB (~60 k samples) it is noise beside the batch pool: left out, so the
  // plans of ordinary datasets list only what matters.
  if (sampler.order_bytes() < (int64_t{1} << 20)) return;
  parts->push_back({"sampler order", "sampler_order", sampler.order_bytes(),
                    absl::StrCat("an epoch of ", sampler.samples_per_rank(), " samples × ",
                                 sampler.order_bytes() / sampler.samples_per_rank(),
                                 " B of order"),
                    {"epoch_samples"}});
}

MemoryPart ColumnsMemoryPart(const Dataset& dataset, int prefetch_batches, int pool_rows) {
  const std::vector<std::string>& names = dataset.column_names();
  int64_t widest_row = 0;  // The longest value of each column, summed.
  for (size_t c = 0; c < names.size(); ++c) {
    size_t longest = 0;
    for (int64_t i = 0; i < dataset.size(); ++i) {
      longest = std::max(longest, dataset.column(i, c).size());
    }
    widest_row += static_cast<int64_t>(longest);
  }
  const int64_t batch_bytes = int64_t{prefetch_batches} * pool_rows * widest_row;
  return {"columns", "columns", dataset.column_bytes() + batch_bytes,
          absl::StrCat(FormatBytes(dataset.column_bytes()), " of ", dataset.size(), " samples' ",
                       absl::StrJoin(names, ","), " + prefetch ", prefetch_batches, " × batch ",
                       pool_rows, " × ", FormatBytes(widest_row), " longest row"),
          {"columns", "column_max_bytes", "prefetch_batches"}};
}

}  // namespace flowloader
