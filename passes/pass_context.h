#ifndef GRAFT_PASSES_PASS_CONTEXT_H_
#define GRAFT_PASSES_PASS_CONTEXT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/node.h"
#include "passes/constant_evaluator.h"
#include "passes/dump_writer.h"

namespace graft::passes {

// Time one pass took, for --time-passes.
struct PassTiming {
  std::string pass;
  double seconds = 0;
  bool changed = false;
};

// State shared by the passes of one pipeline run: settings (verification,
// dumps), what the pipeline measured, and notes passes leave for the user
// (e.g. a rewrite driver that did not converge).
class PassContext {
 public:
  bool verify_each = true;
  bool time_passes = false;
  std::string dump_dir;  // Empty: no dumps.
  DumpFormat dump_format = DumpFormat::kNone;
  // What passes need from the layers above them, given by the program
  // rather than installed globally. fold-constants computes values with
  // `constant_evaluator` (graft::interp::EvaluateNode); DOT and SVG dumps
  // are drawn by `dump_writer` (graft::WriteDotDump). Either may be empty:
  // what needs it then fails with a message saying so.
  ConstantEvaluator constant_evaluator;
  DumpWriter dump_writer;

  // The pass now running; the pipeline sets it.
  const std::string& current_pass() const { return current_pass_; }
  void set_current_pass(std::string name) { current_pass_ = std::move(name); }

  const std::vector<PassTiming>& timings() const { return timings_; }
  void AddTiming(PassTiming t) { timings_.push_back(std::move(t)); }

  // Free-form notes for the user ("greedy driver hit its iteration cap").
  void Note(std::string message) { notes_.push_back(std::move(message)); }
  const std::vector<std::string>& notes() const { return notes_; }

  // Marks `created` as made by the current pass from `from`.
  void RecordProvenance(Node* created, absl::Span<Node* const> from) const;

 private:
  std::string current_pass_;
  std::vector<PassTiming> timings_;
  std::vector<std::string> notes_;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_PASS_CONTEXT_H_
