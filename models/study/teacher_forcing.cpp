#include "models/study/teacher_forcing.h"

#include "models/decoding.h"

#include <algorithm>

namespace tinyformer {

namespace {

TokenIds one_row(const std::vector<int64_t>& ids) { return {1, static_cast<int64_t>(ids.size()), ids}; }

}  // namespace

void refuse_teacher_forced_beyond_memory(const Model& model, const std::vector<int64_t>& input, int64_t target_length) {
    const ModelConfig& config = model.config;
    const auto S = static_cast<int64_t>(input.size());
    try {
        if (model.encoder_decoder) {  // as encode() and decode() check it
            const int64_t T = (config.bos_id >= 0 ? 1 : 0) + target_length;
            refuse_pass_beyond_memory("encode", config, 1, S, S, config.num_encoder_layers, true, 0);
            refuse_pass_beyond_memory("decode", config, 1, T, std::max(T, S), 2 * config.num_decoder_layers, true,
                                      config.tgt_vocab_size);
        } else {  // as forward() checks it
            const int64_t T = S + target_length;
            refuse_pass_beyond_memory("forward", config, 1, T, T, config.num_layers, true, config.vocab_size);
        }
    } catch (const Error& error) {
        fail("the input of ", S, " tokens", target_length > 0 ? text_of(" and its target of ", target_length, " tokens") : "",
             " is too long for the recorded teacher-forced pass: ", error.message());
    }
}

std::vector<int64_t> target_or_greedy(const Model& model, const std::vector<int64_t>& input,
                                     const std::optional<std::vector<int64_t>>& target) {
    if (target) return *target;
    const ModelConfig& config = model.config;
    if (model.encoder_decoder && (config.bos_id < 0 || config.eos_id < 0))
        fail("the model's config has no ", config.bos_id < 0 ? "bos_id" : "eos_id",
             ", so it cannot generate a target; give the decoder's tokens with --target or --target-ids");
    if (!model.encoder_decoder && (config.arch == Architecture::EncoderOnly || config.eos_id < 0))
        return {};  // the given tokens only
    // Before decoding, not after: room to generate, and memory for the pass that follows.
    refuse_inputs_without_room(model, {input});
    refuse_teacher_forced_beyond_memory(model, input, 0);
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
