#!/usr/bin/env bash
# run.sh — build and run the fuzz targets (cargo-fuzz, nightly toolchain).
#
#   fuzz/run.sh [--jobs N] SECONDS [TARGET...]
#
# Runs each TARGET (default: every target of fuzz/Cargo.toml) for SECONDS
# (libFuzzer -max_total_time), in two lanes side by side on a machine with
# two cores or more (FUZZ_LANES=1: one after the other), or one after the
# other with N libFuzzer jobs each (--jobs N; default 1 job). The corpus a
# run grows lives in build/fuzz/corpus/TARGET (not committed); the seeds in
# fuzz/seeds/TARGET are read, never written. A
# crash leaves its input in fuzz/artifacts/TARGET/ and fails the target.
# `gai` runs in the fake sysfs of abi-tests/gai/fakesysfs.sh (one rxe
# device, needs root for its mount namespace), so that rdma_getaddrinfo
# gets past the device check.
#
# Prints per target "TARGET: R runs in S s, C crashes" (R from libFuzzer's
# stats, cov and corpus size too), logs in build/fuzz/logs/, and ends with
# "N passed, M failed" (one per target). `make test` runs it for a few
# seconds per target (abi-tests/run-tests.sh, step fuzz-smoke).
#
# Needs the nightly toolchain and cargo-fuzz; abi-tests/setup-host.sh
# installs both. Without them this script fails (exit 1) and says which is
# missing: it never skips silently.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
jobs=1
if [ "${1:-}" = --jobs ]; then
	jobs=$2
	shift 2
fi
secs=${1:?usage: fuzz/run.sh [--jobs N] SECONDS [TARGET...]}
shift
fail_setup() { echo "fuzz: $*"; echo "0 passed, 1 failed"; exit 1; }
rustup run nightly rustc --version >/dev/null 2>&1 ||
	fail_setup "no nightly toolchain (abi-tests/setup-host.sh installs it: rustup toolchain install nightly)"
cargo +nightly fuzz --version >/dev/null 2>&1 ||
	fail_setup "cargo-fuzz is not installed (abi-tests/setup-host.sh installs it: cargo install cargo-fuzz)"
targets=("$@")
if ((${#targets[@]} == 0)); then
	mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^rdmacm-fuzz$')
fi
mkdir -p build/fuzz/logs
echo "fuzz: building ${#targets[@]} targets ($(rustup run nightly rustc --version))"
(cd fuzz && cargo +nightly fuzz build) >build/fuzz/logs/build.log 2>&1 ||
	fail_setup "cargo fuzz build failed (see build/fuzz/logs/build.log)"
# one TARGET: run it; prints its line(s); fails when it found a crash.
one() {
	local t=$1 corpus log wrap par start rc took runs last crashes
	corpus=build/fuzz/corpus/$t
	log=build/fuzz/logs/$t.log
	mkdir -p "$corpus" "fuzz/seeds/$t"
	wrap=()
	[ "$t" = gai ] && wrap=(bash ../abi-tests/gai/fakesysfs.sh)
	par=()
	((jobs > 1)) && par=(-j "$jobs")
	: >"$log.start"
	start=$SECONDS
	# -timeout: one input may take 10 s (a hang is a failure too);
	# -rss_limit_mb: libFuzzer's default; no new seeds are written into
	# fuzz/seeds (it is listed second: only the first corpus dir grows).
	(cd fuzz && "${wrap[@]}" cargo +nightly fuzz run "$t" "../$corpus" "seeds/$t" "${par[@]}" -- \
		-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1) >"$log" 2>&1
	rc=$?
	took=$((SECONDS - start))
	runs=$(grep -hoE '^stat::number_of_executed_units: *[0-9]+' "$log" fuzz/fuzz-*.log 2>/dev/null |
		grep -oE '[0-9]+$' | awk '{ s += $1 } END { print s + 0 }')
	if ((runs == 0)); then
		runs=$(grep -oE '^Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' | awk '{ s += $1 } END { print s + 0 }')
	fi
	last=$(grep -E '#[0-9]+.*(DONE|pulse|NEW|REDUCE).*cov:' "$log" | tail -n1 |
		sed -E 's/.*(cov: [0-9]+ ft: [0-9]+ corp: [0-9]+\/[0-9]+[a-zA-Z]*).*/\1/')
	crashes=$(find "fuzz/artifacts/$t" -type f -newer "$log.start" 2>/dev/null | wc -l)
	rm -f fuzz/fuzz-*.log "$log.start"
	if ((rc == 0)) && ((crashes == 0)); then
		echo "$t: $runs runs in $took s, 0 crashes ($last)"
	else
		echo "FAIL $t: exit $rc after $took s, $runs runs; see $log and fuzz/artifacts/$t/"
		grep -m3 -E 'panicked|ERROR: libFuzzer|SUMMARY' "$log" | sed 's/^/  /'
		return 1
	fi
}

# The targets in FUZZ_LANES lanes side by side (default: as many as the
# machine has cores, at most 2; one with --jobs, which is parallel
# itself), each target's report kept in a file and printed in order.
lanes=${FUZZ_LANES:-$(( $(nproc) > 1 ? 2 : 1 ))}
((jobs > 1)) && lanes=1
rm -f build/fuzz/logs/*.report build/fuzz/logs/*.rc
for ((l = 0; l < lanes; l++)); do
	(
		for ((i = l; i < ${#targets[@]}; i += lanes)); do
			t=${targets[i]}
			one "$t" >"build/fuzz/logs/$t.report" 2>&1
			echo $? >"build/fuzz/logs/$t.rc"
		done
	) &
done
wait
pass=0 fail=0
for t in "${targets[@]}"; do
	cat "build/fuzz/logs/$t.report"
	if [ "$(cat "build/fuzz/logs/$t.rc" 2>/dev/null)" = 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
((fail == 0))
