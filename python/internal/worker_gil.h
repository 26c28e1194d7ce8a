// worker_gil.h: WorkerGil, the GIL taken on a pipeline worker thread to call the user's
// Python code (a Dataset's __getitem__, a transforms.Lambda), safe at interpreter exit.
//
// A call abandoned by close() (docs/python.md, "Lifecycle") may still run when the
// interpreter finalizes; when it then takes the GIL back (after a sleep, a read),
// CPython ends the thread with pthread_exit, unwinding our frames. pybind11's
// gil_scoped_acquire released the thread state in that unwinding and threw
// ("scoped_acquire::dec_ref(): thread state must be current!") from its destructor:
// std::terminate, the process aborting at exit instead of exiting; and an unwinding that
// went on reached the graph's catch (...) ("FATAL: exception not rethrown", abort).
// WorkerGil instead parks the thread when the interpreter is finalizing: the unwinding
// stops in its destructor, and the thread sleeps until the process ends (nothing joins
// it: close() abandoned the call). Objects destroyed before it in that unwinding must
// not touch Python then either (LentPixels checks Finalizing()).
//
// The thread keeps its Python thread state for its life (made once, never cleared): a
// state made and freed per call costs a 16 KiB frame stack mmap and munmap on 3.11.
//
// Thread-safety: one WorkerGil per call, on the calling thread.
#ifndef FLOWLOADER_PYTHON_INTERNAL_WORKER_GIL_H_
#define FLOWLOADER_PYTHON_INTERNAL_WORKER_GIL_H_

#include <Python.h>
#include <unistd.h>

namespace flowloader::python {

// Finalizing: whether the interpreter is ending (a worker may not take the GIL again).
inline bool Finalizing() { return _Py_IsFinalizing() != 0; }

// ParkForever is where a worker thread ends whose interpreter is gone.
[[noreturn]] inline void ParkForever() {
  for (;;) pause();
}

class WorkerGil {
 public:
  WorkerGil() {
    if (Finalizing()) ParkForever();  // PyGILState_Ensure would pthread_exit here.
    static thread_local bool kept = false;
    if (!kept) {
      // The thread's state, kept: this Ensure is never released (its GIL is, below).
      PyGILState_Ensure();
      PyEval_SaveThread();
      kept = true;
    }
    state_ = PyGILState_Ensure();
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
