// `tinyformer forward` (FORMAT.md section 2) and `tinyformer info`.

#include "engine/io/output_file.h"
#include "models/study/forward.h"
#include "tools/cli/arguments.h"
#include "tools/cli/intervention_flags.h"
#include "tools/cli/terminal_text.h"

#include <cstdio>
#include <map>
#include <set>

namespace tinyformer::cli {

namespace {

const char* kForwardHelp =
    "usage: tinyformer forward MODEL.safetensors --inputs IN.safetensors --output OUT.safetensors [--attention]\n"
    "                         [--overrides FILE.json] [--block ...] [--allow ...] [--ablate ...]\n"
    "\n"
    "Runs a model on the inputs of IN and writes its outputs to OUT (docs/FORMAT.md section 2).\n"
    "  inputs, encoder_decoder: src_ids [B,S], tgt_ids [B,T] (I64 or I32),\n"
    "          optional src_key_padding_mask [B,S], tgt_key_padding_mask [B,T] (BOOL or U8, true = padding)\n"
    "  inputs, decoder_only / encoder_only: ids [B,T], optional key_padding_mask [B,T],\n"
    "          prefix_len [B] for prefix_lm models\n"
    "  output: logits [B,T,V] (F32); padded positions are exactly 0\n"
    "  --attention  also write every attention call's per-head weights, never averaged, named\n"
    "               as in a trace: encoder.{i}.self_attn.weights [B,H,S,S],\n"
    "               decoder.{i}.self_attn.weights [B,H,T,T], decoder.{i}.cross_attn.weights [B,H,T,S],\n"
    "               layers.{i}.self_attn.weights [B,H,T,T]\n"
    "OUT is written to a temporary file and renamed: on error nothing is written. A FIFO or a\n"
    "character device (/dev/null) is written as a stream; OUT may not be MODEL or IN.\n";

const char* kForwardHelpInterventions = "The pass runs with the interventions below (none by default):\n";

const char* kInfoHelp =
    "usage: tinyformer info MODEL.safetensors\n"
    "\n"
    "Checks a checkpoint completely (as loading it would: the same rules, docs/FORMAT.md) and prints\n"
    "its config, its vocabulary (the first 40 tokens, in quotes), parameter counts by part, its\n"
    "tensors (name, shape, dtype) and the memory it takes.\n";

// "transformer.encoder.layers.0.linear1.weight" -> "encoder"; "src_embed.weight" -> "src_embed".
std::string part_of(const std::string& name) {
    if (name.starts_with("transformer.encoder.")) return "encoder";
    if (name.starts_with("transformer.decoder.")) return "decoder";
    if (name.starts_with("transformer.layers.")) return "layers";
    if (name.starts_with("transformer.norm.")) return "final norm";
    return name.substr(0, name.find('.'));
}

// The first kShownTokens tokens of a vocabulary, quoted, then "... (N more)".
constexpr size_t kShownTokens = 40;
std::string token_list(const std::vector<std::string>& vocab) {
    std::string list;
    for (size_t id = 0; id < vocab.size() && id < kShownTokens; ++id)
        list.append(id ? " \"" : "\"").append(terminal_text(vocab[id])).append("\"");
    if (vocab.size() > kShownTokens) list.append(" ... (").append(std::to_string(vocab.size() - kShownTokens)).append(" more)");
    return list;
}

}  // namespace

int forward_command(const Arguments& args) {
    std::set<std::string> value_flags = {"--inputs", "--output"};
    value_flags.insert(intervention_flag_names().begin(), intervention_flag_names().end());
    const ParsedArguments parsed(args, value_flags, {"--attention"}, "forward");
    if (parsed.help()) {
        std::printf("%s%s%s", kForwardHelp, kForwardHelpInterventions, kInterventionFlagsHelp);
        return 0;
    }
    if (parsed.positional().size() != 1)
        throw UsageError("forward: expected one MODEL file, got " + std::to_string(parsed.positional().size()) +
                         " (see 'tinyformer forward --help')");
    const std::string& output = parsed.value("--output");
    check_outputs("forward", {parsed.positional()[0], parsed.value("--inputs")}, {output});
    const Interventions interventions = intervention_flags(parsed, "forward");
    Model model = Model::load(parsed.positional()[0]);
    const AppliedInterventions applied(model, interventions);
    const SafetensorsFile inputs = SafetensorsFile::read(parsed.value("--inputs"));
    const std::map<std::string, Tensor> outputs = run_forward(model, inputs, parsed.has("--attention"));
    std::vector<TensorToWrite> tensors;
    for (const auto& [name, tensor] : outputs) tensors.push_back(f32_tensor(name, tensor));
    write_safetensors(output, tensors);
    std::fprintf(stderr, "tinyformer forward: wrote %zu tensor(s) to %s\n", tensors.size(), terminal_text(output).c_str());
    return 0;
}

int info_command(const Arguments& args) {
    const ParsedArguments parsed(args, {}, {}, "info");
    if (parsed.help()) {
        std::printf("%s", kInfoHelp);
        return 0;
    }
    if (parsed.positional().size() != 1)
        throw UsageError("info: expected one MODEL file (see 'tinyformer info --help')");
    const std::string& path = parsed.positional()[0];
    const Model model = Model::load(path);  // validates every rule first
    const SafetensorsFile file = SafetensorsFile::read(path);
    const ModelConfig& c = model.config;

    std::printf("%s\n\nconfig\n", terminal_text(path).c_str());
    std::printf("  arch %s, d_model D=%lld, nhead H=%lld (Dh=%lld), dim_feedforward F=%lld\n", architecture_name(c.arch),
                (long long)c.d_model, (long long)c.nhead, (long long)(c.d_model / c.nhead), (long long)c.dim_feedforward);
    if (c.arch == Architecture::EncoderDecoder)
        std::printf("  layers: %lld encoder + %lld decoder; vocabulary: source %lld, target %lld\n",
                    (long long)c.num_encoder_layers, (long long)c.num_decoder_layers, (long long)c.src_vocab_size,
                    (long long)c.tgt_vocab_size);
    else
        std::printf("  layers: %lld, attention %s, final norm %s; vocabulary %lld\n", (long long)c.num_layers,
                    attention_kind_name(c.attention), c.final_norm ? "yes" : "no", (long long)c.vocab_size);
    std::printf("  %s, %s, layer_norm_eps %g, positions %s (max_len %lld), embed_scale %s\n",
                activation_name(c.activation), c.norm_first ? "pre-LN" : "post-LN",
                c.layer_norm_eps,
                pos_encoding_name(c.pos_encoding),
                (long long)c.max_len, c.embed_scale ? "yes" : "no");
    // The optional keys of the layers' forms (docs/FORMAT.md, section 1), always shown.
    const std::string mask_value = c.mask_value ? text_of(*c.mask_value) : std::string("absent (-inf)");
    std::printf("  norm %s, bias %s, norm_bias %s, head_bias %s, tie_embeddings %s, qkv %s, mask_value %s\n",
                norm_name(c.norm), c.bias ? "yes" : "no", c.norm_bias ? "yes" : "no", c.head_bias ? "yes" : "no",
                c.tie_embeddings ? "yes" : "no", qkv_layout_name(c.qkv), mask_value.c_str());
    if (c.pos_encoding == PositionalEncoding::Rotary)
        std::printf("  rotary: rope_theta %g, rope_pairs %s\n", c.rope_theta, rope_pairs_name(c.rope_pairs));
    std::printf("  heads: %lld query, %lld key/value%s\n", (long long)c.nhead, (long long)c.n_kv_heads,
                c.n_kv_heads == c.nhead ? "" : c.n_kv_heads == 1 ? " (multi-query)" : " (grouped-query)");
    std::printf("  special ids: pad %lld, bos %lld, eos %lld (-1 = not set)\n", (long long)c.pad_id,
                (long long)c.bos_id, (long long)c.eos_id);
    const TextMetadata& text = model.text;
    if (text.vocab.empty())
        std::printf("  text: no vocabulary in the file; commands take token ids (--ids)\n");
    else
        std::printf("  text: %s tokenizer, vocabulary of %zu tokens%s%s%s%s\n", tokenizer_kind_name(text.tokenizer),
                    text.vocab.size(),
                    text.src_vocab.empty() ? "" : (", source vocabulary of " + std::to_string(text.src_vocab.size())).c_str(),
                    text.prompt_suffix.empty() ? "" : (", prompt suffix \"" + terminal_text(text.prompt_suffix) + "\"").c_str(),
                    text.train_max_len ? ", trained on inputs of up to " : "",
                    text.train_max_len ? (std::to_string(text.train_max_len) + " tokens").c_str() : "");
    if (!text.src_vocab.empty()) std::printf("  source tokens: %s\n", token_list(text.src_vocab).c_str());
    if (!text.vocab.empty())
        std::printf("  %s: %s\n", text.src_vocab.empty() ? "tokens" : "target tokens", token_list(text.vocab).c_str());

    std::map<std::string, int64_t> parameters_by_part;
    int64_t parameters = 0, stored_bytes = 0;
    std::printf("\ntensors\n");
    for (const auto& [name, stored] : file.tensors()) {
        int64_t count = 1;
        for (int64_t size : stored.shape) count *= size;
        parameters_by_part[part_of(name)] += count;
        parameters += count;
        stored_bytes += static_cast<int64_t>(stored.end - stored.begin);
        std::printf("  %-60s %-16s %s\n", terminal_text(name).c_str(), shape_string(stored.shape).c_str(),
                    terminal_text(stored.dtype).c_str());
    }
    std::printf("\nparameters by part\n");
    for (const auto& [part, count] : parameters_by_part)
        std::printf("  %-12s %12lld  (%5.1f%%)\n", terminal_text(part).c_str(), (long long)count, 100.0 * count / parameters);
    std::printf("  %-12s %12lld\n", "total", (long long)parameters);
    std::printf("\nmemory: %.2f MiB stored, %.2f MiB as float32 weights when loaded\n", stored_bytes / 1048576.0,
                parameters * 4 / 1048576.0);
    return 0;
}

}  // namespace tinyformer::cli
