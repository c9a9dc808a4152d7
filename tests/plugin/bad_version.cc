// A plugin built for a newer plugin API than this graft's: the loader must
// refuse it after reading only api_version.

#include "passes/plugin_api.h"

namespace {

int NeverCalled(GraftPluginRegistrar*) { return 1; }

const GraftPluginInfo kInfo = {GRAFT_PLUGIN_API_VERSION + 1,
                               GRAFT_PLUGIN_BUILD_TAG, "bad_version", nullptr,
                               &NeverCalled};

}  // namespace

extern "C" GRAFT_PLUGIN_EXPORT const GraftPluginInfo* graft_plugin_info(void) {
  return &kInfo;
}
