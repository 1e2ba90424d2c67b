// A small evaluator for the formulas the lessons and docs print, so that a test can read a
// formula as the learner reads it (from the program's output or a doc) and compare it with the
// engine's own numbers at a few points.
//
// The notation is the lessons': numbers, variables (slope_h, Hkv, theta), + - * / % ^,
// parentheses, |x| for the absolute value, functions written before their argument with or
// without parentheses (cos m, cos(m - n), floor(log2 H), sqrt(x), sigmoid(x)), and multiplication by
// juxtaposition (2i, 8 (h+1), cos m cos n). ^ binds tighter than unary minus on its left and
// takes a signed exponent (2^-8, -x^2 = -(x^2)). With integer_division, / between two whole
// numbers truncates, as C++ does for head indices (h / (H / Hkv)).
// A formula the evaluator cannot read, or a variable it is not given, is an error naming it.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

namespace test_helpers {

class Expression {
public:
    using Variables = std::map<std::string, double>;

    static double evaluate(const std::string& text, const Variables& variables, bool integer_division = false) {
        Expression parser(text, variables, integer_division);
        const double value = parser.sum();
        parser.skip_space();
        if (parser.at_ < parser.text_.size()) parser.fail("unexpected '" + parser.text_.substr(parser.at_) + "'");
        return value;
    }

private:
    Expression(const std::string& text, const Variables& variables, bool integer_division)
        : text_(text), variables_(variables), integer_division_(integer_division) {}

    const std::string text_;
    const Variables& variables_;
    const bool integer_division_;
    size_t at_ = 0;
    int open_bars_ = 0;  // |...| being read: a '|' then closes, never starts a factor

    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error("formula \"" + text_ + "\": " + why + " (at " + std::to_string(at_) + ")");
    }
    void skip_space() {
        while (at_ < text_.size() && text_[at_] == ' ') ++at_;
    }
    char peek() {
        skip_space();
        return at_ < text_.size() ? text_[at_] : '\0';
    }
    static bool whole(double x) { return std::floor(x) == x; }

    // sum := product (('+' | '-') product)*
    double sum() {
        double value = product();
        for (char c = peek(); c == '+' || c == '-'; c = peek()) {
            ++at_;
            const double right = product();
            value = c == '+' ? value + right : value - right;
        }
        return value;
    }
    // Whether the next character starts a factor multiplied by juxtaposition.
    bool starts_factor() {
        const char c = peek();
        return std::isdigit(static_cast<unsigned char>(c)) || std::isalpha(static_cast<unsigned char>(c)) || c == '(' ||
               (c == '|' && open_bars_ == 0);
    }
    // product := signed (('*' | '/' | '%') signed | signed by juxtaposition)*
    double product() {
        double value = signed_factor();
        for (;;) {
            const char c = peek();
            if (c == '*' || c == '/' || c == '%') {
                ++at_;
                const double right = signed_factor();
                if (c == '*') value *= right;
                else if (c == '%') value = std::fmod(value, right);
                else if (integer_division_ && whole(value) && whole(right)) value = std::trunc(value / right);
                else value /= right;
            } else if (starts_factor()) {
                value *= signed_factor();
            } else {
                return value;
            }
        }
    }
    // signed := ('-' | '+') signed | power
    double signed_factor() {
        const char c = peek();
        if (c == '-' || c == '+') {
            ++at_;
            const double value = signed_factor();
            return c == '-' ? -value : value;
        }
        return power();
    }
    // power := primary ('^' signed)?   (right-associative through signed -> power)
    double power() {
        const double base = primary();
        if (peek() != '^') return base;
        ++at_;
        return std::pow(base, signed_factor());
    }
    double primary() {
        const char c = peek();
        if (c == '(') {
            ++at_;
            const double value = sum();
            if (peek() != ')') fail("expected ')'");
            ++at_;
            return value;
        }
        if (c == '|') {
            ++at_;
            ++open_bars_;
            const double value = sum();
            --open_bars_;
            if (peek() != '|') fail("expected a closing '|'");
            ++at_;
            return std::fabs(value);
        }
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
            const size_t start = at_;
            while (at_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.')) ++at_;
            const std::string digits = text_.substr(start, at_ - start);
            if (digits.find_first_of("0123456789") == std::string::npos || std::count(digits.begin(), digits.end(), '.') > 1)
                fail("'" + digits + "' is not a number");
            return std::stod(digits);
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            const size_t start = at_;
            while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
            const std::string name = text_.substr(start, at_ - start);
            if (name == "cos") return std::cos(power());
            if (name == "sin") return std::sin(power());
            if (name == "exp") return std::exp(power());
            if (name == "sigmoid") return 1.0 / (1.0 + std::exp(-power()));
            if (name == "sqrt") return std::sqrt(power());
            if (name == "floor") return std::floor(power());
            if (name == "log2") return std::log2(power());
            const auto found = variables_.find(name);
            if (found == variables_.end()) fail("no value for '" + name + "'");
            return found->second;
        }
        fail(c == '\0' ? std::string("ends early") : "unexpected '" + std::string(1, c) + "'");
    }
};

}  // namespace test_helpers
