// env_util.h: small helpers over an Env and its paths, shared by the datasets and the
// commands (pack, index). Kept out of env.h, which most of the tree includes, so adding
// a helper here recompiles only its users.
//
// Thread-safety: as the Env they are given (pure functions otherwise).
#ifndef FLOWLOADER_STAGES_READER_ENV_UTIL_H_
#define FLOWLOADER_STAGES_READER_ENV_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "stages/reader/env.h"

namespace flowloader {

// StripTrailingSlashes is `path` without its trailing '/'s ("/" stays "/"), so that
// "root/" and "root" name the same directory or prefix when keys are joined to it.
std::string StripTrailingSlashes(std::string path);

// WriteWholeFile writes `text` as the whole file or object `path` through `env` (one
// WritableFile: Append, then Close; nothing is left behind on failure).
absl::Status WriteWholeFile(Env* env, const std::string& path, const std::string& text);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_ENV_UTIL_H_
