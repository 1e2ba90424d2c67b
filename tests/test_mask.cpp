// Tests for engine/mask.* (issue test 3): every mask factory and conversion is
// compared with a matrix written out by hand, in the engine's one meaning
//     1 = query l (row) may attend key s (column),  0 = blocked.
// A slice is written as one string per query row, e.g. causal(3):
//     "1 0 0",
//     "1 1 0",
//     "1 1 1",
#include <doctest/doctest.h>

#include "tests/helpers.h"

#include "engine/mask.h"

#include <limits>
#include <string>
#include <vector>

using tinyformer::BoolTensor;
using tinyformer::Error;
using tinyformer::Mask;
using tinyformer::Padding;
using tinyformer::Seq2SeqMasks;
using tinyformer::Shape;
using tinyformer::Tensor;

namespace {

const float inf = std::numeric_limits<float>::infinity();

// The (b, h) slice of `mask` as "1 0 0\n1 1 0\n...", `rows` queries by
// `cols` keys, in the same layout the expected matrices are written in.
std::string slice(const Mask& mask, int64_t b, int64_t h, int64_t rows, int64_t cols) {
    std::string text;
    for (int64_t l = 0; l < rows; ++l) {
        for (int64_t s = 0; s < cols; ++s) text += std::string(s ? " " : "") + (mask.allows(b, h, l, s) ? "1" : "0");
        text += "\n";
    }
    return text;
}

// Compares the (b, h) slice with a hand-written matrix; on failure doctest
// prints both pictures.
void check_slice(const Mask& mask, int64_t b, int64_t h, const std::vector<std::string>& expected_rows) {
    std::string expected;
    for (const std::string& row : expected_rows) expected += row + "\n";
    const int64_t rows = static_cast<int64_t>(expected_rows.size());
    const int64_t cols = static_cast<int64_t>((expected_rows.front().size() + 1) / 2);
    CAPTURE(b);
    CAPTURE(h);
    CHECK(slice(mask, b, h, rows, cols) == expected);
}

}  // namespace

TEST_CASE("Every mask factory matches a hand-written matrix") {
    SUBCASE("causal(3): key s is visible to query l iff s <= l") {
        Mask mask = Mask::causal(3);
        CHECK(mask.shape() == Shape{1, 1, 3, 3});
        CHECK_FALSE(mask.has_bias());
        check_slice(mask, 0, 0,
                    {
                        "1 0 0",
                        "1 1 0",
                        "1 1 1",
                    });
    }

    SUBCASE("prefix_lm with prefixes {2, 0} in one batch: bidirectional prefix, causal rest") {
        Mask mask = Mask::prefix_lm({2, 0}, 4);
        CHECK(mask.shape() == Shape{2, 1, 4, 4});
        // b = 0, prefix 2: allowed iff s < 2 or s <= l — keys 0 and 1 are seen by
        // every query, including query 0 looking ahead at key 1.
        check_slice(mask, 0, 0,
                    {
                        "1 1 0 0",
                        "1 1 0 0",
                        "1 1 1 0",
                        "1 1 1 1",
                    });
        // b = 1, prefix 0: no prefix, so plain causal.
        check_slice(mask, 1, 0,
                    {
                        "1 0 0 0",
                        "1 1 0 0",
                        "1 1 1 0",
                        "1 1 1 1",
                    });
    }

    SUBCASE("prefix_lm with the whole sequence as prefix, or a prefix of 1") {
        Mask mask = Mask::prefix_lm({3, 1}, 3);
        // b = 0, prefix 3 = T: everything visible (an encoder).
        check_slice(mask, 0, 0, {"1 1 1", "1 1 1", "1 1 1"});
        // b = 1, prefix 1: key 0 is visible to all, which causal allows anyway.
        check_slice(mask, 1, 0, {"1 0 0", "1 1 0", "1 1 1"});
    }

    SUBCASE("key_padding from lengths {3, 1} with S = 4") {
        // Right padding: position t of row b is padding iff t >= lengths[b].
        Padding padding = Padding::from_lengths({3, 1}, 4);
        CHECK(padding.batch() == 2);
        CHECK(padding.length() == 4);
        CHECK_FALSE(padding.is_padding(0, 2));
        CHECK(padding.is_padding(0, 3));
        CHECK(padding.is_padding(1, 1));

        Mask mask = Mask::key_padding(padding);
        CHECK(mask.shape() == Shape{2, 1, 1, 4});
        check_slice(mask, 0, 0, {"1 1 1 0"});
        check_slice(mask, 1, 0, {"1 0 0 0"});
        // [B,1,1,S] broadcasts over queries and heads: every query of row 1 sees only key 0.
        CHECK(mask.allows(1, 5, 2, 0));
        CHECK_FALSE(mask.allows(1, 5, 2, 1));
    }

    SUBCASE("key_padding from flags (true = padding), left-padded row included") {
        // row 0: right padding of 2; row 1: one pad at the front.
        Padding padding = Padding::from_flags(BoolTensor{{2, 4}, {0, 0, 1, 1, 1, 0, 0, 0}});
        Mask mask = Mask::key_padding(padding);
        CHECK(mask.shape() == Shape{2, 1, 1, 4});
        check_slice(mask, 0, 0, {"1 1 0 0"});
        check_slice(mask, 1, 0, {"0 1 1 1"});
    }

    SUBCASE("local_window(5, 1): key s is visible iff |l - s| <= 1") {
        Mask mask = Mask::local_window(5, 1);
        CHECK(mask.shape() == Shape{1, 1, 5, 5});
        check_slice(mask, 0, 0,
                    {
                        "1 1 0 0 0",
                        "1 1 1 0 0",
                        "0 1 1 1 0",
                        "0 0 1 1 1",
                        "0 0 0 1 1",
                    });
        // radius 0: each query sees only itself.
        check_slice(Mask::local_window(3, 0), 0, 0, {"1 0 0", "0 1 0", "0 0 1"});
    }

    SUBCASE("seq2seq_masks: decoder self = causal AND target padding, cross = source padding") {
        // target lengths {3, 2}, T = 3; source lengths {2, 4}, S = 4.
        Seq2SeqMasks masks = tinyformer::seq2seq_masks(Padding::from_lengths({3, 2}, 3), Padding::from_lengths({2, 4}, 4));
        CHECK(masks.decoder_self.shape() == Shape{2, 1, 3, 3});
        // b = 0: no target padding, so plain causal.
        check_slice(masks.decoder_self, 0, 0, {"1 0 0", "1 1 0", "1 1 1"});
        // b = 1: target key 2 is padding, so causal with column 2 cleared.
        check_slice(masks.decoder_self, 1, 0, {"1 0 0", "1 1 0", "1 1 0"});

        CHECK(masks.cross.shape() == Shape{2, 1, 1, 4});
        check_slice(masks.cross, 0, 0, {"1 1 0 0"});  // source keys 2, 3 are padding
        check_slice(masks.cross, 1, 0, {"1 1 1 1"});  // no source padding
    }

    SUBCASE("seq2seq_masks with T and no padding: plain causal, and a cross mask that blocks nothing") {
        const Seq2SeqMasks masks = tinyformer::seq2seq_masks(3, Padding(), Padding());
        CHECK(masks.decoder_self.shape() == Shape{1, 1, 3, 3});
        check_slice(masks.decoder_self, 0, 0, {"1 0 0", "1 1 0", "1 1 1"});
        CHECK(masks.cross.allows_everything());  // attention then applies nothing per row
        // One side padded: target lengths {3, 2} with no source padding.
        const Seq2SeqMasks target_only = tinyformer::seq2seq_masks(3, Padding::from_lengths({3, 2}, 3), Padding());
        check_slice(target_only.decoder_self, 1, 0, {"1 0 0", "1 1 0", "1 1 0"});
        CHECK(target_only.cross.allows_everything());
    }

    SUBCASE("from_allowed takes an arbitrary pattern of rank 2, 3 or 4 and keeps it") {
        Mask plain = Mask::from_allowed(BoolTensor{{2, 3}, {1, 0, 1, 0, 1, 0}});  // [L,S] -> [1,1,L,S]
        CHECK(plain.shape() == Shape{1, 1, 2, 3});
        check_slice(plain, 0, 0, {"1 0 1", "0 1 0"});

        Mask batched = Mask::from_allowed(BoolTensor{{2, 1, 2}, {1, 0, 0, 1}});  // [B,L,S] -> [B,1,L,S]
        CHECK(batched.shape() == Shape{2, 1, 1, 2});
        check_slice(batched, 0, 0, {"1 0"});
        check_slice(batched, 1, 0, {"0 1"});

        Mask per_head = Mask::from_allowed(BoolTensor{{1, 2, 1, 2}, {0, 1, 1, 1}});  // [B,H,L,S] kept
        CHECK(per_head.shape() == Shape{1, 2, 1, 2});
        check_slice(per_head, 0, 0, {"0 1"});
        check_slice(per_head, 0, 1, {"1 1"});
    }

    SUBCASE("AND allows a key only where both masks do, broadcasting [1,1,T,T] with [B,1,1,S]") {
        Mask both = Mask::causal(3) & Mask::key_padding(Padding::from_lengths({3, 2}, 3));
        CHECK(both.shape() == Shape{2, 1, 3, 3});
        check_slice(both, 0, 0, {"1 0 0", "1 1 0", "1 1 1"});
        check_slice(both, 1, 0, {"1 0 0", "1 1 0", "1 1 0"});

        // local_window(3, 1) AND causal(3): only the key itself and the one before it.
        //   window       causal      AND
        //   1 1 0        1 0 0       1 0 0
        //   1 1 1    &   1 1 0   =   1 1 0
        //   0 1 1        1 1 1       0 1 1
        check_slice(Mask::local_window(3, 1) & Mask::causal(3), 0, 0, {"1 0 0", "1 1 0", "0 1 1"});
    }

    SUBCASE("from_torch_mha_attn_mask flips: PyTorch's True means blocked") {
        // blocked:        allowed:
        //   0 1 1           1 0 0
        //   0 0 1           1 1 0
        Mask mask = Mask::from_torch_mha_attn_mask(BoolTensor{{2, 3}, {0, 1, 1, 0, 0, 1}});
        CHECK(mask.shape() == Shape{1, 1, 2, 3});
        check_slice(mask, 0, 0, {"1 0 0", "1 1 0"});
    }

    SUBCASE("from_torch_sdpa_mask keeps: SDPA's True means allowed") {
        Mask mask = Mask::from_torch_sdpa_mask(BoolTensor{{2, 3}, {1, 0, 0, 1, 1, 0}});
        check_slice(mask, 0, 0, {"1 0 0", "1 1 0"});
        // The same values through the two doors mean opposite things.
        Mask flipped = Mask::from_torch_mha_attn_mask(BoolTensor{{2, 3}, {1, 0, 0, 1, 1, 0}});
        check_slice(flipped, 0, 0, {"0 1 1", "0 0 1"});
    }

    SUBCASE("from_torch_key_padding_mask: [B,S], True = ignore this key") {
        Mask mask = Mask::from_torch_key_padding_mask(BoolTensor{{2, 3}, {0, 0, 1, 0, 1, 1}});
        CHECK(mask.shape() == Shape{2, 1, 1, 3});
        check_slice(mask, 0, 0, {"1 1 0"});
        check_slice(mask, 1, 0, {"1 0 0"});
    }

    SUBCASE("from_additive: 0 allowed, -inf blocked, and no bias left over") {
        //   0  -inf           1 0
        //   0   0      ->     1 1
        Mask mask = Mask::from_additive(Tensor({2, 2}, {0, -inf, 0, 0}));
        CHECK(mask.shape() == Shape{1, 1, 2, 2});
        check_slice(mask, 0, 0, {"1 0", "1 1"});
        CHECK_FALSE(mask.has_bias());
        CHECK(mask.bias(0, 0, 1, 0) == 0.0f);
    }

    SUBCASE("the default mask allows everything") {
        Mask mask;
        CHECK(mask.shape() == Shape{1, 1, 1, 1});
        CHECK(mask.allows_everything());
        CHECK(mask.allows(3, 2, 1, 7));  // every axis broadcasts
        check_slice(mask, 0, 0, {"1 1", "1 1"});
    }
}

TEST_CASE("from_additive keeps a finite non-zero value as a bias, not as a block") {
    // [0, -2.5, -inf, -1e9]: the first two and the last are allowed, -inf is blocked.
    Mask mask = Mask::from_additive(Tensor({1, 4}, {0, -2.5f, -inf, -1e9f}));
    CHECK(mask.has_bias());
    check_slice(mask, 0, 0, {"1 1 0 1"});
    CHECK(mask.bias(0, 0, 0, 0) == 0.0f);
    CHECK(mask.bias(0, 0, 0, 1) == -2.5f);  // the value itself
    CHECK(mask.bias(0, 0, 0, 2) == 0.0f);   // blocked: the block is the -inf, not a bias
    CHECK(mask.bias(0, 0, 0, 3) == -1e9f);  // very negative, yet only a bias: it suppresses, never guarantees 0
    CHECK_FALSE(mask.allows_everything());

    SUBCASE("a positive finite value is a bias too") {
        Mask boost = Mask::from_additive(Tensor({1, 2}, {1.5f, 0}));
        CHECK(boost.has_bias());
        CHECK(boost.bias(0, 0, 0, 0) == 1.5f);
        check_slice(boost, 0, 0, {"1 1"});
    }
    SUBCASE("AND adds the biases and ANDs the permissions") {
        // bias [0, -1] AND bias [-0.5, (blocked)] -> allowed [1, 0], bias at key 0: 0 + -0.5
        Mask both = Mask::from_additive(Tensor({1, 2}, {0, -1})) & Mask::from_additive(Tensor({1, 2}, {-0.5f, -inf}));
        check_slice(both, 0, 0, {"1 0"});
        CHECK(both.bias(0, 0, 0, 0) == -0.5f);
        Mask with_causal = Mask::causal(2) & Mask::from_additive(Tensor({2, 2}, {-1, -2, -3, -4}));
        CHECK(with_causal.has_bias());
        check_slice(with_causal, 0, 0, {"1 0", "1 1"});
        CHECK(with_causal.bias(0, 0, 1, 1) == -4.0f);
    }
    SUBCASE("NaN and +inf are refused with their position") {
        CHECK_ERROR_CONTAINS(Mask::from_additive(Tensor({1, 2}, {0, std::numeric_limits<float>::quiet_NaN()})),
                             "at flat index 1 of [1,2]");
        CHECK_ERROR_CONTAINS(Mask::from_additive(Tensor({2, 2}, {0, 0, inf, 0})),
                             "at flat index 2 of [2,2]");
        CHECK_ERROR_CONTAINS(Mask::from_additive(Tensor({3}, {0, 0, 0})),
                             "a mask is [L,S], [B,L,S] or [B,H,L,S]; got [3]");
        CHECK_THROWS_AS(Mask::from_additive(Tensor()), Error);
    }
}

TEST_CASE("to_ascii draws one line per query and '(none)' for a query with no key") {
    CHECK(Mask::causal(3).to_ascii(3, 3) == "q0: k0\nq1: k0 k1\nq2: k0 k1 k2\n");

    Mask first_row_blocked = Mask::from_allowed(BoolTensor{{2, 2}, {0, 0, 1, 1}});
    CHECK(first_row_blocked.to_ascii(2, 2) == "q0: (none)\nq1: k0 k1\n");

    SUBCASE("a padding mask broadcasts over the queries drawn, per batch row") {
        Mask padding = Mask::key_padding(Padding::from_lengths({3, 1}, 4));
        CHECK(padding.to_ascii(2, 4, 0) == "q0: k0 k1 k2\nq1: k0 k1 k2\n");
        CHECK(padding.to_ascii(2, 4, 1) == "q0: k0\nq1: k0\n");
    }
    SUBCASE("a prefix-LM batch row shows its look-ahead into the prefix") {
        CHECK(Mask::prefix_lm({2, 0}, 3).to_ascii(3, 3, 0) == "q0: k0 k1\nq1: k0 k1\nq2: k0 k1 k2\n");
    }
    SUBCASE("a picture the mask cannot cover is refused") {
        CHECK_ERROR_CONTAINS(Mask::causal(3).to_ascii(4, 4), "[1,1,3,3]");
        CHECK_ERROR_CONTAINS(Mask::prefix_lm({1, 1}, 2).to_ascii(2, 2, 2),
                             "batch 2, head 0 outside mask [2,1,2,2]");
        CHECK_THROWS_AS(Mask::causal(2).to_ascii(2, 2, 0, -1), Error);
    }
}

TEST_CASE("row() hands kernels one query's keys with the right step") {
    Mask causal = Mask::causal(3);
    Mask::Row row = causal.row(0, 0, 1);  // query 1 of causal(3): "1 1 0"
    CHECK(row.step == 1);
    CHECK(row.bias == nullptr);
    CHECK(row.allowed[0 * row.step] == 1);
    CHECK(row.allowed[1 * row.step] == 1);
    CHECK(row.allowed[2 * row.step] == 0);

    // [L,1]: one value per query, broadcast over keys, so the step is 0.
    Mask per_query = Mask::from_allowed(BoolTensor{{2, 1}, {0, 1}});
    CHECK(per_query.row(0, 0, 1).step == 0);
    CHECK(per_query.row(0, 0, 1).allowed[0] == 1);
    CHECK(per_query.row(0, 0, 0).allowed[0] == 0);

    Mask biased = Mask::from_additive(Tensor({1, 2}, {-1, -2}));
    Mask::Row biased_row = biased.row(0, 0, 0);
    REQUIRE(biased_row.bias != nullptr);
    CHECK(biased_row.bias[1 * biased_row.step] == -2.0f);
}

TEST_CASE("allows_everything() is true only with no blocked key and no bias") {
    CHECK(Mask().allows_everything());
    CHECK(Mask::causal(1).allows_everything());  // [[1]]
    CHECK_FALSE(Mask::causal(2).allows_everything());
    CHECK(Mask::key_padding(Padding::from_lengths({2, 2}, 2)).allows_everything());
    CHECK(Mask::from_additive(Tensor({2, 2}, {0, 0, 0, 0})).allows_everything());
    CHECK_FALSE(Mask::from_additive(Tensor({1, 1}, {-1})).allows_everything());
}

TEST_CASE("Broadcasting errors name both shapes") {
    Mask padding = Mask::key_padding(Padding::from_lengths({3, 1}, 4));  // [2,1,1,4]
    CHECK_NOTHROW(padding.check_broadcasts_to({2, 8, 3, 4}, "attention"));
    CHECK_ERROR_CONTAINS(padding.check_broadcasts_to({3, 8, 3, 4}, "attention"),
                         "attention: mask [2,1,1,4] does not broadcast to [B,H,L,S] = [3,8,3,4]");
    CHECK_ERROR_CONTAINS(Mask::causal(3).check_broadcasts_to({1, 1, 3, 4}, "attention"),
                         "mask [1,1,3,3] does not broadcast to [B,H,L,S] = [1,1,3,4]");
    CHECK_ERROR_CONTAINS(Mask::causal(3) & Mask::causal(4),
                         "masks [1,1,3,3] and [1,1,4,4] do not broadcast (axis 2: 3 vs 4)");
    CHECK_ERROR_CONTAINS(Mask::prefix_lm({1, 1}, 2) & Mask::key_padding(Padding::from_lengths({1, 1, 1}, 2)),
                         "[2,1,2,2] and [3,1,1,2]");
}

TEST_CASE("check_broadcasts_to refuses a target that is not rank 4") {
    CHECK_ERROR_CONTAINS(Mask::causal(3).check_broadcasts_to({3, 3}, "attention"), "got [3,3]");
    CHECK_THROWS_AS(Mask::causal(3).check_broadcasts_to({}, "attention"), Error);
}

TEST_CASE("Bad factory arguments are refused with the argument in the message") {
    SUBCASE("lengths of 0 or less") {
        CHECK_ERROR_CONTAINS(Mask::causal(0), "Mask::causal: length must be >= 1, got 0");
        CHECK_THROWS_AS(Mask::causal(-1), Error);
        CHECK_ERROR_CONTAINS(Mask::prefix_lm({0}, 0), "length must be >= 1, got 0");
        CHECK_ERROR_CONTAINS(Mask::local_window(0, 1), "length must be >= 1, got 0");
        CHECK_ERROR_CONTAINS(Padding::from_lengths({1}, -1), "length must be >= 0, got -1");
    }
    SUBCASE("a prefix longer than T, negative, or missing") {
        CHECK_ERROR_CONTAINS(Mask::prefix_lm({2, 5}, 4), "prefix_lengths[1] = 5 is outside 0..4");
        CHECK_ERROR_CONTAINS(Mask::prefix_lm({-1}, 4), "prefix_lengths[0] = -1");
        CHECK_ERROR_CONTAINS(Mask::prefix_lm({}, 4), "prefix_lengths is empty");
    }
    SUBCASE("a negative window radius") {
        CHECK_ERROR_CONTAINS(Mask::local_window(5, -1), "radius must be >= 0, got -1");
    }
    SUBCASE("lengths outside 0..T, and padding with no rows or no positions") {
        CHECK_ERROR_CONTAINS(Padding::from_lengths({3, 5}, 4), "lengths[1] = 5 is outside 0..4");
        CHECK_ERROR_CONTAINS(Padding::from_lengths({-1}, 4), "lengths[0] = -1");
        CHECK_ERROR_CONTAINS(Mask::key_padding(Padding()), "padding must be [B,S]");
        CHECK_ERROR_CONTAINS(Mask::key_padding(Padding::from_lengths({0}, 0)), "got [1,0]");
        CHECK_ERROR_CONTAINS(tinyformer::seq2seq_masks(Padding::from_lengths({1, 1}, 2), Padding::from_lengths({1}, 2)),
                             "target padding has B=2 but source padding has B=1");
        CHECK_ERROR_CONTAINS(tinyformer::seq2seq_masks(3, Padding::from_lengths({1}, 2), Padding()),
                             "target padding is [1,2] but T=3");
        CHECK_ERROR_CONTAINS(tinyformer::seq2seq_masks(0, Padding(), Padding()),
                             "target length must be >= 1, got 0");
    }
    SUBCASE("Boolean values other than 0 and 1") {
        CHECK_ERROR_CONTAINS(Mask::from_allowed(BoolTensor{{1, 2}, {1, 2}}), "0 or 1, got 2");
        CHECK_ERROR_CONTAINS(Mask::from_torch_sdpa_mask(BoolTensor{{1, 2}, {3, 0}}), "got 3");
        CHECK_ERROR_CONTAINS(Mask::from_torch_mha_attn_mask(BoolTensor{{1, 2}, {0, 255}}),
                             "got 255");
        CHECK_ERROR_CONTAINS(Mask::from_torch_key_padding_mask(BoolTensor{{1, 2}, {0, 2}}),
                             "0 or 1, got 2");
        CHECK_ERROR_CONTAINS(Padding::from_flags(BoolTensor{{1, 2}, {7, 0}}), "got 7");
    }
    SUBCASE("shapes of the wrong rank, or that disagree with the value count") {
        CHECK_ERROR_CONTAINS(Mask::from_allowed(BoolTensor{{3}, {1, 1, 1}}),
                             "a mask is [L,S], [B,L,S] or [B,H,L,S]; got [3]");
        CHECK_ERROR_CONTAINS(Mask::from_torch_sdpa_mask(BoolTensor{{1, 1, 1, 1, 1}, {1}}),
                             "got [1,1,1,1,1]");
        CHECK_ERROR_CONTAINS(Mask::from_allowed(BoolTensor{{2, 2}, {1, 1, 1}}),
                             "shape [2,2] needs 4 values, got 3");
        CHECK_ERROR_CONTAINS(Mask::from_torch_key_padding_mask(BoolTensor{{1, 1, 2}, {0, 0}}),
                             "must be [B,T], got [1,1,2]");
        CHECK_ERROR_CONTAINS(Padding::from_flags(BoolTensor{{2, 2}, {0, 0, 0}}),
                             "shape [2,2] does not match 3 values");
    }
}
