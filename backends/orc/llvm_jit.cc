#include "backends/orc/llvm_jit.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/X86TargetParser.h"

namespace graft::orc {
namespace {

void InitializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::string ErrorText(llvm::Error error) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << error;
  return text;
}

// glibc's vector math library; LLVM's loop vectorizer calls its
// _ZGV*_expf (and log, sin, cos, pow) when it can be loaded.
bool LibmvecAvailable() {
  static const bool available =
      dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr;
  return available;
}

// A target machine for `cpu`: the host's, or a named CPU's for files
// compiled to run elsewhere.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> TargetMachineFor(const HostCpu& cpu) {
  InitializeLlvmOnce();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return builder.takeError();
  if (cpu.name != DetectHostCpu().name || cpu.features != DetectHostCpu().features) {
    builder->setCPU(cpu.name);
    builder->getFeatures() = llvm::SubtargetFeatures(cpu.features);
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return builder->createTargetMachine();
}

}  // namespace

const HostCpu& DetectHostCpu() {
  static const HostCpu cpu = [] {
    InitializeLlvmOnce();
    HostCpu c;
    auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!builder) {
      llvm::consumeError(builder.takeError());
      return c;
    }
    c.triple = builder->getTargetTriple().str();
    c.name = builder->getCPU();
    c.features = builder->getFeatures().getString();
    c.has_avx512 = c.features.find("+avx512f") != std::string::npos;
    c.has_avx512_bf16 = c.features.find("+avx512bf16") != std::string::npos;
    c.has_fma = ("," + c.features + ",").find(",+fma,") != std::string::npos;
    return c;
  }();
  return cpu;
}

absl::StatusOr<HostCpu> TargetCpu(absl::string_view name) {
  if (name.empty() || name == "native") return DetectHostCpu();
  const llvm::StringRef cpu_name(name.data(), name.size());
  if (llvm::X86::parseArchX86(cpu_name, /*Only64Bit=*/true) == llvm::X86::CK_None) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown x86-64 CPU '", name,
        "' (LLVM's names, e.g. x86-64-v2, x86-64-v3, x86-64-v4, skylake-avx512, znver4, "
        "sapphirerapids; native: this machine's)"));
  }
  llvm::SmallVector<llvm::StringRef, 64> features;
  llvm::X86::getFeaturesForCPU(cpu_name, features);
  // With what each implies (x86-64-v4 names avx512f only through avx512bw).
  llvm::StringMap<bool> all;
  for (llvm::StringRef f : features) {
    all[f] = true;
    llvm::X86::updateImpliedFeatures(f, true, all);
  }
  std::vector<std::string> enabled;
  for (const auto& entry : all) {
    if (entry.getValue()) enabled.push_back("+" + entry.getKey().str());
  }
  std::sort(enabled.begin(), enabled.end());
  HostCpu c;
  c.triple = DetectHostCpu().triple;
  c.name = std::string(name);
  for (const std::string& f : enabled) {
    if (!c.features.empty()) c.features += ",";
    c.features += f;
  }
  c.has_avx512 = ("," + c.features + ",").find(",+avx512f,") != std::string::npos;
  c.has_avx512_bf16 = ("," + c.features + ",").find(",+avx512bf16,") != std::string::npos;
  c.has_fma = ("," + c.features + ",").find(",+fma,") != std::string::npos;
  return c;
}

std::string CodegenIdentity(const HostCpu& cpu) {
  return absl::StrCat("LLVM ", LLVM_VERSION_STRING, " ", cpu.triple, " ",
                      cpu.name, " ", cpu.features,
                      LibmvecAvailable() ? " libmvec" : "");
}

absl::StatusOr<std::string> OptimizeAndEmitObject(llvm::Module& module, const HostCpu& cpu) {
  auto machine = TargetMachineFor(cpu);
  if (!machine) {
    return absl::InternalError(absl::StrCat(
        "no LLVM target for this CPU: ", ErrorText(machine.takeError())));
  }
  llvm::TargetMachine& tm = **machine;
  module.setDataLayout(tm.createDataLayout());
  module.setTargetTriple(tm.getTargetTriple().str());
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (llvm::verifyModule(module, &os)) {
      return absl::InternalError(
          absl::StrCat("generated LLVM IR is invalid: ", text));
    }
  }

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  // Full unrolling of the many small constant-trip loops of a program made
  // compiles ten times slower (GPT-2 block: 670 ms against 67 ms) for runs
  // within noise of each other; the vectorizer still interleaves.
  tuning.LoopUnrolling = false;
  llvm::PassBuilder builder(&tm, tuning);
  llvm::TargetLibraryInfoImpl library(tm.getTargetTriple());
  if (LibmvecAvailable()) {
    library.addVectorizableFunctionsFromVecLib(
        llvm::TargetLibraryInfoImpl::LIBMVEC_X86, tm.getTargetTriple());
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(library); });
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);

  if (const char* dir = std::getenv("GRAFT_ORC_DUMP_IR")) {
    // For looking at what the optimizer made of a program.
    std::error_code error;
    llvm::raw_fd_ostream file(std::string(dir) + "/" + module.getName().str() + ".ll",
                              error);
    if (!error) module.print(file, nullptr);
  }
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (tm.addPassesToEmitFile(codegen, os, nullptr,
                             llvm::CodeGenFileType::ObjectFile)) {
    return absl::InternalError("LLVM cannot emit an object for this CPU");
  }
  codegen.run(module);
  return std::string(object.begin(), object.end());
}

LoadedObject::~LoadedObject() = default;

absl::StatusOr<std::unique_ptr<LoadedObject>> LoadedObject::Load(
    absl::string_view object, const std::vector<RuntimeSymbol>& runtime) {
  auto machine_builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine_builder) {
    return absl::InternalError(ErrorText(machine_builder.takeError()));
  }
  InitializeLlvmOnce();
  LibmvecAvailable();
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*machine_builder))
                 .create();
  if (!jit) {
    return absl::InternalError(
        absl::StrCat("cannot start LLVM ORC: ", ErrorText(jit.takeError())));
  }
  llvm::orc::JITDylib& main = (*jit)->getMainJITDylib();
  const char prefix = (*jit)->getDataLayout().getGlobalPrefix();
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process) {
    return absl::InternalError(ErrorText(process.takeError()));
  }
  main.addGenerator(std::move(*process));
  llvm::orc::SymbolMap symbols;
  for (const auto& [name, address] : runtime) {
    symbols[(*jit)->mangleAndIntern(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  }
  if (auto error = main.define(llvm::orc::absoluteSymbols(std::move(symbols)))) {
    return absl::InternalError(ErrorText(std::move(error)));
  }
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(object.data(), object.size()), "graft-orc-object");
  if (auto error = (*jit)->addObjectFile(std::move(buffer))) {
    return absl::DataLossError(absl::StrCat("cannot load compiled code: ",
                                            ErrorText(std::move(error))));
  }
  std::unique_ptr<LoadedObject> loaded(new LoadedObject());
  loaded->jit_ = std::move(*jit);
  if (std::getenv("GRAFT_ORC_PERF_MAP") != nullptr) loaded->WritePerfMap(object);
  return loaded;
}

// Appends the object's functions to /tmp/perf-PID.map, where `perf report`
// looks for the names of JIT-compiled code.
void LoadedObject::WritePerfMap(absl::string_view object) const {
  auto file = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(object.data(), object.size()), "object"));
  if (!file) {
    llvm::consumeError(file.takeError());
    return;
  }
  std::error_code error;
  llvm::raw_fd_ostream map(absl::StrCat("/tmp/perf-", getpid(), ".map"), error,
                           llvm::sys::fs::OF_Append);
  if (error) return;
  for (const llvm::object::SymbolRef& symbol : (*file)->symbols()) {
    auto type = symbol.getType();
    auto name = symbol.getName();
    if (!type || !name || *type != llvm::object::SymbolRef::ST_Function) {
      if (!type) llvm::consumeError(type.takeError());
      if (!name) llvm::consumeError(name.takeError());
      continue;
    }
    auto address = jit_->lookup(*name);
    if (!address) {
      llvm::consumeError(address.takeError());
      continue;
    }
    const uint64_t size = llvm::object::ELFSymbolRef(symbol).getSize();
    map << llvm::format_hex_no_prefix(address->getValue(), 1) << " "
        << llvm::format_hex_no_prefix(size, 1) << " " << *name << "\n";
  }
}

absl::StatusOr<void*> LoadedObject::Lookup(absl::string_view name) const {
  auto address = jit_->lookup(llvm::StringRef(name.data(), name.size()));
  if (!address) {
    return absl::DataLossError(absl::StrCat("compiled code lacks '", name,
                                            "': ", ErrorText(address.takeError())));
  }
  return address->toPtr<void*>();
}

}  // namespace graft::orc
