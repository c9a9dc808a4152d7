# graft_add_plugin(<name> <source>...): builds a pass plugin
# (docs/plugins.md), a shared library that `graft opt --load-pass-plugin`
# loads. Installed with graft's CMake package, so an out-of-tree plugin
# writes:
#
#   find_package(graft CONFIG REQUIRED)
#   graft_add_plugin(my_plugin my_plugin.cc)
#
# The plugin is built against graft's headers only (graft::plugin_api): it
# uses the graft of the program that loads it, so it must not link graft's
# libraries, which would give it a second op registry and pass registry.
function(graft_add_plugin name)
  if(NOT ARGN)
    message(FATAL_ERROR "graft_add_plugin(${name}): no source files given")
  endif()
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE graft::plugin_api)
  set_target_properties(${name} PROPERTIES CXX_EXTENSIONS OFF)
endfunction()
