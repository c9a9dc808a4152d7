#ifndef GRAFT_SERIALIZE_UTF8_H_
#define GRAFT_SERIALIZE_UTF8_H_

#include "absl/strings/string_view.h"

namespace graft {

// True if `text` is well-formed UTF-8 (no overlong forms, surrogates or
// code points past U+10FFFF): what protobuf's string fields accept.
bool IsValidUtf8(absl::string_view text);

}  // namespace graft

#endif  // GRAFT_SERIALIZE_UTF8_H_
