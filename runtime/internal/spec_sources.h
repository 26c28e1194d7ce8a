// spec_sources.h: the spec's `sources:` key, weighted datasets instead of `data:`.
//
//   sources:
//     - {name: photos, data: train, weight: 3}
//     - {name: sketches, data: sketches/list.txt, weight: 1}
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_SPEC_SOURCES_H_
#define FLOWLOADER_RUNTIME_INTERNAL_SPEC_SOURCES_H_

#include <string>

#include "absl/status/status.h"
#include "runtime/internal/spec_reader.h"
#include "runtime/pipeline.h"

namespace flowloader {
namespace spec_internal {

// ParseSources reads `sources:`, a non-empty list of {name, data, weight} mappings (name
// and data required, weight > 0, default 1, names unique), into options->sources.
absl::Status ParseSources(const SpecReader& r, const Field& f, PipelineOptions* options);

// SourcesYaml writes options.sources as ParseSources reads them ("" when there are none).
std::string SourcesYaml(const PipelineOptions& options);

}  // namespace spec_internal
}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_SPEC_SOURCES_H_
