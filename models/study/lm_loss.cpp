#include "models/study/lm_loss.h"

#include "engine/error.h"
#include "models/tokenizers/tokenizer.h"

#include <cmath>
#include <istream>
#include <limits>
#include <sstream>
#include <string>

namespace tinyformer {

namespace {

// "123" -> value 123, true; false unless 1..9 digits.
bool whole_number(const std::string& text, int64_t& value) {
    if (text.empty() || text.size() > 9) return false;
    value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + (c - '0');
    }
    return true;
}

// Only a model that cannot see the token it predicts can score it.
void require_causal_decoder(const Model& model) {
    if (model.config.arch != Architecture::DecoderOnly || model.config.attention != SelfAttentionKind::Causal)
        fail("lm loss: needs a decoder_only model with causal attention (it must not see the token it predicts)");
}

}  // namespace

std::vector<PositionRange> parse_position_ranges(const std::string& text) {
    std::vector<PositionRange> ranges;
    std::stringstream parts(text);
    std::string part;
    while (std::getline(parts, part, ',')) {
        const size_t dash = part.find('-');
        PositionRange range;
        const bool two = dash != std::string::npos;
        if (!whole_number(part.substr(0, dash), range.first) ||
            !whole_number(two ? part.substr(dash + 1) : part.substr(0, dash), range.last))
            fail("positions: expected A-B or A (whole numbers, A <= B), ranges joined by ',', got '", part, "' in '",
                 text, "'");
        if (range.first > range.last)
            fail("positions: the range '", part, "' is reversed (", range.first, " > ", range.last, ")");
        ranges.push_back(range);
    }
    if (ranges.empty() || text.empty() || text.back() == ',')
        fail("positions: expected A-B or A (whole numbers, A <= B), ranges joined by ',', got '", text, "'");
    return ranges;
}

std::string position_range_text(const PositionRange& range) {
    return range.first == range.last ? std::to_string(range.first)
                                     : std::to_string(range.first) + "-" + std::to_string(range.last);
}

std::vector<std::vector<int64_t>> read_lm_sequences(const Model& model, std::istream& in, int64_t limit) {
    require_causal_decoder(model);  // before the lines are measured against its max_len
    if (model.text.vocab.empty() || model.text.tokenizer != TokenizerKind::Char)
        fail("lm sequences: the model has no character vocabulary to read them with");
    if (limit < 1) fail("lm sequences: limit must be >= 1, got ", limit);
    const Tokenizer tokenizer(model.text.input_vocab());
    // T - 1 <= max_len positions: a longer line is refused as soon as it is read,
    // and only its first longest + 2 characters are kept (room for a trailing CR),
    // so memory stays within limit * (max_len + 1) ids whatever the file holds.
    const uint64_t longest = static_cast<uint64_t>(model.config.max_len) + 1;
    std::vector<std::vector<int64_t>> sequences;
    std::string line;
    const auto more = [&] {
        return static_cast<int64_t>(sequences.size()) < limit && in.peek() != std::char_traits<char>::eof();
    };
    for (int64_t number = 1; more(); ++number) {
        line.clear();
        uint64_t length = 0;  // the line's characters, also past the ones kept
        char next = 0;
        while (in.get(next) && next != '\n')
            if (++length <= longest + 2) line.push_back(next);
        if (length <= longest + 2 && !line.empty() && line.back() == '\r') line.pop_back(), --length;
        if (line.empty() || line[0] == '#') continue;
        if (length > longest)
            fail("lm sequences: line ", number, " has ", length, " tokens, more than max_len + 1 = ", longest,
                 " (T tokens need T - 1 positions)");
        std::vector<int64_t> ids;
        for (char c : line) {
            if (!tokenizer.contains(std::string(1, c)))
                fail("lm sequences: line ", number, " has '", std::string(1, c),
                     "', which is not in the model's vocabulary");
            ids.push_back(tokenizer.encode_exactly(std::string(1, c)).at(0));
        }
        if (!sequences.empty() && ids.size() != sequences[0].size())
            fail("lm sequences: line ", number, " has ", ids.size(), " tokens, the first sequence ",
                 sequences[0].size());
        sequences.push_back(std::move(ids));
    }
    if (sequences.empty()) fail("lm sequences: no sequence (one a line; '#' lines are comments)");
    return sequences;
}

std::vector<std::vector<int64_t>> read_lm_sequences(const Model& model, const std::string& text) {
    std::istringstream in(text);
    return read_lm_sequences(model, in, std::numeric_limits<int64_t>::max());
}

std::vector<double> mean_nll_per_position(const Model& model, const std::vector<std::vector<int64_t>>& sequences,
                                          int64_t batch) {
    require_causal_decoder(model);
    if (sequences.empty()) fail("lm loss: no sequence");
    if (batch < 1) fail("lm loss: batch must be >= 1, got ", batch);
    const int64_t length = static_cast<int64_t>(sequences[0].size());  // T
    if (length < 2) fail("lm loss: a sequence needs at least 2 tokens (one to read, one to predict), got ", length);
    const int64_t positions = length - 1;  // the model reads tokens 0..T-2
    if (positions > model.config.max_len)
        fail("lm loss: sequences of ", length, " tokens need ", positions, " positions, more than the model's max_len ",
             model.config.max_len);
    const int64_t vocab = model.config.vocab_size;
    std::vector<double> sums(static_cast<size_t>(positions), 0.0);
    const int64_t n = static_cast<int64_t>(sequences.size());
    for (int64_t start = 0; start < n; start += batch) {
        const int64_t rows = std::min(batch, n - start);
        std::vector<int64_t> ids;
        for (int64_t r = 0; r < rows; ++r) {
            const std::vector<int64_t>& sequence = sequences[static_cast<size_t>(start + r)];
            if (static_cast<int64_t>(sequence.size()) != length)
                fail("lm loss: sequence ", start + r, " has ", sequence.size(), " tokens, sequence 0 has ", length);
            ids.insert(ids.end(), sequence.begin(), sequence.end() - 1);
        }
        const Tensor logits = model.single_stack->forward({rows, positions, ids}, Padding(), {});  // [rows, T-1, V]
        const float* values = logits.data();
        for (int64_t r = 0; r < rows; ++r) {
            const std::vector<int64_t>& sequence = sequences[static_cast<size_t>(start + r)];
            for (int64_t p = 0; p < positions; ++p) {
                const float* row = values + (r * positions + p) * vocab;
                // -log softmax(row)[next] = log(sum_v exp(row[v] - max)) - (row[next] - max)
                double max = row[0];
                for (int64_t v = 1; v < vocab; ++v) max = std::max(max, static_cast<double>(row[v]));
                double sum = 0.0;
                for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max);
                const int64_t next = sequence[static_cast<size_t>(p + 1)];
                sums[static_cast<size_t>(p)] += std::log(sum) - (static_cast<double>(row[next]) - max);
            }
        }
    }
    for (double& sum : sums) sum /= static_cast<double>(n);
    return sums;
}

std::vector<double> mean_nll_per_range(const std::vector<double>& per_position,
                                       const std::vector<PositionRange>& ranges) {
    std::vector<double> means;
    const int64_t last = static_cast<int64_t>(per_position.size()) - 1;
    for (const PositionRange& range : ranges) {
        if (range.first > range.last)
            fail("positions: the range ", position_range_text(range), " is reversed");
        if (range.last > last)
            fail("positions: the range ", position_range_text(range), " goes past the last scored position ", last,
                 " (sequences of ", last + 2, " tokens: position p predicts token p + 1)");
        double sum = 0.0;
        for (int64_t p = range.first; p <= range.last; ++p) sum += per_position[static_cast<size_t>(p)];
        means.push_back(sum / static_cast<double>(range.last - range.first + 1));
    }
    return means;
}

}  // namespace tinyformer
