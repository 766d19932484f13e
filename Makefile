# Entry points; each target installs what it needs (Debian packages) and builds from scratch when
# there is no build yet. CMake does the real work: see CMakePresets.json.
# Extra configure arguments: make test CMAKE_ARGS="-DKILN_NATIVE=OFF"

CMAKE_ARGS ?=
SOURCES = $(shell git ls-files '*.cpp' '*.h' 2>/dev/null)

.PHONY: all deps build test demo asan-build asan-test bench consumer-test format format-check clean

all: build

deps:
	@scripts/install-deps

build: deps
	cmake --preset release $(CMAKE_ARGS) >/dev/null
	cmake --build --preset release

test: build
	ctest --preset release --output-on-failure -j2

demo: build
	build/bin/kiln demo

# AddressSanitizer + UBSan. libgomp is not instrumented; two threads keep its pool small.
asan-build: deps
	cmake --preset asan $(CMAKE_ARGS) >/dev/null
	cmake --build --preset asan

asan-test: asan-build
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 OMP_NUM_THREADS=2 \
	  ctest --preset asan --output-on-failure -j2

# Installs the release build into a temporary prefix and builds tests/consumer against it.
consumer-test: build
	scripts/test-consumer

bench:
	@scripts/install-bench-deps
	cmake --preset release -DKILN_BUILD_BENCH=ON $(CMAKE_ARGS) >/dev/null
	cmake --build --preset release --target kiln-bench libtorch_cnn_step libtorch_mnist libtorch_mnist_compiled \
	  libtorch_lstm_step libtorch_lstm_step_compiled
	cmake -S tests/libtorch -B build/libtorch-ref -DLIBTORCH_FRONT_END=libtorch >/dev/null
	cmake --build build/libtorch-ref
	build/bin/kiln-bench --json build/bench.json

format:
	@scripts/install-deps clang-format
	clang-format -i $(SOURCES)

# Fails (listing each place) when clang-format would change a file; CI runs it first.
format-check:
	@scripts/install-deps clang-format
	@clang-format --dry-run --Werror $(SOURCES)

clean:
	rm -rf build
