#include "runtime/internal/spec_reader.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "stages/core/bool_text.h"
#include "stages/core/suggest.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/eventhandler.h"

namespace flowloader {
namespace spec_internal {
namespace {

// Where is the node an error about `field` points at: its value, or the key when there
// is no value (yaml-cpp marks an empty value at the start of the next line).
const YAML::Node& Where(const Field& field) {
  return field.value.IsNull() || field.value.Mark().is_null() ? field.key_node : field.value;
}

// DocumentStarts keeps where each document of an event stream starts, nothing else.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// IsDecimal: an optional sign, then digits only (so SimpleAtoi's failure means overflow).
bool IsDecimal(absl::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// ContinuationBytes is how many continuation bytes a UTF-8 sequence starting with `lead`
// has, with the range its first one must be in (no overlong forms, no surrogates, nothing
// past U+10FFFF); -1 when `lead` starts none.
int ContinuationBytes(unsigned char lead, unsigned char* low, unsigned char* high) {
  *low = 0x80;
  *high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) return 1;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (lead == 0xE0) *low = 0xA0;
    if (lead == 0xED) *high = 0x9F;
    return 2;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (lead == 0xF0) *low = 0x90;
    if (lead == 0xF4) *high = 0x8F;
    return 3;
  }
  return -1;
}

}  // namespace

std::string NotText(const std::string& text, size_t* at) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    *at = i;
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
        return absl::StrFormat("a control character (\\x%02x)", c);
      }
      continue;
    }
    unsigned char low = 0, high = 0;
    const int more = ContinuationBytes(c, &low, &high);
    bool valid = more > 0 && i + more < text.size();
    for (int k = 1; valid && k <= more; ++k) {
      const unsigned char next = static_cast<unsigned char>(text[i + k]);
      valid = k == 1 ? next >= low && next <= high : next >= 0x80 && next <= 0xBF;
    }
    if (!valid) {
      return absl::StrFormat("byte 0x%02x, which is not UTF-8", c);
    }
    i += static_cast<size_t>(more);
  }
  return "";
}

namespace {

// IsWideUnicode: the UTF-16 or UTF-32 text yaml-cpp decodes itself (a byte order mark, or
// YAML's detection by the NULs around the first, ASCII, character).
bool IsWideUnicode(const std::string& text) {
  if (text.size() < 2) return false;
  const unsigned char a = static_cast<unsigned char>(text[0]);
  const unsigned char b = static_cast<unsigned char>(text[1]);
  return (a == 0xFE && b == 0xFF) || (a == 0xFF && b == 0xFE) || a == 0 || b == 0;
}

}  // namespace

absl::StatusOr<YAML::Node> SpecReader::Load(const std::string& text) const {
  if (size_t at = 0; !IsWideUnicode(text)) {
    if (const std::string why = NotText(text, &at); !why.empty()) {
      const size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
      const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
      YAML::Mark mark;
      mark.pos = static_cast<int>(at);
      mark.line = static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
      mark.column = static_cast<int>(at - line_start);
      return ErrorAt(mark, absl::StrCat("the text holds ", why,
                                        ": a spec is plain UTF-8 text (is this the right file?)"));
    }
  }
  try {
    // Count the documents with the event parser first, three at most: yaml-cpp 0.7's
    // LoadAll never returns on a stray ',' where a document should begin (the parser
    // reports an empty document there again and again without consuming anything, and
    // LoadAll allocates a node for each), which shows as two documents starting at the
    // same place.
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    DocumentStarts documents;
    while (documents.starts.size() < 3 && parser.HandleNextDocument(documents)) {
    }
    const std::vector<YAML::Mark>& starts = documents.starts;
    for (size_t i = 1; i < starts.size(); ++i) {
      if (starts[i].pos == starts[i - 1].pos) {
        const size_t at = static_cast<size_t>(starts[i].pos);
        return ErrorAt(starts[i],
                       absl::StrCat("invalid YAML: unexpected ",
                                    at < text.size() ? Quote(text.substr(at, 1)) : "character"));
      }
    }
    if (starts.size() > 1) {
      return ErrorAt(starts[1], "a spec is one YAML document; this is a second (remove the '---')");
    }
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp says "bad file" here.
    return ErrorAt(e.mark, "invalid YAML: nested too deeply");
  } catch (const YAML::Exception& e) {
    return ErrorAt(e.mark, absl::StrCat("invalid YAML: ", e.msg));
  }
}

absl::Status SpecReader::Error(const YAML::Node& node, absl::string_view message) const {
  return ErrorAt(node.Mark(), message);
}

absl::Status SpecReader::ErrorAt(const YAML::Mark& mark, absl::string_view message) const {
  if (mark.is_null() && file_.empty()) return absl::InvalidArgumentError(message);
  if (mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(file_, ": ", message));
  return absl::InvalidArgumentError(
      absl::StrCat(file_, ":", mark.line + 1, ":", mark.column + 1, ": ", message));
}

std::string SpecReader::Location(const YAML::Node& node) const {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return file_;
  return absl::StrCat(file_, ":", mark.line + 1, ":", mark.column + 1);
}

absl::StatusOr<std::vector<Field>> SpecReader::Fields(const YAML::Node& node,
                                                      absl::string_view what) const {
  if (!node.IsMap()) {
    return Error(node, absl::StrCat(what, " must be a mapping of keys, got ", Describe(node)));
  }
  std::vector<Field> fields;
  // By value: a yaml-cpp iterator's entries are temporaries, not references into the tree.
  for (const auto& entry : node) {
    const YAML::Node key = entry.first;
    if (!key.IsScalar()) {
      return Error(key,
                   absl::StrCat("keys in ", what, " must be plain names, got ", Describe(key)));
    }
    // yaml-cpp 0.7 has no merge keys: `<<: *base` is an ordinary key named "<<", and its
    // stage then "needs a type" that the user did give, in the anchor.
    if (key.Scalar() == "<<" && key.Tag() != "!") {
      return Error(key, absl::StrCat("merge keys (<<) are not supported: write the keys out in ",
                                     what));
    }
    // yaml-cpp keeps both entries of a repeated key (and lookups see only the first), so
    // a repeated key would silently lose a value: refuse it.
    for (const Field& seen : fields) {
      if (seen.key == key.Scalar()) {
        return Error(key, absl::StrCat("duplicate key ", Quote(key.Scalar()), " in ", what,
                                       " (first at line ", seen.key_node.Mark().line + 1, ")"));
      }
    }
    fields.push_back(Field{key.Scalar(), key, entry.second});
  }
  return fields;
}

absl::StatusOr<std::vector<Field>> SpecReader::Fields(const Field& field,
                                                      absl::string_view what) const {
  if (!field.value.IsMap()) return Expected(field, "a mapping");
  return Fields(field.value, what);
}

absl::Status SpecReader::ValueError(const Field& field, absl::string_view message) const {
  return Error(Where(field), absl::StrCat(field.key, " ", message));
}

absl::Status SpecReader::Expected(const Field& field, absl::string_view expected) const {
  if (field.value.IsNull()) {
    return Error(field.key_node, absl::StrCat(field.key, " needs a value (", expected, ")"));
  }
  return ValueError(field, absl::StrCat("must be ", expected, ", got ", Describe(field.value)));
}

absl::Status SpecReader::UnknownKey(const Field& field, absl::string_view what,
                                    const std::vector<std::string>& known) const {
  return Error(field.key_node,
               absl::StrCat("unknown key ", Quote(field.key), " in ", what, " ",
                            ShortSuggestion(field.key, known, "flowloader stages lists the keys")));
}

absl::Status SpecReader::Scalar(const Field& field, absl::string_view expected,
                                std::string* out) const {
  if (!field.value.IsScalar()) return Expected(field, expected);
  *out = field.value.Scalar();
  return absl::OkStatus();
}

absl::Status SpecReader::String(const Field& field, std::string* out) const {
  if (absl::Status s = Scalar(field, "a string", out); !s.ok()) return s;
  if (out->empty()) return ValueError(field, "must not be empty");
  return absl::OkStatus();
}

absl::Status SpecReader::Choice(const Field& field, const std::vector<std::string>& choices,
                                std::string* out) const {
  const std::string expected = absl::StrCat("one of ", absl::StrJoin(choices, ", "));
  if (absl::Status s = Scalar(field, expected, out); !s.ok()) return s;
  if (std::find(choices.begin(), choices.end(), *out) == choices.end()) {
    return ValueError(field, absl::StrCat("must be ", expected, ", got ", Quote(*out)));
  }
  return absl::OkStatus();
}

absl::Status SpecReader::Bool(const Field& field, bool* out) const {
  std::string text;
  if (absl::Status s = Plain(field, "true or false", &text); !s.ok()) return s;
  if (!ParseBoolText(text, out)) {
    return ValueError(field, absl::StrCat("must be true or false, got ", Quote(text)));
  }
  return absl::OkStatus();
}

absl::Status SpecReader::Plain(const Field& field, absl::string_view expected,
                               std::string* out) const {
  if (absl::Status s = Scalar(field, expected, out); !s.ok()) return s;
  // yaml-cpp tags a quoted scalar "!": `batch_size: "32"` is a string, not a number.
  if (field.value.Tag() == "!") {
    return ValueError(field, absl::StrCat("must be ", expected, ", got the string ", Quote(*out),
                                          " (remove the quotes)"));
  }
  return absl::OkStatus();
}

absl::Status SpecReader::Int64(const Field& field, int64_t min, int64_t max, int64_t* out) const {
  std::string text;
  if (absl::Status s = Plain(field, "an integer", &text); !s.ok()) return s;
  int64_t v = 0;
  bool below = false;
  bool above = false;
  if (absl::SimpleAtoi(text, &v)) {
    below = v < min;
    above = v > max;
  } else if (IsDecimal(text)) {
    // Digits beyond int64: out of range on the side of their sign.
    below = text[0] == '-';
    above = !below;
  } else {
    return ValueError(field, absl::StrCat("must be an integer, got ", Quote(text)));
  }
  if (below) {
    return ValueError(field, absl::StrCat("must be >= ", min, ", got ", text));
  }
  if (above) {
    return ValueError(field, absl::StrCat("must be <= ", max, ", got ", text));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status SpecReader::Uint64(const Field& field, uint64_t* out) const {
  std::string text;
  if (absl::Status s = Plain(field, "an integer", &text); !s.ok()) return s;
  if (!IsDecimal(text)) {
    return ValueError(field, absl::StrCat("must be an integer, got ", Quote(text)));
  }
  if (text[0] == '-' || !absl::SimpleAtoi(text, out)) {
    return ValueError(field, absl::StrCat("must be in [0, ", std::numeric_limits<uint64_t>::max(),
                                          "], got ", text));
  }
  return absl::OkStatus();
}

std::string Quote(absl::string_view text) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", c));
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMax) out += "...";
  return out + "'";
}

std::string ShortSuggestion(absl::string_view name, const std::vector<std::string>& known,
                            absl::string_view listed_by) {
  // The longest list shown whole: a stage item's or a source's keys, the stage types.
  constexpr size_t kMaxListChars = 200;
  std::string hint = Suggestion(name, known);
  if (!absl::StartsWith(hint, "(did you mean") &&
      absl::StrJoin(known, ", ").size() > kMaxListChars) {
    hint = absl::StrCat("(none is close; ", listed_by, ")");
  }
  return hint;
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return Quote(node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}


}  // namespace spec_internal
}  // namespace flowloader
