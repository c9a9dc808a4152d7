#ifndef GRAFT_TESTS_ORC_ORC_TEST_UTIL_H_
#define GRAFT_TESTS_ORC_ORC_TEST_UTIL_H_

// The orc backend's differential tests: tests/backends/
// differential_test_util.h with the backend fixed to orc.

#include <memory>
#include <vector>

#include "tests/backends/differential_test_util.h"

namespace graft::orc_test {

using namespace ::graft::differential;  // NOLINT: the helpers, unqualified.

inline Backend& Orc() {
  static Backend* const backend = [] {
    absl::StatusOr<std::unique_ptr<Backend>> b = CreateBackend("orc");
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? b->release() : nullptr;
  }();
  return *backend;
}

inline void ExpectOrcMatchesInterp(const Module& module,
                                   const std::vector<Tensor>& inputs,
                                   double tol) {
  ExpectMatchesInterp(Orc(), module, inputs, tol);
}

inline void ExpectOrcMatchesInterp(const ModuleBuilder& b, double tol) {
  ExpectOrcMatchesInterp(b.module(), b.inputs(), tol);
}

}  // namespace graft::orc_test

#endif  // GRAFT_TESTS_ORC_ORC_TEST_UTIL_H_
