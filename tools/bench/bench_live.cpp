// `tinyformer-bench live MODEL REQUEST.json [--n N]`: the page's engine call
// natively. Runs live_run (tools/explore/live.h: what window.tinyformer.run
// does in the page: encode, decode, the teacher-forced pass, the page's data)
// N times (default 30) on one request and prints the median, so the page
// benchmark (tests/browser/bench_live.mjs, make bench-page) can set the wasm
// engine's time beside the native one on the same pass: as the page's engine
// (tools/wasm/page_engine.cpp) does it, the big arrays into FloatArrays and the
// rest written as JSON text. Measured, never asserted.
#include "engine/error.h"
#include "engine/io/json.h"
#include "models/transformer.h"
#include "tools/bench/bench.h"
#include "tools/explore/live.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tinyformer::bench {

void run_live_command(const std::string& model_path, const std::string& request_path, int64_t runs) {
    std::ifstream in(request_path, std::ios::binary);
    if (!in) fail("live: cannot read the request file '", request_path, "'");
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json request = parse_json(text.str(), 64, "live: " + request_path);
    Model model = Model::load(model_path);
    std::printf("%s\n", blas_line().c_str());
    std::printf("  cpu           %s\n", cpu_model().c_str());
    std::printf("live_run on %s, request %s, %lld runs after one warm-up\n", model_path.c_str(),
                request.dump().c_str(), static_cast<long long>(runs));
    FloatArrays arrays;
    live_run(model, request, model_path, &arrays);  // warm-up: the buffer pool, the caches
    std::vector<double> times;
    const OtherLoad load;
    for (int64_t i = 0; i < runs; ++i) {
        const auto start = Clock::now();
        arrays = {};
        const std::string text = live_run(model, request, model_path, &arrays).dump();
        times.push_back(seconds_since(start) * 1000.0);
    }
    std::printf("  median %.3f ms (min %.3f, max %.3f); other processes' load %s\n", median(times),
                *std::min_element(times.begin(), times.end()), *std::max_element(times.begin(), times.end()),
                format_load(load.fraction()).c_str());
}

}  // namespace tinyformer::bench
