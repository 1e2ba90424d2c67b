// Tests for engine/tensor.* — shape bookkeeping, checked access, reshape, and
// the strided 2-D views that let a head read its slice of a projection
// without a copy. Every expected number is worked out in the comment beside it.
#include <doctest/doctest.h>

#include "tests/helpers.h"

#include "engine/tensor.h"

#include <limits>

using tinyformer::ConstMatrixView;
using tinyformer::Error;
using tinyformer::MatrixView;
using tinyformer::Shape;
using tinyformer::Tensor;

namespace {

// [rows, cols] holding 0, 1, 2, ... in row-major order, so that the element at
// (r, c) is r * cols + c — easy to check by hand.
Tensor counting(Shape shape) {
    Tensor t(std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(i);
    return t;
}

}  // namespace

TEST_CASE("A tensor built from a shape is zero-filled and reports its shape, rank and sizes") {
    Tensor t(Shape{2, 3});
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.rank() == 2);
    CHECK(t.numel() == 6);  // 2 * 3
    CHECK_FALSE(t.empty());
    CHECK(t.dim(0) == 2);
    CHECK(t.dim(1) == 3);
    CHECK(t.dim(-1) == 3);  // last axis
    CHECK(t.dim(-2) == 2);  // first axis, counted from the end
    for (float v : t.values()) CHECK(v == 0.0f);

    SUBCASE("every rank from 1 to 4 is accepted") {
        CHECK(Tensor(Shape{5}).numel() == 5);
        CHECK(Tensor(Shape{2, 3, 4}).numel() == 24);     // 2 * 3 * 4
        CHECK(Tensor(Shape{2, 3, 4, 5}).numel() == 120);  // 2 * 3 * 4 * 5
        CHECK(Tensor(Shape{2, 3, 4, 5}).dim(-1) == 5);
        CHECK(Tensor(Shape{2, 3, 4, 5}).dim(-4) == 2);
    }
    SUBCASE("an axis of size 0 gives a tensor with no numbers that is still not 'empty'") {
        Tensor none(Shape{0, 3});
        CHECK(none.numel() == 0);
        CHECK(none.rank() == 2);
        CHECK_FALSE(none.empty());
    }
}

TEST_CASE("The default tensor is empty: rank 0 and no numbers") {
    Tensor t;
    CHECK(t.empty());
    CHECK(t.rank() == 0);
    CHECK(t.numel() == 0);
    CHECK_THROWS_AS(t.dim(-1), Error);
    CHECK_THROWS_AS(t.dim(0), Error);
}

TEST_CASE("A tensor built from values holds them in row-major order") {
    Tensor pair({2}, {1.0f, 2.0f});
    CHECK(pair.shape() == Shape{2});
    CHECK(pair.at({0}) == 1.0f);
    CHECK(pair.at({1}) == 2.0f);

    Tensor grid({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(grid.at({0, 2}) == 3.0f);  // row 0, last column
    CHECK(grid.at({1, 0}) == 4.0f);  // flat index 1 * 3 + 0 = 3 -> the 4th value
    CHECK(grid.data()[5] == 6.0f);

    SUBCASE("filled() puts the same value everywhere") {
        Tensor halves = Tensor::filled({2, 2}, 0.5f);
        CHECK(halves.values() == std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f});
    }
    SUBCASE("a value count that disagrees with the shape is refused, naming both") {
        CHECK_ERROR_CONTAINS(Tensor({2, 2}, {1, 2, 3}), "[2,2] needs 4 values, got 3");
        CHECK_ERROR_CONTAINS(Tensor({3}, {1, 2, 3, 4}), "[3] needs 3 values, got 4");
    }
}

TEST_CASE("A shape of rank 0 or 5, or with a negative axis, is refused") {
    CHECK_ERROR_CONTAINS(Tensor(Shape{}), "rank 1..4, got rank 0");
    CHECK_ERROR_CONTAINS(Tensor(Shape{}, std::vector<float>{}), "rank 0");
    CHECK_ERROR_CONTAINS(Tensor(Shape{1, 1, 1, 1, 1}), "got rank 5 [1,1,1,1,1]");
    CHECK_ERROR_CONTAINS(Tensor::filled({1, 2, 1, 2, 1}, 1.0f), "rank 5");
    CHECK_ERROR_CONTAINS(Tensor(Shape{2, -1}), "negative axis size in shape [2,-1]");
}

TEST_CASE("dim() out of range throws and names the shape") {
    Tensor t(Shape{2, 3});
    CHECK_ERROR_CONTAINS(t.dim(2), "axis 2 is out of range for shape [2,3]");
    CHECK_ERROR_CONTAINS(t.dim(-3), "axis -3 is out of range for shape [2,3]");
}

TEST_CASE("at() reads and writes the element at a multi-index and checks every coordinate") {
    Tensor t = counting({2, 3});  // [[0,1,2],[3,4,5]]
    CHECK(t.at({0, 1}) == 1.0f);
    CHECK(t.at({1, 2}) == 5.0f);  // 1 * 3 + 2 = 5

    t.at({1, 0}) = 7.0f;
    CHECK(t.data()[3] == 7.0f);  // (1,0) is flat index 1 * 3 + 0 = 3

    const Tensor& read_only = t;
    CHECK(read_only.at({1, 0}) == 7.0f);

    SUBCASE("a rank-3 index walks the axes in NumPy order") {
        Tensor cube = counting({2, 3, 4});
        CHECK(cube.at({1, 2, 3}) == 23.0f);  // (1 * 3 + 2) * 4 + 3 = 23
        CHECK(cube.at({0, 1, 0}) == 4.0f);   // (0 * 3 + 1) * 4 + 0 = 4
    }
    SUBCASE("an index past the end, or negative, throws with the axis and the shape") {
        CHECK_ERROR_CONTAINS(t.at({2, 0}), "index 2 on axis 0 is out of range for shape [2,3]");
        CHECK_ERROR_CONTAINS(t.at({0, 3}), "index 3 on axis 1 is out of range for shape [2,3]");
        CHECK_ERROR_CONTAINS(t.at({-1, 0}), "[2,3]");
        CHECK_ERROR_CONTAINS(read_only.at({0, 3}), "[2,3]");
    }
    SUBCASE("an index with the wrong number of coordinates throws with the rank") {
        CHECK_ERROR_CONTAINS(t.at({0}), "index has 1 coordinates, tensor [2,3] has rank 2");
        CHECK_ERROR_CONTAINS(t.at({0, 0, 0}), "[2,3] has rank 2");
    }
}

TEST_CASE("reshaped() keeps the numbers in order under a new shape of the same count") {
    Tensor t = counting({2, 3});  // [[0,1,2],[3,4,5]]
    Tensor r = t.reshaped({3, 2});  // [[0,1],[2,3],[4,5]]
    CHECK(r.shape() == Shape{3, 2});
    CHECK(r.at({2, 1}) == 5.0f);
    CHECK(r.at({1, 0}) == 2.0f);  // flat index 1 * 2 + 0 = 2
    CHECK(t.reshaped({6}).at({4}) == 4.0f);
    CHECK(t.reshaped({1, 2, 1, 3}).at({0, 1, 0, 0}) == 3.0f);  // flat ((0*2+1)*1+0)*3+0 = 3

    SUBCASE("the result is a copy: writing it leaves the original alone") {
        r.at({0, 0}) = 42.0f;
        CHECK(t.at({0, 0}) == 0.0f);
    }
    SUBCASE("a different element count is refused, naming both shapes and counts") {
        CHECK_ERROR_CONTAINS(t.reshaped({4}),
                             "cannot view [2,3] (6 elements) as [4] (4 elements)");
        CHECK_ERROR_CONTAINS(t.reshaped({1, 1, 1, 2, 3}), "rank 5");
    }
}

TEST_CASE("matrix() views the last two axes and matrix_count() counts the leading ones") {
    Tensor t = counting({2, 2, 3});  // batch 0: [[0,1,2],[3,4,5]], batch 1: [[6,7,8],[9,10,11]]
    CHECK(t.matrix_count() == 2);
    MatrixView second = t.matrix(1);
    CHECK(second.rows == 2);
    CHECK(second.cols == 3);
    CHECK(second.stride == 3);
    CHECK(second(0, 0) == 6.0f);   // 1 * 6 + 0
    CHECK(second(1, 2) == 11.0f);  // 1 * 6 + 1 * 3 + 2
    CHECK(second.data == t.data() + 6);

    SUBCASE("writing through the view changes the tensor") {
        second(1, 1) = -1.0f;
        CHECK(t.at({1, 1, 1}) == -1.0f);
    }
    SUBCASE("the count is the product of all axes but the last two") {
        CHECK(Tensor(Shape{4}).matrix_count() == 1);
        CHECK(Tensor(Shape{4, 5}).matrix_count() == 1);
        CHECK(Tensor(Shape{2, 3, 4, 5}).matrix_count() == 6);  // 2 * 3
    }
    SUBCASE("a rank-1 tensor is one row") {
        Tensor row = counting({4});
        ConstMatrixView view = static_cast<const Tensor&>(row).matrix();
        CHECK(view.rows == 1);
        CHECK(view.cols == 4);
        CHECK(view(0, 3) == 3.0f);
    }
    SUBCASE("a rank-4 tensor's matrix(i) walks [B, H] in order") {
        Tensor heads = counting({2, 3, 2, 2});  // [B=2, H=3, L=2, Dh=2]
        // matrix(4) is b = 1, h = 1 (4 = 1 * 3 + 1): starts at flat 4 * (2 * 2) = 16.
        CHECK(heads.matrix(4)(0, 0) == 16.0f);
        CHECK(heads.matrix(4)(1, 1) == 19.0f);  // 16 + 1 * 2 + 1
    }
    SUBCASE("an index past the count, or negative, throws with the shape") {
        CHECK_ERROR_CONTAINS(t.matrix(2), "index 2 is out of range for shape [2,2,3]");
        CHECK_ERROR_CONTAINS(t.matrix(-1), "[2,2,3]");
        CHECK_THROWS_AS(Tensor().matrix(), Error);
    }
}

TEST_CASE("columns() and rows_range() are strided windows that see the tensor's own numbers") {
    // A [L=2, H*Dh=6] projection with H=3 heads of Dh=2:
    //   row 0: 0 1 | 2 3 | 4 5
    //   row 1: 6 7 | 8 9 | 10 11
    Tensor projection = counting({2, 6});
    MatrixView head1 = projection.matrix().columns(2, 2);
    CHECK(head1.rows == 2);
    CHECK(head1.cols == 2);
    CHECK(head1.stride == 6);                      // still the full row: no copy
    CHECK(head1.data == projection.data() + 2);    // same storage
    CHECK(head1(0, 0) == 2.0f);
    CHECK(head1(0, 1) == 3.0f);
    CHECK(head1(1, 0) == 8.0f);  // 1 * 6 + 2
    CHECK(head1(1, 1) == 9.0f);  // 1 * 6 + 3
    CHECK(head1.row(1)[0] == 8.0f);

    SUBCASE("a write through the view is visible in the tensor") {
        head1(1, 1) = -9.0f;
        CHECK(projection.at({1, 3}) == -9.0f);  // view column 1 is tensor column 2 + 1
        head1.row(0)[0] = -2.0f;
        CHECK(projection.at({0, 2}) == -2.0f);
    }
    SUBCASE("rows_range() picks rows of a view and keeps its stride") {
        MatrixView second_row = projection.matrix().rows_range(1, 1);
        CHECK(second_row.rows == 1);
        CHECK(second_row.cols == 6);
        CHECK(second_row(0, 0) == 6.0f);
        MatrixView corner = head1.rows_range(1, 1);  // row 1 of head 1
        CHECK(corner(0, 0) == 8.0f);
        CHECK(corner(0, 1) == 9.0f);
        corner(0, 0) = 80.0f;
        CHECK(projection.at({1, 2}) == 80.0f);
    }
    SUBCASE("the read-only views see the same numbers") {
        const Tensor& read_only = projection;
        ConstMatrixView head2 = read_only.matrix().columns(4, 2);
        CHECK(head2(0, 0) == 4.0f);
        CHECK(head2(1, 1) == 11.0f);  // 1 * 6 + 5
        CHECK(head2.rows_range(1, 1)(0, 0) == 10.0f);
        ConstMatrixView converted = head1;  // MatrixView -> ConstMatrixView keeps the window
        CHECK(converted(1, 0) == 8.0f);
        CHECK(converted.stride == 6);
    }
    SUBCASE("a window outside the view is refused") {
        CHECK_ERROR_CONTAINS(projection.matrix().columns(5, 2),
                             "columns [5,7) outside a view with 6 columns");
        CHECK_THROWS_AS(projection.matrix().columns(-1, 1), Error);
        CHECK_THROWS_AS(head1.columns(1, 2), Error);  // head1 has only 2 columns
        CHECK_ERROR_CONTAINS(projection.matrix().rows_range(1, 2),
                             "rows [1,3) outside a view with 2 rows");
        CHECK_THROWS_AS(static_cast<ConstMatrixView>(head1).rows_range(-1, 1), Error);
    }
}

TEST_CASE("all_finite() is false as soon as one number is inf or NaN") {
    CHECK(Tensor({3}, {1.0f, -2.0f, 0.0f}).all_finite());
    CHECK_FALSE(Tensor({2}, {1.0f, std::numeric_limits<float>::infinity()}).all_finite());
    CHECK_FALSE(Tensor({2}, {-std::numeric_limits<float>::infinity(), 1.0f}).all_finite());
    CHECK_FALSE(Tensor({2}, {std::numeric_limits<float>::quiet_NaN(), 1.0f}).all_finite());
}

TEST_CASE("shape_string() and checked_numel() write and count shapes one way") {
    CHECK(tinyformer::shape_string({2, 4, 64}) == "[2,4,64]");
    CHECK(tinyformer::shape_string({7}) == "[7]");
    CHECK(tinyformer::shape_string({}) == "[]");
    CHECK(tinyformer::checked_numel({2, 3, 4}, "test") == 24);  // 2 * 3 * 4
    CHECK(tinyformer::checked_numel({2, 0}, "test") == 0);
    CHECK_ERROR_CONTAINS(tinyformer::checked_numel({2, -3}, "my_op"), "my_op: negative axis");
    CHECK_ERROR_CONTAINS(tinyformer::checked_numel({}, "my_op"), "my_op: a tensor has rank 1..4");
}
