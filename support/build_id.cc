#include "support/build_id.h"

#include <elf.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace graft {
namespace {

struct Search {
  std::string id;
};

// The NT_GNU_BUILD_ID note among one object's PT_NOTE segments.
int FindBuildId(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  // The object whose loaded segments hold this very function.
  bool is_it = false;
  for (int i = 0; i < info->dlpi_phnum && !is_it; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const auto start = info->dlpi_addr + ph.p_vaddr;
    const auto self = reinterpret_cast<ElfW(Addr)>(&FindBuildId);
    is_it = self >= start && self < start + ph.p_memsz;
  }
  if (!is_it) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* at = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = at + ph.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, at, sizeof(note));
      const char* name = at + sizeof(note);
      const char* desc = name + ((note.n_namesz + 3) & ~3u);
      const char* next = desc + ((note.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        search->id = absl::BytesToHexString(absl::string_view(desc, note.n_descsz));
        return 1;
      }
      at = next;
    }
  }
  // The object, without a build ID: its file's identity, which any
  // relink changes too.
  struct stat st;
  const char* file = info->dlpi_name != nullptr && info->dlpi_name[0] != '\0'
                         ? info->dlpi_name
                         : "/proc/self/exe";
  if (::stat(file, &st) == 0) {
    search->id = absl::StrCat("file-", st.st_dev, "-", st.st_ino, "-", st.st_size, "-",
                              st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
  }
  return 1;
}

}  // namespace

const std::string& BuildId() {
  static const std::string id = [] {
    Search search;
    dl_iterate_phdr(FindBuildId, &search);
    return search.id;
  }();
  return id;
}

}  // namespace graft
