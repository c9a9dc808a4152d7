# Install rules and the CMake package (graftConfig.cmake), so plugins and
# other projects can build against an installed graft:
#
#   find_package(graft CONFIG REQUIRED)
#   target_link_libraries(my_program PRIVATE graft::passes)
#   graft_add_plugin(my_plugin my_plugin.cc)   # a pass plugin (docs/plugins.md)
#
# Libraries made with graft_library(graft_<x>) are exported as graft::<x>,
# and their public headers are installed under include/graft/<folder>/, so
# the repository-rooted includes ("graph/graph.h") work unchanged. The
# installed_package test (tests/cmake/installed_package_test.cmake) checks
# that every graft header an installed header includes is installed too.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GRAFT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/graft)
set(GRAFT_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/graft)

# Packages the exported targets link against; graftConfig.cmake finds them
# again with find_dependency(). Append to it when a library gains a PUBLIC
# dependency on another package's targets.
set(GRAFT_EXPORT_DEPENDENCIES absl Threads)

# Called by graft_library() for each library it creates.
function(graft_install_library name)
  cmake_parse_arguments(ARG "" "" "PUBLIC_HEADERS" ${ARGN})
  string(REGEX REPLACE "^graft_" "" export_name ${name})
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${export_name})
  add_library(graft::${export_name} ALIAS ${name})
  install(TARGETS ${name} EXPORT graftTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

  # Only the headers named public: the others are the library's own
  # business and may change without notice. A generated header (in the build
  # tree) keeps its path relative to the build tree: passes/plugin_build_tag.h.
  foreach(header ${ARG_PUBLIC_HEADERS})
    cmake_path(ABSOLUTE_PATH header BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
               NORMALIZE OUTPUT_VARIABLE header)
    cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${header}" NORMALIZE generated)
    if(generated)
      file(RELATIVE_PATH rel ${PROJECT_BINARY_DIR} ${header})
    elseif(EXISTS ${header})
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${header})
    else()
      message(FATAL_ERROR "graft_library(${name}): public header ${header} "
                          "does not exist")
    endif()
    cmake_path(GET rel PARENT_PATH rel_dir)
    install(FILES ${header} DESTINATION ${GRAFT_INSTALL_INCLUDEDIR}/${rel_dir})
  endforeach()
endfunction()

# Called once at the end of the top-level CMakeLists.txt, after every
# library exists. (The `graft` program installs itself in cli/.)
function(graft_install_package)
  install(EXPORT graftTargets NAMESPACE graft::
          DESTINATION ${GRAFT_INSTALL_CMAKEDIR})

  set(GRAFT_FIND_DEPENDENCIES "")
  foreach(dep ${GRAFT_EXPORT_DEPENDENCIES})
    string(APPEND GRAFT_FIND_DEPENDENCIES "find_dependency(${dep})\n")
  endforeach()
  set(GRAFT_CONFIG_OPTIONS "")
  foreach(part ${GRAFT_OPTIONAL_PARTS})
    if(GRAFT_WITH_${part})
      string(APPEND GRAFT_CONFIG_OPTIONS "set(GRAFT_WITH_${part} ON)\n")
    else()
      string(APPEND GRAFT_CONFIG_OPTIONS "set(GRAFT_WITH_${part} OFF)\n")
    endif()
  endforeach()
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/graftConfig.cmake.in
    ${PROJECT_BINARY_DIR}/graftConfig.cmake
    INSTALL_DESTINATION ${GRAFT_INSTALL_CMAKEDIR})
  # Plugins must match graft's build tag anyway; same minor version is the
  # loosest promise that means anything.
  write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/graftConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/graftConfig.cmake
                ${PROJECT_BINARY_DIR}/graftConfigVersion.cmake
          DESTINATION ${GRAFT_INSTALL_CMAKEDIR})
endfunction()
