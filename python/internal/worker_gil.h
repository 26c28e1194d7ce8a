// worker_gil.h: taking and releasing the GIL safely at interpreter exit: WorkerGil (the
// GIL taken on a pipeline worker thread to call the user's Python code, a Dataset's
// __getitem__ or a transforms.Lambda), HeldGil and ReleasedGil (pybind11's
// gil_scoped_acquire and gil_scoped_release, for every other place), RestoreOrPark.
//
// Once the interpreter finalizes, a thread other than the finalizing one that takes the
// GIL (PyEval_RestoreThread, PyGILState_Ensure) is ended by CPython with pthread_exit,
// which unwinds our frames. That happens to a call abandoned by close() (docs/python.md,
// "Lifecycle") returning at exit, to a daemon thread that was inside close(), iter() or
// an eager transform (which release the GIL while they wait or compute) when the
// interpreter exited, and to a destructor that takes the GIL on a pipeline thread. The
// unwinding through a noexcept destructor (pybind11's gil_scoped_release and
// gil_scoped_acquire, ours) was std::terminate ("terminate called without an active
// exception", the process aborting at exit), and through the graph's catch (...)
// ("FATAL: exception not rethrown", abort). Here every take of the GIL is guarded by a
// ParkIfUnwound: when the take does not return, the unwinding stops in its destructor and
// the thread sleeps until the process ends (nothing joins such a thread). The check does
// not depend on timing: a thread that passed a "finalizing?" test and then waited for
// the GIL while the interpreter began to finalize is parked too. Objects destroyed before
// it in that unwinding must not touch Python (LentPixels checks Finalizing()).
//
// WorkerGil's thread keeps its Python thread state for its life (made once, never
// cleared): a state made and freed per call costs a 16 KiB frame stack mmap and munmap on
// 3.11.
//
// Thread-safety: each object on the thread that made it.
#ifndef FLOWLOADER_PYTHON_INTERNAL_WORKER_GIL_H_
#define FLOWLOADER_PYTHON_INTERNAL_WORKER_GIL_H_

#include <Python.h>
#include <unistd.h>

namespace flowloader::python {

// Finalizing: whether the interpreter is ending (a worker may not take the GIL again).
inline bool Finalizing() { return _Py_IsFinalizing() != 0; }

// ParkForever is where a thread ends whose interpreter is gone.
[[noreturn]] inline void ParkForever() {
  for (;;) pause();
}

// ParkIfUnwound parks the thread when it is destroyed before `returned` is set: by the
// unwinding of CPython's pthread_exit in a take of the GIL that it guards.
struct ParkIfUnwound {
  bool returned = false;
  ~ParkIfUnwound() {
    if (!returned) ParkForever();
  }
};

// RestoreOrPark is PyEval_RestoreThread(state), or parks the thread that the
// interpreter's finalization ends there. Not inlined: the unwinding must stop in this
// frame, before any noexcept frame of the caller (a destructor).
[[gnu::noinline]] inline void RestoreOrPark(PyThreadState* state) {
  ParkIfUnwound park;
  PyEval_RestoreThread(state);
  park.returned = true;
}

// EnsureOrPark is PyGILState_Ensure(), or parks the thread (as RestoreOrPark).
[[gnu::noinline]] inline PyGILState_STATE EnsureOrPark() {
  ParkIfUnwound park;
  const PyGILState_STATE state = PyGILState_Ensure();
  park.returned = true;
  return state;
}

// ReleasedGil releases the GIL for its scope (py::gil_scoped_release, exit-safe).
class ReleasedGil {
 public:
  ReleasedGil() : state_(PyEval_SaveThread()) {}
  ~ReleasedGil() { RestoreOrPark(state_); }
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;

 private:
  PyThreadState* const state_;
};

// HeldGil holds the GIL for its scope from any thread (py::gil_scoped_acquire,
// exit-safe): for destructors that drop Python references on a pipeline thread.
class HeldGil {
 public:
  HeldGil() : state_(EnsureOrPark()) {}
  ~HeldGil() { PyGILState_Release(state_); }
  HeldGil(const HeldGil&) = delete;
  HeldGil& operator=(const HeldGil&) = delete;

 private:
  const PyGILState_STATE state_;
};

// WorkerGil holds the GIL for one call of the user's code on a pipeline worker thread,
// with the thread's kept thread state.
class WorkerGil {
 public:
  WorkerGil() {
    if (Finalizing()) ParkForever();  // PyGILState_Ensure would pthread_exit here.
    static thread_local bool kept = false;
    if (!kept) {
      // The thread's state, kept: this Ensure is never released (its GIL is, below).
      EnsureOrPark();
      PyEval_SaveThread();
      kept = true;
    }
    state_ = EnsureOrPark();
  }
  ~WorkerGil() {
    if (Finalizing()) ParkForever();  // Unwound by CPython's pthread_exit: stop here.
    PyGILState_Release(state_);
  }
  WorkerGil(const WorkerGil&) = delete;
  WorkerGil& operator=(const WorkerGil&) = delete;

 private:
  PyGILState_STATE state_;
};

}  // namespace flowloader::python

#endif  // FLOWLOADER_PYTHON_INTERNAL_WORKER_GIL_H_
