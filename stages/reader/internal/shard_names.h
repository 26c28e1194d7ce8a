// shard_names.h: the naming rules of WebDataset tar shards (internal to stages/reader).
//
//  * ExpandBraces: `train-{000000..000146}.tar` and `{a,b}` lists, as the braceexpand
//    package (which webdataset uses) expands them.
//  * SplitKey: webdataset's base_plus_ext, `^((?:.*/|)[^.]+)[.]([^/]*)$`: the key is the
//    member's directory plus its basename up to the first dot, the extension the rest.
//  * IsMetaMember: webdataset's skip_meta, `__[^/]*__($|/)` at the start of the name.
//  * JsonIntField: a top-level integer field of a JSON object (the label_key option).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_SHARD_NAMES_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_SHARD_NAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace flowloader {
namespace shard_internal {

// HasBraces reports whether `pattern` holds a brace range or list to expand.
bool HasBraces(absl::string_view pattern);

// ExpandBraces expands every `{A..B}` (numbers, zero-padded to the wider of A and B when
// either has a leading zero, or letters) and `{x,y,z}` in `pattern`, left to right, in
// order. Fails on an unmatched brace or more than `max_names` names.
absl::StatusOr<std::vector<std::string>> ExpandBraces(absl::string_view pattern,
                                                      size_t max_names = 1000000);

// SplitKey splits a member name into (key, extension) as base_plus_ext does; false when
// the name has no extension (webdataset drops such members).
bool SplitKey(const std::string& name, std::string* key, std::string* extension);

// IsMetaMember reports whether webdataset skips `name` as metadata (`__x__...`).
bool IsMetaMember(absl::string_view name);

// JsonIntField finds `"field": INTEGER` at the top level of the JSON object `json`
// (an integer written as a number, or as a string of digits).
bool JsonIntField(absl::string_view json, absl::string_view field, int64_t* value);

}  // namespace shard_internal
}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_SHARD_NAMES_H_
