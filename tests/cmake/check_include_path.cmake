# Included by the out-of-tree build tests (tests/cmake/installed_package_test.cmake,
# tests/plugin/example_plugin_test.cmake): fails when a program built against
# the installed package was compiled with graft's own source or build tree on
# its include path, which would hide a header missing from the install.
# `what` names the program in the message.
function(graft_check_include_path build what)
  set(include_lines "")
  if(EXISTS ${build}/build.ninja)
    file(STRINGS ${build}/build.ninja include_lines REGEX "^  INCLUDES = ")
  endif()
  foreach(line ${include_lines})
    string(REGEX REPLACE "^  INCLUDES = " "" line "${line}")
    string(REPLACE " " ";" words "${line}")
    foreach(word ${words})
      string(REGEX REPLACE "^-I" "" dir "${word}")
      if(dir STREQUAL GRAFT_SOURCE_DIR OR dir STREQUAL GRAFT_BINARY_DIR)
        message(FATAL_ERROR "${what} was compiled with ${dir} on its "
                            "include path: ${line}")
      endif()
    endforeach()
  endforeach()
endfunction()
