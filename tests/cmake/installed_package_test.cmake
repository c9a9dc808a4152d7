# What `cmake --install` makes of this build is usable on its own:
#
# 1. The installed headers are closed under their includes: every graft
#    header that an installed header includes is installed too, so a plugin
#    or a program built against the install never needs graft's source
#    tree. A few headers that must, or must not, be installed are checked
#    by name (only PUBLIC_HEADERS of graft_library are installed).
# 2. A program that embeds graft (tests/cmake/installed_program), built
#    against the installed package only, reads an .onnx model through
#    LoadModel: the exported graft::onnx carries its link anchor and
#    libonnx.
#
# cmake -DGRAFT_BINARY_DIR=... -DGRAFT_SOURCE_DIR=... -DWORK_DIR=...
#       [-DGENERATOR=...] [-DCXX_COMPILER=...] [-DCOMPILER_LAUNCHER=...]
#       -P installed_package_test.cmake
include(${CMAKE_CURRENT_LIST_DIR}/check_include_path.cmake)

foreach(var GRAFT_BINARY_DIR GRAFT_SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "installed_package_test.cmake: pass -D${var}=...")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# Runs a command; fails the test with its output unless it exits with 0.
# Leaves stdout+stderr in `out_var`.
function(run out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  string(REPLACE ";" " " cmd "${ARGN}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "`${cmd}` exited with ${rc}:\n${out}")
  endif()
  message(STATUS "ok: ${cmd}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

run(out ${CMAKE_COMMAND} --install ${GRAFT_BINARY_DIR} --prefix ${prefix})
set(include_dir ${prefix}/include/graft)

# --- 1. Headers ---------------------------------------------------------------
file(GLOB_RECURSE headers RELATIVE ${include_dir} ${include_dir}/*.h)
list(LENGTH headers count)
if(count EQUAL 0)
  message(FATAL_ERROR "no headers installed under ${include_dir}")
endif()

set(errors "")
foreach(header ${headers})
  file(STRINGS ${include_dir}/${header} lines
       REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" included "${line}")
    if(EXISTS ${include_dir}/${included})
      continue()
    endif()
    # A quoted include that names no file of graft's trees is another
    # package's header (absl/..., google/protobuf/..., onnx/onnx_pb.h).
    if(EXISTS ${GRAFT_SOURCE_DIR}/${included} OR
       EXISTS ${GRAFT_BINARY_DIR}/${included})
      string(APPEND errors
             "  ${header} includes ${included}, which is not installed\n")
    endif()
  endforeach()
endforeach()

# The plugin API and the entry points of each library: installed.
foreach(header passes/plugin_api.h passes/plugin_build_tag.h graph/graph.h
               serialize/model_io.h serialize/graft.pb.h onnx/onnx_import.h
               viz/dot_writer.h backends/interp/interp_backend.h
               workloads/benchmark_mlp.h support/status_macros.h)
  if(NOT EXISTS ${include_dir}/${header})
    string(APPEND errors "  ${header} is not installed\n")
  endif()
endforeach()
# Implementation headers: not installed.
foreach(header graph/core_ops_internal.h graph/lexer.h
               backends/interp/kernel.h backends/interp/execution_plan.h
               serialize/protobuf_quiet.h onnx/onnx_importer.h
               viz/gvc_renderer.h passes/inferred_type_cache.h)
  if(EXISTS ${include_dir}/${header})
    string(APPEND errors
           "  ${header} is installed, but is not a public header\n")
  endif()
endforeach()

if(errors)
  message(FATAL_ERROR "installed headers (${include_dir}):\n${errors}"
                      "List a header in its library's PUBLIC_HEADERS "
                      "(graft_library) or stop including it.")
endif()
message(STATUS "${count} installed headers; every graft header they "
               "include is installed")

# --- 2. A program built against the installed package -------------------------
set(configure ${CMAKE_COMMAND}
    -S ${GRAFT_SOURCE_DIR}/tests/cmake/installed_program -B ${build}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_BUILD_TYPE=Release
    -DLOAD_MODEL_CHECK_SOURCE=${GRAFT_SOURCE_DIR}/tests/onnx/load_model_check.cc)
if(GENERATOR)
  list(APPEND configure -G ${GENERATOR})
endif()
if(CXX_COMPILER)
  list(APPEND configure -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(COMPILER_LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER})
endif()
run(out ${configure})
run(out ${CMAKE_COMMAND} --build ${build})
# Only the install may be on its include path, not graft's own trees.
graft_check_include_path(${build} "the program")
# Reads the model, or in a build without ONNX import says what to install.
run(out ${build}/load_model_check
    ${GRAFT_SOURCE_DIR}/tests/onnx_models/mlp/model.onnx)

# --- 3. examples/aot: a compiled model run by graft::runtime alone -------------
# The installed graft compiles the example MLP (where it has orc); the
# example, built against the install and linking only graft::runtime, runs
# the file without LLVM.
execute_process(
  COMMAND ${prefix}/bin/graft compile ${GRAFT_SOURCE_DIR}/examples/models/mlp.graft
          --dim batch=4 -o ${WORK_DIR}/mlp.gcx
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0 AND out MATCHES "unknown backend|no backend")
  message(STATUS "examples/aot skipped: this graft has no orc backend (${out})")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "graft compile failed:\n${out}")
else()
  set(aot_configure ${CMAKE_COMMAND}
      -S ${GRAFT_SOURCE_DIR}/examples/aot -B ${WORK_DIR}/aot-build
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
      -DCMAKE_BUILD_TYPE=Release)
  if(GENERATOR)
    list(APPEND aot_configure -G ${GENERATOR})
  endif()
  if(CXX_COMPILER)
    list(APPEND aot_configure -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
  endif()
  run(out ${aot_configure})
  run(out ${CMAKE_COMMAND} --build ${WORK_DIR}/aot-build)
  graft_check_include_path(${WORK_DIR}/aot-build "examples/aot")
  run(out ldd ${WORK_DIR}/aot-build/aot_run)
  if(out MATCHES "libLLVM|libprotobuf")
    message(FATAL_ERROR "examples/aot links more than graft::runtime needs:\n${out}")
  endif()
  run(out ${WORK_DIR}/aot-build/aot_run ${WORK_DIR}/mlp.gcx 10)
  if(NOT out MATCHES "output softmax: f32\\[4,4\\]")
    message(FATAL_ERROR "examples/aot printed:\n${out}")
  endif()
  message(STATUS "examples/aot: ${out}")
endif()
message(STATUS "installed package: all checks passed")
