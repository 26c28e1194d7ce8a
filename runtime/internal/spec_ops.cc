// spec_ops.cc: reading and checking an `ops:` list.
#include "runtime/internal/spec_ops.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"

namespace flowloader {
namespace spec_internal {
namespace {

absl::Status ParseOne(const SpecReader& r, const YAML::Node& item, augment::OpText* op,
                      YAML::Node* at);

// IsOpItem: a list item that is an op (`name: {args}`, or a name that is not a number).
bool IsOpItem(const YAML::Node& item) {
  if (item.IsMap()) return true;
  double unused = 0;
  if (!item.IsScalar() || absl::SimpleAtod(item.Scalar(), &unused)) return false;
  const std::string& s = item.Scalar();
  return !s.empty() && absl::ascii_isalpha(static_cast<unsigned char>(s[0])) && s != "true" &&
         s != "false" && s != "True" && s != "False";
}

// ArgText is an argument's value as the op list writes it: a scalar, [a, b, ...], or an
// op list [op(...); op(...)] (compose's, random_choice's, random_order's transforms),
// each op checked where it is written. A refusal names the op and the argument.
absl::Status ArgText(const SpecReader& r, const std::string& op, const Field& f,
                     std::string* text) {
  if (f.value.IsSequence() && f.value.size() > 0 && IsOpItem(f.value[0])) {
    std::vector<augment::OpText> subs;
    for (const YAML::Node& item : f.value) {
      augment::OpText sub;
      YAML::Node at;
      if (absl::Status s = ParseOne(r, item, &sub, &at); !s.ok()) return s;
      subs.push_back(std::move(sub));
    }
    *text = absl::StrCat("[", augment::OpListText(subs), "]");
    return absl::OkStatus();
  }
  if (f.value.IsScalar()) {
    *text = f.value.Scalar();
    return absl::OkStatus();
  }
  if (f.value.IsNull()) {
    *text = "null";
    return absl::OkStatus();
  }
  if (!f.value.IsSequence()) {
    return r.Error(f.value, absl::StrCat(op, ": ", f.key, " must be a value or a list of "
                                         "numbers, got ", Describe(f.value)));
  }
  std::vector<std::string> parts;
  for (const YAML::Node& item : f.value) {
    if (!item.IsScalar()) {
      return r.Error(item, absl::StrCat(op, ": ", f.key, ": items must be numbers, got ",
                                        Describe(item)));
    }
    parts.push_back(item.Scalar());
  }
  *text = absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
  return absl::OkStatus();
}

// RefusedAt is where a refusal of the op's arguments points: the argument it names
// ("OP has no argument 'ARG'" at its key, "OP: ARG must ..." at its value), else the op.
YAML::Node RefusedAt(absl::string_view message, const std::string& op,
                     const std::vector<Field>& written, const YAML::Node& op_node) {
  for (const Field& f : written) {
    if (absl::StrContains(message, absl::StrCat(" has no argument '", f.key, "'"))) {
      return f.key_node;
    }
    if (absl::StartsWith(message, absl::StrCat(op, ": ", f.key, " ")) ||
        absl::StartsWith(message, absl::StrCat(op, ": ", f.key, ":"))) {
      return f.value;
    }
  }
  return op_node;
}

// ParseOne reads one item of the list (`name` or `name: {arg: value}`), checking the op
// and each argument where it was written.
absl::Status ParseOne(const SpecReader& r, const YAML::Node& item, augment::OpText* op,
                      YAML::Node* at) {
  *at = item;
  YAML::Node args;
  if (item.IsScalar() && item.Scalar().find('(') != std::string::npos) {
    // The one-line form, `random_resized_crop(size=320, scale=[0.3, 1.0])`, as the op
    // list text writes one op (the docs' detection and segmentation examples).
    absl::StatusOr<std::vector<augment::OpText>> texts =
        augment::ParseOpListText(item.Scalar());
    if (!texts.ok()) return r.Error(item, texts.status().message());
    if (texts->size() != 1) {
      return r.Error(item, absl::StrCat("an item is one op, got ", texts->size(),
                                        " (write each op as its own item)"));
    }
    *op = std::move((*texts)[0]);
  } else if (item.IsScalar()) {
    op->name = item.Scalar();
  } else if (item.IsMap() && item.size() == 1) {
    absl::StatusOr<std::vector<Field>> fields = r.Fields(item, "an op");
    if (!fields.ok()) return fields.status();
    op->name = (*fields)[0].key;
    *at = (*fields)[0].key_node;
    args = (*fields)[0].value;
  } else {
    return r.Error(item, absl::StrCat("an op is its name, or `name: {argument: value}`, got ",
                                      Describe(item)));
  }
  const augment::OpRegistry& registry = augment::OpRegistry::Global();
  std::vector<Field> written;
  if (registry.Find(op->name) == nullptr) {
    return r.Error(*at, absl::StrCat("unknown op ", Quote(op->name), " ",
                                     spec_internal::ShortSuggestion(
                                         op->name, registry.Names(),
                                         "flowloader stages lists the ops")));
  }
  if (args.IsDefined() && !args.IsNull()) {
    if (!args.IsMap()) {
      return r.Error(args, absl::StrCat("the arguments of ", op->name,
                                        " must be a mapping {name: value}, got ",
                                        Describe(args)));
    }
    absl::StatusOr<std::vector<Field>> arg_fields =
        r.Fields(args, absl::StrCat("the arguments of ", op->name));
    if (!arg_fields.ok()) return arg_fields.status();
    for (const Field& f : *arg_fields) {
      std::string text;
      if (absl::Status s = ArgText(r, op->name, f, &text); !s.ok()) return s;
      op->args[f.key] = text;
      written.push_back(f);
    }
  }
  // The arguments together, as torchvision checks them: one argument's range may depend
  // on another's value (resize's max_size on size, rand_augment's magnitude on
  // num_magnitude_bins), so none is judged alone against the others' defaults.
  absl::StatusOr<std::unique_ptr<augment::Op>> made = registry.Create(op->name, op->args);
  if (made.ok()) return absl::OkStatus();
  return r.Error(RefusedAt(made.status().message(), op->name, written, *at),
                 made.status().message());
}

}  // namespace

absl::Status ParseOps(const SpecReader& r, const Field& ops, std::string* text) {
  if (!ops.value.IsSequence()) return r.Expected(ops, "a list of ops");
  if (ops.value.size() == 0) {
    return r.ValueError(ops, "is empty: a view needs at least one op (flowloader stages "
                             "lists them)");
  }
  std::vector<augment::OpText> list;
  std::vector<YAML::Node> where;
  for (const YAML::Node& item : ops.value) {
    augment::OpText op;
    YAML::Node at;
    if (absl::Status s = ParseOne(r, item, &op, &at); !s.ok()) return s;
    list.push_back(std::move(op));
    where.push_back(at);
  }
  // The list as a whole: forms in order (pixel ops before normalize), a fixed size, or
  // one with an upper bound, which the transforms stage takes for a padded batch
  // (size_divisibility; it refuses such a list without it).
  int failed = -1;
  absl::StatusOr<std::unique_ptr<augment::ViewProgram>> program =
      augment::ViewProgram::Create(list, &failed);
  if (!program.ok() && failed == static_cast<int>(list.size()) - 1) {
    absl::StatusOr<std::unique_ptr<augment::ViewProgram>> bounded =
        augment::ViewProgram::Create(list, nullptr, /*bounded=*/true);
    if (bounded.ok()) program = std::move(bounded);
  }
  if (!program.ok()) {
    return failed >= 0 ? r.Error(where[failed], program.status().message())
                       : r.ValueError(ops, program.status().message());
  }
  *text = augment::OpListText(list);
  return absl::OkStatus();
}

}  // namespace spec_internal
}  // namespace flowloader
