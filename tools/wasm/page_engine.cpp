// The engine inside the explorer page: the two C entry points the page's
// tools/explore/engine.js calls through emscripten's ccall (built by
// `make build/wasm/tinyformer-engine.js`, docs/BUILDING.md).
//
//   tinyformer_load(path)         loads the checkpoint at `path` (engine.js
//                                 writes the page's embedded one, or the file
//                                 the reader opened, to MEMFS first, and
//                                 deletes it after: the model holds the weights)
//   tinyformer_run(request_json)  one request -> one result (tools/explore/live.h),
//                                 its big arrays kept apart (FloatArrays)
//   tinyformer_array_count(), tinyformer_array(i), tinyformer_array_size(i)
//                                 those arrays: how many, where array i's floats
//                                 are in the module's memory, and how many (the
//                                 page copies them one after another into one
//                                 Float32Array, the buffer the references count in)
//
// Both return a JSON text, {"ok":true,"result":...} or {"ok":false,"error":"one
// line"}, valid (with the floats) until the next call; nothing is thrown
// across the boundary.
#include "engine/io/json.h"
#include "engine/io/utf8.h"
#include "engine/matmul.h"
#include "tools/explore/live.h"

#include <exception>
#include <memory>
#include <new>
#include <string>

namespace {

using json = nlohmann::json;

std::unique_ptr<tinyformer::Model> loaded_model;
std::string loaded_name;
std::string answer;  // the text the last call returned
tinyformer::FloatArrays floats;  // the last result's big arrays ({"f32": offset, "shape"} in its JSON)

const char* answered(const json& value) {
    answer = value.dump(-1, ' ', false, json::error_handler_t::replace);
    return answer.c_str();
}

// The error line as the CLI prints one (engine/io/utf8.h's rule): a typed
// control character or bidi override in it is shown as \xNN or \u{XXXX},
// never sent to the page as itself.
const char* failed(const std::string& message) {
    return answered({{"ok", false}, {"error", tinyformer::shown_text(message)}});
}

// The checkpoint's name as the page shows it: the file name without folders
// and ".safetensors", a control character or bidi override in it (a file the
// reader opened may be named anything) shown as \xNN or \u{XXXX}.
std::string stem(std::string path) {
    path = path.substr(path.find_last_of('/') + 1);
    if (path.ends_with(".safetensors")) path.resize(path.size() - std::string(".safetensors").size());
    return tinyformer::shown_text(path);
}

template <typename Work>
const char* guarded(Work&& work) {
    try {
        return work();
    } catch (const tinyformer::Error& error) {
        return failed(error.message());
    } catch (const std::bad_alloc&) {
        return failed("out of memory");
    } catch (const std::exception& error) {
        return failed(std::string("internal error: ") + error.what());
    } catch (...) {
        return failed("internal error");
    }
}

}  // namespace

extern "C" {

const char* tinyformer_load(const char* path) {
    return guarded([&] {
        auto model = std::make_unique<tinyformer::Model>(tinyformer::Model::load(path));
        loaded_model = std::move(model);
        loaded_name = stem(path);
        const tinyformer::ModelConfig& config = loaded_model->config;
        return answered({{"ok", true},
                         {"result",
                          {{"name", loaded_name},
                           {"arch", tinyformer::architecture_name(config.arch)},
                           {"blas_description", tinyformer::blas_description()}}}});
    });
}

const char* tinyformer_run(const char* request_json) {
    return guarded([&] {
        if (!loaded_model) return failed("no model is loaded (tinyformer_load first)");
        // A request is the page's own JSON, but is still read under parse_json's limits.
        const json request = tinyformer::parse_json(request_json, 8, "the request");
        floats = {};  // the last result's arrays freed (the next result's take their place)
        return answered({{"ok", true}, {"result", tinyformer::live_run(*loaded_model, request, loaded_name, &floats)}});
    });
}

size_t tinyformer_array_count() { return floats.arrays.size(); }

// Array i's floats (i below the count; else none).
const float* tinyformer_array(size_t i) { return i < floats.arrays.size() ? floats.arrays[i].data() : nullptr; }

size_t tinyformer_array_size(size_t i) { return i < floats.arrays.size() ? floats.arrays[i].size() : 0; }

}  // extern "C"
