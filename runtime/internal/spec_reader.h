// spec_reader.h: typed, located reads from a parsed YAML tree, for the spec parser.
//
// Every check fails with a one-line InvalidArgument status, "FILE:LINE:COLUMN: what
// (why)", pointing at the offending node (1-based line and column, as editors count). The
// reader only inspects node types and scalar text and never calls yaml-cpp's throwing
// conversions (as<T>), so no yaml-cpp exception comes out of it. User text quoted in a
// message is shortened and its control characters escaped, so a message stays one line.
//
// Thread-safety: a SpecReader is constant after construction.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_SPEC_READER_H_
#define FLOWLOADER_RUNTIME_INTERNAL_SPEC_READER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/core/suggest.h"
#include "yaml-cpp/yaml.h"

namespace flowloader {
namespace spec_internal {

// Field is one `key: value` entry of a mapping.
struct Field {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

class SpecReader {
 public:
  // `file` names the spec in every message.
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  // Load parses `text` as one YAML document (a Null node when it has none). Malformed
  // YAML, or a second document, is an error.
  absl::StatusOr<YAML::Node> Load(const std::string& text) const;

  // Error is `message` located at `node`; ErrorAt at a yaml-cpp mark (0-based).
  absl::Status Error(const YAML::Node& node, absl::string_view message) const;
  absl::Status ErrorAt(const YAML::Mark& mark, absl::string_view message) const;
  // Location is the "FILE:LINE:COLUMN" of `node` (the file alone when it has no mark),
  // for errors found after parsing (a stage item's StageSpec::where).
  std::string Location(const YAML::Node& node) const;

  // Fields lists the entries of the mapping `node` in file order. `what` names the
  // mapping in messages ("pipeline", "shard"). Fails unless `node` is a mapping whose
  // keys are distinct plain scalars.
  absl::StatusOr<std::vector<Field>> Fields(const YAML::Node& node, absl::string_view what) const;
  // Fields of a field whose value must be a mapping (`shard: {...}`).
  absl::StatusOr<std::vector<Field>> Fields(const Field& field, absl::string_view what) const;

  // ValueError is `message` about `field`'s value, prefixed with its key; Expected says
  // the value is missing or not `expected` ("a list of stages").
  absl::Status ValueError(const Field& field, absl::string_view message) const;
  absl::Status Expected(const Field& field, absl::string_view expected) const;

  // UnknownKey is the error for `field`, whose key is none of `known`, in `what`.
  absl::Status UnknownKey(const Field& field, absl::string_view what,
                          const std::vector<std::string>& known) const;

  // Scalar sets *out to the value's text (possibly empty); `expected` names the wanted
  // kind in the error for a missing value, a list or a mapping.
  absl::Status Scalar(const Field& field, absl::string_view expected, std::string* out) const;
  // String is a non-empty scalar.
  absl::Status String(const Field& field, std::string* out) const;
  // Choice is a scalar equal to one of `choices`.
  absl::Status Choice(const Field& field, const std::vector<std::string>& choices,
                      std::string* out) const;
  // Plain is Scalar for a typed value: a quoted scalar ("32") is refused as a string.
  absl::Status Plain(const Field& field, absl::string_view expected, std::string* out) const;
  // Bool is true or false (also True/TRUE/False/FALSE, YAML 1.2's core schema); yes/no/on/
  // off are refused rather than guessed at.
  absl::Status Bool(const Field& field, bool* out) const;
  // Int64 is a decimal integer in [min, max]; Uint64 one in [0, 2^64). Both refuse a
  // quoted scalar, as Bool does.
  absl::Status Int64(const Field& field, int64_t min, int64_t max, int64_t* out) const;
  absl::Status Uint64(const Field& field, uint64_t* out) const;

  // Int narrows Int64 into a smaller integer field; [min, max] must fit T.
  template <typename T>
  absl::Status Int(const Field& field, int64_t min, int64_t max, T* out) const {
    int64_t v = 0;
    if (absl::Status s = Int64(field, min, max, &v); !s.ok()) return s;
    *out = static_cast<T>(v);
    return absl::OkStatus();
  }

 private:
  std::string file_;
};

// NotText names what makes `text` not the UTF-8 text YAML reads ("byte 0xe4, which is
// not UTF-8", "a control character (\x00)"), with *at its offset (0-based), or "" when
// it is text. yaml-cpp passes through what YAML forbids: a NUL
// in `name: a\0b` made the pipeline label 'a' in logs, and a Latin-1 "ä" made a label
// that is not UTF-8, which fails Prometheus's whole scrape. Tab, line feed and carriage
// return are the control characters text may hold.
std::string NotText(const std::string& text, size_t* at);

// Quote returns user text for a message: in single quotes, at most 40 characters, with
// control characters escaped.
std::string Quote(absl::string_view text);

// Describe names what a node holds, for "got ..." in messages: 'text', a list, a mapping
// or nothing.
std::string Describe(const YAML::Node& node);

// Suggestion (stages/core/suggest.h) ends an unknown-name message.
using ::flowloader::Suggestion;

// ShortSuggestion is Suggestion, except that a "(known: ...)" list longer than a line's
// share (the spec's 46 keys, the 40 ops: a 650-character refusal) becomes "(none is
// close; `listed_by`)", saying where the list is: an unknown name stays one short line.
std::string ShortSuggestion(absl::string_view name, const std::vector<std::string>& known,
                            absl::string_view listed_by);

}  // namespace spec_internal
}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_SPEC_READER_H_
