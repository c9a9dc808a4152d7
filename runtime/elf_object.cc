#include "runtime/elf_object.h"

#include <elf.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft::runtime {

#if defined(__x86_64__)
namespace {

constexpr uint64_t kPage = 4096;
// mmap aligns to pages and no further.
constexpr uint64_t kMaxAlign = kPage;
// Zero-filled sections take no file bytes, so the file size cannot bound
// them; untouched anonymous pages cost nothing, so the bound is generous.
constexpr uint64_t kMaxZeroFill = uint64_t{1} << 30;
// Room for alignment padding beyond twice the file's bytes.
constexpr uint64_t kSlack = uint64_t{1} << 20;
// jmp *0(%rip) (FF 25 00 00 00 00), then the 8-byte target, then padding.
constexpr uint64_t kStubSize = 16;
constexpr uint64_t kNone = ~uint64_t{0};

template <typename... Parts>
absl::Status Invalid(const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat("object: ", parts...));
}

// For offsets and sizes that reach past the end of the file.
template <typename... Parts>
absl::Status Truncated(const Parts&... parts) {
  return absl::DataLossError(absl::StrCat("object: ", parts...));
}

// Whether [offset, offset + size) lies within [0, limit), without overflow.
bool InRange(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// `value` and `align` are bounded far below overflow by the layout checks.
uint64_t AlignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) & ~(align - 1);
}

bool FitsInt32(uint64_t value) {
  const auto signed_value = static_cast<int64_t>(value);
  return signed_value == static_cast<int32_t>(signed_value);
}

// The caller has checked the bounds; memcpy because the input may be
// unaligned.
template <typename T>
T ReadAt(absl::string_view bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void Store(char* place, T value) {
  std::memcpy(place, &value, sizeof(T));
}

// The NUL-terminated string at `offset` of a string table.
std::optional<absl::string_view> StringAt(absl::string_view table,
                                          uint64_t offset) {
  if (offset >= table.size()) return std::nullopt;
  const size_t end = table.find('\0', offset);
  if (end == absl::string_view::npos) return std::nullopt;
  return table.substr(offset, end - offset);
}

// The bytes a relocation type patches; -1 for the unsupported ones.
int RelocationWidth(uint32_t type) {
  switch (type) {
    case R_X86_64_NONE:
      return 0;
    case R_X86_64_64:
    case R_X86_64_PC64:
      return 8;
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
    case R_X86_64_32:
    case R_X86_64_32S:
      return 4;
    default:
      return -1;
  }
}

bool UsesGot(uint32_t type) {
  return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX ||
         type == R_X86_64_REX_GOTPCRELX;
}

struct Relocation {
  uint32_t rela_section;  // where it was read, for messages
  uint64_t index;
  uint32_t section;  // the section it patches
  uint32_t type;
  uint32_t symbol;
  uint64_t offset;
  uint64_t addend;  // two's complement; the arithmetic wraps like the CPU's
};

// Checks an object and plans its layout (Plan), then copies and relocates
// it into memory the caller maps (Link).
class Linker {
 public:
  Linker(absl::string_view file, const SymbolResolver& resolve)
      : file_(file), resolve_(resolve) {}

  // Returns the bytes to map.
  absl::StatusOr<uint64_t> Plan();
  // Absolute 32-bit relocations (code compiled without -fPIC) only fit an
  // object mapped in the low 2 GiB.
  bool wants_low_address() const { return wants_low_address_; }
  absl::Status Link(char* base);
  absl::StatusOr<absl::flat_hash_map<std::string, void*>> Exports();
  absl::Status Protect() const;

 private:
  absl::Status ReadSectionHeaders();
  absl::Status ChooseSections();
  absl::Status ReadSymbols();
  absl::Status ReadRelocations();
  absl::Status Check(const Relocation& r);
  absl::StatusOr<uint64_t> Layout();
  absl::Status Apply(const Relocation& r);
  absl::Status StoreInt32(const Relocation& r, char* place,
                          uint64_t value) const;
  absl::Status Overflow(const Relocation& r) const;
  uint64_t Stub(uint32_t symbol, uint64_t target);
  bool IsBranch(const Relocation& r, const char* place) const;
  absl::StatusOr<uint64_t> SymbolAddress(uint32_t index);
  absl::StatusOr<uint64_t> ComputeAddress(uint32_t index) const;
  absl::StatusOr<uint64_t> Resolve(uint32_t index) const;
  absl::StatusOr<absl::string_view> SectionBytes(uint64_t index) const;
  // A table of fixed-size entries.
  absl::StatusOr<absl::string_view> Table(uint64_t index,
                                          size_t entry_size) const;
  absl::StatusOr<absl::string_view> StringTable(uint64_t index) const;
  std::string Label(uint64_t section) const;
  std::string SymbolLabel(uint32_t index) const;
  std::string Where(const Relocation& r) const;
  bool IsCode(uint64_t section) const {
    return (headers_[section].sh_flags & SHF_EXECINSTR) != 0;
  }

  absl::string_view file_;
  const SymbolResolver& resolve_;
  std::vector<Elf64_Shdr> headers_;
  std::vector<absl::string_view> names_;
  std::vector<bool> loaded_;
  std::vector<uint64_t> offsets_;  // in the mapping, for loaded sections
  uint64_t symtab_ = kNone;
  std::vector<Elf64_Sym> symbols_;
  std::vector<absl::string_view> symbol_names_;
  std::vector<std::optional<uint64_t>> addresses_;  // resolved lazily
  std::vector<uint64_t> got_slots_;
  std::vector<uint64_t> stub_slots_;
  uint64_t got_count_ = 0;
  uint64_t stub_count_ = 0;
  std::vector<Relocation> relocations_;
  bool wants_low_address_ = false;
  uint64_t code_size_ = 0;  // code and stubs, page-aligned
  uint64_t stubs_ = 0;
  uint64_t got_ = 0;
  char* base_ = nullptr;
};

absl::StatusOr<uint64_t> Linker::Plan() {
  RETURN_IF_ERROR(ReadSectionHeaders());
  RETURN_IF_ERROR(ChooseSections());
  RETURN_IF_ERROR(ReadSymbols());
  RETURN_IF_ERROR(ReadRelocations());
  return Layout();
}

absl::Status Linker::ReadSectionHeaders() {
  if (file_.size() < sizeof(Elf64_Ehdr)) {
    return Invalid("shorter than an ELF header");
  }
  const auto eh = ReadAt<Elf64_Ehdr>(file_, 0);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return Invalid("not an ELF file");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return Invalid("not a 64-bit little-endian ELF file");
  }
  if (eh.e_type != ET_REL) {
    return Invalid("ELF type ", eh.e_type, " is not a relocatable object");
  }
  if (eh.e_machine != EM_X86_64) {
    return Invalid("machine ", eh.e_machine, " is not x86-64");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return Invalid("section header size ", eh.e_shentsize);
  }
  // Extended numbering (e_shnum 0) is for objects of 65280 sections or more.
  if (eh.e_shnum == 0 || eh.e_shnum >= SHN_LORESERVE) {
    return Invalid("unsupported section count ", eh.e_shnum);
  }
  const uint64_t n = eh.e_shnum;
  if (!InRange(eh.e_shoff, n * sizeof(Elf64_Shdr), file_.size())) {
    return Truncated("section headers at ", eh.e_shoff, " past the end");
  }
  headers_.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    headers_[i] =
        ReadAt<Elf64_Shdr>(file_, eh.e_shoff + i * sizeof(Elf64_Shdr));
  }
  ASSIGN_OR_RETURN(const absl::string_view names, StringTable(eh.e_shstrndx));
  names_.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const std::optional<absl::string_view> name =
        StringAt(names, headers_[i].sh_name);
    if (!name) {
      return Invalid("section ", i, ": name offset ", headers_[i].sh_name,
                     " is not in its table");
    }
    names_[i] = *name;
  }
  return absl::OkStatus();
}

absl::Status Linker::ChooseSections() {
  loaded_.assign(headers_.size(), false);
  for (uint64_t i = 1; i < headers_.size(); ++i) {
    const Elf64_Shdr& sh = headers_[i];
    if ((sh.sh_flags & SHF_ALLOC) == 0) continue;
    // Nothing registers unwind tables with the unwinder, so they would be
    // dead weight, and skipping them skips their relocations too.
    if (sh.sh_type == SHT_X86_64_UNWIND || names_[i] == ".eh_frame") continue;
    if ((sh.sh_flags & SHF_TLS) != 0) {
      return Invalid(Label(i), ": thread-local data is unsupported");
    }
    if (sh.sh_type == SHT_INIT_ARRAY || sh.sh_type == SHT_PREINIT_ARRAY) {
      return Invalid(Label(i), ": constructors are unsupported");
    }
    if (sh.sh_addralign > kMaxAlign ||
        (sh.sh_addralign & (sh.sh_addralign - 1)) != 0) {
      return Invalid(Label(i), ": alignment ", sh.sh_addralign,
                     " is not a power of two up to 4096");
    }
    if (sh.sh_type != SHT_NOBITS) {
      RETURN_IF_ERROR(SectionBytes(i).status());
    } else if (sh.sh_size > kMaxZeroFill) {
      return Invalid(Label(i), ": ", sh.sh_size,
                     " zero-filled bytes is more than 1 GiB");
    }
    loaded_[i] = true;
  }
  return absl::OkStatus();
}

absl::Status Linker::ReadSymbols() {
  for (uint64_t i = 1; i < headers_.size(); ++i) {
    if (headers_[i].sh_type != SHT_SYMTAB) continue;
    if (symtab_ != kNone) return Invalid("more than one symbol table");
    symtab_ = i;
  }
  if (symtab_ == kNone) return absl::OkStatus();
  ASSIGN_OR_RETURN(const absl::string_view table,
                   Table(symtab_, sizeof(Elf64_Sym)));
  ASSIGN_OR_RETURN(const absl::string_view strings,
                   StringTable(headers_[symtab_].sh_link));
  const uint64_t count = table.size() / sizeof(Elf64_Sym);
  symbols_.resize(count);
  symbol_names_.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    symbols_[i] = ReadAt<Elf64_Sym>(table, i * sizeof(Elf64_Sym));
    const std::optional<absl::string_view> name =
        StringAt(strings, symbols_[i].st_name);
    if (!name) {
      return Invalid("symbol ", i, ": name offset ", symbols_[i].st_name,
                     " is not in its table");
    }
    symbol_names_[i] = *name;
  }
  addresses_.assign(count, std::nullopt);
  got_slots_.assign(count, kNone);
  stub_slots_.assign(count, kNone);
  return absl::OkStatus();
}

absl::Status Linker::ReadRelocations() {
  for (uint32_t i = 1; i < headers_.size(); ++i) {
    const Elf64_Shdr& sh = headers_[i];
    if (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL) continue;
    if (sh.sh_info >= headers_.size()) {
      return Invalid("section ", Label(i), ": relocates section ", sh.sh_info,
                     ", which does not exist");
    }
    if (!loaded_[sh.sh_info]) continue;
    if (sh.sh_type == SHT_REL) {
      return Invalid("section ", Label(i), ": REL relocations are unsupported");
    }
    if (symtab_ == kNone || sh.sh_link != symtab_) {
      return Invalid("section ", Label(i), ": linked section ", sh.sh_link,
                     " is not the symbol table");
    }
    ASSIGN_OR_RETURN(const absl::string_view table,
                     Table(i, sizeof(Elf64_Rela)));
    for (uint64_t j = 0; j < table.size() / sizeof(Elf64_Rela); ++j) {
      const auto rela = ReadAt<Elf64_Rela>(table, j * sizeof(Elf64_Rela));
      const Relocation r = {
          .rela_section = i,
          .index = j,
          .section = sh.sh_info,
          .type = static_cast<uint32_t>(ELF64_R_TYPE(rela.r_info)),
          .symbol = static_cast<uint32_t>(ELF64_R_SYM(rela.r_info)),
          .offset = rela.r_offset,
          .addend = static_cast<uint64_t>(rela.r_addend)};
      RETURN_IF_ERROR(Check(r));
      relocations_.push_back(r);
    }
  }
  return absl::OkStatus();
}

// Everything about a relocation that does not need addresses, so that the
// stubs and GOT entries are counted before the mapping is made.
absl::Status Linker::Check(const Relocation& r) {
  const int width = RelocationWidth(r.type);
  if (width < 0) {
    return Invalid("unsupported relocation type ", r.type, " in section ",
                   Label(r.rela_section));
  }
  if (r.symbol >= symbols_.size()) {
    return Invalid(Where(r), "symbol ", r.symbol, " of ", symbols_.size());
  }
  const Elf64_Shdr& target = headers_[r.section];
  if (target.sh_type == SHT_NOBITS) {
    return Invalid(Where(r), "patches zero-filled ", Label(r.section));
  }
  if (!InRange(r.offset, static_cast<uint64_t>(width), target.sh_size)) {
    return Invalid(Where(r), "offset ", r.offset, " past the end of ",
                   Label(r.section));
  }
  if (UsesGot(r.type) && got_slots_[r.symbol] == kNone) {
    got_slots_[r.symbol] = got_count_++;
  }
  const bool external =
      r.symbol != 0 && symbols_[r.symbol].st_shndx == SHN_UNDEF;
  if ((r.type == R_X86_64_PC32 || r.type == R_X86_64_PLT32) && external &&
      stub_slots_[r.symbol] == kNone) {
    stub_slots_[r.symbol] = stub_count_++;
  }
  if (r.type == R_X86_64_32 || r.type == R_X86_64_32S) {
    wants_low_address_ = true;
  }
  return absl::OkStatus();
}

// Code, then stubs, from the first page; data, then the GOT, from the next
// page boundary: one mapping, so that 32-bit PC-relative distances within
// the object fit.
absl::StatusOr<uint64_t> Linker::Layout() {
  offsets_.assign(headers_.size(), kNone);
  const uint64_t file_bound = 2 * uint64_t{file_.size()} + kSlack;
  uint64_t end = 0;
  uint64_t zero_fill = 0;
  for (const bool code : {true, false}) {
    for (uint64_t i = 1; i < headers_.size(); ++i) {
      if (!loaded_[i] || IsCode(i) != code) continue;
      const Elf64_Shdr& sh = headers_[i];
      end = AlignUp(end, std::max<uint64_t>(sh.sh_addralign, 1));
      offsets_[i] = end;
      end += sh.sh_size;
      if (sh.sh_type == SHT_NOBITS) zero_fill += sh.sh_size;
      if (zero_fill > kMaxZeroFill || end - zero_fill > file_bound) {
        return Invalid("sections need more memory than an ", file_.size(),
                       "-byte object can");
      }
    }
    if (code) {
      stubs_ = AlignUp(end, kStubSize);
      code_size_ = AlignUp(stubs_ + stub_count_ * kStubSize, kPage);
      end = code_size_;
    }
  }
  got_ = AlignUp(end, 8);
  // At least a page, so that even an object of empty sections has a base.
  return std::max(AlignUp(got_ + got_count_ * 8, kPage), kPage);
}

absl::Status Linker::Link(char* base) {
  base_ = base;
  for (uint64_t i = 1; i < headers_.size(); ++i) {
    const Elf64_Shdr& sh = headers_[i];
    if (!loaded_[i] || sh.sh_type == SHT_NOBITS || sh.sh_size == 0) continue;
    std::memcpy(base_ + offsets_[i], file_.data() + sh.sh_offset, sh.sh_size);
  }
  for (const Relocation& r : relocations_) RETURN_IF_ERROR(Apply(r));
  return absl::OkStatus();
}

absl::Status Linker::Apply(const Relocation& r) {
  if (r.type == R_X86_64_NONE) return absl::OkStatus();
  ASSIGN_OR_RETURN(const uint64_t s, SymbolAddress(r.symbol));
  char* place = base_ + offsets_[r.section] + r.offset;
  const uint64_t p = reinterpret_cast<uintptr_t>(place);
  const uint64_t a = r.addend;
  switch (r.type) {
    case R_X86_64_64:
      Store<uint64_t>(place, s + a);
      return absl::OkStatus();
    case R_X86_64_PC64:
      Store<uint64_t>(place, s + a - p);
      return absl::OkStatus();
    case R_X86_64_32:
      if (s + a > UINT32_MAX) return Overflow(r);
      Store<uint32_t>(place, static_cast<uint32_t>(s + a));
      return absl::OkStatus();
    case R_X86_64_32S:
      return StoreInt32(r, place, s + a);
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
      // A branch to a function outside the object may be too far for its
      // 32 bits; it goes through a stub that jumps anywhere.
      if (!FitsInt32(s + a - p) && stub_slots_[r.symbol] != kNone &&
          IsBranch(r, place)) {
        return StoreInt32(r, place, Stub(r.symbol, s) + a - p);
      }
      return StoreInt32(r, place, s + a - p);
    default: {  // the GOT types, as Check allowed no others
      char* slot = base_ + got_ + got_slots_[r.symbol] * 8;
      Store<uint64_t>(slot, s);
      return StoreInt32(r, place, reinterpret_cast<uintptr_t>(slot) + a - p);
    }
  }
}

absl::Status Linker::StoreInt32(const Relocation& r, char* place,
                                uint64_t value) const {
  if (!FitsInt32(value)) return Overflow(r);
  Store<int32_t>(place, static_cast<int32_t>(value));
  return absl::OkStatus();
}

absl::Status Linker::Overflow(const Relocation& r) const {
  return Invalid(Where(r), "type ", r.type, " to ", SymbolLabel(r.symbol),
                 ": the value does not fit in 32 bits");
}

uint64_t Linker::Stub(uint32_t symbol, uint64_t target) {
  static constexpr unsigned char kJmp[6] = {0xff, 0x25, 0, 0, 0, 0};
  char* stub = base_ + stubs_ + stub_slots_[symbol] * kStubSize;
  std::memcpy(stub, kJmp, sizeof(kJmp));
  Store<uint64_t>(stub + sizeof(kJmp), target);
  return reinterpret_cast<uintptr_t>(stub);
}

// PLT32 marks calls and jumps. PC32 also serves data references, which a
// stub would break, so for it the instruction must be a call (E8), jmp
// (E9) or conditional jump (0F 8x); a RIP-relative operand's ModRM byte is
// never one of these.
bool Linker::IsBranch(const Relocation& r, const char* place) const {
  if (r.type == R_X86_64_PLT32) return true;
  const auto before = [&](int k) {
    return static_cast<unsigned char>(place[-k]);
  };
  if (r.offset >= 1 && (before(1) == 0xe8 || before(1) == 0xe9)) return true;
  return r.offset >= 2 && before(2) == 0x0f && (before(1) & 0xf0) == 0x80;
}

absl::StatusOr<uint64_t> Linker::SymbolAddress(uint32_t index) {
  if (!addresses_[index]) {
    ASSIGN_OR_RETURN(addresses_[index], ComputeAddress(index));
  }
  return *addresses_[index];
}

absl::StatusOr<uint64_t> Linker::ComputeAddress(uint32_t index) const {
  if (index == 0) return 0;  // the null symbol's value is zero
  const Elf64_Sym& sym = symbols_[index];
  const unsigned type = ELF64_ST_TYPE(sym.st_info);
  if (type == STT_TLS || type == STT_GNU_IFUNC) {
    return Invalid(SymbolLabel(index), ": type ", type,
                   " (thread-local or ifunc) is unsupported");
  }
  if (sym.st_shndx == SHN_UNDEF) return Resolve(index);
  if (sym.st_shndx == SHN_ABS) return sym.st_value;
  if (sym.st_shndx == SHN_COMMON) {
    return Invalid(SymbolLabel(index), " is common; compile with -fno-common");
  }
  if (sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= headers_.size()) {
    return Invalid(SymbolLabel(index), ": section index ", sym.st_shndx,
                   " is unsupported");
  }
  if (!loaded_[sym.st_shndx]) {
    return Invalid(SymbolLabel(index), " is in ", Label(sym.st_shndx),
                   ", which is not loaded");
  }
  if (sym.st_value > headers_[sym.st_shndx].sh_size) {
    return Invalid(SymbolLabel(index), ": value ", sym.st_value,
                   " past the end of ", Label(sym.st_shndx));
  }
  return reinterpret_cast<uintptr_t>(base_) + offsets_[sym.st_shndx] +
         sym.st_value;
}

absl::StatusOr<uint64_t> Linker::Resolve(uint32_t index) const {
  const absl::string_view name = symbol_names_[index];
  if (name.empty()) {
    return Invalid("symbol ", index, " is undefined and unnamed");
  }
  void* address = resolve_ ? resolve_(name) : nullptr;
  if (address != nullptr) return reinterpret_cast<uintptr_t>(address);
  // A weak reference to a missing symbol is null; the code tests it.
  if (ELF64_ST_BIND(symbols_[index].st_info) == STB_WEAK) return 0;
  return absl::NotFoundError(
      absl::StrCat("object: undefined symbol '", name, "'"));
}

absl::StatusOr<absl::flat_hash_map<std::string, void*>> Linker::Exports() {
  absl::flat_hash_map<std::string, void*> exports;
  for (uint32_t i = 1; i < symbols_.size(); ++i) {
    const Elf64_Sym& sym = symbols_[i];
    const unsigned bind = ELF64_ST_BIND(sym.st_info);
    const unsigned type = ELF64_ST_TYPE(sym.st_info);
    if ((bind != STB_GLOBAL && bind != STB_WEAK) || sym.st_shndx == SHN_UNDEF ||
        type == STT_SECTION || type == STT_FILE || symbol_names_[i].empty()) {
      continue;
    }
    // Definitions in sections that are not loaded have no address.
    if (sym.st_shndx < SHN_LORESERVE && sym.st_shndx < headers_.size() &&
        !loaded_[sym.st_shndx]) {
      continue;
    }
    ASSIGN_OR_RETURN(const uint64_t address, SymbolAddress(i));
    exports.emplace(symbol_names_[i], reinterpret_cast<void*>(address));
  }
  return exports;
}

// W^X: code and stubs become read and execute; data stays read and write.
absl::Status Linker::Protect() const {
  if (code_size_ == 0) return absl::OkStatus();
  if (mprotect(base_, code_size_, PROT_READ | PROT_EXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("object: mprotect: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::string_view> Linker::SectionBytes(uint64_t index) const {
  const Elf64_Shdr& sh = headers_[index];
  if (!InRange(sh.sh_offset, sh.sh_size, file_.size())) {
    return Truncated("section ", Label(index), ": ", sh.sh_size, " bytes at ",
                     sh.sh_offset, " past the end of the file (", file_.size(),
                     " bytes)");
  }
  return file_.substr(sh.sh_offset, sh.sh_size);
}

absl::StatusOr<absl::string_view> Linker::Table(uint64_t index,
                                                size_t entry_size) const {
  const Elf64_Shdr& sh = headers_[index];
  if (sh.sh_entsize != entry_size || sh.sh_size % entry_size != 0) {
    return Invalid("section ", Label(index), ": entry size ", sh.sh_entsize,
                   " and size ", sh.sh_size, " for ", entry_size,
                   "-byte entries");
  }
  return SectionBytes(index);
}

absl::StatusOr<absl::string_view> Linker::StringTable(uint64_t index) const {
  if (index >= headers_.size() || headers_[index].sh_type != SHT_STRTAB) {
    return Invalid("section ", index, " is not a string table");
  }
  return SectionBytes(index);
}

std::string Linker::Label(uint64_t section) const {
  if (section < names_.size() && !names_[section].empty()) {
    return std::string(names_[section]);
  }
  return absl::StrCat("#", section);
}

std::string Linker::SymbolLabel(uint32_t index) const {
  if (symbol_names_[index].empty()) return absl::StrCat("symbol ", index);
  return absl::StrCat("symbol '", symbol_names_[index], "'");
}

std::string Linker::Where(const Relocation& r) const {
  return absl::StrCat("relocation ", r.index, " of section ",
                      Label(r.rela_section), ": ");
}

absl::StatusOr<void*> Map(uint64_t size, bool low) {
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (low) {
    void* base =
        mmap(nullptr, size, PROT_READ | PROT_WRITE, kFlags | MAP_32BIT, -1, 0);
    if (base != MAP_FAILED) return base;
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, kFlags, -1, 0);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "object: cannot map ", size, " bytes: ", std::strerror(errno)));
  }
  return base;
}

}  // namespace
#endif  // defined(__x86_64__)

absl::StatusOr<std::unique_ptr<ElfObject>> ElfObject::Load(
    absl::string_view bytes, const SymbolResolver& resolve) {
#if defined(__x86_64__)
  Linker linker(bytes, resolve);
  ASSIGN_OR_RETURN(const uint64_t size, linker.Plan());
  auto object = absl::WrapUnique(new ElfObject());
  ASSIGN_OR_RETURN(object->base_, Map(size, linker.wants_low_address()));
  object->size_ = size;
  RETURN_IF_ERROR(linker.Link(static_cast<char*>(object->base_)));
  ASSIGN_OR_RETURN(object->symbols_, linker.Exports());
  RETURN_IF_ERROR(linker.Protect());
  return object;
#else
  return absl::UnimplementedError("object: loading needs an x86-64 host");
#endif
}

ElfObject::~ElfObject() {
  if (base_ != nullptr) munmap(base_, size_);
}

absl::StatusOr<void*> ElfObject::Lookup(absl::string_view name) const {
  const auto it = symbols_.find(name);
  if (it == symbols_.end()) {
    return absl::NotFoundError(
        absl::StrCat("object: no symbol '", name, "' is defined"));
  }
  return it->second;
}

}  // namespace graft::runtime
