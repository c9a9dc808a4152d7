#include "passes/constant_evaluator.h"

#include <memory>
#include <mutex>
#include <utility>

namespace graft::passes {
namespace {

// The process-wide evaluator and every one installed before it.
struct Installed {
  std::mutex mu;
  // Every evaluator ever installed, kept for the life of the process so a
  // pointer from GetConstantEvaluator stays valid after a replacement.
  std::vector<std::unique_ptr<ConstantEvaluator>> all;
  const ConstantEvaluator* current = nullptr;
};

Installed& GetInstalled() {
  static auto* installed = new Installed();
  return *installed;
}

}  // namespace

void SetConstantEvaluator(ConstantEvaluator evaluator) {
  Installed& i = GetInstalled();
  std::lock_guard<std::mutex> lock(i.mu);
  if (!evaluator) {
    i.current = nullptr;
    return;
  }
  i.all.push_back(std::make_unique<ConstantEvaluator>(std::move(evaluator)));
  i.current = i.all.back().get();
}

const ConstantEvaluator* GetConstantEvaluator() {
  Installed& i = GetInstalled();
  std::lock_guard<std::mutex> lock(i.mu);
  return i.current;
}

}  // namespace graft::passes
