#include "runtime/pack_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "exporters/internal/json.h"
#include "runtime/internal/pack_source.h"
#include "runtime/internal/signal_watcher.h"
#include "stages/core/log.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"
#include "stages/decode/encoder.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"
#include "stages/reader/env_util.h"
#include "stages/reader/s3_env.h"
#include "stages/reader/storage_env.h"
#include "stages/reader/tar_index_file.h"
#include "stages/reader/tar_writer.h"
#include "stages/core/one_line.h"

namespace flowloader {
namespace {

std::string Extension(const std::string& key) {
  const size_t slash = key.rfind('/');
  const size_t dot = key.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "img";
  return absl::AsciiStrToLower(key.substr(dot + 1));
}

// AreaResize shrinks `in` to out_w × out_h, each output pixel the mean of the input
// pixels its box covers (fractional edges weighted), as PIL's reduce/box filter.
Image AreaResize(const Image& in, int out_w, int out_h) {
  Image out;
  out.Resize(out_w, out_h, in.channels);
  const double sx = static_cast<double>(in.width) / out_w;
  const double sy = static_cast<double>(in.height) / out_h;
  std::vector<double> acc(static_cast<size_t>(in.channels));
  for (int oy = 0; oy < out_h; ++oy) {
    const double y0 = oy * sy;
    const double y1 = y0 + sy;
    for (int ox = 0; ox < out_w; ++ox) {
      const double x0 = ox * sx;
      const double x1 = x0 + sx;
      std::fill(acc.begin(), acc.end(), 0.0);
      double total = 0;
      for (int y = static_cast<int>(y0); y < std::min<double>(std::ceil(y1), in.height); ++y) {
        const double wy = std::min<double>(y + 1, y1) - std::max<double>(y, y0);
        const uint8_t* row = in.pixels.data() + static_cast<size_t>(y) * in.stride();
        for (int x = static_cast<int>(x0); x < std::min<double>(std::ceil(x1), in.width); ++x) {
          const double w = wy * (std::min<double>(x + 1, x1) - std::max<double>(x, x0));
          for (int c = 0; c < in.channels; ++c) acc[c] += w * row[x * in.channels + c];
          total += w;
        }
      }
      uint8_t* o = out.Row(oy) + static_cast<size_t>(ox) * in.channels;
      for (int c = 0; c < in.channels; ++c) {
        o[c] = static_cast<uint8_t>(std::clamp(std::lround(acc[c] / total), 0L, 255L));
      }
    }
  }
  return out;
}

// Reencoder shrinks images whose shorter side is over max_side.
class Reencoder {
 public:
  static absl::StatusOr<Reencoder> Create(const PackOptions& o) {
    absl::StatusOr<std::unique_ptr<decode::Decoder>> d = decode::Decoder::Create({});
    if (!d.ok()) return d.status();
    return Reencoder(std::move(*d), o.max_side, o.quality);
  }

  // Shrink returns the re-encoded JPEG, or nullopt-like empty string when `bytes` needs
  // no shrinking or cannot be decoded (then it is packed as is).
  std::string Shrink(const std::string& bytes) const {
    absl::StatusOr<decode::ImageInfo> info = decoder_->ReadInfo(bytes);
    if (!info.ok() || std::min(info->width, info->height) <= max_side_) return "";
    decode::DecodedImage decoded;
    if (!decoder_->Decode(bytes, *info, nullptr, &decoded).ok()) return "";
    const Image& full = decoded.image;
    const double scale = static_cast<double>(max_side_) / std::min(full.width, full.height);
    const int w = std::max(1, static_cast<int>(std::lround(full.width * scale)));
    const int h = std::max(1, static_cast<int>(std::lround(full.height * scale)));
    decode::JpegEncodeOptions e;
    e.quality = quality_;
    absl::StatusOr<std::string> jpeg = decode::EncodeJpeg(AreaResize(full, w, h).view(), e);
    return jpeg.ok() ? *jpeg : "";
  }

 private:
  Reencoder(std::unique_ptr<decode::Decoder> d, int max_side, int quality)
      : decoder_(std::move(d)), max_side_(max_side), quality_(quality) {}
  std::shared_ptr<decode::Decoder> decoder_;
  int max_side_;
  int quality_;
};

absl::Status CheckOptions(const PackOptions& o) {
  if (o.data.empty()) return absl::InvalidArgumentError("pack needs --data=IMAGEFOLDER_OR_LIST");
  if (o.out.empty()) return absl::InvalidArgumentError("pack needs --out=DIR");
  if (IsRemotePath(o.out) && !IsS3Path(o.out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out=", o.out, ": pack writes to a directory or to s3://BUCKET/PREFIX, not HTTP"));
  }
  if (o.shard_size_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard_size must be > 0, got ", o.shard_size_bytes));
  }
  if (o.max_side < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_side must be >= 0 (0 keeps images as they are), got ", o.max_side));
  }
  if (o.quality < 1 || o.quality > 100) {
    return absl::InvalidArgumentError(absl::StrCat("--quality must be 1..100, got ", o.quality));
  }
  if (o.prefix.empty() || o.prefix.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prefix must be a file name without '/', got \"", o.prefix, "\""));
  }
  return absl::OkStatus();
}

// ShardPath is OUT/PREFIX-NNNNNN.tar.
std::string ShardPath(const PackOptions& o, size_t n) {
  return absl::StrFormat("%s/%s-%06d.tar", o.out, o.prefix, n);
}

// OutDir is --out without trailing slashes (s3://b/shards/ and s3://b/shards are one).
std::string OutDir(const std::string& out) {
  std::string dir = out;
  const size_t keep = IsRemotePath(dir) ? dir.find("://") + 4 : 1;
  while (dir.size() > keep && absl::EndsWith(dir, "/")) dir.pop_back();
  return dir;
}

// PrepareOut creates a local --out, and refuses one that already holds this prefix's first
// shard (packing twice into one directory or prefix would mix two datasets). For s3:// it
// reads one byte of that key: a missing bucket or wrong credentials are refused here,
// before anything is read or uploaded.
absl::Status PrepareOut(const PackOptions& o, Env* env) {
  const std::string first = ShardPath(o, 0);
  const absl::Status exists = absl::AlreadyExistsError(
      absl::StrCat(first, " exists: pack into an empty --out, or choose another --prefix"));
  if (IsRemotePath(o.out)) {
    std::string probe;
    absl::Status s = env->ReadRange(first, 0, 1, &probe);
    if (s.ok()) return exists;
    return ErrorReason(s) == reason::kNotFound ? absl::OkStatus() : s;
  }
  if (::mkdir(o.out.c_str(), 0755) != 0 && errno != EEXIST) return StatusFromErrno(errno, o.out);
  struct stat st;
  if (::stat(first.c_str(), &st) == 0) return exists;
  return absl::OkStatus();
}

// WriteClassNames writes OUT/classes.txt (locally or as an object).
absl::Status WriteClassNames(const std::vector<std::string>& names, const std::string& path,
                             Env* env) {
  std::string classes;
  for (const std::string& c : names) absl::StrAppend(&classes, EscapeClassName(c), "\n");
  return WriteWholeFile(env, path, classes);
}

// WriteIndex writes a shard's index file (locally or as an object).
absl::Status WriteIndex(const TarIndexFile& index, const std::string& path, Env* env) {
  return WriteWholeFile(env, path, FormatTarIndexFile(index));
}

bool Cancelled(const PackOptions& o) {
  return o.storage.http.cancel != nullptr && o.storage.http.cancel->load();
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(const std::string& text) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  for (const char* suffix : {"ib", "b"}) {
    if (absl::EndsWith(t, suffix) && t.size() > strlen(suffix)) {
      t.resize(t.size() - strlen(suffix));
      break;
    }
  }
  double unit = 1;
  if (!t.empty()) {
    const char last = t.back();
    const int shift = last == 'k' ? 10 : last == 'm' ? 20 : last == 'g' ? 30 : last == 't' ? 40 : 0;
    if (shift > 0) {
      unit = static_cast<double>(int64_t{1} << shift);
      t.pop_back();
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(t, &value) || !(value > 0) || value * unit > 9e18) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a size such as 256MB, 1GiB or 4096, got \"", text, "\""));
  }
  return static_cast<int64_t>(value * unit);
}

absl::StatusOr<PackResult> Pack(const PackOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  PackOptions o = options;
  o.out = OutDir(o.out);
  // Declared before any shard: a shard dropped on an error aborts its upload through it.
  absl::StatusOr<std::unique_ptr<StorageEnv>> env = StorageEnv::Create(nullptr, o.storage);
  if (!env.ok()) return env.status();
  absl::StatusOr<std::unique_ptr<internal::PackSource>> ds =
      internal::PackSource::Open({o.data, o.annotations, o.label_maps});
  if (!ds.ok()) return ds.status();
  if (absl::Status s = PrepareOut(o, env->get()); !s.ok()) return s;
  std::unique_ptr<Reencoder> reencoder;
  if (o.max_side > 0) {
    absl::StatusOr<Reencoder> r = Reencoder::Create(o);
    if (!r.ok()) return r.status();
    reencoder = std::make_unique<Reencoder>(std::move(*r));
  }
  PackResult result;
  std::unique_ptr<TarWriter> shard;
  // A shard's index goes beside it once the shard is whole (tar_index_file.h): an index
  // never describes a shard that is not there.
  auto close_shard = [&]() -> absl::Status {
    if (shard == nullptr) return absl::OkStatus();
    result.bytes_out += shard->bytes() + 1024;  // Close adds the two end blocks.
    absl::Status s = shard->Close();
    if (s.ok()) {
      s = WriteIndex(shard->index(), TarIndexFileName(result.shards.back()), env->get());
    }
    shard.reset();
    return s;
  };
  std::string bytes;
  internal::PackSample source;
  for (int64_t i = 0; i < (*ds)->size(); ++i) {
    if (Cancelled(o)) return absl::CancelledError("pack interrupted");
    absl::Status r = (*ds)->Sample(i, &source);
    if (r.ok()) r = Env::Default()->ReadFile(source.path, int64_t{1} << 30, &bytes);
    if (!r.ok()) {
      LogWarning(absl::StrCat("pack: left out ", source.key, ": ", r.message()));
      ++result.unreadable;
      continue;
    }
    result.bytes_in += static_cast<int64_t>(bytes.size());
    std::string extension = Extension(source.key);
    if (reencoder != nullptr) {
      std::string smaller = reencoder->Shrink(bytes);
      if (!smaller.empty()) {
        bytes.swap(smaller);
        extension = "jpg";
        ++result.reencoded;
      }
    }
    const std::string key = absl::StrFormat("%09d", i);
    // Headers and padding: at most 1 KiB for each member.
    int64_t sample_bytes = static_cast<int64_t>(bytes.size()) + 1024;
    for (const auto& [ext, member] : source.members) {
      sample_bytes += static_cast<int64_t>(member.size()) + 1024;
    }
    if (shard != nullptr && shard->bytes() > 0 &&
        shard->bytes() + sample_bytes + 1024 > o.shard_size_bytes) {
      if (absl::Status s = close_shard(); !s.ok()) return s;
    }
    if (shard == nullptr) {
      result.shards.push_back(ShardPath(o, result.shards.size()));
      absl::StatusOr<std::unique_ptr<TarWriter>> w =
          TarWriter::Create(env->get(), result.shards.back());
      if (!w.ok()) return w.status();
      shard = std::move(*w);
    }
    absl::Status s = shard->Add(absl::StrCat(key, ".", extension), bytes);
    for (const auto& [ext, member] : source.members) {
      if (s.ok()) s = shard->Add(absl::StrCat(key, ".", ext), member);
    }
    if (!s.ok()) return s;
    ++result.samples;
  }
  if (absl::Status s = close_shard(); !s.ok()) return s;
  if (result.samples == 0) {
    return absl::InvalidArgumentError(absl::StrCat(o.data, ": no readable file to pack"));
  }
  if (!(*ds)->class_names().empty()) {
    absl::Status s = WriteClassNames((*ds)->class_names(), o.out + "/classes.txt", env->get());
    if (!s.ok()) return s;
  }
  result.run_flags = (*ds)->run_flags();
  if (!(*ds)->categories_json().empty()) {
    // The file's label map: shards that miss a category keep every label.
    const std::string path = o.out + "/categories.json";
    if (absl::Status s = WriteWholeFile(env->get(), path, (*ds)->categories_json()); !s.ok()) {
      return s;
    }
    absl::StrAppend(&result.run_flags, " --categories='", path, "'");
  }
  result.pattern = result.shards.size() == 1
                       ? result.shards[0]
                       : absl::StrFormat("%s/%s-{000000..%06d}.tar", o.out, o.prefix,
                                         result.shards.size() - 1);
  return result;
}

std::string EscapeClassName(const std::string& name) {
  std::string out;
  for (char c : name) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadClassNames(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return StatusFromErrno(errno, path);
  std::string text;
  char chunk[1 << 16];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof(chunk), f)) > 0) text.append(chunk, got);
  std::fclose(f);
  std::vector<std::string> names;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::string name;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] != '\\') {
        name += line[i];
        continue;
      }
      const char next = i + 1 < line.size() ? line[++i] : '\0';
      switch (next) {
        case '\\': name += '\\'; break;
        case 't': name += '\t'; break;
        case 'n': name += '\n'; break;
        case 'r': name += '\r'; break;
        default:
          return absl::InvalidArgumentError(absl::StrCat(
              path, ": line ", names.size() + 1, " has a bad escape (\\ \\t \\n \\r only)"));
      }
    }
    names.push_back(std::move(name));
  }
  return names;
}


int PackCommand(const PackOptions& command_options) {
  PackOptions options = command_options;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  options.storage.http.cancel = cancel;
  absl::StatusOr<PackResult> r;
  int signo = 0;
  {
    internal::SignalWatcher watcher(cancel);  // Ctrl-C aborts the shard being written.
    r = Pack(options);
    signo = watcher.received();
  }
  if (signo != 0) {
    std::fprintf(stderr, "flowloader: pack interrupted (signal %d); the shard being written "
                 "was discarded\n", signo);
    return 128 + signo;
  }
  if (!r.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", OneLine(r.status().message()).c_str());
    return 2;
  }
  std::printf("packed %lld samples into %zu shard(s), %.1f MiB (images read %.1f MiB",
              static_cast<long long>(r->samples), r->shards.size(),  // NOLINT(runtime/int)
              r->bytes_out / 1048576.0, r->bytes_in / 1048576.0);
  if (options.max_side > 0) {
    std::printf("; %lld re-encoded to shorter side %d", static_cast<long long>(r->reencoded),  // NOLINT
                options.max_side);
  }
  std::printf(")%s\nrun it: flowloader run --data='%s'%s\n",
              r->unreadable > 0 ? absl::StrCat("; ", r->unreadable, " unreadable file(s) left out").c_str()
                                : "",
              r->pattern.c_str(), r->run_flags.c_str());
  return 0;
}

}  // namespace flowloader
