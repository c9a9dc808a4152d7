#include "serialize/npy.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::HasSubstr;

// A .npy file built by hand from the format description: magic, version,
// little-endian header length (2 bytes for 1.0, 4 for 2.0/3.0), the dict
// padded with spaces and a final newline to a multiple of 64 bytes, data.
std::string Npy(int major, absl::string_view dict, absl::string_view data) {
  const size_t preamble = major == 1 ? 10 : 12;
  size_t len = dict.size() + 1;
  len += (64 - (preamble + len) % 64) % 64;
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < preamble - 8; ++i) {
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  }
  out.append(dict.data(), dict.size());
  out.append(len - dict.size() - 1, ' ');
  out.push_back('\n');
  out.append(data.data(), data.size());
  return out;
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

Tensor Make(DType dtype, std::vector<int64_t> dims,
            std::vector<double> values) {
  Tensor t(dtype, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) t.SetFromDouble(i, values[i]);
  return t;
}

// A fresh directory for file tests.
std::string TempDir() {
  std::string templ = ::testing::TempDir() + "npy_test_XXXXXX";
  char* dir = ::mkdtemp(templ.data());
  EXPECT_NE(dir, nullptr);
  return templ;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void WriteFile(const std::string& path, absl::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(Npy, ReadsNumPyBytesVerbatim) {
  // np.save of np.array([1, 2, 3], dtype='<i4'): a 118-byte header.
  std::string file = "\x93NUMPY";
  file += Bytes({1, 0, 118, 0});
  const std::string dict =
      "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  file += dict + std::string(118 - dict.size() - 1, ' ') + "\n";
  file += Bytes({1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0});
  ASSERT_EQ(file.size(), 128u + 12u);
  absl::StatusOr<Tensor> t = NpyFromBytes(file);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kI32);
  EXPECT_EQ(t->dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(t->ToDoubles(), (std::vector<double>{1, 2, 3}));
  // Writing the same tensor gives the same bytes.
  absl::StatusOr<std::string> bytes = NpyToBytes(*t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, file);
}

TEST(Npy, ReadsEveryDtypeAndVersion) {
  struct Case {
    std::string file;
    DType dtype;
    std::vector<int64_t> dims;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      // 2.0: 4-byte header length. 1.5 and -2 as little-endian doubles.
      {Npy(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
           Bytes({0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0xc0})),
       DType::kF64,
       {2},
       {1.5, -2}},
      // 3.0, rank 0: 0.5f = 0x3f000000.
      {Npy(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
           Bytes({0, 0, 0, 0x3f})),
       DType::kF32,
       {},
       {0.5}},
      // Half: 1.0 = 0x3c00, -2.0 = 0xc000.
      {Npy(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }",
           Bytes({0x00, 0x3c, 0x00, 0xc0})),
       DType::kF16,
       {2},
       {1, -2}},
      {Npy(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 1), }",
           Bytes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})),
       DType::kI64,
       {1, 1},
       {-2}},
      {Npy(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }",
           Bytes({0xff, 0x7f})),
       DType::kI8,
       {2},
       {-1, 127}},
      {Npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 0), }",
           ""),
       DType::kU8,
       {2, 0},
       {}},
      // Keys in another order, double quotes, no trailing comma; a bool
      // byte of 2 reads as true.
      {Npy(1, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"|b1\"}",
           Bytes({0, 1, 2})),
       DType::kBool,
       {3},
       {0, 1, 1}},
      // Fortran order is the same bytes when only one dim exceeds 1.
      {Npy(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2), }",
           Bytes({7, 0, 0, 0, 8, 0, 0, 0})),
       DType::kI32,
       {1, 2},
       {7, 8}},
      // Native order '=' and a one-byte type with '<'.
      {Npy(1, "{'descr': '=i4', 'fortran_order': False, 'shape': (1,), }",
           Bytes({5, 0, 0, 0})),
       DType::kI32,
       {1},
       {5}},
      {Npy(1, "{'descr': '<u1', 'fortran_order': False, 'shape': (1,), }",
           Bytes({200})),
       DType::kU8,
       {1},
       {200}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file.substr(10, 60));
    absl::StatusOr<Tensor> t = NpyFromBytes(c.file);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype(), c.dtype);
    EXPECT_EQ(t->dims(), c.dims);
    EXPECT_EQ(t->ToDoubles(), c.values);
  }
}

TEST(Npy, RoundTripsEveryDtype) {
  const std::string dir = TempDir();
  const std::vector<DType> dtypes = {DType::kF32, DType::kF64, DType::kF16,
                                     DType::kI32, DType::kI64, DType::kI8,
                                     DType::kU8,  DType::kBool};
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {5}, {2, 3}, {0, 3}, {2, 1, 2}};
  std::mt19937 rng(std::random_device{}());
  for (DType dtype : dtypes) {
    for (const auto& dims : shapes) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " rank ", dims.size()));
      Tensor t(dtype, dims);
      for (int64_t i = 0; i < t.NumElements(); ++i) {
        t.SetFromDouble(i, static_cast<double>(rng() % 200) - 100.25);
      }
      absl::StatusOr<std::string> bytes = NpyToBytes(t);
      ASSERT_TRUE(bytes.ok());
      // The data starts 64-byte aligned.
      EXPECT_EQ((bytes->size() - t.NumBytes()) % 64, 0u);
      absl::StatusOr<Tensor> back = NpyFromBytes(*bytes);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_TRUE(back->BitwiseEqual(t));
      const std::string path = dir + "/t.npy";
      ASSERT_TRUE(WriteNpy(path, t).ok());
      absl::StatusOr<Tensor> from_file = ReadNpy(path);
      ASSERT_TRUE(from_file.ok()) << from_file.status();
      EXPECT_TRUE(from_file->BitwiseEqual(t));
    }
  }
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"t.npy"}));
}

TEST(Npy, Bf16IsWrittenAsF32) {
  Tensor t = Make(DType::kBF16, {3}, {1.5, -0.0078125, 3e38});
  absl::StatusOr<std::string> bytes = NpyToBytes(t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_THAT(*bytes, HasSubstr("'descr': '<f4'"));
  absl::StatusOr<Tensor> back = NpyFromBytes(*bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->dtype(), DType::kF32);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->GetAsDouble(i), t.GetAsDouble(i));
  }
}

TEST(Npy, RefusesWithClearMessages) {
  const std::string data4 = Bytes({0, 0, 0, 0});
  struct Case {
    std::string file;
    std::string message;
  };
  std::string bad_version = Npy(
      1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", data4);
  bad_version[6] = 4;
  std::string minor = bad_version;
  minor[6] = 1;
  minor[7] = 1;
  std::string huge_header = "\x93NUMPY";
  huge_header += Bytes({2, 0, 0, 0, 0x20, 0});  // 2 MiB.
  std::string non_ascii = Npy(
      1,
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '\xc3\xa9': 1}",
      data4);
  const std::vector<Case> cases = {
      {"NUMPY\x01\x00", "magic"},
      {"\x93NUMPX" + Bytes({1, 0, 10, 0}) + "{}", "magic"},
      {bad_version, "format version 4.0"},
      {minor, "format version 1.1"},
      {huge_header, "header claims"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
           data4 + data4 + data4 + data4),
       "Fortran"},
      {Npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
           data4),
       "big-endian"},
      {Npy(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
           Bytes({0, 0, 0, 0, 0, 0, 0, 0})),
       "object arrays"},
      {Npy(1,
           "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
           data4),
       "structured"},
      {Npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
           data4 + data4),
       "dtype '<c8' is not supported"},
      {Npy(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
           data4),
       "'<u2'"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""),
       "negative"},
      {Npy(1,
           "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, "
           "1099511627776), }",
           ""),
       "too large"},
      {Npy(1,
           "{'descr': '<f4', 'fortran_order': False, 'shape': "
           "(99999999999999999999,), }",
           ""),
       "too large"},
      {Npy(1, "{'descr': '<f4', 'shape': (1,), }", data4), "needs the keys"},
      {Npy(1,
           "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1, }",
           data4),
       "unexpected key 'x'"},
      {Npy(1,
           "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': "
           "(1,), }",
           data4),
       "twice"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
           data4),
       "truncated"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
           data4 + "x"),
       "holds 5"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': 3, }", data4),
       "tuple"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1), }",
           data4),
       "tuple"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", data4),
       "True or False"},
      {Npy(1, "{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }",
           data4),
       "expected"},
      {Npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x",
           data4),
       "after the dict"},
      {non_ascii, "ASCII"},
      {Npy(1, "['descr']", data4), "not a dict"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    absl::StatusOr<Tensor> t = NpyFromBytes(c.file, "in.npy");
    ASSERT_FALSE(t.ok());
    EXPECT_THAT(t.status().message(), HasSubstr(c.message));
    EXPECT_THAT(t.status().message(), HasSubstr("in.npy"));
  }
}

TEST(Npy, EveryTruncationFails) {
  Tensor t = Make(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  absl::StatusOr<std::string> bytes = NpyToBytes(t);
  ASSERT_TRUE(bytes.ok());
  const std::string dir = TempDir();
  const std::string path = dir + "/cut.npy";
  for (size_t n = 0; n < bytes->size(); ++n) {
    SCOPED_TRACE(n);
    EXPECT_FALSE(NpyFromBytes(absl::string_view(*bytes).substr(0, n)).ok());
    WriteFile(path, absl::string_view(*bytes).substr(0, n));
    EXPECT_FALSE(ReadNpy(path).ok());
  }
  WriteFile(path, *bytes);
  EXPECT_TRUE(ReadNpy(path).ok());
}

TEST(Npy, GarbageNeverCrashes) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  Tensor t = Make(DType::kI64, {3}, {1, 2, 3});
  absl::StatusOr<std::string> bytes = NpyToBytes(t);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const std::string good = *std::move(bytes);
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    // Flip a few bytes, mostly in the preamble and header.
    const int flips = 1 + rng() % 4;
    for (int f = 0; f < flips; ++f) {
      const size_t at = rng() % (i % 2 == 0 ? 128 : s.size());
      s[at] = static_cast<char>(rng() % 256);
    }
    absl::StatusOr<Tensor> r = NpyFromBytes(s);
    if (r.ok()) {
      EXPECT_LE(r->NumBytes(), s.size());
    }
  }
  for (int i = 0; i < 300; ++i) {
    std::string s = "\x93NUMPY";
    const size_t n = rng() % 200;
    for (size_t k = 0; k < n; ++k) s.push_back(static_cast<char>(rng() % 256));
    (void)NpyFromBytes(s);
  }
}

TEST(Npy, FileErrors) {
  const std::string dir = TempDir();
  absl::StatusOr<Tensor> missing = ReadNpy(dir + "/nope.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.npy"));
  EXPECT_FALSE(ReadNpy(dir).ok());
  Tensor t = Make(DType::kF32, {1}, {1});
  // A missing directory: nothing is created.
  EXPECT_FALSE(WriteNpy(dir + "/no/such/dir/t.npy", t).ok());
  // The target is a directory: the rename fails and the temporary file is
  // removed.
  ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0755), 0);
  absl::Status s = WriteNpy(dir + "/sub", t);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("sub"));
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"sub"}));
  EXPECT_TRUE(ListDir(dir + "/sub").empty());
  // Overwriting replaces the old file whole.
  const std::string path = dir + "/x.npy";
  ASSERT_TRUE(
      WriteNpy(path, Make(DType::kF64, {100}, std::vector<double>(100, 1)))
          .ok());
  ASSERT_TRUE(WriteNpy(path, t).ok());
  absl::StatusOr<Tensor> back = ReadNpy(path);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->BitwiseEqual(t));
  EXPECT_EQ(ListDir(dir), (std::vector<std::string>{"sub", "x.npy"}));
  EXPECT_FALSE(WriteNpy(path, Tensor()).ok());
}

}  // namespace
}  // namespace graft
