// pack_command.h: `flowloader pack`: an ImageFolder or list file written as WebDataset
// tar shards that `flowloader run --data=OUT/train-{000000..N}.tar` (and webdataset)
// read; or a detection (COCO) or segmentation (label maps) dataset, whose samples then
// carry KEY.json or KEY.png instead of KEY.cls and KEY.json (internal/pack_source.h).
//
// Samples go in the dataset's order (ImageFolder: class, then file name), one shard after
// another, each shard closed before it would pass shard_size_bytes (a shard holds at
// least one sample). Sample i is key `%09d` (i) with members:
//   KEY.EXT   the image: the file's bytes unchanged (EXT its extension, lower case), or,
//             with max_side, re-encoded as KEY.jpg when its shorter side is larger than
//             max_side (resized so the shorter side is max_side, area-averaged, JPEG at
//             `quality`), as FFCV's max_resolution does, so that every epoch decodes
//             fewer pixels;
//   KEY.cls   the label, as decimal text;
//   KEY.json  {"key": the source key, "label": N}.
// OUT/classes.txt lists the ImageFolder's class names, one per line, by label, each
// escaped as --samples_out escapes keys (backslash, tab, newline, CR as \\ \t \n \r),
// so a class directory whose name holds a newline cannot shift the labels after it;
// ReadClassNames reads it back. A file
// that cannot be read is left out (named, counted); a file that cannot be decoded for
// re-encoding is packed unchanged, so a run skips it exactly as it skips it in the
// ImageFolder.
//
// OUT may be s3://BUCKET/PREFIX: the shards and classes.txt are then uploaded as they are
// written (S3Env::NewWritableFile: one PUT, or a multipart upload in parts of
// storage.s3.upload_part_bytes), with the credentials and settings of `storage`. A shard
// that fails, or is interrupted (storage.http.cancel, Ctrl-C), leaves no object: its upload
// is aborted (a local shard file is removed the same way); the shards finished before it
// stay.
//
// Thread-safety: Pack runs on the calling thread; call it from one thread.
#ifndef FLOWLOADER_RUNTIME_PACK_COMMAND_H_
#define FLOWLOADER_RUNTIME_PACK_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/reader/schemes.h"

namespace flowloader {

struct PackOptions {
  // An ImageFolder root or a list file (`path<TAB>label`). Required.
  std::string data;
  // Detection: a COCO instances file whose images lie under `data`; each sample gets a
  // KEY.json member, {"image_id", "file_name", "width", "height", "annotations": [the
  // image's annotations as the file has them]} (run: --annotations=.json).
  std::string annotations;
  // Segmentation: a label-map directory paired with `data`, or a list file of `image
  // label_map` lines (Dataset::OpenLabelMaps); each sample gets KEY.png, its label map's
  // bytes (KEY.seg.png when some image is a PNG itself; run: --label_maps=.png). A
  // sample without a readable map is left out, named and counted as unreadable.
  std::string label_maps;
  // The directory the shards go to (created; must not hold shards already), or an
  // s3://BUCKET/PREFIX (the bucket must exist). Required.
  std::string out;
  // A shard is closed before it passes this many bytes; > 0. Default 256 MiB.
  int64_t shard_size_bytes = int64_t{256} << 20;
  // Re-encode images whose shorter side is larger than this; 0 (default) copies bytes.
  int max_side = 0;
  // JPEG quality of re-encoded images, 1..100. Default 90.
  int quality = 90;
  // Shard file names: PREFIX-000000.tar, ... Default "train".
  std::string prefix = "train";
  // Where an s3:// `out` is written: endpoint, credentials, retries (the run's keys s3_*),
  // the upload's part size (s3.upload_part_bytes); http.cancel stops the pack (Ctrl-C).
  StorageOptions storage;
};

struct PackResult {
  std::vector<std::string> shards;  // Paths written, in order.
  int64_t samples = 0;
  int64_t reencoded = 0;      // Images resized and re-encoded (max_side).
  int64_t unreadable = 0;     // Files left out.
  int64_t bytes_in = 0;       // Image bytes read.
  int64_t bytes_out = 0;      // Shard bytes written.
  std::string pattern;        // OUT/PREFIX-{000000..N}.tar, for --data.
  std::string run_flags;      // " --annotations=.json" etc.: what run needs beside --data.
};

// Pack writes the shards.
absl::StatusOr<PackResult> Pack(const PackOptions& options);

// EscapeClassName is one class name as classes.txt holds it (see above).
std::string EscapeClassName(const std::string& name);
// ReadClassNames reads a classes.txt written by Pack: the class names by label.
absl::StatusOr<std::vector<std::string>> ReadClassNames(const std::string& path);

// PackCommand runs Pack, prints what it wrote and returns the exit code (0, or 2 with a
// one-line error).
int PackCommand(const PackOptions& options);

// ParseByteSize reads a size such as 256MB, 1.5GiB, 4096 or 64k (K/M/G/T, with or without
// B/iB, powers of 1024).
absl::StatusOr<int64_t> ParseByteSize(const std::string& text);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_PACK_COMMAND_H_
