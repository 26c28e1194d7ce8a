// dlpack.h: the DLPack tensor ABI (v0.6, the version torch 1.13's from_dlpack reads).
//
// DLPack is a C struct layout, not a library: a producer fills a DLManagedTensor and
// hands it over in a PyCapsule named "dltensor"; the consumer renames the capsule
// "used_dltensor" and calls `deleter` once it no longer needs the memory. These are the
// few declarations the module needs, copied from dlpack.h (Apache 2.0,
// github.com/dmlc/dlpack), so the extension needs no torch headers.
//
// Thread-safety: plain structs.
#ifndef FLOWLOADER_PYTHON_INTERNAL_DLPACK_H_
#define FLOWLOADER_PYTHON_INTERNAL_DLPACK_H_

#include <cstdint>

extern "C" {

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // nullptr: compact row-major.
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

}  // extern "C"

#endif  // FLOWLOADER_PYTHON_INTERNAL_DLPACK_H_
