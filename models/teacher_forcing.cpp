#include "models/teacher_forcing.h"

#include "models/decoding.h"

namespace tinyformer {

namespace {

TokenIds one_row(const std::vector<int64_t>& ids) { return {1, static_cast<int64_t>(ids.size()), ids}; }

}  // namespace

std::vector<int64_t> target_or_greedy(const Model& model, const std::vector<int64_t>& input,
                                     const std::optional<std::vector<int64_t>>& target) {
    if (target) return *target;
    const ModelConfig& config = model.config;
    if (model.encoder_decoder) {
        if (config.bos_id < 0 || config.eos_id < 0)
            fail("the model's config has no ", config.bos_id < 0 ? "bos_id" : "eos_id",
                 ", so it cannot generate a target; give the decoder's tokens with --target or --target-ids");
        return greedy_decode(model, {input}).tokens[0];
    }
    if (config.arch == Architecture::EncoderOnly || config.eos_id < 0) return {};  // the given tokens only
    return greedy_decode(model, {input}).tokens[0];
}

TeacherForced teacher_forced_pass(const Model& model, const std::vector<int64_t>& input,
                                  const std::vector<int64_t>& target, Observer* observer) {
    const ModelConfig& config = model.config;
    check_output_ids(model, target);
    TeacherForced pass;
    pass.input = input;
    if (model.encoder_decoder) {
        pass.decoder = decoder_input(model, target);
        pass.first_prediction = config.bos_id >= 0 ? 0 : -1;
        const Tensor memory = model.encoder_decoder->encode(one_row(input), Padding(), observer);
        pass.logits = model.encoder_decoder->decode(one_row(pass.decoder), memory, Padding(), Padding(), observer);
        return pass;
    }
    if (config.arch == Architecture::EncoderOnly && !target.empty())
        fail("an encoder_only model has no target; it reads the input tokens only");
    pass.decoder = input;
    pass.decoder.insert(pass.decoder.end(), target.begin(), target.end());
    if (config.pos_encoding != PositionalEncoding::None && static_cast<int64_t>(pass.decoder.size()) > config.max_len)
        fail("the sequence needs ", pass.decoder.size(), " positions (input + target) but the model's max_len is ",
             config.max_len);
    pass.first_prediction = static_cast<int64_t>(input.size()) - 1;
    const bool prefix_lm = config.attention == SelfAttentionKind::PrefixLm;
    const std::vector<int64_t> prefix = {static_cast<int64_t>(input.size())};
    pass.logits = model.single_stack->forward(one_row(pass.decoder), Padding(),
                                              prefix_lm ? prefix : std::vector<int64_t>{}, observer);
    return pass;
}

}  // namespace tinyformer
