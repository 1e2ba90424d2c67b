#include "models/config.h"

#include "engine/io/json.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

namespace tinyformer {

namespace {

using json = nlohmann::json;

constexpr size_t kMaxListedProblems = 20;  // a message lists at most this many, then "and N more"

// Which arch each arch-specific key belongs to (every other known key is common).
const std::map<std::string, const char*>& arch_specific_keys() {
    static const std::map<std::string, const char*> keys = {
        {"num_encoder_layers", "encoder_decoder"}, {"num_decoder_layers", "encoder_decoder"},
        {"src_vocab_size", "encoder_decoder"},     {"tgt_vocab_size", "encoder_decoder"},
        {"num_layers", "decoder_only / encoder_only"}, {"vocab_size", "decoder_only / encoder_only"},
        {"attention", "decoder_only / encoder_only"}};
    return keys;
}

// Reads keys from the config object and collects every problem it finds, so
// that one message can list them all: a user starting from constructor
// arguments fixes everything in one round trip. Each reader returns
// std::nullopt for a key that is absent or bad; the checks that need that key
// are then skipped (its problem is already listed). Every key read, present or
// not, is known; the others are listed as unknown at the end.
class ConfigReader {
public:
    explicit ConfigReader(const json& object) : object_(object) {}

    template <typename... Parts>
    void problem(const Parts&... parts) {
        problems_.push_back(text_of(parts...));
    }

    // The value of `key`, or nullptr when it is absent (a problem if
    // `required`, naming what the key holds: `type`).
    const json* get(const std::string& key, const std::string& type, bool required) {
        read_.insert(key);
        auto found = object_.find(key);
        if (found != object_.end()) return &*found;
        if (required) problem("missing key '", key, "' (", type, ")");
        return nullptr;
    }
    std::optional<std::string> text(const std::string& key, bool required = true,
                                    const std::string& type = "string") {
        const json* value = get(key, type, required);
        if (!value) return std::nullopt;
        if (!value->is_string()) {
            problem("'", key, "' must be a string, got ", json_excerpt(*value));
            return std::nullopt;
        }
        return value->get<std::string>();
    }
    std::optional<int64_t> integer(const std::string& key, bool required = true, const std::string& type = "int") {
        const json* value = get(key, type, required);
        if (!value) return std::nullopt;
        if (!value->is_number_integer()) {
            problem("'", key, "' must be an integer, got ", json_excerpt(*value));
            return std::nullopt;
        }
        // nlohmann would wrap an unsigned value above INT64_MAX to a negative one
        constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        if (value->is_number_unsigned() && value->get<uint64_t>() > kInt64Max) {
            problem("'", key, "' must fit in int64, got ", json_excerpt(*value));
            return std::nullopt;
        }
        return value->get<int64_t>();
    }
    // Sizes: at least 1 and at most kMaxSize, so that no config alone can
    // make the loader allocate without bound.
    std::optional<int64_t> positive(const std::string& key, bool required = true) {
        const std::optional<int64_t> value = integer(key, required);
        if (value && (*value < 1 || *value > kMaxSize)) {
            problem("'", key, "' must be in 1..", kMaxSize, ", got ", *value);
            return std::nullopt;
        }
        return value;
    }
    static constexpr int64_t kMaxSize = int64_t{1} << 24;
    std::optional<bool> boolean(const std::string& key, bool required = true) {
        const json* value = get(key, "bool", required);
        if (!value) return std::nullopt;
        if (!value->is_boolean()) {
            problem("'", key, "' must be true or false, got ", json_excerpt(*value));
            return std::nullopt;
        }
        return value->get<bool>();
    }
    std::optional<double> number(const std::string& key, bool required = true) {
        const json* value = get(key, "float", required);
        if (!value) return std::nullopt;
        if (!value->is_number()) {
            problem("'", key, "' must be a number, got ", json_excerpt(*value));
            return std::nullopt;
        }
        return value->get<double>();
    }
    template <typename Enum>
    std::optional<Enum> choice(const std::string& key, const std::map<std::string, Enum>& choices,
                               bool required = true) {
        std::string allowed;
        for (const auto& [name, unused] : choices) allowed += (allowed.empty() ? "\"" : ", \"") + name + "\"";
        const std::optional<std::string> value = text(key, required, "string, one of " + allowed);
        if (!value) return std::nullopt;
        auto found = choices.find(*value);
        if (found == choices.end()) {
            problem("'", key, "' is \"", *value, "\"; expected one of ", allowed);
            return std::nullopt;
        }
        return found->second;
    }

    // Lists every key that was never read. `arch` is the config's arch when
    // known: a key of another arch is named as such. (With the arch unknown,
    // the keys of every arch were read.)
    void list_unread(std::optional<Architecture> arch) {
        for (const auto& [key, unused] : object_.items()) {
            if (read_.count(key)) continue;
            auto other = arch_specific_keys().find(key);
            if (arch && other != arch_specific_keys().end())
                problem("unknown key '", key, "' for arch \"", architecture_name(*arch), "\" (it belongs to ",
                        other->second, ")");
            else
                problem("unknown key '", key, "'");
            unknown_keys_ = true;
        }
    }

    // One Error listing every problem, on one line: "config: <problem>" or
    // "config: N problems: <problem>; <problem>; ...". Unknown keys come
    // last, and then where to find the keys of each arch.
    void throw_if_any() const {
        if (problems_.empty()) return;
        const char* see = unknown_keys_ ? " (see docs/FORMAT.md for the keys of each arch)" : "";
        if (problems_.size() == 1) fail("config: ", problems_.front(), see);
        std::string listed;
        const size_t shown = std::min(problems_.size(), kMaxListedProblems);
        for (size_t i = 0; i < shown; ++i) listed += (i ? "; " : "") + problems_[i];
        if (shown < problems_.size()) listed += "; and " + std::to_string(problems_.size() - shown) + " more";
        fail("config: ", problems_.size(), " problems: ", listed, see);
    }

private:
    const json& object_;
    std::set<std::string> read_;
    std::vector<std::string> problems_;
    bool unknown_keys_ = false;
};

}  // namespace

const char* architecture_name(Architecture arch) {
    switch (arch) {
        case Architecture::EncoderDecoder: return "encoder_decoder";
        case Architecture::DecoderOnly: return "decoder_only";
        case Architecture::EncoderOnly: return "encoder_only";
    }
    return "unknown";
}

const char* attention_kind_name(SelfAttentionKind kind) {
    switch (kind) {
        case SelfAttentionKind::Causal: return "causal";
        case SelfAttentionKind::PrefixLm: return "prefix_lm";
        case SelfAttentionKind::Bidirectional: return "bidirectional";
    }
    return "unknown";
}

const char* norm_name(NormKind kind) {
    switch (kind) {
        case NormKind::LayerNorm: return "layer_norm";
        case NormKind::LayerNormStd: return "layer_norm_std";
        case NormKind::RmsNorm: return "rms_norm";
    }
    return "unknown";
}

const char* qkv_layout_name(QkvLayout layout) { return layout == QkvLayout::Fused ? "fused" : "separate"; }

ModelConfig parse_config(const std::string& json_text) {
    // The config is one flat object; values nest no further.
    const json object = parse_json(json_text, /*max_depth=*/1, "config");
    if (!object.is_object()) fail("config: must be a JSON object, got ", object.type_name());
    ConfigReader read(object);
    ModelConfig config;

    const std::optional<std::string> format = read.text("format", true, "string, \"tinyformer/1\"");
    if (format && *format != "tinyformer/1") read.problem("'format' is \"", *format, "\"; expected \"tinyformer/1\"");
    const std::optional<Architecture> arch =
        read.choice<Architecture>("arch", {{"encoder_decoder", Architecture::EncoderDecoder},
                                           {"decoder_only", Architecture::DecoderOnly},
                                           {"encoder_only", Architecture::EncoderOnly}});
    const std::optional<int64_t> d_model = read.positive("d_model");
    const std::optional<int64_t> nhead = read.positive("nhead");
    if (d_model && nhead && *d_model % *nhead != 0)
        read.problem("'d_model' (", *d_model, ") must be divisible by 'nhead' (", *nhead, ")");
    const std::optional<int64_t> dim_feedforward = read.positive("dim_feedforward");
    const std::optional<Activation> activation =
        read.choice<Activation>("activation", {{"relu", Activation::Relu},
                                               {"gelu", Activation::Gelu},
                                               {"gelu_tanh", Activation::GeluTanh},
                                               {"silu", Activation::Silu},
                                               {"swiglu", Activation::SwiGlu}});
    const std::optional<bool> norm_first = read.boolean("norm_first");
    const std::optional<double> eps = read.number("layer_norm_eps", /*required=*/false);
    // In float32, as LayerNorm adds it: 1e-85 would become 0, and a row of
    // equal values would then normalise as 0/0 (found by fuzz_config).
    // So eps must be a normal float32, at least FLT_MIN ~ 1.18e-38.
    if (eps && !(*eps >= std::numeric_limits<float>::min() && *eps < 1.0))
        read.problem("'layer_norm_eps' must be in [", std::numeric_limits<float>::min(),
                     ", 1) (a positive normal float32), got ", *eps);
    // The optional keys of the layers' forms (docs/FORMAT.md, section 1); absent = nn.Transformer's.
    const std::optional<NormKind> norm = read.choice<NormKind>(
        "norm",
        {{"layer_norm", NormKind::LayerNorm}, {"layer_norm_std", NormKind::LayerNormStd}, {"rms_norm", NormKind::RmsNorm}},
        false);
    if (norm == NormKind::LayerNormStd && d_model == 1)
        read.problem("'norm' \"layer_norm_std\" needs 'd_model' >= 2 (its unbiased std divides by d_model - 1), got 1");
    const std::optional<bool> bias = read.boolean("bias", false);
    const std::optional<bool> norm_bias = read.boolean("norm_bias", false);
    if (norm == NormKind::RmsNorm && norm_bias == true)
        read.problem("'norm_bias' is true but 'norm' is \"rms_norm\", which has no bias (leave 'norm_bias' out)");
    const std::optional<bool> head_bias = read.boolean("head_bias", false);
    const std::optional<bool> tie_embeddings = read.boolean("tie_embeddings", false);
    const std::optional<QkvLayout> qkv =
        read.choice<QkvLayout>("qkv", {{"fused", QkvLayout::Fused}, {"separate", QkvLayout::Separate}}, false);
    const std::optional<double> mask_value = read.number("mask_value", false);
    // Replacing scores before softmax: it must stay a finite negative number in float32.
    if (mask_value && !(*mask_value >= -static_cast<double>(std::numeric_limits<float>::max()) &&
                        static_cast<float>(*mask_value) < 0.0f))
        read.problem("'mask_value' must be a finite negative number in float32 (e.g. -1e9), got ",
                     json_excerpt(*read.get("mask_value", "float", false)));
    const std::optional<int64_t> max_len = read.positive("max_len");
    const std::optional<PositionalEncoding> pos_encoding =
        read.choice<PositionalEncoding>("pos_encoding", {{"sinusoidal", PositionalEncoding::Sinusoidal},
                                                         {"learned", PositionalEncoding::Learned},
                                                         {"none", PositionalEncoding::None},
                                                         {"rotary", PositionalEncoding::Rotary},
                                                         {"alibi", PositionalEncoding::Alibi},
                                                         {"relative_bias", PositionalEncoding::RelativeBias}});
    const bool rotary = pos_encoding == PositionalEncoding::Rotary;
    const std::optional<double> rope_theta = read.number("rope_theta", false);
    if (rope_theta && !rotary)
        read.problem("'rope_theta' belongs to \"pos_encoding\": \"rotary\"");
    else if (rope_theta && !(*rope_theta > 1.0 && *rope_theta <= 1e30))
        read.problem("'rope_theta' must be a number in (1, 1e30], got ", *rope_theta);
    const std::optional<RopePairs> rope_pairs =
        read.choice<RopePairs>("rope_pairs", {{"adjacent", RopePairs::Adjacent}, {"half", RopePairs::Half}}, false);
    if (rope_pairs && !rotary) read.problem("'rope_pairs' belongs to \"pos_encoding\": \"rotary\"");
    if (rotary && d_model && nhead && *d_model % *nhead == 0 && (*d_model / *nhead) % 2 != 0)
        read.problem("\"pos_encoding\": \"rotary\" turns pairs of a head's dimensions and needs an even head size "
                     "'d_model' / 'nhead', got ", *d_model / *nhead);
    // T5's relative bias (engine/mask.h): 4 buckets at least (one exact bucket per direction),
    // and max_distance >= buckets (T5: 32 and 128), so that the log-spaced buckets are defined.
    const bool relative = pos_encoding == PositionalEncoding::RelativeBias;
    const std::optional<int64_t> relative_buckets = read.positive("relative_buckets", false);
    const std::optional<int64_t> relative_max_distance = read.positive("relative_max_distance", false);
    for (const char* key : {"relative_buckets", "relative_max_distance"})
        if (read.get(key, "int", false) && pos_encoding && !relative)
            read.problem("'", key, "' belongs to \"pos_encoding\": \"relative_bias\"");
    const bool buckets_valid = relative_buckets || !read.get("relative_buckets", "int", false);
    const bool distance_valid = relative_max_distance || !read.get("relative_max_distance", "int", false);
    if (relative && relative_buckets && *relative_buckets < 4)
        read.problem("'relative_buckets' must be >= 4 (half of them per direction, half of those exact), got ",
                     *relative_buckets);
    else if (relative && buckets_valid && distance_valid &&
             relative_max_distance.value_or(128) < relative_buckets.value_or(32))
        read.problem("'relative_max_distance' (", relative_max_distance.value_or(128),
                     ") must be >= 'relative_buckets' (", relative_buckets.value_or(32), ")");
    if ((rotary || pos_encoding == PositionalEncoding::Alibi || relative) && arch == Architecture::EncoderDecoder)
        read.problem("\"pos_encoding\": \"", pos_encoding_name(*pos_encoding),
                     "\" is for decoder_only and encoder_only models, not encoder_decoder");
    const std::optional<int64_t> n_kv_heads = read.positive("n_kv_heads", false);
    if (n_kv_heads && nhead && *nhead % *n_kv_heads != 0)
        read.problem("'n_kv_heads' (", *n_kv_heads, ") must divide 'nhead' (", *nhead, ")");
    const std::optional<bool> embed_scale = read.boolean("embed_scale");
    if (pos_encoding == PositionalEncoding::Sinusoidal && max_len && d_model && *max_len * *d_model > (int64_t{1} << 27))
        read.problem("a sinusoidal table of 'max_len' x 'd_model' = ", *max_len, " x ", *d_model,
                     " is above the limit of 2^27 numbers");

    // The keys of each arch; with the arch missing or bad, the keys of every
    // arch are checked where present, and none is required.
    const bool encoder_decoder = !arch || *arch == Architecture::EncoderDecoder;
    const bool single_stack = !arch || *arch != Architecture::EncoderDecoder;
    std::optional<int64_t> num_encoder_layers, num_decoder_layers, src_vocab_size, tgt_vocab_size;
    std::optional<int64_t> num_layers, vocab_size;
    std::optional<bool> final_norm;
    std::optional<SelfAttentionKind> attention;
    if (encoder_decoder) {
        num_encoder_layers = read.positive("num_encoder_layers", arch.has_value());
        num_decoder_layers = read.positive("num_decoder_layers", arch.has_value());
        src_vocab_size = read.positive("src_vocab_size", arch.has_value());
        tgt_vocab_size = read.positive("tgt_vocab_size", arch.has_value());
    }
    if (single_stack) {
        num_layers = read.positive("num_layers", arch.has_value());
        vocab_size = read.positive("vocab_size", arch.has_value());
        attention = read.choice<SelfAttentionKind>("attention", {{"causal", SelfAttentionKind::Causal},
                                                                 {"prefix_lm", SelfAttentionKind::PrefixLm},
                                                                 {"bidirectional", SelfAttentionKind::Bidirectional}},
                                                   arch.has_value());
    }
    // Optional for encoder_decoder (and then true), required for the others.
    final_norm = read.boolean("final_norm", arch.has_value() && *arch != Architecture::EncoderDecoder);
    if (arch == Architecture::EncoderDecoder && final_norm == false)
        read.problem("'final_norm' must be true for encoder_decoder (nn.Transformer always has both norms)");
    if (arch && *arch != Architecture::EncoderDecoder && attention) {
        const bool encoder = *arch == Architecture::EncoderOnly;
        if (encoder != (*attention == SelfAttentionKind::Bidirectional))
            read.problem("'attention' is \"", attention_kind_name(*attention), "\" but arch is \"",
                         architecture_name(*arch), "\"; encoder_only is bidirectional, decoder_only causal or prefix_lm");
    }

    // Mistral's sliding window (engine/mask.h): over a causal decoder's own positions.
    const std::optional<int64_t> sliding_window = read.positive("sliding_window", false);
    if (sliding_window && arch && (*arch != Architecture::DecoderOnly || attention != SelfAttentionKind::Causal))
        read.problem("'sliding_window' is for decoder_only models with \"attention\": \"causal\"");

    // The special ids, checked against the vocabulary when it is known.
    std::optional<int64_t> vocabulary;
    if (arch == Architecture::EncoderDecoder && src_vocab_size && tgt_vocab_size)
        vocabulary = std::max(*src_vocab_size, *tgt_vocab_size);
    else if (arch && *arch != Architecture::EncoderDecoder && vocab_size)
        vocabulary = *vocab_size;
    std::optional<int64_t> ids[3];
    const char* id_keys[3] = {"pad_id", "bos_id", "eos_id"};
    for (int i = 0; i < 3; ++i) {
        ids[i] = read.integer(id_keys[i], /*required=*/false);
        if (ids[i] && vocabulary && (*ids[i] < 0 || *ids[i] >= *vocabulary))
            read.problem("'", id_keys[i], "' = ", *ids[i], " is outside the vocabulary 0..", *vocabulary - 1);
    }

    read.list_unread(arch);
    read.throw_if_any();

    // No problem: every required key of the arch is there and valid.
    config.arch = *arch;
    config.d_model = *d_model;
    config.nhead = *nhead;
    config.dim_feedforward = *dim_feedforward;
    config.activation = *activation;
    config.norm_first = *norm_first;
    if (eps) config.layer_norm_eps = static_cast<float>(*eps);
    config.max_len = *max_len;
    config.pos_encoding = *pos_encoding;
    config.embed_scale = *embed_scale;
    if (config.arch == Architecture::EncoderDecoder) {
        config.num_encoder_layers = *num_encoder_layers;
        config.num_decoder_layers = *num_decoder_layers;
        config.src_vocab_size = *src_vocab_size;
        config.tgt_vocab_size = *tgt_vocab_size;
    } else {
        config.num_layers = *num_layers;
        config.vocab_size = *vocab_size;
        config.final_norm = *final_norm;
        config.attention = *attention;
    }
    config.norm = norm.value_or(NormKind::LayerNorm);
    config.bias = bias.value_or(true);
    config.norm_bias = norm_bias.value_or(true);
    config.head_bias = head_bias.value_or(true);
    config.tie_embeddings = tie_embeddings.value_or(false);
    config.qkv = qkv.value_or(QkvLayout::Fused);
    if (mask_value) config.mask_value = static_cast<float>(*mask_value);
    if (config.norm == NormKind::RmsNorm) config.norm_bias = false;
    if (rope_theta) config.rope_theta = static_cast<float>(*rope_theta);
    config.rope_pairs = rope_pairs.value_or(RopePairs::Adjacent);
    config.n_kv_heads = n_kv_heads.value_or(config.nhead);
    config.relative_buckets = relative_buckets.value_or(32);
    config.relative_max_distance = relative_max_distance.value_or(128);
    config.sliding_window = sliding_window.value_or(0);
    config.pad_id = ids[0].value_or(-1);
    config.bos_id = ids[1].value_or(-1);
    config.eos_id = ids[2].value_or(-1);
    return config;
}

}  // namespace tinyformer
