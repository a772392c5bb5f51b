#!/usr/bin/env bash
# setup-host.sh — install what the build and the host tests need (Debian 12).
# Idempotent: does nothing when every package is already installed.
set -euo pipefail

pkgs=(build-essential pkg-config cbindgen valgrind util-linux
      librdmacm1 librdmacm-dev libibverbs1 libibverbs-dev ibverbs-providers rdma-core python3-docutils mandoc man-db)
# make deb (debhelper, lintian) and its guest test (tests.d/80-package.sh:
# a libfabric binary whose librdmacm must resolve to the installed one), and
# the third-party clients of abi-tests/vm/clients.sh (tests.d/80, 81).
pkgs+=(debhelper lintian libfabric-bin ucx-utils qperf fio)
# Their sources rebuilt against our headers (abi-tests/srccompat/clients.sh).
pkgs+=(dpkg-dev autoconf automake libtool zlib1g-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup-host: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || { echo "setup-host: apt-get update failed" >&2; exit 1; }
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		{ echo "setup-host: apt-get install ${missing[*]} failed" >&2; exit 1; }
fi
if ! command -v cargo >/dev/null && ! [ -x "$HOME/.cargo/bin/cargo" ]; then
	echo "setup-host: no Rust toolchain (cargo) found" >&2
	exit 1
fi
# The lint gates of `make test` (cargo fmt --check, cargo clippy).
export PATH="$HOME/.cargo/bin:$PATH"
for c in rustfmt clippy; do
	if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1; then
		echo "setup-host: installing the $c component"
		rustup component add "$c" >/dev/null 2>&1 || { echo "setup-host: cannot install $c (rustup component add $c)" >&2; exit 1; }
	fi
done
# The fuzz targets (fuzz/run.sh; `make test` runs each for a few seconds):
# the nightly toolchain and cargo-fuzz. A failure here stops the setup: the
# fuzz step must not be skipped silently.
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
	echo "setup-host: installing the nightly toolchain (cargo-fuzz needs it)"
	rustup toolchain install nightly --profile minimal >/dev/null 2>&1 ||
		{ echo "setup-host: cannot install the nightly toolchain (rustup toolchain install nightly)" >&2; exit 1; }
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
	echo "setup-host: installing cargo-fuzz"
	cargo install --locked cargo-fuzz >/dev/null 2>&1 ||
		{ echo "setup-host: cannot install cargo-fuzz (cargo install --locked cargo-fuzz)" >&2; exit 1; }
fi
