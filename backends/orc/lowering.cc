#include "backends/orc/lowering.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <cstdlib>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "backends/orc/float8_ir.h"
#include "backends/orc/ir_emitter.h"
#include "backends/orc/llvm_jit.h"
#include "backends/strided_view.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "runtime/parallel_steps.h"
#include "support/status_macros.h"

namespace graft::orc {
namespace {

// One function per step. args[0] is the result, args[1 + i] the data of
// step.inputs[i], and for a library step the last is its prepared call.
class StepEmitter {
 public:
  StepEmitter(IrEmitter& ir, const Program& program, const Step& step,
              llvm::Function* function, bool has_fma)
      : ir_(ir), p_(program), step_(step), has_fma_(has_fma) {
    for (llvm::Argument& a : function->args()) args_.push_back(&a);
  }

  absl::Status Emit() {
    if (step_.elided) return absl::OkStatus();  // Later views read through it.
    switch (step_.kind) {
      case StepKind::kPointwise:
        return step_.node->op() == OpCode::kCallModule ? FusedGroup()
                                                       : Pointwise();
      case StepKind::kView:
        return ViewCopy();
      case StepKind::kCopy:
        Copy();
        return absl::OkStatus();
      case StepKind::kConcat:
        return Concat();
      case StepKind::kPad:
        return Pad();
      case StepKind::kReduce:
        return Reduce();
      case StepKind::kSoftmax:
        return Softmax();
      case StepKind::kLayerNorm:
        return LayerNorm();
      case StepKind::kBatchNorm:
        return BatchNorm();
      case StepKind::kLibrary:
        LibraryCall();
        return absl::OkStatus();
      case StepKind::kMatmul:
        Matmul();
        return absl::OkStatus();
      case StepKind::kPool:
        return Pool();
      case StepKind::kQuantize:
        return Quantize();
      case StepKind::kIndex:
        return Index();
      case StepKind::kArgmax:
        return Argmax();
      case StepKind::kScan:
        return Cumsum();
      case StepKind::kCreate:
        return Create();
      case StepKind::kCollective:
      case StepKind::kAttention:
        break;  // CanLower refuses these: the interpreter runs them.
    }
    return absl::InternalError("unknown step kind");
  }

 private:
  llvm::IRBuilder<>& b() { return ir_.b(); }
  const Node& node() const { return *step_.node; }
  DType out_dtype() const { return node().type()->dtype; }

  View Out() const {
    return {args_[0], out_dtype(), 0,
            LayoutStrides(DimsOf(node()), step_.channels_last)};
  }
  bool OperandChannelsLast(const Node* input) const {
    const size_t i = OperandIndex(input);
    return i < step_.operand_channels_last.size() && step_.operand_channels_last[i];
  }
  int OperandIndex(const Node* input) const {
    auto it = std::find(step_.inputs.begin(), step_.inputs.end(), input);
    return static_cast<int>(it - step_.inputs.begin());
  }
  llvm::Value* Data(const Node* input) const {
    return args_[1 + OperandIndex(input)];
  }
  // `input` broadcast over the index space `out`.
  View Broadcast(const Node* input, const std::vector<int64_t>& out) const {
    return {Data(input), input->type()->dtype, 0,
            LayoutBroadcastStrides(DimsOf(*input), out, OperandChannelsLast(input))};
  }

  // Binds the formula's names for one call: tensor parameters to `value_of`
  // their node, converted to the compute type; scalars to constants.
  absl::StatusOr<llvm::Value*> EvaluateCall(
      const Node& call_node,
      const std::function<llvm::Value*(const Node*)>& value_of) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(call_node));
    std::optional<std::string> text = PointwiseFormulaOf(call_node);
    if (!text.has_value()) {
      return absl::InternalError(
          absl::StrCat("%", call_node.name(), " has no formula"));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<ScalarExpr> formula,
                     ParseScalarFormula(*text));
    const DType compute = PointwiseComputeType(call_node, call);
    absl::flat_hash_map<std::string, llvm::Value*> env;
    for (size_t i = 0; i < call.schema().params.size(); ++i) {
      const std::string& name = call.schema().params[i].name;
      const Argument& a = call.GetAt(i);
      if (a.is_node()) {
        env[name] = ir_.Convert(value_of(a.node()), a.node()->type()->dtype,
                                compute);
      } else if (a.is_number()) {
        env[name] = ir_.Constant(compute, a.number());
      } else if (a.is_bool()) {
        env[name] = ir_.Constant(compute, a.bool_value() ? 1 : 0);
      }
    }
    llvm::Value* r = ir_.Formula(*formula, compute, env);
    const DType from = r->getType()->isIntegerTy(1) ? DType::kBool : compute;
    return ir_.Convert(r, from, call_node.type()->dtype);
  }

  absl::Status Pointwise() {
    const std::vector<int64_t> dims = DimsOf(node());
    std::vector<View> ins;
    for (const Node* input : step_.inputs) ins.push_back(Broadcast(input, dims));
    absl::Status status;
    ir_.Map(dims, Out(), ins, [&](const std::vector<llvm::Value*>& loaded) {
      absl::StatusOr<llvm::Value*> r = EvaluateCall(
          node(), [&](const Node* n) { return loaded[OperandIndex(n)]; });
      if (!r.ok()) {
        status = r.status();
        return ir_.Constant(out_dtype(), 0);
      }
      return *r;
    });
    return status;
  }

  // A call_module of a fused group: the submodule's nodes evaluated one
  // after another on each element, nothing written in between.
  absl::Status FusedGroup() {
    const Module* group = p_.module->FindSubmodule(node().target());
    const std::vector<int64_t> dims = DimsOf(node());
    std::vector<Node*> placeholders = group->graph().placeholders();
    std::vector<View> ins;
    for (size_t i = 0; i < placeholders.size(); ++i) {
      ins.push_back(Broadcast(node().arg(i).node(), dims));
    }
    absl::Status status;
    ir_.Map(dims, Out(), ins, [&](const std::vector<llvm::Value*>& loaded) {
      absl::flat_hash_map<const Node*, llvm::Value*> values;
      for (size_t i = 0; i < placeholders.size(); ++i) {
        values[placeholders[i]] = loaded[i];
      }
      const Node* result = nullptr;
      for (const Node* n : group->graph().nodes()) {
        if (n->op() == OpCode::kOutput) {
          result = n->arg(0).node();
          continue;
        }
        if (n->op() != OpCode::kCallFunction) continue;
        absl::StatusOr<llvm::Value*> r =
            EvaluateCall(*n, [&](const Node* x) { return values.at(x); });
        if (!r.ok()) {
          status = r.status();
          return ir_.Constant(out_dtype(), 0);
        }
        values[n] = *r;
      }
      return ir_.Convert(values.at(result), result->type()->dtype, out_dtype());
    });
    return status;
  }

  absl::Status ViewCopy() {
    const Node* input = step_.inputs[0];
    const std::vector<int64_t> dims = DimsOf(node());
    ASSIGN_OR_RETURN(StridedSource source, step_.view_source.has_value()
                                               ? *step_.view_source
                                               : ViewSource(node()));
    View in{Data(input), input->type()->dtype, source.offset, source.strides};
    ir_.Map(dims, Out(), {in},
            [](const std::vector<llvm::Value*>& v) { return v[0]; });
    return absl::OkStatus();
  }

  // A value into another buffer, converting between NCHW and NHWC when
  // the two layouts differ.
  void Copy() {
    const std::vector<int64_t> dims = DimsOf(node());
    const View in{args_[1], out_dtype(), 0,
                  LayoutStrides(dims, step_.operand_channels_last[0])};
    ir_.Map(dims, Out(), {in}, [](const std::vector<llvm::Value*>& v) { return v[0]; });
  }

  absl::Status Concat() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const std::vector<int64_t> dims = DimsOf(node());
    const int64_t dim =
        NormalizeDim(call.Int("dim"), static_cast<int64_t>(dims.size()));
    const std::vector<int64_t> out_strides = ContiguousStrides(dims);
    int64_t at = 0;
    for (const Node* input : call.TensorNodes("tensors")) {
      const std::vector<int64_t> in_dims = DimsOf(*input);
      View out = Out();
      out.offset = at * out_strides[dim];
      View in{Data(input), input->type()->dtype, 0, ContiguousStrides(in_dims)};
      const DType from = input->type()->dtype;
      ir_.Map(in_dims, out, {in}, [&](const std::vector<llvm::Value*>& v) {
        return ir_.Convert(v[0], from, out_dtype());
      });
      at += in_dims[dim];
    }
    return absl::OkStatus();
  }

  absl::Status Pad() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_.inputs[0];
    const std::vector<int64_t> in_dims = DimsOf(*input);
    const std::vector<int64_t> dims = DimsOf(node());
    const std::vector<int64_t> pads = call.Ints("pad");
    std::vector<int64_t> before(dims.size(), 0);
    for (size_t i = 0; i + 1 < pads.size() + 1 && 2 * i < pads.size(); ++i) {
      before[dims.size() - 1 - i] = pads[2 * i];
    }
    const View out = Out();
    const View in{Data(input), input->type()->dtype, 0, ContiguousStrides(in_dims)};
    llvm::Value* fill = ir_.Constant(out_dtype(), call.Float("value"));
    const std::string& mode = call.String("mode");
    auto i64 = [&](int64_t v) { return b().getInt64(v); };
    auto clamp = [&](llvm::Value* j, int64_t n) {
      j = b().CreateSelect(b().CreateICmpSLT(j, i64(0)), i64(0), j);
      return b().CreateSelect(b().CreateICmpSGT(j, i64(n - 1)), i64(n - 1), j);
    };
    ir_.Loops(dims, [&](const std::vector<llvm::Value*>& index) {
      llvm::Value* inside = b().getInt1(true);
      std::vector<llvm::Value*> in_index;
      for (size_t k = 0; k < dims.size(); ++k) {
        llvm::Value* i = b().CreateSub(index[k], i64(before[k]));
        const int64_t n = in_dims[k];
        if (mode == "reflect") {
          // Mirrored at the edges without repeating them (PyTorch's pads
          // are shorter than the dim); clamped so a load stays inside.
          i = b().CreateSelect(b().CreateICmpSLT(i, i64(0)), b().CreateNeg(i), i);
          i = b().CreateSelect(b().CreateICmpSGT(i, i64(n - 1)),
                               b().CreateSub(i64(2 * (n - 1)), i), i);
          in_index.push_back(clamp(i, n));
          continue;
        }
        if (mode == "replicate") {
          in_index.push_back(clamp(i, n));
          continue;
        }
        inside = b().CreateAnd(inside, b().CreateICmpULT(i, i64(n)));
        // Clamped, so the load stays inside the input either way.
        in_index.push_back(b().CreateSelect(b().CreateICmpULT(i, i64(n)), i, i64(0)));
      }
      llvm::Value* v = in_dims.empty() || Product(in_dims, 0, in_dims.size()) > 0
                           ? ir_.Load(in, in_index)
                           : fill;
      ir_.Store(out, index, b().CreateSelect(inside, v, fill));
    });
    return absl::OkStatus();
  }

  // Up to this K, each row's products are written out: the sums of a
  // vector of the result's columns stay in registers.
  static constexpr int64_t kMatmulUnrolledK = 32;

  // matmul as loops (NumPy rules: 1-D operands, broadcast batch dims), and
  // linear layers (bias and ReLU added to each sum): for each row of the
  // result, the columns vectorize.
  void Matmul() {
    // An empty result has nothing to write (and Loop runs its body once).
    if (Product(DimsOf(node()), 0, DimsOf(node()).size()) == 0) return;
    if (!node().is_call("matmul")) return Linear();
    const OpCall call = *OpCall::Bind(node());
    const std::vector<const Node*> operands = {call.TensorNode("input"), call.TensorNode("other")};
    std::vector<int64_t> ad = DimsOf(*operands[0]), bd = DimsOf(*operands[1]);
    if (ad.size() == 1) ad.insert(ad.begin(), 1);  // A row [1, K].
    if (bd.size() == 1) bd.push_back(1);           // A column [K, 1].
    const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
    const std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2);
    const std::vector<int64_t> b_batch(bd.begin(), bd.end() - 2);
    std::vector<int64_t> batch(std::max(a_batch.size(), b_batch.size()), 1);
    for (size_t i = 0; i < batch.size(); ++i) {
      for (const std::vector<int64_t>* d : {&a_batch, &b_batch}) {
        const size_t skip = batch.size() - d->size();
        // NumPy rules: a size other than 1 wins (0 included).
        if (i >= skip && (*d)[i - skip] != 1) batch[i] = (*d)[i - skip];
      }
    }
    // Views over (batch..., row, column) index spaces.
    auto view = [&](const Node* input, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& own_batch) {
      // Batch strides count whole matrices.
      std::vector<int64_t> strides = BroadcastStrides(own_batch, batch);
      const std::vector<int64_t> dense = ContiguousStrides(dims);
      for (int64_t& stride : strides) stride *= dims[dims.size() - 2] * dims.back();
      strides.push_back(dense[dims.size() - 2]);
      strides.push_back(dense[dims.size() - 1]);
      return View{Data(input), input->type()->dtype, 0, strides};
    };
    std::vector<int64_t> out_dims = batch;
    out_dims.push_back(m);
    out_dims.push_back(n);
    const View out{args_[0], out_dtype(), 0, ContiguousStrides(out_dims)};
    std::vector<int64_t> rows = batch;
    rows.push_back(m);
    ProductLoops(view(operands[0], ad, a_batch), view(operands[1], bd, b_batch), out, rows, k, n,
                 nullptr);
  }

  // linear / linear_activation (ReLU): the input as [rows, K], the weight
  // read transposed ([N, K], "out_in") or as it is ([K, N], "in_out").
  void Linear() {
    // Operands by name: they may be given as keyword arguments in any order.
    const OpCall call = *OpCall::Bind(node());  // IsGeneratedLinear bound it.
    const Node* input = call.TensorNode("input");
    const Node* weight = call.TensorNode("weight");
    const Node* bias = call.TensorNode("bias");
    const std::vector<int64_t> xd = DimsOf(*input), wd = DimsOf(*weight);
    const int64_t k = xd.back(), m = Product(xd, 0, xd.size() - 1);
    const bool fused = node().is_call("graft::linear_activation");
    const bool in_out = fused && call.String("weight_layout") == "in_out";
    const int64_t n = in_out ? wd[1] : wd[0];
    const View a{Data(input), DType::kF32, 0, {k, 1}};
    const View w{Data(weight), DType::kF32, 0, in_out ? std::vector<int64_t>{n, 1}
                                                      : std::vector<int64_t>{1, k}};
    const View out{args_[0], out_dtype(), 0, {n, 1}};
    ProductLoops(a, w, out, {m}, k, n, [&](llvm::Value* j, llvm::Value* sum) {
      if (bias != nullptr) {
        sum = b().CreateFAdd(sum, ir_.Load(View{Data(bias), DType::kF32, 0, {1}}, {j}));
      }
      return fused ? ir_.Maximum(sum, ir_.Constant(DType::kF32, 0)) : sum;
    });
  }

  // out[.., i, j] = finish(j, sum_p a[.., i, p] * b[.., p, j]) over the
  // index space `rows` (batch dims, then the row); finish may be null.
  void ProductLoops(const View& a, const View& bv, const View& out, const std::vector<int64_t>& rows,
                    int64_t k, int64_t n,
                    const std::function<llvm::Value*(llvm::Value*, llvm::Value*)>& finish) {
    const DType t = out_dtype();
    auto at = [](std::vector<llvm::Value*> index, llvm::Value* i, llvm::Value* j) {
      index.push_back(i);
      index.push_back(j);
      return index;
    };
    auto done = [&](llvm::Value* j, llvm::Value* sum) { return finish ? finish(j, sum) : sum; };
    ir_.Loops(rows, [&](const std::vector<llvm::Value*>& index) {
      const std::vector<llvm::Value*> b_index(index.begin(), index.end() - 1);
      llvm::Value* row = index.back();
      if (k <= kMatmulUnrolledK) {
        std::vector<llvm::Value*> a_row;
        for (int64_t p = 0; p < k; ++p) {
          a_row.push_back(ir_.Load(a, at(b_index, row, b().getInt64(p))));
        }
        ir_.Loop(n, [&](llvm::Value* j) {
          // Four partial sums: four chains of fused multiply-adds in
          // flight instead of one (whose latency would bind).
          constexpr int64_t kChains = 4;
          std::vector<llvm::Value*> sums;
          for (int64_t p = 0; p < k; ++p) {
            llvm::Value* product =
                b().CreateFMul(a_row[p], ir_.Load(bv, at(b_index, b().getInt64(p), j)));
            if (p < kChains) {
              sums.push_back(product);
            } else {
              sums[p % kChains] = b().CreateFAdd(sums[p % kChains], product);
            }
          }
          llvm::Value* sum = sums.empty() ? ir_.Constant(t, 0) : sums[0];
          for (size_t c = 1; c < sums.size(); ++c) sum = b().CreateFAdd(sum, sums[c]);
          ir_.Store(out, at(b_index, row, j), done(j, sum));
        });
        return;
      }
      ir_.Loop(n, [&](llvm::Value* j) { ir_.Store(out, at(b_index, row, j), ir_.Constant(t, 0)); });
      ir_.Loop(k, [&](llvm::Value* p) {
        llvm::Value* x = ir_.Load(a, at(b_index, row, p));
        ir_.Loop(n, [&](llvm::Value* j) {
          const std::vector<llvm::Value*> o = at(b_index, row, j);
          ir_.Store(out, o, b().CreateFAdd(ir_.Load(out, o),
                                           b().CreateFMul(x, ir_.Load(bv, at(b_index, p, j)))));
        });
      });
      if (finish) {
        ir_.Loop(n, [&](llvm::Value* j) {
          const std::vector<llvm::Value*> o = at(b_index, row, j);
          ir_.Store(out, o, finish(j, ir_.Load(out, o)));
        });
      }
    });
  }

  // cumsum: for each slice along dim, in order (from the end with
  // reverse), each row of the result is the previous row plus the input's
  // (the row before it with exclusive), so the loop over the dims after
  // `dim` vectorizes; the first row is the input's (zeros with exclusive).
  absl::Status Cumsum() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_.inputs[0];
    std::vector<int64_t> dims = DimsOf(*input);
    if (dims.empty()) dims.push_back(1);
    const int64_t d = NormalizeDim(call.Int("dim"), static_cast<int64_t>(dims.size()));
    const bool exclusive = call.Bool("exclusive"), reverse = call.Bool("reverse");
    const int64_t outer = Product(dims, 0, d), len = dims[d];
    const int64_t inner = Product(dims, d + 1, dims.size());
    if (outer * len * inner == 0) return absl::OkStatus();
    const DType t = out_dtype(), in_type = input->type()->dtype;
    llvm::Value* in = Data(input);
    auto i64 = [&](int64_t v) { return b().getInt64(v); };
    auto load = [&](llvm::Value* at) {
      return ir_.Convert(ir_.LoadAt(in, in_type, at), in_type, t);
    };
    auto row = [&](llvm::Value* a, llvm::Value* i) {  // Offset of row i.
      return b().CreateMul(b().CreateAdd(b().CreateMul(a, i64(len)), i), i64(inner));
    };
    auto position = [&](int64_t step) { return reverse ? len - 1 - step : step; };
    ir_.Loop(outer, [&](llvm::Value* a) {
      llvm::Value* first = row(a, i64(position(0)));
      ir_.Loop(inner, [&](llvm::Value* c) {
        llvm::Value* at = b().CreateAdd(first, c);
        ir_.StoreAt(args_[0], t, at, exclusive ? ir_.Constant(t, 0) : load(at));
      });
      if (len == 1) return;
      ir_.Loop(len - 1, [&](llvm::Value* s) {
        llvm::Value* step = b().CreateAdd(s, i64(1));
        llvm::Value* i = reverse ? b().CreateSub(i64(len - 1), step) : step;
        llvm::Value* prev = reverse ? b().CreateAdd(i, i64(1)) : b().CreateSub(i, i64(1));
        llvm::Value* here = row(a, i);
        llvm::Value* before = row(a, prev);
        ir_.Loop(inner, [&](llvm::Value* c) {
          llvm::Value* from = b().CreateAdd(before, c);
          llvm::Value* added = load(exclusive ? from : b().CreateAdd(here, c));
          llvm::Value* sum = IsFloatingPoint(t) ? b().CreateFAdd(ir_.LoadAt(args_[0], t, from), added)
                                            : b().CreateAdd(ir_.LoadAt(args_[0], t, from), added);
          ir_.StoreAt(args_[0], t, b().CreateAdd(here, c), sum);
        });
      });
    });
    return absl::OkStatus();
  }

  absl::Status Reduce() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_.inputs[0];
    const ReductionSplit split = SplitReduction(call, DimsOf(*input));
    const std::vector<int64_t>& kept_dims = split.kept_dims;
    const std::vector<int64_t>& kept_strides = split.kept_strides;
    const std::vector<int64_t>& red_dims = split.reduced_dims;
    const std::vector<int64_t>& red_strides = split.reduced_strides;
    const DType acc_type = out_dtype();
    const DType in_type = input->type()->dtype;
    const std::string& op = node().target();
    const bool is_max = op == "amax", is_min = op == "amin";
    const bool is_unsigned = IsUnsignedInt(acc_type);
    llvm::Value* init = is_max || is_min ? Extreme(acc_type, is_min)
                                         : ir_.Constant(acc_type, 0);
    const int64_t count = Product(red_dims, 0, red_dims.size());
    const View out{args_[0], acc_type, 0, ContiguousStrides(kept_dims)};
    ir_.Loops(kept_dims, [&](const std::vector<llvm::Value*>& kept) {
      llvm::Value* acc = ir_.Slot(acc_type, init);
      llvm::Type* acc_llvm = ir_.RegisterType(acc_type);
      ir_.Loops(red_dims, [&](const std::vector<llvm::Value*>& red) {
        std::vector<llvm::Value*> index = kept;
        index.insert(index.end(), red.begin(), red.end());
        std::vector<int64_t> strides = kept_strides;
        strides.insert(strides.end(), red_strides.begin(), red_strides.end());
        llvm::Value* x = ir_.Convert(
            ir_.Load(View{Data(input), in_type, 0, strides}, index), in_type,
            acc_type);
        llvm::Value* a = b().CreateLoad(acc_llvm, acc);
        llvm::Value* r = is_max   ? ir_.Maximum(a, x, true, is_unsigned)
                         : is_min ? ir_.Minimum(a, x, true, is_unsigned)
                                  : ir_.ReassocAdd(a, x);
        b().CreateStore(r, acc);
      });
      llvm::Value* r = b().CreateLoad(acc_llvm, acc);
      if (op == "mean") {
        r = b().CreateFDiv(r, ir_.Constant(acc_type, static_cast<double>(count)));
      }
      ir_.Store(out, kept, r);
    });
    return absl::OkStatus();
  }

  // u8 and bool compare as unsigned.
  static bool IsUnsignedInt(DType t) { return t == DType::kU8 || t == DType::kBool; }
  // The lowest (or highest) value of `t`, the identity of a max (min),
  // made as an LLVM constant so that it is exact for every dtype.
  llvm::Value* Extreme(DType t, bool highest) {
    if (IsFloatingPoint(t)) {
      const double inf = std::numeric_limits<double>::infinity();
      return ir_.Constant(t, highest ? inf : -inf);
    }
    const unsigned bits = ir_.RegisterType(t)->getIntegerBitWidth();
    const llvm::APInt limit =
        IsUnsignedInt(t) ? (highest ? llvm::APInt::getMaxValue(bits)
                                    : llvm::APInt::getMinValue(bits))
                         : (highest ? llvm::APInt::getSignedMaxValue(bits)
                                    : llvm::APInt::getSignedMinValue(bits));
    return llvm::ConstantInt::get(ir_.RegisterType(t), limit);
  }

  // Rows of `n` elements `stride` apart, `outer` x `inner` of them.
  struct Rows {
    int64_t outer, n, inner;
  };
  Rows RowsAlong(const std::vector<int64_t>& dims, size_t dim) const {
    return {Product(dims, 0, dim), dims[dim], Product(dims, dim + 1, dims.size())};
  }

  // body(offset of element j of the row) for j in [0, n).
  void ForRow(const Rows& rows, llvm::Value* row_start,
              const std::function<void(llvm::Value*)>& body) {
    ir_.Loop(rows.n, [&](llvm::Value* j) {
      body(b().CreateAdd(row_start, b().CreateMul(j, b().getInt64(rows.inner))));
    });
  }
  // body(offset of the row's first element) for every row.
  void ForEachRow(const Rows& rows, const std::function<void(llvm::Value*)>& body) {
    if (rows.outer == 0 || rows.n == 0 || rows.inner == 0) return;
    ir_.Loops({rows.outer, rows.inner}, [&](const std::vector<llvm::Value*>& i) {
      body(b().CreateAdd(b().CreateMul(i[0], b().getInt64(rows.n * rows.inner)),
                         i[1]));
    });
  }

  absl::Status Softmax() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_.inputs[0];
    const std::vector<int64_t> dims = DimsOf(node());
    // A rank-0 input (dim 0 or -1) is one row of one element.
    const Rows rows =
        dims.empty() ? Rows{1, 1, 1}
                     : RowsAlong(dims, NormalizeDim(call.Int("dim"),
                                                    static_cast<int64_t>(dims.size())));
    const DType t = out_dtype();
    const DType in_type = input->type()->dtype;
    llvm::Value* in = Data(input);
    llvm::Value* out = args_[0];
    llvm::Type* reg = ir_.RegisterType(t);
    const bool log = node().is_call("log_softmax");
    auto load = [&](llvm::Value* at) {
      return ir_.Convert(ir_.LoadAt(in, in_type, at), in_type, t);
    };
    ForEachRow(rows, [&](llvm::Value* start) {
      llvm::Value* max = ir_.Slot(t, ir_.Constant(t, -std::numeric_limits<double>::infinity()));
      // The shift only keeps exp from overflowing: a NaN in the row makes
      // every result NaN whatever the shift, so the maximum may ignore
      // NaN (one vmaxps a step instead of a NaN-propagating sequence).
      ForRow(rows, start, [&](llvm::Value* at) {
        llvm::Value* next = b().CreateBinaryIntrinsic(llvm::Intrinsic::maxnum,
                                                      b().CreateLoad(reg, max), load(at));
        if (auto* i = llvm::dyn_cast<llvm::Instruction>(next)) {
          i->setHasNoNaNs(true);
          i->setHasAllowReassoc(true);
          i->setHasNoSignedZeros(true);
        }
        b().CreateStore(next, max);
      });
      llvm::Value* m = b().CreateLoad(reg, max);
      llvm::Value* sum = ir_.Slot(t, ir_.Constant(t, 0));
      ForRow(rows, start, [&](llvm::Value* at) {
        llvm::Value* e = ir_.Exp(b().CreateFSub(load(at), m));
        if (!log) ir_.StoreAt(out, t, at, e);
        b().CreateStore(ir_.ReassocAdd(b().CreateLoad(reg, sum), e), sum);
      });
      llvm::Value* s = b().CreateLoad(reg, sum);
      if (log) {
        llvm::Value* shift = b().CreateFAdd(m, ir_.Log(s));
        ForRow(rows, start, [&](llvm::Value* at) {
          ir_.StoreAt(out, t, at, b().CreateFSub(load(at), shift));
        });
      } else {
        llvm::Value* inv = b().CreateFDiv(ir_.Constant(t, 1), s);
        ForRow(rows, start, [&](llvm::Value* at) {
          ir_.StoreAt(out, t, at, b().CreateFMul(ir_.LoadAt(out, t, at), inv));
        });
      }
    });
    return absl::OkStatus();
  }

  absl::Status LayerNorm() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_.inputs[0];
    const std::vector<int64_t> dims = DimsOf(node());
    const size_t k = call.Ints("normalized_shape").size();
    const Rows rows{Product(dims, 0, dims.size() - k),
                    Product(dims, dims.size() - k, dims.size()), 1};
    const DType t = out_dtype();
    const DType in_type = input->type()->dtype;
    llvm::Value* in = Data(input);
    llvm::Value* out = args_[0];
    llvm::Type* reg = ir_.RegisterType(t);
    const Node* weight = call.IsNone("weight") ? nullptr : call.TensorNode("weight");
    const Node* bias = call.IsNone("bias") ? nullptr : call.TensorNode("bias");
    const double eps = call.Float("eps");
    auto load = [&](llvm::Value* at) {
      return ir_.Convert(ir_.LoadAt(in, in_type, at), in_type, t);
    };
    llvm::Value* n = ir_.Constant(t, static_cast<double>(rows.n));
    ForEachRow(rows, [&](llvm::Value* start) {
      llvm::Value* sum = ir_.Slot(t, ir_.Constant(t, 0));
      ForRow(rows, start, [&](llvm::Value* at) {
        b().CreateStore(ir_.ReassocAdd(b().CreateLoad(reg, sum), load(at)), sum);
      });
      llvm::Value* mean = b().CreateFDiv(b().CreateLoad(reg, sum), n);
      llvm::Value* sq = ir_.Slot(t, ir_.Constant(t, 0));
      ForRow(rows, start, [&](llvm::Value* at) {
        llvm::Value* d = b().CreateFSub(load(at), mean);
        b().CreateStore(ir_.ReassocAdd(b().CreateLoad(reg, sq), b().CreateFMul(d, d)), sq);
      });
      llvm::Value* var = b().CreateFDiv(b().CreateLoad(reg, sq), n);
      llvm::Value* inv = b().CreateFDiv(
          ir_.Constant(t, 1), ir_.Sqrt(b().CreateFAdd(var, ir_.Constant(t, eps))));
      ir_.Loop(rows.n, [&](llvm::Value* j) {
        llvm::Value* at = b().CreateAdd(start, j);
        llvm::Value* y = b().CreateFMul(b().CreateFSub(load(at), mean), inv);
        if (weight != nullptr) {
          y = b().CreateFMul(y, ir_.Convert(ir_.LoadAt(Data(weight), weight->type()->dtype, j),
                                            weight->type()->dtype, t));
        }
        if (bias != nullptr) {
          y = b().CreateFAdd(y, ir_.Convert(ir_.LoadAt(Data(bias), bias->type()->dtype, j),
                                            bias->type()->dtype, t));
        }
        ir_.StoreAt(out, t, at, y);
      });
    });
    return absl::OkStatus();
  }

  absl::Status BatchNorm() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const std::vector<int64_t> dims = DimsOf(node());
    const DType t = out_dtype();
    std::vector<int64_t> channel(dims.size(), 0);
    if (dims.size() > 1) channel[1] = 1;
    const Node* x = call.TensorNode("input");
    std::vector<View> ins{Broadcast(x, dims)};
    std::vector<std::string> names{"running_mean", "running_var", "weight", "bias"};
    std::vector<bool> present;
    for (const std::string& name : names) {
      present.push_back(!call.IsNone(name));
      if (!present.back()) continue;
      const Node* n = call.TensorNode(name);
      ins.push_back(View{Data(n), n->type()->dtype, 0, channel});
    }
    const double eps = call.Float("eps");
    ir_.Map(dims, Out(), ins, [&](const std::vector<llvm::Value*>& v) {
      size_t next = 0;
      auto take = [&]() {
        const View& view = ins[next];
        return ir_.Convert(v[next++], view.dtype, t);
      };
      llvm::Value* y = take();
      llvm::Value* mean = take();
      llvm::Value* var = take();
      y = b().CreateFDiv(b().CreateFSub(y, mean),
                         ir_.Sqrt(b().CreateFAdd(var, ir_.Constant(t, eps))));
      if (present[2]) y = b().CreateFMul(y, take());
      if (present[3]) y = b().CreateFAdd(y, take());
      return y;
    });
    return absl::OkStatus();
  }

  // 2-D pooling over the last two dims; every dim before them is a plane.
  // Window bounds follow PyTorch (and the interpreter): the sum of an
  // average covers the window clipped to the input, its divisor the window
  // clipped to the padded input (count_include_pad) or to the input.
  absl::Status Pool() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_.inputs[0];
    const std::vector<int64_t> in_dims = DimsOf(*input);
    const std::vector<int64_t> dims = DimsOf(node());
    const size_t r = in_dims.size();
    const int64_t planes = Product(in_dims, 0, r - 2);
    const int64_t h = in_dims[r - 2], w = in_dims[r - 1];
    const int64_t oh = dims[r - 2], ow = dims[r - 1];
    const bool adaptive = node().is_call("adaptive_avg_pool2d");
    const bool is_max = node().is_call("max_pool2d");
    auto pair = [&](absl::string_view name, int64_t fallback) {
      std::vector<int64_t> v = call.IsNone(name) ? std::vector<int64_t>{}
                                                 : call.Ints(name);
      if (v.empty()) v = {fallback};
      if (v.size() == 1) v.push_back(v[0]);
      return v;
    };
    std::vector<int64_t> kernel{1, 1}, stride{1, 1}, pad{0, 0}, dil{1, 1};
    bool include_pad = false;
    if (!adaptive) {
      kernel = pair("kernel_size", 1);
      stride = call.IsNone("stride") || call.Ints("stride").empty()
                   ? kernel
                   : pair("stride", 1);
      pad = pair("padding", 0);
      if (is_max) dil = pair("dilation", 1);
      if (!is_max) include_pad = call.Bool("count_include_pad");
    }
    const DType t = out_dtype();
    const DType in_type = input->type()->dtype;
    llvm::Type* reg = ir_.RegisterType(t);
    llvm::Value* in = Data(input);
    auto i64 = [&](int64_t v) { return b().getInt64(v); };
    auto smax = [&](llvm::Value* a, llvm::Value* c) {
      return b().CreateSelect(b().CreateICmpSGT(a, c), a, c);
    };
    auto smin = [&](llvm::Value* a, llvm::Value* c) {
      return b().CreateSelect(b().CreateICmpSLT(a, c), a, c);
    };
    llvm::Value* const init = is_max ? Extreme(t, false) : ir_.Constant(t, 0);
    struct Window {
      std::vector<llvm::Value*> begin{2}, end{2}, extent{2};
    };
    // The window of output pixel (oy, ox), clipped to the input.
    auto window = [&](llvm::Value* oy, llvm::Value* ox) {
      Window win;
      for (int d = 0; d < 2; ++d) {
        const int64_t size = d == 0 ? h : w, out_size = d == 0 ? oh : ow;
        llvm::Value* o = d == 0 ? oy : ox;
        if (adaptive) {
          win.begin[d] = b().CreateSDiv(b().CreateMul(o, i64(size)), i64(out_size));
          win.end[d] = b().CreateSDiv(
              b().CreateAdd(b().CreateMul(b().CreateAdd(o, i64(1)), i64(size)),
                            i64(out_size - 1)),
              i64(out_size));
          win.extent[d] = b().CreateSub(win.end[d], win.begin[d]);
          continue;
        }
        llvm::Value* start = b().CreateSub(b().CreateMul(o, i64(stride[d])), i64(pad[d]));
        if (is_max) {
          win.begin[d] = start;
          continue;
        }
        llvm::Value* stop = smin(b().CreateAdd(start, i64(kernel[d])), i64(size + pad[d]));
        win.extent[d] = b().CreateSub(stop, start);
        win.begin[d] = smax(start, i64(0));
        win.end[d] = smin(stop, i64(size));
        if (!include_pad) win.extent[d] = b().CreateSub(win.end[d], win.begin[d]);
      }
      return win;
    };
    // visit(y, x) for every input pixel of the window.
    auto for_taps = [&](const Window& win,
                        const std::function<void(llvm::Value*, llvm::Value*)>& visit) {
      if (!is_max) {
        ir_.LoopBetween(win.begin[0], win.end[0], [&](llvm::Value* y) {
          ir_.LoopBetween(win.begin[1], win.end[1], [&](llvm::Value* x) { visit(y, x); });
        });
        return;
      }
      // Fixed taps with a bounds check each (dilation makes the window
      // sparse).
      for (int64_t ky = 0; ky < kernel[0]; ++ky) {
        for (int64_t kx = 0; kx < kernel[1]; ++kx) {
          llvm::Value* y = b().CreateAdd(win.begin[0], i64(ky * dil[0]));
          llvm::Value* x = b().CreateAdd(win.begin[1], i64(kx * dil[1]));
          llvm::Value* inside = b().CreateAnd(b().CreateICmpULT(y, i64(h)),
                                              b().CreateICmpULT(x, i64(w)));
          llvm::Function* f = b().GetInsertBlock()->getParent();
          auto* take = llvm::BasicBlock::Create(ir_.context(), "tap", f);
          auto* next = llvm::BasicBlock::Create(ir_.context(), "next", f);
          b().CreateCondBr(inside, take, next);
          b().SetInsertPoint(take);
          visit(y, x);
          b().CreateBr(next);
          b().SetInsertPoint(next);
        }
      }
    };
    auto combine = [&](llvm::Value* a, llvm::Value* v) {
      return is_max ? ir_.MaximumAnyZero(a, v, IsUnsignedInt(t)) : b().CreateFAdd(a, v);
    };
    auto divide = [&](llvm::Value* v, const Window& win) {
      return is_max ? v
                    : b().CreateFDiv(v, b().CreateSIToFP(
                                            b().CreateMul(win.extent[0], win.extent[1]), reg));
    };
    auto load = [&](llvm::Value* at) {
      return ir_.Convert(ir_.LoadAt(in, in_type, at), in_type, t);
    };
    if (step_.operand_channels_last[0]) {
      // NHWC: each window tap is a contiguous row of channels, so the
      // channel loops vectorize; the result row accumulates in place.
      const int64_t c = in_dims[1];
      ir_.Loops({in_dims[0], oh, ow}, [&](const std::vector<llvm::Value*>& i) {
        const Window win = window(i[1], i[2]);
        llvm::Value* image = b().CreateMul(i[0], i64(h * w * c));
        llvm::Value* row = b().CreateMul(
            b().CreateAdd(b().CreateMul(b().CreateAdd(b().CreateMul(i[0], i64(oh)), i[1]),
                                        i64(ow)),
                          i[2]),
            i64(c));
        if (is_max && kernel[0] * kernel[1] <= kMaxTapsInRegisters) {
          MaxPoolPixelInRegisters(win.begin, kernel, dil, {h, w, c}, image, row, load);
          return;
        }
        ir_.Loop(c, [&](llvm::Value* k) {
          ir_.StoreAt(args_[0], t, b().CreateAdd(row, k), init);
        });
        for_taps(win, [&](llvm::Value* y, llvm::Value* x) {
          llvm::Value* pixel = b().CreateAdd(
              image, b().CreateMul(b().CreateAdd(b().CreateMul(y, i64(w)), x), i64(c)));
          ir_.Loop(c, [&](llvm::Value* k) {
            llvm::Value* at = b().CreateAdd(row, k);
            ir_.StoreAt(args_[0], t, at,
                        combine(ir_.LoadAt(args_[0], t, at),
                                load(b().CreateAdd(pixel, k))));
          });
        });
        if (!is_max) {
          ir_.Loop(c, [&](llvm::Value* k) {
            llvm::Value* at = b().CreateAdd(row, k);
            ir_.StoreAt(args_[0], t, at, divide(ir_.LoadAt(args_[0], t, at), win));
          });
        }
      });
      return absl::OkStatus();
    }
    ir_.Loops({planes, oh, ow}, [&](const std::vector<llvm::Value*>& i) {
      const Window win = window(i[1], i[2]);
      llvm::Value* acc = ir_.Slot(t, init);
      llvm::Value* plane = b().CreateMul(i[0], i64(h * w));
      for_taps(win, [&](llvm::Value* y, llvm::Value* x) {
        llvm::Value* at = b().CreateAdd(plane, b().CreateAdd(b().CreateMul(y, i64(w)), x));
        b().CreateStore(combine(b().CreateLoad(reg, acc), load(at)), acc);
      });
      llvm::Value* at = b().CreateAdd(
          b().CreateMul(i[0], i64(oh * ow)), b().CreateAdd(b().CreateMul(i[1], i64(ow)), i[2]));
      ir_.StoreAt(args_[0], t, at, divide(b().CreateLoad(reg, acc), win));
    });
    return absl::OkStatus();
  }

  // Up to this many taps, an NHWC max pool keeps each output pixel's
  // maxima in registers.
  static constexpr int64_t kMaxTapsInRegisters = 25;

  // One NHWC output pixel of a max pool: each tap's bounds are checked
  // once, a tap outside the input reads pixel (0, 0) instead and is masked
  // to -inf, so the loop over channels is straight-line code that
  // vectorizes with the running maxima in registers (no branch, load and
  // store of the output per tap). `hwc`: the input's height, width and
  // channels; `image`, `row`: offsets of the input image and the output
  // pixel.
  void MaxPoolPixelInRegisters(const std::vector<llvm::Value*>& begin,
                               const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& dil,
                               const std::array<int64_t, 3>& hwc, llvm::Value* image,
                               llvm::Value* row,
                               const std::function<llvm::Value*(llvm::Value*)>& load) {
    auto i64 = [&](int64_t v) { return b().getInt64(v); };
    const DType t = out_dtype();
    std::vector<std::pair<llvm::Value*, llvm::Value*>> taps;  // (inside, pixel)
    for (int64_t ky = 0; ky < kernel[0]; ++ky) {
      for (int64_t kx = 0; kx < kernel[1]; ++kx) {
        llvm::Value* y = b().CreateAdd(begin[0], i64(ky * dil[0]));
        llvm::Value* x = b().CreateAdd(begin[1], i64(kx * dil[1]));
        llvm::Value* inside = b().CreateAnd(b().CreateICmpULT(y, i64(hwc[0])),
                                            b().CreateICmpULT(x, i64(hwc[1])));
        llvm::Value* at = b().CreateAdd(b().CreateMul(y, i64(hwc[1])), x);
        at = b().CreateSelect(inside, at, i64(0));
        taps.emplace_back(inside, b().CreateAdd(image, b().CreateMul(at, i64(hwc[2]))));
      }
    }
    llvm::Value* const lowest = Extreme(t, false);
    ir_.Loop(hwc[2], [&](llvm::Value* k) {
      llvm::Value* acc = lowest;
      for (const auto& [inside, pixel] : taps) {
        llvm::Value* v = b().CreateSelect(inside, load(b().CreateAdd(pixel, k)), lowest);
        acc = ir_.MaximumAnyZero(acc, v, IsUnsignedInt(t));
      }
      ir_.StoreAt(args_[0], t, b().CreateAdd(row, k), acc);
    });
  }

  // Per tensor or per channel of `axis`: a scalar, or a tensor of one
  // value, or one value per channel.
  View ChannelParam(const OpCall& call, absl::string_view name,
                    const std::vector<int64_t>& dims, std::optional<int64_t> axis,
                    double* scalar) {
    const Argument& a = call.Get(name);
    if (!a.is_node()) {
      *scalar = a.number();
      return {};
    }
    const Node* n = a.node();
    View v{Data(n), n->type()->dtype, 0, std::vector<int64_t>(dims.size(), 0)};
    int64_t count = 1;
    for (Dim d : n->type()->shape) count *= d.value();
    if (axis.has_value() && count > 1) v.strides[*axis] = 1;
    return v;
  }

  // Computed in f64 as the interpreter does, so the integers agree exactly:
  // q = clamp(round_half_even(x / scale) + zero_point), NaN -> zero point;
  // x = (q - zero_point) * scale. f8e4m3: q = x / scale to the nearest
  // f8e4m3 value (float8_ir.h).
  absl::Status Quantize() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = call.TensorNode("input");
    const std::vector<int64_t> dims = DimsOf(node());
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::optional<int64_t> axis;
    if (call.schema().ParamIndex("axis") >= 0 && !call.IsNone("axis")) {
      axis = NormalizeDim(call.Int("axis"), rank);
    }
    const bool dequantize = node().is_call("dequantize");
    const bool per_channel = node().is_call("quantize_per_channel");
    const char* scale_name = per_channel ? "scales" : "scale";
    const char* zp_name = per_channel ? "zero_points" : "zero_point";
    double scale_value = 0, zp_value = 0;
    std::vector<View> ins{
        View{Data(input), input->type()->dtype, 0, ContiguousStrides(dims)}};
    View scale = ChannelParam(call, scale_name, dims, axis, &scale_value);
    View zp = ChannelParam(call, zp_name, dims, axis, &zp_value);
    const bool scale_tensor = scale.base != nullptr, zp_tensor = zp.base != nullptr;
    if (scale_tensor) ins.push_back(scale);
    if (zp_tensor) ins.push_back(zp);
    const DType in_type = input->type()->dtype;
    const DType t = out_dtype();
    constexpr DType f64 = DType::kF64;
    ir_.Map(dims, Out(), ins, [&](const std::vector<llvm::Value*>& v) {
      size_t next = 1;
      llvm::Value* s = scale_tensor ? ir_.Convert(v[next++], scale.dtype, f64)
                                    : ir_.Constant(f64, scale_value);
      llvm::Value* z = zp_tensor ? ir_.Convert(v[next++], zp.dtype, f64)
                                 : ir_.Constant(f64, zp_value);
      llvm::Value* x = in_type == DType::kF8E4M3 ? Float8E4M3ToDouble(b(), v[0])
                                                 : ir_.Convert(v[0], in_type, f64);
      if (dequantize) {
        return ir_.Convert(b().CreateFMul(b().CreateFSub(x, z), s), f64, t);
      }
      // f8e4m3 is symmetric (zero point 0): x / scale, rounded and
      // saturated by the conversion.
      // A NaN x goes through as itself, keeping its sign.
      if (t == DType::kF8E4M3) {
        return DoubleToFloat8E4M3(
            b(), b().CreateSelect(b().CreateFCmpUNO(x, x), x, b().CreateFDiv(x, s)));
      }
      llvm::Value* quotient = scale_tensor || !MultipliesForDivision(scale_value)
                                  ? b().CreateFDiv(x, s)
                                  : DivideByConstant(x, scale_value);
      llvm::Value* q = b().CreateFAdd(
          b().CreateUnaryIntrinsic(llvm::Intrinsic::nearbyint, quotient), z);
      // NaN takes the zero point; the conversion saturates to i8's or
      // u8's range, which is the clamp.
      q = b().CreateSelect(b().CreateFCmpUNO(x, x), z, q);
      return ir_.Convert(q, f64, t);
    });
    return absl::OkStatus();
  }

  // x / divisor (f64) rounded exactly as the division rounds it, from a
  // multiply by the reciprocal and one correction: the remainder
  // x - q0 * divisor is exact with an FMA, and q0 + remainder / divisor with
  // the rounded reciprocal is the correctly rounded quotient (Markstein's
  // theorem). A vector f64 division is several times slower: it made
  // quantize the slowest loop of an int8 model. An infinite x gives a NaN
  // remainder; q0 (infinite) is the quotient then.
  // Where DivideByConstant applies: the theorem needs a normal divisor
  // with a normal reciprocal, and without FMA instructions llvm.fma is a
  // libm call, slower than the division.
  bool MultipliesForDivision(double divisor) const {
    return has_fma_ && std::isnormal(divisor) && std::isnormal(1.0 / divisor);
  }
  llvm::Value* DivideByConstant(llvm::Value* x, double divisor) {
    llvm::Value* reciprocal = ir_.Constant(DType::kF64, 1.0 / divisor);
    llvm::Value* d = ir_.Constant(DType::kF64, divisor);
    llvm::Value* q0 = b().CreateFMul(x, reciprocal);
    auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* add) {
      return b().CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {a, m, add});
    };
    llvm::Value* remainder = fma(b().CreateFNeg(q0), d, x);
    llvm::Value* q1 = fma(remainder, reciprocal, q0);
    return b().CreateSelect(b().CreateFCmpUNO(q1, q1), q0, q1);
  }

  // Returns 1 from the step function when `bad`.
  void FailIf(llvm::Value* bad) {
    llvm::Function* f = b().GetInsertBlock()->getParent();
    auto* fail = llvm::BasicBlock::Create(ir_.context(), "fail", f);
    auto* ok = llvm::BasicBlock::Create(ir_.context(), "ok", f);
    b().CreateCondBr(bad, fail, ok);
    b().SetInsertPoint(fail);
    b().CreateRet(b().getInt32(1));
    b().SetInsertPoint(ok);
  }

  // gather, index_select and embedding: each result element copies the
  // input element its index names; an index outside [0, size) fails the
  // step (the interpreter reports it too).
  absl::Status Index() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const bool embedding = node().is_call("embedding");
    const Node* table = call.TensorNode(embedding ? "weight" : "input");
    const Node* index = call.TensorNode(embedding ? "input" : "index");
    const std::vector<int64_t> dims = DimsOf(node());
    const std::vector<int64_t> table_dims = DimsOf(*table);
    const std::vector<int64_t> table_strides = ContiguousStrides(table_dims);
    const std::vector<int64_t> index_dims = DimsOf(*index);
    const DType index_type = index->type()->dtype;
    const int64_t rank = static_cast<int64_t>(table_dims.size());
    const int64_t dim =
        embedding ? 0 : NormalizeDim(call.Int("dim"), std::max<int64_t>(rank, 1));
    const int64_t size = rank == 0 ? 1 : table_dims[dim];
    ir_.Loops(dims, [&](const std::vector<llvm::Value*>& i) {
      // Where the index for this element is.
      std::vector<llvm::Value*> at;
      std::vector<int64_t> at_strides;
      if (embedding) {
        at.assign(i.begin(), i.end() - 1);
        at_strides = ContiguousStrides(index_dims);
      } else if (node().is_call("index_select")) {
        if (rank > 0) at = {i[dim]};
        at_strides = {1};
      } else {
        at = i;
        at_strides = ContiguousStrides(index_dims);
      }
      at_strides.resize(at.size());
      llvm::Value* j = ir_.Convert(
          ir_.Load(View{Data(index), index_type, 0, at_strides}, at), index_type,
          DType::kI64);
      FailIf(b().CreateICmpUGE(j, b().getInt64(size)));
      llvm::Value* offset = b().getInt64(0);
      for (int64_t k = 0; k < rank; ++k) {
        llvm::Value* coordinate = k == dim ? j : (embedding ? i.back() : i[k]);
        offset = b().CreateAdd(offset,
                               b().CreateMul(coordinate, b().getInt64(table_strides[k])));
      }
      ir_.Store(Out(), i, ir_.LoadAt(Data(table), table->type()->dtype, offset));
    });
    return absl::OkStatus();
  }

  // The index of the first maximum along dim (of all elements when dim is
  // None); NaN counts as the maximum, the first NaN wins.
  absl::Status Argmax() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const Node* input = step_.inputs[0];
    std::vector<int64_t> in_dims = DimsOf(*input);
    Rows rows{1, 1, 1};
    for (int64_t d : in_dims) rows.n *= d;
    if (!call.IsNone("dim") && !in_dims.empty()) {
      rows = RowsAlong(in_dims, NormalizeDim(call.Int("dim"),
                                             static_cast<int64_t>(in_dims.size())));
    }
    const DType t = input->type()->dtype;
    llvm::Type* reg = ir_.RegisterType(t);
    const bool fp = IsFloatingPoint(t);
    llvm::Value* in = Data(input);
    if (rows.outer == 0 || rows.inner == 0 || rows.n == 0) return absl::OkStatus();
    ir_.Loops({rows.outer, rows.inner}, [&](const std::vector<llvm::Value*>& i) {
      llvm::Value* start = b().CreateAdd(
          b().CreateMul(i[0], b().getInt64(rows.n * rows.inner)), i[1]);
      llvm::Value* best = ir_.Slot(t, ir_.LoadAt(in, t, start));
      llvm::Value* best_at = ir_.Slot(DType::kI64, b().getInt64(0));
      ir_.Loop(rows.n, [&](llvm::Value* j) {
        llvm::Value* v = ir_.LoadAt(
            in, t, b().CreateAdd(start, b().CreateMul(j, b().getInt64(rows.inner))));
        llvm::Value* current = b().CreateLoad(reg, best);
        llvm::Value* better =
            fp ? b().CreateAnd(b().CreateFCmpORD(current, current),
                               b().CreateFCmpUGT(v, current))
               : (t == DType::kBool || t == DType::kU8 ? b().CreateICmpUGT(v, current)
                                                       : b().CreateICmpSGT(v, current));
        b().CreateStore(b().CreateSelect(better, v, current), best);
        b().CreateStore(b().CreateSelect(better, j, b().CreateLoad(b().getInt64Ty(), best_at)),
                        best_at);
      });
      llvm::Value* at = b().CreateAdd(b().CreateMul(i[0], b().getInt64(rows.inner)), i[1]);
      ir_.StoreAt(args_[0], DType::kI64, at, b().CreateLoad(b().getInt64Ty(), best_at));
    });
    return absl::OkStatus();
  }

  absl::Status Create() {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node()));
    const std::vector<int64_t> dims = DimsOf(node());
    const DType t = out_dtype();
    if (!node().is_call("arange")) {
      const double value =
          node().is_call("full")
              ? (call.Get("fill_value").is_bool() ? call.Get("fill_value").bool_value()
                                                  : call.Get("fill_value").number())
              : 0.0;
      // Into an integer dtype, as the interpreter: an integer literal is
      // exact (wrapping into narrower dtypes), a float literal truncates
      // and saturates (NaN gives 0).
      if (node().is_call("full") && call.Get("fill_value").is_int() &&
          !IsFloatingPoint(t) && t != DType::kBool) {
        llvm::Value* exact = llvm::ConstantInt::get(
            ir_.RegisterType(t), call.Get("fill_value").int_value(), true);
        ir_.Map(dims, Out(), {}, [&](const std::vector<llvm::Value*>&) {
          return exact;
        });
        return absl::OkStatus();
      }
      if (node().is_call("full") && call.Get("fill_value").is_double() &&
          !IsFloatingPoint(t) && t != DType::kBool) {
        const unsigned bits = ir_.RegisterType(t)->getIntegerBitWidth();
        const bool u = t == DType::kU8;
        const double lo = u ? 0 : -std::ldexp(1.0, bits - 1);
        const double hi = u ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
        // hi of i64 rounds up to 2^63, which no int64_t holds.
        const llvm::APInt top = u ? llvm::APInt::getMaxValue(bits)
                                  : llvm::APInt::getSignedMaxValue(bits);
        llvm::Value* saturated =
            std::isnan(value) ? ir_.Constant(t, 0)
            : value >= hi     ? llvm::ConstantInt::get(ir_.RegisterType(t), top)
                              : ir_.Constant(t, std::trunc(std::max(value, lo)));
        ir_.Map(dims, Out(), {}, [&](const std::vector<llvm::Value*>&) {
          return saturated;
        });
        return absl::OkStatus();
      }
      ir_.Map(dims, Out(), {}, [&](const std::vector<llvm::Value*>&) {
        return ir_.Constant(t, value);
      });
      return absl::OkStatus();
    }
    auto integral = [](const Argument& a) { return a.is_int() || a.is_bool(); };
    auto as_int = [](const Argument& a) {
      return a.is_bool() ? int64_t{a.bool_value()} : a.int_value();
    };
    const Argument& start = call.Get("start");
    const Argument& step = call.Get("step");
    const bool all_int = integral(start) && integral(call.Get("end")) && integral(step);
    ir_.Loops(dims, [&](const std::vector<llvm::Value*>& i) {
      llvm::Value* v;
      if (all_int) {
        v = ir_.Convert(b().CreateAdd(b().getInt64(as_int(start)),
                                      b().CreateMul(i[0], b().getInt64(as_int(step)))),
                        DType::kI64, t);
      } else {
        llvm::Value* x = b().CreateFAdd(
            ir_.Constant(DType::kF64, start.is_bool() ? start.bool_value() : start.number()),
            b().CreateFMul(ir_.Convert(i[0], DType::kI64, DType::kF64),
                           ir_.Constant(DType::kF64,
                                        step.is_bool() ? step.bool_value() : step.number())));
        v = ir_.Convert(x, DType::kF64, t);
      }
      ir_.Store(Out(), i, v);
    });
    return absl::OkStatus();
  }

  void LibraryCall() {
    const int n = static_cast<int>(step_.inputs.size()) + 1;
    llvm::Value* buffers =
        b().CreateAlloca(b().getPtrTy(), b().getInt32(n));
    for (int i = 0; i < n; ++i) {
      b().CreateStore(args_[i], b().CreateConstInBoundsGEP1_32(b().getPtrTy(), buffers, i));
    }
    llvm::FunctionCallee run = ir_.module().getOrInsertFunction(
        kLibraryCallName, b().getInt32Ty(), b().getPtrTy(), b().getPtrTy());
    llvm::Value* rc = b().CreateCall(run, {args_[n], buffers});
    b().CreateRet(rc);
    returned_ = true;
  }

 public:
  bool returned() const { return returned_; }

 private:
  IrEmitter& ir_;
  const Program& p_;
  const Step& step_;
  const bool has_fma_;  // The target CPU fuses multiply-adds (llvm.fma is one instruction).
  std::vector<llvm::Value*> args_;
  bool returned_ = false;
};

llvm::Value* BufferPointer(llvm::IRBuilder<>& b, const BufferRef& ref,
                           int num_inputs, llvm::Value* io, llvm::Value* arena,
                           llvm::Value* state) {
  auto slot = [&](llvm::Value* table, int index) {
    return b.CreateLoad(b.getPtrTy(),
                        b.CreateConstInBoundsGEP1_32(b.getPtrTy(), table, index));
  };
  switch (ref.where) {
    case BufferRef::Where::kInput:
      return slot(io, ref.index);
    case BufferRef::Where::kOutput:
      return slot(io, num_inputs + ref.index);
    case BufferRef::Where::kState:
      return slot(state, ref.index);
    case BufferRef::Where::kArena:
      return b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), arena, ref.offset);
  }
  return nullptr;
}

// Steps of the same op on the same shapes (the time steps of an unrolled
// LSTM, the layers of a transformer) lower to the same function but for its
// name: the first of each kind is kept and called for all, so LLVM
// optimizes it once. Compared by their IR text (with the name left out),
// which is exact: anything that differs, shows.
class IdenticalFunctions {
 public:
  // `f` itself, or the identical function seen before (and `f` erased).
  llvm::Function* Reuse(llvm::Function* f) {
    std::string text;
    llvm::raw_string_ostream os(text);
    f->print(os);
    os.flush();
    const std::string name = absl::StrCat("@", f->getName().str(), "(");
    const size_t at = text.find(name);
    if (at != std::string::npos) text.replace(at, name.size(), "@(");
    auto [it, added] = seen_.emplace(std::move(text), f);
    if (added) return f;
    f->eraseFromParent();
    return it->second;
  }

 private:
  absl::flat_hash_map<std::string, llvm::Function*> seen_;
};

// Steps whose outermost loop has independent iterations, each writing its
// own part of the result: split over the run's threads when they touch at
// least kMinSplitElements elements (a parallel region costs a few
// microseconds), each part at least kMinPartElements. Whatever the threads
// the program was compiled for: a compiled model file runs on the threads
// its loader asks for, and on one thread the split calls the loop whole.
constexpr int64_t kMinSplitElements = int64_t{1} << 16;
constexpr int64_t kMinPartElements = int64_t{1} << 15;
// The elements a step reads or writes, whichever is more: a reduction's
// work is its input's.
int64_t Elements(const Node& value) {
  const std::vector<int64_t> dims = DimsOf(value);
  return Product(dims, 0, dims.size());
}
int64_t StepElements(const Step& step) {
  const int64_t results = Elements(*step.node);
  if (step.kind != StepKind::kReduce || step.inputs.empty()) return results;
  return std::max(results, Elements(*step.inputs[0]));
}

bool SplitsOverThreads(const Step& step) {
  if (step.elided || !step.node->type().has_value()) return false;
  switch (step.kind) {
    case StepKind::kPointwise:
    case StepKind::kView:
    case StepKind::kCopy:
    case StepKind::kQuantize:
    case StepKind::kSoftmax:
    case StepKind::kLayerNorm:
    case StepKind::kBatchNorm:
      break;
    case StepKind::kReduce:
      // Its outermost loop is over the kept dims only where some are kept
      // (a reduction to one value starts with the loop that sums).
      if (Elements(*step.node) < 2) return false;
      break;
    default:
      return false;
  }
  return StepElements(step) >= kMinSplitElements;
}

// `i32 name_part(ptr buffers, i64 begin, i64 end)`: calls `step` with its
// pointers from `buffers` and the range, the signature
// graft_orc_parallel_for calls (runtime/parallel_steps.h).
llvm::Function* PartFunction(IrEmitter& ir, llvm::Function* step, int pointers) {
  llvm::IRBuilder<>& b = ir.b();
  auto* type = llvm::FunctionType::get(b.getInt32Ty(),
                                       {b.getPtrTy(), b.getInt64Ty(), b.getInt64Ty()}, false);
  auto* part = llvm::Function::Create(type, llvm::Function::InternalLinkage,
                                      step->getName() + "_part", ir.module());
  part->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(ir.context(), "entry", part));
  std::vector<llvm::Value*> args;
  for (int k = 0; k < pointers; ++k) {
    args.push_back(b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_32(
                                                  b.getPtrTy(), part->getArg(0), k)));
  }
  args.push_back(part->getArg(1));
  args.push_back(part->getArg(2));
  b.CreateRet(b.CreateCall(step, args));
  return part;
}

// One step's function, and with `split` what came of its partitioned
// loop (IrEmitter::PartitionNextLoop): `partitioned` false when the code
// had more than one top-level loop.
struct EmittedStep {
  llvm::Function* function = nullptr;
  std::optional<int64_t> extent;
  bool partitioned = true;
};
absl::StatusOr<EmittedStep> EmitStep(IrEmitter& ir, const Program& program, size_t i,
                                     int pointers, bool split, const HostCpu& cpu) {
  const Step& step = program.steps[i];
  EmittedStep emitted;
  emitted.function = ir.BeginFunction(absl::StrCat("step", i), pointers, split);
  llvm::Function* f = emitted.function;
  StepEmitter emitter(ir, program, step, f, cpu.has_fma);
  if (split) ir.PartitionNextLoop(f->getArg(pointers), f->getArg(pointers + 1));
  absl::Status s = emitter.Emit();
  if (split) {
    absl::StatusOr<std::optional<int64_t>> partitioned = ir.EndPartition();
    emitted.partitioned = partitioned.ok();
    if (partitioned.ok()) emitted.extent = *partitioned;
  }
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("%", step.node->name(), " (",
                                               step.node->target(), "): ", s.message()));
  }
  if (!emitter.returned()) ir.b().CreateRet(ir.b().getInt32(0));
  return emitted;
}

// How a step split over threads is called: its part function over
// [0, extent), in parts of at least `grain` iterations. No part function:
// the step emitted no loop and is called whole.
struct Split {
  llvm::Function* part = nullptr;
  int64_t extent = 0, grain = 1;
};

}  // namespace

absl::StatusOr<std::string> CompileToObject(const Program& program) {
  llvm::LLVMContext context;
  llvm::Module module("graft", context);
  IrEmitter ir(context, module);
  ASSIGN_OR_RETURN(const HostCpu cpu, TargetCpu(program.options.target_cpu));

  std::vector<llvm::Function*> functions;
  std::vector<std::optional<Split>> splits(program.steps.size());
  absl::flat_hash_map<llvm::Function*, llvm::Function*> parts;  // By step function.
  IdenticalFunctions identical;
  int table_size = 0;  // Pointers in the largest split step's table.
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    const int pointers = 1 + static_cast<int>(step.inputs.size()) +
                         (step.kind == StepKind::kLibrary ? 1 : 0);
    bool split = SplitsOverThreads(step);
    ASSIGN_OR_RETURN(EmittedStep emitted, EmitStep(ir, program, i, pointers, split, cpu));
    if (split && !emitted.partitioned) {
      // Its code has loops after the one split: every part would run them
      // whole. Emitted again, unsplit.
      emitted.function->eraseFromParent();
      split = false;
      ASSIGN_OR_RETURN(emitted, EmitStep(ir, program, i, pointers, split, cpu));
    }
    functions.push_back(identical.Reuse(emitted.function));
    if (!split) continue;
    splits[i] = Split{nullptr, emitted.extent.value_or(0), 1};
    if (!emitted.extent.has_value() || *emitted.extent <= 1) continue;
    auto [at, fresh] = parts.try_emplace(functions.back(), nullptr);
    if (fresh) at->second = PartFunction(ir, functions.back(), pointers);
    const int64_t per_iteration = std::max<int64_t>(1, StepElements(step) / *emitted.extent);
    *splits[i] = {at->second, *emitted.extent,
                  std::max<int64_t>(1, kMinPartElements / per_iteration)};
    table_size = std::max(table_size, pointers);
  }

  llvm::IRBuilder<>& b = ir.b();
  auto* entry_type = llvm::FunctionType::get(
      b.getInt32Ty(), {b.getPtrTy(), b.getPtrTy(), b.getPtrTy()}, false);
  auto* entry = llvm::Function::Create(
      entry_type, llvm::Function::ExternalLinkage, kEntryName, module);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Value* io = entry->getArg(0);
  llvm::Value* arena = entry->getArg(1);
  llvm::Value* state = entry->getArg(2);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", entry));
  const int num_inputs = static_cast<int>(program.input_types.size());
  llvm::Value* table = nullptr;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    if (step.elided) continue;  // Its function is empty.
    std::vector<llvm::Value*> args{
        BufferPointer(b, step.result, num_inputs, io, arena, state)};
    for (const BufferRef& r : step.operands) {
      args.push_back(BufferPointer(b, r, num_inputs, io, arena, state));
    }
    if (step.kind == StepKind::kLibrary) {
      args.push_back(BufferPointer(
          b, {BufferRef::Where::kState, step.state, 0}, num_inputs, io, arena, state));
    }
    llvm::Value* rc = nullptr;
    if (splits[i].has_value() && splits[i]->part != nullptr) {
      // The step's pointers in a table (one for all split steps, which run
      // one after another, in the entry's stack frame), and its loop over
      // the run's threads.
      if (table == nullptr) {
        llvm::IRBuilder<> at_start(&entry->getEntryBlock(), entry->getEntryBlock().begin());
        table = at_start.CreateAlloca(b.getPtrTy(), b.getInt32(table_size));
      }
      for (size_t k = 0; k < args.size(); ++k) {
        b.CreateStore(args[k], b.CreateConstInBoundsGEP1_32(b.getPtrTy(), table, k));
      }
      llvm::FunctionCallee parallel_for = module.getOrInsertFunction(
          runtime::kParallelForSymbol, b.getInt32Ty(), b.getPtrTy(), b.getPtrTy(),
          b.getInt64Ty(), b.getInt64Ty());
      rc = b.CreateCall(parallel_for, {splits[i]->part, table, b.getInt64(splits[i]->extent),
                                       b.getInt64(splits[i]->grain)});
    } else {
      if (splits[i].has_value()) {
        args.push_back(b.getInt64(0));
        args.push_back(b.getInt64(splits[i]->extent));
      }
      rc = b.CreateCall(functions[i], args);
    }
    if (!step.can_fail) continue;
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(context, "fail", entry);
    llvm::BasicBlock* next = llvm::BasicBlock::Create(context, "next", entry);
    b.CreateCondBr(b.CreateICmpNE(rc, b.getInt32(0)), fail, next);
    b.SetInsertPoint(fail);
    b.CreateRet(b.getInt32(static_cast<int>(i) + 1));
    b.SetInsertPoint(next);
  }
  b.CreateRet(b.getInt32(0));

  // Profiling (GRAFT_ORC_PERF_MAP): every step function named (steps that
  // share a function show under the first one's name).
  const bool separate_steps = std::getenv("GRAFT_ORC_PERF_MAP") != nullptr;
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    if (separate_steps && &f != entry) {
      f.addFnAttr(llvm::Attribute::NoInline);
      f.setLinkage(llvm::Function::ExternalLinkage);
    }
    // A step called from several places stays one function: inlined, it
    // would be optimized once per call again.
    if (&f != entry && !f.hasOneUse()) f.addFnAttr(llvm::Attribute::NoInline);
    if (cpu.has_avx512) f.addFnAttr("prefer-vector-width", "512");
    // Vector divisions marked arcp (the tanh and erf rationals) become a
    // reciprocal estimate and one Newton step: a few times the throughput
    // of vdivps, within an ulp or two.
    f.addFnAttr("reciprocal-estimates", "vec-divf:1");
  }
  if (const char* dir = std::getenv("GRAFT_ORC_DUMP_IR")) {
    std::error_code error;
    llvm::raw_fd_ostream file(std::string(dir) + "/program.txt", error);
    if (!error) file << program.Describe();
  }
  return OptimizeAndEmitObject(module, cpu);
}

}  // namespace graft::orc
