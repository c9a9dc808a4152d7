#include "serialize/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/atomic_file.h"
#include "support/status_macros.h"

namespace graft {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy I/O copies little-endian data as is");

constexpr absl::string_view kMagic = "\x93NUMPY";
// NumPy itself refuses headers over 10000 bytes unless told otherwise; a
// generous bound keeps a hostile length from allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;
constexpr int kMaxRank = 64;
// Keeps byte counts far from int64 overflow.
constexpr int64_t kMaxDataBytes = int64_t{1} << 56;

absl::Status Error(absl::string_view name, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": not a valid .npy file: ", message));
}

absl::Status Unsupported(absl::string_view name, absl::string_view message) {
  return absl::UnimplementedError(absl::StrCat(name, ": ", message));
}

// What the header says about the data that follows it.
struct NpyHeader {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  size_t data_offset = 0;  // Where the data starts.
  int64_t data_bytes = 0;
};

// The size of the fixed preamble (magic, version, header length) and the
// offset where data starts, from the first bytes of a file. `start` must
// hold at least 12 bytes or the whole file.
absl::StatusOr<size_t> DataOffset(absl::string_view start,
                                  absl::string_view name) {
  if (start.size() < kMagic.size() && kMagic.substr(0, start.size()) == start) {
    return Error(name, "the file ends inside the preamble");
  }
  if (start.size() < kMagic.size() ||
      start.substr(0, kMagic.size()) != kMagic) {
    return Error(name, "it does not start with the magic \\x93NUMPY");
  }
  if (start.size() < 10)
    return Error(name, "the file ends inside the preamble");
  const uint8_t major = static_cast<uint8_t>(start[6]);
  const uint8_t minor = static_cast<uint8_t>(start[7]);
  if (major < 1 || major > 3 || minor != 0) {
    return Unsupported(name, absl::StrCat("format version ", major, ".", minor,
                                          " is not supported (1.0, 2.0 and "
                                          "3.0 are)"));
  }
  auto byte = [&](size_t i) {
    return static_cast<uint64_t>(static_cast<uint8_t>(start[i]));
  };
  uint64_t header_len;
  size_t preamble;
  if (major == 1) {
    header_len = byte(8) | byte(9) << 8;
    preamble = 10;
  } else {
    if (start.size() < 12)
      return Error(name, "the file ends inside the preamble");
    header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    preamble = 12;
  }
  if (header_len > kMaxHeaderBytes) {
    return Error(
        name, absl::StrCat("the header claims ", header_len, " bytes (at most ",
                           kMaxHeaderBytes, " are accepted)"));
  }
  return preamble + header_len;
}

// A parser for the header: a Python dict literal with the keys 'descr',
// 'fortran_order' and 'shape'.
class HeaderParser {
 public:
  HeaderParser(absl::string_view text, absl::string_view name)
      : text_(text), name_(name) {}

  absl::StatusOr<NpyHeader> Parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<std::vector<int64_t>> shape;
    SkipSpace();
    if (!Eat('{')) return Fail("the header is not a dict");
    SkipSpace();
    while (!Eat('}')) {
      ASSIGN_OR_RETURN(std::string key, String());
      SkipSpace();
      if (!Eat(':')) return Fail("expected ':' after a key");
      SkipSpace();
      if (key == "descr") {
        if (descr) return Fail("key 'descr' appears twice");
        if (Peek() == '[') {
          return Unsupported(name_,
                             "structured dtypes (a list descr) are "
                             "not supported; save one plain array "
                             "per field");
        }
        ASSIGN_OR_RETURN(std::string v, String());
        descr = v;
      } else if (key == "fortran_order") {
        if (fortran) return Fail("key 'fortran_order' appears twice");
        ASSIGN_OR_RETURN(bool v, Bool());
        fortran = v;
      } else if (key == "shape") {
        if (shape) return Fail("key 'shape' appears twice");
        ASSIGN_OR_RETURN(std::vector<int64_t> v, Tuple());
        shape = std::move(v);
      } else {
        return Fail(absl::StrCat("unexpected key '", key, "'"));
      }
      SkipSpace();
      if (Eat(',')) {
        SkipSpace();
      } else if (Peek() != '}') {
        return Fail("expected ',' or '}' in the header dict");
      }
    }
    SkipSpace();
    if (pos_ != text_.size()) return Fail("unexpected text after the dict");
    if (!descr || !fortran || !shape) {
      return Fail(
          "the header needs the keys 'descr', 'fortran_order' and "
          "'shape'");
    }
    NpyHeader header;
    absl::StatusOr<DType> dtype = ParseDescr(*descr);
    if (!dtype.ok()) return dtype.status();
    header.dtype = *dtype;
    header.dims = *std::move(shape);
    if (*fortran) {
      // With at most one dim above 1, Fortran and C order are the same bytes.
      int big = 0;
      for (int64_t d : header.dims) big += d > 1 ? 1 : 0;
      if (big > 1) {
        return Unsupported(name_,
                           "Fortran-ordered arrays are not supported; "
                           "save np.ascontiguousarray(a) instead");
      }
    }
    return header;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  absl::Status Fail(absl::string_view message) const {
    return Error(name_, absl::StrCat(message, " (header offset ", pos_, ")"));
  }

  absl::StatusOr<std::string> String() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Fail("expected a quoted string");
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Fail("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    if (s.find('\\') != std::string::npos) {
      return Fail("escapes in strings are not supported");
    }
    pos_ = end + 1;
    return s;
  }

  absl::StatusOr<bool> Bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return Fail("expected True or False");
  }

  absl::StatusOr<int64_t> Int() {
    if (Peek() == '-') return Fail("a dimension is negative");
    if (Peek() < '0' || Peek() > '9') return Fail("expected an integer");
    int64_t v = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      const int digit = Peek() - '0';
      if (v > (INT64_MAX - digit) / 10) return Fail("a dimension is too large");
      v = v * 10 + digit;
      ++pos_;
    }
    return v;
  }

  // A tuple of ints: "()", "(3,)", "(2, 3)" or "(2, 3,)".
  absl::StatusOr<std::vector<int64_t>> Tuple() {
    if (!Eat('(')) return Fail("the shape must be a tuple");
    std::vector<int64_t> dims;
    bool trailing_comma = false;
    SkipSpace();
    while (!Eat(')')) {
      if (dims.size() >= static_cast<size_t>(kMaxRank)) {
        return Fail(
            absl::StrCat("the shape has more than ", kMaxRank, " dims"));
      }
      ASSIGN_OR_RETURN(int64_t d, Int());
      dims.push_back(d);
      SkipSpace();
      trailing_comma = Eat(',');
      SkipSpace();
      if (!trailing_comma && Peek() != ')') {
        return Fail("expected ',' or ')' in the shape");
      }
    }
    if (dims.size() == 1 && !trailing_comma) {
      return Fail("the shape must be a tuple, e.g. (3,)");
    }
    return dims;
  }

  absl::StatusOr<DType> ParseDescr(absl::string_view descr) const {
    char order = '=';
    absl::string_view type = descr;
    if (!type.empty() &&
        absl::string_view("<>|=").find(type[0]) != absl::string_view::npos) {
      order = type[0];
      type.remove_prefix(1);
    }
    if (type == "O") {
      return Unsupported(name_,
                         "object arrays ('O') hold pickled Python "
                         "objects and are not supported; save a "
                         "numeric array");
    }
    struct Known {
      absl::string_view type;
      DType dtype;
    };
    static constexpr Known kKnown[] = {
        {"f4", DType::kF32}, {"f8", DType::kF64},  {"f2", DType::kF16},
        {"i4", DType::kI32}, {"i8", DType::kI64},  {"i1", DType::kI8},
        {"u1", DType::kU8},  {"b1", DType::kBool},
    };
    for (const Known& k : kKnown) {
      if (k.type != type) continue;
      const bool one_byte = DTypeSize(k.dtype) == 1;
      if (!one_byte && order == '>') {
        return Unsupported(name_,
                           absl::StrCat("big-endian data ('", descr,
                                        "') is not supported; save "
                                        "a.astype(a.dtype.newbyteorder('<'))"));
      }
      if (!one_byte && order == '|') break;
      return k.dtype;
    }
    return Unsupported(name_,
                       absl::StrCat("dtype '", descr,
                                    "' is not supported; graft "
                                    "reads <f4 <f8 <f2 <i4 <i8 |i1 |u1 |b1"));
  }

  absl::string_view text_;
  absl::string_view name_;
  size_t pos_ = 0;
};

// Parses the preamble and header at the start of `bytes`, which must extend
// at least to the end of the header.
absl::StatusOr<NpyHeader> ParseHeader(absl::string_view bytes, size_t offset,
                                      absl::string_view name) {
  if (bytes.size() < offset)
    return Error(name, "the file ends inside the header");
  const size_t preamble = static_cast<uint8_t>(bytes[6]) == 1 ? 10 : 12;
  absl::string_view text = bytes.substr(preamble, offset - preamble);
  if (static_cast<uint8_t>(bytes[6]) < 3) {
    for (char c : text) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        return Error(name, "a version 1.0/2.0 header must be ASCII");
      }
    }
  }
  absl::StatusOr<NpyHeader> header = HeaderParser(text, name).Parse();
  if (!header.ok()) return header.status();
  int64_t n = DTypeSize(header->dtype);
  bool zero = false;
  for (int64_t d : header->dims) zero = zero || d == 0;
  for (int64_t d : header->dims) {
    if (zero) break;
    if (n > kMaxDataBytes / d) {
      return Error(name, "the shape is too large");
    }
    n *= d;
  }
  header->data_bytes = zero ? 0 : n;
  header->data_offset = offset;
  return header;
}

absl::Status CheckDataSize(const NpyHeader& header, uint64_t total,
                           absl::string_view name) {
  const uint64_t expected = header.data_offset + header.data_bytes;
  if (total != expected) {
    return Error(
        name, absl::StrCat(
                  "the header describes ", header.data_bytes,
                  " bytes of data, but the file holds ",
                  total >= header.data_offset ? total - header.data_offset : 0,
                  total < expected ? " (truncated)" : ""));
  }
  return absl::OkStatus();
}

// Bool bytes must be 0 or 1 in graft; NumPy may hold others.
void NormalizeBools(Tensor& t) {
  if (t.dtype() != DType::kBool) return;
  uint8_t* p = t.data<uint8_t>();
  for (int64_t i = 0; i < t.NumElements(); ++i) p[i] = p[i] != 0 ? 1 : 0;
}

absl::string_view Descr(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "<f4";
    case DType::kBF16:
    case DType::kF8E4M3:
      return "<f4";  // Widened: NumPy has no bfloat16 or float8.
    case DType::kF64:
      return "<f8";
    case DType::kF16:
      return "<f2";
    case DType::kI32:
      return "<i4";
    case DType::kI64:
      return "<i8";
    case DType::kI8:
      return "|i1";
    case DType::kU8:
      return "|u1";
    case DType::kBool:
      return "|b1";
  }
  return "<f4";
}

// The preamble and padded header for `tensor`.
std::string MakeHeader(const Tensor& tensor) {
  std::string shape;
  if (tensor.rank() == 1) {
    shape = absl::StrCat("(", tensor.dims()[0], ",)");
  } else {
    shape = absl::StrCat("(", absl::StrJoin(tensor.dims(), ", "), ")");
  }
  std::string dict =
      absl::StrCat("{'descr': '", Descr(tensor.dtype()),
                   "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Data starts 64-byte aligned, as NumPy writes it; the header ends in \n.
  size_t preamble = 10;
  size_t total = preamble + dict.size() + 1;
  if ((total + 63) / 64 * 64 - preamble > 65535) preamble = 12;
  total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  const size_t header_len = total - preamble;
  dict.append(header_len - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic);
  out.push_back(static_cast<char>(preamble == 10 ? 1 : 2));
  out.push_back(0);
  out.push_back(static_cast<char>(header_len & 0xff));
  out.push_back(static_cast<char>((header_len >> 8) & 0xff));
  if (preamble == 12) {
    out.push_back(static_cast<char>((header_len >> 16) & 0xff));
    out.push_back(static_cast<char>((header_len >> 24) & 0xff));
  }
  return out + dict;
}

// The bytes of the data section: the tensor's own, or bf16 and f8e4m3
// widened to f32.
Tensor DataToWrite(const Tensor& tensor) {
  if (tensor.dtype() != DType::kBF16 && tensor.dtype() != DType::kF8E4M3) return tensor;
  Tensor wide(DType::kF32, tensor.dims());
  float* out = wide.data<float>();
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    out[i] = static_cast<float>(tensor.GetAsDouble(i));
  }
  return wide;
}

std::string ErrnoText() { return std::strerror(errno); }

// Reads exactly `size` bytes at the current offset; false at EOF or error.
bool ReadFully(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteFully(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Closes a file descriptor when it goes out of scope.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<Tensor> NpyFromBytes(absl::string_view bytes,
                                    absl::string_view name) {
  ASSIGN_OR_RETURN(size_t offset, DataOffset(bytes, name));
  ASSIGN_OR_RETURN(NpyHeader header, ParseHeader(bytes, offset, name));
  RETURN_IF_ERROR(CheckDataSize(header, bytes.size(), name));
  Tensor t(header.dtype, header.dims);
  if (header.data_bytes > 0) {
    std::memcpy(t.raw_data(), bytes.data() + header.data_offset,
                header.data_bytes);
  }
  NormalizeBools(t);
  return t;
}

absl::StatusOr<std::string> NpyToBytes(const Tensor& tensor) {
  if (!tensor.defined()) {
    return absl::InvalidArgumentError("cannot write an undefined tensor");
  }
  Tensor data = DataToWrite(tensor);
  std::string out = MakeHeader(tensor);
  out.append(static_cast<const char*>(data.raw_data()), data.NumBytes());
  return out;
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot open '", path, "': ", ErrnoText()));
  }
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string start(std::min<uint64_t>(size, 12), '\0');
  if (!ReadFully(fd, start.data(), start.size())) {
    return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
  }
  ASSIGN_OR_RETURN(size_t offset, DataOffset(start, path));
  if (size < offset) return Error(path, "the file ends inside the header");
  std::string head = start;
  head.resize(offset);
  if (offset > start.size() &&
      !ReadFully(fd, head.data() + start.size(), offset - start.size())) {
    return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
  }
  if (offset < start.size()) {
    // A header shorter than the 12 bytes read: go back to the data.
    if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
      return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
    }
  }
  ASSIGN_OR_RETURN(NpyHeader header, ParseHeader(head, offset, path));
  RETURN_IF_ERROR(CheckDataSize(header, size, path));
  Tensor t(header.dtype, header.dims);
  if (header.data_bytes > 0 &&
      !ReadFully(fd, t.raw_data(), static_cast<size_t>(header.data_bytes))) {
    return absl::DataLossError(
        absl::StrCat("cannot read the data of '", path, "'"));
  }
  NormalizeBools(t);
  return t;
}

absl::Status WriteNpy(const std::string& path, const Tensor& tensor) {
  if (!tensor.defined()) {
    return absl::InvalidArgumentError("cannot write an undefined tensor");
  }
  const Tensor data = DataToWrite(tensor);
  ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  RETURN_IF_ERROR(file.Write(MakeHeader(tensor)));
  RETURN_IF_ERROR(file.Write(data.raw_data(), data.NumBytes()));
  RETURN_IF_ERROR(file.Finish());
  return file.Publish();
}

}  // namespace graft
