// fault_env.h: an Env that injects file-system faults, for tests.
//
// Wraps a real Env and, for paths containing a configured substring, fails reads with an
// errno (EIO, EACCES, ENOENT: a file that vanished after listing) for the first N
// attempts or forever, truncates what is read (a short read), or delays each read.
//
// Thread-safety: thread-safe; rules may be added while reads are in flight.
#ifndef FLOWLOADER_STAGES_READER_FAULT_ENV_H_
#define FLOWLOADER_STAGES_READER_FAULT_ENV_H_

#include <mutex>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "stages/reader/env.h"

namespace flowloader {

struct Fault {
  // errno to fail with; 0 means the read itself succeeds (see the other fields).
  int error_number = 0;
  // How many reads fail before the file reads normally; -1 means every read fails.
  int failures = -1;
  // Keep only this many bytes of the file (a short read); -1 keeps all.
  int64_t truncate_to = -1;
  // Sleep this long before every read of the file.
  absl::Duration delay = absl::ZeroDuration();
};

class FaultEnv : public ForwardingEnv {
 public:
  explicit FaultEnv(Env* base) : ForwardingEnv(base) {}

  // Inject applies `fault` to every path containing `path_substring`.
  void Inject(const std::string& path_substring, const Fault& fault);
  // Attempts returns how many times paths containing `path_substring` were read.
  int Attempts(const std::string& path_substring) const;

  absl::Status ReadFile(const std::string& path, int64_t max_bytes,
                        std::string* contents) override;
  // ReadRange applies the same rules to positioned reads (a tar member): a truncated file
  // ends at truncate_to, so a range past it comes back short or empty.
  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) override;
  // NewRandomAccessFile is Env's: every read goes through ReadRange and meets the faults.
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return Env::NewRandomAccessFile(path);
  }

 private:
  // Apply counts an attempt on `path` and returns the fault to apply, if any rule matches.
  bool Apply(const std::string& path, Fault* fault, bool* fail);

  struct Rule {
    Fault fault;
    int attempts = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Rule> rules_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_FAULT_ENV_H_
