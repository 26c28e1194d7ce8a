// py_dataset.cc: PyDatasetSource and the python_dataset stage (see py_dataset.h).
#include "python/internal/py_dataset.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graph/stage.h"
#include "python/internal/worker_gil.h"
#include "stages/core/one_line.h"
#include "stages/core/sample_error.h"

namespace py = pybind11;

namespace flowloader {
namespace python_internal {
namespace {

// The live sources by id, for the stage factory (which sees only text options). Leaked
// on purpose: sources may be destroyed during interpreter shutdown, after statics.
std::mutex& SourcesMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::map<int64_t, std::weak_ptr<PyDatasetSource>>& Sources() {
  static auto* sources = new std::map<int64_t, std::weak_ptr<PyDatasetSource>>;
  return *sources;
}
int64_t g_next_id = 1;  // Guarded by SourcesMutex().

absl::Status PythonError(std::string message) {
  return SampleError(absl::StatusCode::kUnknown, kPythonError, message);
}

std::string TypeName(PyObject* object) { return Py_TYPE(object)->tp_name; }

absl::Status TooLargeError(const std::string& item, int64_t size, int64_t max_bytes) {
  return SampleError(absl::StatusCode::kResourceExhausted, kTooLarge,
                     absl::StrCat(item, "'s sample is ", size, " bytes, over max_item_bytes ",
                                  max_bytes, " (the read stage's max_file_bytes sets it)"));
}

// What the current thread runs (CallbackScope), and the calls in flight by token.
thread_local const char* t_inside = nullptr;
struct InFlight {
  std::string call;
  absl::Time since;
};
std::mutex& InFlightMutex() {
  static auto* mu = new std::mutex;  // Leaked: used by threads that may outlive statics.
  return *mu;
}
std::map<int64_t, InFlight>& InFlightMap() {
  static auto* calls = new std::map<int64_t, InFlight>;
  return *calls;
}
int64_t g_next_token = 1;  // Guarded by InFlightMutex().

}  // namespace

CallbackScope::CallbackScope(const char* inside, std::string call) : outer_(t_inside) {
  t_inside = inside;
  std::lock_guard<std::mutex> lock(InFlightMutex());
  token_ = g_next_token++;
  InFlightMap()[token_] = InFlight{std::move(call), absl::Now()};
}

CallbackScope::~CallbackScope() {
  t_inside = outer_;
  std::lock_guard<std::mutex> lock(InFlightMutex());
  InFlightMap().erase(token_);
}

const char* InsideCallback() { return t_inside; }

std::vector<std::string> InFlightCalls() {
  std::vector<std::string> out;
  const absl::Time now = absl::Now();
  std::lock_guard<std::mutex> lock(InFlightMutex());
  for (const auto& [token, call] : InFlightMap()) {
    out.push_back(absl::StrFormat("%s (running %.1f s)", call.call,
                                  absl::ToDoubleSeconds(now - call.since)));
  }
  return out;
}

std::string TakeExceptionLine() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string line = type != nullptr ? reinterpret_cast<PyTypeObject*>(type)->tp_name
                                     : "an unknown exception";
  if (value != nullptr) {
    if (PyObject* text = PyObject_Str(value); text != nullptr) {
      Py_ssize_t size = 0;
      if (const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size); utf8 != nullptr && size > 0) {
        absl::string_view message(utf8, static_cast<size_t>(size));
        absl::StrAppend(&line, ": ", message.substr(0, message.find('\n')));
      }
      Py_DECREF(text);
    }
    PyErr_Clear();  // A __str__ that raised: the type's name alone.
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return line;
}

namespace {

// SystemExitCode is the exit code of the pending SystemExit, as the interpreter's exit
// takes it: None is 0, an int itself, anything else printed on stderr and 1. Clears it.
int SystemExitCode() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  int code = 1;
  PyObject* arg = value != nullptr ? PyObject_GetAttrString(value, "code") : nullptr;
  if (arg == nullptr || arg == Py_None) {
    code = 0;
  } else if (PyLong_Check(arg)) {
    code = static_cast<int>(PyLong_AsLong(arg));
  } else {
    PyObject_Print(arg, stderr, Py_PRINT_RAW);
    std::fputc('\n', stderr);
  }
  Py_XDECREF(arg);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  PyErr_Clear();
  return code;
}

// FlushStdio flushes sys.stdout and sys.stderr (what the child printed).
void FlushStdio() {
  for (const char* name : {"stdout", "stderr"}) {
    PyObject* stream = PySys_GetObject(name);  // Borrowed.
    if (stream == nullptr || stream == Py_None) continue;
    PyObject* done = PyObject_CallMethod(stream, "flush", nullptr);
    Py_XDECREF(done);
    PyErr_Clear();
  }
}

}  // namespace

void ExitIfForkedInCall(pid_t parent, const std::string& call) {
  const pid_t self = getpid();
  if (self == parent) return;
  int code = 0;
  if (PyErr_Occurred() != nullptr && PyErr_ExceptionMatches(PyExc_SystemExit)) {
    code = SystemExitCode();
  } else {
    const bool raised = PyErr_Occurred() != nullptr;
    code = raised ? 1 : 0;
    const std::string what = raised ? absl::StrCat("raised ", TakeExceptionLine()) : "returned";
    FlushStdio();
    std::fprintf(stderr,
                 "flowloader: process %d (forked inside %s in process %d) %s on the loader's "
                 "worker thread, which has no pipeline in a forked process: it exits with "
                 "code %d; end such a child with os._exit() or sys.exit()\n",
                 static_cast<int>(self), call.c_str(), static_cast<int>(parent), what.c_str(),
                 code);
  }
  FlushStdio();
  std::fflush(nullptr);
  _exit(code);
}

namespace {

// PnmHeader starts a binary PGM (1 channel) or PPM (3 channels) of width × height.
std::string PnmHeader(int64_t width, int64_t height, int64_t channels) {
  return absl::StrCat(channels == 1 ? "P5\n" : "P6\n", width, " ", height, "\n255\n");
}

// CopyStrided appends the uint8 buffer `view` (1 to 3 dimensions) to *out in C order,
// with one memcpy when it is contiguous, one per row when its rows are.
void CopyStrided(const Py_buffer& view, std::string* out) {
  const size_t begin = out->size();
  out->resize(begin + static_cast<size_t>(view.len));
  char* dst = out->data() + begin;
  const auto* src = static_cast<const char*>(view.buf);
  if (view.strides == nullptr || PyBuffer_IsContiguous(&view, 'C')) {
    std::memcpy(dst, src, static_cast<size_t>(view.len));
    return;
  }
  const int ndim = view.ndim;
  const Py_ssize_t rows = ndim == 1 ? 1 : view.shape[0];
  const Py_ssize_t cols = ndim == 1 ? view.shape[0] : view.shape[1];
  const Py_ssize_t channels = ndim == 3 ? view.shape[2] : 1;
  const Py_ssize_t row_stride = ndim == 1 ? 0 : view.strides[0];
  const Py_ssize_t col_stride = ndim == 1 ? view.strides[0] : view.strides[1];
  const Py_ssize_t channel_stride = ndim == 3 ? view.strides[2] : 1;
  const bool packed_rows = channel_stride == 1 && col_stride == channels;
  for (Py_ssize_t y = 0; y < rows; ++y) {
    const char* row = src + y * row_stride;
    if (packed_rows) {
      std::memcpy(dst, row, static_cast<size_t>(cols * channels));
      dst += cols * channels;
      continue;
    }
    for (Py_ssize_t x = 0; x < cols; ++x) {
      for (Py_ssize_t c = 0; c < channels; ++c) *dst++ = row[x * col_stride + c * channel_stride];
    }
  }
}

bool IsUint8Format(const char* format) {
  if (format == nullptr) return true;  // PEP 3118: no format means unsigned bytes.
  if (*format == '@' || *format == '=' || *format == '<' || *format == '>' || *format == '|') {
    ++format;
  }
  return std::strcmp(format, "B") == 0;
}

// FromBuffer: a 1-D uint8 buffer is an encoded image; H×W, H×W×1 or H×W×3 are pixels.
absl::Status FromBuffer(const std::string& item, const Py_buffer& view, int64_t max_item_bytes,
                        std::string* bytes) {
  if (view.len > max_item_bytes) return TooLargeError(item, view.len, max_item_bytes);
  std::string shape;
  for (int d = 0; d < view.ndim; ++d) absl::StrAppend(&shape, d ? ", " : "", view.shape[d]);
  if (!IsUint8Format(view.format) || view.itemsize != 1) {
    return PythonError(absl::StrCat(item, "'s sample has items of format '",
                                    view.format ? view.format : "B",
                                    "': give uint8 pixels or encoded bytes"));
  }
  bytes->clear();
  if (view.ndim == 1) {
    CopyStrided(view, bytes);
    return absl::OkStatus();
  }
  const int64_t channels = view.ndim == 3 ? view.shape[2] : 1;
  if ((view.ndim != 2 && view.ndim != 3) || (channels != 1 && channels != 3) ||
      view.shape[0] < 1 || view.shape[1] < 1) {
    return PythonError(absl::StrCat(item, "'s sample is a uint8 array of shape (", shape,
                                    "): pixels are H×W×3 (RGB), H×W×1 or H×W (grey)"));
  }
  *bytes = PnmHeader(view.shape[1], view.shape[0], channels);
  CopyStrided(view, bytes);
  return absl::OkStatus();
}

// ReprLine is repr(object) cut to kMaxValueChars, or its type's name when repr raises.
std::string ReprLine(PyObject* object) {
  PyObject* text = PyObject_Repr(object);
  Py_ssize_t size = 0;
  const char* utf8 = text != nullptr ? PyUnicode_AsUTF8AndSize(text, &size) : nullptr;
  std::string out = utf8 != nullptr ? std::string(utf8, static_cast<size_t>(size))
                                    : absl::StrCat("<", TypeName(object), ">");
  Py_XDECREF(text);
  PyErr_Clear();
  return OneLine(out, kMaxValueChars, kMaxValueChars + 40);
}

// PilSide is one side of a PIL image's `size`: an int in [1, 2^30] (Image's sides are
// ints), or an error naming the size as Python writes it.
absl::Status PilSide(const std::string& item, PyObject* size, Py_ssize_t k, int64_t* side) {
  PyObject* value = PySequence_GetItem(size, k);
  PyObject* number = value != nullptr ? PyNumber_Index(value) : nullptr;
  Py_XDECREF(value);
  int overflow = 0;
  const long long v = number != nullptr ? PyLong_AsLongLongAndOverflow(number, &overflow) : 0;
  Py_XDECREF(number);
  PyErr_Clear();
  if (number == nullptr || overflow != 0 || v < 1 || v > (int64_t{1} << 30)) {
    return PythonError(absl::StrCat(item, "'s PIL image has size ", ReprLine(size),
                                    ": a (width, height) of two ints in [1, 2^30]"));
  }
  *side = v;
  return absl::OkStatus();
}

// FromPil: a PIL image's pixels (converted to RGB unless RGB or L already). The image is
// read through its Python attributes, each checked: a PIL-like object of the user's may
// return anything (before, a str from tobytes() escaped as a C++ exception, "threw:
// Object of type 'str' is not an instance of 'bytes'", and a float size as "Unable to cast
// Python instance of type <class 'float'> to C++ type 'long'").
absl::Status FromPil(const std::string& item, PyObject* image, int64_t max_item_bytes,
                     std::string* bytes) {
  const std::string what = absl::StrCat(item, "'s PIL image");
  try {
    py::object img = py::reinterpret_borrow<py::object>(image);
    // Its size, from its header, before any conversion copies the pixels.
    auto read_size = [&](int64_t* width, int64_t* height) -> absl::Status {
      const py::object size = img.attr("size");
      const Py_ssize_t n = PySequence_Check(size.ptr()) ? PySequence_Size(size.ptr()) : -1;
      PyErr_Clear();
      if (n != 2) {
        return PythonError(absl::StrCat(what, " has size ", ReprLine(size.ptr()),
                                        ": a (width, height) of two ints in [1, 2^30]"));
      }
      if (absl::Status s = PilSide(item, size.ptr(), 0, width); !s.ok()) return s;
      return PilSide(item, size.ptr(), 1, height);
    };
    int64_t width = 0, height = 0;
    if (absl::Status s = read_size(&width, &height); !s.ok()) return s;
    if (width * height * 3 > max_item_bytes) {  // Sides <= 2^30: no overflow.
      return TooLargeError(item, width * height * 3, max_item_bytes);
    }
    std::string mode = py::str(img.attr("mode"));
    if (mode != "RGB" && mode != "L") {
      img = img.attr("convert")("RGB");
      mode = "RGB";
      if (absl::Status s = read_size(&width, &height); !s.ok()) return s;
    }
    const int64_t channels = mode == "L" ? 1 : 3;
    const py::object pixels = img.attr("tobytes")();
    if (!PyBytes_Check(pixels.ptr())) {
      return PythonError(absl::StrCat(what, "'s tobytes() returned ", TypeName(pixels.ptr()),
                                      ", not bytes"));
    }
    char* data = nullptr;
    Py_ssize_t length = 0;
    PyBytes_AsStringAndSize(pixels.ptr(), &data, &length);
    if (length != width * height * channels) {
      return PythonError(absl::StrCat(what, " (", width, "×", height, ", mode ", mode,
                                      ") gave ", length, " bytes of pixels"));
    }
    *bytes = PnmHeader(width, height, channels);
    bytes->append(data, static_cast<size_t>(length));
    return absl::OkStatus();
  } catch (py::error_already_set& e) {
    e.restore();
    return PythonError(absl::StrCat(what, ": ", TakeExceptionLine()));
  } catch (const std::exception& e) {  // pybind11's own (a cast): not expected here.
    PyErr_Clear();
    return PythonError(absl::StrCat(what, ": ", e.what()));
  }
}

bool LooksLikePil(PyObject* object) {
  return PyObject_HasAttrString(object, "tobytes") && PyObject_HasAttrString(object, "mode") &&
         PyObject_HasAttrString(object, "size") && PyObject_HasAttrString(object, "convert");
}

// SampleBytes fills *bytes from item `item`'s sample `sample`.
absl::Status SampleBytes(const std::string& item, PyObject* sample, int64_t max_item_bytes,
                         std::string* bytes) {
  if (PyObject_CheckBuffer(sample)) {
    Py_buffer view;
    if (PyObject_GetBuffer(sample, &view, PyBUF_RECORDS_RO) != 0) {
      return PythonError(absl::StrCat(item, "'s sample: ", TakeExceptionLine()));
    }
    absl::Status status = FromBuffer(item, view, max_item_bytes, bytes);
    PyBuffer_Release(&view);
    return status;
  }
  if (LooksLikePil(sample)) return FromPil(item, sample, max_item_bytes, bytes);
  return PythonError(absl::StrCat(item, "'s sample is ", TypeName(sample),
                                  ": give encoded bytes, a uint8 HWC array or a PIL image"));
}

// PyDatasetStage is the python_dataset stage: Fetch for each sample.
class PyDatasetStage : public SampleStage {
 public:
  PyDatasetStage(std::shared_ptr<PyDatasetSource> source, int64_t max_item_bytes)
      : source_(std::move(source)), max_item_bytes_(max_item_bytes) {}
  absl::Status Process(SampleContext& sample) const override {
    return source_->Fetch(sample.epoch, sample.index, max_item_bytes_, &sample.bytes);
  }
  size_t BytesProduced(const SampleContext& sample) const override { return sample.bytes.size(); }

 private:
  const std::shared_ptr<PyDatasetSource> source_;
  const int64_t max_item_bytes_;
};

StageSchema PythonDatasetSchema() {
  return StageSchema{
      kPythonDatasetStage,
      "calls a Python dataset's __getitem__ for each sample (DataLoader(dataset=...)): its "
      "encoded bytes, or its pixels as a PPM, for decode",
      {{"source", OptionType::kInt, "0", "the dataset's id, set by the Python module"},
       {"max_item_bytes", OptionType::kInt, absl::StrCat(kDefaultMaxItemBytes),
        "larger samples (encoded bytes, or pixels) are skipped as too_large, uncopied"}},
      0,
      {{kKeyField, FieldKind::kMetadata}},
      {{kBytesField, FieldKind::kBytes}}};
}

}  // namespace

std::shared_ptr<PyDatasetSource> PyDatasetSource::Create(py::object dataset) {
  std::lock_guard<std::mutex> lock(SourcesMutex());
  const int64_t id = g_next_id++;
  std::shared_ptr<PyDatasetSource> source(new PyDatasetSource(std::move(dataset), id));
  Sources()[id] = source;
  return source;
}

PyDatasetSource::~PyDatasetSource() {
  {
    std::lock_guard<std::mutex> lock(SourcesMutex());
    Sources().erase(id_);
  }
  if (!Py_IsInitialized()) return;  // The interpreter is gone, and its objects with it.
  // Exit-safe (worker_gil.h): the last owner may be close()'s teardown thread, at exit.
  python::HeldGil gil;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, records] : records_) Forget(&records);
  Py_DECREF(dataset_);
}

absl::Status PyDatasetSource::Fetch(int64_t epoch, int64_t index, int64_t max_item_bytes,
                                    std::string* bytes) {
  const std::string item = absl::StrCat("dataset[", index, "]");
  CallbackScope scope("a Dataset's __getitem__", item);
  python::WorkerGil gil;  // Not gil_scoped_acquire: it aborted an abandoned call at exit.
  const pid_t pid = getpid();
  PyObject* key = PyLong_FromLongLong(index);
  PyObject* got = key != nullptr ? PyObject_GetItem(dataset_, key) : nullptr;
  Py_XDECREF(key);
  ExitIfForkedInCall(pid, item);
  if (got == nullptr) return PythonError(absl::StrCat(item, " raised ", TakeExceptionLine()));
  Record record;
  absl::Status status = Convert(index, got, max_item_bytes, bytes, &record);
  Py_DECREF(got);
  if (!status.ok()) return status;
  std::lock_guard<std::mutex> lock(mu_);
  records_[{epoch, index}].push_back(record);
  return absl::OkStatus();
}

absl::Status PyDatasetSource::Convert(int64_t index, PyObject* got, int64_t max_item_bytes,
                                      std::string* bytes, Record* record) {
  const std::string item = absl::StrCat("dataset[", index, "]");
  const Py_ssize_t n = PySequence_Check(got) && !PyUnicode_Check(got) && !PyBytes_Check(got)
                           ? PySequence_Size(got)
                           : -1;
  if (n != 2 && n != 3) {
    PyErr_Clear();
    return PythonError(absl::StrCat(item, " returned ", TypeName(got),
                                    n >= 0 ? absl::StrCat(" of length ", n) : "",
                                    ", not (sample, label) or (sample, label, extras)"));
  }
  py::object sample = py::reinterpret_steal<py::object>(PySequence_GetItem(got, 0));
  py::object label = py::reinterpret_steal<py::object>(PySequence_GetItem(got, 1));
  if (!sample || !label) return PythonError(absl::StrCat(item, ": ", TakeExceptionLine()));
  PyObject* number = PyNumber_Index(label.ptr());
  if (number == nullptr) {
    // A type with __index__ whose __index__ raised: its exception says what went wrong.
    if (PyIndex_Check(label.ptr())) {
      return PythonError(absl::StrCat(item, "'s label: ", TakeExceptionLine()));
    }
    PyErr_Clear();
    return PythonError(absl::StrCat(item, "'s label is ", TypeName(label.ptr()),
                                    ", not an int"));
  }
  record->label = PyLong_AsLongLong(number);
  Py_DECREF(number);
  if (PyErr_Occurred()) return PythonError(absl::StrCat(item, "'s label: ", TakeExceptionLine()));
  if (absl::Status s = SampleBytes(item, sample.ptr(), max_item_bytes, bytes); !s.ok()) return s;
  if (n == 3) {
    record->extras = PySequence_GetItem(got, 2);
    if (record->extras == nullptr) {
      return PythonError(absl::StrCat(item, ": ", TakeExceptionLine()));
    }
  }
  return absl::OkStatus();
}

void PyDatasetSource::Forget(std::deque<Record>* records) {
  for (Record& r : *records) Py_XDECREF(r.extras);
  records->clear();
}

void PyDatasetSource::TakeRows(const Batch& batch, std::vector<int64_t>* labels,
                               py::object* extras) {
  std::vector<Record> rows(batch.indices.size());
  std::vector<Record> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto take = [&](int64_t index, Record* out) {
      auto it = records_.find({batch.epoch, index});
      if (it == records_.end()) return;
      *out = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) records_.erase(it);
    };
    for (size_t r = 0; r < rows.size(); ++r) take(batch.indices[r], &rows[r]);
    for (const SkippedSample& s : batch.skipped) {
      Record record;
      take(s.index, &record);
      dropped.push_back(record);
    }
  }
  labels->clear();
  py::list list;
  bool any = false;
  for (Record& r : rows) {
    labels->push_back(r.label);
    if (r.extras != nullptr) {
      list.append(py::reinterpret_steal<py::object>(r.extras));  // The record's reference.
      any = true;
    } else {
      list.append(py::none());
    }
  }
  // Decremented outside the lock: a __del__ may run here.
  for (Record& r : dropped) Py_XDECREF(r.extras);
  *extras = any ? py::object(list) : py::none();
}

absl::Status PyDatasetSource::UseIn(std::vector<StageSpec>* stages) const {
  bool found = false;
  for (StageSpec& stage : *stages) {
    if (stage.type != "read") continue;
    stage.type = kPythonDatasetStage;
    auto max_bytes = stage.args.find("max_file_bytes");
    stage.args = {{"source", absl::StrCat(id_)},
                  {"max_item_bytes", max_bytes != stage.args.end()
                                         ? max_bytes->second
                                         : absl::StrCat(kDefaultMaxItemBytes)}};
    found = true;
  }
  if (!found) {
    return absl::InvalidArgumentError(
        "dataset= replaces the stage list's read stage, and this stage list has none");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PyDatasetSource>> FindSource(int64_t id) {
  std::lock_guard<std::mutex> lock(SourcesMutex());
  auto it = Sources().find(id);
  std::shared_ptr<PyDatasetSource> source = it != Sources().end() ? it->second.lock() : nullptr;
  if (source == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        kPythonDatasetStage, " source ", id,
        " is not a live Python dataset (the stage is made by DataLoader(dataset=...))"));
  }
  return source;
}

void RegisterPythonDatasetStage() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)StageRegistry::Global().Register(
        PythonDatasetSchema(),
        [](const StageArgs& args, StageEnv&) -> absl::StatusOr<std::unique_ptr<SampleStage>> {
          absl::StatusOr<std::shared_ptr<PyDatasetSource>> source =
              FindSource(args.GetInt("source"));
          if (!source.ok()) return source.status();
          const int64_t max_item_bytes = args.GetInt("max_item_bytes");
          if (max_item_bytes < 1) {
            return absl::InvalidArgumentError(
                absl::StrCat("max_item_bytes must be >= 1, got ", max_item_bytes));
          }
          return std::unique_ptr<SampleStage>(
              new PyDatasetStage(*std::move(source), max_item_bytes));
        });
  });
}

}  // namespace python_internal
}  // namespace flowloader
