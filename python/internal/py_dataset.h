// py_dataset.h: DataLoader(dataset=obj): a Python object with __len__ and
// __getitem__(i) -> (sample, label) or (sample, label, extras) as a pipeline's data.
//
// The pipeline sees Dataset::OfSize(len(obj)) (keys "0".."N-1"), so flowloader's sampler,
// shuffle, ranks, resume and skip accounting apply unchanged, and in place of the read
// stage a `python_dataset` stage that calls obj[i] on the worker thread, holding the GIL
// only for that call and the conversion of its result:
//   * sample: bytes-like (bytes, bytearray, memoryview, a 1-D uint8 array) is an encoded
//     image, decoded by the decode stage as a file would be; a uint8 array H×W×3, H×W×1
//     or H×W (any strides) or a PIL image is pixels, handed to decode as a binary PPM or
//     PGM: a short header and the pixels, copied once, not decoded (decode's PNM reader
//     copies the rows the crop needs; the crop is planned from its size as for a file).
//   * label: an int (anything with __index__: numpy and torch integers too).
//   * extras: any object, delivered with its row.
// An exception in obj[i], or a result of another shape, fails the sample with reason
// `python_error` and the exception's one line ("ValueError: bad row"); the graph's error
// policy then skips and counts it, or stops the pipeline (on_error=fail).
//
// Labels and extras travel beside the graph (its batches carry the Dataset's label, 0):
// the stage records them per (epoch, dataset index), and the module's Next takes them
// for a batch's rows with TakeRows, dropping those of rows that were skipped later.
//
// Thread-safety: every method may be called from any thread; the ones touching Python
// objects take the GIL themselves or say that it must be held.
#ifndef FLOWLOADER_PYTHON_INTERNAL_PY_DATASET_H_
#define FLOWLOADER_PYTHON_INTERNAL_PY_DATASET_H_

#include <pybind11/pybind11.h>
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/pipeline_graph.h"
#include "stages/collate/batch.h"

namespace flowloader {
namespace python_internal {

// kPythonError is the skip reason of a sample whose __getitem__ raised or returned
// something that is not (sample, label[, extras]).
inline constexpr char kPythonError[] = "python_error";
// kPythonDatasetStage is the stage type that replaces `read` for dataset=.
inline constexpr char kPythonDatasetStage[] = "python_dataset";
// kTooLarge is the skip reason of an item whose sample is larger than the stage's
// max_item_bytes: refused before it is copied, so it never takes memory of ours.
inline constexpr char kTooLarge[] = "too_large";
// kDefaultMaxItemBytes is max_item_bytes unless the stage list's read stage sets
// max_file_bytes: 64 MiB, four times the largest ImageNet JPEG's 16 MiB.
inline constexpr int64_t kDefaultMaxItemBytes = int64_t{64} << 20;

// CallbackScope marks the current thread as running the user's Python code for a
// pipeline (a Dataset's __getitem__, a transforms.Lambda) while it lives, and lists the
// call among those in flight (InFlightCalls). The Python module refuses calls into a
// loader from inside (InsideCallback): close() there would wait for its own thread.
class CallbackScope {
 public:
  // `inside` says what runs ("a Dataset's __getitem__"); `call` names this call
  // ("dataset[17]").
  CallbackScope(const char* inside, std::string call);
  ~CallbackScope();
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  const char* const outer_;
  int64_t token_ = 0;
};

// InsideCallback is what the current thread runs (CallbackScope's `inside`), or nullptr.
const char* InsideCallback();

// InFlightCalls names every call of user code running now, with how long it has run:
// "dataset[17] (running 2.3 s)".
std::vector<std::string> InFlightCalls();

class PyDatasetSource {
 public:
  // Create holds a reference to `dataset` (GIL held) and registers the source under a
  // new id, the python_dataset stage's `source` option.
  static std::shared_ptr<PyDatasetSource> Create(pybind11::object dataset);

  // The destructor takes the GIL to release its Python references.
  ~PyDatasetSource();
  PyDatasetSource(const PyDatasetSource&) = delete;
  PyDatasetSource& operator=(const PyDatasetSource&) = delete;

  int64_t id() const { return id_; }

  // Fetch runs dataset[index] (taking the GIL), puts the sample's encoded bytes, or its
  // pixels as a PPM/PGM, in *bytes, and records its label and extras for (epoch, index).
  // Errors carry reason python_error; a sample of more than `max_item_bytes` (encoded
  // bytes, or pixels) fails as too_large before it is copied.
  absl::Status Fetch(int64_t epoch, int64_t index, int64_t max_item_bytes, std::string* bytes);

  // TakeRows sets *labels to the recorded label of each row of `batch` and *extras to a
  // list of their extras (None for a row whose item had none), or to None when no row
  // had any; forgets the records of its rows and of its skipped samples. GIL held.
  void TakeRows(const Batch& batch, std::vector<int64_t>* labels, pybind11::object* extras);

  // UseIn makes `stages` (a pipeline's stage list, or empty for the default one built
  // from `options`) read from this source: its `read` stage becomes python_dataset, with
  // the read stage's max_file_bytes, when set, as max_item_bytes. InvalidArgument when
  // the list has no read stage.
  absl::Status UseIn(std::vector<StageSpec>* stages) const;

 private:
  struct Record {
    int64_t label = 0;
    PyObject* extras = nullptr;  // Owned; null when the item had none.
  };
  explicit PyDatasetSource(pybind11::object dataset, int64_t id)
      : dataset_(dataset.release().ptr()), id_(id) {}
  // Convert fills *bytes and *record from item `index`'s result `item`. GIL held.
  absl::Status Convert(int64_t index, PyObject* item, int64_t max_item_bytes, std::string* bytes,
                       Record* record);
  void Forget(std::deque<Record>* records);  // GIL held.

  PyObject* const dataset_;  // Owned.
  const int64_t id_;
  std::mutex mu_;
  // Records by (epoch, dataset index): a deque, as even_shards=pad can give a rank one
  // index twice in an epoch.
  std::map<std::pair<int64_t, int64_t>, std::deque<Record>> records_ ABSL_GUARDED_BY(mu_);
};

// ExitIfForkedInCall ends this process when it is a child forked inside the user's call
// (os.fork in a __getitem__ or a Lambda, on a worker thread) that came back to the
// worker: the child has that thread alone, and the pipeline it would go on with (and
// wait for) does not exist there, so it hung for ever. It exits as sys.exit asked (its
// code), or after a line on stderr saying so with 1 when the call raised and 0 when it
// returned; stdout and stderr are flushed first. `parent` is getpid() before the call,
// `call` names it ("dataset[5]"). GIL held; does nothing in the process that made the
// pipeline.
void ExitIfForkedInCall(pid_t parent, const std::string& call);

// TakeExceptionLine clears the pending Python exception and returns its one line,
// "ValueError: bad row" (the first line of its text), as traceback's last line says it.
// GIL held.
std::string TakeExceptionLine();

// FindSource is the live source registered under `id`, or NotFound.
absl::StatusOr<std::shared_ptr<PyDatasetSource>> FindSource(int64_t id);

// RegisterPythonDatasetStage adds the python_dataset stage type to the global registry
// (once; later calls do nothing).
void RegisterPythonDatasetStage();

}  // namespace python_internal
}  // namespace flowloader

#endif  // FLOWLOADER_PYTHON_INTERNAL_PY_DATASET_H_
