// dump_batches.cc: writes a pipeline's uint8 HWC output to a .npy file, for the output
// quality check of the side-by-side benchmark (quality.py compares it to torchvision).
//
//   dump_batches --data=LIST_OR_DIR --out=PREFIX [--transform=eval --image_size=224]
//
// Runs one epoch through the public embedding API (runtime/pipeline.h) with
// layout=uint8_hwc, shuffle=false, device=cpu, on_error=fail, and writes
//   PREFIX.npy        uint8 array [N, H, W, 3] (NumPy format 1.0, C order)
//   PREFIX.keys.txt   the key (path relative to the dataset root) of each row, in order
// Exit status 0 on success; a pipeline error is printed and returns 1.
//
// Thread-safety: single-threaded caller of Pipeline::Next.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "runtime/pipeline.h"

ABSL_FLAG(std::string, data, "", "ImageFolder root or list file");
ABSL_FLAG(std::string, out, "", "output prefix (PREFIX.npy, PREFIX.keys.txt)");
ABSL_FLAG(std::string, transform, "eval", "train or eval");
ABSL_FLAG(int, image_size, 224, "output side in pixels");
ABSL_FLAG(int, batch_size, 64, "samples per batch");
ABSL_FLAG(int, num_workers, 2, "decode/augment threads");

namespace {

// NpyHeader returns a NumPy 1.0 header for a C-order uint8 array of `shape`, padded so
// the data starts at a multiple of 64 bytes.
std::string NpyHeader(const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) absl::StrAppend(&dims, d, ", ");
  std::string dict =
      absl::StrCat("{'descr': '|u1', 'fortran_order': False, 'shape': (", dims, "), }");
  const size_t unpadded = 10 + dict.size() + 1;  // magic+version+len, dict, '\n'
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header("\x93NUMPY\x01\x00", 8);
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>(dict.size() >> 8));
  return header + dict;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string out = absl::GetFlag(FLAGS_out);
  flowloader::PipelineOptions options;
  options.data = absl::GetFlag(FLAGS_data);
  options.transform = absl::GetFlag(FLAGS_transform);
  options.image_size = absl::GetFlag(FLAGS_image_size);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  options.num_workers = absl::GetFlag(FLAGS_num_workers);
  options.layout = "uint8_hwc";
  options.shuffle = false;
  options.epochs = 1;
  options.device = flowloader::DeviceChoice::kCpu;
  options.on_error = flowloader::ErrorPolicy::kFail;
  if (out.empty()) {
    std::fprintf(stderr, "dump_batches: --out is required\n");
    return 2;
  }
  auto created = flowloader::Pipeline::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "dump_batches: %s\n", std::string(created.status().message()).c_str());
    return 2;
  }
  std::unique_ptr<flowloader::Pipeline> pipeline = std::move(*created);

  std::string pixels;
  std::vector<std::string> keys;
  std::vector<int64_t> row_shape;  // [H, W, C]
  for (;;) {
    std::shared_ptr<const flowloader::Batch> batch;
    bool end_of_epoch = false;
    absl::Status s = pipeline->Next(&batch, &end_of_epoch);
    if (!s.ok()) {
      std::fprintf(stderr, "dump_batches: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    if (end_of_epoch) {
      if (pipeline->done()) break;
      continue;
    }
    if (batch->dtype() != flowloader::DType::kUint8 || batch->shape().size() != 4) {
      std::fprintf(stderr, "dump_batches: expected a uint8 [N,H,W,C] batch\n");
      return 1;
    }
    row_shape.assign(batch->shape().begin() + 1, batch->shape().end());
    pixels.append(static_cast<const char*>(batch->host_data()), batch->bytes());
    keys.insert(keys.end(), batch->keys.begin(), batch->keys.end());
  }

  std::vector<int64_t> shape = {static_cast<int64_t>(keys.size())};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  if (row_shape.empty()) shape = {0, 0, 0, 3};
  std::ofstream npy(out + ".npy", std::ios::binary | std::ios::trunc);
  npy << NpyHeader(shape);
  npy.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
  std::ofstream key_file(out + ".keys.txt", std::ios::trunc);
  for (const std::string& k : keys) key_file << k << '\n';
  if (!npy || !key_file) {
    std::fprintf(stderr, "dump_batches: cannot write %s.*\n", out.c_str());
    return 1;
  }
  std::printf("dump_batches: %zu images [%lld, %lld, %lld] to %s.npy\n", keys.size(),
              static_cast<long long>(shape[1]), static_cast<long long>(shape[2]),
              static_cast<long long>(shape[3]), out.c_str());
  return 0;
}
