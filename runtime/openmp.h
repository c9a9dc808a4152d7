#ifndef GRAFT_RUNTIME_OPENMP_H_
#define GRAFT_RUNTIME_OPENMP_H_

namespace graft::runtime {

// The OpenMP runtime that oneDNN brought (GCC's libgomp), looked up in the
// process rather than linked: graft itself is not built with OpenMP, and
// a process without oneDNN has none (every pointer null). The library
// calls and the generated loops share its threads, where a pool of our
// own would compete with OpenMP's spinning threads.
struct OpenMp {
  // libgomp's entry for a parallel region: what GCC compiles `#pragma omp
  // parallel` to, stable since GCC 4.9.
  void (*parallel)(void (*fn)(void*), void* data, unsigned threads, unsigned flags);
  void (*set_num_threads)(int);
  int (*get_num_procs)();
  int (*get_max_threads)();
  int (*get_thread_num)();
  int (*get_num_threads)();
};

// The lookups, made once.
const OpenMp& Omp();

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_OPENMP_H_
