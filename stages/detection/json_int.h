// json_int.h: reading an integer field of a COCO JSON object, as COCO files write them
// (a JSON integer, or a float with an integral value such as 3.0). Shared by the COCO
// file reader (coco.cc) and the tar-shard annotation members (stages/reader).
//
// Thread-safety: a pure function.
#ifndef FLOWLOADER_STAGES_DETECTION_JSON_INT_H_
#define FLOWLOADER_STAGES_DETECTION_JSON_INT_H_

#include <cmath>
#include <cstdint>

#include "nlohmann/json.hpp"

namespace flowloader::detection {

// JsonInt sets *out to object[key] when it is an integer, or a finite float with an
// integral value inside int64's range; false when the key is missing or anything else.
inline bool JsonInt(const nlohmann::json& object, const char* key, int64_t* out) {
  auto it = object.find(key);
  if (it == object.end()) return false;
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return true;
  }
  if (it->is_number_float()) {
    const double v = it->get<double>();
    // 2^63 is exact in double; anything at or past it would not convert.
    if (std::isfinite(v) && v == std::floor(v) && v >= -9223372036854775808.0 &&
        v < 9223372036854775808.0) {
      *out = static_cast<int64_t>(v);
      return true;
    }
  }
  return false;
}

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_JSON_INT_H_
