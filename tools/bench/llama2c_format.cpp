#include "tools/bench/llama2c_format.h"

#include "engine/error.h"
#include "engine/io/output_file.h"
#include "engine/random.h"
#include "engine/io/safetensors.h"
#include "engine/quant/q8_0.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tinyformer::bench {

namespace {

void check_shape(const Llama2cShape& s) {
    auto positive = [](const char* name, int64_t value) {
        if (value < 1 || value > (int64_t{1} << 24))
            throw Error(std::string("llama2.c shape: ") + name + " must be from 1 to 16777216, got " +
                        std::to_string(value));
    };
    positive("dim", s.dim);
    positive("hidden_dim", s.hidden_dim);
    positive("n_layers", s.n_layers);
    positive("n_heads", s.n_heads);
    positive("n_kv_heads", s.n_kv_heads);
    positive("max_seq_len", s.max_seq_len);
    if (s.vocab_size < 3 || s.vocab_size > (int64_t{1} << 24))
        throw Error("llama2.c shape: vocab_size must be from 3 (<unk>, <s>, </s>) to 16777216, got " +
                    std::to_string(s.vocab_size));
    if (s.dim % s.n_heads != 0 || s.head_size() % 2 != 0)
        throw Error("llama2.c shape: dim / n_heads must be a whole even number, got dim " + std::to_string(s.dim) +
                    ", n_heads " + std::to_string(s.n_heads));
    if (s.n_heads % s.n_kv_heads != 0)
        throw Error("llama2.c shape: n_kv_heads must divide n_heads " + std::to_string(s.n_heads) + ", got " +
                    std::to_string(s.n_kv_heads));
}

// Gains 1 + N(0, 0.1^2).
Tensor random_gain(Random& random, int64_t size) {
    Tensor gain = random.normal_tensor({size}, 0.1f);
    for (int64_t i = 0; i < size; ++i) gain.data()[i] += 1.0f;
    return gain;
}

Tensor random_matrix(Random& random, int64_t out, int64_t in) {
    return random.normal_tensor({out, in}, 1.0f / std::sqrt(static_cast<float>(in)));
}

// Little-endian on every machine the project builds for (x86-64, AArch64):
// the in-memory bytes are the file's.
void write_int32(OutputFile& out, int64_t value) {
    const int32_t word = static_cast<int32_t>(value);
    out.write(&word, sizeof word);
}

void write_floats(OutputFile& out, const Tensor& tensor) {
    out.write(tensor.data(), static_cast<size_t>(tensor.numel()) * sizeof(float));
}

}  // namespace

Llama2cWeights random_llama2c_weights(const Llama2cShape& shape, uint64_t seed) {
    check_shape(shape);
    Random random(seed);
    Llama2cWeights w;
    w.shape = shape;
    const int64_t D = shape.dim, F = shape.hidden_dim, KV = shape.kv_dim();
    w.token_embedding = random.normal_tensor({shape.vocab_size, D}, 0.02f);
    for (int64_t j = 0; j < D; ++j) w.token_embedding.data()[1 * D + j] *= 0.001f;  // BOS is never the argmax
    for (int64_t l = 0; l < shape.n_layers; ++l) {
        Llama2cLayer layer;
        layer.rms_att = random_gain(random, D);
        layer.wq = random_matrix(random, D, D);
        layer.wk = random_matrix(random, KV, D);
        layer.wv = random_matrix(random, KV, D);
        layer.wo = random_matrix(random, D, D);
        layer.rms_ffn = random_gain(random, D);
        layer.w1 = random_matrix(random, F, D);
        layer.w2 = random_matrix(random, D, F);
        layer.w3 = random_matrix(random, F, D);
        w.layers.push_back(std::move(layer));
    }
    w.rms_final = random_gain(random, D);
    return w;
}

double llama2c_weight_bytes_per_token(const Llama2cShape& s) {
    const double D = static_cast<double>(s.dim), F = static_cast<double>(s.hidden_dim),
                 KV = static_cast<double>(s.kv_dim()), V = static_cast<double>(s.vocab_size);
    const double layer = D * D + 2 * KV * D + D * D + 3 * F * D + 2 * D;
    return 4.0 * (static_cast<double>(s.n_layers) * layer + D + D + V * D);
}

double llama2c_q8_bytes_per_token(const Llama2cShape& s, int64_t group) {
    double matrices = 0;  // numbers in the step's matrices: each one int8 byte, and a float32 scale per group
    for (const auto& [out, in] : llama2c_step_shapes(s)) matrices += static_cast<double>(out * in);
    const double D = static_cast<double>(s.dim);
    return matrices * (1.0 + 4.0 / static_cast<double>(group)) + 4.0 * (static_cast<double>(s.n_layers) * 2 * D + D + D);
}

std::vector<std::pair<int64_t, int64_t>> llama2c_step_shapes(const Llama2cShape& s) {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (int64_t l = 0; l < s.n_layers; ++l) {
        shapes.push_back({s.dim + 2 * s.kv_dim(), s.dim});
        shapes.push_back({s.dim, s.dim});
        shapes.push_back({s.hidden_dim, s.dim});
        shapes.push_back({s.hidden_dim, s.dim});
        shapes.push_back({s.dim, s.hidden_dim});
    }
    shapes.push_back({s.vocab_size, s.dim});
    return shapes;
}

void write_llama2c_v0(const std::string& path, const Llama2cWeights& w) {
    const Llama2cShape& s = w.shape;
    check_shape(s);
    OutputFile out(path, "llama2.c model");
    for (int64_t field : {s.dim, s.hidden_dim, s.n_layers, s.n_heads, s.n_kv_heads, s.vocab_size /* > 0: tied */,
                          s.max_seq_len})
        write_int32(out, field);
    write_floats(out, w.token_embedding);
    // Each kind of tensor for every layer before the next kind.
    for (Tensor Llama2cLayer::*kind : {&Llama2cLayer::rms_att, &Llama2cLayer::wq, &Llama2cLayer::wk,
                                       &Llama2cLayer::wv, &Llama2cLayer::wo, &Llama2cLayer::rms_ffn,
                                       &Llama2cLayer::w1, &Llama2cLayer::w2, &Llama2cLayer::w3})
        for (const Llama2cLayer& layer : w.layers) write_floats(out, layer.*kind);
    write_floats(out, w.rms_final);
    // The rotation tables: cos, then sin, of pos * 10000^(-2i/Dh).
    const int64_t pairs = s.head_size() / 2;
    Tensor cos_table({s.max_seq_len, pairs}), sin_table({s.max_seq_len, pairs});
    for (int64_t pos = 0; pos < s.max_seq_len; ++pos)
        for (int64_t i = 0; i < pairs; ++i) {
            const double angle = static_cast<double>(pos) *
                                 std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(s.head_size()));
            cos_table.data()[pos * pairs + i] = static_cast<float>(std::cos(angle));
            sin_table.data()[pos * pairs + i] = static_cast<float>(std::sin(angle));
        }
    write_floats(out, cos_table);
    write_floats(out, sin_table);
    out.commit();
}

void write_llama2c_v2(const std::string& path, const Llama2cWeights& w, int64_t group) {
    const Llama2cShape& s = w.shape;
    check_shape(s);
    OutputFile out(path, "llama2.c v2 model");
    const uint32_t magic = 0x616b3432;  // "ak42"
    out.write(&magic, sizeof magic);
    write_int32(out, 2);
    for (int64_t field : {s.dim, s.hidden_dim, s.n_layers, s.n_heads, s.n_kv_heads, s.vocab_size, s.max_seq_len})
        write_int32(out, field);
    const uint8_t shared_classifier = 1;
    out.write(&shared_classifier, 1);
    write_int32(out, group);
    const std::vector<uint8_t> padding(256 - 4 - 4 - 7 * 4 - 1 - 4, 0);  // the header is 256 bytes
    out.write(padding.data(), padding.size());
    for (Tensor Llama2cLayer::*kind : {&Llama2cLayer::rms_att, &Llama2cLayer::rms_ffn})
        for (const Llama2cLayer& layer : w.layers) write_floats(out, layer.*kind);
    write_floats(out, w.rms_final);
    // Each matrix as its int8 values, then its scales (the engine's rule: engine/quant/q8_0.h).
    const auto write_q8 = [&](const Tensor& matrix) {
        const Q8Matrix q8 = quantize_q8_0(matrix.matrix(), group);
        out.write(q8.view().values, static_cast<size_t>(q8.rows() * q8.cols()));
        out.write(q8.view().scales, static_cast<size_t>(q8.rows() * q8.view().groups_per_row()) * sizeof(float));
    };
    write_q8(w.token_embedding);  // also the classifier (shared)
    for (Tensor Llama2cLayer::*kind : {&Llama2cLayer::wq, &Llama2cLayer::wk, &Llama2cLayer::wv, &Llama2cLayer::wo,
                                       &Llama2cLayer::w1, &Llama2cLayer::w2, &Llama2cLayer::w3})
        for (const Llama2cLayer& layer : w.layers) write_q8(layer.*kind);
    out.commit();
}

void write_llama2c_tokenizer(const std::string& path, int64_t vocab_size) {
    if (vocab_size < 3 || vocab_size > (int64_t{1} << 24))
        throw Error("tokenizer.bin: vocab_size must be from 3 to 16777216, got " + std::to_string(vocab_size));
    std::vector<std::string> pieces = {"<unk>", "\n<s>\n", "\n</s>\n"};
    for (int64_t id = 3; id < vocab_size; ++id) {
        std::string piece(1, ' ');  // (not " " + ...: GCC 12 warns falsely on that, -Wrestrict)
        piece += std::to_string(id);
        pieces.push_back(std::move(piece));
    }
    size_t longest = 0;
    for (const std::string& piece : pieces) longest = std::max(longest, piece.size());
    OutputFile out(path, "llama2.c tokenizer");
    write_int32(out, static_cast<int64_t>(longest));
    for (size_t id = 0; id < pieces.size(); ++id) {
        const float score = -static_cast<float>(id);
        out.write(&score, sizeof score);
        write_int32(out, static_cast<int64_t>(pieces[id].size()));
        out.write(pieces[id]);
    }
    out.commit();
}

std::vector<int64_t> parse_llama2c_output(const std::string& text) {
    std::vector<int64_t> ids;
    size_t at = 0;
    while (true) {
        while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
        if (at >= text.size()) break;
        if (text.compare(at, 4, "</s>") == 0) {
            ids.push_back(2);
            at += 4;
            continue;
        }
        size_t end = at;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) && end - at < 9) ++end;
        if (end == at) break;
        ids.push_back(std::strtoll(text.substr(at, end - at).c_str(), nullptr, 10));
        at = end;
    }
    return ids;
}

void write_tinyformer_llama(const std::string& path, const Llama2cWeights& w, const std::string& pos_encoding,
                            int64_t group) {
    const Llama2cShape& s = w.shape;
    check_shape(s);
    if (pos_encoding != "rotary" && pos_encoding != "none")
        throw Error("write_tinyformer_llama: pos_encoding must be \"rotary\" or \"none\", got \"" + pos_encoding + "\"");
    std::vector<TensorToWrite> tensors;
    // A matrix as float32, or (group > 0) as Q8_0: I8 values and F32 scales (docs/FORMAT.md).
    const auto matrix = [&](const std::string& name, const Tensor& weight) {
        if (group == 0) return tensors.push_back(f32_tensor(name, weight));
        const Q8Matrix q8 = quantize_q8_0(weight.matrix(), group);
        const auto* values = reinterpret_cast<const uint8_t*>(q8.view().values);
        tensors.push_back({name, "I8", {q8.rows(), q8.cols()}, std::vector<uint8_t>(values, values + q8.rows() * q8.cols())});
        const int64_t groups = q8.view().groups_per_row();
        tensors.push_back(f32_tensor(name + ".scale", Tensor({q8.rows(), groups}, std::vector<float>(q8.view().scales,
                                                                 q8.view().scales + q8.rows() * groups))));
    };
    // int8: the table runq.c reads, its numbers q * s for the embedding and the int8 table itself as the head.
    tensors.push_back(f32_tensor("embed.weight", group == 0 ? w.token_embedding
                                                            : dequantize_q8_0(quantize_q8_0(w.token_embedding.matrix(), group).view())));
    if (group > 0) matrix("lm_head.weight", w.token_embedding);
    for (size_t l = 0; l < w.layers.size(); ++l) {
        const Llama2cLayer& layer = w.layers[l];
        const std::string prefix = "transformer.layers." + std::to_string(l);
        tensors.push_back(f32_tensor(prefix + ".norm1.weight", layer.rms_att));
        matrix(prefix + ".self_attn.q_proj.weight", layer.wq);
        matrix(prefix + ".self_attn.k_proj.weight", layer.wk);
        matrix(prefix + ".self_attn.v_proj.weight", layer.wv);
        matrix(prefix + ".self_attn.out_proj.weight", layer.wo);
        tensors.push_back(f32_tensor(prefix + ".norm2.weight", layer.rms_ffn));
        matrix(prefix + ".linear1.weight", layer.w1);
        matrix(prefix + ".linear3.weight", layer.w3);
        matrix(prefix + ".linear2.weight", layer.w2);
    }
    tensors.push_back(f32_tensor("transformer.norm.weight", w.rms_final));
    auto number = [](int64_t value) { return std::to_string(value); };
    std::string config = R"({"format":"tinyformer/1","arch":"decoder_only","attention":"causal",)";
    config += R"("d_model":)" + number(s.dim) + R"(,"nhead":)" + number(s.n_heads) + R"(,"n_kv_heads":)" +
              number(s.n_kv_heads) + R"(,"dim_feedforward":)" + number(s.hidden_dim) + R"(,"num_layers":)" +
              number(s.n_layers) + R"(,"vocab_size":)" + number(s.vocab_size) + R"(,"max_len":)" +
              number(s.max_seq_len);
    config += R"(,"norm":"rms_norm","norm_bias":false,"layer_norm_eps":1e-5,"activation":"swiglu","norm_first":true,)"
              R"("final_norm":true,"bias":false,"head_bias":false,"qkv":"separate",)"
              R"("tie_embeddings":)" + std::string(group == 0 ? "true" : "false") + R"(,"embed_scale":false,"bos_id":1,"eos_id":2,"pos_encoding":")" +
              pos_encoding + "\"";
    if (pos_encoding == "rotary") config += R"(,"rope_theta":10000,"rope_pairs":"adjacent")";
    config += "}";
    write_safetensors(path, tensors, {{"config", config}});
}

}  // namespace tinyformer::bench
