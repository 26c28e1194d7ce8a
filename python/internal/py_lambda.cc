// py_lambda.cc: the python_lambda op and its registry of callables (see py_lambda.h).
#include "python/internal/py_lambda.h"

#include <pybind11/numpy.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "python/internal/py_dataset.h"
#include "stages/augment/ops/op.h"
#include "stages/core/sample_error.h"

namespace py = pybind11;

namespace flowloader {
namespace python_internal {
namespace {

// PyCallable owns one reference to a Lambda's function; the last owner (a handle or an
// op, possibly on a pipeline thread) releases it under the GIL.
struct PyCallable {
  PyObject* fn = nullptr;
  bool wants_rng = false;
  ~PyCallable() {
    if (!Py_IsInitialized()) return;  // The interpreter is gone, and its objects with it.
    py::gil_scoped_acquire gil;
    Py_DECREF(fn);
  }
};

// The registered callables by id. Leaked on purpose: ops may outlive static destruction.
std::mutex& RegistryMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::map<int64_t, std::shared_ptr<PyCallable>>& Registry() {
  static auto* registry = new std::map<int64_t, std::shared_ptr<PyCallable>>;
  return *registry;
}
int64_t g_next_id = 1;  // Guarded by RegistryMutex().

absl::Status LambdaError(const std::string& message) {
  return SampleError(absl::StatusCode::kUnknown, kPythonError, absl::StrCat("Lambda ", message));
}

class PythonLambda : public augment::Op {
 public:
  explicit PythonLambda(std::shared_ptr<PyCallable> callable) : callable_(std::move(callable)) {}

  // The Generator's seed: 64 bits from the op's stream, as two exact 32-bit halves.
  void Draw(int, int, SampleRng& rng, augment::OpParams* params) const override {
    const uint64_t seed = rng.NextU64();
    params->Push(static_cast<double>(seed >> 32));
    params->Push(static_cast<double>(seed & 0xffffffffu));
  }

  absl::Status Apply(const augment::OpParams& params, augment::OpImage& image) const override {
    Image& img = *image.rgb;
    py::gil_scoped_acquire gil;
    try {
      py::array_t<uint8_t> pixels({img.height, img.width, 3});
      std::memcpy(pixels.mutable_data(), img.pixels.data(), img.pixels.size());
      py::handle fn(callable_->fn);
      py::object result;
      if (callable_->wants_rng) {
        const uint64_t seed = (static_cast<uint64_t>(params.v[0]) << 32) |
                              static_cast<uint64_t>(params.v[1]);
        py::object rng = py::module_::import("numpy.random").attr("default_rng")(seed);
        result = fn(pixels, rng);
      } else {
        result = fn(pixels);
      }
      return Take(result.is_none() ? py::object(pixels) : result, img);
    } catch (py::error_already_set& e) {
      e.restore();
      return LambdaError(absl::StrCat("raised ", TakeExceptionLine()));
    }
  }

 private:
  // Take copies a returned uint8 [H, W, 3] array into `img`, or refuses another result.
  static absl::Status Take(const py::object& result, Image& img) {
    if (!py::isinstance<py::array>(result)) {
      return LambdaError(absl::StrCat("returned ", Py_TYPE(result.ptr())->tp_name,
                                      ", not a numpy array or None"));
    }
    py::array array = py::reinterpret_borrow<py::array>(result);
    if (!array.dtype().is(py::dtype::of<uint8_t>()) || array.ndim() != 3 ||
        array.shape(2) != 3 || array.shape(0) < 1 || array.shape(1) < 1) {
      return LambdaError(absl::StrCat("returned an array of ",
                                      std::string(py::str(array.dtype())), " with ",
                                      array.ndim(), " dimensions: it must be uint8 [H, W, 3]"));
    }
    auto packed = py::array_t<uint8_t, py::array::c_style>::ensure(array);
    if (!packed) return LambdaError("returned an array that cannot be read as C-ordered");
    img.Resize(static_cast<int>(array.shape(1)), static_cast<int>(array.shape(0)), 3);
    std::memcpy(img.pixels.data(), packed.data(), img.pixels.size());
    return absl::OkStatus();
  }

  const std::shared_ptr<PyCallable> callable_;
};

}  // namespace

LambdaHandle::~LambdaHandle() {
  std::shared_ptr<PyCallable> callable;  // Released after the lock (it takes the GIL).
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(id_);
  if (it == Registry().end()) return;
  callable = std::move(it->second);
  Registry().erase(it);
}

LambdaHandle* RegisterLambda(py::object fn, bool wants_rng) {
  auto callable = std::make_shared<PyCallable>();
  callable->fn = fn.release().ptr();
  callable->wants_rng = wants_rng;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  const int64_t id = g_next_id++;
  Registry()[id] = std::move(callable);
  return new LambdaHandle(id);
}

void RegisterPythonLambdaOp() {
  static const bool registered = augment::OpRegistry::Global().Register(
      augment::OpSchema{kPythonLambdaOp,
                        "flowloader.transforms.Lambda(fn): calls fn on the uint8 [H, W, 3] "
                        "pixels (Python, holding the GIL)",
                        {{"id", "0", "an integer", "the Lambda's id (its op text gives it)"}}},
      [](const augment::OpArgs& args) -> absl::StatusOr<std::unique_ptr<augment::Op>> {
        const int64_t id = static_cast<int64_t>(args.Number("id"));
        std::shared_ptr<PyCallable> callable;
        {
          std::lock_guard<std::mutex> lock(RegistryMutex());
          auto it = Registry().find(id);
          if (it != Registry().end()) callable = it->second;
        }
        if (callable == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              kPythonLambdaOp, ": no live flowloader.transforms.Lambda has id ", id,
              " (the op is written by Lambda objects, not by hand)"));
        }
        return std::unique_ptr<augment::Op>(new PythonLambda(std::move(callable)));
      });
  (void)registered;
}

}  // namespace python_internal
}  // namespace flowloader
