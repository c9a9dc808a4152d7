#ifndef GRAFT_RUNTIME_ELF_OBJECT_H_
#define GRAFT_RUNTIME_ELF_OBJECT_H_

// Loads the object code of an ahead-of-time compiled model (an x86-64 ELF
// relocatable object, as LLVM emits it for the small code model) into
// memory and links it, so that the runtime can call it without LLVM.
//
// The input is untrusted: every offset, size and index in it is checked,
// and a damaged object is an error, never a crash. What a well-formed
// object's code does once called is of course not checked.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft::runtime {

// The address of a symbol the object uses but does not define (expf,
// memcpy, the runtime's entry points); null when unknown.
using SymbolResolver = std::function<void*(absl::string_view name)>;

// One linked object. Its code and data live in one private mapping: code
// read and execute, data read and write. Static constructors are not run
// and exception unwinding through the code is not registered.
class ElfObject {
 public:
  // Loads and links `bytes`. Undefined symbols go to `resolve`, only those
  // that relocations use. Errors: InvalidArgument or DataLoss for damaged
  // or unsupported input, NotFound for a symbol `resolve` does not know,
  // Unimplemented on hosts other than x86-64.
  static absl::StatusOr<std::unique_ptr<ElfObject>> Load(
      absl::string_view bytes, const SymbolResolver& resolve);
  ~ElfObject();

  ElfObject(const ElfObject&) = delete;
  ElfObject& operator=(const ElfObject&) = delete;

  // The address of a global (or weak) symbol the object defines.
  absl::StatusOr<void*> Lookup(absl::string_view name) const;

 private:
  ElfObject() = default;

  void* base_ = nullptr;
  size_t size_ = 0;
  absl::flat_hash_map<std::string, void*> symbols_;
};

}  // namespace graft::runtime

#endif  // GRAFT_RUNTIME_ELF_OBJECT_H_
