#ifndef GRAFT_SERIALIZE_PROTOBUF_QUIET_H_
#define GRAFT_SERIALIZE_PROTOBUF_QUIET_H_

#include "google/protobuf/stubs/common.h"

#if GOOGLE_PROTOBUF_VERSION < 4022000
#include "google/protobuf/stubs/logging.h"
#endif

namespace graft {

// Keeps protobuf from logging to stderr while it lives (it logs, for
// example, invalid UTF-8 in a parsed file, or a JSON message nested too
// deep). graft reports those failures itself, once, with the file's name.
// Newer protobuf releases log through Abseil and have no silencer; there
// this does nothing.
class ProtobufQuiet {
 public:
  ProtobufQuiet() = default;
  ProtobufQuiet(const ProtobufQuiet&) = delete;
  ProtobufQuiet& operator=(const ProtobufQuiet&) = delete;

 private:
#if GOOGLE_PROTOBUF_VERSION < 4022000
  google::protobuf::LogSilencer silencer_;
#endif
};

}  // namespace graft

#endif  // GRAFT_SERIALIZE_PROTOBUF_QUIET_H_
