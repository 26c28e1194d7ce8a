#include "examples/internal/example_support.h"

#include <iostream>

namespace flowloader::examples {

absl::StatusOr<std::shared_ptr<const Batch>> NextBatch(Pipeline& pipeline) {
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    absl::Status s = pipeline.Next(&batch, &end_of_epoch);
    if (!s.ok()) return s;
    if (!end_of_epoch) return batch;
    if (pipeline.done()) return nullptr;
  }
}

int RunOnData(int argc, char** argv, const char* program,
              absl::Status (*run)(const std::string& data)) {
  if (argc != 2) {
    std::cerr << "usage: " << program << " DATA\n";
    return 2;
  }
  absl::Status status = run(argv[1]);
  if (!status.ok()) {
    std::cerr << program << ": " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace flowloader::examples
