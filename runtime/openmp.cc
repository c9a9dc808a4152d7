#include "runtime/openmp.h"

#include <dlfcn.h>

namespace graft::runtime {
namespace {

template <typename F>
F Lookup(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

const OpenMp& Omp() {
  static const OpenMp omp{
      Lookup<decltype(OpenMp::parallel)>("GOMP_parallel"),
      Lookup<decltype(OpenMp::set_num_threads)>("omp_set_num_threads"),
      Lookup<decltype(OpenMp::get_num_procs)>("omp_get_num_procs"),
      Lookup<decltype(OpenMp::get_max_threads)>("omp_get_max_threads"),
      Lookup<decltype(OpenMp::get_thread_num)>("omp_get_thread_num"),
      Lookup<decltype(OpenMp::get_num_threads)>("omp_get_num_threads")};
  return omp;
}

}  // namespace graft::runtime
