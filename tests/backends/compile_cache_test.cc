#include "backends/compile_cache.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/disk_cache.h"
#include "gmock/gmock.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "tests/backends/cache_dirs.h"
#include "support/status_matchers.h"
#include "tests/backends/model_files.h"
#include "tests/backends/test_backends.h"

namespace graft::backend_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr absl::string_view kMlp = R"(
tensor w : f32[16,8] = random(seed=1)
tensor b : f32[16] = random(seed=2)

graph():
    %x : f32[batch,8] = placeholder[target=x]
    %w : f32[16,8] = get_attr[target=w]
    %b : f32[16] = get_attr[target=b]
    %fc : f32[batch,16] = call_function[target=linear](args = (%x, %w), kwargs = {bias: %b})
    %relu : f32[batch,16] = call_function[target=relu](args = (%fc,), kwargs = {})
    return relu
)";

Module Mlp() {
  absl::StatusOr<Module> m = ParseModule(kMlp);
  EXPECT_OK(m);
  return *std::move(m);
}

using backend_test::FilesIn;
using backend_test::FreshDir;

TEST(CompileCache, SymbolicBatchCompilesOnce) {
  Module m = Mlp();
  interp::InterpBackend backend;
  CompileCache cache;
  CompileOptions options;  // The placeholders' own, symbolic, types.
  for (int64_t batch : {1, 2, 5, 2}) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Executable> e,
                         cache.GetOrCompile(backend, m, options));
    std::vector<Tensor> in = RandomInputs(e->input_signature(), 1, batch);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, e->Run(in));
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{batch, 16}));
  }
  const CompileCacheStats stats = cache.stats();
  EXPECT_EQ(stats.compiles, 1);
  EXPECT_EQ(stats.memory_hits, 3);
  EXPECT_EQ(stats.disk_hits, 0);
  EXPECT_GT(stats.compile_seconds, 0);
}

TEST(CompileCache, KeyCoversModuleOptionsAndBackend) {
  Module m = Mlp();
  interp::InterpBackend interp;
  TextBackend text;
  CompileCache cache;
  ASSERT_OK(cache.GetOrCompile(interp, m, {}));
  ASSERT_OK(cache.GetOrCompile(text, m, {}));  // Another backend.
  CompileOptions fixed;
  fixed.input_types = {TensorType{DType::kF32, {4, 8}}};
  ASSERT_OK(cache.GetOrCompile(interp, m, fixed));  // Another signature.
  Tensor w = m.FindTensor("w")->Clone();
  w.data<float>()[5] += 1;
  m.SetTensor("w", w);
  ASSERT_OK(cache.GetOrCompile(interp, m, {}));  // Another weight.
  EXPECT_EQ(cache.stats().compiles, 4);
  EXPECT_EQ(cache.stats().memory_hits, 0);
  cache.CountTrace();
  EXPECT_EQ(cache.stats().traces, 1);
}

TEST(CompileCache, SecondProcessLoadsFromDisk) {
  const std::string dir = FreshDir("disk");
  Module m = Mlp();
  TextBackend backend;
  std::vector<Tensor> in = RandomInputs(
      {ValueSignature{"x", TensorType{DType::kF32, {3, 8}}}}, 9);
  std::vector<Tensor> first;
  {
    CompileCache cache(std::make_shared<DiskCache>(dir));
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Executable> e,
                         cache.GetOrCompile(backend, m, {}));
    ASSERT_OK_AND_ASSIGN(first, e->Run(in));
    EXPECT_EQ(cache.stats().compiles, 1);
  }
  ASSERT_THAT(FilesIn(dir), SizeIs(1));
  CompileCache cache(std::make_shared<DiskCache>(dir));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Executable> e,
                       cache.GetOrCompile(backend, m, {}));
  EXPECT_EQ(cache.stats().disk_hits, 1);
  EXPECT_EQ(cache.stats().compiles, 0);
  EXPECT_EQ(backend.compiles.load(), 1);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> again, e->Run(in));
  EXPECT_TRUE(again[0].BitwiseEqual(first[0]));
}

// Flips one byte at `offset` from the end of the only entry under `dir`.
void DamageEntry(const std::string& dir, int64_t offset_from_end) {
  std::vector<std::string> files = FilesIn(dir);
  ASSERT_THAT(files, SizeIs(1));
  std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-offset_from_end, std::ios::end);
  char c;
  f.read(&c, 1);
  f.seekp(-offset_from_end, std::ios::end);
  c = static_cast<char>(c ^ 0x20);
  f.write(&c, 1);
}

TEST(CompileCache, DamagedEntryIsRebuilt) {
  const std::string dir = FreshDir("damaged");
  Module m = Mlp();
  TextBackend backend;
  {
    CompileCache cache(std::make_shared<DiskCache>(dir));
    ASSERT_OK(cache.GetOrCompile(backend, m, {}));
  }
  for (int64_t offset : {int64_t{10}, int64_t{-1}}) {
    if (offset > 0) {
      DamageEntry(dir, offset);
    } else {
      fs::resize_file(FilesIn(dir)[0], 20);  // Truncated mid-header.
    }
    CompileCache cache(std::make_shared<DiskCache>(dir));
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Executable> e,
                         cache.GetOrCompile(backend, m, {}));
    EXPECT_EQ(cache.stats().disk_damaged, 1);
    EXPECT_EQ(cache.stats().disk_hits, 0);
    EXPECT_EQ(cache.stats().compiles, 1);
    // The rebuilt entry is good again.
    CompileCache next(std::make_shared<DiskCache>(dir));
    ASSERT_OK(next.GetOrCompile(backend, m, {}));
    EXPECT_EQ(next.stats().disk_hits, 1);
  }
}

// A large entry is hashed in full once; then the file-hash memo vouches
// for it while the file is unchanged, and any write (which moves the
// file's change time) makes it hashed, and found damaged, again.
TEST(DiskCache, VouchedEntriesAreHashedOnceUntilTheyChange) {
  const std::string dir = FreshDir("vouched");
  std::string payload(3 << 20, 'p');
  for (size_t i = 0; i < payload.size(); i += 4093) payload[i] = static_cast<char>(i);
  DiskCache cache(dir);
  cache.set_vouch_after_seconds(0);
  cache.Store("k", payload);
  // The memo records only files whose change time is two seconds old.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  for (int use = 0; use < 3; ++use) {
    std::optional<DiskEntry> entry = cache.Map("k");
    ASSERT_TRUE(entry.has_value());
    EXPECT_EQ(entry->payload, payload);
  }
  EXPECT_EQ(cache.full_checks(), 1);
  EXPECT_EQ(cache.damaged(), 0);
  // One byte in the middle of the payload.
  std::vector<std::string> files = FilesIn(dir + "/v2");
  ASSERT_THAT(files, SizeIs(1));
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-static_cast<std::streamoff>(payload.size() / 2), std::ios::end);
    f.put('!');
  }
  EXPECT_FALSE(cache.Map("k").has_value());
  EXPECT_EQ(cache.full_checks(), 2);
  EXPECT_EQ(cache.damaged(), 1);
}

TEST(DiskCache, ConcurrentWritersLeaveOneGoodEntry) {
  const std::string dir = FreshDir("race");
  const std::string payload(3 << 20, 'p');
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DiskCache cache(dir);
      for (int i = 0; i < 20; ++i) cache.Store("key", payload);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_THAT(FilesIn(dir), SizeIs(1));  // No temporary files left.
  DiskCache cache(dir);
  std::optional<std::string> got = cache.Load("key");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, payload);
  EXPECT_EQ(cache.damaged(), 0);
}

TEST(DiskCache, UnwritableDirectoryWarnsOnceAndStillCompiles) {
  const std::string base = FreshDir("readonly");
  fs::create_directories(base);
  std::ofstream(base + "/file") << "not a directory";
  auto disk = std::make_shared<DiskCache>(base + "/file/cache");
  std::vector<std::string> warnings;
  disk->set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
  CompileCache cache(disk);
  TextBackend backend;
  Module m = Mlp();
  ASSERT_OK(cache.GetOrCompile(backend, m, {}));
  CompileOptions other;
  other.input_types = {TensorType{DType::kF32, {2, 8}}};
  ASSERT_OK(cache.GetOrCompile(backend, m, other));
  EXPECT_EQ(cache.stats().compiles, 2);
  ASSERT_THAT(warnings, SizeIs(1));
  EXPECT_THAT(warnings[0], HasSubstr(base + "/file/cache"));
}

// A full disk, as a file size limit: every write fails with EFBIG.
TEST(DiskCache, FullDiskWarnsOnceAndLeavesNoFiles) {
  const std::string dir = FreshDir("full");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{64, 64};
    setrlimit(RLIMIT_FSIZE, &limit);
    auto disk = std::make_shared<DiskCache>(dir);
    int warnings = 0;
    disk->set_warning_sink([&](const std::string&) { ++warnings; });
    CompileCache cache(disk);
    TextBackend backend;
    Module m = Mlp();
    CompileOptions other;
    other.input_types = {TensorType{DType::kF32, {2, 8}}};
    const bool ok = cache.GetOrCompile(backend, m, {}).ok() &&
                    cache.GetOrCompile(backend, m, other).ok();
    _exit(ok && warnings == 1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child failed to compile or did not warn exactly once";
  EXPECT_THAT(FilesIn(dir), SizeIs(0));
}

TEST(DiskCache, EvictsLeastRecentlyUsed) {
  const std::string dir = FreshDir("lru");
  const std::string payload(1000, 'x');
  DiskCache cache(dir, 2500);  // Room for two entries.
  cache.Store("a", payload);
  cache.Store("b", payload);
  // "a" was stored first, but is used after "b".
  std::vector<std::string> files = FilesIn(dir);
  ASSERT_THAT(files, SizeIs(2));
  for (const std::string& f : files) {
    fs::last_write_time(f, fs::file_time_type::clock::now() -
                               std::chrono::hours(1));
  }
  ASSERT_TRUE(cache.Load("a").has_value());
  cache.Store("c", payload);
  EXPECT_TRUE(cache.Load("a").has_value());
  EXPECT_FALSE(cache.Load("b").has_value());
  EXPECT_TRUE(cache.Load("c").has_value());
  ASSERT_OK_AND_ASSIGN(DiskCacheInfo info, cache.Info());
  EXPECT_EQ(info.entries, 2);
  EXPECT_LE(info.bytes, 2500u);
  ASSERT_OK(cache.Clear());
  ASSERT_OK_AND_ASSIGN(info, cache.Info());
  EXPECT_EQ(info.entries, 0);
  EXPECT_FALSE(cache.Load("a").has_value());
}

// Background stores: a load waits for the stores queued before it, the
// destructor for all of them; payloads come back 64-byte aligned.
TEST(DiskCache, BackgroundStoresAreSeenByLoadsAndFinishedOnDestruction) {
  const std::string dir = FreshDir("background");
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  {
    DiskCache cache(dir);
    cache.StoreInBackground("first", big);
    std::optional<DiskEntry> entry = cache.Map("first");
    ASSERT_TRUE(entry.has_value());
    EXPECT_EQ(entry->payload, big);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(entry->payload.data()) % 64, 0u);
    for (int i = 0; i < 5; ++i) cache.StoreInBackground(absl::StrCat("k", i), big.substr(i));
  }
  DiskCache reopened(dir);
  for (int i = 0; i < 5; ++i) {
    std::optional<std::string> got = reopened.Load(absl::StrCat("k", i));
    ASSERT_TRUE(got.has_value()) << i;
    EXPECT_EQ(*got, big.substr(i));
  }
  ASSERT_OK(reopened.Clear());
}

// A payload in parts is stored as their concatenation, in the foreground
// and in the background (where the parts' keep-alive holds their memory
// until written).
TEST(DiskCache, PayloadInPartsReadsAsItsConcatenation) {
  const std::string dir = FreshDir("parts");
  auto owned = std::make_shared<std::vector<std::string>>(
      std::vector<std::string>{std::string(5 << 20, 'a'), "b", "", std::string(100, 'c')});
  PayloadParts parts;
  for (const std::string& s : *owned) parts.parts.push_back(s);
  parts.keep_alive = owned;
  const std::string joined = parts.Join();
  {
    DiskCache cache(dir);
    cache.Store("now", parts);
    cache.StoreInBackground("later", std::move(parts));
    owned.reset();  // The queued store keeps the parts' memory.
  }
  DiskCache reopened(dir);
  for (const char* key : {"now", "later"}) {
    std::optional<std::string> got = reopened.Load(key);
    ASSERT_TRUE(got.has_value()) << key;
    EXPECT_EQ(*got, joined) << key;
  }
  ASSERT_OK(reopened.Clear());
}

// A process forked while a background store is being written does not
// wait for it (its parent writes it): the child's first Info returns.
TEST(DiskCache, AForkedChildDoesNotWaitForItsParentsStores) {
  const std::string dir = FreshDir("fork");
  DiskCache cache(dir);
  cache.StoreInBackground("big", std::string(size_t{64} << 20, 'x'));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // A hang ends the child with SIGALRM.
    DiskCache again(dir);
    _exit(again.Info().ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "the child hung or crashed (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_OK(DiskCache(dir).Clear());
}

// graft cache clear also removes the entries of an older format.
TEST(DiskCache, ClearRemovesOlderFormats) {
  const std::string dir = FreshDir("older");
  fs::create_directories(dir + "/v1");
  std::ofstream(dir + "/v1/old.entry") << "an entry of format 1";
  DiskCache cache(dir);
  ASSERT_OK(cache.Clear());
  EXPECT_FALSE(fs::exists(dir + "/v1"));
}

TEST(DiskCache, DefaultDirFollowsTheEnvironment) {
  const char* before = std::getenv("GRAFT_CACHE_DIR");
  const std::string saved = before == nullptr ? "" : before;
  setenv("GRAFT_CACHE_DIR", "/somewhere/else", 1);
  EXPECT_EQ(DiskCache::DefaultDir(), "/somewhere/else");
  unsetenv("GRAFT_CACHE_DIR");
  const char* home = std::getenv("HOME");
  if (home != nullptr && std::getenv("XDG_CACHE_HOME") == nullptr) {
    EXPECT_EQ(DiskCache::DefaultDir(), absl::StrCat(home, "/.cache/graft"));
  }
  if (before != nullptr) setenv("GRAFT_CACHE_DIR", saved.c_str(), 1);
}

TEST(DiskCache, UnreadableEntriesAreDiscardedAndCounted) {
  const std::string dir = FreshDir("unreadable");
  // Whole and checksummed, but not what the backend can read.
  DiskCache disk(dir);
  Module m = Mlp();
  TextBackend backend;
  disk.Store(CompileCache::Key(backend, m, {}), "not a module");
  CompileCache cache(std::make_shared<DiskCache>(dir));
  ASSERT_OK(cache.GetOrCompile(backend, m, {}));
  EXPECT_EQ(cache.stats().disk_damaged, 1);
  EXPECT_EQ(cache.stats().compiles, 1);
  // A header whose lengths add up past the file is damage, not a crash.
  const std::string path = FilesIn(dir)[0];
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);
    const uint32_t huge = 0xffffffffu;
    f.write(reinterpret_cast<const char*>(&huge), sizeof(huge));
    f.seekp(16);
    const uint64_t wrap = ~uint64_t{0} - 8;
    f.write(reinterpret_cast<const char*>(&wrap), sizeof(wrap));
  }
  DiskCache again(dir);
  EXPECT_FALSE(again.Load(CompileCache::Key(backend, m, {})).has_value());
  EXPECT_EQ(again.damaged(), 1);
}

TEST(DiskCache, AnUnreadableDirectoryIsAnError) {
  const std::string base = FreshDir("unsearchable");
  fs::create_directories(base);
  std::ofstream(base + "/v2") << "a file where the entries' folder should be";
  DiskCache cache(base);
  EXPECT_THAT(cache.Info(),
              testing::StatusIs(absl::StatusCode::kPermissionDenied,
                                HasSubstr("cannot read " + base + "/v2")));
  EXPECT_THAT(cache.Clear(),
              testing::StatusIs(absl::StatusCode::kPermissionDenied));
}

}  // namespace
}  // namespace graft::backend_test
