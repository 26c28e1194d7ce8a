// read_stage.h: the built-in `read` stage's factory (graph/read_stage.cc), registered by
// RegisterBuiltinStages with ReadSchema.
#ifndef FLOWLOADER_GRAPH_READ_STAGE_H_
#define FLOWLOADER_GRAPH_READ_STAGE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "graph/stage.h"

namespace flowloader {

// MakeReadStage makes a read stage from its options (max_retries, backoff_ms,
// max_file_bytes); with remote data and read_ahead not 0, it reads ahead (and declares
// the read-ahead bytes in env.memory).
absl::StatusOr<std::unique_ptr<SampleStage>> MakeReadStage(const StageArgs& args, StageEnv& env);

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_READ_STAGE_H_
