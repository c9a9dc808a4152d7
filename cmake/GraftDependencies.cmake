# Looks for the dependencies of graft's optional parts (docs/building.md).
# Every search is QUIET and none is REQUIRED: a missing dependency only turns
# its part off (see graft_optional_part). Sets GRAFT_FOUND_<PART> for each.
#
#   ORC       LLVM 19 (llvm-19-dev)             LLVM_* variables, llvm_map_components_to_libnames
#   CUDA      CUDA Toolkit (/usr/local/cuda)    CUDA::nvrtc, CUDA::cudart_static, CUDA::cublasLt
#   GRAPHVIZ  libgvc (libgraphviz-dev)          PkgConfig::GRAFT_GVC
#   ONNX      libonnx-dev + protobuf            graft_onnx_proto (interface target)
#   DNNL      oneDNN (libdnnl-dev)              graft_dnnl (interface target)

# --- LLVM 19 -----------------------------------------------------------------
# LLVM's version file insists on an exact major.minor match (find_package(LLVM
# 19) rejects 19.1), and the default search would find whichever LLVM comes
# first (llvm-14-dev is common, and loading it costs configure time). So look
# only where Debian puts LLVM 19, or wherever LLVM_DIR points, and check the
# major version here.
set(GRAFT_FOUND_LLVM FALSE)
find_package(LLVM CONFIG QUIET NO_DEFAULT_PATH
  PATHS /usr/lib/llvm-19/lib/cmake/llvm)
if(LLVM_FOUND)
  if(LLVM_VERSION_MAJOR EQUAL 19)
    set(GRAFT_FOUND_LLVM TRUE)
    message(STATUS "Found LLVM ${LLVM_PACKAGE_VERSION} in ${LLVM_DIR}")
  else()
    message(STATUS "Ignoring LLVM ${LLVM_PACKAGE_VERSION} in ${LLVM_DIR}: graft needs LLVM 19")
  endif()
endif()

# --- CUDA Toolkit ------------------------------------------------------------
if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT}
   AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CUDAToolkit_ROOT /usr/local/cuda CACHE PATH "CUDA Toolkit location")
endif()
find_package(CUDAToolkit QUIET)
set(GRAFT_FOUND_CUDA FALSE)
if(CUDAToolkit_FOUND AND TARGET CUDA::nvrtc AND TARGET CUDA::cublasLt
   AND TARGET CUDA::cudart_static)
  set(GRAFT_FOUND_CUDA TRUE)
  message(STATUS "Found CUDA Toolkit ${CUDAToolkit_VERSION} in ${CUDAToolkit_BIN_DIR}")
endif()

# --- Graphviz (libgvc) -------------------------------------------------------
set(GRAFT_FOUND_GRAPHVIZ FALSE)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(GRAFT_GVC QUIET IMPORTED_TARGET libgvc)
  if(GRAFT_GVC_FOUND)
    set(GRAFT_FOUND_GRAPHVIZ TRUE)
  endif()
endif()

# --- ONNX (Debian's libonnx with its generated onnx::ModelProto) -------------
# libonnx's protobuf classes must come from the same protobuf runtime graft
# links, so ONNX needs Protobuf as well.
set(GRAFT_FOUND_ONNX FALSE)
find_package(Protobuf QUIET)
if(Protobuf_FOUND)
  find_package(ONNX CONFIG QUIET)
  if(ONNX_FOUND AND TARGET onnx_proto)
    set(GRAFT_FOUND_ONNX TRUE)
    set(_graft_onnx_libs onnx_proto)
  else()
    # No CMake package: fall back to the files libonnx-dev installs.
    find_path(GRAFT_ONNX_INCLUDE_DIR onnx/onnx_pb.h)
    find_library(GRAFT_ONNX_PROTO_LIBRARY onnx_proto)
    if(GRAFT_ONNX_INCLUDE_DIR AND GRAFT_ONNX_PROTO_LIBRARY)
      set(GRAFT_FOUND_ONNX TRUE)
      set(_graft_onnx_libs ${GRAFT_ONNX_PROTO_LIBRARY})
    endif()
  endif()
  if(GRAFT_FOUND_ONNX AND NOT TARGET graft_onnx_proto)
    # One name for whichever way it was found. Debian builds libonnx with
    # ONNX_ML and namespace onnx, which users of onnx_pb.h must also define.
    # (graft_onnx is graft's ONNX import library, onnx/.)
    add_library(graft_onnx_proto INTERFACE IMPORTED)
    target_link_libraries(graft_onnx_proto INTERFACE ${_graft_onnx_libs} protobuf::libprotobuf)
    if(GRAFT_ONNX_INCLUDE_DIR)
      target_include_directories(graft_onnx_proto INTERFACE ${GRAFT_ONNX_INCLUDE_DIR})
    endif()
    target_compile_definitions(graft_onnx_proto INTERFACE ONNX_ML=1 ONNX_NAMESPACE=onnx)
  endif()
  unset(_graft_onnx_libs)
endif()

# --- oneDNN ------------------------------------------------------------------
# Not find_package(dnnl): Debian's dnnl-config.cmake is built for the OpenCL
# GPU runtime and calls find_package(OpenCL REQUIRED), which fails the whole
# configure step on a machine without OpenCL headers. graft uses only the CPU
# engine, which needs just the header and the library.
set(GRAFT_FOUND_DNNL FALSE)
find_path(GRAFT_DNNL_INCLUDE_DIR dnnl.hpp)
find_library(GRAFT_DNNL_LIBRARY dnnl)
if(GRAFT_DNNL_INCLUDE_DIR AND GRAFT_DNNL_LIBRARY)
  set(GRAFT_FOUND_DNNL TRUE)
  if(NOT TARGET graft_dnnl)
    add_library(graft_dnnl INTERFACE IMPORTED)
    target_include_directories(graft_dnnl INTERFACE ${GRAFT_DNNL_INCLUDE_DIR})
    target_link_libraries(graft_dnnl INTERFACE ${GRAFT_DNNL_LIBRARY})
  endif()
endif()
