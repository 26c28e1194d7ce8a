// example_support.h: what the example programs share outside their docs snippets: the
// batch loop over every epoch and the `PROGRAM DATA` main() with its exit codes.
#ifndef FLOWLOADER_EXAMPLES_INTERNAL_EXAMPLE_SUPPORT_H_
#define FLOWLOADER_EXAMPLES_INTERNAL_EXAMPLE_SUPPORT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/pipeline.h"

namespace flowloader::examples {

// NextBatch returns the pipeline's next batch, or nullptr once every epoch is delivered.
absl::StatusOr<std::shared_ptr<const Batch>> NextBatch(Pipeline& pipeline);

// RunOnData is main() for a program called as `PROGRAM DATA`: exit 2 with a usage line
// on other arguments, 1 with `PROGRAM: message` when `run(DATA)` fails, else 0.
int RunOnData(int argc, char** argv, const char* program,
              absl::Status (*run)(const std::string& data));

}  // namespace flowloader::examples

#endif  // FLOWLOADER_EXAMPLES_INTERNAL_EXAMPLE_SUPPORT_H_
