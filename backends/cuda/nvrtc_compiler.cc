#include "backends/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/cuda_status.h"
#include "graph/file_io.h"
#include "support/fingerprint.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

constexpr char kSourceName[] = "graft_kernels.cu";

// NVRTC's log with the source line after each diagnostic that names one
// ("graft_kernels.cu(12): error: ...").
std::string ExplainLog(const std::string& log, const std::string& source) {
  const std::vector<absl::string_view> lines = absl::StrSplit(source, '\n');
  std::string out;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    absl::StrAppend(&out, line, "\n");
    const std::string prefix = absl::StrCat(kSourceName, "(");
    if (!absl::StartsWith(line, prefix)) continue;
    const size_t close = line.find(')', prefix.size());
    int number = 0;
    if (close == absl::string_view::npos ||
        !absl::SimpleAtoi(line.substr(prefix.size(), close - prefix.size()), &number) ||
        number < 1 || number > static_cast<int>(lines.size())) {
      continue;
    }
    absl::StrAppend(&out, "    ", number, " | ", lines[number - 1], "\n");
  }
  return out;
}

void DumpSource(const std::string& source) {
  const char* dir = std::getenv("GRAFT_CUDA_DUMP_SOURCE");
  if (dir == nullptr || *dir == '\0') return;
  const std::string name = absl::StrCat(
      dir, "/", FingerprintBuilder().AddString(source).Finish().ToHex().substr(0, 16), ".cu");
  WriteFileAtomically(name, source).IgnoreError();
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};

// `source` compiled for `arch`: the CUBIN for a real architecture
// ("sm_90"), the PTX for a virtual one ("compute_90").
absl::StatusOr<std::string> Compile(const std::string& source, absl::string_view arch) {
  DumpSource(source);
  nvrtcProgram raw = nullptr;
  RETURN_IF_ERROR(GRAFT_NVRTC(
      nvrtcCreateProgram(&raw, source.c_str(), kSourceName, 0, nullptr, nullptr)));
  std::unique_ptr<_nvrtcProgram, ProgramDeleter> program(raw);
  const std::string arch_option = absl::StrCat("--gpu-architecture=", arch);
  // No fast math: the kernels keep IEEE division, denormals and exact
  // special functions, as the interpreter does.
  const char* options[] = {arch_option.c_str(), "--std=c++17", "-default-device", "-lineinfo"};
  const nvrtcResult compiled =
      nvrtcCompileProgram(raw, sizeof(options) / sizeof(options[0]), options);
  size_t log_size = 0;
  RETURN_IF_ERROR(GRAFT_NVRTC(nvrtcGetProgramLogSize(raw, &log_size)));
  std::string log(log_size, '\0');
  if (log_size > 0) RETURN_IF_ERROR(GRAFT_NVRTC(nvrtcGetProgramLog(raw, log.data())));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat(
        "NVRTC could not compile the generated kernels for ", arch, ": ",
        nvrtcGetErrorString(compiled), "\n", ExplainLog(log, source)));
  }
  size_t size = 0;
  std::string code;
  if (absl::StartsWith(arch, "compute_")) {
    RETURN_IF_ERROR(GRAFT_NVRTC(nvrtcGetPTXSize(raw, &size)));
    code.resize(size);
    RETURN_IF_ERROR(GRAFT_NVRTC(nvrtcGetPTX(raw, code.data())));
    while (!code.empty() && code.back() == '\0') code.pop_back();
  } else {
    RETURN_IF_ERROR(GRAFT_NVRTC(nvrtcGetCUBINSize(raw, &size)));
    code.resize(size);
    RETURN_IF_ERROR(GRAFT_NVRTC(nvrtcGetCUBIN(raw, code.data())));
  }
  return code;
}

}  // namespace

absl::StatusOr<std::string> CompileToCubin(const std::string& source,
                                           absl::string_view arch) {
  return Compile(source, arch);
}

absl::StatusOr<std::string> CompileToPtx(const std::string& source, absl::string_view arch) {
  if (!absl::StartsWith(arch, "compute_")) {
    return absl::InvalidArgumentError(
        absl::StrCat("PTX is compiled for a virtual architecture (compute_90), not ", arch));
  }
  return Compile(source, arch);
}

absl::StatusOr<std::vector<std::string>> CompileUnitsToCubins(
    const std::vector<std::string>& units, absl::string_view arch) {
  std::vector<absl::StatusOr<std::string>> cubins(units.size(), std::string());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < units.size(); i = next++) cubins[i] = CompileToCubin(units[i], arch);
  };
  // At most kMaxThreads programs at once: each holds NVRTC's memory.
  constexpr size_t kMaxThreads = 16;
  const size_t threads = std::min<size_t>(
      {units.size(), std::max<size_t>(1, std::thread::hardware_concurrency()), kMaxThreads});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // No more threads: the ones there (and this one) do the rest.
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  std::vector<std::string> out;
  for (absl::StatusOr<std::string>& cubin : cubins) {
    if (!cubin.ok()) return cubin.status();
    out.push_back(*std::move(cubin));
  }
  return out;
}

std::string NvrtcVersion() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return absl::StrCat(major, ".", minor);
}

}  // namespace graft::cuda
