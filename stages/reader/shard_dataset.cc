// shard_dataset.cc: Dataset::Open for WebDataset tar shards (see dataset.h): listing the
// shards, indexing their headers in parallel, grouping members into samples.
#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <thread>  // NOLINT(build/c++11)
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "stages/core/log.h"
#include "stages/core/sample_error.h"
#include "stages/reader/dataset.h"
#include "stages/reader/internal/shard_names.h"
#include "stages/reader/internal/window_prefetch.h"
#include "stages/reader/schemes.h"
#include "stages/reader/shard_index_load.h"
#include "stages/reader/tar_index.h"
#include "stages/reader/tar_index_file.h"

namespace flowloader {
namespace {

using shard_internal::ExpandBraces;
using shard_internal::HasBraces;
using shard_internal::IsMetaMember;
using shard_internal::JsonIntField;
using shard_internal::SplitKey;

bool EndsWithTar(absl::string_view path) {
  return absl::EndsWithIgnoreCase(path.substr(0, path.find('?')), ".tar");
}

// ShardName is a shard's file name (what keys start with): the last path segment.
std::string ShardName(const std::string& location) {
  const std::string path = location.substr(0, location.find('?'));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// ShardListLines returns the shard locations of a shard list, or an empty vector when
// `text` is not one (some line is not a `.tar` path or URL: then it is a list file).
std::vector<std::string> ShardListLines(const std::string& text, const std::string& dir) {
  std::vector<std::string> shards;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    if (line.find('\t') != absl::string_view::npos || !EndsWithTar(line)) return {};
    const std::string entry(line);
    shards.push_back(IsRemotePath(entry) || absl::StartsWith(entry, "/") ? entry
                                                                   : absl::StrCat(dir, "/", entry));
  }
  return shards;
}

// LabelFrom parses a label member: the integer in a `.cls`, or `label_key` of a `.json`.
absl::Status ParseLabel(const TarMember& m, const std::string& label_key, int64_t* label) {
  if (m.size > 0 && m.inline_payload.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(m.name, " is ", m.size,
                                                   " bytes, too large for a label"));
  }
  const absl::string_view text = absl::StripAsciiWhitespace(m.inline_payload);
  const bool ok = label_key.empty() ? absl::SimpleAtoi(text, label)
                                    : JsonIntField(text, label_key, label);
  if (!ok || *label < 0) {
    return absl::InvalidArgumentError(
        label_key.empty()
            ? absl::StrCat(m.name, " does not hold an integer label >= 0: \"",
                           text.substr(0, 40), "\"")
            : absl::StrCat(m.name, " has no integer field \"", label_key,
                           "\" >= 0 (the label_key option)"));
  }
  return absl::OkStatus();
}

bool IsColumn(const std::vector<std::string>& columns, const std::string& extension) {
  return std::find(columns.begin(), columns.end(), extension) != columns.end();
}

// ColumnMember finds column `name` among a sample's members; nullptr when it has none.
const TarMember* ColumnMember(
    const std::vector<std::pair<std::string, const TarMember*>>& members,
    const std::string& name) {
  for (const auto& [extension, m] : members) {
    if (extension == name) return m;
  }
  return nullptr;
}

// CheckColumns is OK when the sample has every column, each at most max_bytes; else the
// skip (missing_column, column_too_large) naming the shard, the sample and the knob.
absl::Status CheckColumns(const std::vector<std::pair<std::string, const TarMember*>>& members,
                          const DatasetOptions& options, const std::string& shard,
                          const std::string& key) {
  for (const std::string& name : options.columns) {
    const TarMember* m = ColumnMember(members, name);
    if (m == nullptr) {
      return SampleError(absl::StatusCode::kNotFound, reason::kMissingColumn,
                         absl::StrCat(shard, ": sample ", key, " has no .", name,
                                      " member (the columns option names it)"));
    }
    if (m->size > options.column_max_bytes ||
        static_cast<int64_t>(m->inline_payload.size()) != m->size) {
      return SampleError(absl::StatusCode::kResourceExhausted, reason::kColumnTooLarge,
                         absl::StrCat(shard, ": ", m->name, " is ", m->size,
                                      " bytes, over column_max_bytes ",
                                      options.column_max_bytes));
    }
  }
  return absl::OkStatus();
}

// Group is one webdataset sample being collected: consecutive members sharing a key.
struct Group {
  std::string key;
  std::vector<std::pair<std::string, const TarMember*>> members;  // (extension, member)
  // It began with a member whose extension the group before it, of the same key, had
  // already: a second sample under one key, skipped as duplicate_key.
  bool duplicate = false;
};

}  // namespace

absl::Span<const SampleMember> Dataset::members(int64_t i) const {
  if (computed()) return {};
  const SampleSource& s = samples_[static_cast<size_t>(i)];
  if (s.member_count == 0) return {};
  return absl::Span<const SampleMember>(members_.data() + s.first_member, s.member_count);
}

void Dataset::AddShardColumns(
    const std::vector<std::pair<std::string, const TarMember*>>& members, bool ok) {
  for (const std::string& name : column_names_) {
    const TarMember* m = ok ? ColumnMember(members, name) : nullptr;
    if (m != nullptr) column_text_.append(m->inline_payload);
    column_ends_.push_back(column_text_.size());
  }
}

absl::StatusOr<std::vector<std::string>> Dataset::ShardPaths(Env* env, const std::string& path,
                                                             bool is_directory) {
  if (is_directory) {
    absl::StatusOr<std::vector<DirEntry>> entries = env->ListDirectory(path);
    if (!entries.ok()) return entries.status();
    std::vector<std::string> shards;
    std::vector<std::string> others;
    for (const DirEntry& e : *entries) {
      if (!e.is_directory && EndsWithTar(e.name)) {
        shards.push_back(absl::StrCat(path, "/", e.name));
      } else if (!e.is_directory && absl::EndsWithIgnoreCase(e.name, ".tar.idx")) {
        continue;  // A shard's index (tar_index_file.h), read with its shard.
      } else {
        others.push_back(e.is_directory ? e.name + "/" : e.name);
      }
    }
    // No .tar: class directories (ImageFolder). With some, whatever else is there
    // (logs/, .cache/, a README) is not data: ignored, and said once.
    if (shards.empty()) return shards;
    if (!others.empty()) {
      std::sort(others.begin(), others.end());
      const size_t shown = std::min<size_t>(others.size(), 5);
      LogWarning(absl::StrCat(
          "dataset: ", path, ": reading its ", shards.size(), " .tar shards; ignoring ",
          others.size(), " other entr", others.size() == 1 ? "y" : "ies", " (",
          absl::StrJoin(others.begin(), others.begin() + shown, ", "),
          others.size() > shown ? ", ..." : "", ")"));
    }
    std::sort(shards.begin(), shards.end());
    return shards;
  }
  if (!IsListablePath(path) || HasBraces(path)) return ExpandBraces(path);
  if (EndsWithTar(path)) return std::vector<std::string>{path};
  std::string text;
  // Not readable here: the list-file reader reports it.
  if (!env->ReadFile(path, int64_t{1} << 30, &text).ok()) return std::vector<std::string>();
  std::vector<std::string> shards;
  constexpr size_t kMaxShards = 1000000;  // ExpandBraces' limit, for the whole list.
  for (const std::string& line : ShardListLines(text, ParentDir(path))) {
    absl::StatusOr<std::vector<std::string>> expanded = ExpandBraces(line, kMaxShards);
    if (!expanded.ok()) return expanded.status();
    if (shards.size() + expanded->size() > kMaxShards) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the list file ", path, " names more than ", kMaxShards,
          " shards; list fewer (or split the data into several sources)"));
    }
    shards.insert(shards.end(), expanded->begin(), expanded->end());
  }
  return shards;
}

namespace {

// KeptWindows are the remote shards' index windows, kept (within `budget` bytes, the
// block cache's room) until admission decides which shards the block cache holds: those
// shards' windows become cached blocks instead of being fetched again by the first epoch.
struct KeptWindows {
  std::atomic<int64_t> budget{0};
  std::vector<std::vector<std::pair<int64_t, std::string>>> by_shard;  // (offset, bytes)

  void Keep(size_t shard, int64_t offset, std::string bytes) {
    const int64_t n = static_cast<int64_t>(bytes.size());
    if (n == 0) return;
    if (budget.fetch_sub(n) < n) {  // No room: the block is fetched when first read.
      budget.fetch_add(n);
      return;
    }
    by_shard[shard].emplace_back(offset, std::move(bytes));
  }
};

// IndexWindowBudget is the room the index windows of remote shards may be kept in: what
// the block cache can still admit, when its blocks are the index windows (same size, and
// no disk cache in front of it, which admits nothing); else 0.
int64_t IndexWindowBudget(const StorageEnv& storage, const DatasetOptions& options) {
  if (storage.disk_cache() != nullptr ||
      options.http_index_window_bytes != storage.options().http.block_bytes) {
    return 0;
  }
  return std::max<int64_t>(0, storage.cache_budget_bytes() - storage.admitted_bytes());
}

// IndexOne indexes the shard at `location`: from its index file when it has a good one
// (*outcome kUsed), else by scanning its headers (*outcome says why); a remote one's
// windows are read index_prefetch_windows ahead and handed to `keep`.
TarIndex IndexOne(Env* env, const std::string& location, const DatasetOptions& options,
                  const internal::WindowPrefetcher::Keep& keep, LoadedIndex* outcome) {
  const bool remote = IsRemotePath(location);
  TarIndexOptions o;
  o.read_ahead_bytes = remote ? options.http_index_window_bytes : 0;
  // Labels and column members sit right after their headers: reading them here costs
  // no request of its own (for HTTP they come inside the index's range windows).
  o.want_payload = [&options](const std::string& name) {
    std::string key, extension;
    if (!SplitKey(name, &key, &extension)) return false;
    extension = absl::AsciiStrToLower(extension);
    if (IsColumn(options.columns, extension)) return true;
    if (!options.labels) return false;
    return options.label_key.empty() ? extension == "cls" : extension == "json";
  };
  if (!options.columns.empty()) {
    o.inline_max_bytes = std::max(o.inline_max_bytes, options.column_max_bytes);
  }
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = env->NewRandomAccessFile(location);
  if (!file.ok()) {
    TarIndex failed;
    failed.damage = file.status();
    return failed;
  }
  if (options.use_shard_index) {
    *outcome = LoadTarIndexFile(env, file->get(), location, o);
    if (outcome->outcome == IndexOutcome::kUsed) return std::move(outcome->index);
  }
  if (!remote) {  // Local: each header read as it is (the page cache reads ahead).
    return IndexTar([&file](int64_t offset, int64_t length,
                            std::string* out) { return (*file)->Read(offset, length, out); },
                    location, o);
  }
  internal::WindowPrefetcher prefetch(file->get(), o.read_ahead_bytes,
                                      options.index_prefetch_windows, keep);
  return IndexTar([&prefetch](int64_t offset, int64_t length,
                              std::string* out) { return prefetch.Read(offset, length, out); },
                  location, o);
}

// Indexes every shard, `threads` at a time (for HTTP, the latency of one shard's range
// requests overlaps the others').
std::vector<TarIndex> IndexShards(Env* env, const std::vector<std::string>& shards,
                                  const DatasetOptions& options, KeptWindows* kept,
                                  std::vector<LoadedIndex>* outcomes) {
  std::vector<TarIndex> indexes(shards.size());
  outcomes->resize(shards.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < shards.size(); i = next++) {
      indexes[i] = IndexOne(
          env, shards[i], options,
          [kept, i](int64_t offset, std::string bytes) { kept->Keep(i, offset, std::move(bytes)); },
          &(*outcomes)[i]);
    }
  };
  const size_t threads = std::min<size_t>(static_cast<size_t>(options.index_threads), shards.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return indexes;
}

// CountIndexOutcomes counts how each shard was opened, and names each shard whose index
// file was stale or damaged (it was scanned instead).
Dataset::ShardIndexCounts CountIndexOutcomes(const std::vector<std::string>& shards,
                                             const std::vector<LoadedIndex>& outcomes) {
  Dataset::ShardIndexCounts counts;
  for (size_t i = 0; i < shards.size(); ++i) {
    switch (outcomes[i].outcome) {
      case IndexOutcome::kUsed:
        ++counts.used;
        continue;
      case IndexOutcome::kMissing:
        ++counts.missing;
        continue;
      case IndexOutcome::kStale:
        ++counts.stale;
        break;
      case IndexOutcome::kDamaged:
        ++counts.damaged;
        break;
    }
    LogWarning(absl::StrCat("dataset: shard ", shards[i], ": its index ",
                            TarIndexFileName(shards[i]), " is ",
                            IndexOutcomeName(outcomes[i].outcome), " (", outcomes[i].why,
                            "): scanned the shard's headers instead; run `flowloader pack` "
                            "again to rewrite the shard and its index"));
  }
  return counts;
}

// SeedAdmittedShards hands the kept index windows to the block caches (only those of
// admitted shards are kept there) and frees the rest.
void SeedAdmittedShards(StorageEnv& storage, const std::vector<std::string>& shards,
                        KeptWindows* kept) {
  for (size_t i = 0; i < shards.size(); ++i) {
    for (auto& [offset, bytes] : kept->by_shard[i]) {
      storage.SeedBlock(shards[i], offset, std::move(bytes));
    }
    kept->by_shard[i] = {};
  }
}

// AdmitRemoteShards offers the indexed remote shards to the block caches in listing
// order (sized by what their headers account for: every member lies inside it).
void AdmitRemoteShards(StorageEnv& storage, const std::vector<std::string>& shards,
                       const std::vector<TarIndex>& indexes) {
  std::vector<HttpEnv::ShardSize> sizes;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (IsRemotePath(shards[i]) && !indexes[i].members.empty()) {
      sizes.push_back({shards[i], indexes[i].indexed_bytes});
    }
  }
  if (!sizes.empty()) storage.AdmitShards(sizes);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::OpenShards(
    const DatasetOptions& options, std::unique_ptr<StorageEnv> storage,
    const std::vector<std::string>& shards, std::string root) {
  if (options.index_threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("index_threads must be >= 1, got ", options.index_threads));
  }
  if (options.index_prefetch_windows < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index_prefetch_windows must be >= 0, got ", options.index_prefetch_windows));
  }
  if (options.http_index_window_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http_index_window_bytes must be > 0, got ", options.http_index_window_bytes));
  }
  if (shards.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(shards.size(), " shards is too many"));
  }
  StorageEnv& storage_env = *storage;
  std::unique_ptr<Dataset> dataset(new Dataset());
  dataset->root_ = std::move(root);
  dataset->env_ = storage.get();
  dataset->storage_ = std::move(storage);
  dataset->shards_ = shards;
  dataset->column_names_ = options.columns;

  // Indexing reads through NewRandomAccessFile, which never fills the cache; admission
  // needs the sizes the index found, and the windows kept meanwhile are then handed to
  // the admitted shards' block caches.
  KeptWindows kept;
  kept.budget = IndexWindowBudget(storage_env, options);
  kept.by_shard.resize(shards.size());
  std::vector<LoadedIndex> outcomes;
  const std::vector<TarIndex> indexes =
      IndexShards(dataset->shard_env(), shards, options, &kept, &outcomes);
  dataset->shard_index_counts_ = CountIndexOutcomes(shards, outcomes);
  AdmitRemoteShards(storage_env, shards, indexes);
  SeedAdmittedShards(storage_env, shards, &kept);
  std::map<std::string, uint32_t> extension_ids;
  std::map<std::string, int64_t> failed_shards;   // By reason.
  std::map<std::string, int64_t> failed_samples;  // By reason, for the refusal below.
  int64_t good = 0;

  auto intern = [&](const std::string& extension) {
    auto [it, added] = extension_ids.emplace(extension, dataset->extensions_.size());
    if (added) dataset->extensions_.push_back(extension);
    return it->second;
  };

  for (size_t shard = 0; shard < shards.size(); ++shard) {
    const std::string shard_name = ShardName(shards[shard]);
    auto flush = [&](const Group& g) {
      if (g.members.empty()) return;
      SampleSource s;
      s.shard = static_cast<int32_t>(shard);
      s.first_member = static_cast<int64_t>(dataset->members_.size());
      s.member_count = static_cast<uint32_t>(g.members.size());
      const TarMember* image = nullptr;
      const TarMember* label = nullptr;
      const std::string label_extension = options.label_key.empty() ? "cls" : "json";
      for (const auto& [extension, m] : g.members) {
        dataset->members_.push_back(SampleMember{intern(extension), m->offset, m->size});
        const bool plain = extension.find('.') == std::string::npos;
        if (image == nullptr && plain && HasImageExtension("." + extension)) image = m;
        if (label == nullptr && extension == label_extension) label = m;
      }
      s.key = absl::StrCat(shard_name, "/", image != nullptr ? image->name : g.key);
      if (g.duplicate) {
        s.error = SampleError(
            absl::StatusCode::kInvalidArgument, reason::kDuplicateKey,
            absl::StrCat(shards[shard], ": key ", g.key, " again (", g.members.front().second->name,
                         " at byte ", g.members.front().second->offset,
                         " follows a sample with that key and extension): skipped"));
      } else if (image == nullptr) {
        s.error = SampleError(absl::StatusCode::kNotFound, reason::kMissingImage,
                              absl::StrCat(shards[shard], ": sample ", g.key,
                                           " has no image member"));
      } else if (!options.labels) {  // Targets come from other members: no label.
        s.error = CheckColumns(g.members, options, shards[shard], g.key);
      } else if (label == nullptr) {
        s.error = SampleError(absl::StatusCode::kNotFound, reason::kMissingLabel,
                              absl::StrCat(shards[shard], ": sample ", g.key, " has no .",
                                           label_extension, " member"));
      } else if (absl::Status l = ParseLabel(*label, options.label_key, &s.label); !l.ok()) {
        s.error = SampleError(absl::StatusCode::kInvalidArgument, reason::kMissingLabel,
                              absl::StrCat(shards[shard], ": ", l.message()));
      } else {
        s.error = CheckColumns(g.members, options, shards[shard], g.key);
      }
      dataset->AddShardColumns(g.members, s.error.ok());
      if (image != nullptr) {
        s.offset = image->offset;
        s.size = image->size;
      }
      if (s.error.ok()) {
        ++good;
      } else {
        ++failed_samples[ErrorReason(s.error)];
      }
      dataset->samples_.push_back(std::move(s));
    };

    Group group;
    for (const TarMember& m : indexes[shard].members) {
      std::string key, extension;
      if (IsMetaMember(m.name) || !SplitKey(m.name, &key, &extension)) continue;
      extension = absl::AsciiStrToLower(extension);
      if (key != group.key) {
        flush(group);
        group = Group{key, {}};
      }
      const bool repeated =
          std::any_of(group.members.begin(), group.members.end(),
                      [&](const auto& e) { return e.first == extension; });
      if (repeated) {  // A second sample under the same key: counted, never merged.
        flush(group);
        group = Group{key, {}, /*duplicate=*/true};
      }
      group.members.emplace_back(extension, &m);
    }
    flush(group);
    for (const absl::Status& skipped : indexes[shard].skipped) {
      ++failed_samples[ErrorReason(skipped)];
      SampleSource s;
      s.key = absl::StrCat(shard_name, "/(member skipped while indexing)");
      s.error = skipped;
      dataset->AddShardColumns({}, /*ok=*/false);
      dataset->samples_.push_back(std::move(s));
    }

    const absl::Status& damage = indexes[shard].damage;
    if (!damage.ok()) {
      ++failed_shards[ErrorReason(damage)];
      LogWarning(absl::StrCat("dataset: shard ", shards[shard], ": ", damage.message(), " (",
                              indexes[shard].members.size(), " members indexed before it)"));
      SampleSource s;
      s.key = shard_name;
      s.error = damage;
      dataset->AddShardColumns({}, /*ok=*/false);
      dataset->samples_.push_back(std::move(s));
    }
  }
  if (good == 0) {
    auto counted = [](const std::map<std::string, int64_t>& by_reason) {
      std::vector<std::string> out;
      for (const auto& [reason, n] : by_reason) out.push_back(absl::StrCat(n, " × ", reason));
      return absl::StrJoin(out, ", ");
    };
    return absl::InvalidArgumentError(absl::StrCat(
        shards.size() == 1 ? shards[0] : absl::StrCat(shards.front(), " … ", shards.back()),
        ": no sample with an image and a label",
        options.columns.empty()
            ? ""
            : absl::StrCat(" and every column (columns: ", absl::StrJoin(options.columns, ","),
                           ")"),
        " in ", shards.size(), " shard(s)",
        failed_samples.empty() ? "" : absl::StrCat(" (samples failed: ", counted(failed_samples), ")"),
        failed_shards.empty() ? "" : absl::StrCat(" (shards failed: ", counted(failed_shards), ")"),
        indexes.front().damage.ok() ? "" : absl::StrCat("; first: ", indexes.front().damage.message())));
  }
  return dataset;
}

}  // namespace flowloader
