// Elementwise and row-wise operations, each in its one place.
//
//   softmax_rows:  y_i = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j)
//                  over the last axis; -inf entries get exactly 0 weight. A row
//                  that is entirely -inf has no distribution: Error.
//   layer_norm:    y = (x - mean) / sqrt(var + eps) * gamma + beta over the
//                  last axis, var the biased (1/N) variance, as PyTorch.
//   layer_norm_std: y = gamma * (x - mean) / (std + eps) + beta, std the
//                  UNBIASED standard deviation sqrt(sum (x - mean)^2 / (N - 1))
//                  and eps outside the root (the Annotated Transformer's
//                  LayerNorm); N >= 2. Both: an empty beta means no shift (+ 0).
//   rms_norm:      y = x / sqrt(mean(x^2) + eps) * weight over the last axis,
//                  x [..., D], weight [D], eps > 0; no mean is subtracted and
//                  there is no shift (RMSNorm: llama2.c, Llama). The sum of
//                  squares is taken in double: each x^2 of a float is exact in
//                  double and the sum's rounding (about D * 1e-16 relative) is
//                  far below float's, so every variant gives mean(x^2) correctly
//                  rounded and agrees to float rounding, whatever the order of
//                  the sum; nor can it overflow (float's x^2 is inf above 1.8e19,
//                  which in float would turn the whole row into 0). An all-zero
//                  row gives 0 (0 / sqrt(eps)).
//   relu:          max(0, x)
//   gelu:          x * 0.5 * (1 + erf(x / sqrt(2)))  — the exact form, PyTorch's default
//   gelu_tanh:     0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  — the tanh
//                  approximation: nn.GELU(approximate="tanh"), GPT-2's gelu_new
//   silu:          h * sigmoid(h) = h / (1 + exp(-h))  (nn.SiLU, "swish"). Below
//                  h = -87.3 (|silu(h)| < 1.1e-36) the result is 0, so h = -inf
//                  gives 0, not -inf / inf = NaN; a large positive h gives h.
//   swiglu:        silu(gate) * up, elementwise, gate and up of the same shape
//                  (the gated FFN's product: gate = linear1 x, up = linear3 x,
//                  both [B, T, F])
//   add:           a + b, same shapes (the residual connection)
//
// Each formula is written out plainly in engine/ops.cpp (namespace reference);
// the loops that run by default are faster variants of it for this CPU
// (engine/cpu/kernels.h). TINYFORMER_KERNELS=reference runs the plain ones.
#pragma once

#include "engine/tensor.h"

#include <vector>

namespace tinyformer {

// In place over one row of n floats. Returns false (and leaves the row
// untouched) when every entry is -inf: the caller decides what that means.
bool softmax_row(float* row, int64_t n);

// row[j] = exp(row[j] - shift) for j < n, in place; returns the sum of the
// new values. exp(-inf) is exactly 0. Arguments below -87.3 (where float exp
// underflows to subnormals) give 0. The reference variant calls std::exp; the
// fast ones use Cody-Waite range reduction and a degree-6 polynomial
// (engine/cpu/kernels.inc, within 2 ulp of std::exp), a loop the compiler
// vectorises — softmax's exponentials are a large share of attention's time.
float exp_shifted_sum(float* row, int64_t n, float shift);

// The largest of n floats (-inf for n = 0).
float row_max(const float* row, int64_t n);

Tensor softmax_rows(const Tensor& x);
// These take x (or a) by value: pass a temporary (or std::move) and the
// result reuses its memory; pass a named tensor and it is copied first.
Tensor layer_norm(Tensor x, const Tensor& gamma, const Tensor& beta, float eps);
Tensor layer_norm_std(Tensor x, const Tensor& gamma, const Tensor& beta, float eps);
Tensor relu(Tensor x);
Tensor gelu(Tensor x);
Tensor gelu_tanh(Tensor x);
Tensor rms_norm(Tensor x, const Tensor& weight, float eps);
Tensor silu(Tensor h);
Tensor swiglu(Tensor gate, const Tensor& up);
Tensor add(Tensor a, const Tensor& b);

// Rows `rows` of the batch axis of x [B, ...], in that order (repeats allowed):
// beam search keeps, drops and duplicates hypotheses this way.
Tensor gather_batch(const Tensor& x, const std::vector<int64_t>& rows);

}  // namespace tinyformer
