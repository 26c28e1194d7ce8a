// sanitizers.h: whether this build runs under AddressSanitizer or ThreadSanitizer, for
// tests whose resident-memory figures a sanitizer changes (ASan quarantines freed memory
// and keeps shadow memory, so a freed image still looks resident).
#ifndef FLOWLOADER_STAGES_CORE_SANITIZERS_H_
#define FLOWLOADER_STAGES_CORE_SANITIZERS_H_

namespace flowloader {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_SANITIZERS_H_
