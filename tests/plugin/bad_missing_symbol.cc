// A shared library that is not a graft plugin: it exports a function, but
// not the entry point graft_plugin_info.

extern "C" __attribute__((visibility("default"))) int graft_plugin_info_v0(
    void) {
  return 0;
}
