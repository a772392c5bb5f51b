#!/usr/bin/env bash
# run-tests.sh — every test of rdmacm-rs, in order (but for the VM boots,
# which run beside the host steps after the package check); `make test` runs it.
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
# account NAME RC START: add a finished step's counts (from its log,
# build/logs/NAME.log) to the totals and print its result line; false when
# the step failed.
account() {
	local name=$1 rc=$2 start=$3 log=build/logs/$1.log
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
	return $((rc != 0))
}
step() {
	local name=$1; shift
	echo "=== $name: $*"
	local start=$SECONDS
	"$@" 2>&1 | tee "build/logs/$name.log"
	account "$name" "${PIPESTATUS[0]}" "$start"
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
# The VM boots (most of the run's time; the guest is mostly waiting on its
# programs) run in the background from here, beside the host steps that
# follow: those run at the lowest priority so that the guest keeps its CPU,
# and the newer kernel's boot waits for them (its clients test runs what
# clients-src built). The VM's output is shown after the host steps.
vmpid=
if [ "${RDMACM_SKIP_VM:-0}" != 1 ]; then
	if step vm-prepare bash abi-tests/vm/vm-test.sh --prepare; then
		rm -f build/logs/host-steps.done
		set -m # the boots in a process group of their own, stopped with us
		VM_WAIT_FILE=$PWD/build/logs/host-steps.done bash abi-tests/vm/vm-test.sh --boot >build/logs/vm.log 2>&1 &
		vmpid=$! vmstart=$SECONDS
		set +m
		trap '[ -n "$vmpid" ] && kill -TERM -- "-$vmpid" 2>/dev/null' EXIT
		trap 'exit 130' INT TERM
		echo "=== vm: started (bash abi-tests/vm/vm-test.sh --boot); its output follows the host steps"
		renice -n 19 -p $$ >/dev/null 2>&1 || true
	fi
fi
step preload bash abi-tests/preload-check.sh
step rsocket-examples bash abi-tests/srccompat/rsocket-examples.sh
step clients-src bash abi-tests/srccompat/clients.sh
if [ -x abi-tests/gai/run-diff.sh ] || [ -f abi-tests/gai/run-diff.sh ]; then
	step gai-diff bash abi-tests/gai/run-diff.sh
	step gai-leak bash abi-tests/gai/leak.sh
fi
step fault-host bash abi-tests/fault/host.sh
step fuzz-smoke bash fuzz/run.sh "${FUZZ_SMOKE_SECONDS:-5}"
if [ -n "$vmpid" ]; then
	touch build/logs/host-steps.done
	echo "=== vm: bash abi-tests/vm/vm-test.sh --boot (started $((SECONDS - vmstart)) s ago)"
	tail -n +1 --pid="$vmpid" -f build/logs/vm.log
	wait "$vmpid"
	rc=$?
	vmpid=
	account vm "$rc" "$vmstart"
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
