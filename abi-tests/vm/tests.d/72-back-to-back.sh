#!/usr/bin/env bash
# 72-back-to-back.sh — (guest side) the program pairs `make demo` runs
# (rping, ucmatose, udaddy, cmtime, rdma_server/client, mckey, perftest -R;
# abi-tests/vm/programs.sh), one right after another as the demo runs
# them, B2B_ROUNDS times (default 1) with each library, the libraries
# alternating round by round: Debian's v44 and ours (LD_LIBRARY_PATH).
# A failure of one pair is shown with the end of its log. Passes when
# ours fails no more pairs than v44. Only on request (B2B_ALL=1 or
# SUITE_ALL_KERNELS=1, any kernel): in make test the suite's own parts
# already run the same sequence in both boots, the bed self-check with
# Debian's library and then the compatibility matrix with ours (every
# pair, one right after another, each through LD_PRELOAD and
# LD_LIBRARY_PATH), where every pair must pass.
# Ends with "N passed, M failed, K skipped".
# suite-timeout: 900
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
source "$(dirname "$0")/../programs.sh"
work_dir back-to-back keep
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
case $OURS in /*) ;; *) OURS=$REPO/$OURS ;; esac
[ -e "$OURS" ] || { skp "our library $OURS is not built"; finish; }
[ -n "${B2B_ALL:-}${SUITE_ALL_KERNELS:-}" ] || { skp "back to back: on request only (B2B_ALL=1; make test: the self-check and the matrix run the same pairs back to back)"; finish; }
mkdir -p "$tmp/ours" && ln -sf "$(readlink -f "$OURS")" "$tmp/ours/librdmacm.so.1"
prepare_symbols "$SYSTEM_RDMACM" "$tmp/ours/librdmacm.so.1"
ROUNDS=${B2B_ROUNDS:-1}
declare -A fails=([system]=0 [ours]=0) runs=([system]=0 [ours]=0) again=([system]=0 [ours]=0)
declare -A which=([system]="" [ours]="")
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in system "libpath:$tmp/ours"; do
		lib=${mode%%:*}
		[ "$lib" = libpath ] && lib=ours
		t0=$SECONDS
		line=""
		for spec in "${PAIRS[@]}"; do
			name=${spec%%|*}
			log="$tmp/r$r-$lib-${name//[^a-zA-Z0-9_-]/_}.log"
			: >"$log"
			res=$(run_pair "$spec" "$mode" "$log")
			case $res in
			passed) line+=" ." ;;
			skipped*) line+=" s" ;;
			*)
				line+=" F"
				fails[$lib]=$((fails[$lib] + 1))
				which[$lib]+="; r$r $name: $res"
				echo "#   round $r, $lib: $name $res"
				tail -n 6 "$log" | sed 's/^/#     /'
				;;
			esac
			[[ $res == skipped* ]] || runs[$lib]=$((runs[$lib] + 1))
			# A pair the bed ran once more for a program's own race
			# (programs.sh: rping's exit race, perftest's listen race, a pair
			# during which the bed lost packets).
			if grep -q '^### once more:' "$log"; then
				again[$lib]=$((again[$lib] + 1))
				echo "#   round $r, $lib: $name ran once more: $(grep '^### once more:' "$log" | head -n1 | cut -c16-90)"
			fi
		done
		echo "# round $r, $lib:$line ($((SECONDS - t0)) s)"
	done
done
echo "# pairs failed: v44 ${fails[system]} of ${runs[system]}, ours ${fails[ours]} of ${runs[ours]}" \
	"(run once more for a program's own race: v44 ${again[system]}, ours ${again[ours]})"
if ((runs[ours] == 0)); then
	bad "no pair ran with our library"
elif ((fails[ours] <= fails[system])); then
	ok "back to back, $ROUNDS rounds: ours failed ${fails[ours]} of ${runs[ours]} pairs, v44 ${fails[system]} of ${runs[system]}"
else
	# The failed pairs are named in the line itself: a CI summary shows
	# only the FAIL lines, not the log above.
	bad "back to back, $ROUNDS rounds: ours failed ${fails[ours]} of ${runs[ours]} pairs, v44 only ${fails[system]} of ${runs[system]} (ours${which[ours]}${which[system]:+; v44${which[system]}})"
fi
finish
