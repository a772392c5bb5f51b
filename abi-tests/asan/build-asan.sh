#!/usr/bin/env bash
# build-asan.sh — (host side of `make check-asan`) our library built with
# AddressSanitizer, and a canary that proves the toolchain catches errors:
#   build/asan/lib/librdmacm.so.1   the library: the same sources and version
#       script as build/librdmacm.so.1, compiled by the nightly toolchain
#       with -Zsanitizer=address and linked with gcc's -fsanitize=address
#       (NEEDED libasan.so.8). Programs load it with LD_PRELOAD=libasan.so.8
#       (the runtime must come first) and LD_LIBRARY_PATH=build/asan/lib.
#   build/asan/canary, build/asan/lib/libasancanary.so   a Rust staticlib
#       built the same way that reads one byte past a heap buffer when
#       asked: check-asan expects a heap-buffer-overflow report from it.
#   build/asan/leaky   asks our library for an address and never frees it:
#       check-asan expects LeakSanitizer to report it through our library.
# Not part of `make test` (abi-tests/vm/vm-test.sh runs only build.sh files).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
rustup run nightly rustc --version >/dev/null 2>&1 ||
	{ echo "build-asan: no nightly toolchain (abi-tests/setup-host.sh installs it)"; exit 1; }
ASAN_RT=$(gcc -print-file-name=libasan.so)
[ -e "$ASAN_RT" ] || { echo "build-asan: gcc's libasan is missing (apt-get install libasan8)"; exit 1; }
mkdir -p build/asan/lib
T=x86_64-unknown-linux-gnu
RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes" RDMACM_REQUIRE_LAYOUT=1 \
	cargo +nightly build --release --quiet --target $T --target-dir build/asan/target
# The Makefile's own link rule (version script, soname, links), with the
# sanitizer's runtime and the staticlib just built.
make --no-print-directory lib B=build/asan/lib CC="gcc -fsanitize=address" \
	STATIC=build/asan/target/$T/release/librdmacm.a
RUSTFLAGS="-Zsanitizer=address" cargo +nightly build --release --quiet --target $T \
	--manifest-path abi-tests/asan/canary/Cargo.toml --target-dir build/asan/target
gcc -shared -fsanitize=address -o build/asan/lib/libasancanary.so \
	-Wl,--whole-archive build/asan/target/$T/release/libasancanary.a -Wl,--no-whole-archive -lpthread -ldl
gcc -O1 -Wall -Wextra -Werror -o build/asan/canary abi-tests/asan/canary/main.c -Lbuild/asan/lib -lasancanary \
	-Wl,-rpath,'$ORIGIN/lib'
gcc -O1 -Wall -Wextra -Werror -Iinclude -o build/asan/leaky abi-tests/asan/canary/leaky.c -Lbuild -lrdmacm
echo "build-asan: build/asan/lib/librdmacm.so.1 ($(readelf -d build/asan/lib/librdmacm.so.1 | grep -c NEEDED) NEEDED, libasan among them: $(readelf -d build/asan/lib/librdmacm.so.1 | grep -c libasan))"
