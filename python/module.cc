// module.cc: the `flowloader._flowloader` extension (pybind11): the C++ half of the
// Python module. flowloader/__init__.py builds DataLoader on top of it.
//
//   _Loader(spec, settings, metrics_address, resume=[epoch, batch, sample, batch_size],
//           dataset=None)
//       spec: a spec file or None; settings: [(key, text)] applied in order through the
//       spec's own key table (ApplySpecValue), so a bad value is the CLI's one-line
//       message, raised as ValueError. dataset: an object with __len__ and __getitem__
//       read in place of data or sources (python/internal/py_dataset.h).
//   _Loader.next(return_keys, return_sources=False, return_columns=False) -> None at an
//       end of epoch, else
//       (images: _TensorView, labels: _TensorView, keys or None, must_copy: bool,
//        epoch, batch index, sources or None, columns or None, extras or None,
//        targets or None, image_sizes or None)
//       sources: each row's source name; columns: {name: [str, or bytes where the value
//       is not valid UTF-8]}; extras (dataset= only): each row's third item element, or
//       None when no row's item had one; targets (with annotations): one dict per row of
//       zero-copy _TensorViews {boxes, labels, iscrowd, area, masks, keypoints} and
//       image_id; image_sizes (a padded batch, size_divisibility): each row's (h, w), the
//       top-left region of its row of images that holds the image (its masks are that
//       size), else None.
//   _Loader.source_names: the sources by number ("default" for data).
//   _Loader.categories: with annotations, [{id, name, label}] (COCO id → label);
//   _Loader.annotation_skips: {reason: count} of the annotations dropped.
//   _TensorView: __dlpack__(stream=None) / __dlpack_device__(), for torch.from_dlpack.
//   _Loader.abandoned_calls: the calls of user code close() left running (Dispose).
//   spec_keys(), shard_from_environment(), hold_limit(prefetch_batches),
//   _refuse_inside_callback(what): RuntimeError inside a Dataset's __getitem__ or a Lambda.
//
// Zero copy: an images view wraps the batch buffer itself. Its DLPack capsule's deleter
// (run by torch when the last tensor over it is freed, from any thread, without the GIL)
// drops the view's BatchHold, and with the last hold the shared_ptr<const Batch> that
// returns the buffer to the pool. BatchHold counts live holds; `must_copy` tells the
// Python side that this batch would leave fewer than one free buffer (the hold rule,
// HoldLimit), so it is copied and its buffer returned at once.
//
// Threads and the GIL: next() waits in 50 ms slices with the GIL released and runs
// PyErr_CheckSignals between them, so Ctrl-C raises KeyboardInterrupt within a slice
// even while no batch comes; a batch that came together with the signal is kept for the
// next call, so an interrupted loop loses nothing. Nothing in the pipeline's threads
// touches Python, except the python_dataset stage of dataset= and the python_lambda op,
// which take the GIL for each call: so everything here that waits for the pipeline's
// threads (creating, closing, destroying a loader) releases the GIL first.
//
// Lifecycle (docs/python.md, "Lifecycle"):
//   * Calls from the user's code that the pipeline runs (a Dataset's __getitem__, a
//     Lambda) into a loader (close, next, checkpoint, set_batch_size) raise RuntimeError:
//     close() there would wait for the very thread it runs on.
//   * close() waits for the pipeline's threads, but a Python call blocked in the user's
//     code (a network read, a sleep) is abandoned after kAbandonAfter: the rest of the
//     teardown goes on in a detached thread, which drops the call's result when it
//     returns; the calls are named in a log line and in the summary at close.
//   * Fork: a loader's threads stay in the parent. In a child every use raises
//     RuntimeError, and close (at exit, at garbage collection) leaks the loader instead
//     of waiting for threads that do not exist there. Making a loader in the child of a
//     process that made one raises RuntimeError too: oneTBB's workers did not survive
//     the fork, and the new loader would get none.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "python/internal/dlpack.h"
#include "python/internal/eager.h"
#include "python/internal/float_eager.h"
#include "python/internal/loader.h"
#include "python/internal/py_dataset.h"
#include "python/internal/py_lambda.h"
#include "python/internal/worker_gil.h"
#include "runtime/shard_env.h"
#include "stages/core/one_line.h"
#include "runtime/spec.h"
#include "stages/augment/ops/view_program.h"
#include "stages/core/log.h"
#include "stages/core/memory_plan.h"
#include "stages/reader/dataset.h"

namespace py = pybind11;

namespace flowloader {
namespace python_internal {
namespace {

constexpr absl::Duration kWaitSlice = absl::Milliseconds(50);
// How long close() waits for the pipeline's threads while a call of the user's Python
// code is in flight before it abandons that call (Dispose).
constexpr absl::Duration kAbandonAfter = absl::Milliseconds(300);

// The exception for fatal data errors during iteration (a RuntimeError subclass).
PyObject* g_data_error = nullptr;

// The process whose loaders started oneTBB's worker threads (0 before the first loader).
// A forked child has none of them, and oneTBB, which cannot tell, would give a loader made
// there no thread at all: its first batch would never come.
std::atomic<pid_t> g_threads_pid{0};

// Why a wait ended when the loader it waited on was closed under it (_next_or_closed in
// __init__.py words the same).
constexpr char kClosedInHandler[] =
    "the DataLoader was closed while this call waited for it (close() from another thread "
    "or a signal handler, or a signal handler's new iter() of it, which starts a new "
    "pipeline)";

// kForkAdvice ends the messages about fork.
constexpr char kForkAdvice[] =
    "loaders do not survive fork (their threads, oneTBB's too, stay in the parent): make "
    "the DataLoader in a process started with multiprocessing's 'spawn' or 'forkserver' "
    "method, or before the first loader is made";

// HoldLimit is how many batches may be held zero-copy at once before the next one is
// copied: prefetch_batches - 1, so one buffer always stays with the pipeline and a loop
// that keeps every batch can never wait on itself.
int HoldLimit(int prefetch_batches) { return prefetch_batches - 1; }

// BatchHold is one counted hold on a batch buffer (live_views in loader.h).
class BatchHold {
 public:
  BatchHold(std::shared_ptr<const Batch> batch, std::shared_ptr<std::atomic<int>> live)
      : batch_(std::move(batch)), live_(std::move(live)) {
    live_->fetch_add(1);
  }
  ~BatchHold() { live_->fetch_sub(1); }
  BatchHold(const BatchHold&) = delete;
  BatchHold& operator=(const BatchHold&) = delete;

 private:
  const std::shared_ptr<const Batch> batch_;
  const std::shared_ptr<std::atomic<int>> live_;
};

// TensorView is one tensor's memory, shape and type, and what keeps the memory alive.
struct TensorView {
  std::shared_ptr<const void> owner;  // A BatchHold, or the view's own vector.
  void* data = nullptr;
  std::vector<int64_t> shape;
  DLDataType dtype{kDLFloat, 32, 1};
  DLDevice device{kDLCPU, 0};
};

// ManagedContext is what a DLManagedTensor owns until its consumer calls the deleter.
struct ManagedContext {
  DLManagedTensor managed;
  std::shared_ptr<const void> owner;
  std::vector<int64_t> shape;
};

void DeleteManaged(DLManagedTensor* managed) {
  delete static_cast<ManagedContext*>(managed->manager_ctx);
}

// A capsule torch never consumed (still named "dltensor") frees its tensor itself.
void DeleteUnconsumedCapsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

py::capsule ToDlpack(const TensorView& view) {
  auto* context = new ManagedContext;
  context->owner = view.owner;
  context->shape = view.shape;
  DLTensor& t = context->managed.dl_tensor;
  t.data = view.data;
  t.device = view.device;
  t.ndim = static_cast<int32_t>(context->shape.size());
  t.dtype = view.dtype;
  t.shape = context->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  context->managed.manager_ctx = context;
  context->managed.deleter = DeleteManaged;
  PyObject* capsule = PyCapsule_New(&context->managed, "dltensor", DeleteUnconsumedCapsule);
  if (capsule == nullptr) {
    delete context;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

DLDataType DlType(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return DLDataType{kDLUInt, 8, 1};
    case DType::kInt64:
      return DLDataType{kDLInt, 64, 1};
    case DType::kFloat32:
      break;
  }
  return DLDataType{kDLFloat, 32, 1};
}

// TensorViewOf is batch tensor `k` of `batch`, kept alive by `hold`: one hold per batch,
// shared by all its tensors, so a batch of several views counts once in live_views.
TensorView TensorViewOf(const Batch& batch, size_t k, const std::shared_ptr<BatchHold>& hold) {
  const BatchTensor& tensor = batch.tensors[k];
  TensorView view;
  view.owner = hold;
  view.shape = tensor.shape;
  view.dtype = DlType(tensor.dtype);
  if (batch.location == MemoryLocation::kDevice) {
    // Upload waited for its stream before the batch was handed out (device_memory.h), so
    // the data is complete before any work the consumer queues on any stream: torch's
    // current stream needs no extra wait. (The device copy of every tensor is checked in
    // C++ on a GPU, tests:cuda_upload_test; this DLPack hand-over has not run on one.)
    view.data = tensor.device_data;
    view.device = DLDevice{kDLCUDA, 0};  // DeviceOptions::cuda_device, always 0 here.
  } else {
    view.data = const_cast<void*>(tensor.host_data);
    view.device = DLDevice{kDLCPU, 0};  // Pinned or not, torch reads it as CPU memory.
  }
  return view;
}

// ImagesObject is the batch's images: its one tensor's view, or with several batch
// tensors (views) a dict of name → view, in the graph's order, kept alive by `hold`.
py::object ImagesObject(const std::shared_ptr<const Batch>& batch,
                        const std::shared_ptr<BatchHold>& hold) {
  if (batch->tensors.size() <= 1) return py::cast(TensorViewOf(*batch, 0, hold));
  py::dict views;
  for (size_t k = 0; k < batch->tensors.size(); ++k) {
    views[py::str(batch->tensors[k].name)] = py::cast(TensorViewOf(*batch, k, hold));
  }
  return views;
}

// TargetView is a zero-copy view of `count` rows of `row_elems` elements of `dtype` at
// `data` (a BatchTargets vector), kept alive by `hold`. An empty view points at a static
// byte, so its consumer never sees a null pointer.
TensorView TargetView(const void* data, std::vector<int64_t> shape, DType dtype,
                      const std::shared_ptr<BatchHold>& hold) {
  static const int64_t kEmpty = 0;
  TensorView view;
  view.owner = hold;
  view.data = const_cast<void*>(data != nullptr ? data : &kEmpty);
  view.shape = std::move(shape);
  view.dtype = DlType(dtype);
  return view;
}

// Targets is the batch's detection targets as torchvision's detection models take them:
// a list of one dict per row {"boxes": float32 [K, 4] xyxy, "labels": int64 [K],
// "iscrowd": int64 [K], "area": float32 [K], "masks": uint8 [K, H, W] (when made),
// "keypoints": float32 [K, P, 3] (when the annotations have them), "image_id": int},
// each tensor a view of the batch's flat targets (Batch::targets), kept alive by `hold`
// (the images' hold: a batch counts once in live_views, whatever the user keeps of it).
py::object Targets(const std::shared_ptr<const Batch>& batch,
                   const std::shared_ptr<BatchHold>& hold) {
  const BatchTargets& t = batch->targets;
  if (!t.present) return py::none();
  if (t.has_semantic) {
    // Semantic segmentation: one int64 [N, H, W] view of the label maps, not dicts.
    return py::cast(TargetView(t.semantic.data(), {t.rows(), t.mask_height, t.mask_width},
                               DType::kInt64, hold));
  }
  // A padded batch's rows have masks at their own image's size (torchvision's targets),
  // at mask_offsets.
  const std::vector<int64_t>& sizes = batch->image_sizes;
  const bool own_size = sizes.size() == 2 * static_cast<size_t>(t.rows());
  py::list rows;
  for (int64_t r = 0; r < t.rows(); ++r) {
    const int64_t begin = t.offsets[r], k = t.offsets[r + 1] - begin;
    const int64_t mask_h = own_size ? sizes[2 * r] : t.mask_height;
    const int64_t mask_w = own_size ? sizes[2 * r + 1] : t.mask_width;
    py::dict row;
    row["boxes"] = py::cast(TargetView(t.boxes.data() + 4 * begin, {k, 4}, DType::kFloat32, hold));
    row["labels"] = py::cast(TargetView(t.labels.data() + begin, {k}, DType::kInt64, hold));
    row["iscrowd"] = py::cast(TargetView(t.iscrowd.data() + begin, {k}, DType::kInt64, hold));
    row["area"] = py::cast(TargetView(t.area.data() + begin, {k}, DType::kFloat32, hold));
    if (t.has_masks) {
      row["masks"] = py::cast(TargetView(t.masks.data() + t.mask_offsets[r],
                                         {k, mask_h, mask_w}, DType::kUint8, hold));
    }
    if (t.has_keypoints) {
      const int64_t p = t.num_keypoints;
      row["keypoints"] = py::cast(TargetView(t.keypoints.data() + p * 3 * begin, {k, p, 3},
                                             DType::kFloat32, hold));
    }
    row["image_id"] = py::int_(t.image_ids[r]);
    rows.append(std::move(row));
  }
  return rows;
}

// LabelsView is a copy of the batch's label tensor, so it outlives the batch buffer
// (labels are small): `labels` (the batch's class indices, or a dataset='s from
// PyDatasetSource::TakeRows) as int64 [N], or, where a batch op made soft targets
// (Batch::label float32 [N, C]), those.
TensorView LabelsView(const Batch& batch, std::vector<int64_t> labels) {
  const BatchTensor& label = batch.label;
  std::vector<uint8_t> copy;
  if (label.dtype == DType::kFloat32) {
    copy.resize(label.bytes());
    if (!copy.empty()) std::memcpy(copy.data(), label.host_data, copy.size());
  } else {
    copy.resize(labels.size() * sizeof(int64_t));
    if (!copy.empty()) std::memcpy(copy.data(), labels.data(), copy.size());
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>(std::move(copy));
  TensorView view;
  view.data = bytes->data();
  view.owner = bytes;
  view.shape = label.dtype == DType::kFloat32
                   ? label.shape
                   : std::vector<int64_t>{static_cast<int64_t>(labels.size())};
  view.dtype = DlType(label.dtype == DType::kFloat32 ? DType::kFloat32 : DType::kInt64);
  return view;
}

// Cut is `text` cut to `max` characters, saying how long it was.
std::string Cut(absl::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  return absl::StrCat(text.substr(0, max), "... (", text.size(), " characters)");
}

// RaiseText raises `type` with `message`. A message quoting a path that is not UTF-8
// (a file name's bytes) has those bytes as \xff escapes: PyErr_SetString decodes strictly
// and, failing, raised a ValueError with an empty message.
[[noreturn]] void RaiseText(PyObject* type, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                        "backslashreplace");
  if (text == nullptr) throw py::error_already_set();
  PyErr_SetObject(type, text);
  Py_DECREF(text);
  throw py::error_already_set();
}

[[noreturn]] void Raise(PyObject* type, const absl::Status& status) {
  RaiseText(type, OneLine(status.message()));
}

// PathText is a path or key as str, as os.fsdecode gives it: bytes that are not UTF-8 (a
// file name's) become surrogates that os.fsencode turns back into the same bytes (py::str
// raised UnicodeDecodeError on them).
py::str PathText(const std::string& path) {
  PyObject* text =
      PyUnicode_DecodeFSDefaultAndSize(path.data(), static_cast<Py_ssize_t>(path.size()));
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

// PathList is PathText of each.
py::list PathList(const std::vector<std::string>& paths) {
  py::list out;
  for (const std::string& path : paths) out.append(PathText(path));
  return out;
}

// WithoutGil returns wait() run with the GIL released, taking it back with RestoreOrPark:
// a daemon thread waiting here when the interpreter finalizes is parked there instead of
// unwound through pybind11's frames (which drop Python references without the GIL) or a
// noexcept destructor ("terminate called without an active exception" at exit).
template <typename Wait>
bool WithoutGil(Wait&& wait) {
  PyThreadState* state = PyEval_SaveThread();
  bool result = false;
  try {
    result = wait();
  } catch (...) {
    python::RestoreOrPark(state);
    throw;
  }
  python::RestoreOrPark(state);
  return result;
}

// RefuseInsideCallback raises RuntimeError when the calling thread runs the user's
// code for a pipeline (py_dataset.h, CallbackScope): `what` ("DataLoader.close()")
// would wait for, or drive, the pipeline whose thread this is.
void RefuseInsideCallback(const std::string& what) {
  const char* inside = InsideCallback();
  if (inside == nullptr) return;
  RaiseText(PyExc_RuntimeError,
            absl::StrCat(what, " is not allowed inside ", inside,
                         ": it runs on a loader's worker thread, which the loader waits for; "
                         "call it from the loop that iterates the loader"));
}

// CreationErrorType: an option, a data path or a memory plan the caller can change is
// a ValueError; anything else (a metrics port in use, an internal fault) a RuntimeError.
PyObject* CreationErrorType(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kPermissionDenied:
      return PyExc_ValueError;
    default:
      return PyExc_RuntimeError;
  }
}

// ApplySetting sets one keyword: `sources`, `stages` (the views of transform=) and
// `batch_ops` arrive as JSON (YAML's flow style) for the spec's own parser; any other key
// as a flag's text. A keyword replaces a spec's value, so sources= drops a spec's data and
// data= a spec's sources.
void ApplySetting(const std::string& key, const std::string& text, PipelineOptions* options) {
  const bool structured = key == "sources" || key == "stages" || key == "batch_ops";
  const absl::Status s = structured ? ApplySpecYamlValue(key, text, options)
                                    : ApplySpecValue(key, text, options);
  if (!s.ok()) {
    // The parser quotes the value whole: a long one is cut where it appears, 5 short of
    // kMaxValueChars, so that with its "..." and quotes OneLine does not cut it again
    // (before: "1000...0... (203 characters) (401 characters)").
    std::string message(s.message());
    if (text.size() > kMaxValueChars) {
      message = absl::StrReplaceAll(message, {{text, Cut(text, kMaxValueChars - 5)}});
    }
    Raise(PyExc_ValueError, absl::Status(s.code(), message));
  }
  if (key == "sources") options->data.clear();
  if (key == "data") options->sources.clear();
}

// SourceNames is each row's source name.
py::list SourceNames(const Batch& batch, const std::vector<std::string>& names) {
  py::list out;
  for (int32_t source : batch.sources) out.append(py::str(names[static_cast<size_t>(source)]));
  return out;
}

// ColumnValue is a column value as str, or bytes where it is not valid UTF-8 (a tar
// member can hold anything).
py::object ColumnValue(std::string_view value) {
  PyObject* text = PyUnicode_DecodeUTF8(value.data(), static_cast<Py_ssize_t>(value.size()),
                                        "strict");
  if (text != nullptr) return py::reinterpret_steal<py::object>(text);
  PyErr_Clear();
  return py::bytes(value.data(), value.size());
}

// Columns is {name: [value per row]} of the batch's extra per-sample columns.
py::dict Columns(const Batch& batch) {
  py::dict out;
  for (const BatchColumn& column : batch.columns) {
    py::list values;
    for (size_t r = 0; r + 1 < column.offsets.size(); ++r) {
      values.append(ColumnValue(column.value(static_cast<int64_t>(r))));
    }
    out[py::str(column.name)] = values;
  }
  return out;
}

// PyLoader is the Python object `_Loader`.
class PyLoader {
 public:
  PyLoader(const std::optional<std::string>& spec,
           const std::vector<std::pair<std::string, std::string>>& settings,
           const std::string& metrics_address, const std::vector<int64_t>& resume,
           const py::object& dataset) {
    if (const pid_t parent = g_threads_pid.load(); parent != 0 && parent != getpid()) {
      RaiseText(PyExc_RuntimeError,
                absl::StrCat("this process (", getpid(), ") is a fork of process ", parent,
                             ", which made a DataLoader: ", kForkAdvice));
    }
    LoaderOptions options;
    if (spec.has_value()) {
      absl::StatusOr<PipelineOptions> loaded = LoadSpecFile(*spec);
      if (!loaded.ok()) Raise(PyExc_ValueError, loaded.status());
      options.pipeline = *std::move(loaded);
    }
    for (const auto& [key, text] : settings) ApplySetting(key, text, &options.pipeline);
    if (!dataset.is_none()) UseDataset(dataset, &options.pipeline);
    if (options.pipeline.data.empty() && options.pipeline.sources.empty() &&
        options.pipeline.dataset == nullptr && options.pipeline.label_maps.empty()) {
      Raise(PyExc_ValueError, absl::InvalidArgumentError(
                                  "data is required (an ImageFolder directory, list file or "
                                  "tar shards), or sources=, or data: or sources: in spec"));
    }
    if (resume.size() != 4) {
      Raise(PyExc_ValueError, absl::InvalidArgumentError(
                                  "resume must be [epoch, batch, sample, batch_size]"));
    }
    options.pipeline.resume.epoch = resume[0];
    options.pipeline.resume.batch = resume[1];
    options.pipeline.resume.sample = resume[2];
    options.pipeline.resume.batch_size = static_cast<int>(resume[3]);
    options.metrics_address = metrics_address;
    g_threads_pid.store(getpid());
    absl::StatusOr<std::unique_ptr<Loader>> loader;
    {
      python::ReleasedGil release;  // Exit-safe (worker_gil.h): a daemon thread may be here.
      loader = Loader::Create(options);
    }
    if (!loader.ok()) Raise(CreationErrorType(loader.status()), loader.status());
    loader_ = *std::move(loader);
  }

  // Next returns None at an end of epoch, else (images, labels, keys or None, must_copy,
  // epoch, batch index, sources or None, columns or None, extras or None, targets or
  // None, image_sizes or None).
  py::object Next(bool return_keys, bool return_sources, bool return_columns) {
    RefuseInsideCallback("iterating a DataLoader");
    // Kept alive while this call waits without the GIL: a close() from another thread
    // (or the interpreter's exit) frees it only after this call let go (Dispose).
    const std::shared_ptr<Loader> kept = Kept();
    Loader& loader = *kept;
    Fetched fetched;
    if (held_.has_value()) {
      fetched = *std::move(held_);
      held_.reset();
    } else {
      while (true) {
        bool came = false;
        came = WithoutGil([&] { return loader.WaitNext(kWaitSlice, &fetched); });
        const bool signalled = PyErr_CheckSignals() != 0;
        // A Python signal handler runs in PyErr_CheckSignals, on this thread: one that
        // closed the loader (or iterated it anew, which closes it) freed `loader`, which
        // this call then used (a segfault). Nothing of it is touched after that.
        if (loader_.get() != &loader) {
          if (signalled) throw py::error_already_set();
          RaiseText(PyExc_ValueError, kClosedInHandler);
        }
        if (signalled) {
          // Ctrl-C: what came with it is the next call's, so an interrupted loop that
          // iterates again loses nothing.
          if (came) held_ = std::move(fetched);
          throw py::error_already_set();
        }
        if (came) break;
      }
    }
    if (!fetched.status.ok()) Raise(g_data_error, fetched.status);
    if (fetched.end_of_epoch || fetched.batch == nullptr) return py::none();
    std::vector<int64_t> labels_of_rows = fetched.batch->labels;
    py::object extras = py::none();
    if (source_ != nullptr) source_->TakeRows(*fetched.batch, &labels_of_rows, &extras);
    // The buffers in effect now: the autotuner (prefetch_batches: auto) may have added some.
    const bool must_copy =
        loader.live_views()->load() >= HoldLimit(loader.pipeline().prefetch_batches());
    py::object keys = py::none();
    if (return_keys) keys = PathList(fetched.batch->keys);
    TensorView labels = LabelsView(*fetched.batch, std::move(labels_of_rows));
    // One hold for the images and the targets: a held batch counts once in the hold rule
    // (two holds made every detection batch count twice, so each was copied).
    auto hold = std::make_shared<BatchHold>(fetched.batch, loader.live_views());
    py::object images = ImagesObject(fetched.batch, hold);
    py::object sources = py::none();
    if (return_sources) sources = SourceNames(*fetched.batch, loader.pipeline().source_names());
    py::object columns = py::none();
    if (return_columns) columns = Columns(*fetched.batch);
    py::object targets = Targets(fetched.batch, hold);
    py::object image_sizes = py::none();
    if (!fetched.batch->image_sizes.empty()) {
      py::list sizes;
      const std::vector<int64_t>& s = fetched.batch->image_sizes;
      for (size_t r = 0; r + 1 < s.size(); r += 2) sizes.append(py::make_tuple(s[r], s[r + 1]));
      image_sizes = std::move(sizes);
    }
    return py::make_tuple(std::move(images), std::move(labels), keys, must_copy,
                          fetched.batch->epoch, fetched.batch->index, sources, columns, extras,
                          targets, image_sizes);
  }

  // Checkpoint is (epoch, batch, sample, batch_size) of the caller's next batch (Cursor).
  // It waits for a request in flight in slices, so Ctrl-C ends the wait.
  std::vector<int64_t> Checkpoint() {
    RefuseInsideCallback("DataLoader.state_dict() (or iter())");
    const std::shared_ptr<Loader> kept = Kept();  // As in Next.
    Loader& loader = *kept;
    Cursor cursor;
    if (held_.has_value() && held_->batch != nullptr) {
      cursor = Cursor{held_->batch->epoch, held_->batch->index};
    } else {
      while (true) {
        bool came = false;
        came = WithoutGil([&] { return loader.WaitCursor(kWaitSlice, &cursor); });
        if (came) break;
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (loader_.get() != &loader) RaiseText(PyExc_ValueError, kClosedInHandler);
      }
    }
    return {cursor.epoch, cursor.batch, cursor.sample, cursor.batch_size};
  }

  void SetBatchSize(int batch_size) {
    RefuseInsideCallback("DataLoader.set_batch_size()");
    if (absl::Status s = Open().pipeline().SetBatchSize(batch_size); !s.ok()) {
      Raise(PyExc_ValueError, s);
    }
  }

  // Summary is the summary so far, or after close() the one taken at close.
  std::string Summary() {
    if (loader_ == nullptr && !closed_summary_.empty() && !Forked()) return closed_summary_;
    return Open().SummaryJson();
  }

  // AbandonedCalls names the calls of user code close() left running (Dispose).
  const std::vector<std::string>& abandoned_calls() const { return abandoned_; }

  // Outputs lists every batch tensor as (name, per-sample shape, dtype name).
  std::vector<py::tuple> Outputs() {
    std::vector<py::tuple> out;
    for (const OutputSpec& o : Open().pipeline().outputs()) {
      out.push_back(py::make_tuple(o.name, o.sample_shape, DTypeName(o.dtype())));
    }
    return out;
  }

  // Close stops the pipeline and waits for its threads, but not for a call of the
  // user's Python code that is blocked (Dispose); buffers still viewed by tensors go back
  // when those tensors are freed. In a forked child it only lets go of the loader.
  void Close() {
    if (Forked()) {
      LetGo();
      return;
    }
    RefuseInsideCallback("DataLoader.close()");
    std::shared_ptr<Loader> loader = std::move(loader_);
    held_.reset();
    if (loader == nullptr) return;
    closed_summary_ = loader->SummaryJson();
    {
      // The workers may be waiting for the GIL. Exit-safe (worker_gil.h): a daemon
      // thread in close() when the interpreter exits aborted the process.
      python::ReleasedGil release;
      abandoned_ = Dispose(std::move(loader));
    }
    if (!abandoned_.empty()) {
      LogWarning(absl::StrCat("DataLoader.close(): abandoned ", abandoned_.size(),
                              " call(s) of Python code still running after ",
                              absl::FormatDuration(kAbandonAfter), ": ",
                              absl::StrJoin(abandoned_, ", "),
                              "; each finishes on its own thread and its result is dropped"));
    }
    source_.reset();  // With the GIL: it holds Python objects.
  }

  // The destructor runs where Python drops the object: a refused close (inside a
  // callback) leaves the loader to the interpreter's exit instead of aborting.
  ~PyLoader() {
    if (!Forked() && InsideCallback() != nullptr) {
      LetGo();
      return;
    }
    try {
      Close();
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable(__func__);
    }
  }

  bool closed() const { return loader_ == nullptr; }
  int64_t batches_per_epoch() { return Open().pipeline().batches_per_epoch(); }
  int batch_size() { return Open().pipeline().batch_size(); }
  int prefetch_batches() { return Open().pipeline().prefetch_batches(); }
  int64_t samples_per_epoch() { return Open().pipeline().samples_per_epoch(); }
  int live_views() { return Open().live_views()->load(); }
  std::string memory_description() { return Open().pipeline().memory_description(); }
  int effective_threads() { return Open().pipeline().effective_threads(); }
  std::vector<std::string> source_names() { return Open().pipeline().source_names(); }
  // categories is the COCO category map of `annotations` ([{id, name, label}], empty
  // without annotations); annotation_skips its dropped annotations by reason.
  py::list categories() {
    py::list out;
    const detection::CocoDataset* coco = Open().pipeline().annotations();
    if (coco == nullptr) return out;
    for (const detection::CocoCategory& c : coco->categories()) {
      py::dict d;
      d["id"] = c.id;
      d["name"] = c.name;
      d["label"] = c.label;
      out.append(std::move(d));
    }
    return out;
  }
  py::dict annotation_skips() {
    py::dict out;
    const detection::CocoDataset* coco = Open().pipeline().annotations();
    if (coco == nullptr) return out;
    for (const auto& [reason, count] : coco->skipped()) out[py::str(reason)] = count;
    return out;
  }
  py::dict Options() {
    const PipelineOptions& o = Open().pipeline().options();
    py::dict d;
    d["data"] = PathText(o.data);
    d["name"] = o.name;
    d["batch_size"] = o.batch_size;
    d["num_workers"] = o.num_workers;
    d["prefetch_batches"] = o.prefetch_batches;
    d["epochs"] = o.epochs;
    d["seed"] = o.seed;
    d["shuffle"] = o.shuffle;
    d["drop_last"] = o.drop_last;
    d["rank"] = o.rank;
    d["world_size"] = o.world_size;
    d["layout"] = o.layout;
    d["image_size"] = o.image_size;
    return d;
  }

 private:
  // Kept is Open()'s loader, shared: kept alive while the caller waits without the GIL.
  std::shared_ptr<Loader> Kept() {
    Open();
    return loader_;
  }

  Loader& Open() {
    if (Forked()) {
      RaiseText(PyExc_RuntimeError,
                absl::StrCat("this flowloader.DataLoader was made in process ", pid_,
                             " and this is process ", getpid(), ", a fork of it: ",
                             kForkAdvice));
    }
    if (loader_ == nullptr) {
      PyErr_SetString(PyExc_ValueError, "the DataLoader is closed");
      throw py::error_already_set();
    }
    return *loader_;
  }

  bool Forked() const { return getpid() != pid_; }

  // LetGo lets go of the loader without destroying it (a deliberate leak): in a forked
  // child its threads do not exist (joining them would wait forever) and its mutexes may
  // be held by them; a loader dropped inside a callback would join its own thread.
  void LetGo() {
    if (loader_ != nullptr) (void)new std::shared_ptr<Loader>(std::move(loader_));
    if (source_ != nullptr) (void)new std::shared_ptr<PyDatasetSource>(std::move(source_));
    held_.reset();
  }

  // Dispose stops `loader` and destroys it, waiting while its threads finish; once a
  // call of the user's Python code has been in flight for kAbandonAfter, it leaves the
  // rest of the teardown to a detached thread and returns those calls (the blocked call
  // is abandoned: its result is dropped when it returns). The loader is destroyed once
  // no other thread's next() or state_dict() still holds it (Kept): those see it stopped
  // and let go at once (before, it was freed under them: a heap corruption, "tcache_
  // thread_shutdown(): unaligned tcache chunk detected" within 300 close()s of a loader
  // two threads iterated). GIL released.
  static std::vector<std::string> Dispose(std::shared_ptr<Loader> loader) {
    struct Done {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
    };
    auto done = std::make_shared<Done>();
    // Stopping waits for the graph's tasks too: all of it in the thread.
    std::thread([loader = std::move(loader), done]() mutable {
      loader->Stop();  // Waits for the graph's work: its threads are idle after it.
      auto finished = [&done] {
        std::lock_guard<std::mutex> lock(done->mu);
        done->done = true;
        done->cv.notify_all();
      };
      if (loader.use_count() > 1) {
        // Another call still holds it (Kept): it lets go as soon as it sees the loader
        // stopped, but that may be this very thread's next(), whose signal handler runs
        // this close(): close() returns now, and the loader is freed when it lets go.
        finished();
        while (loader.use_count() > 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        loader.reset();
        return;
      }
      loader.reset();
      finished();
    }).detach();
    const absl::Time start = absl::Now();
    std::unique_lock<std::mutex> lock(done->mu);
    while (!done->cv.wait_for(lock, absl::ToChronoNanoseconds(kWaitSlice),
                              [&] { return done->done; })) {
      if (absl::Now() - start < kAbandonAfter) continue;
      std::vector<std::string> calls = InFlightCalls();
      if (!calls.empty()) return calls;
      // A daemon thread parked in next() at exit (worker_gil.h) never lets go of it.
      if (python::Finalizing()) return {};
    }
    return {};
  }

  // UseDataset makes `dataset` the pipeline's data: Dataset::OfSize(len(dataset)), and
  // the python_dataset stage in place of read (python/internal/py_dataset.h). It
  // replaces a spec's data or sources, as a keyword does.
  void UseDataset(const py::object& dataset, PipelineOptions* options) {
    // A dataset='s labels are known only once __getitem__ has run, after the graph made
    // the batch: batch ops that build targets from them cannot run on it.
    if (!options->batch_ops.empty()) {
      Raise(PyExc_ValueError, absl::InvalidArgumentError(
                                  "batch_ops need the data's labels in the graph: they work "
                                  "with data= or sources=, not with dataset="));
    }
    const int64_t size = DatasetLength(dataset, *options);
    absl::StatusOr<std::unique_ptr<Dataset>> indexed = Dataset::OfSize(size, "dataset");
    if (!indexed.ok()) Raise(PyExc_ValueError, indexed.status());
    options->dataset = *std::move(indexed);
    options->data.clear();
    options->sources.clear();
    if (options->stages.empty()) {
      absl::StatusOr<std::vector<StageSpec>> stages = DefaultStages(*options);
      if (!stages.ok()) Raise(PyExc_ValueError, stages.status());
      options->stages = *std::move(stages);
    }
    source_ = PyDatasetSource::Create(dataset);
    if (absl::Status s = source_->UseIn(&options->stages); !s.ok()) Raise(PyExc_ValueError, s);
  }

  // DatasetLength is len(dataset), refused in one line when it is not a count the
  // pipeline can hold. Its sample table is computed (Dataset::OfSize: no bytes a sample),
  // but the sampler's epoch order takes 8 B a sample, twice while the next is built
  // (Sampler::order_bytes): that must fit the memory the pipeline may plan for
  // (memory_limit_mb, or what the process may use).
  static int64_t DatasetLength(const py::object& dataset, const PipelineOptions& options) {
    const Py_ssize_t length = PyObject_Length(dataset.ptr());
    if (length < 0 && !PyErr_ExceptionMatches(PyExc_Exception)) {
      // Ctrl-C (KeyboardInterrupt) or SystemExit inside __len__: raised as it is, not
      // turned into a ValueError after a second, just as slow, len() for the message.
      throw py::error_already_set();
    }
    if (length < 0) {
      const std::string error = TakeExceptionLine();
      std::string value;
      try {  // The value (its repr: a str "5" is not 5), for the message: len() refuses
             // those over 2^63 - 1 itself.
        value = Cut(std::string(py::repr(dataset.attr("__len__")())), kMaxValueChars);
      } catch (py::error_already_set&) {
        value = "(unreadable)";
      }
      RaiseText(PyExc_ValueError, OneLine(absl::StrCat("dataset: len() is ", value,
                                                       ", which is not a sample count (",
                                                       error, ")")));
    }
    const int64_t per_sample = 16;  // At least: one rank's (more ranks add a copy).
    const MemoryBudget budget = Pipeline::MemoryBudgetFor(options);
    // Half of the budget at most: the batch buffers and the workers need the rest.
    if (budget.known() && static_cast<double>(length) * per_sample > budget.bytes / 2.0) {
      const double needed = static_cast<double>(length) * per_sample;
      RaiseText(PyExc_ValueError,
                absl::StrCat("dataset: len() is ", length, " samples, whose sample table and "
                             "epoch order would need ",
                             needed >= 9e18 ? absl::StrCat(needed / (1ull << 40) / 1024, " PiB")
                                            : FormatBytes(static_cast<int64_t>(needed)),
                             " (", per_sample, " bytes a sample), over half of the ",
                             FormatBytes(budget.bytes), " the pipeline may use (", budget.source,
                             budget.source.rfind("memory_limit_mb", 0) == 0
                                 ? ""
                                 : "; memory_limit_mb caps it",
                             "): give a dataset of fewer samples"));
    }
    return length;
  }

  const pid_t pid_ = getpid();  // The process that made the loader.
  std::shared_ptr<Loader> loader_;  // Shared only with the calls waiting on it (Kept).
  std::shared_ptr<PyDatasetSource> source_;  // dataset= only.
  std::optional<Fetched> held_;  // A result that came with a Ctrl-C: the next Next's.
  std::string closed_summary_;   // The summary at close().
  std::vector<std::string> abandoned_;  // Calls close() left running.
};

py::list SpecKeyList() {
  py::list out;
  for (const SpecKey& key : SpecKeys()) {
    py::dict d;
    d["name"] = key.name;
    d["default"] = key.default_text;
    d["doc"] = key.doc;
    d["is_bool"] = key.is_bool;
    d["is_scalar"] = key.is_scalar;
    out.append(d);
  }
  return out;
}

// CheckOps parses and checks an op list's text (Compose.to_ops()) as the transforms
// stage's Create does, raising ValueError with its one line.
void CheckOps(const std::string& text) {
  absl::StatusOr<std::vector<augment::OpText>> ops = augment::ParseOpListText(text);
  if (!ops.ok()) Raise(PyExc_ValueError, ops.status());
  absl::StatusOr<std::unique_ptr<augment::ViewProgram>> program =
      augment::ViewProgram::Create(*ops);
  if (!program.ok()) Raise(PyExc_ValueError, program.status());
}

py::tuple ShardFromEnv() {
  absl::StatusOr<EnvironmentShard> shard = ShardFromEnvironment();
  if (!shard.ok()) Raise(PyExc_ValueError, shard.status());
  return py::make_tuple(shard->rank, shard->world_size, shard->source);
}

}  // namespace
}  // namespace python_internal
}  // namespace flowloader

PYBIND11_MODULE(_flowloader, m) {
  namespace pi = flowloader::python_internal;
  m.doc() = "flowloader's C++ core; use flowloader.DataLoader.";
  // No absl deadlock detection in this process: its global graph lock is taken by every
  // absl::Mutex::Lock of the pipeline's threads, so a child forked while one holds it
  // (os.fork, multiprocessing, torch's workers) spun in every absl::Mutex destructor at
  // exit (seconds, or for ever). Detection is a debugging aid; the C++ tests keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  pi::RegisterPythonDatasetStage();
  pi::RegisterPythonLambdaOp();
  pi::RegisterEager(m);  // flowloader.transforms called on one image (eager.h).
  pi::RegisterFloatEager(m);  // ... on a float tensor (float_eager.h).
  pi::g_data_error =
      PyErr_NewExceptionWithDoc("flowloader.DataError",
                                "A fatal data error (on_error='fail', too many errors, a device "
                                "error): the message names the file and the reason.",
                                PyExc_RuntimeError, nullptr);
  m.add_object("DataError", py::handle(pi::g_data_error));

  py::class_<pi::TensorView>(m, "_TensorView")
      .def(
          "__dlpack__",
          [](const pi::TensorView& v, py::object /*stream*/) { return pi::ToDlpack(v); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const pi::TensorView& v) {
             return py::make_tuple(static_cast<int>(v.device.device_type), v.device.device_id);
           })
      .def_property_readonly("shape", [](const pi::TensorView& v) { return v.shape; });

  py::class_<pi::PyLoader>(m, "_Loader")
      .def(py::init<const std::optional<std::string>&,
                    const std::vector<std::pair<std::string, std::string>>&, const std::string&,
                    const std::vector<int64_t>&, const py::object&>(),
           py::arg("spec"), py::arg("settings"), py::arg("metrics_address"), py::arg("resume"),
           py::arg("dataset") = py::none())
      .def("next", &pi::PyLoader::Next, py::arg("return_keys"),
           py::arg("return_sources") = false, py::arg("return_columns") = false)
      .def("checkpoint", &pi::PyLoader::Checkpoint)
      .def("summary_json", &pi::PyLoader::Summary)
      .def_property_readonly("outputs", &pi::PyLoader::Outputs)
      .def("set_batch_size", &pi::PyLoader::SetBatchSize, py::arg("batch_size"))
      .def_property_readonly("batch_size", &pi::PyLoader::batch_size)
      .def_property_readonly("prefetch_batches", &pi::PyLoader::prefetch_batches)
      .def("close", &pi::PyLoader::Close)
      .def_property_readonly("closed", &pi::PyLoader::closed)
      .def_property_readonly("abandoned_calls", &pi::PyLoader::abandoned_calls)
      .def_property_readonly("batches_per_epoch", &pi::PyLoader::batches_per_epoch)
      .def_property_readonly("samples_per_epoch", &pi::PyLoader::samples_per_epoch)
      .def_property_readonly("live_views", &pi::PyLoader::live_views)
      .def_property_readonly("memory_description", &pi::PyLoader::memory_description)
      .def_property_readonly("effective_threads", &pi::PyLoader::effective_threads)
      .def_property_readonly("source_names", &pi::PyLoader::source_names)
      .def_property_readonly("categories", &pi::PyLoader::categories)
      .def_property_readonly("annotation_skips", &pi::PyLoader::annotation_skips)
      .def_property_readonly("options", &pi::PyLoader::Options);

  // transforms.Lambda: the handle keeps fn findable by its id (the op text's) while alive.
  py::class_<pi::LambdaHandle>(m, "_LambdaHandle")
      .def_property_readonly("id", &pi::LambdaHandle::id);
  m.def("_register_lambda", &pi::RegisterLambda, py::arg("fn"), py::arg("wants_rng"),
        py::return_value_policy::take_ownership,
        "Registers a transforms.Lambda's function; returns its handle (with its id).");
  m.def("_lambda_generator_state", &pi::LambdaGeneratorState, py::arg("seed"),
        "The state of the Generator a Lambda gets for a seed (for the tests).");
  m.def("check_ops", &pi::CheckOps, py::arg("ops"),
        "Checks an op list's text as the transforms stage does; ValueError with its line.");
  m.def("spec_keys", &pi::SpecKeyList, "The spec's keys: name, default, doc, is_bool, is_scalar.");
  m.def("shard_from_environment", &pi::ShardFromEnv,
        "(rank, world_size, source) from RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS.");
  m.def("_refuse_inside_callback", &pi::RefuseInsideCallback, py::arg("what"),
        "RuntimeError naming `what` when called from a Dataset's __getitem__ or a Lambda.");
  m.def("hold_limit", &pi::HoldLimit, py::arg("prefetch_batches"),
        "Batches that may be held zero-copy before the next one is copied.");
}
