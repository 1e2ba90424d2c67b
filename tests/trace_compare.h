// Reading and comparing activation traces (`tinyformer trace`,
// tools/python/torch_trace.py; docs/FORMAT.md section 3) — the rule of
// tools/python/compare_trace.py, in C++ for the tests:
//   - names in A's forward order (metadata "names"); a name B lacks, or a
//     shape that differs, is a divergence;
//   - U8 tensors (attention masks) must be equal cell by cell;
//   - other tensors: |a-b| / (atol + rtol|b|) <= 1 at every compared position
//     (NaN / inf not equal in both: a divergence);
//   - padded positions are skipped. A stack's padding (encoder, decoder,
//     layers) is read from STACK.0.self_attn.mask: a key no query may attend
//     (in A or in B). Dim 1 of embeddings, block input/output, q, z, attention
//     output, ffn.hidden, final norms and logits are the stack's positions; k,
//     v of cross_attn the encoder's; scores/weights [B,H,L,S] skip padded
//     queries (dim 2) and padded keys (dim 3).
// The first divergence in forward order is reported as
//   first divergence: decoder.1.cross_attn.scores (max 3.2e-2 at [0,2,5,1])
// with max = the largest |a-b| over compared positions, at its index.
#pragma once

#include "engine/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace test_helpers {

struct TraceTensor {
    tinyformer::Shape shape;
    std::vector<float> values;  // masks as 0 / 1
    bool mask = false;          // stored as U8
};

struct TraceFile {
    std::vector<std::string> names;  // metadata "names", forward order
    std::map<std::string, TraceTensor> tensors;
    std::map<std::string, std::string> metadata;

    const TraceTensor& at(const std::string& name) const { return tensors.at(name); }
};

inline TraceFile read_trace(const std::string& path) {
    const tinyformer::SafetensorsFile file = tinyformer::SafetensorsFile::read(path);
    TraceFile trace;
    trace.metadata = file.metadata();
    if (trace.metadata.count("names"))
        trace.names = nlohmann::json::parse(trace.metadata.at("names")).get<std::vector<std::string>>();
    for (const auto& [name, stored] : file.tensors()) {
        TraceTensor t;
        t.shape = stored.shape;
        if (stored.dtype == "U8") {
            const tinyformer::BoolTensor m = file.read_bool(name);
            t.values.assign(m.values.begin(), m.values.end());
            t.mask = true;
        } else {
            const tinyformer::Tensor f = file.read_float(name);
            t.values.assign(f.data(), f.data() + f.numel());
        }
        trace.tensors[name] = std::move(t);
    }
    return trace;
}

// 3.2e-2: one decimal, exponent without padding (compare_trace.py's short_float).
inline std::string short_float(double x) {
    if (x == 0) return "0";
    if (!std::isfinite(x)) return std::isnan(x) ? "nan" : "inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.1e", x);
    const std::string s = text;
    const size_t e = s.find('e');
    return s.substr(0, e) + "e" + std::to_string(std::stoi(s.substr(e + 1)));
}

struct TraceDivergence {
    std::string name, reason;  // reason: "values", "mask", "shape", "missing"
    double max_abs = 0;
    std::vector<int64_t> index;

    std::string line() const {
        if (reason == "missing") return "first divergence: " + name + " (only in A: B has no activation of this name)";
        if (reason == "shape") return "first divergence: " + name + " (shapes differ)";
        std::string at;
        for (int64_t i : index) at.append(at.empty() ? "" : ",").append(std::to_string(i));
        return "first divergence: " + name + " (max " + short_float(max_abs) + " at [" + at + "])";
    }
};

struct TraceComparison {
    int64_t compared = 0;                       // names compared
    std::map<std::string, double> worst_ratio;  // per name: max |a-b| / (atol + rtol|b|)
    std::map<std::string, double> max_abs;      // per name: max |a-b| over compared positions
    std::optional<TraceDivergence> first;
    std::vector<std::string> only_in_b;
};

// [B, T] 1 = padding, from STACK.0.self_attn.mask; empty when there is no such mask.
inline std::vector<uint8_t> stack_padding(const TraceFile& trace, const std::string& stack, int64_t* batch,
                                          int64_t* length) {
    auto found = trace.tensors.find(stack + ".0.self_attn.mask");
    if (found == trace.tensors.end() || found->second.shape.size() != 3) return {};
    const TraceTensor& m = found->second;
    const int64_t B = m.shape[0], L = m.shape[1], S = m.shape[2];
    std::vector<uint8_t> padded(static_cast<size_t>(B * S), 1);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l)
            for (int64_t s = 0; s < S; ++s)
                if (m.values[static_cast<size_t>((b * L + l) * S + s)] != 0) padded[static_cast<size_t>(b * S + s)] = 0;
    *batch = B;
    *length = S;
    return padded;
}

// (axis, stack) pairs: which axes of `name` index which stack's positions.
inline std::vector<std::pair<size_t, std::string>> padded_axes(const std::string& name, size_t rank, bool single_stack) {
    if (rank < 2) return {};
    if (name == "src_embed.output" || name == "encoder.norm.output") return {{1, "encoder"}};
    if (name == "tgt_embed.output" || name == "decoder.norm.output") return {{1, "decoder"}};
    if (name == "embed.output" || name == "layers.norm.output") return {{1, "layers"}};
    if (name == "logits") return {{1, single_stack ? "layers" : "decoder"}};
    std::string stack;
    for (const char* s : {"encoder.", "decoder.", "layers."})
        if (name.starts_with(s)) stack = std::string(s, std::string(s).size() - 1);
    if (stack.empty()) return {};
    const size_t layer_end = name.find('.', stack.size() + 1);
    if (layer_end == std::string::npos) return {};
    const std::string rest = name.substr(layer_end + 1);
    for (const char* attn : {"self_attn.", "cross_attn."})
        if (rest.starts_with(attn)) {
            const std::string what = rest.substr(std::string(attn).size());
            const std::string keys = std::string(attn) == "cross_attn." ? "encoder" : stack;
            if (what == "mask") return {};
            if (what == "k" || what == "v") return {{1, keys}};
            if ((what == "scores" || what == "weights") && rank == 4) return {{2, stack}, {3, keys}};
        }
    return {{1, stack}};
}

inline TraceComparison compare_traces(const TraceFile& a, const TraceFile& b, double atol = 1e-4, double rtol = 1e-4) {
    TraceComparison result;
    for (const std::string& name : b.names)
        if (std::find(a.names.begin(), a.names.end(), name) == a.names.end()) result.only_in_b.push_back(name);
    bool single_stack = false;
    for (const TraceFile* t : {&a, &b})
        for (const std::string& name : t->names) single_stack = single_stack || name.starts_with("layers.");
    struct StackPadding {
        int64_t batch = 0, length = 0;
        std::vector<uint8_t> flags;
    };
    std::map<std::string, StackPadding> padding;
    for (const char* stack : {"encoder", "decoder", "layers"}) {
        StackPadding p, q;
        p.flags = stack_padding(a, stack, &p.batch, &p.length);
        q.flags = stack_padding(b, stack, &q.batch, &q.length);
        if (p.flags.empty()) p = q;
        else if (q.flags.size() == p.flags.size() && q.length == p.length)
            for (size_t i = 0; i < p.flags.size(); ++i) p.flags[i] = p.flags[i] | q.flags[i];
        padding[stack] = p;
    }
    for (const std::string& name : a.names) {
        const TraceTensor& x = a.at(name);
        TraceDivergence found{name, "", 0, {}};
        auto other = b.tensors.find(name);
        if (other == b.tensors.end()) {
            found.reason = "missing";
        } else if (other->second.shape != x.shape) {
            found.reason = "shape";
        } else {
            const TraceTensor& y = other->second;
            ++result.compared;
            const size_t rank = x.shape.size();
            std::vector<int64_t> strides(rank, 1);
            for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.shape[d];
            const auto axes = padded_axes(name, rank, single_stack);
            const bool exact = x.mask || y.mask;
            double worst = 0, worst_abs = 0;
            int64_t worst_at = 0;
            for (int64_t i = 0; i < static_cast<int64_t>(x.values.size()); ++i) {
                if (!exact) {
                    bool padded = false;
                    for (const auto& [axis, stack] : axes) {
                        const StackPadding& p = padding[stack];
                        if (p.flags.empty() || p.batch != x.shape[0] || p.length != x.shape[axis]) continue;
                        const int64_t bi = i / strides[0], pos = (i / strides[axis]) % x.shape[axis];
                        padded = padded || p.flags[static_cast<size_t>(bi * p.length + pos)] != 0;
                    }
                    if (padded) continue;
                }
                const double u = x.values[static_cast<size_t>(i)], v = y.values[static_cast<size_t>(i)];
                double diff = u == v ? 0.0 : std::fabs(u - v);
                if (std::isnan(diff)) diff = INFINITY;
                const double ratio = exact ? diff : diff / (atol + rtol * (std::isfinite(v) ? std::fabs(v) : 0.0));
                worst = std::max(worst, ratio);
                if (diff > worst_abs) {
                    worst_abs = diff;
                    worst_at = i;
                }
            }
            result.worst_ratio[name] = worst;
            result.max_abs[name] = worst_abs;
            if (exact ? worst != 0 : worst > 1.0) {
                found.reason = exact ? "mask" : "values";
                found.max_abs = worst_abs;
                for (size_t d = 0; d < rank; ++d) found.index.push_back((worst_at / strides[d]) % x.shape[d]);
            }
        }
        if (!found.reason.empty()) {
            result.first = found;
            break;
        }
    }
    return result;
}

}  // namespace test_helpers
