// options_check.h: the first of Pipeline::Create's four steps (check the options → open
// the data sources → plan → build the graph): what can be refused from the options alone,
// before any file is opened. What depends on the data (the resume cursor against an
// epoch's batches) or on resolved `auto` knobs is checked where the plan is made
// (graph/pipeline_graph.h), and a stage's options by its factory.
//
// Thread-safety: CheckPipelineOptions reads http.ca_file (when set) and nothing else; safe
// from any thread.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_OPTIONS_CHECK_H_
#define FLOWLOADER_RUNTIME_INTERNAL_OPTIONS_CHECK_H_

#include "absl/status/status.h"
#include "runtime/pipeline.h"

namespace flowloader {

// CheckPipelineOptions returns InvalidArgument naming the first option that no data could
// make valid: an empty name, an unreadable http CA file, more than one of data / sources /
// dataset, an even_shards or (for the built-in stages) transform that is not one of its
// choices.
absl::Status CheckPipelineOptions(const PipelineOptions& options);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_OPTIONS_CHECK_H_
