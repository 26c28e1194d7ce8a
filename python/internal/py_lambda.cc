// py_lambda.cc: the python_lambda op and its registry of callables (see py_lambda.h).
#include "python/internal/py_lambda.h"

#include <pybind11/numpy.h>

#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "python/internal/py_dataset.h"
#include "python/internal/worker_gil.h"
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
    python::HeldGil gil;  // Exit-safe: the last owner may be a pipeline thread.
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

// Numpy's SeedSequence (numpy/random/bit_generator.pyx, after O'Neill's seed_seq), for
// one non-negative integer entropy and no spawn key: what default_rng(seed) runs.
constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875, kInitB = 0x8b51f9dd,
                   kMultB = 0x58f38ded, kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kXShift = 16;
constexpr int kPoolSize = 4;

uint32_t HashMix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  return value ^ (value >> kXShift);
}

uint32_t Mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  return result ^ (result >> kXShift);
}

// Pcg64Seeded is numpy.random.PCG64(seed)'s 128-bit state and increment: the state
// SeedSequence(seed).generate_state(4, uint64) seeds through pcg64_set_seed.
struct Pcg64Seeded {
  absl::uint128 state;
  absl::uint128 inc;
};

Pcg64Seeded SeedPcg64(uint64_t seed) {
  // The entropy as 32-bit words, least significant first: one word below 2^32.
  uint32_t entropy[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const int words = seed >> 32 == 0 ? 1 : 2;
  uint32_t pool[kPoolSize];
  uint32_t hash_const = kInitA;
  for (int i = 0; i < kPoolSize; ++i) pool[i] = HashMix(i < words ? entropy[i] : 0, hash_const);
  for (int src = 0; src < kPoolSize; ++src) {
    for (int dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = Mix(pool[dst], HashMix(pool[src], hash_const));
    }
  }
  // generate_state(4, uint64): 8 words cycling over the pool, read as 4 little-endian
  // 64-bit values.
  uint32_t out[8];
  uint32_t out_const = kInitB;
  for (int i = 0; i < 8; ++i) {
    uint32_t value = pool[i % kPoolSize] ^ out_const;
    out_const *= kMultB;
    value *= out_const;
    out[i] = value ^ (value >> kXShift);
  }
  uint64_t v[4];
  for (int i = 0; i < 4; ++i) v[i] = out[2 * i] | static_cast<uint64_t>(out[2 * i + 1]) << 32;
  // pcg64_set_seed: 128-bit constants from (high, low) pairs, then pcg_setseq_128_srandom_r.
  const absl::uint128 init_state = absl::MakeUint128(v[0], v[1]);
  const absl::uint128 init_seq = absl::MakeUint128(v[2], v[3]);
  const absl::uint128 multiplier =
      absl::MakeUint128(2549297995355413924ULL, 4865540595714422341ULL);
  Pcg64Seeded out_state;
  out_state.inc = (init_seq << 1) | 1;
  out_state.state = out_state.inc;          // 0 * multiplier + inc.
  out_state.state += init_state;
  out_state.state = out_state.state * multiplier + out_state.inc;
  return out_state;
}

// PyUint128 is `value` as a Python int (a new reference), or nullptr with an exception.
PyObject* PyUint128(absl::uint128 value) {
  py::object high = py::reinterpret_steal<py::object>(
      PyLong_FromUnsignedLongLong(absl::Uint128High64(value)));
  py::object low = py::reinterpret_steal<py::object>(
      PyLong_FromUnsignedLongLong(absl::Uint128Low64(value)));
  py::object shift = py::reinterpret_steal<py::object>(PyLong_FromLong(64));
  if (!high || !low || !shift) return nullptr;
  py::object shifted = py::reinterpret_steal<py::object>(PyNumber_Lshift(high.ptr(), shift.ptr()));
  if (!shifted) return nullptr;
  return PyNumber_Or(shifted.ptr(), low.ptr());
}

// ThreadGenerator is a worker thread's numpy Generator over a PCG64, reseeded per call
// instead of made anew: numpy.random.default_rng(seed) costs about 10 us (a SeedSequence,
// a PCG64 with its lock and capsule), setting a PCG64's state about 1 us. After the
// reseed its state equals default_rng(seed)'s, so the draws are the same.
//
// A function that keeps the Generator (or its bit generator) past the call keeps it: the
// thread then drops it and makes another for the next call. The objects of a thread that
// ends are left to the interpreter (freeing them would need the GIL on a dying thread).
class ThreadGenerator {
 public:
  // Seeded returns this thread's Generator with default_rng(seed)'s state (borrowed), or
  // nullptr with a Python exception. GIL held.
  PyObject* Seeded(uint64_t seed) {
    if (generator_ == nullptr && !Make()) return nullptr;
    const Pcg64Seeded seeded = SeedPcg64(seed);
    py::object state = py::reinterpret_steal<py::object>(PyUint128(seeded.state));
    py::object inc = py::reinterpret_steal<py::object>(PyUint128(seeded.inc));
    if (!state || !inc) return nullptr;
    // {'bit_generator': 'PCG64', 'state': {'state': s, 'inc': i}, 'has_uint32': 0,
    //  'uinteger': 0}, as PCG64.state reads and writes it.
    if (PyDict_SetItemString(inner_, "state", state.ptr()) != 0 ||
        PyDict_SetItemString(inner_, "inc", inc.ptr()) != 0 ||
        PyObject_SetAttrString(bit_generator_, "state", outer_) != 0) {
      return nullptr;
    }
    return generator_;
  }

  // AfterCall drops the Generator when the call kept a reference to it. GIL held.
  void AfterCall() {
    if (generator_ == nullptr) return;
    // Ours alone: our reference to each, and the Generator's to its bit generator.
    if (Py_REFCNT(generator_) == 1 && Py_REFCNT(bit_generator_) == 2) return;
    Py_CLEAR(generator_);
    Py_CLEAR(bit_generator_);
    Py_CLEAR(outer_);
    Py_CLEAR(inner_);
  }

 private:
  bool Make() {
    try {
      py::module_ random = py::module_::import("numpy.random");
      py::object bit_generator = random.attr("PCG64")();
      py::object generator = random.attr("Generator")(bit_generator);
      py::dict inner;
      py::dict outer;
      outer["bit_generator"] = "PCG64";
      outer["state"] = inner;
      outer["has_uint32"] = 0;
      outer["uinteger"] = 0;
      bit_generator_ = bit_generator.release().ptr();
      generator_ = generator.release().ptr();
      inner_ = inner.release().ptr();
      outer_ = outer.release().ptr();
      return true;
    } catch (py::error_already_set& e) {
      e.restore();
      return false;
    }
  }

  PyObject* generator_ = nullptr;
  PyObject* bit_generator_ = nullptr;
  PyObject* outer_ = nullptr;  // The state dict, reused: only inner_'s values change.
  PyObject* inner_ = nullptr;
};

ThreadGenerator& ThisThreadGenerator() {
  static thread_local ThreadGenerator* generator = new ThreadGenerator;
  return *generator;
}

// AcquireGil takes the GIL with this thread's Python thread state, which it keeps for the
// thread's life (python/internal/worker_gil.h: safe when an abandoned call outlives the
// interpreter, where gil_scoped_acquire aborted the process).
using AcquireGil = python::WorkerGil;

// LentPixels lends an Image's pixels to Python, without copying, as a writable uint8
// [H, W, 3] numpy array. The pixel vector moves into an owner that the array's base (a
// capsule) frees, so that an array the function kept past the call stays valid; Return
// moves the vector back when nothing but the lender still refers to the array, and
// otherwise copies the pixels. GIL held throughout.
class LentPixels {
 public:
  explicit LentPixels(Image& img) : img_(img) {}
  // Unwound at interpreter exit (worker_gil.h) the GIL is not held: nothing to return.
  ~LentPixels() {
    if (!python::Finalizing()) Return(/*keep_pixels=*/false);
  }

  // Lend makes the array (a borrowed reference, owned here), or returns nullptr with a
  // Python exception.
  PyObject* Lend() {
    auto owner = std::make_unique<std::vector<uint8_t>>(std::move(img_.pixels));
    img_.pixels.clear();
    std::vector<uint8_t>* pixels = owner.get();
    try {
      py::capsule base(owner.get(), [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
      owner.release();  // The capsule frees it now.
      py::array array(py::dtype::of<uint8_t>(),
                      {static_cast<py::ssize_t>(img_.height), static_cast<py::ssize_t>(img_.width),
                       static_cast<py::ssize_t>(3)},
                      pixels->data(), base);
      pixels_ = pixels;
      base_ = base.release().ptr();
      array_ = array.release().ptr();
      return array_;
    } catch (py::error_already_set& e) {
      if (owner != nullptr) img_.pixels = std::move(*owner);
      e.restore();
      return nullptr;
    }
  }

  // Return gives the pixels back to the image (their bytes, when keep_pixels) and drops
  // the array. Called after the function's result and any exception were released, so
  // that only a reference the function kept counts.
  void Return(bool keep_pixels) {
    if (array_ == nullptr) {
      if (pixels_ == nullptr && img_.pixels.empty()) {
        img_.pixels.resize(static_cast<size_t>(img_.width) * img_.height * 3);
      }
      return;
    }
    // Ours alone: our reference to the array and to its base, and the array's to it.
    if (Py_REFCNT(array_) == 1 && Py_REFCNT(base_) == 2) {
      img_.pixels = std::move(*pixels_);
    } else if (keep_pixels) {
      img_.pixels.assign(pixels_->begin(), pixels_->end());  // Kept: the array keeps its own.
    } else {
      img_.pixels.resize(static_cast<size_t>(img_.width) * img_.height * 3);
    }
    Py_CLEAR(array_);
    Py_CLEAR(base_);
    pixels_ = nullptr;
  }

 private:
  Image& img_;
  std::vector<uint8_t>* pixels_ = nullptr;  // Owned by base_.
  PyObject* base_ = nullptr;
  PyObject* array_ = nullptr;
};

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
    // Marks the thread (calls into the loader are refused) and lists the call in flight.
    CallbackScope scope("a transforms.Lambda", "a transforms.Lambda call");
    AcquireGil gil;
    LentPixels lent(*image.rgb);
    PyObject* array = lent.Lend();
    if (array == nullptr) return LambdaError(absl::StrCat("raised ", TakeExceptionLine()));
    PyObject* result = nullptr;
    ThreadGenerator* generator = nullptr;
    const pid_t pid = getpid();
    if (callable_->wants_rng) {
      const uint64_t seed = (static_cast<uint64_t>(params.v[0]) << 32) |
                            static_cast<uint64_t>(params.v[1]);
      generator = &ThisThreadGenerator();
      if (PyObject* rng = generator->Seeded(seed); rng != nullptr) {
        result = PyObject_CallFunctionObjArgs(callable_->fn, array, rng, nullptr);
      }
    } else {
      result = PyObject_CallFunctionObjArgs(callable_->fn, array, nullptr);
    }
    ExitIfForkedInCall(pid, "a transforms.Lambda call");  // A child forked in fn ends.
    absl::Status status;
    bool in_place = false;
    if (result == nullptr) {
      status = LambdaError(absl::StrCat("raised ", TakeExceptionLine()));
    } else if (result == Py_None || result == array) {
      in_place = true;
    } else {
      // A new array (possibly a view of the lent one, still alive here) into the spare.
      status = Take(py::reinterpret_borrow<py::object>(result), image, *image.spare);
    }
    Py_XDECREF(result);
    if (generator != nullptr) generator->AfterCall();
    lent.Return(/*keep_pixels=*/in_place);
    if (status.ok() && !in_place) std::swap(*image.rgb, *image.spare);
    return status;
  }

 private:
  // The largest side of a returned image: an int, as Image's sides are.
  static constexpr int64_t kMaxSide = (int64_t{1} << 30);

  // Take copies a returned uint8 [H, W, 3] array into `img`, or refuses another result,
  // and one whose copy would not fit the worker's memory beside `image` (op_memory: the
  // array is the user's, its copy would be ours).
  static absl::Status Take(const py::object& result, const augment::OpImage& image,
                           Image& img) {
    try {
      if (!py::isinstance<py::array>(result)) {
        return LambdaError(absl::StrCat("returned ", Py_TYPE(result.ptr())->tp_name,
                                        ", not a numpy array or None"));
      }
      py::array array = py::reinterpret_borrow<py::array>(result);
      if (!array.dtype().is(py::dtype::of<uint8_t>()) || array.ndim() != 3 ||
          array.shape(2) != 3 || array.shape(0) < 1 || array.shape(1) < 1 ||
          array.shape(0) > kMaxSide || array.shape(1) > kMaxSide) {
        return LambdaError(absl::StrCat(
            "returned an array of ", std::string(py::str(array.dtype())), " of shape ",
            std::string(py::str(py::tuple(array.attr("shape")))),
            ": it must be uint8 [H, W, 3], each side in [1, ", kMaxSide, "]"));
      }
      auto packed = py::array_t<uint8_t, py::array::c_style>::ensure(array);
      if (!packed) {
        PyErr_Clear();
        return LambdaError("returned an array that cannot be read as C-ordered");
      }
      if (image.memory != nullptr) {
        const int64_t out = int64_t{3} * array.shape(0) * array.shape(1);
        const int64_t in = static_cast<int64_t>(image.rgb->pixels.size());
        if (absl::Status s = image.memory->Check(
                image.held + in + out, reason::kOpMemory,
                absl::StrCat("a transforms.Lambda's ", array.shape(1), "x", array.shape(0),
                             " result"));
            !s.ok()) {
          return s;
        }
      }
      img.Resize(static_cast<int>(array.shape(1)), static_cast<int>(array.shape(0)), 3);
      std::memcpy(img.pixels.data(), packed.data(), img.pixels.size());
      return absl::OkStatus();
    } catch (py::error_already_set& e) {
      e.restore();
      return LambdaError(absl::StrCat("returned an array that cannot be read: ",
                                      TakeExceptionLine()));
    }
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

py::dict LambdaGeneratorState(uint64_t seed) {
  ThreadGenerator& generator = ThisThreadGenerator();
  PyObject* rng = generator.Seeded(seed);
  if (rng == nullptr) throw py::error_already_set();
  py::dict state = py::reinterpret_borrow<py::object>(rng).attr("bit_generator").attr("state");
  generator.AfterCall();
  return state;
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
