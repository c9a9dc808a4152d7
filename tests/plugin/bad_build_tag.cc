// A plugin built against another graft (another version or compiler): the
// loader must refuse it before calling its register function.

#include "passes/plugin_api.h"

namespace {

int NeverCalled(GraftPluginRegistrar*) { return 1; }

const GraftPluginInfo kInfo = {GRAFT_PLUGIN_API_VERSION,
                               "graft-0.0.1-OtherCompiler-1.0", "bad_build_tag",
                               nullptr, &NeverCalled};

}  // namespace

extern "C" GRAFT_PLUGIN_EXPORT const GraftPluginInfo* graft_plugin_info(void) {
  return &kInfo;
}
