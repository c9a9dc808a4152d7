// LSTM, GRU and RNN, unrolled over the (static) sequence into the linear
// layers and pointwise ops they are made of, so every backend runs them
// and the pointwise steps fuse. The input projection of all time steps is
// one linear layer in front; each step adds the recurrent projection of
// the previous hidden state. Directions forward, reverse and
// bidirectional; layouts 0 ([seq, batch, ...]) and 1 ([batch, seq, ...]).
// Activations Sigmoid, Tanh and Relu; no clip; every sequence full length
// (a sequence_lens input must be known and equal the sequence length).

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"

namespace graft::onnx_import {
namespace {

enum class Cell { kLstm, kGru, kRnn };

struct RecurrentShape {
  Cell cell;
  // f, g (and h for LSTM), ONNX's names for the gate activation and the
  // others: Sigmoid, Tanh or Relu.
  std::vector<std::string> activations;
  int64_t gates = 1;  // 4 (LSTM), 3 (GRU), 1 (RNN).
  int64_t seq = 0, batch = 0, hidden = 0, directions = 1;
  bool batch_first = false;  // layout=1.
  bool linear_before_reset = false;  // GRU.
};

absl::StatusOr<Node*> Slice(NodeContext& ctx, Node* x, int64_t dim, int64_t start, int64_t stop) {
  return ctx.Call("slice", {x, dim, start, stop});
}

// Row d of a [directions, ...] input, without the leading dim.
absl::StatusOr<Node*> DirectionOf(NodeContext& ctx, Node* x, int64_t d) {
  ASSIGN_OR_RETURN(Node * row, Slice(ctx, x, 0, d, d + 1));
  return ctx.Call("squeeze", {row, Argument::IntList({0})});
}

// Gate k of a [..., gates * hidden] value.
absl::StatusOr<Node*> Gate(NodeContext& ctx, Node* x, int64_t k, int64_t hidden) {
  return Slice(ctx, x, -1, k * hidden, (k + 1) * hidden);
}

absl::Status ReadActivations(NodeContext& ctx, RecurrentShape& s) {
  ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> activations, ctx.attrs().Strings("activations"));
  s.activations = s.cell == Cell::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                  : s.cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                         : std::vector<std::string>{"Tanh"};
  if (!activations.has_value()) return absl::OkStatus();
  const size_t n = s.activations.size();
  // One list per direction; both directions must agree.
  if (activations->size() != n && activations->size() != n * s.directions) {
    return NodeContext::Invalid(absl::StrCat("activations has ", activations->size(), " entries; expected ",
                                             n, " per direction"));
  }
  for (size_t i = 0; i < activations->size(); ++i) {
    const std::string& a = (*activations)[i];
    if (a != "Sigmoid" && a != "Tanh" && a != "Relu") {
      return NodeContext::Unsupported(absl::StrCat("activation ", a, " is not supported (Sigmoid, Tanh and Relu are)"));
    }
    if (i >= n && a != (*activations)[i - n]) {
      return NodeContext::Unsupported("different activations for the two directions are not supported");
    }
  }
  s.activations.assign(activations->begin(), activations->begin() + n);
  return absl::OkStatus();
}

absl::Status CheckAttributes(NodeContext& ctx, RecurrentShape& s) {
  RETURN_IF_ERROR(ReadActivations(ctx, s));
  ASSIGN_OR_RETURN(std::optional<std::vector<float>> alpha, ctx.attrs().Floats("activation_alpha"));
  ASSIGN_OR_RETURN(std::optional<std::vector<float>> beta, ctx.attrs().Floats("activation_beta"));
  if ((alpha.has_value() && !alpha->empty()) || (beta.has_value() && !beta->empty())) {
    return NodeContext::Unsupported("activation_alpha and activation_beta are not supported");
  }
  ASSIGN_OR_RETURN(std::optional<float> clip, ctx.attrs().OptionalFloat("clip"));
  if (clip.has_value()) return NodeContext::Unsupported("clip is not supported");
  if (s.cell == Cell::kLstm) {
    ASSIGN_OR_RETURN(int64_t input_forget, ctx.attrs().Int("input_forget", 0));
    if (input_forget != 0) return NodeContext::Unsupported("input_forget=1 is not supported");
  }
  // sequence_lens: every sequence must be full length.
  if (ctx.HasInput(4)) {
    const Tensor* lens = ctx.Constant(4);
    if (lens == nullptr) {
      return NodeContext::Unsupported("sequence_lens computed at run time is not supported");
    }
    for (int64_t i = 0; i < lens->NumElements(); ++i) {
      if (static_cast<int64_t>(lens->GetAsDouble(i)) != s.seq) {
        return NodeContext::Unsupported(absl::StrCat("sequence_lens shorter than the sequence (", s.seq,
                                                     ") are not supported"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RecurrentShape> ReadShape(NodeContext& ctx, Cell cell) {
  RecurrentShape s{.cell = cell, .gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1};
  ASSIGN_OR_RETURN(std::string direction, ctx.attrs().String("direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return NodeContext::Invalid(absl::StrCat("direction \"", direction, "\" is not forward, reverse or bidirectional"));
  }
  s.directions = direction == "bidirectional" ? 2 : 1;
  ASSIGN_OR_RETURN(int64_t layout, ctx.attrs().Int("layout", 0));
  s.batch_first = layout != 0;
  ASSIGN_OR_RETURN(std::optional<int64_t> hidden, ctx.attrs().OptionalInt("hidden_size"));
  if (cell == Cell::kGru) {
    ASSIGN_OR_RETURN(int64_t lbr, ctx.attrs().Int("linear_before_reset", 0));
    s.linear_before_reset = lbr != 0;
  }
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(TensorType tr, ctx.InputType(2));
  ASSIGN_OR_RETURN(std::vector<int64_t> xd, StaticDimsOf(tx, "the input X"));
  ASSIGN_OR_RETURN(std::vector<int64_t> rd, StaticDimsOf(tr, "the recurrence weight R"));
  if (xd.size() != 3 || rd.size() != 3) {
    return NodeContext::Invalid(absl::StrCat("X ", tx.ToString(), " and R ", tr.ToString(), " must be 3-D"));
  }
  s.seq = s.batch_first ? xd[1] : xd[0];
  s.batch = s.batch_first ? xd[0] : xd[1];
  s.hidden = rd[2];
  if ((hidden.has_value() && *hidden != s.hidden) || rd[1] != s.gates * s.hidden || rd[0] != s.directions) {
    return NodeContext::Invalid(absl::StrCat("R ", tr.ToString(), " does not match hidden_size and direction"));
  }
  if (s.seq < 1) return NodeContext::Unsupported("an empty sequence is not supported");
  RETURN_IF_ERROR(CheckAttributes(ctx, s));
  return s;
}

// The initial state input `i` for direction d as [batch, hidden] (zeros
// when absent).
absl::StatusOr<Node*> InitialState(NodeContext& ctx, const RecurrentShape& s, int i, int64_t d, DType dtype) {
  if (!ctx.HasInput(i)) {
    return ctx.Call("zeros", {Argument::IntList({s.batch, s.hidden})}, {{"dtype", dtype}});
  }
  ASSIGN_OR_RETURN(Node * all, ctx.Input(i));
  if (s.batch_first) {
    ASSIGN_OR_RETURN(all, ctx.Call("permute", {all, Argument::IntList({1, 0, 2})}));
  }
  return DirectionOf(ctx, all, d);
}

struct Step {
  Node* h;
  Node* c;  // LSTM only.
};

absl::StatusOr<Node*> Activate(NodeContext& ctx, const std::string& name, Node* x) {
  return ctx.Call(name == "Sigmoid" ? "sigmoid" : name == "Tanh" ? "tanh" : "relu", {x});
}

// One time step: `xw` is the input projection (with both biases where they
// add), `h`/`c` the state, `r` the recurrence weight [gates * hidden,
// hidden], `rb` the recurrence bias of GRU's reset gate path.
absl::StatusOr<Step> CellStep(NodeContext& ctx, const RecurrentShape& s, Node* xw, Step state, Node* r,
                              Node* r_bias, Node* peephole) {
  const int64_t n = s.hidden;
  if (s.cell == Cell::kLstm) {
    ASSIGN_OR_RETURN(Node * hr, ctx.Call("linear", {state.h, r}));
    ASSIGN_OR_RETURN(Node * g, ctx.Call("add", {xw, hr}));
    ASSIGN_OR_RETURN(Node * i, Gate(ctx, g, 0, n));
    ASSIGN_OR_RETURN(Node * o, Gate(ctx, g, 1, n));
    ASSIGN_OR_RETURN(Node * f, Gate(ctx, g, 2, n));
    ASSIGN_OR_RETURN(Node * c_in, Gate(ctx, g, 3, n));
    if (peephole != nullptr) {
      ASSIGN_OR_RETURN(Node * pi, Gate(ctx, peephole, 0, n));
      ASSIGN_OR_RETURN(Node * pf, Gate(ctx, peephole, 2, n));
      ASSIGN_OR_RETURN(Node * ci, ctx.Call("mul", {pi, state.c}));
      ASSIGN_OR_RETURN(Node * cf, ctx.Call("mul", {pf, state.c}));
      ASSIGN_OR_RETURN(i, ctx.Call("add", {i, ci}));
      ASSIGN_OR_RETURN(f, ctx.Call("add", {f, cf}));
    }
    const std::string &fa = s.activations[0], &ga = s.activations[1], &ha = s.activations[2];
    ASSIGN_OR_RETURN(i, Activate(ctx, fa, i));
    ASSIGN_OR_RETURN(f, Activate(ctx, fa, f));
    ASSIGN_OR_RETURN(c_in, Activate(ctx, ga, c_in));
    ASSIGN_OR_RETURN(Node * kept, ctx.Call("mul", {f, state.c}));
    ASSIGN_OR_RETURN(Node * added, ctx.Call("mul", {i, c_in}));
    ASSIGN_OR_RETURN(Node * c, ctx.Call("add", {kept, added}));
    if (peephole != nullptr) {
      ASSIGN_OR_RETURN(Node * po, Gate(ctx, peephole, 1, n));
      ASSIGN_OR_RETURN(Node * co, ctx.Call("mul", {po, c}));
      ASSIGN_OR_RETURN(o, ctx.Call("add", {o, co}));
    }
    ASSIGN_OR_RETURN(o, Activate(ctx, fa, o));
    ASSIGN_OR_RETURN(Node * tc, Activate(ctx, ha, c));
    ASSIGN_OR_RETURN(Node * h, ctx.Call("mul", {o, tc}));
    return Step{h, c};
  }
  if (s.cell == Cell::kRnn) {
    ASSIGN_OR_RETURN(Node * hr, ctx.Call("linear", {state.h, r}));
    ASSIGN_OR_RETURN(Node * g, ctx.Call("add", {xw, hr}));
    ASSIGN_OR_RETURN(Node * h, Activate(ctx, s.activations[0], g));
    return Step{h, nullptr};
  }
  // GRU: z, r, h gates. xw holds Wb for all gates and Rb for z and r.
  ASSIGN_OR_RETURN(Node * xz, Gate(ctx, xw, 0, n));
  ASSIGN_OR_RETURN(Node * xr, Gate(ctx, xw, 1, n));
  ASSIGN_OR_RETURN(Node * xh, Gate(ctx, xw, 2, n));
  ASSIGN_OR_RETURN(Node * r_zr, Slice(ctx, r, 0, 0, 2 * n));
  ASSIGN_OR_RETURN(Node * r_h, Slice(ctx, r, 0, 2 * n, 3 * n));
  ASSIGN_OR_RETURN(Node * hzr, ctx.Call("linear", {state.h, r_zr}));
  ASSIGN_OR_RETURN(Node * hz, Gate(ctx, hzr, 0, n));
  ASSIGN_OR_RETURN(Node * hr, Gate(ctx, hzr, 1, n));
  ASSIGN_OR_RETURN(Node * z, ctx.Call("add", {xz, hz}));
  ASSIGN_OR_RETURN(z, Activate(ctx, s.activations[0], z));
  ASSIGN_OR_RETURN(Node * reset, ctx.Call("add", {xr, hr}));
  ASSIGN_OR_RETURN(reset, Activate(ctx, s.activations[0], reset));
  Node* candidate;
  const Argument bias = r_bias == nullptr ? Argument() : Argument(r_bias);  // None without B.
  if (s.linear_before_reset) {
    ASSIGN_OR_RETURN(Node * hh, ctx.Call("linear", {state.h, r_h, bias}));
    ASSIGN_OR_RETURN(Node * gated, ctx.Call("mul", {reset, hh}));
    ASSIGN_OR_RETURN(candidate, ctx.Call("add", {xh, gated}));
  } else {
    ASSIGN_OR_RETURN(Node * gated_h, ctx.Call("mul", {reset, state.h}));
    ASSIGN_OR_RETURN(Node * hh, ctx.Call("linear", {gated_h, r_h, bias}));
    ASSIGN_OR_RETURN(candidate, ctx.Call("add", {xh, hh}));
  }
  ASSIGN_OR_RETURN(candidate, Activate(ctx, s.activations[1], candidate));
  // (1 - z) * candidate + z * h = candidate + z * (h - candidate).
  ASSIGN_OR_RETURN(Node * diff, ctx.Call("sub", {state.h, candidate}));
  ASSIGN_OR_RETURN(Node * moved, ctx.Call("mul", {z, diff}));
  ASSIGN_OR_RETURN(Node * h, ctx.Call("add", {candidate, moved}));
  return Step{h, nullptr};
}

// The input projection of direction d for all steps: [seq, batch, gates
// * hidden], with the biases that simply add (all of them but GRU's
// recurrent bias of the candidate gate); `r_bias` gets that one.
absl::StatusOr<Node*> InputProjection(NodeContext& ctx, const RecurrentShape& s, Node* x, int64_t d,
                                      Node** r_bias) {
  ASSIGN_OR_RETURN(Node * w_all, ctx.Input(1, "W"));
  ASSIGN_OR_RETURN(Node * w, DirectionOf(ctx, w_all, d));
  Argument bias;
  *r_bias = nullptr;
  if (ctx.HasInput(3)) {
    ASSIGN_OR_RETURN(Node * b_all, ctx.Input(3, "B"));
    ASSIGN_OR_RETURN(Node * b, DirectionOf(ctx, b_all, d));
    const int64_t width = s.gates * s.hidden;
    ASSIGN_OR_RETURN(Node * wb, Slice(ctx, b, 0, 0, width));
    ASSIGN_OR_RETURN(Node * rb, Slice(ctx, b, 0, width, 2 * width));
    if (s.cell == Cell::kGru) {
      // Rb of z and r adds to the input projection; Rb of h stays with
      // the recurrent product (reset gates it when linear_before_reset).
      ASSIGN_OR_RETURN(Node * rb_zr, Slice(ctx, rb, 0, 0, 2 * s.hidden));
      ASSIGN_OR_RETURN(*r_bias, Slice(ctx, rb, 0, 2 * s.hidden, 3 * s.hidden));
      ASSIGN_OR_RETURN(Node * zero_h, ctx.Call("zeros", {Argument::IntList({s.hidden})}, {{"dtype", ctx.TypeOf(rb)->dtype}}));
      ASSIGN_OR_RETURN(rb, ctx.Call("concat", {Argument(std::vector<Argument>{rb_zr, zero_h}), int64_t{0}}));
    }
    ASSIGN_OR_RETURN(Node * sum, ctx.Call("add", {wb, rb}));
    bias = sum;
  }
  return ctx.Call("linear", {x, w, bias});
}

absl::Status ConvertRecurrent(NodeContext& ctx, Cell cell) {
  ASSIGN_OR_RETURN(RecurrentShape s, ReadShape(ctx, cell));
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(std::string direction, ctx.attrs().String("direction", "forward"));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "X"));
  if (s.batch_first) {
    ASSIGN_OR_RETURN(x, ctx.Call("permute", {x, Argument::IntList({1, 0, 2})}));
  }
  Node* peepholes = nullptr;
  if (cell == Cell::kLstm && ctx.HasInput(7)) {
    ASSIGN_OR_RETURN(peepholes, ctx.Input(7, "P"));
  }
  std::vector<Argument> ys, hs, cs;
  for (int64_t d = 0; d < s.directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    Node* r_bias;
    ASSIGN_OR_RETURN(Node * xw, InputProjection(ctx, s, x, d, &r_bias));
    ASSIGN_OR_RETURN(Node * r_all, ctx.Input(2, "R"));
    ASSIGN_OR_RETURN(Node * r, DirectionOf(ctx, r_all, d));
    Node* p = nullptr;
    if (peepholes != nullptr) {
      ASSIGN_OR_RETURN(p, DirectionOf(ctx, peepholes, d));
    }
    Step state;
    ASSIGN_OR_RETURN(state.h, InitialState(ctx, s, 5, d, tx.dtype));
    state.c = nullptr;
    if (cell == Cell::kLstm) {
      ASSIGN_OR_RETURN(state.c, InitialState(ctx, s, 6, d, tx.dtype));
    }
    std::vector<Argument> outputs(s.seq);
    for (int64_t k = 0; k < s.seq; ++k) {
      const int64_t t = reverse ? s.seq - 1 - k : k;
      ASSIGN_OR_RETURN(Node * xt, DirectionOf(ctx, xw, t));  // Step t of [seq, ...].
      ASSIGN_OR_RETURN(state, CellStep(ctx, s, xt, state, r, r_bias, p));
      ASSIGN_OR_RETURN(Node * out, ctx.Call("unsqueeze", {state.h, int64_t{0}}));
      outputs[t] = out;
    }
    ASSIGN_OR_RETURN(Node * y, ctx.Call("concat", {Argument(std::move(outputs)), int64_t{0}}));
    ASSIGN_OR_RETURN(y, ctx.Call("unsqueeze", {y, int64_t{1}}));  // [seq, 1, batch, hidden].
    ys.push_back(y);
    ASSIGN_OR_RETURN(Node * h, ctx.Call("unsqueeze", {state.h, int64_t{0}}));
    hs.push_back(h);
    if (state.c != nullptr) {
      ASSIGN_OR_RETURN(Node * c, ctx.Call("unsqueeze", {state.c, int64_t{0}}));
      cs.push_back(c);
    }
  }
  auto join = [&](std::vector<Argument> parts, int64_t dim) -> absl::StatusOr<Node*> {
    if (parts.size() == 1) return parts[0].node();
    return ctx.Call("concat", {Argument(std::move(parts)), dim});
  };
  ASSIGN_OR_RETURN(Node * y, join(ys, 1));  // [seq, directions, batch, hidden].
  ASSIGN_OR_RETURN(Node * h, join(hs, 0));  // [directions, batch, hidden].
  if (s.batch_first) {
    ASSIGN_OR_RETURN(y, ctx.Call("permute", {y, Argument::IntList({2, 0, 1, 3})}));
    ASSIGN_OR_RETURN(h, ctx.Call("permute", {h, Argument::IntList({1, 0, 2})}));
  }
  if (ctx.OutputUsed(0)) RETURN_IF_ERROR(ctx.SetOutput(0, y));
  if (ctx.OutputUsed(1)) RETURN_IF_ERROR(ctx.SetOutput(1, h));
  if (cell == Cell::kLstm && ctx.OutputUsed(2)) {
    ASSIGN_OR_RETURN(Node * c, join(cs, 0));
    if (s.batch_first) {
      ASSIGN_OR_RETURN(c, ctx.Call("permute", {c, Argument::IntList({1, 0, 2})}));
    }
    RETURN_IF_ERROR(ctx.SetOutput(2, c));
  }
  return absl::OkStatus();
}

absl::Status ConvertLstm(NodeContext& ctx) { return ConvertRecurrent(ctx, Cell::kLstm); }
absl::Status ConvertGru(NodeContext& ctx) { return ConvertRecurrent(ctx, Cell::kGru); }
absl::Status ConvertRnn(NodeContext& ctx) { return ConvertRecurrent(ctx, Cell::kRnn); }

}  // namespace

void AddRecurrentConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "LSTM", .convert = ConvertLstm});
  table.push_back({.op_type = "GRU", .convert = ConvertGru});
  table.push_back({.op_type = "RNN", .convert = ConvertRnn});
}

}  // namespace graft::onnx_import
