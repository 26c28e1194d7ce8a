#include "runtime/internal/spec_sources.h"

#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/stage.h"

namespace flowloader {
namespace spec_internal {
namespace {

absl::Status ParseWeight(const SpecReader& r, const Field& f, double* weight) {
  std::string text;
  if (absl::Status s = r.Plain(f, "a number > 0", &text); !s.ok()) return s;
  if (!absl::SimpleAtod(text, weight) || !std::isfinite(*weight) || *weight <= 0) {
    return r.ValueError(f, absl::StrCat("must be a number > 0, got ", Quote(text)));
  }
  return absl::OkStatus();
}

absl::Status ParseSource(const SpecReader& r, const YAML::Node& item, WeightedSource* out) {
  if (!item.IsMap()) {
    return r.Error(item, absl::StrCat("a source must be a mapping {name, data, weight}, got ",
                                      Describe(item)));
  }
  absl::StatusOr<std::vector<Field>> fields = r.Fields(item, "a source");
  if (!fields.ok()) return fields.status();
  for (const Field& f : *fields) {
    absl::Status s;
    if (f.key == "name") {
      s = r.String(f, &out->name);
    } else if (f.key == "data") {
      s = r.String(f, &out->data);
    } else if (f.key == "weight") {
      s = ParseWeight(r, f, &out->weight);
    } else {
      s = r.UnknownKey(f, "a source", {"name", "data", "weight"});
    }
    if (!s.ok()) return s;
  }
  if (out->name.empty() || out->data.empty()) {
    return r.Error(item, "a source needs a name and data ({name: a, data: DIR, weight: 1})");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseSources(const SpecReader& r, const Field& f, PipelineOptions* options) {
  if (!f.value.IsSequence() || f.value.size() == 0) {
    return r.Expected(f, "a non-empty list of {name, data, weight}");
  }
  std::set<std::string> names;
  options->sources.clear();
  for (const YAML::Node& item : f.value) {
    WeightedSource source;
    if (absl::Status s = ParseSource(r, item, &source); !s.ok()) return s;
    if (!names.insert(source.name).second) {
      return r.Error(item, absl::StrCat("two sources are named ", Quote(source.name),
                                        " (names must be unique)"));
    }
    options->sources.push_back(std::move(source));
  }
  return absl::OkStatus();
}

std::string SourcesYaml(const PipelineOptions& options) {
  if (options.sources.empty()) return "";
  std::string out = "sources:\n";
  for (const WeightedSource& s : options.sources) {
    absl::StrAppend(&out, "  - {name: ", YamlScalar(s.name), ", data: ", YamlScalar(s.data),
                    ", weight: ", s.weight, "}\n");
  }
  return out;
}

}  // namespace spec_internal
}  // namespace flowloader
