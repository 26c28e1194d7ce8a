// dataset_sources.cc: Dataset::OpenSources, the weighted sources of a mixture laid end to
// end in one Dataset (see dataset.h).
#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/reader/dataset.h"

namespace flowloader {
namespace {

// SharedClassMap is the sorted union of the ImageFolder sources' class names: one label
// per class name across sources, as mixing datasets of the same classes needs.
std::vector<std::string> SharedClassMap(const std::vector<std::unique_ptr<Dataset>>& opened) {
  std::set<std::string> names;
  for (const auto& d : opened) names.insert(d->class_names().begin(), d->class_names().end());
  return std::vector<std::string>(names.begin(), names.end());
}

// SharedColumns is every source's extra column names, each once, in order of appearance.
std::vector<std::string> SharedColumns(const std::vector<std::unique_ptr<Dataset>>& opened) {
  std::vector<std::string> names;
  for (const auto& d : opened) {
    for (const std::string& name : d->column_names()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

}  // namespace

int64_t Dataset::source_size(int32_t source) const {
  const size_t next = static_cast<size_t>(source) + 1;
  const int64_t end = next < source_offsets_.size() ? source_offsets_[next] : size();
  return end - source_offsets_[static_cast<size_t>(source)];
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::OpenSources(
    const std::vector<DatasetSource>& sources) {
  if (sources.empty()) return absl::InvalidArgumentError("sources is empty");
  std::vector<std::unique_ptr<Dataset>> opened;
  std::set<std::string> names;
  for (const DatasetSource& source : sources) {
    if (source.name.empty()) return absl::InvalidArgumentError("a source has an empty name");
    if (!names.insert(source.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two sources are named '", source.name, "' (names must be unique)"));
    }
    absl::StatusOr<std::unique_ptr<Dataset>> d = OpenOne(source.options, /*in_mixture=*/true);
    if (!d.ok()) {
      return absl::Status(d.status().code(),
                          absl::StrCat("source ", source.name, ": ", d.status().message()));
    }
    opened.push_back(std::move(*d));
  }
  std::unique_ptr<Dataset> merged(new Dataset());
  merged->class_names_ = SharedClassMap(opened);
  merged->column_names_ = SharedColumns(opened);
  merged->root_ = opened.front()->root_;
  merged->env_ = opened.front()->env_;
  merged->source_names_.clear();
  merged->source_offsets_.clear();
  for (size_t i = 0; i < opened.size(); ++i) {
    merged->source_names_.push_back(sources[i].name);
    merged->Append(std::move(*opened[i]), static_cast<int32_t>(i));
  }
  return merged;
}

void Dataset::Append(Dataset&& other, int32_t source) {
  // ImageFolder labels index the source's own classes; map them by name to the shared map.
  std::vector<int64_t> label_map;
  for (const std::string& name : other.class_names_) {
    label_map.push_back(std::lower_bound(class_names_.begin(), class_names_.end(), name) -
                        class_names_.begin());
  }
  std::vector<uint32_t> extension_map;
  for (const std::string& ext : other.extensions_) {
    auto it = std::find(extensions_.begin(), extensions_.end(), ext);
    extension_map.push_back(static_cast<uint32_t>(it - extensions_.begin()));
    if (it == extensions_.end()) extensions_.push_back(ext);
  }
  AppendColumns(other);
  const int32_t shard_offset = static_cast<int32_t>(shards_.size());
  const int64_t member_offset = static_cast<int64_t>(members_.size());
  source_offsets_.push_back(size());
  source_roots_.push_back(other.root_);
  for (SampleSource& s : other.samples_) {
    s.source = source;
    if (!label_map.empty()) s.label = label_map[static_cast<size_t>(s.label)];
    if (s.shard >= 0) s.shard += shard_offset;
    s.first_member += member_offset;
    samples_.push_back(std::move(s));
  }
  for (SampleMember m : other.members_) {
    m.extension = extension_map[m.extension];
    members_.push_back(m);
  }
  shards_.insert(shards_.end(), other.shards_.begin(), other.shards_.end());
  // Every source's StorageEnv serves every scheme (and local paths, through the same
  // base Env), so one, the first made, reads the samples of all.
  if (storage_ == nullptr && other.storage_ != nullptr) {
    storage_ = std::move(other.storage_);
  } else if (storage_ != nullptr && other.storage_ != nullptr) {
    // The other source's admitted shards join this cache while they fit its budget.
    storage_->AdmitShards(other.storage_->admitted());
  }
}

void Dataset::AppendColumns(const Dataset& other) {
  if (column_names_.empty()) return;
  // Where each merged column is in `other` (npos: it has none, so the value is "").
  std::vector<size_t> from;
  for (const std::string& name : column_names_) {
    auto it = std::find(other.column_names_.begin(), other.column_names_.end(), name);
    from.push_back(it == other.column_names_.end()
                       ? std::string::npos
                       : static_cast<size_t>(it - other.column_names_.begin()));
  }
  for (int64_t i = 0; i < other.size(); ++i) {
    for (size_t c : from) {
      if (c != std::string::npos) {
        const absl::string_view value = other.column(i, c);
        column_text_.append(value.data(), value.size());
      }
      column_ends_.push_back(column_text_.size());
    }
  }
}

}  // namespace flowloader
