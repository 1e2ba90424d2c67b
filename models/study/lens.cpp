#include "models/study/lens.h"

#include "models/study/teacher_forcing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace tinyformer {

namespace {

// Copies what the lens and the attribution read, in a whole pass only: the
// stack's streams ("{stack}.{i}.output" and the embedding's), the heads'
// z = Concat(heads) of the stack's attention calls, and their sublayer
// outputs ({call}.output, "{stack}.{i}.ffn.output"). Changes nothing.
class RecordingHooks : public Hooks {
public:
    RecordingHooks(std::string stack, std::string embedding) : prefix_(stack + "."), embedding_(std::move(embedding)) {}

    void attention_heads(const AttentionCallInfo& call, Tensor& z) const override {
        if (call.whole_pass && call.name.rfind(prefix_, 0) == 0) recorded_[call.name + ".z"] = z;
    }
    void residual(const ResidualPoint& point, Tensor& x) const override {
        if (point.whole_pass && (point.name == embedding_ || point.name.rfind(prefix_, 0) == 0))
            recorded_[point.name] = x;
    }
    const Tensor& get(const std::string& name) const {
        const auto found = recorded_.find(name);
        if (found == recorded_.end()) fail("lens: the pass recorded no '", name, "'");
        return found->second;
    }

private:
    std::string prefix_, embedding_;
    mutable std::map<std::string, Tensor> recorded_;  // hooks are const: they record, they do not change the pass
};

// The model's own head on a stream of its last stack, and its parts.
Tensor unembed(const Model& model, const Tensor& x) {
    return model.encoder_decoder ? model.encoder_decoder->unembed(x) : model.single_stack->unembed(x);
}
HeadParts head_parts(const Model& model) {
    return model.encoder_decoder ? model.encoder_decoder->head_parts() : model.single_stack->head_parts();
}

// softmax of one row, in double.
std::vector<double> probabilities(const float* logits, int64_t vocabulary) {
    const double largest = *std::max_element(logits, logits + vocabulary);
    std::vector<double> p(static_cast<size_t>(vocabulary));
    double total = 0.0;
    for (int64_t v = 0; v < vocabulary; ++v) total += p[static_cast<size_t>(v)] = std::exp(logits[v] - largest);
    for (double& each : p) each /= total;
    return p;
}

int64_t argmax(const float* logits, int64_t vocabulary) {
    return static_cast<int64_t>(std::max_element(logits, logits + vocabulary) - logits);
}


const char* norm_name(const LayerNorm* norm) {
    if (!norm) return "none";
    switch (norm->kind) {
        case NormKind::LayerNorm: return "layer_norm";
        case NormKind::LayerNormStd: return "layer_norm_std";
        case NormKind::RmsNorm: return "rms_norm";
    }
    return "unknown";
}

// The final norm frozen at the stream x [D]: the direct logit of any part p [D]
// is sum_d centre(p)_d / s * w_d * u_d, u = W_U[token] (see lens.h).
struct FrozenHead {
    std::vector<double> direction;  // w_d * u_d / s (u_d / s without a norm's weight)
    bool centred = false;           // layer_norm and layer_norm_std subtract the mean
    double scale = 1.0;

    double logit_of(const float* part) const {
        const size_t D = direction.size();
        double mean = 0.0;
        if (centred) {
            for (size_t d = 0; d < D; ++d) mean += part[d];
            mean /= static_cast<double>(D);
        }
        double total = 0.0;
        for (size_t d = 0; d < D; ++d) total += (part[d] - mean) * direction[d];
        return total;
    }
};

FrozenHead freeze(const LayerNorm* norm, const float* x, const float* unembedding_row, int64_t D) {
    FrozenHead head;
    head.direction.assign(unembedding_row, unembedding_row + D);
    if (!norm) return head;
    double mean = 0.0, squares = 0.0;
    for (int64_t d = 0; d < D; ++d) mean += x[d];
    mean /= static_cast<double>(D);
    switch (norm->kind) {
        case NormKind::LayerNorm:
            for (int64_t d = 0; d < D; ++d) squares += (x[d] - mean) * (x[d] - mean);
            head.scale = std::sqrt(squares / static_cast<double>(D) + norm->eps);
            head.centred = true;
            break;
        case NormKind::LayerNormStd:
            for (int64_t d = 0; d < D; ++d) squares += (x[d] - mean) * (x[d] - mean);
            head.scale = std::sqrt(squares / static_cast<double>(D - 1)) + norm->eps;
            head.centred = true;
            break;
        case NormKind::RmsNorm:
            for (int64_t d = 0; d < D; ++d) squares += static_cast<double>(x[d]) * x[d];
            head.scale = std::sqrt(squares / static_cast<double>(D) + norm->eps);
            break;
    }
    for (int64_t d = 0; d < D; ++d) head.direction[static_cast<size_t>(d)] *= norm->weight.data()[d] / head.scale;
    return head;
}

Attribution attribute(Model& model, const RecordingHooks& recorded, const std::string& stack,
                      const std::string& embedding, int64_t layers, int64_t position, int64_t token,
                      const Tensor& logits, const ModelText& text) {
    const HeadParts parts = head_parts(model);
    const LayerNorm* norm = parts.final_norm;
    const Tensor& unembedding = parts.weight;
    const Tensor& head_bias = parts.bias;
    const int64_t D = model.config.d_model, V = logits.dim(2);
    const Tensor& last = recorded.get(stack + "." + std::to_string(layers - 1) + ".output");
    const FrozenHead head = freeze(norm, last.data() + position * D, unembedding.data() + token * D, D);
    const auto row = [&](const Tensor& t) { return t.data() + position * t.dim(2); };

    Attribution result;
    result.token = token;
    result.label = text.output_label(token);
    result.position = position;
    result.logit = logits.data()[position * V + token];
    result.norm = norm_name(norm);
    result.scale = head.scale;
    result.parts.push_back({"embed", head.logit_of(row(recorded.get(embedding)))});
    for (int64_t i = 0; i < layers; ++i) {
        const std::string layer = stack + "." + std::to_string(i);
        std::vector<std::string> calls = {layer + ".self_attn"};
        if (model.encoder_decoder) calls.push_back(layer + ".cross_attn");
        for (const std::string& call : calls) {
            const MultiHeadAttention& module = model.attention_module(call);
            const Tensor& w_out = module.out_proj_weight();  // [D, D]: output d = sum_j W_O[d, j] z_j
            const Tensor& z = recorded.get(call + ".z");
            const int64_t H = module.heads(), Dh = D / H;
            const float* z_row = row(z);
            std::vector<float> part(static_cast<size_t>(D));
            for (int64_t h = 0; h < H; ++h) {
                for (int64_t d = 0; d < D; ++d) {  // head h's output: its Dh columns of z times its Dh columns of W_O
                    double sum = 0.0;
                    for (int64_t j = h * Dh; j < (h + 1) * Dh; ++j) sum += static_cast<double>(w_out.data()[d * D + j]) * z_row[j];
                    part[static_cast<size_t>(d)] = static_cast<float>(sum);
                }
                result.parts.push_back({call + ".head" + std::to_string(h), head.logit_of(part.data())});
            }
            if (!module.out_proj_bias().empty())
                result.parts.push_back({call + ".bias", head.logit_of(module.out_proj_bias().data())});
        }
        result.parts.push_back({layer + ".ffn", head.logit_of(row(recorded.get(layer + ".ffn.output")))});
    }
    double bias = head_bias.empty() ? 0.0 : head_bias.data()[token];  // b_U[t], and the norm's b . W_U[t]
    if (norm && !norm->bias.empty())
        for (int64_t d = 0; d < D; ++d) bias += static_cast<double>(norm->bias.data()[d]) * unembedding.data()[token * D + d];
    result.parts.push_back({"bias", bias});
    for (const AttributionPart& part : result.parts) result.sum += part.logit;
    return result;
}

}  // namespace

LensCell lens_cell(const float* logits, int64_t vocabulary, int64_t answer, int64_t top, const ModelText& text) {
    const std::vector<double> p = probabilities(logits, vocabulary);
    std::vector<int64_t> order(static_cast<size_t>(vocabulary));
    std::iota(order.begin(), order.end(), 0);
    const int64_t k = std::min(top, vocabulary);
    // Ties keep the lower id first, as argmax does.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    LensCell cell;
    for (int64_t i = 0; i < k; ++i) {
        const int64_t id = order[static_cast<size_t>(i)];
        cell.top.push_back({id, text.output_label(id), p[static_cast<size_t>(id)]});
    }
    cell.answer_rank = 1;
    for (int64_t v = 0; v < vocabulary; ++v) cell.answer_rank += logits[v] > logits[answer];
    cell.answer_probability = p[static_cast<size_t>(answer)];
    return cell;
}

LensReport logit_lens(Model& model, const std::vector<int64_t>& tokens, const LensOptions& options) {
    if (options.top < 1) fail("lens: top must be >= 1, got ", options.top);
    const int64_t V = model.encoder_decoder ? model.config.tgt_vocab_size : model.config.vocab_size;
    if (options.attribute && (*options.attribute < 0 || *options.attribute >= V))
        fail("lens: the token to attribute must be in the output vocabulary 0..", V - 1, ", got ", *options.attribute);
    if (options.attribute && !model.config.norm_first)  // before any work
        fail("lens: direct logit attribution (--attribute) needs a pre-LN model (norm_first); this one is post-LN: each layer norms its own sum, "
             "x = norm(x + f(x)), so the stream after the last layer is not a sum of the heads' and FFNs' outputs and "
             "no part has a direct path to the logits");
    const ModelText text(model);
    LensReport report;
    report.stack = model.encoder_decoder ? "decoder" : "layers";
    const std::string embedding = model.encoder_decoder ? "tgt_embed.output" : "embed.output";
    const int64_t layers = model.encoder_decoder ? model.config.num_decoder_layers : model.config.num_layers;

    const std::vector<int64_t> input = model_input(model, tokens);
    const std::vector<int64_t> target = target_or_greedy(model, input, options.target);
    report.text = text.decode_input(tokens);
    report.target = text.decode_output(target);
    refuse_teacher_forced_beyond_memory(model, input, static_cast<int64_t>(target.size()));
    RecordingHooks recorded(report.stack, embedding);
    TeacherForced pass;
    {
        HookScope scope(model, &recorded);  // on top of none: the lens reads an unchanged pass
        pass = teacher_forced_pass(model, input, target);
    }
    report.logits = pass.logits;
    report.tokens = pass.decoder;
    const int64_t n = static_cast<int64_t>(pass.decoder.size());
    for (int64_t t : pass.decoder)
        report.positions.push_back(model.encoder_decoder ? text.output_label(t) : text.input_label(t));
    for (int64_t p = 0; p < n; ++p) {
        report.answers.push_back(argmax(pass.logits.data() + p * V, V));
        report.answer_labels.push_back(text.output_label(report.answers.back()));
    }
    report.answer_position = pass.first_prediction >= 0 ? pass.first_prediction : n - 1;

    const int64_t D = model.config.d_model;
    for (int64_t i = -1; i < layers; ++i) {
        const std::string name = i < 0 ? embedding : report.stack + "." + std::to_string(i) + ".output";
        report.layers.push_back(i < 0 ? "embed" : report.stack + "." + std::to_string(i));
        const Tensor& x = recorded.get(name);
        // The model's own head on this stream: for the last layer, the very
        // tensor the pass gave unembed() and the same code, hence the same
        // logits bit for bit (the test says so).
        report.layer_logits.push_back(unembed(model, x));
        const Tensor& lens = report.layer_logits.back();
        std::vector<LensCell> cells;
        std::vector<double> norms;
        for (int64_t p = 0; p < n; ++p) {
            cells.push_back(lens_cell(lens.data() + p * V, V, report.answers[static_cast<size_t>(p)], options.top, text));
            double squares = 0.0;
            for (int64_t d = 0; d < D; ++d) squares += static_cast<double>(x.data()[p * D + d]) * x.data()[p * D + d];
            norms.push_back(std::sqrt(squares));
        }
        report.cells.push_back(std::move(cells));
        report.norms.push_back(std::move(norms));
    }
    if (options.attribute)
        report.attribution = attribute(model, recorded, report.stack, embedding, layers, report.answer_position,
                                       *options.attribute, pass.logits, text);
    return report;
}

}  // namespace tinyformer
