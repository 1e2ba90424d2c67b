// run_forward — the `tinyformer forward` contract (FORMAT.md section 2) on
// loaded files, shared by the CLI and the parity tests.
//
// Inputs (ids I64 or I32; masks BOOL or U8 with PyTorch's key_padding_mask
// meaning: true = padding, ignore this key):
//   encoder_decoder: src_ids [B,S], tgt_ids [B,T], optional
//                    src_key_padding_mask [B,S], tgt_key_padding_mask [B,T]
//   single-stack:    ids [B,T], optional key_padding_mask [B,T],
//                    prefix_len [B] (prefix_lm models only)
// Outputs (F32): "logits" [B,T,V]; with `attention`, every call's per-head
// weights under their name in a trace, "decoder.1.cross_attn.weights"
// (models/study/trace.h). Refused with the file
// and the input's name: unknown input names, wrong dtypes, ranks or batch
// sizes, token ids outside the vocabulary, T > max_len (when positions are
// encoded), prefix_len outside 0..T, and a source row that is all padding
// while its target row has a real query (that query would attend no key) —
// unless the config has a "mask_value": then that query's cross-attention
// weights are uniform over the padded source (engine/attention.h), whose
// memory rows are exactly 0 (padded queries), so it reads out_proj(b_V).
#pragma once

#include "engine/io/safetensors.h"
#include "models/transformer.h"
#include "models/study/trace.h"

#include <map>
#include <string>

namespace tinyformer {

std::map<std::string, Tensor> run_forward(const Model& model, const SafetensorsFile& inputs, bool attention);

// The same pass on the same inputs, handing its intermediates to `observer`
// (a models/study/trace.h Trace, as `tinyformer trace --inputs` does); returns the logits.
Tensor forward_pass(const Model& model, const SafetensorsFile& inputs, Observer* observer);

}  // namespace tinyformer
