// py_lambda.h: flowloader.transforms.Lambda(fn): a Python callable as an op of a view's
// op list, the `python_lambda` op (registered when the module is imported).
//
// Lambda(fn) registers fn under a new id (RegisterLambda) and holds the returned handle;
// its op text is `python_lambda(id=N)`. The op's factory, run when a pipeline is made,
// takes its own reference to the callable, so a loader keeps working after the Lambda
// object is gone; an id whose Lambda is gone is refused at Create.
//
// Per sample, on the worker thread (taking the GIL for the call, with a Python thread
// state kept per worker thread): the view's uint8 pixels are lent to fn as a numpy array
// [H, W, 3] over the op's own buffer, without a copy, and fn(array) — or fn(array, rng)
// when fn takes two positional arguments — is called. rng is a numpy.random.Generator
// whose state equals numpy.random.default_rng(s)'s, s drawn from the op's stream, a pure
// function of (seed, epoch, sample, view, op position), so the output is the same for any
// num_workers and across resume; it is the worker thread's one Generator, reseeded per
// call (made anew when fn kept a reference to it). fn may change the array in place
// (returning None or the array) or return a uint8 array [H', W', 3] (any strides; a new
// size is allowed where later ops give the list its fixed size), which is copied. An
// array fn keeps past the call keeps the pixels it had at the call's end (the op then
// copies them back instead of taking its buffer back). An exception, or a result of
// another kind, fails the sample with reason python_error and the exception's one line,
// which the graph's error policy counts as a skip (or raises, on_error=fail).
//
// Its time is the op's row in the transforms stage's per-op costs (stats(), metrics).
//
// Thread-safety: RegisterLambda and the handle's destructor hold the GIL (called from
// Python); the registry has its own mutex; Apply takes the GIL itself.
#ifndef FLOWLOADER_PYTHON_INTERNAL_PY_LAMBDA_H_
#define FLOWLOADER_PYTHON_INTERNAL_PY_LAMBDA_H_

#include <pybind11/pybind11.h>

#include <cstdint>

namespace flowloader {
namespace python_internal {

// kPythonLambdaOp is the op's name in an op list.
inline constexpr char kPythonLambdaOp[] = "python_lambda";

// LambdaHandle keeps a registered callable findable by its id until it is destroyed.
class LambdaHandle {
 public:
  explicit LambdaHandle(int64_t id) : id_(id) {}
  ~LambdaHandle();
  LambdaHandle(const LambdaHandle&) = delete;
  LambdaHandle& operator=(const LambdaHandle&) = delete;
  int64_t id() const { return id_; }

 private:
  const int64_t id_;
};

// RegisterLambda registers `fn` (GIL held); wants_rng: call it as fn(image, rng).
LambdaHandle* RegisterLambda(pybind11::object fn, bool wants_rng);

// LambdaGeneratorState is the state (PCG64.state's dict) of the Generator a Lambda on
// this thread gets for `seed`, read after reseeding it: the same as
// numpy.random.default_rng(seed).bit_generator.state (the tests compare). GIL held.
pybind11::dict LambdaGeneratorState(uint64_t seed);

// RegisterPythonLambdaOp adds the python_lambda op to the op registry (once).
void RegisterPythonLambdaOp();

}  // namespace python_internal
}  // namespace flowloader

#endif  // FLOWLOADER_PYTHON_INTERNAL_PY_LAMBDA_H_
