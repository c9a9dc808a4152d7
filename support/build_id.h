#ifndef GRAFT_SUPPORT_BUILD_ID_H_
#define GRAFT_SUPPORT_BUILD_ID_H_

#include <string>

namespace graft {

// The GNU build ID (hex) of the binary graft's code was linked into: the
// executable, or the shared library that holds graft. Any rebuild that
// changes the code changes it, so caches of generated code key on it (two
// builds of one version number may generate different code). Where the
// linker wrote none: the binary file's device, inode, size and
// modification time.
const std::string& BuildId();

}  // namespace graft

#endif  // GRAFT_SUPPORT_BUILD_ID_H_
