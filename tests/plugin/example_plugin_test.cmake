# The example plugin end to end, as a user builds it (docs/plugins.md):
# install graft from its build tree into a scratch prefix, build
# examples/plugin against that installed package with find_package(graft),
# and load the result into the installed `graft`.
#
# cmake -DGRAFT_BINARY_DIR=... -DGRAFT_SOURCE_DIR=... -DWORK_DIR=...
#       [-DGENERATOR=...] [-DCXX_COMPILER=...] [-DCOMPILER_LAUNCHER=...]
#       -P example_plugin_test.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/check_include_path.cmake)

foreach(var GRAFT_BINARY_DIR GRAFT_SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "example_plugin_test.cmake: pass -D${var}=...")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# Runs a command; fails the test with its output unless it exits with
# `expected_rc`. Leaves stdout+stderr in `out_var`.
function(run expected_rc out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  string(REPLACE ";" " " cmd "${ARGN}")
  if(NOT "${rc}" STREQUAL "${expected_rc}")
    message(FATAL_ERROR "`${cmd}` exited with ${rc}, expected ${expected_rc}:\n${out}")
  endif()
  message(STATUS "ok: ${cmd}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(expect_contains text needle what)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected to find\n  ${needle}\nin:\n${text}")
  endif()
endfunction()

function(expect_lacks text needle what)
  string(FIND "${text}" "${needle}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${what}: expected no\n  ${needle}\nin:\n${text}")
  endif()
endfunction()

# 1. Install graft (libraries, headers, CMake package, the graft program).
run(0 out ${CMAKE_COMMAND} --install ${GRAFT_BINARY_DIR} --prefix ${prefix})
foreach(f include/graft/passes/plugin_api.h include/graft/passes/plugin_build_tag.h
          bin/graft)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()
file(GLOB_RECURSE config ${prefix}/*/graftConfig.cmake)
if(NOT config)
  message(FATAL_ERROR "the install lacks graftConfig.cmake")
endif()

# 2. Build the example plugin out of tree against the installed package
#    only (no package registry, no source tree on the include path).
set(configure ${CMAKE_COMMAND} -S ${GRAFT_SOURCE_DIR}/examples/plugin -B ${build}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_BUILD_TYPE=Release)
if(GENERATOR)
  list(APPEND configure -G ${GENERATOR})
endif()
if(CXX_COMPILER)
  list(APPEND configure -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(COMPILER_LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER})
endif()
run(0 out ${configure})
expect_contains("${out}" "Building the example plugin for graft-" "configure")
run(0 out ${CMAKE_COMMAND} --build ${build})
file(GLOB plugin ${build}/*graft_example_plugin*)
if(NOT plugin)
  message(FATAL_ERROR "the example build made no plugin library in ${build}")
endif()
# Nothing of graft's own trees may have been used: no include directory
# of the build is graft's source or build directory.
graft_check_include_path(${build} "the example plugin")

set(graft ${prefix}/bin/graft)
set(model ${GRAFT_SOURCE_DIR}/examples/plugin/model.graft)

# 3. `graft passes` lists what the plugin adds.
run(0 out ${graft} passes --load-pass-plugin ${plugin})
expect_contains("${out}" "example-swap-relu" "graft passes")
expect_contains("${out}" "slope=F (default 0.01)" "graft passes")
expect_contains("${out}" "example.tanh_times_two (from ${plugin})" "graft passes")
expect_contains("${out}" "example::scaled_tanh(input: Tensor, scale: float = 1.0)"
                "graft passes")
expect_contains("${out}" "example (${plugin})" "graft passes")

# 4. The plugin's pass, by name in a pipeline.
run(0 out ${graft} opt ${model} -p example-swap-relu --load-pass-plugin ${plugin})
expect_contains("${out}"
  "%leaky_relu : f32[2,8] = call_function[target=leaky_relu](args = (%linear, 0.01), kwargs = {})"
  "graft opt -p example-swap-relu")
expect_contains("${out}" "call_function[target=tanh](args = (%leaky_relu,)"
                "graft opt -p example-swap-relu")
expect_lacks("${out}" "target=relu]" "graft opt -p example-swap-relu")

# 5. Its pattern, through apply-patterns, and its op's type rule.
run(0 out ${graft} opt ${model}
    -p "example-swap-relu{slope=0.2},apply-patterns{names=example.tanh_times_two},shape-prop"
    --load-pass-plugin ${plugin})
expect_contains("${out}" "args = (%linear, 0.2)" "apply-patterns")
expect_contains("${out}"
  ": f32[2,8] = call_function[target=example::scaled_tanh](args = (%leaky_relu, 2.0), kwargs = {})"
  "apply-patterns")
expect_lacks("${out}" "target=tanh]" "apply-patterns")
expect_lacks("${out}" "target=mul]" "apply-patterns")

# 6. Without the plugin its pass does not exist; a typo in its option is
#    an error.
run(1 out ${graft} opt ${model} -p example-swap-relu)
expect_contains("${out}" "unknown pass 'example-swap-relu'" "no plugin")
run(1 out ${graft} opt ${model} -p "example-swap-relu{slop=1}" --load-pass-plugin ${plugin})
expect_contains("${out}" "slop" "option typo")

# 7. Models that call the plugin's op: typed by its type rule (an i32 input
#    gives f32), checked by it (a zero scale is refused), and unknown
#    without the plugin.
file(WRITE ${WORK_DIR}/uses_op.graft "graph():
    %x : i32[3] = placeholder[target=x]
    %y = call_function[target=example::scaled_tanh](args = (%x,), kwargs = {})
    return y
")
file(WRITE ${WORK_DIR}/zero_scale.graft "graph():
    %x : f32[3] = placeholder[target=x]
    %y = call_function[target=example::scaled_tanh](args = (%x, 0.0), kwargs = {})
    return y
")
run(0 out ${graft} opt ${WORK_DIR}/uses_op.graft -p shape-prop --load-pass-plugin ${plugin})
expect_contains("${out}"
  "%y : f32[3] = call_function[target=example::scaled_tanh](args = (%x,), kwargs = {})"
  "the plugin's op")
run(1 out ${graft} opt ${WORK_DIR}/zero_scale.graft -p shape-prop --load-pass-plugin ${plugin})
expect_contains("${out}" "scale must not be 0" "the plugin's type rule")
run(1 out ${graft} opt ${WORK_DIR}/uses_op.graft -p shape-prop)
expect_contains("${out}" "example::scaled_tanh" "the op without the plugin")

message(STATUS "example plugin: all checks passed")
