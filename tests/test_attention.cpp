// Tests for engine/attention.*: lesson 10.3's claims, one test case each.
// Expected numbers are worked by hand in the comments beside them.

#include "engine/attention.h"
#include "engine/random.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numeric>

using namespace tinyformer;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

AttentionOptions options_for(AttentionPath path, bool want_weights = false) {
    AttentionOptions options;
    options.path = path;
    options.want_weights = want_weights;
    return options;
}

const AttentionPath kBothPaths[] = {AttentionPath::Materialized, AttentionPath::Streaming};

BoolTensor bools(Shape shape, std::vector<uint8_t> values) { return BoolTensor{std::move(shape), std::move(values)}; }

}  // namespace

TEST_CASE("The lesson's two worked examples give its numbers, and a reversed mask does not") {
    SUBCASE("random [2,4,8] queries over [2,6,8] keys and [2,6,5] values: shapes, rows sum to 1") {
        Random random(42);
        const Tensor q = random.normal_tensor({2, 4, 8}), k = random.normal_tensor({2, 6, 8}),
                     v = random.normal_tensor({2, 6, 5});
        const AttentionResult result = scaled_dot_product_attention(q, k, v, Mask(), options_for(AttentionPath::Automatic, true));
        CHECK(result.output.shape() == Shape{2, 4, 5});
        CHECK(result.weights.shape() == Shape{2, 4, 6});
        for (int64_t b = 0; b < 2; ++b)
            for (int64_t l = 0; l < 4; ++l) {
                double sum = 0;
                for (int64_t s = 0; s < 6; ++s) sum += result.weights.at({b, l, s});
                CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
            }
    }
    SUBCASE("3x3 causal, Q = K = 0, V = 2, 4, 8: outputs 2, 3, 14/3 and future weights exactly 0") {
        // All allowed scores are 0, so each query averages its allowed values:
        // q0: 2;  q1: (2+4)/2 = 3;  q2: (2+4+8)/3 = 14/3.
        const Tensor zeros({1, 3, 2});
        const Tensor v({1, 3, 1}, {2, 4, 8});
        for (AttentionPath path : kBothPaths) {
            CAPTURE(path_name(path));
            const AttentionResult result = scaled_dot_product_attention(
                zeros, zeros, v, Mask::causal(3), options_for(path, path == AttentionPath::Materialized));
            CHECK(result.path == path);
            CHECK(result.output.at({0, 0, 0}) == doctest::Approx(2.0));
            CHECK(result.output.at({0, 1, 0}) == doctest::Approx(3.0));
            CHECK(result.output.at({0, 2, 0}) == doctest::Approx(14.0 / 3.0));
            if (path == AttentionPath::Materialized) {
                CHECK(result.weights.at({0, 0, 1}) == 0.0f);  // exactly, not approximately
                CHECK(result.weights.at({0, 0, 2}) == 0.0f);
                CHECK(result.weights.at({0, 1, 2}) == 0.0f);
                CHECK(result.weights.at({0, 1, 0}) == doctest::Approx(0.5));
            }
        }
    }
    SUBCASE("the reversed (upper-triangular) mask gives 14/3, 6, 8 instead") {
        // q0 sees k0..k2: 14/3;  q1 sees k1, k2: (4+8)/2 = 6;  q2 sees k2: 8.
        const Tensor zeros({1, 3, 2});
        const Tensor v({1, 3, 1}, {2, 4, 8});
        const Mask reversed = Mask::from_allowed(bools({3, 3}, {1, 1, 1, 0, 1, 1, 0, 0, 1}));
        const AttentionResult result = scaled_dot_product_attention(zeros, zeros, v, reversed);
        CHECK(result.output.at({0, 0, 0}) == doctest::Approx(14.0 / 3.0));
        CHECK(result.output.at({0, 1, 0}) == doctest::Approx(6.0));
        CHECK(result.output.at({0, 2, 0}) == doctest::Approx(8.0));
    }
}

TEST_CASE("Cross-attention with L != S has the lesson's shapes and hand-computed weights") {
    // Dk = 1, so the scale is 1/sqrt(1) = 1. Keys 0, 1, 2.
    // q0 = 0:     scores 0, 0, 0              -> weights 1/3 each  -> out = (7+14+21)/3 = 14
    // q1 = ln 2:  scores 0, ln2, 2 ln2        -> exp: 1, 2, 4      -> weights 1/7, 2/7, 4/7
    //             out = (7*1 + 14*2 + 21*4)/7 = (7 + 28 + 84)/7 = 17
    const float ln2 = std::log(2.0f);
    const Tensor q({1, 2, 1}, {0.0f, ln2});                  // [B, L, Dk] = [1, 2, 1]
    const Tensor k({1, 3, 1}, {0.0f, 1.0f, 2.0f});           // [B, S, Dk] = [1, 3, 1]
    const Tensor v({1, 3, 2}, {7, 70, 14, 140, 21, 210});    // [B, S, Dv] = [1, 3, 2]
    for (AttentionPath path : kBothPaths) {
        CAPTURE(path_name(path));
        const bool weights = path == AttentionPath::Materialized;
        const AttentionResult result = scaled_dot_product_attention(q, k, v, Mask(), options_for(path, weights));
        CHECK(result.output.shape() == Shape{1, 2, 2});      // [B, L, Dv]
        CHECK(result.output.at({0, 0, 0}) == doctest::Approx(14.0));
        CHECK(result.output.at({0, 0, 1}) == doctest::Approx(140.0));
        CHECK(result.output.at({0, 1, 0}) == doctest::Approx(17.0));
        CHECK(result.output.at({0, 1, 1}) == doctest::Approx(170.0));
        if (weights) {
            CHECK(result.weights.shape() == Shape{1, 2, 3});  // [B, L, S]
            CHECK(result.weights.at({0, 1, 0}) == doctest::Approx(1.0 / 7.0));
            CHECK(result.weights.at({0, 1, 2}) == doctest::Approx(4.0 / 7.0));
        }
    }
    SUBCASE("random sizes: B=3, L=5, S=9, Dk=4, Dv=6") {
        Random random(2);
        const AttentionResult result =
            scaled_dot_product_attention(random.normal_tensor({3, 5, 4}), random.normal_tensor({3, 9, 4}),
                                         random.normal_tensor({3, 9, 6}), Mask(), options_for(AttentionPath::Automatic, true));
        CHECK(result.output.shape() == Shape{3, 5, 6});
        CHECK(result.weights.shape() == Shape{3, 5, 9});
        CHECK(result.path == AttentionPath::Materialized);  // weights wanted -> materialized
    }
}

TEST_CASE("The two PyTorch Boolean conventions agree when converted from their own tensors, and not when swapped") {
    Random random(4);
    const Tensor q = random.normal_tensor({1, 3, 4}), k = random.normal_tensor({1, 3, 4}),
                 v = random.normal_tensor({1, 3, 2});
    const AttentionOptions weights = options_for(AttentionPath::Materialized, true);
    // The causal mask as each API spells it.
    const BoolTensor mha_blocked = bools({3, 3}, {0, 1, 1, 0, 0, 1, 0, 0, 0});   // nn.MultiheadAttention: True = blocked
    const BoolTensor sdpa_allowed = bools({3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1});  // F.sdpa: True = allowed
    const AttentionResult from_mha =
        scaled_dot_product_attention(q, k, v, Mask::from_torch_mha_attn_mask(mha_blocked), weights);
    const AttentionResult from_sdpa =
        scaled_dot_product_attention(q, k, v, Mask::from_torch_sdpa_mask(sdpa_allowed), weights);
    // Exact by construction: both masks allow the same cells, so the same calls run on the same numbers.
    CHECK(from_mha.weights.values() == from_sdpa.weights.values());
    CHECK(from_mha.weights.at({0, 0, 1}) == 0.0f);
    CHECK(from_mha.weights.at({0, 0, 0}) == 1.0f);  // q0 sees only k0: softmax of one score is exactly 1

    SUBCASE("the migration bug: an MHA tensor read with SDPA's meaning") {
        // Read as 'True = allowed', the MHA tensor lets q0 see only the future
        // (k1, k2) and q2 nothing at all.
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, Mask::from_torch_sdpa_mask(mha_blocked), weights),
                             "query 2 of batch 0 may attend no key");
        const BoolTensor first_two_rows = bools({2, 3}, {0, 1, 1, 0, 0, 1});
        const Tensor q2({1, 2, 4}, std::vector<float>(q.data(), q.data() + 8));
        const AttentionResult wrong =
            scaled_dot_product_attention(q2, k, v, Mask::from_torch_sdpa_mask(first_two_rows), weights);
        CHECK(wrong.weights.at({0, 0, 0}) == 0.0f);  // its own past is blocked
        CHECK(wrong.weights.at({0, 0, 1}) > 0.0f);   // the future leaks in
    }
    SUBCASE("key_padding_mask [[F,F,T]]: MHA meaning ignores key 2; read as SDPA it keeps ONLY key 2") {
        const BoolTensor padding = bools({1, 3}, {0, 0, 1});
        const AttentionResult right =
            scaled_dot_product_attention(q, k, v, Mask::from_torch_key_padding_mask(padding), weights);
        const AttentionResult swapped =
            scaled_dot_product_attention(q, k, v, Mask::from_torch_sdpa_mask(padding), weights);
        for (int64_t l = 0; l < 3; ++l) {
            CHECK(right.weights.at({0, l, 2}) == 0.0f);
            CHECK(swapped.weights.at({0, l, 2}) == 1.0f);  // the only allowed key takes all the weight
        }
    }
}

TEST_CASE("A fully masked query is an error naming batch and query, unless it is padding: then exactly 0") {
    Random random(5);
    const Tensor q = random.normal_tensor({2, 3, 4}), k = random.normal_tensor({2, 3, 4}),
                 v = random.normal_tensor({2, 3, 2});
    // Batch 1, query 2 may attend nothing; everything else is causal.
    std::vector<uint8_t> allowed = {1, 0, 0, 1, 1, 0, 1, 1, 1,   // batch 0
                                    1, 0, 0, 1, 1, 0, 0, 0, 0};  // batch 1
    const Mask mask = Mask::from_allowed(bools({2, 3, 3}, allowed));
    for (AttentionPath path : kBothPaths) {
        CAPTURE(path_name(path));
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, mask, options_for(path)),
                             "query 2 of batch 1 may attend no key");
        AttentionOptions options = options_for(path, path == AttentionPath::Materialized);
        options.query_padding = Padding::from_lengths({3, 2}, 3);  // batch 1, position 2 is padding
        const AttentionResult result = scaled_dot_product_attention(q, k, v, mask, options);
        CHECK(result.output.all_finite());
        CHECK(result.output.at({1, 2, 0}) == 0.0f);
        CHECK(result.output.at({1, 2, 1}) == 0.0f);
        if (path == AttentionPath::Streaming)  // +0: see "A padded query's attention output is exactly 0 ..."
            CHECK_FALSE(std::signbit(result.output.at({1, 2, 0})));
        CHECK(result.output.at({1, 1, 0}) != 0.0f);              // real queries are untouched
        if (path == AttentionPath::Materialized)
            for (int64_t s = 0; s < 3; ++s) CHECK(result.weights.at({1, 2, s}) == 0.0f);
    }
    SUBCASE("left padding under a causal mask: the padded query at position 0 sees only padding") {
        // Row 0 is padded at position 0: key 0 is masked, and causal query 0
        // may see only key 0 -> empty row, defined as 0 because it is padding.
        const Padding padding = Padding::from_flags(bools({2, 3}, {1, 0, 0, 0, 0, 0}));
        AttentionOptions options = options_for(AttentionPath::Materialized, true);
        options.query_padding = padding;
        const AttentionResult result =
            scaled_dot_product_attention(q, k, v, Mask::causal(3) & Mask::key_padding(padding), options);
        CHECK(result.weights.all_finite());
        CHECK(result.weights.at({0, 0, 0}) == 0.0f);
        CHECK(result.weights.at({0, 1, 1}) == 1.0f);  // q1 sees k0 (padding) and k1: only k1 remains
    }
}

TEST_CASE("mask_value replaces blocked scores: a fully masked query gets uniform weights 1/S, a partly masked one the -inf numbers") {
    // One batch row, Dk = Dv = 1 (scale 1): queries [1], [2]; keys [1], [0], [-1]; values 3, 6, 9.
    // Query 0 may attend keys 0 and 1; query 1 may attend none.
    const Tensor q({1, 2, 1}, {1.0f, 2.0f}), k({1, 3, 1}, {1.0f, 0.0f, -1.0f}), v({1, 3, 1}, {3.0f, 6.0f, 9.0f});
    const Mask mask = Mask::from_allowed(bools({2, 3}, {1, 1, 0, 0, 0, 0}));
    // Query 0: scores [1, 0, -1]; key 2 becomes -1e9, exp(-1e9 - 1) = 0 in float:
    //   weights [e / (e + 1), 1 / (e + 1), 0] = [0.7310586, 0.2689414, 0], as with -inf;
    //   output 3 * 0.7310586 + 6 * 0.2689414 = 3.8068243
    // Query 1: every score is -1e9: exp(0) = 1 each, weights [1/3, 1/3, 1/3]; output (3 + 6 + 9) / 3 = 6.
    // Without mask_value query 1 has no distribution: an Error (the test above).
    for (AttentionPath path : kBothPaths)
        for (int64_t key_tile : {2048, 2, 1}) {
            CAPTURE(path_name(path));
            CAPTURE(key_tile);
            AttentionOptions options = options_for(path, path == AttentionPath::Materialized);
            options.key_tile = key_tile;
            CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, mask, options),
                                 "query 1 of batch 0 may attend no key");
            options.mask_value = -1e9f;
            const AttentionResult result = scaled_dot_product_attention(q, k, v, mask, options);
            CHECK(result.output.at({0, 0, 0}) == doctest::Approx(3.8068243).epsilon(1e-6));
            CHECK(result.output.at({0, 1, 0}) == doctest::Approx(6.0).epsilon(1e-6));
            if (path == AttentionPath::Materialized) {
                CHECK(result.weights.at({0, 0, 0}) == doctest::Approx(0.7310586).epsilon(1e-6));
                CHECK(result.weights.at({0, 0, 2}) == 0.0f);
                for (int64_t s = 0; s < 3; ++s) CHECK(result.weights.at({0, 1, s}) == doctest::Approx(1.0 / 3.0).epsilon(1e-7));
            }
            // A padded query is still exactly 0, mask_value or not.
            options.query_padding = Padding::from_lengths({1}, 2);
            const AttentionResult padded = scaled_dot_product_attention(q, k, v, mask, options);
            CHECK(padded.output.at({0, 1, 0}) == 0.0f);
            CHECK_FALSE(std::signbit(padded.output.at({0, 1, 0})));
            // Exact by construction: the same calls in the same shapes, and query 0's row of each
            // product reads only query 0's inputs, which padding query 1 does not change.
            CHECK(padded.output.at({0, 0, 0}) == result.output.at({0, 0, 0}));
        }
    SUBCASE("a mask_value that is not finite is refused") {
        AttentionOptions options;
        options.mask_value = -kInf;
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, mask, options),
                             "mask_value must be finite, got -inf");
    }
    SUBCASE("partly masked rows: mask_value -1e9 gives the -inf weights exactly, and the streaming path agrees") {
        Random random(11);
        const Tensor q2 = random.normal_tensor({2, 9, 8}), k2 = random.normal_tensor({2, 9, 8}),
                     v2 = random.normal_tensor({2, 9, 4});
        const Padding padding = Padding::from_flags(bools({2, 9}, {1, 1, 0, 0, 0, 0, 0, 0, 0,    // left padding
                                                                    0, 0, 0, 0, 0, 0, 0, 1, 1}));  // right padding
        const Mask causal = Mask::causal(9) & Mask::key_padding(padding);
        AttentionOptions hard = options_for(AttentionPath::Materialized, true);
        hard.query_padding = padding;
        AttentionOptions filled = hard;
        filled.mask_value = -1e9f;
        const AttentionResult minus_inf = multi_head_scaled_dot_product_attention(q2, k2, v2, 2, causal, hard);
        const AttentionResult replaced = multi_head_scaled_dot_product_attention(q2, k2, v2, 2, causal, filled);
        // Exact by construction on the materialized path: the same score product; each row's max is
        // an allowed score either way, and exp(-1e9 - max) is 0 as exp(-inf) is (every kernel
        // variant returns 0 below -87.3), so the same softmax sums and the same A V product.
        CHECK(replaced.weights.values() == minus_inf.weights.values());
        CHECK(replaced.output.values() == minus_inf.output.values());
        for (int64_t key_tile : {2048, 3, 1}) {
            AttentionOptions streaming = filled;
            streaming.path = AttentionPath::Streaming;
            streaming.want_weights = false;
            streaming.key_tile = key_tile;
            streaming.query_block = 4;
            const AttentionResult streamed = multi_head_scaled_dot_product_attention(q2, k2, v2, 2, causal, streaming);
            for (int64_t i = 0; i < streamed.output.numel(); ++i)
                CHECK(streamed.output.data()[i] == doctest::Approx(replaced.output.data()[i]).epsilon(1e-5).scale(1.0));
        }
    }
}

TEST_CASE("-inf gives exactly zero weight; a finite negative only suppresses; zeroing after softmax unnormalises") {
    // One query q = 1 (Dk = 1, scale 1) against keys 0, 0, 10004: scores 0, 0, 10004.
    const Tensor q({1, 1, 1}, {1.0f});
    const Tensor k({1, 3, 1}, {0.0f, 0.0f, 10004.0f});
    const Tensor v({1, 3, 1}, {1.0f, 2.0f, 3.0f});
    const AttentionOptions weights = options_for(AttentionPath::Materialized, true);
    const AttentionResult hard =
        scaled_dot_product_attention(q, k, v, Mask::from_additive(Tensor({1, 3}, {0.0f, 0.0f, -kInf})), weights);
    // -inf: key 2 gets exactly 0; keys 0 and 1 share equally: 0.5, 0.5.
    CHECK(hard.weights.at({0, 0, 2}) == 0.0f);
    CHECK(hard.weights.at({0, 0, 0}) == doctest::Approx(0.5));
    const AttentionResult soft =
        scaled_dot_product_attention(q, k, v, Mask::from_additive(Tensor({1, 3}, {0.0f, 0.0f, -1e4f})), weights);
    // -1e4: the masked score is 10004 - 10000 = 4, so its weight is
    // e^4 / (1 + 1 + e^4) = 54.59815 / 56.59815 = 0.9646630.
    CHECK(soft.weights.at({0, 0, 2}) == doctest::Approx(0.9646630).epsilon(1e-5));
    CHECK(soft.weights.at({0, 0, 2}) != 0.0f);
    for (AttentionPath path : kBothPaths) {  // the streaming path honours the bias too
        const AttentionResult streamed = scaled_dot_product_attention(
            q, k, v, Mask::from_additive(Tensor({1, 3}, {0.0f, 0.0f, -1e4f})), options_for(path));
        // out = (1 + 2 + 3 e^4) / (2 + e^4) = (3 + 163.79445) / 56.59815 = 2.9470...
        CHECK(streamed.output.at({0, 0, 0}) == doctest::Approx((3.0 + 3.0 * std::exp(4.0)) / (2.0 + std::exp(4.0))));
    }
    SUBCASE("multiplying weights by 0 after softmax leaves a row that sums to 2/3") {
        // Equal scores -> weights 1/3 each; zeroing one afterwards leaves 2/3.
        const Tensor flat_keys({1, 3, 1});
        AttentionResult result = scaled_dot_product_attention(q, flat_keys, v, Mask(), weights);
        result.weights.at({0, 0, 2}) *= 0.0f;
        const double sum = result.weights.at({0, 0, 0}) + result.weights.at({0, 0, 1}) + result.weights.at({0, 0, 2});
        CHECK(sum == doctest::Approx(2.0 / 3.0));
        CHECK(sum != doctest::Approx(1.0));
    }
}

TEST_CASE("Streaming and materialized attention agree within 1e-5 over a table of shapes and masks") {
    struct Size {
        int64_t B, L, S, Dk, Dv;
    };
    const Size sizes[] = {{1, 1, 1, 1, 1},      {2, 1, 300, 8, 3},     {1, 300, 1, 4, 4},   {2, 17, 33, 128, 1},
                          {1, 64, 64, 64, 64},  {1, 300, 300, 32, 128}, {1, 5, 513, 16, 16}, {2, 130, 257, 1, 128},
                          {3, 100, 100, 7, 9}};
    enum class MaskKind { None, Causal, PrefixLm, KeyPadding, LocalWindow, Seq2SeqSelf, Additive, QueryPadding };
    const MaskKind kinds[] = {MaskKind::None,        MaskKind::Causal,      MaskKind::PrefixLm, MaskKind::KeyPadding,
                              MaskKind::LocalWindow, MaskKind::Seq2SeqSelf, MaskKind::Additive, MaskKind::QueryPadding};
    Random random(7);
    int compared = 0;
    for (const Size& size : sizes)
        for (MaskKind kind : kinds) {
            const bool square = size.L == size.S;
            if (!square && (kind == MaskKind::Causal || kind == MaskKind::PrefixLm || kind == MaskKind::LocalWindow ||
                            kind == MaskKind::Seq2SeqSelf))
                continue;
            CAPTURE(size.B); CAPTURE(size.L); CAPTURE(size.S); CAPTURE(size.Dk); CAPTURE(size.Dv);
            CAPTURE(static_cast<int>(kind));
            std::vector<int64_t> lengths(static_cast<size_t>(size.B));
            for (int64_t b = 0; b < size.B; ++b) lengths[static_cast<size_t>(b)] = random.uniform_int(1, size.S);
            Mask mask;
            AttentionOptions base;
            switch (kind) {
                case MaskKind::None: break;
                case MaskKind::Causal: mask = Mask::causal(size.L); break;
                case MaskKind::PrefixLm: mask = Mask::prefix_lm(lengths, size.L); break;
                case MaskKind::KeyPadding: mask = Mask::key_padding(Padding::from_lengths(lengths, size.S)); break;
                case MaskKind::LocalWindow: mask = Mask::local_window(size.L, 3); break;
                case MaskKind::Seq2SeqSelf: {
                    const Padding target = Padding::from_lengths(lengths, size.L);
                    mask = seq2seq_masks(target, target).decoder_self;
                    base.query_padding = target;  // a padded query may be fully masked
                    break;
                }
                case MaskKind::Additive: {
                    Tensor bias = random.normal_tensor({size.L, size.S}, 3.0f);
                    bias.at({0, 0}) = -kInf;  // and one hard block
                    if (size.S == 1) bias.at({0, 0}) = -1.0f;
                    mask = Mask::from_additive(bias);
                    break;
                }
                case MaskKind::QueryPadding:
                    base.query_padding = Padding::from_lengths(
                        std::vector<int64_t>(static_cast<size_t>(size.B), std::max<int64_t>(1, size.L / 2)), size.L);
                    break;
            }
            const Tensor q = random.normal_tensor({size.B, size.L, size.Dk});
            const Tensor k = random.normal_tensor({size.B, size.S, size.Dk});
            const Tensor v = random.normal_tensor({size.B, size.S, size.Dv});
            AttentionOptions materialized = base, streaming = base, small_tiles = base;
            materialized.path = AttentionPath::Materialized;
            streaming.path = AttentionPath::Streaming;
            small_tiles.path = AttentionPath::Streaming;
            small_tiles.query_block = 5;  // many blocks and tiles even for small L and S
            small_tiles.key_tile = 7;
            const Tensor reference = scaled_dot_product_attention(q, k, v, mask, materialized).output;
            CHECK(reference.all_finite());
            CHECK(test_helpers::max_abs_difference(reference, scaled_dot_product_attention(q, k, v, mask, streaming).output) <= 1e-5);
            CHECK(test_helpers::max_abs_difference(reference, scaled_dot_product_attention(q, k, v, mask, small_tiles).output) <= 1e-5);
            ++compared;
        }
    CHECK(compared >= 40);
}

TEST_CASE("Self-attention without a mask is permutation-equivariant; a causal mask breaks it unless permuted too") {
    Random random(8);
    const int64_t T = 6, D = 5;
    const Tensor x = random.normal_tensor({1, T, D});
    const std::vector<int64_t> perm = {4, 2, 0, 5, 1, 3};  // position i of the permuted input holds token perm[i]
    Tensor px({1, T, D});
    for (int64_t i = 0; i < T; ++i)
        for (int64_t d = 0; d < D; ++d) px.at({0, i, d}) = x.at({0, perm[static_cast<size_t>(i)], d});
    auto permutation_error = [&](const Mask& original, const Mask& for_permuted) {
        const Tensor out = scaled_dot_product_attention(x, x, x, original).output;
        const Tensor pout = scaled_dot_product_attention(px, px, px, for_permuted).output;
        double worst = 0;
        for (int64_t i = 0; i < T; ++i)
            for (int64_t d = 0; d < D; ++d)
                worst = std::max(worst, static_cast<double>(std::fabs(
                                            pout.at({0, i, d}) - out.at({0, perm[static_cast<size_t>(i)], d}))));
        return worst;
    };
    CHECK(permutation_error(Mask(), Mask()) <= 1e-5);
    const Mask causal = Mask::causal(T);
    CHECK(permutation_error(causal, causal) > 1e-2);
    std::vector<uint8_t> permuted(static_cast<size_t>(T * T));
    for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j)
            permuted[static_cast<size_t>(i * T + j)] =
                causal.allows(0, 0, perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    CHECK(permutation_error(causal, Mask::from_allowed(bools({T, T}, permuted))) <= 1e-5);
}

TEST_CASE("Every invalid input of the lesson's reference code raises tinyformer::Error naming the shapes") {
    Random random(9);
    const Tensor q = random.normal_tensor({2, 4, 8}), k = random.normal_tensor({2, 6, 8}),
                 v = random.normal_tensor({2, 6, 5});
    SUBCASE("rank") {
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(Tensor({4, 8}), k, v), "three-dimensional", "query [4,8]");
    }
    SUBCASE("batch") {
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(random.normal_tensor({3, 4, 8}), k, v), "batch dimensions must match", "[3,4,8]");
    }
    SUBCASE("key dimension") {
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, random.normal_tensor({2, 6, 32}), v), "key has Dk=32 but query has Dk=8", "key [2,6,32]");
    }
    SUBCASE("source length of key and value") {
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, random.normal_tensor({2, 7, 5})),
                             "key has S=6 but value has S=7");
    }
    SUBCASE("empty source or key dimension") {
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, Tensor({2, 0, 8}), Tensor({2, 0, 5})), "must be positive", "key [2,0,8]");
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(Tensor({2, 4, 0}), Tensor({2, 6, 0}), v),
                             "must be positive");
    }
    SUBCASE("non-finite scores and values, on both paths") {
        Tensor bad_q = q;
        bad_q.at({1, 3, 0}) = kInf;
        Tensor bad_v = v;
        bad_v.at({0, 2, 1}) = std::nanf("");
        Tensor huge_q = Tensor::filled({2, 4, 8}, 1e30f);  // finite inputs whose dot product overflows
        for (AttentionPath path : kBothPaths) {
            CHECK_ERROR_CONTAINS(scaled_dot_product_attention(bad_q, k, v, Mask(), options_for(path)), "query 3 of batch 1", "not finite");
            CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, bad_v, Mask(), options_for(path)),
                                 "value holds a non-finite number");
            CHECK_ERROR_CONTAINS(scaled_dot_product_attention(huge_q, Tensor::filled({2, 6, 8}, 1e30f), v, Mask(),
                                                              options_for(path)),
                                 "not finite");
        }
    }
    SUBCASE("mask of the wrong shape") {
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, Mask::causal(4)),
                             "mask [1,1,4,4] does not broadcast to [B,H,L,S] = [2,1,4,6]");
        CHECK_ERROR_CONTAINS(
            scaled_dot_product_attention(q, k, v, Mask::key_padding(Padding::from_lengths({1, 2, 3}, 6))),
            "mask [3,1,1,6]");
    }
    SUBCASE("query padding of the wrong shape, and weights asked of the streaming path") {
        AttentionOptions options;
        options.query_padding = Padding::from_lengths({4, 4}, 5);
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, Mask(), options), "query_padding is [2,5]", "[2,4]");
        CHECK_ERROR_CONTAINS(scaled_dot_product_attention(q, k, v, Mask(), options_for(AttentionPath::Streaming, true)),
                             "streaming path never holds them");
    }
}

TEST_CASE("Streaming skips the key tiles the mask blocks, with the materialized path's output at every tile boundary") {
    Random random(11);
    const int64_t T = 37;  // not a multiple of any tile size below
    std::vector<int64_t> lengths = {37, 20, 1};
    std::vector<uint8_t> holes(static_cast<size_t>(T * T));  // an arbitrary mask: the diagonal and every 9th key
    for (int64_t l = 0; l < T; ++l)
        for (int64_t s = 0; s < T; ++s) holes[static_cast<size_t>(l * T + s)] = s == l || s % 9 == 0;
    std::vector<uint8_t> left_padding(static_cast<size_t>(3 * T));  // row b pads its first 5*b keys
    for (int64_t b = 0; b < 3; ++b)
        for (int64_t s = 0; s < T; ++s) left_padding[static_cast<size_t>(b * T + s)] = s < 5 * b;
    const Padding right = Padding::from_lengths(lengths, T);
    struct Case {
        const char* name;
        Mask mask;
        Padding query_padding;
    };
    const Case cases[] = {
        {"causal", Mask::causal(T), {}},
        {"local window 0", Mask::local_window(T, 0), {}},
        {"local window 4", Mask::local_window(T, 4), {}},
        {"prefix-LM", Mask::prefix_lm({10, 0, 37}, T), {}},
        {"key padding (right)", Mask::key_padding(right), {}},
        {"key padding (left)", Mask::from_torch_key_padding_mask(bools({3, T}, left_padding)), {}},
        {"causal & padding, padded queries", seq2seq_masks(right, right).decoder_self, right},
        {"arbitrary with holes", Mask::from_allowed(bools({T, T}, holes)), {}},
        {"arbitrary & causal", Mask::from_allowed(bools({T, T}, holes)) & Mask::causal(T), {}},
    };
    const Tensor q = random.normal_tensor({3, T, 16}), k = random.normal_tensor({3, T, 16}),
                 v = random.normal_tensor({3, T, 8});
    for (const Case& c : cases) {
        CAPTURE(c.name);
        AttentionOptions materialized;
        materialized.path = AttentionPath::Materialized;
        materialized.query_padding = c.query_padding;
        const Tensor reference = multi_head_scaled_dot_product_attention(q, k, v, 2, c.mask, materialized).output;
        for (int64_t block : {1, 2, 3, 8, 37})
            for (int64_t tile : {1, 2, 4, 5, 16, 64}) {
                CAPTURE(block); CAPTURE(tile);
                AttentionOptions streaming = materialized;
                streaming.path = AttentionPath::Streaming;
                streaming.query_block = block;
                streaming.key_tile = tile;
                const AttentionResult result = multi_head_scaled_dot_product_attention(q, k, v, 2, c.mask, streaming);
                CHECK(test_helpers::max_abs_difference(reference, result.output) <= 1e-5);
                // never more tiles than the unmasked walk
                const int64_t blocks = (T + block - 1) / block, tiles = (T + std::min(tile, T) - 1) / std::min(tile, T);
                CHECK(result.key_tiles_computed <= 3 * 2 * blocks * tiles);
            }
    }
}

TEST_CASE("Streaming computes only the key tiles a causal or local-window mask leaves: the count") {
    Random random(3);
    const Tensor q = random.normal_tensor({1, 16, 4}), k = random.normal_tensor({1, 16, 4}), v = random.normal_tensor({1, 16, 4});
    AttentionOptions options;
    options.path = AttentionPath::Streaming;
    options.query_block = 4;
    options.key_tile = 4;
    // no mask: 4 query blocks x 4 key tiles, 16 x 16 = 256 scores
    const AttentionResult all = scaled_dot_product_attention(q, k, v, Mask(), options);
    CHECK(all.key_tiles_computed == 16);
    CHECK(all.scores_computed == 256);
    // causal: block i (queries 4i..4i+3) sees keys 0..4i+3: i+1 tiles -> 1+2+3+4;
    // scores 4 rows x (4 + 8 + 12 + 16) keys = 160
    const AttentionResult causal = scaled_dot_product_attention(q, k, v, Mask::causal(16), options);
    CHECK(causal.key_tiles_computed == 10);
    CHECK(causal.scores_computed == 160);
    // window radius 1: block i sees keys 4i-1..4i+4 clipped to 0..15: 0..4, 3..8, 7..12, 11..15 =
    // 5, 6, 6 and 5 keys, 2 tiles each; scores 4 rows x 22 keys = 88
    const AttentionResult local = scaled_dot_product_attention(q, k, v, Mask::local_window(16, 1), options);
    CHECK(local.key_tiles_computed == 8);
    CHECK(local.scores_computed == 88);
    // the materialized path computes every score: 256
    options.path = AttentionPath::Materialized;
    CHECK(scaled_dot_product_attention(q, k, v, Mask::local_window(16, 1), options).scores_computed == 256);
    options.path = AttentionPath::Streaming;
    // arbitrary: only keys 0..3 and 12..15 allowed (a hole in the middle, checked per tile)
    std::vector<uint8_t> allowed(16 * 16);
    for (int64_t l = 0; l < 16; ++l)
        for (int64_t s = 0; s < 16; ++s) allowed[static_cast<size_t>(l * 16 + s)] = s < 4 || s >= 12;
    CHECK(scaled_dot_product_attention(q, k, v, Mask::from_allowed(bools({16, 16}, allowed)), options)
              .key_tiles_computed == 8);
}

TEST_CASE("split_heads reads head h as columns h*Dh..(h+1)*Dh-1 in place, and merge_heads writes there") {
    // x [B=2, L=2, H*Dh = 2*2]: x[b][l] = 10b + 4l + (0, 1, 2, 3).
    Tensor x({2, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17});
    const ConstMatrixView head = split_heads(x.batch_view(), 2, 1, 1);  // batch 1, head 1: columns 2..3
    CHECK(head.rows == 2);
    CHECK(head.cols == 2);
    CHECK(head(0, 0) == 12.0f);
    CHECK(head(0, 1) == 13.0f);
    CHECK(head(1, 0) == 16.0f);
    CHECK(head(1, 1) == 17.0f);
    CHECK(head.data == x.data() + 8 + 2);  // a view, not a copy

    MatrixView slot = merge_heads(x, 2, 0, 1);  // batch 0, head 1
    slot(1, 0) = -1.0f;                         // x[0][1][2]
    CHECK(x.at({0, 1, 2}) == -1.0f);
    CHECK(x.at({0, 1, 1}) == 5.0f);  // head 0 untouched
}

TEST_CASE("A padded query's attention output is exactly 0 with no zeroing after the heads, even when every value is negative") {
    // Its weight row is all +0, so its output is a sum of 0 * v_j, each -0 when v_j < 0.
    // Streaming: the accumulator starts at +0 and +0 + -0 = +0, so the code guarantees +0.
    // Materialized: one product [L, S] x [S, Dv]; its sum starts wherever the product
    // kernel starts it (+0 in every kernel here, but that is the BLAS's choice), so only
    // == 0 is asserted, which -0 also satisfies. Issue #37: the zeroing that used to
    // follow the heads (engine/attention.cpp) changed nothing and was removed.
    // Q = K = 0 (every score 0), V all negative; batch 0's position 1 is padding.
    const Tensor zeros({1, 2, 2}), v({1, 2, 2}, {-1.0f, -2.0f, -3.0f, -4.0f});
    for (AttentionPath path : kBothPaths) {
        CAPTURE(path_name(path));
        AttentionOptions options = options_for(path, path == AttentionPath::Materialized);
        options.query_padding = Padding::from_lengths({1}, 2);
        const AttentionResult result = scaled_dot_product_attention(zeros, zeros, v, Mask(), options);
        // Query 0 is real: weights 1/2, 1/2: (-1 - 3) / 2 = -2, (-2 - 4) / 2 = -3.
        CHECK(result.output.at({0, 0, 0}) == -2.0f);
        CHECK(result.output.at({0, 0, 1}) == -3.0f);
        for (int64_t c = 0; c < 2; ++c) {
            CHECK(result.output.at({0, 1, c}) == 0.0f);
            if (path == AttentionPath::Streaming) CHECK_FALSE(std::signbit(result.output.at({0, 1, c})));
        }
    }
}

TEST_CASE("zero_padded_queries makes exactly the padded rows +0 and leaves the others") {
    Tensor x({1, 3, 2}, {1, -2, -3, 4, 5, -6});
    zero_padded_queries(x, Padding::from_lengths({2}, 3));  // position 2 is padding
    CHECK(x.values() == std::vector<float>{1, -2, -3, 4, 0, 0});
    CHECK_FALSE(std::signbit(x.at({0, 2, 1})));  // +0, not -0
    zero_padded_queries(x, Padding());  // no padding: nothing changes
    CHECK(x.values() == std::vector<float>{1, -2, -3, 4, 0, 0});
}
