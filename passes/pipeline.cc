#include "passes/pipeline.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/file_io.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "passes/pass_registry.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

// Recursive-descent reader for pipeline strings.
class PipelineReader {
 public:
  explicit PipelineReader(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<PipelineEntry>> Read() {
    std::vector<PipelineEntry> entries;
    SkipSpace();
    if (AtEnd()) return Error("expected a pass name");
    while (true) {
      PipelineEntry entry;
      entry.name = Word();
      if (entry.name.empty()) return Error("expected a pass name");
      SkipSpace();
      if (Peek() == '{') {
        ++pos_;
        RETURN_IF_ERROR(ReadOptions(entry));
      }
      entries.push_back(std::move(entry));
      SkipSpace();
      if (AtEnd()) return entries;
      if (Peek() != ',') return Error("expected ',' or the end of the pipeline");
      ++pos_;
      SkipSpace();
    }
  }

 private:
  absl::Status ReadOptions(PipelineEntry& entry) {
    while (true) {
      SkipSpace();
      std::string key = Word();
      if (key.empty()) return Error("expected an option name");
      SkipSpace();
      if (Peek() != '=') return Error("expected '=' after option name");
      ++pos_;
      SkipSpace();
      std::string value = Value();
      if (value.empty()) return Error("expected an option value");
      entry.options[key] = value;
      SkipSpace();
      if (Peek() == '}') {
        ++pos_;
        return absl::OkStatus();
      }
      if (Peek() != ',') return Error("expected ',' or '}' in options");
      ++pos_;
    }
  }

  std::string Word() {
    size_t start = pos_;
    while (!AtEnd() && (absl::ascii_isalnum(Peek()) || Peek() == '-' ||
                        Peek() == '_' || Peek() == '.' || Peek() == ':')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string Value() {
    size_t start = pos_;
    while (!AtEnd() && Peek() != ',' && Peek() != '}' &&
           !absl::ascii_isspace(Peek())) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  void SkipSpace() {
    while (!AtEnd() && absl::ascii_isspace(Peek())) ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  unsigned char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("pipeline column ", pos_ + 1, ": ", what, " in \"", text_, "\""));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<PipelineEntry>> ParsePipeline(absl::string_view text) {
  return PipelineReader(text).Read();
}


absl::StatusOr<Pipeline> Pipeline::FromString(absl::string_view text) {
  ASSIGN_OR_RETURN(std::vector<PipelineEntry> entries, ParsePipeline(text));
  Pipeline pipeline;
  for (const PipelineEntry& e : entries) {
    ASSIGN_OR_RETURN(
        std::unique_ptr<Pass> pass,
        PassRegistry::Global().Create(e.name, PassOptions(e.options)));
    pipeline.Add(std::move(pass));
  }
  return pipeline;
}

void CleanupModule(Module& module) {
  // Iterative over the submodule tree.
  std::vector<Module*> stack = {&module};
  while (!stack.empty()) {
    Module* m = stack.back();
    stack.pop_back();
    m->graph().Cleanup();
    for (const auto& [name, sub] : m->submodules()) stack.push_back(sub.get());
  }
}

absl::Status Pipeline::Dump(const Module& module, const Module* before,
                            const PassContext& ctx, size_t index,
                            absl::string_view pass,
                            absl::string_view when) const {
  if (ctx.dump_dir.empty() || ctx.dump_format == DumpFormat::kNone) {
    return absl::OkStatus();
  }
  std::error_code ec;
  std::filesystem::create_directories(ctx.dump_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot create dump directory ", ctx.dump_dir, ": ", ec.message()));
  }
  const char* ext = ctx.dump_format == DumpFormat::kText  ? "graft"
                    : ctx.dump_format == DumpFormat::kDot ? "dot"
                                                          : "svg";
  std::string path = absl::StrFormat("%s/%02d-%s-%s.%s", ctx.dump_dir, index,
                                     pass, when, ext);
  if (ctx.dump_format == DumpFormat::kText) {
    return WriteFileAtomically(path, PrintModule(module));
  }
  if (!ctx.dump_writer) {
    return absl::FailedPreconditionError(
        "DOT and SVG dumps need graft's DOT writer, which this program does not "
        "include; use --dump text");
  }
  DumpRequest request;
  request.module = &module;
  request.before = before;
  request.pass = std::string(pass);
  request.path = std::move(path);
  request.format = ctx.dump_format;
  return ctx.dump_writer(request);
}

absl::StatusOr<bool> Pipeline::Run(Module& module, PassContext& ctx) {
  Module work = module.Clone();
  bool changed_any = false;
  for (size_t i = 0; i < passes_.size(); ++i) {
    Pass& pass = *passes_[i];
    std::string name(pass.name());
    ctx.set_current_pass(name);
    RETURN_IF_ERROR(Dump(work, nullptr, ctx, i + 1, name, "before"));
    // A picture of the result marks what the pass removed, which needs the
    // module as it was; text dumps do not.
    std::optional<Module> before;
    if (!ctx.dump_dir.empty() && (ctx.dump_format == DumpFormat::kDot ||
                                  ctx.dump_format == DumpFormat::kSvg)) {
      before = work.Clone();
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> changed = pass.Run(work, ctx);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass '", name, "' failed: ",
                                       changed.status().message()));
    }
    CleanupModule(work);
    if (ctx.verify_each) {
      if (absl::Status s = Verify(work); !s.ok()) {
        return absl::InternalError(absl::StrCat(
            "pass '", name, "' left an invalid graph: ", s.message()));
      }
    }
    ctx.AddTiming({name, seconds, *changed});
    changed_any |= *changed;
    RETURN_IF_ERROR(
        Dump(work, before ? &*before : nullptr, ctx, i + 1, name, "after"));
  }
  ctx.set_current_pass("");
  module = std::move(work);
  return changed_any;
}

}  // namespace graft::passes
