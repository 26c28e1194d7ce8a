// bounded_read.h: reads a whole local file that a user names and that is parsed whole (the
// COCO annotations, stages/detection/coco.cc; a spec, runtime/spec.cc), to its end but
// never past a limit: a pipe or a device has no size up front (a spec from <(...) is read;
// /dev/zero is read to the limit, not until memory runs out). Each caller words its own
// refusals (naming its knob) from the outcome reported here.
//
// Thread-safety: a pure function (its own file descriptor per call).
#ifndef FLOWLOADER_STAGES_CORE_BOUNDED_READ_H_
#define FLOWLOADER_STAGES_CORE_BOUNDED_READ_H_

#include <cstdint>
#include <string>

namespace flowloader {

struct BoundedRead {
  enum class Outcome {
    kRead,        // *text holds the whole file.
    kCannotOpen,  // open(2) failed: `error`.
    kDirectory,   // The path is a directory.
    kTooLarge,    // More than max_bytes: `size` when known up front.
    kCannotRead,  // read(2) failed: `error`.
  };
  Outcome outcome = Outcome::kRead;
  int error = 0;      // errno, for kCannotOpen and kCannotRead.
  int64_t size = -1;  // kTooLarge: a regular file's size; -1 when the limit was passed
                      // while reading (a pipe or a device, which has no size).
  bool ok() const { return outcome == Outcome::kRead; }
};

// ReadBounded replaces *text with the file at `path` when it holds at most `max_bytes`
// bytes; otherwise *text is left empty. A regular file over the limit is refused from its
// size before any byte is read; anything else is read until it ends or passes the limit.
// The open blocks, as cat's does, so a FIFO waits for its writer.
BoundedRead ReadBounded(const std::string& path, int64_t max_bytes, std::string* text);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_BOUNDED_READ_H_
