// graft::Jit: trace on the first call per key, cached runs after, automatic
// and explicit dynamic dims, static arguments, the recompile warning and
// the counters; results against plain C++ arithmetic.

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "graph/random_tensor.h"
#include "gtest/gtest.h"
#include "backends/backend.h"
#include "jit/jit.h"
#include "support/status_matchers.h"

namespace graft {
namespace {

using ::graft::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::SizeIs;

JitOptions NoDisk() {
  JitOptions options;
  options.disk_cache = false;
  return options;
}

// sum(x * x + sin(x)), computed here in double.
double SumSquarePlusSin(const Tensor& x) {
  double total = 0;
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    const double v = x.GetAsDouble(i);
    total += v * v + std::sin(v);
  }
  return total;
}

auto SumSquarePlusSinFn() {
  return [](Proxy x) { return sum(x * x + sin(x)); };
}

TEST(Jit, TracesOnceAndRunsTheCachedCodeAfter) {
  auto f = Jit(SumSquarePlusSinFn(), NoDisk());
  const Tensor x = RandomTensor(DType::kF32, {4, 33}, 7);
  for (int call = 0; call < 3; ++call) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(x));
    ASSERT_THAT(y, SizeIs(1));
    EXPECT_NEAR(y[0].GetAsDouble(0), SumSquarePlusSin(x), 1e-3);
  }
  const JitStats s = f.stats();
  EXPECT_EQ(s.calls, 3);
  EXPECT_EQ(s.traces, 1);
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.recompiles, 0);
  EXPECT_GT(s.compile_seconds, 0);
}

// torch's automatic dynamic shapes: the second size compiles a symbolic
// version, which every later size reuses.
TEST(Jit, AChangingDimBecomesDynamic) {
  auto f = Jit(SumSquarePlusSinFn(), NoDisk());
  for (int64_t rows : {4, 5, 6, 7, 5}) {
    const Tensor x = RandomTensor(DType::kF32, {rows, 8}, rows);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(x));
    EXPECT_NEAR(y[0].GetAsDouble(0), SumSquarePlusSin(x), 1e-3) << rows;
  }
  const JitStats s = f.stats();
  EXPECT_EQ(s.traces, 2);
  EXPECT_EQ(s.recompiles, 1);
  EXPECT_EQ(s.hits, 3);
}

TEST(Jit, DynamicOnTracesOnceForEverySize) {
  JitOptions options = NoDisk();
  options.dynamic = JitDynamic::kOn;
  auto f = Jit(SumSquarePlusSinFn(), options);
  for (int64_t rows : {4, 9, 1}) {
    const Tensor x = RandomTensor(DType::kF32, {rows, 3}, rows);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(x));
    EXPECT_NEAR(y[0].GetAsDouble(0), SumSquarePlusSin(x), 1e-3);
  }
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(Jit, ExplicitDynamicDimsAreSymbolicFromTheStart) {
  JitOptions options = NoDisk();
  options.dynamic = JitDynamic::kOff;
  options.dynamic_dims = {{0, 0}};
  auto f = Jit(SumSquarePlusSinFn(), options);
  for (int64_t rows : {2, 3}) ASSERT_OK(f(RandomTensor(DType::kF32, {rows, 5}, 1)).status());
  EXPECT_EQ(f.stats().traces, 1);
  // The other dim is static: a new size traces again.
  ASSERT_OK(f(RandomTensor(DType::kF32, {2, 6}, 1)).status());
  EXPECT_EQ(f.stats().traces, 2);
}

TEST(Jit, StaticArgumentsArePartOfTheKey) {
  auto f = Jit([](Proxy x, double scale, bool negate) {
    Proxy y = x * scale;
    return negate ? -y : y;
  }, NoDisk());
  const Tensor x = Tensor::FromVector(DType::kF32, {3}, std::vector<float>{1, 2, 3});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> a, f(x, 2.0, false));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> b, f(x, 3.0, true));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> c, f(x, 2.0, false));
  EXPECT_EQ(a[0].ToDoubles(), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(b[0].ToDoubles(), (std::vector<double>{-3, -6, -9}));
  EXPECT_EQ(c[0].ToDoubles(), a[0].ToDoubles());
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().hits, 1);
}

// Dims of equal size share a symbol (duck sizing): a sum and a product of
// two arguments whose sizes change together still trace, once.
TEST(Jit, ArgumentsWhoseDimsChangeTogetherShareASymbol) {
  auto add = Jit([](Proxy a, Proxy b) { return a + b; }, NoDisk());
  for (int64_t rows : {2, 3, 4}) {
    const Tensor a = RandomTensor(DType::kF32, {rows, 4}, 1);
    const Tensor b = RandomTensor(DType::kF32, {rows, 4}, 2);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, add(a, b));
    EXPECT_FLOAT_EQ(y[0].GetAsDouble(rows * 4 - 1), a.GetAsDouble(rows * 4 - 1) + b.GetAsDouble(rows * 4 - 1));
  }
  EXPECT_EQ(add.stats().traces, 2);
  JitOptions on = NoDisk();
  on.dynamic = JitDynamic::kOn;
  auto mm = Jit([](Proxy x, Proxy w) { return matmul(x, w); }, on);
  for (int64_t k : {3, 5}) {
    const Tensor x = RandomTensor(DType::kF32, {2, k}, 1);
    const Tensor w = RandomTensor(DType::kF32, {k, 4}, 2);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, mm(x, w));
    double want = 0;
    for (int64_t i = 0; i < k; ++i) want += x.GetAsDouble(i) * w.GetAsDouble(i * 4);
    EXPECT_NEAR(y[0].GetAsDouble(0), want, 1e-5);
  }
  EXPECT_EQ(mm.stats().traces, 1);
  // Sizes that were equal and now differ: another pattern, another trace.
  ASSERT_OK(mm(RandomTensor(DType::kF32, {4, 4}, 1), RandomTensor(DType::kF32, {4, 4}, 2)).status());
  ASSERT_OK(mm(RandomTensor(DType::kF32, {2, 6}, 1), RandomTensor(DType::kF32, {6, 3}, 2)).status());
  EXPECT_EQ(mm.stats().traces, 2);
}

// The key holds each static argument's type and exact value.
TEST(Jit, StaticArgumentsAreKeyedByTypeAndExactValue) {
  auto f = Jit([](Proxy x, auto k) { return x * static_cast<double>(k); }, NoDisk());
  const Tensor x = Tensor::FromVector(DType::kF32, {1}, std::vector<float>{1});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> a, f(x, 1234567.0));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> b, f(x, 1234568.0));
  EXPECT_EQ(a[0].GetAsDouble(0), 1234567.0);
  EXPECT_EQ(b[0].GetAsDouble(0), 1234568.0);
  EXPECT_EQ(f.stats().traces, 2);
  ASSERT_OK(f(x, 1).status());    // An int, not the double 1.0.
  ASSERT_OK(f(x, 1.0).status());
  EXPECT_EQ(f.stats().traces, 4);
}

// Threads calling one function: a key is traced once however many calls
// want it at the same time, and every call gets the right result.
TEST(Jit, ConcurrentCallsShareOneCompilePerKey) {
  auto f = Jit(SumSquarePlusSinFn(), NoDisk());
  std::vector<Tensor> inputs;
  for (int64_t cols : {3, 4, 5, 6}) inputs.push_back(RandomTensor(DType::kF32, {2, cols}, cols));
  std::vector<std::thread> threads;
  std::vector<int> bad(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const Tensor& x = inputs[(t + i) % inputs.size()];
        absl::StatusOr<std::vector<Tensor>> y = f(x);
        if (!y.ok() || std::fabs((*y)[0].GetAsDouble(0) - SumSquarePlusSin(x)) > 1e-3) ++bad[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  const JitStats s = f.stats();
  EXPECT_EQ(s.calls, 160);
  // kAuto: the first size static, the next symbolic; at most one trace
  // per key however the threads interleave.
  EXPECT_LE(s.traces, 3);
  EXPECT_EQ(s.hits + s.traces, 160);
}

TEST(Jit, SeveralInputsAndOutputs) {
  auto f = Jit([](Proxy a, Proxy b) { return std::make_tuple(a + b, relu(a * b)); }, NoDisk());
  const Tensor a = RandomTensor(DType::kF32, {2, 3}, 1);
  const Tensor b = RandomTensor(DType::kF32, {2, 3}, 2);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(a, b));
  ASSERT_THAT(y, SizeIs(2));
  for (int64_t i = 0; i < 6; ++i) {
    const double x = a.GetAsDouble(i), z = b.GetAsDouble(i);
    EXPECT_FLOAT_EQ(y[0].GetAsDouble(i), x + z);
    EXPECT_FLOAT_EQ(y[1].GetAsDouble(i), std::max(0.0, x * z));
  }
}

TEST(Jit, TheRecompileLimitWarnsOnceNamingTheDim) {
  JitOptions options = NoDisk();
  options.dynamic = JitDynamic::kOff;
  options.recompile_limit = 3;
  std::vector<std::string> warnings;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  auto f = Jit(SumSquarePlusSinFn(), options);
  for (int64_t cols = 1; cols <= 7; ++cols) {
    ASSERT_OK(f(RandomTensor(DType::kF32, {2, cols}, 1)).status());
  }
  EXPECT_EQ(f.stats().recompiles, 6);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr("tensor argument 0 dim 1 (3 -> 4)"));
  EXPECT_THAT(warnings[0], HasSubstr("recompile_limit 3"));
}

TEST(Jit, ATraceErrorIsReturned) {
  auto f = Jit([](Proxy a, Proxy b) { return matmul(a, b); }, NoDisk());
  EXPECT_FALSE(f(RandomTensor(DType::kF32, {2, 3}, 1), RandomTensor(DType::kF32, {4, 5}, 2)).ok());
  // The function still works on good shapes afterwards.
  ASSERT_OK(f(RandomTensor(DType::kF32, {2, 3}, 1), RandomTensor(DType::kF32, {3, 5}, 2)).status());
}

// A traced function that throws: the exception reaches the caller, and the
// key is traced again by the next call rather than left broken.
TEST(Jit, AThrowingFunctionCanBeCalledAgain) {
  bool fail = true;
  auto f = Jit([&fail](Proxy x) {
    if (fail) throw std::runtime_error("not yet");
    return relu(x);
  }, NoDisk());
  const Tensor x = RandomTensor(DType::kF32, {2, 2}, 1);
  EXPECT_THROW((void)f(x), std::runtime_error);
  fail = false;
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(x));
  EXPECT_EQ(y[0].GetAsDouble(0), std::max(0.0, x.GetAsDouble(0)));
}

TEST(Jit, InterpBackendWorksToo) {
  JitOptions options = NoDisk();
  options.backend = "interp";
  auto f = Jit(SumSquarePlusSinFn(), options);
  const Tensor x = RandomTensor(DType::kF32, {3, 3}, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, f(x));
  EXPECT_NEAR(y[0].GetAsDouble(0), SumSquarePlusSin(x), 1e-4);
  options.backend = "no-such-backend";
  auto g = Jit(SumSquarePlusSinFn(), options);
  EXPECT_THAT(g(x), StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such-backend")));
}

// A second function object with the same code stands for a new process:
// it finds the compiled code on disk (orc writes fixed-shape code there).
TEST(Jit, ANewFunctionFindsTheCodeOnDisk) {
  const std::string dir = ::testing::TempDir() + "/graft_jit_disk_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("GRAFT_CACHE_DIR", dir.c_str(), 1);
  JitOptions options;
  const Tensor x = RandomTensor(DType::kF32, {8, 8}, 4);
  auto first = Jit(SumSquarePlusSinFn(), options);
  ASSERT_OK(first(x).status());
  auto second = Jit(SumSquarePlusSinFn(), options);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, second(x));
  EXPECT_NEAR(y[0].GetAsDouble(0), SumSquarePlusSin(x), 1e-3);
  unsetenv("GRAFT_CACHE_DIR");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(second.stats().traces, 1);
  if (!CreateBackend("orc").ok()) {
    GTEST_SKIP() << "the default backend is interp, which keeps nothing on disk";
  }
  EXPECT_EQ(second.stats().compiles, 0);
  EXPECT_EQ(second.stats().disk_hits, 1);
}

}  // namespace
}  // namespace graft
