#include "models/config.h"

#include "engine/json.h"

#include <limits>
#include <map>
#include <set>

namespace tinyformer {

namespace {

using json = nlohmann::json;

// Reads keys from the config object, remembering which ones were used so
// that unknown keys can be refused by name.
class ConfigReader {
public:
    explicit ConfigReader(const json& object) : object_(object) {}

    bool has(const std::string& key) const { return object_.contains(key); }

    const json& get(const std::string& key) {
        if (!object_.contains(key)) fail("config: missing key '", key, "'");
        used_.insert(key);
        return object_.at(key);
    }
    std::string text(const std::string& key) {
        const json& value = get(key);
        if (!value.is_string()) fail("config: '", key, "' must be a string, got ", json_excerpt(value));
        return value.get<std::string>();
    }
    int64_t integer(const std::string& key) {
        const json& value = get(key);
        if (!value.is_number_integer()) fail("config: '", key, "' must be an integer, got ", json_excerpt(value));
        // nlohmann would wrap an unsigned value above INT64_MAX to a negative one
        constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        if (value.is_number_unsigned() && value.get<uint64_t>() > kInt64Max)
            fail("config: '", key, "' must fit in int64, got ", json_excerpt(value));
        return value.get<int64_t>();
    }
    // Sizes: at least 1 and at most kMaxSize, so that no config alone can
    // make the loader allocate without bound.
    int64_t positive(const std::string& key) {
        const int64_t value = integer(key);
        if (value < 1 || value > kMaxSize) fail("config: '", key, "' must be in 1..", kMaxSize, ", got ", value);
        return value;
    }
    static constexpr int64_t kMaxSize = int64_t{1} << 24;
    bool boolean(const std::string& key) {
        const json& value = get(key);
        if (!value.is_boolean()) fail("config: '", key, "' must be true or false, got ", json_excerpt(value));
        return value.get<bool>();
    }
    double number(const std::string& key) {
        const json& value = get(key);
        if (!value.is_number()) fail("config: '", key, "' must be a number, got ", json_excerpt(value));
        return value.get<double>();
    }
    template <typename Enum>
    Enum choice(const std::string& key, const std::map<std::string, Enum>& choices) {
        const std::string value = text(key);
        auto found = choices.find(value);
        if (found == choices.end()) {
            std::string allowed;
            for (const auto& [name, unused] : choices) allowed += (allowed.empty() ? "\"" : ", \"") + name + "\"";
            fail("config: '", key, "' is \"", value, "\"; expected one of ", allowed);
        }
        return found->second;
    }
    void refuse_unused() const {
        for (const auto& [key, unused] : object_.items())
            if (!used_.count(key)) fail("config: unknown key '", key, "' (see FORMAT.md for the keys of each arch)");
    }

private:
    const json& object_;
    std::set<std::string> used_;
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

ModelConfig parse_config(const std::string& json_text) {
    // The config is one flat object; values nest no further.
    const json object = parse_json(json_text, /*max_depth=*/1, "config");
    if (!object.is_object()) fail("config: must be a JSON object, got ", object.type_name());
    ConfigReader read(object);
    ModelConfig config;

    const std::string format = read.text("format");
    if (format != "tinyformer/1") fail("config: 'format' is \"", format, "\"; expected \"tinyformer/1\"");
    config.arch = read.choice<Architecture>("arch", {{"encoder_decoder", Architecture::EncoderDecoder},
                                                     {"decoder_only", Architecture::DecoderOnly},
                                                     {"encoder_only", Architecture::EncoderOnly}});
    config.d_model = read.positive("d_model");
    config.nhead = read.positive("nhead");
    if (config.d_model % config.nhead != 0)
        fail("config: 'd_model' (", config.d_model, ") must be divisible by 'nhead' (", config.nhead, ")");
    config.dim_feedforward = read.positive("dim_feedforward");
    config.activation =
        read.choice<Activation>("activation", {{"relu", Activation::Relu}, {"gelu", Activation::Gelu}});
    config.norm_first = read.boolean("norm_first");
    if (read.has("layer_norm_eps")) {
        const double eps = read.number("layer_norm_eps");
        // In float32, as LayerNorm adds it: 1e-85 would become 0, and a row of
        // equal values would then normalise as 0/0 (found by fuzz_config).
        // So eps must be a normal float32, at least FLT_MIN ~ 1.18e-38.
        if (!(eps >= std::numeric_limits<float>::min() && eps < 1.0))
            fail("config: 'layer_norm_eps' must be in [", std::numeric_limits<float>::min(),
                 ", 1) (a positive normal float32), got ", eps);
        config.layer_norm_eps = static_cast<float>(eps);
    }
    config.max_len = read.positive("max_len");
    config.pos_encoding = read.choice<PositionalEncoding>("pos_encoding", {{"sinusoidal", PositionalEncoding::Sinusoidal},
                                                                           {"learned", PositionalEncoding::Learned},
                                                                           {"none", PositionalEncoding::None}});
    config.embed_scale = read.boolean("embed_scale");
    if (config.pos_encoding == PositionalEncoding::Sinusoidal && config.max_len * config.d_model > (int64_t{1} << 27))
        fail("config: a sinusoidal table of 'max_len' x 'd_model' = ", config.max_len, " x ", config.d_model,
             " is above the limit of 2^27 numbers");

    if (config.arch == Architecture::EncoderDecoder) {
        config.num_encoder_layers = read.positive("num_encoder_layers");
        config.num_decoder_layers = read.positive("num_decoder_layers");
        config.src_vocab_size = read.positive("src_vocab_size");
        config.tgt_vocab_size = read.positive("tgt_vocab_size");
        if (read.has("final_norm") && !read.boolean("final_norm"))
            fail("config: 'final_norm' must be true for encoder_decoder (nn.Transformer always has both norms)");
    } else {
        config.num_layers = read.positive("num_layers");
        config.vocab_size = read.positive("vocab_size");
        config.final_norm = read.boolean("final_norm");
        config.attention = read.choice<SelfAttentionKind>("attention", {{"causal", SelfAttentionKind::Causal},
                                                                         {"prefix_lm", SelfAttentionKind::PrefixLm},
                                                                         {"bidirectional", SelfAttentionKind::Bidirectional}});
        const bool encoder = config.arch == Architecture::EncoderOnly;
        if (encoder != (config.attention == SelfAttentionKind::Bidirectional))
            fail("config: 'attention' is \"", attention_kind_name(config.attention), "\" but arch is \"",
                 architecture_name(config.arch), "\"; encoder_only is bidirectional, decoder_only causal or prefix_lm");
    }
    const int64_t vocabulary = config.arch == Architecture::EncoderDecoder
                                   ? std::max(config.src_vocab_size, config.tgt_vocab_size)
                                   : config.vocab_size;
    for (const char* key : {"pad_id", "bos_id", "eos_id"}) {
        if (!read.has(key)) continue;
        const int64_t id = read.integer(key);
        if (id < 0 || id >= vocabulary) fail("config: '", key, "' = ", id, " is outside the vocabulary 0..", vocabulary - 1);
        (key[0] == 'p' ? config.pad_id : key[0] == 'b' ? config.bos_id : config.eos_id) = id;
    }
    read.refuse_unused();
    return config;
}

}  // namespace tinyformer
