#!/usr/bin/env bash
# run-tests.sh — every test of rdmacm-rs, in order; `make test` runs it.
#
# Each step prints its own output; a step that ends with a line
# "N passed, M failed[, K skipped]" (or cargo's "test result:") contributes
# those counts, any other step counts as one test by its exit code. The
# last line is the sum over all steps. RDMACM_SKIP_VM=1 leaves out the VM.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p build/logs

P=0 F=0 K=0
failed_steps=()
step() {
	local name=$1; shift
	local log=build/logs/$name.log
	echo "=== $name: $*"
	local start=$SECONDS
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	local p f k line
	line=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n1)
	if [ -n "$line" ]; then
		p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<<"$line")
		f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<<"$line")
		k=$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+' || echo 0)
	elif grep -q '^test result:' "$log"; then
		p=$(grep '^test result:' "$log" | sed -E 's/.* ([0-9]+) passed.*/\1/' | awk '{ s += $1 } END { print s + 0 }')
		f=$(grep '^test result:' "$log" | sed -E 's/.* ([0-9]+) failed.*/\1/' | awk '{ s += $1 } END { print s + 0 }')
		k=0
	else
		p=$((rc == 0)) f=$((rc != 0)) k=0
	fi
	# A step that exits non-zero fails even if its counts say otherwise.
	if ((rc != 0 && f == 0)); then f=1; fi
	P=$((P + p)) F=$((F + f)) K=$((K + k))
	((rc == 0)) || failed_steps+=("$name")
	echo "=== $name: exit $rc, $p passed, $f failed, $k skipped ($((SECONDS - start)) s)"
}

# Reference library for the RDMACM_1.4/1.5 symbols (built, not a test).
bash abi-tests/upstream/build-v65.sh >/dev/null || { echo "cannot build upstream v65"; echo "0 passed, 1 failed"; exit 1; }

step build make --no-print-directory all
step fmt cargo fmt --all --check
step clippy cargo clippy --quiet --workspace --all-targets -- -D warnings
step layers python3 abi-tests/layers.py
step unit cargo test --quiet --workspace
step headers make --no-print-directory check-headers
step layout bash abi-tests/layout/check.sh
step abi-header bash abi-tests/layout/abi-check.sh
step verbs-header bash abi-tests/layout/verbs-check.sh
step symbols bash abi-tests/symbols.sh
step install bash abi-tests/install-check.sh
step man bash abi-tests/man-check.sh
step package bash abi-tests/package/check.sh
step preload bash abi-tests/preload-check.sh
step rsocket-examples bash abi-tests/srccompat/rsocket-examples.sh
step clients-src bash abi-tests/srccompat/clients.sh
if [ -x abi-tests/gai/run-diff.sh ] || [ -f abi-tests/gai/run-diff.sh ]; then
	step gai-diff bash abi-tests/gai/run-diff.sh
	step gai-leak bash abi-tests/gai/leak.sh
fi
step fault-host bash abi-tests/fault/host.sh
step fuzz-smoke bash fuzz/run.sh "${FUZZ_SMOKE_SECONDS:-5}"
if [ "${RDMACM_SKIP_VM:-0}" != 1 ]; then
	step vm bash abi-tests/vm/vm-test.sh
fi

# The failures again at the end, where a log's tail shows them: every
# FAIL or TIMEOUT line, a tests.d script that exited non-zero and a failed
# matrix cell, with its step and (for the VM) its kernel; at most 40.
if ((F)); then
	echo "=== what failed:"
	for l in build/logs/*.log; do
		awk -v step="$(basename "$l" .log)" '
			/^=== kernel / { k = $3; sub(/:$/, "", k) }
			/^ *(FAIL|TIMEOUT)/ || /^  [0-9][0-9]-[a-z0-9-]+\.sh +exit [1-9]/ || /^  [^ -].*  (failed|FAILED)/ {
				s = $0; sub(/^ +/, "", s)
				print "  " step (k != "" ? " [" k "]" : "") ": " substr(s, 1, 300)
			}' "$l"
	done | head -n 40
fi
((${#failed_steps[@]})) && echo "failed steps: ${failed_steps[*]}"
echo "$P passed, $F failed, $K skipped"
((F == 0))
