#ifndef GRAFT_SERIALIZE_NPY_H_
#define GRAFT_SERIALIZE_NPY_H_

// NumPy .npy files: the format `graft run` reads inputs from and writes
// outputs to.
//
// Reading accepts format versions 1.0, 2.0 and 3.0 and the dtypes graft has:
// <f4 <f8 <f2 <i4 <i8 |i1 |u1 |b1 ('=' and, for one-byte types, '<' '>' '|'
// are accepted too). It refuses, with a message saying what to do:
// Fortran-ordered arrays of more than one non-trivial dim, big-endian data,
// object arrays (they hold pickled Python objects), structured and other
// dtypes, and every malformed file: bad magic, a header over 1 MiB,
// negative or overflowing shapes, and data that is not exactly the size the
// header says. Bool bytes other than 0 and 1 read as true.
//
// Writing uses version 1.0 (2.0 when the header needs it) with C order.
// NumPy has no bfloat16, so bf16 tensors are written as <f4 (exactly: every
// bf16 value is an f32 value); reading such a file gives f32. Files are
// written to a temporary file in the same directory and renamed into place,
// so a failed write leaves no partial file.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/tensor.h"

namespace graft {

absl::StatusOr<Tensor> ReadNpy(const std::string& path);
absl::Status WriteNpy(const std::string& path, const Tensor& tensor);

// The same, in memory. `name` is used in error messages.
absl::StatusOr<Tensor> NpyFromBytes(absl::string_view bytes,
                                    absl::string_view name = "<memory>");
absl::StatusOr<std::string> NpyToBytes(const Tensor& tensor);

}  // namespace graft

#endif  // GRAFT_SERIALIZE_NPY_H_
