// optional_memory.h: shrinking the memory plan's optional parts (today decode's seek
// index, a cache that only speeds up later epochs) until a configuration fits its
// budget, before the configuration is refused. Used by Pipeline::Create (memory_limit_mb,
// what the process may use, and the autotuner's ram_budget) and by `flowloader tune`
// (its ram_budget), so all three refuse only what does not fit without the caches.
//
// Thread-safety: pure functions of their arguments.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_OPTIONAL_MEMORY_H_
#define FLOWLOADER_RUNTIME_INTERNAL_OPTIONAL_MEMORY_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/pipeline.h"

namespace flowloader {
namespace pipeline_internal {

// SeekIndexMb is the seek_index_mb the options give their decode stage (the decode
// option's default when it is not set), or -1 without a decode stage.
int64_t SeekIndexMb(const PipelineOptions& options);

// WithSeekIndexMb is `options` with every decode stage's seek_index_mb set to `mb` (the
// built-in stages written out as DefaultStages, which Create builds the same way).
absl::StatusOr<PipelineOptions> WithSeekIndexMb(const PipelineOptions& options, int64_t mb);

// FitsFn says whether a configuration's plan fits: OK, ResourceExhausted when it does
// not (any other error is final).
using FitsFn = std::function<absl::Status(const PipelineOptions&)>;

// ShrinkOptionalMemory returns `options` with the seek index as large as still fits
// (the given size at most, 0 = off), when `options` themselves do not fit; when not even
// without the seek index, first with prefetch_batches (if set above 1) cut to the most
// buffers that fit; `options`
// unchanged when they fit; and the original refusal when not even without the seek index
// the plan fits. *note (if not null) says what was shrunk, for the log.
absl::StatusOr<PipelineOptions> ShrinkOptionalMemory(const PipelineOptions& options,
                                                     const FitsFn& fits,
                                                     std::string* note = nullptr);

}  // namespace pipeline_internal
}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_OPTIONAL_MEMORY_H_
