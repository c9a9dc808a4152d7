#ifndef GRAFT_SUPPORT_CACHE_DIR_H_
#define GRAFT_SUPPORT_CACHE_DIR_H_

#include <string>

namespace graft {

// Where graft keeps what it can rebuild (compiled code, hashes of model
// files): $GRAFT_CACHE_DIR, else $XDG_CACHE_HOME/graft, else
// ~/.cache/graft.
std::string DefaultCacheDir();

}  // namespace graft

#endif  // GRAFT_SUPPORT_CACHE_DIR_H_
