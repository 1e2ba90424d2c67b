// Tests of the embedded `tinyformer explore` page (issue 12): the files
// tools/explore/page.{html,css,js} and engine.js, as the Makefile embeds them into
// build/generated/explore_page.h, hold each placeholder exactly once, alone on
// its line and in the right element, and make no network reference of any
// kind. The scanner is itself tested on text that does.
#include <doctest/doctest.h>

#include "build/generated/explore_page.h"

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

using tinyformer::cli::kExplorePageCss;
using tinyformer::cli::kExplorePageEngineJs;
using tinyformer::cli::kExplorePageHtml;
using tinyformer::cli::kExplorePageJs;
using tinyformer::cli::kExplorePageLiveJs;
using tinyformer::cli::kExplorePageStudyJs;

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
// (or other URL attribute or property), a CSS url() or @import, a JavaScript
// import, fetch(), XMLHttpRequest, WebSocket, EventSource, sendBeacon,
// importScripts, a shared or service worker, a <link>/<img>/<iframe>/...
// element or <script src>. URLs count when they start with http:, https: or a
// protocol-relative //host; the page needs none of the APIs or elements at
// all, so those are refused whatever they point at. One Web Worker is allowed
// (engine.js runs the engine in it): `new Worker(NAME)` where the same text
// makes NAME = URL.createObjectURL(new Blob(...)), a blob: URL of the page's
// own text, which asks nothing of the network; any other new Worker(...) is refused. A plain scanner (no <regex>: g++ 12 warns inside it under
// the sanitizers), case-insensitive.
bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '$';
}

class Scanner {
public:
    explicit Scanner(const std::string& text) : s_(text) {
        for (char& c : s_)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }

    std::vector<std::string> references() const {
        std::vector<std::string> found;
        for (const char* attribute : {"src", "href", "srcset", "action", "formaction", "poster", "data", "background",
                                      "manifest", "codebase", "cite", "ping"})
            each_word(attribute, [&](size_t at, size_t end) {
                size_t i = skip_spaces(end);
                if (i >= s_.size() || s_[i] != '=') return;
                if (remote(skip_quote(skip_spaces(i + 1)))) found.push_back(excerpt(at));
            });
        each("url(", [&](size_t at, size_t end) {
            if (remote(skip_quote(skip_spaces(end)))) found.push_back(excerpt(at));
        });
        each("@import", [&](size_t at, size_t) { found.push_back(excerpt(at)); });
        each_word("import", [&](size_t at, size_t end) {
            const size_t i = skip_spaces(end);
            if (i < s_.size() && (s_[i] == '(' || s_[i] == '"' || s_[i] == '\'' || s_[i] == '`' || s_[i] == '{' || s_[i] == '*'))
                found.push_back(excerpt(at));
        });
        each_word("from", [&](size_t at, size_t end) {
            if (remote(skip_quote(skip_spaces(end)))) found.push_back(excerpt(at));
        });
        each_word("fetch", [&](size_t at, size_t end) {
            const size_t i = skip_spaces(end);
            if (i < s_.size() && s_[i] == '(') found.push_back(excerpt(at));
        });
        for (const char* api : {"xmlhttprequest", "websocket", "eventsource", "sendbeacon", "importscripts",
                                "sharedworker", "serviceworker", "window.open", "location.href", "location.assign"})
            each_word(api, [&](size_t at, size_t) { found.push_back(excerpt(at)); });
        each_word("worker", [&](size_t at, size_t end) {
            if (constructed(at) && !of_own_blob(end)) found.push_back(excerpt(at));
        });
        for (const char* element : {"link", "iframe", "img", "object", "embed", "audio", "video", "source", "base",
                                    "frame", "track", "picture", "form"})
            each("<", [&](size_t at, size_t end) {
                const size_t i = skip_spaces(end);
                const std::string name = element;
                if (s_.compare(i, name.size(), name) == 0 && (i + name.size() >= s_.size() || !word_char(s_[i + name.size()])))
                    found.push_back(excerpt(at));
            });
        each("<script", [&](size_t at, size_t end) {
            const size_t close = s_.find('>', end);
            const std::string tag = s_.substr(end, close == std::string::npos ? std::string::npos : close - end);
            if (Scanner(tag).has_word("src")) found.push_back(excerpt(at));
        });
        return found;
    }

private:
    std::string s_;

    template <typename F>
    void each(const std::string& needle, F&& f) const {
        for (size_t at = s_.find(needle); at != std::string::npos; at = s_.find(needle, at + 1)) f(at, at + needle.size());
    }
    // `needle` as a whole word (a '.' before it counts as a boundary).
    template <typename F>
    void each_word(const std::string& needle, F&& f) const {
        each(needle, [&](size_t at, size_t end) {
            if (at > 0 && word_char(s_[at - 1])) return;
            if (end < s_.size() && word_char(s_[end])) return;
            f(at, end);
        });
    }
    bool has_word(const std::string& needle) const {
        bool found = false;
        each_word(needle, [&](size_t, size_t) { found = true; });
        return found;
    }
    size_t skip_spaces(size_t i) const {
        while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\n' || s_[i] == '\r')) ++i;
        return i;
    }
    // `new` (and spaces) right before position `at`.
    bool constructed(size_t at) const {
        size_t i = at;
        while (i > 0 && (s_[i - 1] == ' ' || s_[i - 1] == '\t' || s_[i - 1] == '\n' || s_[i - 1] == '\r')) --i;
        return i < at && i >= 3 && s_.compare(i - 3, 3, "new") == 0 && (i == 3 || !word_char(s_[i - 4]));
    }
    // After "worker" at `end`: "(NAME)", NAME assigned a blob: URL of a Blob somewhere in the text.
    bool of_own_blob(size_t end) const {
        size_t i = skip_spaces(end);
        if (i >= s_.size() || s_[i] != '(') return false;
        const size_t start = skip_spaces(i + 1);
        size_t stop = start;
        while (stop < s_.size() && word_char(s_[stop])) ++stop;
        const size_t close = skip_spaces(stop);
        if (stop == start || close >= s_.size() || s_[close] != ')') return false;
        const std::string name = s_.substr(start, stop - start);
        bool made = false;
        each_word(name, [&](size_t, size_t after) {
            size_t j = skip_spaces(after);
            if (j >= s_.size() || s_[j] != '=' || (j + 1 < s_.size() && s_[j + 1] == '=')) return;
            j = skip_spaces(j + 1);
            const std::string call = "url.createobjecturl(";
            if (s_.compare(j, call.size(), call) != 0) return;
            j = skip_spaces(j + call.size());
            if (s_.compare(j, 3, "new") != 0) return;
            j = skip_spaces(j + 3);
            if (s_.compare(j, 5, "blob(") == 0) made = true;
        });
        return made;
    }
    size_t skip_quote(size_t i) const {
        if (i < s_.size() && (s_[i] == '"' || s_[i] == '\'' || s_[i] == '`')) return skip_spaces(i + 1);
        return i;
    }
    bool remote(size_t i) const {
        return s_.compare(i, 5, "http:") == 0 || s_.compare(i, 6, "https:") == 0 || s_.compare(i, 2, "//") == 0;
    }
    std::string excerpt(size_t at) const { return s_.substr(at, 60); }
};

std::vector<std::string> network_references(const std::string& text) { return Scanner(text).references(); }

}  // namespace

TEST_CASE("explore page: each placeholder exactly once, alone on its line, in its element") {
    const std::string html = kExplorePageHtml, css = kExplorePageCss, js = kExplorePageJs, engine_js = kExplorePageEngineJs,
                      live = kExplorePageLiveJs, study = kExplorePageStudyJs;
    for (const char* placeholder : {"/*TINYFORMER_CSS*/", "/*TINYFORMER_JS*/", "/*TINYFORMER_LIVE_JS*/", "/*TINYFORMER_STUDY_JS*/", "/*TINYFORMER_DATA*/",
                                    "/*TINYFORMER_ENGINE*/", "/*TINYFORMER_ENGINE_JS*/", "/*TINYFORMER_MODEL*/",
                                    "/*TINYFORMER_ENGINE_STATUS*/"}) {
        CAPTURE(placeholder);
        CHECK(count(html, placeholder) == 1);
        CHECK(alone_on_its_line(html, placeholder));
        // The C++ side replaces them in the HTML; the CSS and JS must not
        // bring in a second copy.
        CHECK(count(css, placeholder) == 0);
        CHECK(count(js, placeholder) == 0);
        CHECK(count(engine_js, placeholder) == 0);
        CHECK(count(live, placeholder) == 0);
        CHECK(count(study, placeholder) == 0);
    }
    CHECK(inside(html, "<style>", "</style>", "/*TINYFORMER_CSS*/"));
    CHECK(inside(html, "<script type=\"application/json\" id=\"tinyformer-data\">", "</script>", "/*TINYFORMER_DATA*/"));
    // The engine is inert text (engine.js runs it in a Web Worker, never in the page).
    CHECK(count(html, "<script type=\"text/plain\" id=\"tinyformer-engine\">\n/*TINYFORMER_ENGINE*/\n</script>") == 1);
    for (const char* script : {"/*TINYFORMER_ENGINE_JS*/", "/*TINYFORMER_JS*/", "/*TINYFORMER_LIVE_JS*/", "/*TINYFORMER_STUDY_JS*/"}) {
        CAPTURE(script);
        CHECK(count(html, std::string("<script>\n") + script + "\n</script>") == 1);
    }
    CHECK(inside(html, "<script type=\"application/json\" id=\"tinyformer-engine-status\">", "</script>",
                 "/*TINYFORMER_ENGINE_STATUS*/"));
    CHECK(inside(html, "<script type=\"application/octet-stream\" id=\"tinyformer-model\">", "</script>",
                 "/*TINYFORMER_MODEL*/"));
    // The engine's text comes before its glue, which reads it as the page is
    // parsed, and the glue before page.js, which reads window.tinyformer.
    CHECK(html.find("/*TINYFORMER_ENGINE*/") < html.find("/*TINYFORMER_ENGINE_JS*/"));
    CHECK(html.find("/*TINYFORMER_ENGINE_JS*/") < html.find("/*TINYFORMER_JS*/"));
    // live.js after page.js, whose renderer (window.tinyformerPage) it drives.
    CHECK(html.find("/*TINYFORMER_JS*/") < html.find("/*TINYFORMER_LIVE_JS*/"));
    // study.js after live.js, whose inputs (the source and the target) it reads.
    CHECK(html.find("/*TINYFORMER_LIVE_JS*/") < html.find("/*TINYFORMER_STUDY_JS*/"));
    // Raw text in <style> and <script> ends at the first "</style" or
    // "</script": the files must not contain them.
    CHECK(count(css, "</") == 0);
    CHECK(count(js, "</") == 0);
    CHECK(count(engine_js, "</") == 0);
    CHECK(count(live, "</") == 0);
    CHECK(count(study, "</") == 0);
}

TEST_CASE("explore page: the files are not empty and stay below 60 KB each") {
    for (const char* text :
         {kExplorePageHtml, kExplorePageCss, kExplorePageJs, kExplorePageEngineJs, kExplorePageLiveJs, kExplorePageStudyJs}) {
        const std::string s = text;
        CHECK(s.size() > 500);
        CHECK(s.size() < 60 * 1024);
    }
}

TEST_CASE("explore page: no network reference in the HTML, CSS or JavaScript") {
    for (const auto& [name, text] : {std::pair{"page.html", kExplorePageHtml}, std::pair{"page.css", kExplorePageCss},
                                     std::pair{"page.js", kExplorePageJs}, std::pair{"engine.js", kExplorePageEngineJs},
                                     std::pair{"live.js", kExplorePageLiveJs}, std::pair{"study.js", kExplorePageStudyJs}}) {
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
             R"(<SCRIPT type="module" SRC="x.js"></SCRIPT>)",
             R"(<iframe srcdoc="x"></iframe>)",
             R"(const w = new Worker("w.js"))",
             R"(const w = new Worker(url))",
             R"(url = "https://x/w.js"; const w = new Worker(url))",
             R"(u = URL.createObjectURL(new Blob([t])); new Worker(u + "x"))",
             R"(new SharedWorker(u))",
             R"(navigator.serviceWorker.register("sw.js"))",
             R"(importScripts("x.js"))",
             R"(<a HREF = ' https://example.org'>)",
         }) {
        CAPTURE(bad);
        CHECK_FALSE(network_references(bad).empty());
    }
    for (const char* fine : {
             R"(// a comment: see https in the README)",
             R"(const SVG_NS = "http://www.w3.org/2000/svg";)",
             R"(<a id="x" data-attention="decoder.1.cross_attn" data-src="https://x">)",
             R"(const important = transformer.sources; // no imports here)",
             R"(<script type="application/json" id="tinyformer-data">)",
             R"(// the engine runs in a Web Worker; current.worker.terminate())",
             R"(workerUrl = URL.createObjectURL(new Blob([glue, code])); const worker = new Worker(workerUrl);)",
             R"(table.matrix td.padding { background: repeating-linear-gradient(45deg, #777 0 2px, #eee 2px 6px); })",
         }) {
        CAPTURE(fine);
        CHECK(network_references(fine).empty());
    }
}
