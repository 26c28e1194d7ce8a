// op.cc: the op registry, argument texts and the range checks the ops share.
#include "stages/augment/ops/op.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "stages/core/suggest.h"

namespace flowloader::augment {
namespace {

// Values a message quotes (an argument's text, an op's name) are cut to this many
// characters: a 1 MB string in a spec or a Python call gives a line, not a megabyte.
constexpr size_t kMaxQuotedChars = 200;

// Quoted is `text` cut to max_chars (kMaxQuotedChars unless told), saying how long it
// was, its control characters escaped (\0, \n, \xNN): a NUL in an argument's name cut the message there
// ("center_crop has no argument 'size"), a newline made it two lines.
std::string Quoted(absl::string_view text, size_t max_chars = kMaxQuotedChars) {
  const absl::string_view kept = text.substr(0, max_chars);
  std::string out;
  for (const char c : kept) {
    const auto u = static_cast<unsigned char>(c);
    if (u == 0) {
      out += "\\0";
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  if (text.size() > max_chars) absl::StrAppend(&out, "... (", text.size(), " characters)");
  return out;
}

bool ParseNumber(absl::string_view text, double* out) {
  text = absl::StripAsciiWhitespace(text);
  if (text == "true" || text == "True") {
    *out = 1;
    return true;
  }
  if (text == "false" || text == "False") {
    *out = 0;
    return true;
  }
  return absl::SimpleAtod(text, out) && std::isfinite(*out);
}

bool IsWord(absl::string_view text) {
  if (text.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// IsOpListText: a list's inner text that starts with an op's name (`[grayscale();
// random_invert(p=1)]`), not a number (true/false are numbers).
bool IsOpListText(absl::string_view inner) {
  inner = absl::StripAsciiWhitespace(inner);
  size_t end = 0;
  while (end < inner.size() && (absl::ascii_isalnum(static_cast<unsigned char>(inner[end])) ||
                                inner[end] == '_')) {
    ++end;
  }
  const absl::string_view first = inner.substr(0, end);
  if (first.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(first[0]))) return false;
  double unused = 0;
  return !absl::SimpleAtod(first, &unused) && !ParseNumber(first, &unused);
}

std::string NumberText(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
  return absl::StrCat(v);
}

}  // namespace

const OpValue& OpArgs::Get(const std::string& name) const {
  static const OpValue* const kNone = new OpValue{{}, "", false, true};
  auto it = values_.find(name);
  return it == values_.end() ? *kNone : it->second;
}

void OpArgs::Set(const std::string& name, OpValue value, bool given) {
  values_[name] = std::move(value);
  if (given) given_[name] = true;
}

absl::StatusOr<OpValue> ParseOpValue(const std::string& raw) {
  absl::string_view text = absl::StripAsciiWhitespace(raw);
  OpValue value;
  if (text == "null" || text == "none" || text == "None" || text == "~") {
    value.is_none = true;
    return value;
  }
  if (absl::ConsumePrefix(&text, "[") || absl::ConsumePrefix(&text, "(")) {
    if (!absl::ConsumeSuffix(&text, "]") && !absl::ConsumeSuffix(&text, ")")) {
      return absl::InvalidArgumentError(absl::StrCat("unclosed list '", Quoted(raw), "'"));
    }
    value.is_list = true;
    if (absl::StripAsciiWhitespace(text).empty()) return value;
    if (IsOpListText(text)) {
      value.ops = std::string(absl::StripAsciiWhitespace(text));
      return value;
    }
    size_t item = 0;
    for (absl::string_view part : absl::StrSplit(text, ',')) {
      double v = 0;
      ++item;
      if (!ParseNumber(part, &v)) {
        // The item alone, cut: quoting the whole list too repeated a long item.
        return absl::InvalidArgumentError(absl::StrCat("item ", item, " of the list, '",
                                                       Quoted(absl::StripAsciiWhitespace(part)),
                                                       "', is not a number"));
      }
      value.numbers.push_back(v);
    }
    return value;
  }
  double v = 0;
  if (ParseNumber(text, &v)) {
    value.numbers.push_back(v);
    return value;
  }
  if (IsWord(text)) {
    value.word = absl::AsciiStrToLower(text);
    return value;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", Quoted(raw), "' is not a number, a word or a list [a, b]"));
}

std::string OpValueText(const OpValue& value) {
  if (value.is_none) return "null";
  if (!value.ops.empty()) return absl::StrCat("[", value.ops, "]");
  if (!value.word.empty()) return value.word;
  std::vector<std::string> parts;
  for (double v : value.numbers) parts.push_back(NumberText(v));
  if (value.is_list) return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
  return parts.empty() ? "" : parts[0];
}

absl::Status ArgError(const std::string& op, const std::string& arg, const std::string& what,
                      const OpValue& got) {
  // The value is cut to 200 characters, fewer after a long description: the line stays
  // under ~285 characters, leaving room for a spec's FILE:LINE:COLUMN and stage before it.
  const std::string head = absl::StrCat(op, ": ", arg, " must be ", what, ", got ");
  constexpr size_t kMaxLine = 260, kMinValue = 80;
  const size_t value_chars =
      std::clamp(head.size() < kMaxLine ? kMaxLine - head.size() : 0, kMinValue, kMaxQuotedChars);
  return absl::InvalidArgumentError(absl::StrCat(head, Quoted(OpValueText(got), value_chars)));
}

absl::Status CheckNumberIn(const std::string& op, const OpArgs& args, const std::string& arg,
                           double lo, double hi) {
  const OpValue& v = args.Get(arg);
  if (!v.IsNumber() || !(v.numbers[0] >= lo && v.numbers[0] <= hi)) {
    return ArgError(op, arg, absl::StrCat("a number in [", NumberText(lo), ", ",
                                          NumberText(hi), "]"),
                    v);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<double, double>> ReadRange(const std::string& op, const OpArgs& args,
                                                    const std::string& arg, double center,
                                                    double lo, double hi, bool clamp) {
  const OpValue& v = args.Get(arg);
  const std::string what = absl::StrCat("a number or [min, max] within [", NumberText(lo), ", ",
                                        NumberText(hi), "]");
  std::pair<double, double> range;
  if (v.IsNumber()) {
    if (v.numbers[0] < 0) return ArgError(op, arg, "a non-negative number or [min, max]", v);
    range = {center - v.numbers[0], center + v.numbers[0]};
    if (clamp) range.first = std::max(range.first, 0.0);
  } else if (v.is_list && v.numbers.size() == 2) {
    range = {v.numbers[0], v.numbers[1]};
  } else {
    return ArgError(op, arg, what, v);
  }
  if (!(range.first >= lo && range.second <= hi && range.first <= range.second)) {
    return ArgError(op, arg, what, v);
  }
  return range;
}

absl::Status ReadSize(const std::string& op, const OpArgs& args, const std::string& arg,
                      bool square, int* height, int* width) {
  const OpValue& v = args.Get(arg);
  auto ok_side = [](double s) { return s >= 1 && s <= 16384 && s == std::floor(s); };
  if (v.IsNumber() || (v.is_list && v.numbers.size() == 1)) {
    if (!ok_side(v.numbers[0])) return ArgError(op, arg, "an integer in [1, 16384]", v);
    *height = static_cast<int>(v.numbers[0]);
    *width = square ? *height : 0;
    return absl::OkStatus();
  }
  if (v.is_list && v.numbers.size() == 2 && ok_side(v.numbers[0]) && ok_side(v.numbers[1])) {
    *height = static_cast<int>(v.numbers[0]);
    *width = static_cast<int>(v.numbers[1]);
    return absl::OkStatus();
  }
  return ArgError(op, arg, "an integer or [height, width], each in [1, 16384]", v);
}

absl::Status ReadInterpolation(const std::string& op, const OpArgs& args, const std::string& arg,
                               Interpolation* out) {
  const std::string& word = args.Word(arg);
  if (word == "bilinear") {
    *out = Interpolation::kBilinear;
  } else if (word == "bicubic") {
    *out = Interpolation::kBicubic;
  } else if (word == "nearest") {
    *out = Interpolation::kNearest;
  } else {
    return ArgError(op, arg, "bilinear, bicubic or nearest", args.Get(arg));
  }
  return absl::OkStatus();
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* const registry = new OpRegistry;
  return *registry;
}

bool OpRegistry::Register(OpSchema schema, OpFactory factory) {
  if (entries_.count(schema.name) > 0) return false;
  for (const ArgSchema& a : schema.args) {
    if (a.name == "p" || !ParseOpValue(a.default_text).ok()) return false;
  }
  std::string name = schema.name;
  entries_.emplace(std::move(name), Entry{std::move(schema), std::move(factory)});
  return true;
}

const OpSchema* OpRegistry::Find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.schema;
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

std::string OpRegistry::Help() const {
  std::string out;
  for (const auto& [name, entry] : entries_) {
    const OpSchema& schema = entry.schema;
    std::vector<std::string> args;
    for (const ArgSchema& a : schema.args) args.push_back(absl::StrCat(a.name, ": ", a.default_text));
    args.push_back(absl::StrCat("p: ", NumberText(schema.default_p)));
    absl::StrAppend(&out, "#   - ", name, ": {", absl::StrJoin(args, ", "), "}\n#       ",
                    schema.doc, "\n");
    for (const ArgSchema& a : schema.args) {
      absl::StrAppend(&out, "#       ", a.name, ": ", a.accepts, "; ", a.doc, "\n");
    }
    absl::StrAppend(&out, "#       p: a number, 1 or more always, 0 or less never; the "
                          "probability that it applies\n");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Op>> OpRegistry::Create(
    const std::string& name, const std::map<std::string, std::string>& given) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    // No op's name is 64 characters long: past that, no list of the known names (the
    // cut name and the list took 430 characters), only where to find them.
    constexpr size_t kLongestName = 64;
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown op '", Quoted(name), "' ",
        name.size() > kLongestName ? "(none is that long; flowloader stages lists the ops)"
                                   : Suggestion(name, Names())));
  }
  const OpSchema& schema = it->second.schema;
  std::vector<std::string> known;
  for (const ArgSchema& a : schema.args) known.push_back(a.name);
  known.push_back("p");
  for (const auto& [arg, text] : given) {
    if (std::find(known.begin(), known.end(), arg) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " has no argument '", Quoted(arg), "' ", Suggestion(arg, known)));
    }
  }
  OpArgs args;
  auto set = [&](const std::string& arg, const std::string& default_text) -> absl::Status {
    auto g = given.find(arg);
    absl::StatusOr<OpValue> value = ParseOpValue(g == given.end() ? default_text : g->second);
    if (!value.ok()) return absl::InvalidArgumentError(absl::StrCat(name, ": ", arg, ": ",
                                                                    value.status().message()));
    args.Set(arg, *std::move(value), g != given.end());
    return absl::OkStatus();
  };
  for (const ArgSchema& a : schema.args) {
    if (absl::Status s = set(a.name, a.default_text); !s.ok()) return s;
  }
  if (absl::Status s = set("p", NumberText(schema.default_p)); !s.ok()) return s;
  // p is torchvision's `torch.rand(1) < p`, which takes any number: 1 or more always
  // applies, 0 or less never, NaN never (no draw is below it). p() is it in [0, 1].
  const OpValue& p = args.Get("p");
  if (!p.IsNumber()) {
    return ArgError(name, "p", "a number (the probability: 1 or more always applies, 0 or "
                               "less never)", p);
  }
  absl::StatusOr<std::unique_ptr<Op>> op = it->second.factory(args);
  if (!op.ok()) return op.status();
  (*op)->name_ = name;
  (*op)->p_ = std::isnan(p.numbers[0]) ? 0.0 : std::clamp(p.numbers[0], 0.0, 1.0);
  return op;
}

}  // namespace flowloader::augment
