// Suite "decode": greedy decoding, tokens per second.
//
//   toy:  data/models/reverse.safetensors (D=64, 2+2 layers), 32 random
//         16-character inputs, one at a time (B=1) and all together (B=32)
//   base: an encoder-decoder with random weights, D=512, H=8, F=2048, 6+6
//         layers, vocabulary 32000, source 64 tokens, 64 decoded tokens, B=1
//   nanoGPT-shaped: decoder_only with random weights, D=384, H=6, 6 layers,
//         F=1536, block 256, 65 characters; 240 tokens after a 16-token
//         prompt, B=1, 1 thread (or --threads N)
//
// Each with the KV cache (the default) and with full recompute (the reference
// path), at 1 and 2 BLAS threads (or --threads N). Then, when torch is
// importable, PyTorch's nn.Transformer in the loop users write — re-running
// the decoder on the growing target every step (tools/bench/torch_decode.py,
// in a child process per thread count, never alongside tinyformer) — and the
// ratio. The nanoGPT-shaped model is compared with PyTorch running the same
// weights two ways (tools/bench/torch_decode.py --mode): nanoGPT's generate
// (the whole sequence re-run every step) and a KV cache written in the bench;
// and with its bandwidth roof.
#include "engine/matmul.h"
#include "engine/random.h"
#include "engine/io/safetensors.h"
#include "models/decoding.h"
#include "tools/bench/bench.h"
#include "tools/bench/gemv_roof.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tinyformer::bench {

namespace {

constexpr int64_t kModel = 512, kHeads = 8, kFeedForward = 2048, kLayers = 6, kVocabulary = 32000;
constexpr int64_t kSourceLength = 64, kDecodedTokens = 64;
constexpr int kRoofRounds = 5;

// The base-size model's checkpoint, random weights N(0, 1/fan_in), LayerNorm
// gains 1 and biases 0, written to a temporary file (FORMAT.md names).
std::string write_base_model() {
    Random random(11);
    std::vector<TensorToWrite> tensors;
    auto add = [&](const std::string& name, Shape shape, float stddev) {
        tensors.push_back(f32_tensor(name, random.normal_tensor(std::move(shape), stddev)));
    };
    auto add_filled = [&](const std::string& name, int64_t size, float value) {
        tensors.push_back(f32_tensor(name, Tensor::filled({size}, value)));
    };
    const float projection = 1.0f / std::sqrt(static_cast<float>(kModel));
    const float down = 1.0f / std::sqrt(static_cast<float>(kFeedForward));
    auto add_attention = [&](const std::string& prefix) {
        add(prefix + ".in_proj_weight", {3 * kModel, kModel}, projection);
        add(prefix + ".in_proj_bias", {3 * kModel}, 0.02f);
        add(prefix + ".out_proj.weight", {kModel, kModel}, projection);
        add(prefix + ".out_proj.bias", {kModel}, 0.02f);
    };
    auto add_common = [&](const std::string& prefix, int norms) {
        add(prefix + ".linear1.weight", {kFeedForward, kModel}, projection);
        add(prefix + ".linear1.bias", {kFeedForward}, 0.02f);
        add(prefix + ".linear2.weight", {kModel, kFeedForward}, down);
        add(prefix + ".linear2.bias", {kModel}, 0.02f);
        for (int n = 1; n <= norms; ++n) {
            add_filled(prefix + ".norm" + std::to_string(n) + ".weight", kModel, 1.0f);
            add_filled(prefix + ".norm" + std::to_string(n) + ".bias", kModel, 0.0f);
        }
    };
    add("src_embed.weight", {kVocabulary, kModel}, 1.0f);
    add("tgt_embed.weight", {kVocabulary, kModel}, 1.0f);
    for (int64_t i = 0; i < kLayers; ++i) {
        const std::string encoder = "transformer.encoder.layers." + std::to_string(i);
        add_attention(encoder + ".self_attn");
        add_common(encoder, 2);
        const std::string decoder = "transformer.decoder.layers." + std::to_string(i);
        add_attention(decoder + ".self_attn");
        add_attention(decoder + ".multihead_attn");
        add_common(decoder, 3);
    }
    for (const char* stack : {"transformer.encoder.norm", "transformer.decoder.norm"}) {
        add_filled(std::string(stack) + ".weight", kModel, 1.0f);
        add_filled(std::string(stack) + ".bias", kModel, 0.0f);
    }
    add("generator.weight", {kVocabulary, kModel}, projection);
    add_filled("generator.bias", kVocabulary, 0.0f);
    const std::string config =
        R"({"format":"tinyformer/1","arch":"encoder_decoder","d_model":512,"nhead":8,"dim_feedforward":2048,)"
        R"("num_encoder_layers":6,"num_decoder_layers":6,"activation":"relu","norm_first":false,)"
        R"("layer_norm_eps":1e-5,"src_vocab_size":32000,"tgt_vocab_size":32000,"max_len":128,)"
        R"("pos_encoding":"sinusoidal","embed_scale":true,"pad_id":0,"bos_id":1,"eos_id":2})";
    const std::string path =
        (std::filesystem::temp_directory_path() / ("tinyformer-bench-base-" + std::to_string(::getpid()) + ".safetensors"))
            .string();
    write_safetensors(path, tensors, {{"config", config}});
    return path;
}

struct Timing {
    int64_t tokens = 0;
    double seconds = 0;
    double allocations_per_token = 0;  // operator new calls per generated token (last run)
    double others = -1;                // other processes' CPU share while timing
};

// Median over `reps` runs (after one warm-up) of decoding every batch in `batches`.
Timing time_greedy(const Model& model, const std::vector<std::vector<std::vector<int64_t>>>& batches,
                   const GenerationOptions& options, int reps) {
    std::vector<double> seconds;
    int64_t tokens = 0;
    size_t allocations = 0;
    OtherLoad load;
    for (int rep = 0; rep <= reps; ++rep) {
        if (rep == 1) load = OtherLoad();
        tokens = 0;
        const size_t allocations_before = heap_allocation_count();
        const auto start = Clock::now();
        for (const auto& batch : batches)
            for (const auto& row : greedy_decode(model, batch, options).tokens) tokens += static_cast<int64_t>(row.size());
        if (rep > 0) seconds.push_back(seconds_since(start));
        allocations = heap_allocation_count() - allocations_before;
    }
    return {tokens, median(seconds), static_cast<double>(allocations) / static_cast<double>(std::max<int64_t>(tokens, 1)),
            load.fraction()};
}

// Bytes of weights one decoding step of the base model reads (B=1, float32):
// per decoder layer the self-attention's in_proj [3D,D] and out_proj [D,D],
// the cross-attention's query rows of in_proj [D,D] and out_proj [D,D] (its
// keys and values of the memory are cached), the FFN's [F,D] and [D,F], with
// biases and three LayerNorms; then the final LayerNorm and the generator [V,D].
double weight_bytes_per_token() {
    const double D = kModel, F = kFeedForward, V = kVocabulary;
    const double layer = (3 * D * D + 3 * D) + (D * D + D) + (D * D + D) + (D * D + D) + (F * D + F) + (D * F + D) +
                         3 * 2 * D;
    return 4.0 * (kLayers * layer + 2 * D + V * D + V);
}

// --- the nanoGPT-shaped model (issue #22: "performance stays") ---
// nanoGPT's Shakespeare-char configuration: decoder_only, pre-LN, final
// LayerNorm, exact GELU, learned positions, D=384, H=6, 6 layers, F=4D,
// block (max_len) 256, a 65-character vocabulary. Written with the keys the
// engine has today: every Linear and LayerNorm with its bias and an untied
// lm_head with a bias (nanoGPT's bias=True; its default bias=False and tied
// head change the bytes read per token by under 0.5%).
constexpr int64_t kGptModel = 384, kGptHeads = 6, kGptLayers = 6, kGptFeedForward = 1536, kGptBlock = 256,
                  kGptVocabulary = 65;
// Greedy from a 16-token prompt until the sequence fills the block: 240 new
// tokens, the last step attending over 255 positions (nanoGPT's crop to the
// block never cuts anything).
constexpr int64_t kGptPrompt = 16, kGptNewTokens = kGptBlock - kGptPrompt;

// The nanoGPT-shaped checkpoint, random weights as the base model's (N(0,
// 1/fan_in), biases N(0, 0.02^2), LayerNorm gains 1 and biases 0, token
// embeddings N(0, 1), positions N(0, 0.02^2)), written to `path`.
void write_gpt_model(const std::string& path) {
    Random random(12);
    std::vector<TensorToWrite> tensors;
    auto add = [&](const std::string& name, Shape shape, float stddev) {
        tensors.push_back(f32_tensor(name, random.normal_tensor(std::move(shape), stddev)));
    };
    auto add_norm = [&](const std::string& prefix) {
        tensors.push_back(f32_tensor(prefix + ".weight", Tensor::filled({kGptModel}, 1.0f)));
        tensors.push_back(f32_tensor(prefix + ".bias", Tensor::filled({kGptModel}, 0.0f)));
    };
    const float projection = 1.0f / std::sqrt(static_cast<float>(kGptModel));
    const float down = 1.0f / std::sqrt(static_cast<float>(kGptFeedForward));
    add("embed.weight", {kGptVocabulary, kGptModel}, 1.0f);
    add("pos_embed.weight", {kGptBlock, kGptModel}, 0.02f);
    for (int64_t i = 0; i < kGptLayers; ++i) {
        const std::string layer = "transformer.layers." + std::to_string(i);
        add(layer + ".self_attn.in_proj_weight", {3 * kGptModel, kGptModel}, projection);
        add(layer + ".self_attn.in_proj_bias", {3 * kGptModel}, 0.02f);
        add(layer + ".self_attn.out_proj.weight", {kGptModel, kGptModel}, projection);
        add(layer + ".self_attn.out_proj.bias", {kGptModel}, 0.02f);
        add(layer + ".linear1.weight", {kGptFeedForward, kGptModel}, projection);
        add(layer + ".linear1.bias", {kGptFeedForward}, 0.02f);
        add(layer + ".linear2.weight", {kGptModel, kGptFeedForward}, down);
        add(layer + ".linear2.bias", {kGptModel}, 0.02f);
        add_norm(layer + ".norm1");
        add_norm(layer + ".norm2");
    }
    add_norm("transformer.norm");
    add("lm_head.weight", {kGptVocabulary, kGptModel}, projection);
    add("lm_head.bias", {kGptVocabulary}, 0.02f);
    const std::string config =
        R"({"format":"tinyformer/1","arch":"decoder_only","attention":"causal","d_model":384,"nhead":6,)"
        R"("dim_feedforward":1536,"num_layers":6,"activation":"gelu","norm_first":true,"final_norm":true,)"
        R"("layer_norm_eps":1e-5,"vocab_size":65,"max_len":256,"pos_encoding":"learned","embed_scale":false})";
    write_safetensors(path, tensors, {{"config", config}});
}

// The matrices a decoding step of the nanoGPT-shaped model multiplies by, in
// its order: per layer [3D,D], [D,D], [F,D], [D,F]; then lm_head [V,D].
std::vector<std::pair<int64_t, int64_t>> gpt_step_shapes() {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (int64_t layer = 0; layer < kGptLayers; ++layer)
        for (const auto& shape : std::vector<std::pair<int64_t, int64_t>>{{3 * kGptModel, kGptModel},
                                                                          {kGptModel, kGptModel},
                                                                          {kGptFeedForward, kGptModel},
                                                                          {kGptModel, kGptFeedForward}})
            shapes.push_back(shape);
    shapes.push_back({kGptVocabulary, kGptModel});
    return shapes;
}

// Bytes of weights one decoding step of the nanoGPT-shaped model reads (B=1,
// float32): per layer in_proj [3D,D] + [3D], out_proj [D,D] + [D], linear1
// [F,D] + [F], linear2 [D,F] + [D], two LayerNorms 2 x 2D; the final
// LayerNorm 2D, lm_head [V,D] + [V], and one row each of the token and
// position tables 2D. 42.5 MB. (The KV cache it reads besides grows from
// 0.3 to 4.7 MB over the 240 steps: per layer 2 x t x D floats.)
double gpt_weight_bytes_per_token() {
    const double D = kGptModel, F = kGptFeedForward, V = kGptVocabulary;
    const double layer = (3 * D * D + 3 * D) + (D * D + D) + (F * D + F) + (D * F + D) + 2 * 2 * D;
    return 4.0 * (kGptLayers * layer + 2 * D + V * D + V + 2 * D);
}

struct GptRun {
    Timing timing;
    std::vector<int64_t> tokens;  // the generated ids (last run)
};

// Greedy decoding of kGptNewTokens tokens after `prompt`, the loop of
// greedy_decode (models/decoding.cpp: the argmax, the first maximum on ties)
// over the engine's Stepper, without the end-token test: the model has no
// end token, and the count is fixed. The median of `reps` runs after one
// warm-up; each run includes the prompt's pass.
GptRun time_gpt_greedy(const Model& model, const std::vector<int64_t>& prompt, StepMode mode, int reps) {
    std::vector<double> seconds;
    GptRun run;
    run.tokens.reserve(static_cast<size_t>(kGptNewTokens));
    std::vector<int64_t> next(1);
    size_t allocations = 0;
    OtherLoad load;
    for (int rep = 0; rep <= reps; ++rep) {
        if (rep == 1) load = OtherLoad();
        run.tokens.clear();
        const size_t allocations_before = heap_allocation_count();
        const auto start = Clock::now();
        std::unique_ptr<Stepper> stepper = make_stepper(model, {prompt}, mode, kGptNewTokens);
        for (int64_t i = 0; i < kGptNewTokens; ++i) {
            const Tensor logits = stepper->next_logits();  // [1, V]
            const int64_t V = logits.dim(1);
            int64_t best = 0;
            for (int64_t v = 1; v < V; ++v)
                if (logits.data()[v] > logits.data()[best]) best = v;
            run.tokens.push_back(best);
            if (i + 1 == kGptNewTokens) break;
            next[0] = best;
            stepper->append(next);
        }
        stepper.reset();
        if (rep > 0) seconds.push_back(seconds_since(start));
        allocations = heap_allocation_count() - allocations_before;
    }
    run.timing = {kGptNewTokens, median(seconds),
                  static_cast<double>(allocations) / static_cast<double>(kGptNewTokens), load.fraction()};
    return run;
}

// How many leading tokens two generations share.
size_t common_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

std::string format_number(const char* pattern, double value) {
    char text[48];
    std::snprintf(text, sizeof text, pattern, value);
    return text;
}

std::string tokens_per_second(const Timing& timing) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", static_cast<double>(timing.tokens) / timing.seconds);
    return text;
}

// The suite's table: one row per model, batch, step mode and thread count.
Table decode_table() {
    return Table({{"model", 26, Table::Align::Left}, {"batch", 6, Table::Align::Right}, {"step", 10, Table::Align::Left},
                  {"threads", 8, Table::Align::Right}, {"tokens", 7, Table::Align::Right},
                  {"tok/s", 9, Table::Align::Right}, {"allocs/tok", 10, Table::Align::Right},
                  {"others", 7, Table::Align::Right}});
}

// The nanoGPT-shaped model's part of the suite: tinyformer's greedy at B=1
// (KV cache, in rounds alternating with its gemv roof, and recompute), then
// PyTorch on the same weights in two loops, each in a child process while
// tinyformer is idle: nanoGPT's generate (re-run, no cache) and a KV cache
// written in tools/bench/torch_decode.py.
void run_gpt_part(int threads, const Table& table) {
    set_blas_threads(threads);
    std::printf("\nnanoGPT-shaped model: decoder_only, pre-LN, D=%lld, H=%lld, %lld layers, F=%lld, block %lld, "
                "vocabulary %lld, learned positions, GELU, random weights; greedy from a %lld-token prompt to %lld "
                "tokens (%lld generated), B=1, %d thread(s)\n",
                static_cast<long long>(kGptModel), static_cast<long long>(kGptHeads),
                static_cast<long long>(kGptLayers), static_cast<long long>(kGptFeedForward),
                static_cast<long long>(kGptBlock), static_cast<long long>(kGptVocabulary),
                static_cast<long long>(kGptPrompt), static_cast<long long>(kGptBlock),
                static_cast<long long>(kGptNewTokens), threads);
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("tinyformer-bench-gpt-" + std::to_string(::getpid()) + ".safetensors"))
                                 .string();
    write_gpt_model(path);
    const Model gpt = Model::load(path);
    Random random(6);
    std::vector<int64_t> prompt;
    for (int64_t i = 0; i < kGptPrompt; ++i) prompt.push_back(random.uniform_int(0, kGptVocabulary - 1));

    GemvRoof gemv(gpt_step_shapes());
    const double read = gemv.decoder_read_bytes_per_second();
    std::vector<double> rates, roofs, ratios;
    GptRun cached;
    for (int round = 0; round < kRoofRounds; ++round) {
        roofs.push_back(gemv.decoder_bytes_per_second() / gpt_weight_bytes_per_token());
        cached = time_gpt_greedy(gpt, prompt, StepMode::KvCache, 1);
        rates.push_back(static_cast<double>(cached.timing.tokens) / cached.timing.seconds);
        ratios.push_back(rates.back() / roofs.back());
    }
    const double ours = median(rates), roof = median(roofs), roof_ratio = median(ratios);
    table.print_header();
    table.print_row({"nanoGPT D=384 6L V=65", "1", "kv-cache", std::to_string(threads),
                     std::to_string(cached.timing.tokens), format_number("%.1f", ours),
                     format_number("%.1f", cached.timing.allocations_per_token), format_load(cached.timing.others)});
    const GptRun recomputed = time_gpt_greedy(gpt, prompt, StepMode::Recompute, 1);
    table.print_row({"nanoGPT D=384 6L V=65", "1", "recompute", std::to_string(threads),
                     std::to_string(recomputed.timing.tokens), tokens_per_second(recomputed.timing),
                     format_number("%.1f", recomputed.timing.allocations_per_token),
                     format_load(recomputed.timing.others)});
    std::printf("  (tok/s: %lld generated tokens over the median wall time, the prompt's pass included; kv-cache: "
                "the median of %d rounds)\n",
                static_cast<long long>(kGptNewTokens), kRoofRounds);
    std::printf("  same tokens, kv-cache and recompute: %zu of %lld\n", common_prefix(cached.tokens, recomputed.tokens),
                static_cast<long long>(kGptNewTokens));
    std::printf("  bandwidth roof: %.1f MB of weights read per token (the KV cache aside: 0.3 to 4.7 MB more); gemv "
                "over the step's matrices %.1f GB/s, the fastest of 15 passes (a plain read of them: %.1f GB/s)\n",
                gpt_weight_bytes_per_token() / 1e6, roof * gpt_weight_bytes_per_token() / 1e9, read / 1e9);
    std::printf("  %d thread(s): roof %.1f tok/s, kv-cache %.1f tok/s (medians of %d alternating rounds): %.0f%% of "
                "the roof, the median of the rounds' ratios (target >= 80%%) -> %s\n",
                threads, roof, ours, kRoofRounds, 100.0 * roof_ratio, roof_ratio >= 0.8 ? "met" : "NOT met");

    std::printf("  PyTorch on the same weights (tools/bench/torch_decode.py, the same OpenBLAS core: %s):\n",
                std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "OpenBLAS's own choice");
    const std::optional<std::string> script = find_tool_script("torch_decode.py");
    if (!torch_importable() || !script) {
        std::filesystem::remove(path);
        std::printf("  not run: needs Debian's python3-torch (as root: apt-get update && apt-get install -y "
                    "python3-torch) and tools/bench/torch_decode.py\n");
        return;
    }
    std::string prompt_text;
    for (int64_t id : prompt) {
        if (!prompt_text.empty()) prompt_text += ',';
        prompt_text += std::to_string(id);
    }
    struct Loop {
        const char* mode;
        const char* name;
        double target;
    };
    for (const Loop& loop : {Loop{"nanogpt-rerun", "re-run every step, no cache (nanoGPT's generate)", 3.0},
                             Loop{"nanogpt-cached", "with a KV cache written in the bench", 1.3}}) {
        const OtherLoad load;
        const std::vector<std::string> lines = run_python_tool(
            *script, "--threads " + std::to_string(threads) + " --protocol --mode " + loop.mode + " --model '" + path +
                         "' --prompt " + prompt_text + " --new-tokens " + std::to_string(kGptNewTokens));
        const double others = load.fraction();
        bool reported = false;
        std::vector<int64_t> theirs_tokens;
        double theirs = 0;
        for (const std::string& line : lines) {
            long long tokens = 0;
            double median_seconds = 0, min_seconds = 0;
            if (std::sscanf(line.c_str(), "result %lld %lf %lf", &tokens, &median_seconds, &min_seconds) == 3 &&
                median_seconds > 0) {
                theirs = static_cast<double>(tokens) / median_seconds;
                reported = true;
            }
            if (line.rfind("tokens ", 0) == 0) {
                const char* cursor = line.c_str() + 7;
                char* end = nullptr;
                for (long long id = std::strtoll(cursor, &end, 10); end != cursor; id = std::strtoll(cursor, &end, 10)) {
                    theirs_tokens.push_back(id);
                    cursor = *end == ',' ? end + 1 : end;
                }
            }
        }
        if (!reported) {
            std::printf("    %s: no result; its output:\n", loop.mode);
            for (const std::string& line : lines) std::printf("      %s\n", line.c_str());
            continue;
        }
        std::printf("    %s, %d thread(s): PyTorch %.1f tok/s (others %s), tinyformer (kv-cache) %.1f tok/s: %.2fx "
                    "(target >= %.1fx) -> %s; same tokens as tinyformer: %zu of %lld\n",
                    loop.name, threads, theirs, format_load(others).c_str(), ours, ours / theirs, loop.target,
                    ours >= loop.target * theirs ? "met" : "NOT met", common_prefix(cached.tokens, theirs_tokens),
                    static_cast<long long>(kGptNewTokens));
    }
    std::filesystem::remove(path);
}

}  // namespace

void run_decode_suite(const Settings& settings) {
    std::printf("greedy decoding, tokens per second (generated tokens / median wall time of a few runs)\n");
    std::printf("attention path: streaming (weights are not requested while decoding)\n");
    std::printf("%s\n\n", blas_line().c_str());
    const std::vector<int> thread_counts =
        settings.threads > 0 ? std::vector<int>{settings.threads} : std::vector<int>{1, 2};

    // The toy model: 32 random 16-character inputs.
    const std::string toy_path = "data/models/reverse.safetensors";
    std::vector<std::vector<int64_t>> toy_inputs;
    Random random(5);
    for (int i = 0; i < 32; ++i) {
        std::vector<int64_t> ids;
        for (int c = 0; c < 16; ++c) ids.push_back(4 + random.uniform_int(0, 25));  // ids 4..29: 'a'..'z'
        toy_inputs.push_back(ids);
    }
    const Table table = decode_table();
    std::map<int, double> toy_single;  // threads -> kv-cache B=1 tokens/s
    std::map<int, double> base_cached;  // threads -> tokens/s, for the PyTorch ratio
    table.print_header();
    if (std::filesystem::exists(toy_path)) {
        const Model toy = Model::load(toy_path);
        for (int threads : thread_counts) {
            set_blas_threads(threads);
            for (StepMode mode : {StepMode::KvCache, StepMode::Recompute}) {
                GenerationOptions options;
                options.mode = mode;
                std::vector<std::vector<std::vector<int64_t>>> one_at_a_time;
                for (const auto& input : toy_inputs) one_at_a_time.push_back({input});
                const char* step = mode == StepMode::KvCache ? "kv-cache" : "recompute";
                const Timing single = time_greedy(toy, one_at_a_time, options, 3);
                table.print_row({"reverse (toy, 16 chars)", "1", step, std::to_string(threads),
                                 std::to_string(single.tokens), tokens_per_second(single),
                                 format_number("%.1f", single.allocations_per_token), format_load(single.others)});
                if (mode == StepMode::KvCache) toy_single[threads] = static_cast<double>(single.tokens) / single.seconds;
                const Timing batched = time_greedy(toy, {toy_inputs}, options, 3);
                table.print_row({"reverse (toy, 16 chars)", "32", step, std::to_string(threads),
                                 std::to_string(batched.tokens), tokens_per_second(batched),
                                 format_number("%.1f", batched.allocations_per_token), format_load(batched.others)});
            }
        }
    } else {
        std::printf("(%s not found: run from the repository root for the toy model)\n", toy_path.c_str());
    }

    std::printf("\nwriting the base-size model with random weights (%lld MB)...\n",
                static_cast<long long>((2 * kVocabulary * kModel + kVocabulary * kModel) * 4 / 1000000 + 180));
    const std::string base_path = write_base_model();
    const Model base = Model::load(base_path);
    std::filesystem::remove(base_path);
    std::vector<int64_t> source;
    for (int64_t i = 0; i < kSourceLength; ++i) source.push_back(3 + random.uniform_int(0, kVocabulary - 4));
    std::map<int, double> roof, single_roof, roof_ratio;  // threads -> the roof in tokens/s; kv-cache / roof
    std::map<int, double> allocations_per_step;  // heap allocations per step after the first
    std::map<int, int64_t> steps_counted;
    std::map<int, std::pair<double, double>> reads;  // threads -> plain read of the step's bytes, of the generator's
    std::vector<std::pair<int64_t, int64_t>> base_shapes;
    for (int64_t layer = 0; layer < kLayers; ++layer)
        for (const auto& shape : std::vector<std::pair<int64_t, int64_t>>{
                 {3 * kModel, kModel},     // self-attention in_proj: Q, K, V of the new position
                 {kModel, kModel},         // self-attention out_proj
                 {kModel, kModel},         // cross-attention: the query rows of in_proj
                 {kModel, kModel},         // cross-attention out_proj
                 {kFeedForward, kModel},   // linear1
                 {kModel, kFeedForward}})  // linear2
            base_shapes.push_back(shape);
    base_shapes.push_back({kVocabulary, kModel});  // the generator
    GemvRoof gemv(base_shapes);
    table.print_header();
    for (int threads : thread_counts) {
        set_blas_threads(threads);
        GenerationOptions options;
        options.max_new_tokens = kDecodedTokens;
        // KV cache against the roof in alternating rounds: a virtual machine's speed
        // drifts from one minute to the next, so each round measures the roof
        // and then decodes, and the verdict takes the median of the rounds' ratios.
        reads[threads] = {gemv.decoder_read_bytes_per_second(), gemv.single_read_bytes_per_second()};
        std::vector<double> rates, roofs, singles, ratios;
        Timing cached;
        for (int round = 0; round < kRoofRounds; ++round) {
            roofs.push_back(gemv.decoder_bytes_per_second() / weight_bytes_per_token());
            singles.push_back(gemv.single_bytes_per_second() / weight_bytes_per_token());
            cached = time_greedy(base, {{source}}, options, 1);
            rates.push_back(static_cast<double>(cached.tokens) / cached.seconds);
            ratios.push_back(rates.back() / roofs.back());
        }
        roof[threads] = median(roofs);
        single_roof[threads] = median(singles);
        roof_ratio[threads] = median(ratios);
        base_cached[threads] = median(rates);
        table.print_row({"base D=512 6+6 V=32000", "1", "kv-cache", std::to_string(threads),
                         std::to_string(cached.tokens), format_number("%.1f", base_cached[threads]),
                         format_number("%.1f", cached.allocations_per_token), format_load(cached.others)});
        // Allocations of a step: counted after each step (the encoder pass, the
        // caches and the result are made once per sequence, before the first).
        std::vector<size_t> counts;
        counts.reserve(static_cast<size_t>(kDecodedTokens) + 1);
        GenerationOptions counted = options;
        counted.after_step = [&counts] { counts.push_back(heap_allocation_count()); };
        greedy_decode(base, {source}, counted);
        allocations_per_step[threads] = counts.size() < 2 ? -1.0
                                                          : static_cast<double>(counts.back() - counts.front()) /
                                                                static_cast<double>(counts.size() - 1);
        steps_counted[threads] = counts.size() < 2 ? 0 : static_cast<int64_t>(counts.size() - 1);
        GenerationOptions recompute = options;
        recompute.mode = StepMode::Recompute;
        const Timing timing = time_greedy(base, {{source}}, recompute, 1);
        table.print_row({"base D=512 6+6 V=32000", "1", "recompute", std::to_string(threads),
                         std::to_string(timing.tokens), tokens_per_second(timing),
                         format_number("%.1f", timing.allocations_per_token), format_load(timing.others)});
    }

    std::printf("\nbandwidth roof: %.1f MB of weights read per decoded token (base model, B=1); gemv measured now\n"
                "over distinct matrices of the decoding step's shapes, in its order (biases and LayerNorms aside)\n",
                weight_bytes_per_token() / 1e6);
    for (int threads : thread_counts)
        std::printf("  %d thread(s): gemv over the step's matrices %.1f GB/s (a plain read of them: %.1f GB/s); over the "
                    "generator's [V,D] alone, again and again, %.1f GB/s (a plain read: %.1f GB/s; kept in cache; not "
                    "the roof)\n",
                    threads, roof[threads] * weight_bytes_per_token() / 1e9, reads[threads].first / 1e9,
                    single_roof[threads] * weight_bytes_per_token() / 1e9, reads[threads].second / 1e9);
    for (int threads : thread_counts)
        std::printf("  %d thread(s): roof %.1f tok/s, kv-cache %.1f tok/s (medians of %d alternating rounds): %.0f%% of "
                    "the roof, the median of the rounds' ratios (target >= 80%% at 1 thread) -> %s\n",
                    threads, roof[threads], base_cached[threads], kRoofRounds, 100.0 * roof_ratio[threads],
                    roof_ratio[threads] >= 0.8 ? "met" : "NOT met");
    for (int threads : thread_counts)
        std::printf("  %d thread(s): heap allocations per decoding step (base model, B=1, over the %lld steps after the "
                    "first): %.2f (target 0) -> %s\n",
                    threads, static_cast<long long>(steps_counted[threads]), allocations_per_step[threads],
                    allocations_per_step[threads] == 0.0 ? "met" : "NOT met");
    for (const auto& [threads, rate] : toy_single)
        std::printf("  toy reverse B=1 kv-cache, %d thread(s): %.0f tok/s (target >= 30000 at 1 thread) -> %s\n",
                    threads, rate, rate >= 30000 ? "met" : "NOT met");
    std::printf("  (tok/s includes encoding the 64-token source once, as PyTorch's loop does; the roof counts decoding "
                "weights only)\n");

    std::printf("\nPyTorch baseline: nn.Transformer, decoder re-run on the growing target each step (no cache)\n");
    std::printf("  (its process inherits this one's environment, so its OpenBLAS runs on the same core: %s)\n",
                std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "OpenBLAS's own choice");
    const std::optional<std::string> script = find_tool_script("torch_decode.py");
    const bool torch_found = script && torch_importable();
    if (!torch_found)
        std::printf("  not run: needs Debian's python3-torch (as root: apt-get update && apt-get install -y "
                    "python3-torch) and tools/bench/torch_decode.py\n");
    for (int threads : thread_counts) {
        if (!torch_found) break;
        const std::vector<std::string> lines =
            run_python_tool(*script, "--threads " + std::to_string(threads) + " --protocol");
        for (const std::string& line : lines) {
            long long tokens = 0;
            double median_seconds = 0, min_seconds = 0;
            if (std::sscanf(line.c_str(), "result %lld %lf %lf", &tokens, &median_seconds, &min_seconds) != 3) continue;
            const double theirs = static_cast<double>(tokens) / median_seconds;
            std::printf("  %d thread(s): PyTorch %.1f tok/s, tinyformer (kv-cache) %.1f tok/s: %.2fx (target >= 3x) -> %s\n",
                        threads, theirs, base_cached[threads], base_cached[threads] / theirs,
                        base_cached[threads] >= 3.0 * theirs ? "met" : "NOT met");
        }
    }

    // The nanoGPT-shaped model, at one thread (the issue's setting) or --threads N.
    run_gpt_part(settings.threads > 0 ? settings.threads : 1, table);
}

void run_decode_gpt_suite(const Settings& settings) {
    const int threads = settings.threads > 0 ? settings.threads : 1;
    set_blas_threads(threads);  // before blas_line, which prints the count
    std::printf("greedy decoding, tokens per second: the decode suite's nanoGPT-shaped part alone\n");
    std::printf("%s\n", blas_line().c_str());
    run_gpt_part(threads, decode_table());
}

}  // namespace tinyformer::bench
