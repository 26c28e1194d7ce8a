// data_sources.h: a pipeline's data, opened: the dataset (an ImageFolder, a list file or
// tar shards on disk or over HTTP(S), several of them mixed by weight, or one the caller
// opened), the sampler over it, and what they hold in memory beside the batches.
//
// This is the second of Pipeline::Create's four steps (check the options → open the data
// sources → plan → build the graph): each source and storage backend declares its own
// memory parts here (the HTTP block cache, the sampler's epoch order, the columns), so
// the planner adds them to the memory plan without knowing what they are.
//
// Thread-safety: OpenDataSources may be called from any thread; the parts are plain
// values; a DataSources holds immutable objects.
#ifndef FLOWLOADER_STAGES_READER_DATA_SOURCES_H_
#define FLOWLOADER_STAGES_READER_DATA_SOURCES_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/core/memory_plan.h"
#include "stages/reader/dataset.h"
#include "stages/reader/sampler.h"

namespace flowloader {

// DataSourcesOptions says which data to open: `opened` when set, else `sources` when not
// empty, else `dataset` (its path).
struct DataSourcesOptions {
  // A dataset the caller opened (Dataset::OfSize for the Python module's dataset=).
  std::shared_ptr<const Dataset> opened;
  // Several datasets, laid end to end (Dataset::OpenSources) and mixed by weight.
  std::vector<DatasetSource> sources;
  // One dataset: an ImageFolder root, a list file or tar shards.
  DatasetOptions dataset;
  // The sampler's options; its mixture is made from `sources`' sizes and weights.
  SamplerOptions sampler;
};

// DataSources is the opened data.
struct DataSources {
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<const Sampler> sampler;
  // What the sources keep in memory whatever the batch size (AddSampleTablePart,
  // AddHttpCachePart, AddSamplerPart), in that order; the planner adds them after the stages' parts.
  std::vector<MemoryPart> memory;
};

// OpenDataSources opens the data and the sampler over it, or returns what Dataset::Open,
// Dataset::OpenSources or Sampler::Create refused.
absl::StatusOr<DataSources> OpenDataSources(const DataSourcesOptions& options);

// AddSampleTablePart adds the dataset's sample table (Dataset::table_bytes: entries and
// keys) to `parts` when it is 1 MiB or more; a computed dataset (OfSize) has none.
void AddSampleTablePart(const Dataset& dataset, std::vector<MemoryPart>* parts);

// AddHttpCachePart adds the HTTP block cache to `parts` at the bytes of the shards admitted
// to it (http_env.h): what it holds once every admitted block was read, not its budget.
// Nothing when no shard was admitted.
void AddHttpCachePart(const Dataset& dataset, std::vector<MemoryPart>* parts);

// AddSamplerPart adds the epoch order's peak (Sampler::order_bytes) to `parts` when it
// is 1 MiB or more, naming epoch_samples as its knob.
void AddSamplerPart(const Sampler& sampler, std::vector<MemoryPart>* parts);

// ColumnsMemoryPart is what the dataset's extra per-sample columns hold: every sample's
// values (read when the dataset was opened), plus each batch buffer's strings, which grow
// to at most pool_rows × the longest value of every column. Only for data with columns.
MemoryPart ColumnsMemoryPart(const Dataset& dataset, int prefetch_batches, int pool_rows);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_DATA_SOURCES_H_
