#include "graph/fused_ops.h"
#include "passes/apply_patterns.h"
#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/decompose.h"
#include "passes/fold_batchnorm.h"
#include "passes/fold_constants.h"
#include "passes/fuse_elementwise.h"
#include "passes/fuse_linear_activation.h"
#include "passes/recognize_composites.h"
#include "passes/partition.h"
#include "passes/pass_registry.h"
#include "passes/quantize/convert.h"
#include "passes/quantize/dynamic.h"
#include "passes/quantize/equalize.h"
#include "passes/quantize/lower.h"
#include "passes/quantize/prepare.h"
#include "passes/quantize/weight_only.h"
#include "passes/shape_prop.h"
#include "passes/shard.h"
#include "passes/substitute.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

template <typename P>
PassFactory Simple() {
  return [](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
    return std::make_unique<P>();
  };
}

void MustRegister(PassRegistry& r, PassInfo info) {
  absl::Status s = r.Register(std::move(info));
  if (!s.ok()) {
    std::fprintf(stderr, "graft: built-in pass registration failed: %s\n",
                 s.ToString().c_str());
    std::abort();
  }
}

}  // namespace

void RegisterBuiltinPasses(PassRegistry& r) {
  MustRegister(r, {"shape-prop",
                   "Computes every node's dtype and shape from the inputs' types.",
                   "", Simple<ShapePropPass>()});
  MustRegister(r, {"dce",
                   "Removes nodes whose values are unused (keeps impure ops), and "
                   "tensors and submodules nothing refers to.",
                   "", Simple<DcePass>()});
  MustRegister(r, {"cse",
                   "Merges pure calls of the same op on the same arguments.", "",
                   Simple<CsePass>()});
  MustRegister(r, {"canonicalize",
                   "Removes algebraic identities: x+0, x*1, x/1, double transpose "
                   "and negation, permute/reshape chains, squeeze/unsqueeze round "
                   "trips, identity, inference dropout and same-dtype casts.",
                   "", Simple<CanonicalizePass>()});
  MustRegister(
      r, {"substitute",
          "Replaces every match of each pattern in a table of pattern/replacement "
          "pairs, read from a text file of '--- pattern NAME' and "
          "'--- replacement NAME' sections.",
          "file=PATH (required)",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            std::string file = o.GetString("file", "");
            if (file.empty()) {
              return absl::InvalidArgumentError(
                  "needs a table file: substitute{file=PATH}");
            }
            ASSIGN_OR_RETURN(std::vector<Substitution> table,
                             LoadSubstitutionTable(file));
            return std::make_unique<SubstitutePass>(std::move(table));
          }});
  MustRegister(
      r,
      {"decompose",
       "Rewrites gelu, silu, layer_norm, linear, softmax and log_softmax into "
       "primitive ops.",
       "ops=OP;OP... (default: all of gelu;layer_norm;linear;log_softmax;silu;"
       "softmax)",
       [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
         ASSIGN_OR_RETURN(std::unique_ptr<DecomposePass> p,
                          DecomposePass::FromOptions(o));
         return std::unique_ptr<Pass>(std::move(p));
       }});
  MustRegister(r, {"fold-batchnorm",
                   "Folds an inference batch_norm into the conv2d or linear "
                   "before it, when their parameters are module tensors.",
                   "", Simple<FoldBatchNormPass>()});
  MustRegister(r, {"recognize-composites",
                   "Puts back gelu and layer_norm where a model spells them out in "
                   "primitive ops (ONNX before opsets 20 and 17).",
                   "", Simple<RecognizeCompositesPass>()});
  MustRegister(r, {"fuse-linear-activation",
                   "Fuses linear or matmul (+ bias) followed by relu or gelu "
                   "into one graft::linear_activation.",
                   "", Simple<FuseLinearActivationPass>()});
  MustRegister(r, {"fuse-elementwise",
                   "Moves connected groups of pointwise ops into one call_module "
                   "each (submodules fused_0, fused_1, ...).",
                   "", Simple<FuseElementwisePass>()});
  MustRegister(
      r, {"quantize-prepare",
          "Puts a graft::observe on every float activation and result of the calls "
          "to quantize (docs/quantization.md).",
          "ops=OP;OP... (default linear;matmul;conv2d;graft::linear_activation), "
          "skip=GLOB;GLOB..., dtype=i8|u8|f8e4m3 (default i8)",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(std::unique_ptr<quantize::PreparePass> p,
                             quantize::PreparePass::FromOptions(o));
            return std::unique_ptr<Pass>(std::move(p));
          }});
  MustRegister(
      r, {"quantize-convert",
          "Turns calibrated observers into quantize/dequantize and stores the quantized "
          "calls' weights as int8 or f8e4m3 (the reference graph; docs/quantization.md).",
          "ops=OP;OP... (as prepared), skip=GLOB;GLOB... (calls kept float), "
          "per-tensor=true|false (default false), weights=i8|f8e4m3 (default i8)",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(std::unique_ptr<quantize::ConvertPass> p,
                             quantize::ConvertPass::FromOptions(o));
            return std::unique_ptr<Pass>(std::move(p));
          }});
  MustRegister(
      r, {"quantize-weights",
          "Weight-only quantization of linear layers: int8 or int4 values, round to "
          "nearest, one scale per group of input features (docs/quantization.md).",
          "bits=8|4 (default 8), group=N (default 128; 0: one scale per output), "
          "skip=GLOB;GLOB...",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(std::unique_ptr<quantize::WeightOnlyPass> p,
                             quantize::WeightOnlyPass::FromOptions(o));
            return std::unique_ptr<Pass>(std::move(p));
          }});
  MustRegister(
      r, {"quantize-dynamic",
          "Dynamic quantization: linear layers and matmuls by a constant read int8 weights "
          "and quantize their input per row as they run; no calibration "
          "(docs/quantization.md).",
          "skip=GLOB;GLOB... (calls kept float)",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(std::unique_ptr<quantize::DynamicPass> p,
                             quantize::DynamicPass::FromOptions(o));
            return std::unique_ptr<Pass>(std::move(p));
          }});
  MustRegister(r, {"equalize-layers",
                   "Cross-layer equalization: rescales the hidden units of linear -> (relu ->) "
                   "linear pairs so that their weight ranges match, for per-tensor weight "
                   "quantization (docs/quantization.md).",
                   "", Simple<quantize::EqualizePass>()});
  MustRegister(r, {"quantize-lower",
                   "Fuses dequantize -> linear (and matmul by a constant) into "
                   "graft::quantized_linear, an int8 matrix product (docs/quantization.md).",
                   "", Simple<quantize::LowerPass>()});
  MustRegister(
      r, {"shard",
          "The module rank RANK of WORLD runs: tensor parallel, Megatron style (its "
          "share of the weights, graft::all_reduce/all_gather), or by=batch (its "
          "rows of the batch, the outputs gathered) (docs/multi-gpu.md).",
          "world=N (default 2), rank=R (default 0), by=tensor|batch (default tensor)",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(std::unique_ptr<ShardPass> p, ShardPass::FromOptions(o));
            return std::unique_ptr<Pass>(std::move(p));
          }});
  MustRegister(
      r, {"partition",
          "Moves each maximal run of the listed ops into a call_module "
          "(PREFIX_0, PREFIX_1, ...).",
          "ops=OP;OP... (required), prefix=NAME (default partition)",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(std::unique_ptr<PartitionPass> p,
                             PartitionPass::FromOptions(o));
            return std::unique_ptr<Pass>(std::move(p));
          }});
  MustRegister(
      r, {"fold-constants",
          "Computes calls whose inputs are all constant and stores the results "
          "as module tensors (needs the interpreter's constant evaluator).",
          "max-size=N (default 65536): largest result stored, in elements",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(
                int64_t max_size,
                o.GetInt("max-size", FoldConstantsPass::kDefaultMaxSize));
            if (max_size < 0) {
              return absl::InvalidArgumentError("max-size must be at least 0");
            }
            return std::make_unique<FoldConstantsPass>(max_size);
          }});
  MustRegister(
      r, {"apply-patterns",
          "Applies named patterns that plugins or C++ code registered "
          "(see `graft passes`), each once over the whole graph.",
          "names=NAME;NAME... (default: every registered pattern, by name)",
          [](const PassOptions& o) -> absl::StatusOr<std::unique_ptr<Pass>> {
            ASSIGN_OR_RETURN(std::unique_ptr<ApplyPatternsPass> p,
                             ApplyPatternsPass::FromOptions(o));
            return std::unique_ptr<Pass>(std::move(p));
          }});
}

}  // namespace graft::passes
