// Tests of the embedded `tinyformer explore` page (issue 12): the three files
// tools/explore/page.{html,css,js}, as the Makefile embeds them into
// build/generated/explore_page.h, hold each placeholder exactly once, alone on
// its line and in the right element, and make no network reference of any
// kind. The scanner is itself tested on text that does.
#include <doctest/doctest.h>

#include "build/generated/explore_page.h"

#include <cstddef>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using tinyformer::cli::kExplorePageCss;
using tinyformer::cli::kExplorePageHtml;
using tinyformer::cli::kExplorePageJs;

namespace {

size_t count(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return n;
}

bool alone_on_its_line(const std::string& text, const std::string& needle) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        const auto first = line.find_first_not_of(" \t\r");
        const auto last = line.find_last_not_of(" \t\r");
        if (first != std::string::npos && line.substr(first, last - first + 1) == needle) return true;
    }
    return false;
}

// True when `needle` lies between the first `open` and the next `close`.
bool inside(const std::string& text, const std::string& open, const std::string& close, const std::string& needle) {
    const auto start = text.find(open);
    if (start == std::string::npos) return false;
    const auto end = text.find(close, start + open.size());
    const auto at = text.find(needle, start + open.size());
    return at != std::string::npos && end != std::string::npos && at < end;
}

// Every reference that would make the browser ask the network: a src/href
// (or other URL attribute), a CSS url() or @import, a JavaScript import,
// fetch(), XMLHttpRequest, WebSocket, EventSource, sendBeacon or a worker,
// pointing at http:, https: or a protocol-relative //host. The page needs
// none of them at all, so the API names are refused whatever they point at.
std::vector<std::string> network_references(const std::string& text) {
    static const std::vector<std::regex> patterns = [] {
        const auto flags = std::regex::ECMAScript | std::regex::icase;
        std::vector<std::regex> list;
        for (const char* p : {
                 R"(\b(src|href|srcset|action|formaction|poster|data|background|manifest)\s*=\s*["'`]?\s*(https?:|//))",
                 R"(\.(src|href)\s*=\s*["'`]\s*(https?:|//))",
                 R"(url\(\s*["']?\s*(https?:|//))",
                 R"(@import)",
                 R"(\bimport\s*\()",
                 R"(\bimport\s+[^;]*["'`]\s*(https?:|//))",
                 R"(\bfrom\s*["'`]\s*(https?:|//))",
                 R"(\bfetch\s*\()",
                 R"(XMLHttpRequest|WebSocket|EventSource|sendBeacon|importScripts|new\s+Worker)",
                 R"(<\s*(link|iframe|img|object|embed|audio|video|source|base)\b)",
                 R"(<\s*script\b[^>]*\bsrc\s*=)",
             })
            list.emplace_back(p, flags);
        return list;
    }();
    std::vector<std::string> found;
    for (const auto& pattern : patterns)
        for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it)
            found.push_back(it->str());
    return found;
}

}  // namespace

TEST_CASE("explore page: each placeholder exactly once, alone on its line, in its element") {
    const std::string html = kExplorePageHtml, css = kExplorePageCss, js = kExplorePageJs;
    for (const char* placeholder : {"/*TINYFORMER_CSS*/", "/*TINYFORMER_JS*/", "/*TINYFORMER_DATA*/"}) {
        CAPTURE(placeholder);
        CHECK(count(html, placeholder) == 1);
        CHECK(alone_on_its_line(html, placeholder));
        // The C++ side replaces them in the HTML; the CSS and JS must not
        // bring in a second copy.
        CHECK(count(css, placeholder) == 0);
        CHECK(count(js, placeholder) == 0);
    }
    CHECK(inside(html, "<style>", "</style>", "/*TINYFORMER_CSS*/"));
    CHECK(inside(html, "<script type=\"application/json\" id=\"tinyformer-data\">", "</script>", "/*TINYFORMER_DATA*/"));
    CHECK(inside(html, "<script>", "</script>", "/*TINYFORMER_JS*/"));
    // Raw text in <style> and <script> ends at the first "</style" or
    // "</script": the files must not contain them.
    CHECK(count(css, "</") == 0);
    CHECK(count(js, "</") == 0);
}

TEST_CASE("explore page: the files are not empty and stay below 60 KB each") {
    for (const char* text : {kExplorePageHtml, kExplorePageCss, kExplorePageJs}) {
        const std::string s = text;
        CHECK(s.size() > 500);
        CHECK(s.size() < 60 * 1024);
    }
}

TEST_CASE("explore page: no network reference in the HTML, CSS or JavaScript") {
    for (const auto& [name, text] : {std::pair{"page.html", kExplorePageHtml}, std::pair{"page.css", kExplorePageCss},
                                     std::pair{"page.js", kExplorePageJs}}) {
        CAPTURE(name);
        const auto found = network_references(text);
        for (const auto& reference : found) CAPTURE(reference);
        CHECK(found.empty());
    }
}

TEST_CASE("explore page: the network-reference scanner finds what it must") {
    for (const char* bad : {
             R"(<script src="https://cdn.example/x.js"></script>)",
             R"(<link rel="stylesheet" href="style.css">)",
             R"(<a href="//example.org/">)",
             R"(<img src=http://example.org/a.png>)",
             R"(body { background: url("https://example.org/a.png"); })",
             R"(body { background: url(//example.org/a.png); })",
             R"(@import "x.css";)",
             R"(import("./module.js"))",
             R"(import x from "https://esm.example/x.js";)",
             R"(fetch("data.json"))",
             R"(new XMLHttpRequest())",
             R"(const s = new WebSocket("ws://localhost"))",
             R"(navigator.sendBeacon("/log", data))",
             R"(image.src = "https://example.org/a.png")",
         }) {
        CAPTURE(bad);
        CHECK_FALSE(network_references(bad).empty());
    }
    for (const char* fine : {
             R"(// a comment: see https in the README)",
             R"(const SVG_NS = "http://www.w3.org/2000/svg";)",
             R"(<a id="x" data-attention="decoder.1.cross_attn">)",
             R"(table.matrix td.padding { background: repeating-linear-gradient(45deg, #777 0 2px, #eee 2px 6px); })",
         }) {
        CAPTURE(fine);
        CHECK(network_references(fine).empty());
    }
}
