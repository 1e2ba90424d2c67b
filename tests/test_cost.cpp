// Tests for models/cost.*: the counts of lesson 10.3's practice 5, checked
// against numbers worked out by hand below from the formulas in the header —
// never by calling the code under test.
//
// Configuration A, worked fully: B=1, T=3, D=4, H=2 (Dh=2), F=8.
//   MACs
//     Q, K, V, output projection   B*T*D^2 = 1*3*16          = 48 each, 192 together
//     scores Q K^T                 H heads of L*S*Dh = 2*3*3*2 = 36   (= B*T*T*D)
//     softmax                      0 MACs; B*H*T*T = 2*9      = 18 exps
//     weights x V                  2*3*3*2                    = 36
//     FFN                          linear1 B*T*D*F = 96, linear2 96 = 192
//     layer                        192 + 72 + 192             = 456
//   bytes (floats x 4)
//     each projection   W 16 + b 4 + read x 12 + write 12          = 44 floats = 176 B
//     scores            read Q 12 + K 12 + write [1,2,3,3] 18      = 42 floats = 168 B
//     softmax           read 18 + write 18                         = 36 floats = 144 B
//     weights x V       read weights 18 + V 12 + write output 12   = 42 floats = 168 B
//     FFN               W1 32 + b1 8 + W2 32 + b2 4 = 76 parameters; read x 12, write
//                       hidden 24, activation reads and writes 24 + 24, linear2 reads 24,
//                       writes 12 = 120 activations; 196 floats            = 784 B
//     layer             4*176 + 168 + 144 + 168 + 784 = 704 + 480 + 784    = 1968 B
//   memory: scores [1,2,3,3] 18 floats = 72 B; activations [1,3,4] 12 floats = 48 B;
//     FFN hidden [1,3,8] 24 floats = 96 B
//   parameters: attention 4*16 + 4*4 = 80, FFN 76, two LayerNorms 2*2*4 = 16 -> 172
//   groups: projections 192 MACs / 704 B, core 72 / 480, FFN 192 / 784
//     -> by MACs "projections = FFN" (a tie), by bytes "FFN"
//   streaming core: Q 12 read + output 12 written, K and V 12 + 12 read once
//     (one block of queries, ceil(3/256) = 1) = 48 floats = 192 B
//   crossover T* = 2D + F = 8 + 8 = 16. Check at T = 16: the T^2 terms are
//     2*B*T^2*D = 2*256*4 = 2048; projections + FFN B*T*(4D^2 + 2DF) = 16*(64 + 64) = 2048.
//
// Configuration B, key numbers: B=1, T=1024, D=512, H=8, F=2048.
//   Q projection  T*D^2 = 1024*262144           = 268,435,456 (2^28); four projections 2^30
//   scores        T^2*D = 1048576*512           = 536,870,912 (2^29); weights x V the same
//   FFN           2*T*D*F = 2*1024*512*2048     = 2,147,483,648 (2^31)
//   layer         2^30 + 2^30 + 2^31            = 4,294,967,296 (2^32); T^2 terms 2^30 = 25%
//   softmax       H*T^2 = 8*1048576             = 8,388,608 exps, bytes 2*4*8388608 = 67,108,864
//   Q projection bytes 4*(262144 + 512 + 2*524288) = 4*1,311,232      = 5,244,928
//   scores [1,8,1024,1024] 4*8,388,608 = 33,554,432 B (32 MiB); activations [1,1024,512]
//     4*524,288 = 2,097,152 B (2 MiB); FFN hidden 4*1024*2048 = 8,388,608 B
//   streaming core: ceil(1024/256) = 4 blocks: 4*(2*524288 + 4*2*524288) = 20,971,520 B
//   crossover 2*512 + 2048 = 3072; dominant by MACs: FFN (2^31 against 2^30 and 2^30)

#include "engine/memory/available.h"
#include "models/cost.h"
#include "tests/helpers.h"

#include <doctest/doctest.h>

using namespace tinyformer;

TEST_CASE("cost counts configuration A (B=1, T=3, D=4, H=2, F=8) as worked by hand") {
    const CostShape shape{1, 4, 2, 8};
    const LayerCost layer = encoder_layer_cost(shape, 3);
    const AttentionCost& self = layer.self_attention;
    CHECK(self.queries == 3);
    CHECK(self.keys == 3);
    for (const PartCost* projection :
         {&self.query_projection, &self.key_projection, &self.value_projection, &self.output_projection}) {
        CHECK(projection->macs == 48);
        CHECK(projection->bytes == 176);
        CHECK(projection->exps == 0);
    }
    CHECK(self.scores.macs == 36);
    CHECK(self.scores.bytes == 168);
    CHECK(self.softmax.macs == 0);
    CHECK(self.softmax.exps == 18);
    CHECK(self.softmax.bytes == 144);
    CHECK(self.weights_values.macs == 36);
    CHECK(self.weights_values.bytes == 168);
    CHECK(self.projection_macs() == 192);
    CHECK(self.core_macs() == 72);
    CHECK(self.core_bytes() == 480);
    CHECK(layer.feed_forward.macs == 192);
    CHECK(layer.feed_forward.bytes == 784);
    CHECK(layer.macs() == 456);
    CHECK(layer.bytes() == 1968);
    CHECK(layer.quadratic_macs() == 72);
    CHECK(layer.linear_macs() == 384);
    CHECK(self.score_bytes == 72);
    CHECK(layer.activation_bytes == 48);
    CHECK(layer.hidden_bytes == 96);
    CHECK(layer.parameter_count == 172);
    CHECK(self.streaming_core_bytes == 192);
    CHECK(dominant_by_macs(layer) == "projections = FFN");
    CHECK(dominant_by_bytes(layer) == "FFN");
    CHECK(self.parts().size() == 7);
}

TEST_CASE("cost counts configuration B (B=1, T=1024, D=512, H=8, F=2048): key numbers") {
    const CostShape shape{1, 512, 8, 2048};
    const LayerCost layer = encoder_layer_cost(shape, 1024);
    CHECK(layer.self_attention.query_projection.macs == 268435456);
    CHECK(layer.self_attention.query_projection.bytes == 5244928);
    CHECK(layer.self_attention.projection_macs() == 1073741824);
    CHECK(layer.self_attention.scores.macs == 536870912);
    CHECK(layer.self_attention.weights_values.macs == 536870912);
    CHECK(layer.self_attention.softmax.exps == 8388608);
    CHECK(layer.self_attention.softmax.bytes == 67108864);
    CHECK(layer.feed_forward.macs == 2147483648);
    CHECK(layer.macs() == 4294967296);
    CHECK(layer.quadratic_macs() == 1073741824);
    CHECK(layer.self_attention.score_bytes == 33554432);
    CHECK(layer.activation_bytes == 2097152);
    CHECK(layer.hidden_bytes == 8388608);
    CHECK(layer.self_attention.streaming_core_bytes == 20971520);
    CHECK(dominant_by_macs(layer) == "FFN");
}

TEST_CASE("the crossover T* = 2D + F is where the T^2 terms equal projections + FFN") {
    CHECK(encoder_crossover_length({1, 4, 2, 8}) == 16);
    CHECK(encoder_crossover_length({1, 512, 8, 2048}) == 3072);
    SUBCASE("B and H cancel") { CHECK(encoder_crossover_length({7, 512, 1, 2048}) == 3072); }
    SUBCASE("at T* the two sides are equal (configuration A: 2048 and 2048)") {
        const LayerCost at_crossover = encoder_layer_cost({1, 4, 2, 8}, 16);
        CHECK(at_crossover.quadratic_macs() == 2048);
        CHECK(at_crossover.linear_macs() == 2048);
    }
}

// Decoder, configuration A with S=5 source positions (B=1, T=3, D=4, H=2, F=8):
//   cross Q, output projection  B*T*D^2 = 48 each;  K, V  B*S*D^2 = 5*16 = 80 each
//   cross scores, weights x V   B*T*S*D = 3*5*4 = 60 each;  exps B*H*T*S = 2*15 = 30
//   cross K bytes    16 + 4 + read 20 + write 20 = 60 floats = 240 B
//   cross scores     read Q 12 + K 20 + write [1,2,3,5] 30 = 62 floats = 248 B
//   cross scores memory 30 floats = 120 B
//   layer MACs       self 192 + 72, cross 48 + 80 + 80 + 48 + 60 + 60 = 376, FFN 192 -> 832
//   T^2 terms        72 (self-attention core only); the rest 760 = B*T*(6D^2 + 2DF + 2SD)
//                    + 2*B*S*D^2 = 3*(96 + 64 + 40) + 2*5*16 = 600 + 160
//   parameters       two attentions 2*80 + FFN 76 + three LayerNorms 3*8 = 260
//   crossover        T^2 - (3D + F + S) T - S D = T^2 - 25 T - 20 = 0
//                    T* = (25 + sqrt(625 + 80)) / 2 = (25 + 26.5518361) / 2 = 25.7759180
// Configuration B with S=1024: 3D + F + S = 4608, 4SD = 2,097,152,
//   T* = (4608 + sqrt(21,233,664 + 2,097,152)) / 2 = (4608 + 4830.19834) / 2 = 4719.09917
TEST_CASE("a decoder layer adds cross-attention over S source positions") {
    const CostShape shape{1, 4, 2, 8};
    const LayerCost layer = decoder_layer_cost(shape, 3, 5);
    REQUIRE(layer.cross_attention.has_value());
    const AttentionCost& cross = *layer.cross_attention;
    CHECK(cross.label == "cross-attention");
    CHECK(cross.queries == 3);
    CHECK(cross.keys == 5);
    CHECK(cross.query_projection.macs == 48);
    CHECK(cross.key_projection.macs == 80);
    CHECK(cross.value_projection.macs == 80);
    CHECK(cross.output_projection.macs == 48);
    CHECK(cross.key_projection.bytes == 240);
    CHECK(cross.scores.macs == 60);
    CHECK(cross.scores.bytes == 248);
    CHECK(cross.weights_values.macs == 60);
    CHECK(cross.softmax.exps == 30);
    CHECK(cross.score_bytes == 120);
    CHECK(layer.macs() == 832);
    CHECK(layer.quadratic_macs() == 72);
    CHECK(layer.linear_macs() == 760);
    CHECK(layer.parameter_count == 260);
    CHECK(decoder_crossover_length(shape, 5) == doctest::Approx(25.7759180).epsilon(1e-8));
    CHECK(decoder_crossover_length({1, 512, 8, 2048}, 1024) == doctest::Approx(4719.09917).epsilon(1e-8));
    CHECK_FALSE(encoder_layer_cost(shape, 3).cross_attention.has_value());
}

// The engine's allocations (engine/attention.h), configuration A with L = S = 3:
//   output [1,3,4] 12 floats = 48 B; weights [1,2,3,3] 18 floats = 72 B;
//   materialized scratch [3,3] 9 floats = 36 B (none when writing into the weights);
//   streaming scratch min(256,3) * min(2048,3) + 2*3 = 15 floats = 60 B.
// Configuration B at L = S = 2048: streaming 256*2048 + 2*256 = 524,800 floats = 2,099,200 B,
//   materialized 2048^2 floats = 16,777,216 B.
TEST_CASE("the bytes an attention call allocates follow the engine's formulas") {
    const CostShape shape{1, 4, 2, 8};
    AttentionOptions options;
    SUBCASE("materialized, weights kept") {
        options.path = AttentionPath::Materialized;
        options.want_weights = true;
        const AttentionPathBytes bytes = attention_path_bytes(shape, 3, 3, options);
        CHECK(bytes.output == 48);
        CHECK(bytes.weights == 72);
        CHECK(bytes.scratch == 0);
        CHECK(bytes.total() == 120);
    }
    SUBCASE("materialized") {
        options.path = AttentionPath::Materialized;
        const AttentionPathBytes bytes = attention_path_bytes(shape, 3, 3, options);
        CHECK(bytes.weights == 0);
        CHECK(bytes.scratch == 36);
        CHECK(bytes.total() == 84);
    }
    SUBCASE("streaming (automatic without weights)") {
        const AttentionPathBytes bytes = attention_path_bytes(shape, 3, 3, options);
        CHECK(bytes.scratch == 60);
        CHECK(bytes.total() == 108);
    }
    SUBCASE("configuration B at T = 2048") {
        CHECK(attention_path_bytes({1, 512, 8, 2048}, 2048, 2048, options).scratch == 2099200);
        options.path = AttentionPath::Materialized;
        CHECK(attention_path_bytes({1, 512, 8, 2048}, 2048, 2048, options).scratch == 16777216);
    }
    SUBCASE("weights from the streaming path are refused") {
        options.path = AttentionPath::Streaming;
        options.want_weights = true;
        CHECK_ERROR_CONTAINS(attention_path_bytes(shape, 3, 3, options), "streaming");
    }
}

TEST_CASE("cost refuses bad sizes, naming them") {
    SUBCASE("heads that do not divide D name both") {
        CHECK_ERROR_CONTAINS(encoder_layer_cost({1, 6, 4, 8}, 3), "D=6", "H=4", "divisible");
        CHECK_ERROR_CONTAINS(encoder_crossover_length({1, 510, 8, 2048}), "D=510", "H=8");
    }
    SUBCASE("sizes below 1") {
        CHECK_ERROR_CONTAINS(encoder_layer_cost({0, 4, 2, 8}, 3), "batch B", "got 0");
        CHECK_ERROR_CONTAINS(encoder_layer_cost({1, 4, 0, 8}, 3), "heads H", "got 0");
        CHECK_ERROR_CONTAINS(encoder_layer_cost({1, 4, 2, -1}, 3), "feed-forward dimension F", "got -1");
        CHECK_ERROR_CONTAINS(encoder_layer_cost({1, 4, 2, 8}, 0), "sequence length T", "got 0");
        CHECK_ERROR_CONTAINS(decoder_layer_cost({1, 4, 2, 8}, 3, 0), "source length S", "got 0");
    }
    SUBCASE("a count that would overflow 64 bits") {
        CHECK_ERROR_CONTAINS(encoder_layer_cost({4096, 65536, 1, 1 << 20}, 1 << 20), "overflows");
    }
}

TEST_CASE("pass_memory: the one estimate of a pass's working memory, term by term") {
    // B=2, D=4, H=2, F=8, L=3 queries over S=5 keys, 2 attention calls recorded, V=10:
    //   mask        2*B*L*S              = 2*2*3*5              = 60
    //   recorded    (2+1) * 4*B*H*L*S    = 3 * 4*2*2*3*5        = 720
    //   scores      4*B*H*min(L,256)*S   = 4*2*2*3*5            = 240
    //   activations 12 * 4*B*L*max(D,F)  = 12 * 4*2*3*8         = 2304
    //   logits      4*B*L*V              = 4*2*3*10             = 240     total 3564
    const PassMemory memory = pass_memory(CostShape{2, 4, 2, 8}, 3, 5, 2, true, 10);
    CHECK(memory.mask == 60);
    CHECK(memory.recorded_weights == 720);
    CHECK(memory.scores == 240);
    CHECK(memory.activations == 2304);
    CHECK(memory.logits == 240);
    CHECK(memory.kv_cache == 0);
    CHECK(memory.total() == 3564);
    // A prefill of 3 layers that keeps their keys and values, W = 4 columns: 4*2*B*S*W*layers = 4*2*2*5*4*3.
    CHECK(pass_memory(CostShape{2, 4, 2, 8}, 3, 5, 2, true, 10, false, 3, 4).kv_cache == 960);
    // Not recording: no weights kept. L = 1000 > 256: one block of 256 queries of scores.
    const PassMemory long_pass = pass_memory(CostShape{1, 4, 1, 4}, 1000, 1000, 6, false, 0);
    CHECK(long_pass.recorded_weights == 0);
    CHECK(long_pass.scores == 4.0 * 256 * 1000);
    // A million tokens: 2e12 bytes of mask, in a double without overflow.
    CHECK(pass_memory(CostShape{1, 4, 1, 4}, 1000000, 1000000, 1, false, 0).mask == 2e12);
}

TEST_CASE("require_available: the one memory guard, with what needs it and what is available") {
    CHECK_NOTHROW(require_available(1.0, "one byte"));
    CHECK_ERROR_CONTAINS(require_available(1e30, "a test needs 1e30 bytes"),
                         "a test needs 1e30 bytes but ");
    CHECK_ERROR_CONTAINS(require_available(1e30, "a test"),
                         " bytes of memory are available; refused before allocating");
}

// Grouped-query attention, worked by hand: B=1, T=3, D=8, H=4 (Dh=2), F=8, Hkv=1
// (multi-query): K and V are W = Hkv*Dh = 2 wide.
//   Q, output projection   B*T*D^2 = 3*64             = 192 MACs each
//   K, V projection        B*T*D*W = 3*8*2            = 48 MACs each
//     bytes/4: W_K 16 + b 2 + read x 24 + write K 6  = 48 floats = 192 B
//   scores                 B*T*T*D = 9*8              = 72 MACs (unchanged: every query head attends)
//     bytes/4: Q 24 + K 6 + [1,4,3,3] 36             = 66 floats = 264 B
//   KV cache of T=3 positions: K, V [1,3,2] = 12 floats = 48 B; per position 2*2*4 = 16 B
//     (with Hkv = H = 4: W = 8, 2*8*4 = 64 B per position: H/Hkv = 4 times more)
//   parameters of the attention: W_Q, W_O 2*64 + W_K, W_V 2*16 + biases 2*8 + 2*2 = 180
//   crossover T* = D + W + F = 8 + 2 + 8 = 18 (check: 2*T^2*D = 2*324*8 = 5184;
//     T*(2D^2 + 2DW + 2DF) = 18*(128 + 32 + 128) = 5184)
TEST_CASE("cost counts grouped-query attention (Hkv=1 of H=4) as worked by hand") {
    CostShape shape{1, 8, 4, 8};
    shape.kv_heads = 1;
    const LayerCost layer = encoder_layer_cost(shape, 3);
    const AttentionCost& self = layer.self_attention;
    CHECK(self.query_projection.macs == 192);
    CHECK(self.output_projection.macs == 192);
    CHECK(self.key_projection.macs == 48);
    CHECK(self.value_projection.macs == 48);
    CHECK(self.key_projection.bytes == 192);
    CHECK(self.scores.macs == 72);
    CHECK(self.scores.bytes == 264);
    CHECK(self.kv_cache_bytes == 48);
    CHECK(kv_cache_bytes_per_position(shape) == 16);
    shape.kv_heads = 4;
    CHECK(kv_cache_bytes_per_position(shape) == 64);
    shape.kv_heads = 0;  // = H
    CHECK(kv_cache_bytes_per_position(shape) == 64);
    shape.kv_heads = 1;
    // The layer: attention 180 + FFN (2*D*F + F + D = 128 + 8 + 8 = 144) + two LayerNorms 2*2*8 = 32.
    CHECK(layer.parameter_count == 180 + 144 + 32);
    CHECK(encoder_crossover_length(shape) == 18);
    shape.kv_heads = 3;
    CHECK_ERROR_CONTAINS(check_cost_shape(shape), "key/value heads Hkv=3 must divide heads H=4");
}
