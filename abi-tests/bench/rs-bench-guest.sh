#!/usr/bin/env bash
# rs-bench-guest.sh — (guest side of make bench) rsockets over the guest's
# soft-RoCE device:
#  1. rdma-core's rstream, server and client on the same library: ours–ours
#     and upstream–upstream (Debian's v44), interleaved round by round
#     (ROUNDS, default 7), plus rstream -T s (the kernel's TCP to the same
#     local address, for context): latency = 64-byte ping-pong (-S 64 -C 1 -I 5000,
#     usec per transfer as rstream prints it), bandwidth = 1 MiB transfers
#     (-S 1048576 -C 40, Gb/s from the usec per transfer); medians, and the
#     ratio ours / upstream of each round (the two ran back to back, the
#     first of them alternating between rounds, so a drift of the guest's
#     speed between rounds cancels, and so does an advantage of one slot
#     over the other): their median and range, and a 95 % interval for
#     that median from resampling the rounds (a bootstrap). Both with
#     rstream's default (non-blocking calls retried in a loop), blocking
#     calls (-T b) and rpoll before each non-blocking call (-T a).
#  2. user-space instructions per step (callgrind, two run lengths
#     subtracted; build/bench/rs_bench): an rrecv that finds nothing, a
#     64-byte round trip (blocking, non-blocking, rpoll before each call),
#     a 64 KiB send; and per call (rsend, rrecv, rpoll, callees
#     included) in the non-blocking and rpoll-first round trips, net of
#     the calls that found nothing (rs_bench counts them; each costs what
#     the eagain or idlepoll step's call does).
#  3. wall time inside each call (build/bench/rs_calltime.so preloaded
#     into both rstream processes: the time-stamp counter around each
#     rsend, rrecv and rpoll), 64-byte ping-pong, non-blocking and -T a,
#     ROUNDS interleaved rounds, medians over rounds of the two sides'
#     averages. With part 2 it prices the instructions of a call in
#     context (after the other calls and the kernel's work of a round
#     trip), which a loop of one call cannot. The same runs also time each
#     rsend's doorbell (its write to the kernel, where soft-RoCE does the
#     message's work): a run's latency follows that time closely, so ours -
#     upstream with the doorbells' part taken out is printed as well (what
#     the libraries' own time adds, without the guest's run-to-run noise).
#  4. what each call touches (build/bench/rs_marks.so preloaded into the
#     rs_bench client under valgrind's lackey, rs_footprint reading the
#     trace; the client's own thread only): distinct 64-byte code and data
#     lines, and the jumps that land on another 4 KiB page, per rsend, rrecv
#     and rpoll of the non-blocking and rpoll-first 64-byte round trips;
#     the distinct code and data pages of a whole round trip; our progress
#     engine's timer pushes per round trip there and at full speed.
#     Exact and repeatable, unlike part 3's times; under qemu's emulation
#     (this guest) a jump to another page, a call to another function and a
#     return each go through the emulator's lookup of the translated code,
#     which costs tens of ns, the likely source of part 3's differences.
#  5. where a bandwidth run's time goes (build/bench/rs_bwtime.so preloaded
#     into both rstream processes of part 1's bandwidth runs, non-blocking
#     and -T a, ROUNDS interleaved rounds): per run, both processes
#     together, the time in the sends' doorbells (the writes to the kernel
#     in which soft-RoCE moves the data), in the sends besides them (the
#     copy into the send ring, posting), in the receives that returned data
#     besides their credit doorbells (the copy out of the ring, polling,
#     reposting), in the credit doorbells, in the receives that found
#     nothing (waiting), and the processes' CPU time and involuntary
#     switches; medians, the median over rounds of ours - upstream and in
#     how many rounds ours was the larger.
#  6. rpoll with a timeout: build/bench/rs_bench latwait (each non-blocking
#     rsend and rrecv after rpoll(timeout -1), so the caller sleeps in
#     poll() until the socket is ready), 64-byte round trips, both
#     libraries, ROUNDS interleaved rounds: µs per round trip, medians and
#     the median of the rounds' own ratios.
#  7. what a library's own code weighs in rstream's latency: our library
#     with build/bench/rs_delay.so preloaded in both processes, which after
#     every rrecv that returns data adds nothing, RS_DELAY_N (DELAY_N)
#     iterations of a three-instruction loop, or calls to RS_DELAY_PAGES
#     (DELAY_PAGES) functions each on a code page of its own; the three in
#     each of ROUNDS rounds: the latency each adds, per added instruction
#     and per added code page.
#  8. what else runs inside rstream's timed loop: each library's rstream
#     (non-blocking and -T a, ROUNDS rounds, the libraries' runs of a round
#     back to back, which first alternating) with the kernel's own tracer
#     (tracefs: the sched_switch event on all CPUs, and the system calls of
#     threads named rsocket-engine) recording into its ring buffer, read
#     after each run, and build/bench/rs_window.so preloaded to note the
#     loop's first and last 64-byte rsend: the CPU time the threads other
#     than the two rstream main threads (and the idle task) had inside the
#     loop, how much of it the progress engine's, how often those threads
#     were switched in, and how many system calls the engine made; per
#     second of loop, medians over rounds. Every millisecond of it is one
#     that a main thread, spinning or working on a transfer, did not have.
#     (Earlier runs used `perf record -e sched:sched_switch -a`: its
#     process put this guest's kernel into soft lockups in two of three
#     boots on 2026-12-03. ftrace needs no process reading while the loop
#     runs.)
#  9. what a second thread that does nothing costs on this bed: rstream's
#     latency (non-blocking and -T a) with upstream's library alone, with
#     upstream's library and build/bench/rs_sleeper.so preloaded in both
#     processes (a thread that sleeps for the life of the process: what our
#     progress engine is to a process between its looks) and with ours;
#     ROUNDS9 rounds (default twice ROUNDS, the effect being a few per
#     cent), the three runs of a round one after the other in rotating
#     order; the per-round ratios with the thread against without, and
#     ours against upstream's with the thread (medians, 95 % intervals).
# PARTS (default 123456789) picks the parts to run.
set -uo pipefail
L=$PWD/build
ROUNDS=${ROUNDS:-7}
declare -A vals
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
wait_listen() { # port
	local i
	for ((i = 0; i < 100; i++)); do
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1 " && return 0
		ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.1
	done
}
port=7800
# Extra environment for both rstream processes of a run (part 3's preload).
ONE_ENV=()
one() { # lib(ours|upstream|tcp) args -> the value of rstream's last column pair
	local env=X=1 extra=() spid out
	case $1 in ours) env=LD_LIBRARY_PATH=$L ;; tcp) extra=(-T s) ;; esac
	shift
	port=$((port + 1))
	env "$env" "${ONE_ENV[@]}" timeout 120 rstream "${extra[@]}" -p $port "$@" >/dev/null 2>&1 &
	spid=$!
	wait_listen $port
	out=$(env "$env" "${ONE_ENV[@]}" timeout 120 rstream "${extra[@]}" -s 192.0.2.1 -p $port "$@" 2>/dev/null | tail -n1)
	wait "$spid" 2>/dev/null
	echo "$out"
}
# paired "upstream values" "ours values" (one per round, in round order) ->
# "median min max lo-hi" of the per-round ratios ours / upstream (rounds
# where both ran); lo-hi: a 95 % interval for that median, by resampling
# the rounds (2 000 bootstrap samples, a fixed seed: the same values give
# the same interval). A target of 1.0 inside it means this run cannot tell
# the two libraries apart there.
paired() {
	awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " "); k = 0
		for (i = 1; i <= n; i++) if (x[i] > 0 && y[i] > 0) r[++k] = y[i] / x[i]
		if (k == 0) { print "- - - -"; exit }
		for (i = 1; i <= k; i++) q[i] = r[i]
		sort(q, k)
		srand(1); B = 2000
		for (s = 1; s <= B; s++) {
			for (i = 1; i <= k; i++) v[i] = r[int(rand() * k) + 1]
			sort(v, k)
			m[s] = v[int((k + 1) / 2)]
		}
		sort(m, B)
		printf "%.2f %.2f %.2f %.2f-%.2f", q[int((k + 1) / 2)], q[1], q[k], m[int(B * 0.025) + 1], m[int(B * 0.975)] }
		function sort(a, n,  i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }'
}
# verdict RATIO le|ge -> met or MISS against 1.0
verdict() { awk -v r="$1" -v op="$2" 'BEGIN { ok = (op == "le") ? r <= 1.0 : r >= 1.0; print (r != "-" && ok) ? "met" : "MISS" }'; }
PARTS=${PARTS:-123456789}
part() { [[ $PARTS == *$1* ]]; }
if part 1; then
# Each measurement runs the two libraries one right after the other, the
# first of them alternating from round to round (a slot's own bias, such
# as following the other library's run or coming first, cancels over the
# rounds), then TCP.
for ((r = 0; r < ROUNDS; r++)); do
	if ((r % 2)); then order="ours upstream tcp"; else order="upstream ours tcp"; fi
	for mode in nb b a; do
		m=(); [ $mode != nb ] && m=(-T $mode)
		for lib in $order; do
			lat=$(one $lib -S 64 -C 1 -I 5000 "${m[@]}" | awk '{ print $NF }')
			vals[lat.$mode.$lib]+="${lat:-0} "
		done
		for lib in $order; do
			# Gb/s from the last column (usec per transfer, two decimals):
			# rstream's own Gb/s column has two decimals, 3 % at this bed's
			# 0.35 Gb/s, too coarse for a ratio against 1.0.
			bw=$(one $lib -S 1048576 -C 40 "${m[@]}" | awk '$NF > 0 { printf "%.4f", 1048576 * 8 / ($NF * 1000) }')
			vals[bw.$mode.$lib]+="${bw:-0} "
		done
	done
done
printf '%-34s %10s %10s %8s %11s %11s %10s  %s\n' "rstream" upstream rdmacm-rs ratio "rounds" "95% (ratio)" "TCP (-T s)" target
for mode in nb b a; do
	case $mode in nb) name="non-blocking (default)" ;; b) name="blocking (-T b)" ;; a) name="rpoll (-T a)" ;; esac
	for k in lat bw; do
		u=$(med <<<"${vals[$k.$mode.upstream]}") o=$(med <<<"${vals[$k.$mode.ours]}") t=$(med <<<"${vals[$k.$mode.tcp]}")
		read -r r lo hi ci <<<"$(paired "${vals[$k.$mode.upstream]}" "${vals[$k.$mode.ours]}")"
		if [ $k = lat ]; then what="latency us" op=le; else what="bandwidth Gb/s" op=ge; fi
		printf '%-34s %10s %10s %8s %11s %11s %10s  %s\n' "$what, $name" "$u" "$o" "$r" "$lo-$hi" "$ci" "$t" \
			"$([ $op = le ] && echo "<=" || echo ">=") 1.0 $(verdict "$r" $op)"
	done
done
echo "(rstream, server and client on one library, medians of $ROUNDS interleaved rounds; ratio: median of the"
echo " rounds' own ratios ours / upstream (each round runs the two back to back, which first alternating), rounds:"
echo " their range; 95% (ratio): a 95 % interval for that median, from 2 000 resamplings of the rounds (a"
echo " target inside it is not decided by this run); latency: 64-byte ping-pong, usec per transfer; bandwidth: 1 MiB"
echo " transfers; kernel $(uname -r) under qemu TCG, soft-RoCE; TCP: rstream -T s, the kernel's TCP to the"
echo " same local address, for context)"
echo " per-round latency, non-blocking: upstream ${vals[lat.nb.upstream]}/ ours ${vals[lat.nb.ours]}"
echo " per-round bandwidth, non-blocking: upstream ${vals[bw.nb.upstream]}/ ours ${vals[bw.nb.ours]}"
fi

# 2. instructions per step
if part 2 && command -v valgrind >/dev/null && [ -x build/bench/rs_bench ]; then
	B=$PWD/build/bench/rs_bench
	# Inclusive instructions of the exported calls (rsend, rrecv, rpoll)
	# in a callgrind file, as "name=count" words.
	calls_of() {
		callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
			awk '{ gsub(",", "", $1) } $1 ~ /^[0-9]+$/ && match($0, /:(rsend|rrecv|rpoll) /) {
				n = substr($0, RSTART + 1, RLENGTH - 2); v[n] += $1 }
				END { for (n in v) printf "%s=%d ", n, v[n] }'
	}
	# One file per thread: -01 is the calling thread; the others are the
	# library's (ours: the progress engine), whose looks come by the clock
	# (every 16 ms while the application keeps calling), so that callgrind's
	# slowdown, which stretches every step, puts more of them on each step
	# than at full speed.
	# The client's calls that found nothing (rs_bench's stderr line) come
	# as the words empty_rpoll=, empty_rrecv=, empty_rsend=.
	cg() { # env step n size -> "instructions others [name=count ...]": the whole process, its threads but the first
		local f all others
		f=$(mktemp /tmp/cg.XXXXXX)
		env "$1" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$f" "$B" client 192.0.2.1 7999 "$2" "$3" "$4" >/dev/null 2>"$f.err" ||
			echo "warning: rs_bench client $2 $3 ($1) failed: its count is partial" >&2
		all=$(cat "$f"-[0-9]* 2>/dev/null | awk '/^summary:/ { s += $2 } END { print s + 0 }')
		others=$(for t in "$f"-[0-9]*; do [[ $t == *-01 ]] || cat "$t"; done 2>/dev/null | awk '/^summary:/ { s += $2 } END { print s + 0 }')
		echo "$all $others $(calls_of "$f-01") $(awk '$1 == "rs_bench" && $2 == "empty:" { printf "empty_rpoll=%d empty_rrecv=%d empty_rsend=%d", $4, $6, $8 }' "$f.err")"
		rm -f "$f" "$f.err" "$f"-[0-9]*
	}
	# per round trip: (count in b - count in a) / (n2 - n1) for one call
	per_rt() { # name "a words" "b words" n1 n2
		awk -v n="$1" -v a="$2" -v b="$3" -v n1="$4" -v n2="$5" 'BEGIN {
			split(a, x, " "); split(b, y, " "); va = vb = 0
			for (i in x) if (index(x[i], n "=") == 1) va = substr(x[i], length(n) + 2)
			for (i in y) if (index(y[i], n "=") == 1) vb = substr(y[i], length(n) + 2)
			printf "%d", (vb - va) / (n2 - n1) }'
	}
	echo
	printf '%-34s %10s %10s %8s\n' "instructions per step" upstream rdmacm-rs ratio
	declare -A ins others
	for lib in upstream ours; do
		env=X=1; [ $lib = ours ] && env=LD_LIBRARY_PATH=$L
		env "$env" "$B" server 7999 >/dev/null 2>&1 &
		spid=$!
		wait_listen 7999
		for s in "eagain 2000 6000 1" "idlepoll 2000 6000 1" "lat 300 900 64" "latnb 300 900 64" "latpoll 300 900 64" "bw 100 300 65536"; do
			read -r st n1 n2 sz <<<"$s"
			a=$(cg "$env" "$st" "$n1" "$sz") b=$(cg "$env" "$st" "$n2" "$sz")
			ins[$st.$lib]=$(((${b%% *} - ${a%% *}) / (n2 - n1)))
			read -r _ oa _ <<<"$a"
			read -r _ ob _ <<<"$b"
			others[$st.$lib]=$(((ob - oa) / (n2 - n1)))
			for c in rsend rrecv rpoll; do
				ins[$st.$c.$lib]=$(per_rt $c "$a" "$b" "$n1" "$n2")
			done
			# calls that found nothing per round trip, x 1000
			for c in empty_rpoll empty_rrecv; do
				ins[$st.$c.$lib]=$(awk -v a="$a" -v b="$b" -v n="$c" -v d="$((n2 - n1))" 'BEGIN {
					split(a, x, " "); split(b, y, " "); va = vb = 0
					for (i in x) if (index(x[i], n "=") == 1) va = substr(x[i], length(n) + 2)
					for (i in y) if (index(y[i], n "=") == 1) vb = substr(y[i], length(n) + 2)
					printf "%d", (vb - va) * 1000 / d }')
			done
		done
		# The round trips net of the calls that found nothing (they only
		# wait, and how many there are varies with timing, most under
		# callgrind): their count per round trip (the difference of the two
		# runs) times what one costs (the eagain and idlepoll steps' rrecv
		# and rpoll), taken out of the round trip and of the rrecv and rpoll
		# rows.
		for st in latnb latpoll; do
			er=$(((${ins[$st.empty_rrecv.$lib]:-0} * ${ins[eagain.rrecv.$lib]:-0}) / 1000))
			ep=$(((${ins[$st.empty_rpoll.$lib]:-0} * ${ins[idlepoll.rpoll.$lib]:-0}) / 1000))
			ins[$st.net.$lib]=$((${ins[$st.$lib]} - er - ep))
			ins[$st.rrecv.$lib]=$((${ins[$st.rrecv.$lib]} - er))
			ins[$st.rpoll.$lib]=$((${ins[$st.rpoll.$lib]} - ep))
		done
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	done
	for s in "eagain:rrecv finding nothing" "idlepoll:rpoll finding nothing (timeout 0)" "lat:64-byte round trip, blocking" "latnb:64-byte round trip, non-blocking" \
		"latpoll:64-byte round trip, rpoll first" "bw:64 KiB rsend (receiver reads)"; do
		st=${s%%:*}
		printf '%-34s %10s %10s %8s\n' "${s#*:}" "${ins[$st.upstream]}" "${ins[$st.ours]}" \
			"$(ratio "${ins[$st.ours]}" "${ins[$st.upstream]}")"
	done
	for s in "latnb:non-blocking" "latpoll:rpoll first"; do
		st=${s%%:*}
		printf '%-34s %10s %10s %8s\n' "  ${s#*:}, net of empty calls" "${ins[$st.net.upstream]}" "${ins[$st.net.ours]}" \
			"$(ratio "${ins[$st.net.ours]}" "${ins[$st.net.upstream]}")"
	done
	for s in "latnb:non-blocking" "latpoll:rpoll first"; do
		st=${s%%:*}
		for c in rsend rrecv rpoll; do
			[ "${ins[$st.$c.upstream]:-0}" -gt 0 ] || continue
			printf '%-34s %10s %10s %8s\n' "  $c per round trip, ${s#*:}" "${ins[$st.$c.upstream]}" "${ins[$st.$c.ours]}" \
				"$(ratio "${ins[$st.$c.ours]}" "${ins[$st.$c.upstream]}")"
		done
	done
	echo "(client side, user space, callgrind, the difference of two run lengths; the server runs the same library;"
	echo " a call's row counts its callees too; a step's row counts every thread of the process: of ours, the progress"
	echo " engine's share per step is ${others[latnb.ours]} in the non-blocking round trip and ${others[bw.ours]} in the 64 KiB rsend:"
	echo " its looks are timed by the clock, so they fall on more steps the more callgrind slows the program down;"
	echo " upstream's threads but the first: ${others[latnb.upstream]} and ${others[bw.upstream]}; a round trip's calls that"
	echo " found nothing (an rrecv with EAGAIN, an rpoll returning 0) only wait, and how many come varies with timing:"
	echo " per round trip, non-blocking ${ins[latnb.empty_rrecv.upstream]:-0}/1000 and ${ins[latnb.empty_rrecv.ours]:-0}/1000 rrecv (upstream/ours), rpoll first"
	echo " ${ins[latpoll.empty_rpoll.upstream]:-0}/1000 and ${ins[latpoll.empty_rpoll.ours]:-0}/1000 rpoll; the \"net\" rows, and the per-call rrecv and rpoll rows,"
	echo " leave them out at the cost of the eagain and idlepoll steps' call)"
fi

# 3. wall time inside each call
T=$PWD/build/bench/rs_calltime.so
if part 3 && [ -f "$T" ]; then
	out=$(mktemp /tmp/calltime.XXXXXX)
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2)); then order="ours upstream"; else order="upstream ours"; fi
		for mode in nb a; do
			m=(); [ $mode != nb ] && m=(-T $mode)
			for lib in $order; do
				ONE_ENV=(LD_PRELOAD="$T" RS_CALLTIME_OUT="$out" RS_CALLTIME_TAG="$r $lib $mode")
				v=$(one $lib -S 64 -C 1 -I 5000 "${m[@]}" | awk '{ print $NF }')
				echo "$r $lib $mode $v" >> "$out.lat"
			done
		done
	done
	ONE_ENV=()
	# median over rounds of the mean of the two sides: lib mode kind -> ns
	ct() {
		awk -v l="$1" -v m="$2" -v k="$3" '$2 == l && $3 == m { for (i = 4; i < NF; i += 3) if ($i == k && $(i + 2) > 0) { s[$1] += $(i + 1); c[$1]++ } }
			END { for (r in s) print s[r] / c[r] }' "$out" | med
	}
	echo
	printf '%-34s %10s %10s %8s\n' "wall ns per call, 64-byte ping-pong" upstream rdmacm-rs "ours-up"
	for row in "nb send:rsend, non-blocking" "nb recv_data:rrecv with data, non-blocking" \
		"nb recv_none:rrecv finding nothing, non-blocking" "a poll_ready:rpoll with an event, -T a" \
		"a recv_data:rrecv with data, -T a" "a send:rsend, -T a"; do
		key=${row%%:*}
		u=$(ct upstream ${key% *} ${key#* }) o=$(ct ours ${key% *} ${key#* })
		printf '%-34s %10.0f %10.0f %8.0f\n' "${row#*:}" "${u:-0}" "${o:-0}" "$(awk -v o="${o:-0}" -v u="${u:-0}" 'BEGIN { print o - u }')"
	done
	echo "(rstream -S 64 -C 1 -I 5000, both processes with build/bench/rs_calltime.so preloaded: time-stamp counter"
	echo " around each call, calibrated against CLOCK_MONOTONIC over the process; medians over $ROUNDS rounds of the"
	echo " mean of server and client; an rsend includes its doorbell's system call, in which soft-RoCE does most of"
	echo " the message's protocol work, the receiving side's included)"
	# A run's latency against its doorbells' time: the least-squares line
	# over every run of a mode (both libraries), and each round's difference
	# ours - upstream with the doorbells' part (slope x time) taken out.
	adjusted() { # mode
		awk -v m="$1" -v lat="$out.lat" '
			FILENAME == lat { if ($3 == m && $4 > 0) L[$1 " " $2] = $4; next }
			$3 == m { for (i = 4; i < NF; i += 3) if ($i == "doorbell" && $(i + 2) > 0) { D[$1 " " $2] += $(i + 1) / 1000; C[$1 " " $2]++ } }
			END {
				for (k in L) if (C[k]) { x = D[k] / C[k]; y = L[k]; n++; sx += x; sy += y; sxx += x * x; sxy += x * y; syy += y * y }
				if (n < 3 || n * sxx == sx * sx || n * syy == sy * sy) exit
				b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
				printf "fit %.2f %.2f\n", b, (n * sxy - sx * sy) / sqrt((n * sxx - sx * sx) * (n * syy - sy * sy))
				for (k in L) if (C[k] && k ~ / ours$/) {
					r = k; sub(/ ours$/, "", r); u = r " upstream"
					if (u in L && C[u]) printf "d %.3f\nu %.3f\n", (L[k] - b * D[k] / C[k]) - (L[u] - b * D[u] / C[u]), L[u]
				}
			}' "$out.lat" "$out"
	}
	echo
	printf '%-34s %10s %10s %8s %12s\n' "latency net of the doorbells" "ours-up us" rounds ratio "slope corr"
	for mode in nb a; do
		a=$(adjusted $mode)
		fit=$(echo "$a" | awk '$1 == "fit" { print $2, $3 }')
		[ -n "$fit" ] || continue
		d=$(echo "$a" | awk '$1 == "d" { print $2 }' | tr '\n' ' ')
		u=$(echo "$a" | awk '$1 == "u" { print $2 }' | med)
		dm=$(echo "$d" | med)
		printf '%-34s %10.2f %10s %8s %12s\n' "64-byte ping-pong, $([ $mode = nb ] && echo non-blocking || echo "-T a")" "$dm" \
			"$(echo "$d" | tr ' ' '\n' | grep . | sort -g | sed -n '1p;$p' | tr '\n' ' ' | awk '{ printf "%.1f..%.1f", $1, $2 }')" \
			"$(awk -v d="$dm" -v u="$u" 'BEGIN { if (u > 0) printf "%.2f", (u + d) / u; else print "-" }')" "$fit"
	done
	echo "(the same runs: a run's latency (usec per transfer) follows its doorbells' mean time (usec per rsend, both"
	echo " sides) closely, so the guest's run-to-run variance is mostly the kernel's soft-RoCE work; fitted over every run"
	echo " of the mode, latency = a + slope x doorbell (corr: the correlation); ours-up: median over rounds of"
	echo " (ours - slope x its doorbell) - (upstream - slope x its doorbell), usec per transfer, and its range; ratio:"
	echo " (upstream's median latency + that) / upstream's median latency, what the libraries' own time adds)"
	rm -f "$out" "$out.lat"
fi

# 4. code and memory each call touches
M=$PWD/build/bench/rs_marks.so F=$PWD/build/bench/rs_footprint B=$PWD/build/bench/rs_bench PU=$PWD/build/bench/rs_pushes.so
if part 4 && [ -f "$M" ] && [ -x "$F" ] && [ -x "$B" ] && command -v valgrind >/dev/null; then
	out=$(mktemp -d /tmp/footprint.XXXXXX)
	for lib in upstream ours; do
		env=X=1; [ $lib = ours ] && env=LD_LIBRARY_PATH=$L
		env "$env" "$B" server 7998 >/dev/null 2>&1 &
		spid=$!
		wait_listen 7998
		for st in latnb latpoll; do
			env "$env" LD_PRELOAD="$M" valgrind --tool=lackey --trace-mem=yes --trace-sched=yes --log-fd=9 \
				"$B" client 192.0.2.1 7998 $st 300 64 9>&1 >/dev/null 2>/dev/null | "$F" >"$out/$lib.$st"
		done
		# ours: the same runs again with rs_pushes.so instead, which counts
		# the progress engine's timer pushes (paced by the clock, so by
		# lackey's slowdown too)
		[ $lib = ours ] && [ -f "$PU" ] && for st in latnb latpoll; do
			env "$env" LD_PRELOAD="$PU" RS_PUSHES_OUT="$out/pushes.$st" valgrind --tool=lackey --trace-mem=yes \
				--log-fd=9 "$B" client 192.0.2.1 7998 $st 300 64 9>/dev/null >/dev/null 2>&1
		done
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	done
	fp() { # lib step kind -> "code/data/cross-page" (means per call)
		awk -v k="$3" '$1 == k { printf "%.0f/%.0f/%.0f", $3, $4, $8 }' "$out/$1.$2"
	}
	# per round trip: the sum over the kinds that did something (not the
	# calls that found nothing, which only wait) of calls x mean, / 300
	rt() { # lib step
		awk '$1 != "window" && $1 !~ /_none$/ { c += $2 * $3; d += $2 * $4; x += $2 * $8 } END { if (NR) printf "%.0f/%.0f/%.0f", c / 300, d / 300, x / 300 }' "$out/$1.$2"
	}
	echo
	printf '%-40s %16s %16s\n' "touched per call (code/data/cross-page)" upstream rdmacm-rs
	for row in "latnb send:rsend, non-blocking" "latnb recv_data:rrecv with data, non-blocking" \
		"latnb recv_none:rrecv finding nothing" "latpoll poll_ready:rpoll with an event, rpoll first" \
		"latpoll recv_data:rrecv with data, rpoll first" "latpoll send:rsend, rpoll first"; do
		key=${row%%:*}
		printf '%-40s %16s %16s\n' "${row#*:}" "$(fp upstream $key)" "$(fp ours $key)"
	done
	printf '%-40s %16s %16s\n' "round trip, non-blocking" "$(rt upstream latnb)" "$(rt ours latnb)"
	printf '%-40s %16s %16s\n' "round trip, rpoll first" "$(rt upstream latpoll)" "$(rt ours latpoll)"
	win() { # lib step -> "code pages/data pages" of a whole round trip
		awk '$1 == "window" { printf "%.1f/%.1f", $5, $6 }' "$out/$1.$2"
	}
	printf '%-40s %16s %16s\n' "pages per round trip (code/data)" "" ""
	printf '%-40s %16s %16s\n' "  whole thread, non-blocking" "$(win upstream latnb)" "$(win ours latnb)"
	printf '%-40s %16s %16s\n' "  whole thread, rpoll first" "$(win upstream latpoll)" "$(win ours latpoll)"
	# pushes per rsend from rs_pushes' lines in a file (every process's)
	push_rate() { awk '$1 == "rs_pushes:" { s += $3; p += $5 } END { if (s > 0) printf "%.4f", p / s; else print "-" }' "$1" 2>/dev/null || echo -; }
	printf '%-40s %16s %16s\n' "timer pushes per rsend, under lackey" "" "$(push_rate "$out/pushes.latnb")/$(push_rate "$out/pushes.latpoll")"
	# the same at full speed, in an rstream ping-pong (both processes)
	if [ -f "$PU" ]; then
		ONE_ENV=(LD_PRELOAD="$PU" RS_PUSHES_OUT="$out/pushes.full")
		one ours -S 64 -C 1 -I 5000 >/dev/null
		ONE_ENV=()
	fi
	printf '%-40s %16s %16s\n' "  at full speed (rstream, non-blocking)" "" "$(push_rate "$out/pushes.full")"
	echo "(rs_bench client, 300 64-byte round trips, under valgrind --tool=lackey with build/bench/rs_marks.so: per call,"
	echo " the distinct 64-byte code lines, data lines and jumps to another 4 KiB page the client's thread made inside"
	echo " it, averaged over the calls (a round trip: its calls but those that found nothing); pages per round trip:"
	echo " the distinct 4 KiB code and data pages the thread touched from the start of one rsend to the next, the"
	echo " program's own and the calls that found nothing included; the server runs the same library; timer pushes:"
	echo " our progress engine's timer pushed forward by the calls (timerfd_settime, counted by build/bench/rs_pushes.so"
	echo " in a second run of each, non-blocking/rpoll first), paced by the clock: under lackey's slowdown they fall on"
	echo " most round trips, at full speed on few (rstream -S 64 -C 1 -I 5000, both processes), so the rows above count"
	echo " a push's code on more round trips of ours than a program running at full speed would)"
	rm -rf "$out"
fi

# 5. where a bandwidth run's time goes
W=$PWD/build/bench/rs_bwtime.so
if part 5 && [ -f "$W" ]; then
	out=$(mktemp /tmp/bwtime.XXXXXX)
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2)); then order="ours upstream"; else order="upstream ours"; fi
		for mode in nb a; do
			m=(); [ $mode != nb ] && m=(-T $mode)
			for lib in $order; do
				ONE_ENV=(LD_PRELOAD="$W" RS_BWTIME_OUT="$out" RS_BWTIME_TAG="$r $lib $mode")
				v=$(one $lib -S 1048576 -C 40 "${m[@]}" | awk '$NF > 0 { printf "%.4f", 1048576 * 8 / ($NF * 1000) }')
				echo "$r $lib $mode bw $v" >> "$out.bw"
			done
		done
	done
	ONE_ENV=()
	# per run (round, library, mode): the two processes' sums of each row
	rows=$(awk '
		{ key = $1 " " $2 " " $3; for (i = 4; i < NF; i++) v[$i] = $(i + 1)
		  d[key] += v["data_ms"] / 2; db[key] += v["w_send"]; so[key] += v["send_ok"] + v["send_again"] - v["w_send"]
		  rd[key] += v["recv_data"] - v["w_recv"]; cr[key] += v["w_recv"]; rn[key] += v["recv_none"]
		  u[key] += v["utime"]; s[key] += v["stime"]; iv[key] += v["nivcsw"]; n[key]++ }
		END { for (k in d) if (n[k] == 2) print k, d[k], db[k], so[k], rd[k], cr[k], rn[k], u[k], s[k], iv[k] }' "$out")
	# lines "round lib mode ..." on stdin -> "ours upstream" of column c, one
	# line per round that has both
	pairs() { # mode column
		awk -v m=$1 -v c=$2 '$3 == m && $c != "" { x[$1 " " $2] = $c }
			END { for (k in x) if (k ~ / ours$/) { r = k; sub(/ ours$/, "", r); if ((r " upstream") in x) print x[k], x[r " upstream"] } }'
	}
	# a table row from such pairs: medians, the median of diff (an awk
	# expression of o and u) in its format, in how many rounds ours was the
	# larger
	row() { # label format diff diff-format
		local p=$(cat)
		printf '%-44s %9s %9s %9s %7s\n' "  $1" \
			"$(echo "$p" | awk '{ print $2 }' | med | awk -v f="$2" '{ printf f, $1 }')" \
			"$(echo "$p" | awk '{ print $1 }' | med | awk -v f="$2" '{ printf f, $1 }')" \
			"$(echo "$p" | awk "{ o = \$1; u = \$2; print $3 }" | med | awk -v f="$4" '{ printf f, $1 }')" \
			"$(echo "$p" | awk '$1 > $2 { a++ } END { printf "%d/%d", a, NR }')"
	}
	echo
	printf '%-44s %9s %9s %9s %7s\n' "bandwidth run, ms per run (both processes)" upstream rdmacm-rs "ours-up" "ours>up"
	for mode in nb a; do
		echo "$([ $mode = nb ] && echo "non-blocking (default)" || echo "rpoll (-T a)"):"
		c=4
		for label in "data phase (a process's)" "sends: their doorbells" "sends: the rest (copy in, post)" \
			"receives with data: copy out, poll, repost" "receives: credit doorbells" "receives finding nothing (waiting)" \
			"CPU time, user" "CPU time, system" "involuntary context switches"; do
			echo "$rows" | pairs $mode $c | row "$label" "%.0f" "o - u" "%+.0f"
			c=$((c + 1))
		done
		pairs $mode 5 < "$out.bw" | row "bandwidth Gb/s (ratio: median of rounds)" "%.4f" "o / u" "%.3fx"
	done
	echo "(rstream -S 1048576 -C 40, both processes with build/bench/rs_bwtime.so preloaded, $ROUNDS interleaved rounds;"
	echo " a run's row: the sum over its two processes (the data phase: their mean); medians over rounds, ours-up: the"
	echo " median over rounds of the difference, ours>up: the rounds where ours was the larger (for the bandwidth: the"
	echo " faster); a process's data phase runs from its first 1 MiB call to its exit; a send's or receive's write(2) is"
	echo " libibverbs' doorbell, in which the kernel's soft-RoCE does the work; with -T a, upstream posts its credit updates"
	echo " from rpoll, outside the rows)"
	rm -f "$out" "$out.bw"
fi

# 6. rpoll with a timeout before each call
if part 6 && [ -x build/bench/rs_bench ]; then
	B=$PWD/build/bench/rs_bench
	declare -A lw
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2)); then order="ours upstream"; else order="upstream ours"; fi
		for lib in $order; do
			env=X=1; [ $lib = ours ] && env=LD_LIBRARY_PATH=$L
			port=$((port + 1))
			env "$env" timeout 120 "$B" server $port >/dev/null 2>&1 &
			spid=$!
			wait_listen $port
			v=$(env "$env" timeout 120 "$B" client 192.0.2.1 $port latwait 2000 64 2>/dev/null | awk '{ print $NF }')
			kill "$spid" 2>/dev/null
			wait "$spid" 2>/dev/null
			lw[$lib]+="${v:-0} "
		done
	done
	echo
	printf '%-34s %10s %10s %8s %11s %11s  %s\n' "rpoll(timeout -1) first" upstream rdmacm-rs ratio "rounds" "95% (ratio)" target
	u=$(med <<<"${lw[upstream]}") o=$(med <<<"${lw[ours]}")
	read -r r lo hi ci <<<"$(paired "${lw[upstream]}" "${lw[ours]}")"
	printf '%-34s %10s %10s %8s %11s %11s  %s\n' "latency us, 64-byte ping-pong" "$u" "$o" "$r" "$lo-$hi" "$ci" \
		"<= 1.0 $(verdict "$r" le)"
	echo "(build/bench/rs_bench latwait 2000 64: each rsend and rrecv, non-blocking, after rpoll(POLLOUT or POLLIN,"
	echo " timeout -1), as a program that sleeps in poll() (or runs under the preload) makes them; $ROUNDS interleaved"
	echo " rounds, medians; ratio: median of the rounds' own ratios ours / upstream, rounds: their range; 95% (ratio):"
	echo " as in part 1)"
	echo " per-round: upstream ${lw[upstream]}/ ours ${lw[ours]}"
fi

# 7. the weight of user-space code on the latency's path
D=$PWD/build/bench/rs_delay.so
if part 7 && [ -f "$D" ]; then
	N=${DELAY_N:-10000} P=${DELAY_PAGES:-32}
	declare -A dl
	for ((r = 0; r < ROUNDS; r++)); do
		# the three runs of a round in a rotating order
		case $((r % 3)) in 0) order="0 n p" ;; 1) order="n p 0" ;; *) order="p 0 n" ;; esac
		for k in $order; do
			case $k in 0) ONE_ENV=(LD_PRELOAD="$D") ;; n) ONE_ENV=(LD_PRELOAD="$D" RS_DELAY_N=$N) ;; p) ONE_ENV=(LD_PRELOAD="$D" RS_DELAY_PAGES=$P) ;; esac
			v=$(one ours -S 64 -C 1 -I 5000 | awk '{ print $NF }')
			dl[$k]+="${v:-0} "
		done
	done
	ONE_ENV=()
	# the median over rounds of the difference to the round's plain run
	diff_med() { awk -v a="${dl[0]}" -v b="$1" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) if (x[i] > 0 && y[i] > 0) printf "%.2f ", y[i] - x[i] }' | med; }
	per() { awk -v d="$1" -v n="$2" 'BEGIN { if (d == "") print "-"; else printf "%.2f", d * 1000 / n }'; }
	dn=$(diff_med "${dl[n]}") dp=$(diff_med "${dl[p]}")
	echo
	printf '%-44s %10s %10s %12s %10s\n' "rrecv with data made longer (ours)" "latency us" "+ us" "added" "ns each"
	printf '%-44s %10s %10s %12s %10s\n' "nothing added" "$(med <<<"${dl[0]}")" "" "" ""
	printf '%-44s %10s %10s %12s %10s\n' "a loop of $((3 * N)) instructions" "$(med <<<"${dl[n]}")" "${dn:--}" "$((3 * N)) instr." "$(per "$dn" $((3 * N)))"
	printf '%-44s %10s %10s %12s %10s\n' "calls to $P functions, a code page each" "$(med <<<"${dl[p]}")" "${dp:--}" "$P pages" "$(per "$dp" "$P")"
	echo "(rstream -S 64 -C 1 -I 5000 on our library, both processes with build/bench/rs_delay.so preloaded: after"
	echo " each rrecv that returns data, nothing, RS_DELAY_N=$N iterations of a three-instruction loop, or calls to"
	echo " RS_DELAY_PAGES=$P functions of two instructions, each on a 4 KiB page of its own; $ROUNDS rounds, the three"
	echo " runs of a round in rotating order; latency: medians; + us: the median over rounds of a run's difference"
	echo " to its round's plain run, usec per transfer; ns each: that over the instructions, or the pages, added to"
	echo " each transfer's path)"
	echo " per-round: +0 ${dl[0]}/ loop ${dl[n]}/ pages ${dl[p]}"
fi

# 8. other threads inside rstream's timed loop
W=$PWD/build/bench/rs_window.so
TR=/sys/kernel/tracing
if part 8 && [ -f "$W" ] && { mountpoint -q $TR || mount -t tracefs nodev $TR; } 2>/dev/null &&
	grep -qw mono $TR/trace_clock 2>/dev/null && [ -d $TR/events/raw_syscalls/sys_enter ]; then
	declare -A wcpu weng wsw wsc
	# The ring buffer: timestamps on CLOCK_MONOTONIC (rs_window.so's clock),
	# room for a run's events, the engine's system calls only (the settings
	# before are put back afterwards).
	clock0=$(sed 's/.*\[\(.*\)\].*/\1/' $TR/trace_clock) size0=$(sed "s/.*expanded: \([0-9]*\).*/\1/" $TR/buffer_size_kb) on0=$(cat $TR/tracing_on)
	echo 0 >$TR/tracing_on
	echo mono >$TR/trace_clock
	echo 16384 >$TR/buffer_size_kb
	echo 'comm == "rsocket-engine"' >$TR/events/raw_syscalls/sys_enter/filter
	echo 1 >$TR/events/raw_syscalls/sys_enter/enable
	echo 1 >$TR/events/sched/sched_switch/enable
	# window wfile -> "cpu_ms engine_ms switches_in engine_syscalls"
	# per second of the loop: the loop is where both processes' 64-byte
	# rsends overlap; "- - - -" when the buffer lost events
	window() {
		awk -v wf="$1" '
			BEGIN { a = 0; b = 0; k = 0
				while ((getline l < wf) > 0) {
					split(l, f, " ")
					if (!k++ || f[2] > a) a = f[2]
					if (k == 1 || f[3] < b) b = f[3]
				} }
			/^# entries-in-buffer\/entries-written:/ { split($3, ent, "/"); if (ent[1] != ent[2]) lost = 1 }
			/^#/ { next }
			{
				cpu = ""; t = ""
				for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) { cpu = $i; break }
				for (i++; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i; break }
				if (cpu == "" || t == "") next
				gsub(/[][]/, "", cpu); sub(/:$/, "", t); t += 0
			}
			/ sys_enter: / { if (t >= a && t <= b) sc++; next }
			/ sched_switch: .*prev_comm=/ {
				nc = $0; sub(/.*next_comm=/, "", nc); sub(/ next_pid=.*/, "", nc)
				np = $0; sub(/.*next_pid=/, "", np); sub(/ .*/, "", np)
				if (cpu in since) {
					s = since[cpu]; e = t; if (s < a) s = a; if (e > b) e = b
					if (e > s) on[comm[cpu] "/" pid[cpu]] += e - s
				}
				if (t >= a && t <= b) sw[nc "/" np]++
				since[cpu] = t; comm[cpu] = nc; pid[cpu] = np
			}
			END {
				if (b <= a || lost) { print "- - - -"; exit }
				# the two main threads: the rstream threads with the most time in the loop
				m1 = m2 = ""
				for (k in on) if (k ~ /^rstream\//) {
					if (m1 == "" || on[k] > on[m1]) { m2 = m1; m1 = k } else if (m2 == "" || on[k] > on[m2]) m2 = k
				}
				for (k in on) if (k != m1 && k != m2 && k !~ /^swapper/) { c += on[k]; if (k ~ /^rsocket-engine/) g += on[k] }
				for (k in sw) if (k != m1 && k != m2 && k !~ /^swapper/) n += sw[k]
				w = b - a
				printf "%.2f %.2f %.1f %.1f", c * 1000 / w, g * 1000 / w, n / w, sc / w }' $TR/trace
	}
	for ((r = 0; r < ROUNDS; r++)); do
		order="upstream ours"
		((r % 2)) && order="ours upstream"
		for m in nb a; do
			mm=()
			[ $m = a ] && mm=(-T a)
			for lib in $order; do
				wf=$(mktemp /tmp/rs_window.XXXXXX)
				echo >$TR/trace
				echo 1 >$TR/tracing_on
				ONE_ENV=(LD_PRELOAD="$W" RS_WINDOW_OUT="$wf")
				one $lib -S 64 -C 1 -I 5000 "${mm[@]}" >/dev/null
				ONE_ENV=()
				echo 0 >$TR/tracing_on
				read -r c g n k <<<"$(window "$wf")"
				wcpu[$lib.$m]+="${c:--} " weng[$lib.$m]+="${g:--} " wsw[$lib.$m]+="${n:--} " wsc[$lib.$m]+="${k:--} "
				rm -f "$wf"
			done
		done
	done
	echo 0 >$TR/events/sched/sched_switch/enable
	echo 0 >$TR/events/raw_syscalls/sys_enter/enable
	echo 0 >$TR/events/raw_syscalls/sys_enter/filter
	echo >$TR/trace
	echo "$clock0" >$TR/trace_clock
	echo "$size0" >$TR/buffer_size_kb
	echo "$on0" >$TR/tracing_on
	echo
	printf '%-52s %10s %10s\n' "other threads inside rstream's timed loop" upstream rdmacm-rs
	for m in nb a; do
		case $m in nb) t="non-blocking" ;; *) t="-T a" ;; esac
		printf '%-52s %10s %10s\n' "CPU ms per second of loop, $t" "$(med <<<"${wcpu[upstream.$m]}")" "$(med <<<"${wcpu[ours.$m]}")"
		printf '%-52s %10s %10s\n' "  of which the progress engine's" "-" "$(med <<<"${weng[ours.$m]}")"
		printf '%-52s %10s %10s\n' "  switches-in per second of loop" "$(med <<<"${wsw[upstream.$m]}")" "$(med <<<"${wsw[ours.$m]}")"
		printf '%-52s %10s %10s\n' "  the engine's system calls per second of loop" "-" "$(med <<<"${wsc[ours.$m]}")"
	done
	echo "(rstream -S 64 -C 1 -I 5000, server and client on one library, traced by ftrace: sched_switch on all"
	echo " CPUs and the engine threads' system calls; the loop: where both processes' 64-byte rsends overlap"
	echo " (build/bench/rs_window.so); the threads other than the two rstream main threads and the idle task:"
	echo " their CPU time inside the loop and how often they were switched in, per second of loop, medians over"
	echo " $ROUNDS rounds; a millisecond of it is one that a main thread did not have (the guest has two vCPUs"
	echo " for the two processes))"
	echo " per-round CPU ms/s: upstream nb ${wcpu[upstream.nb]}/ ours nb ${wcpu[ours.nb]}/ upstream -T a ${wcpu[upstream.a]}/ ours -T a ${wcpu[ours.a]}"
elif part 8; then
	echo "(part 8 skipped: needs $W and tracefs at $TR with the mono clock and the raw_syscalls events)"
fi

# 9. what a second thread that only sleeps costs upstream's rstream
S=$PWD/build/bench/rs_sleeper.so
if part 9 && [ -f "$S" ]; then
	ROUNDS9=${ROUNDS9:-$((ROUNDS * 2))}
	declare -A sl
	cfgs=(upstream thread ours)
	for ((r = 0; r < ROUNDS9; r++)); do
		for m in nb a; do
			a=(); [ $m = a ] && a=(-T a)
			for ((k = 0; k < 3; k++)); do
				c=${cfgs[(r + k) % 3]}; lib=$c
				# +thread: upstream's library, the sleeper preloaded.
				[ "$c" = thread ] && lib=upstream ONE_ENV=(LD_PRELOAD=$S)
				lat=$(one "$lib" -S 64 -C 1 -I 5000 "${a[@]}" | awk '{ print $NF }')
				ONE_ENV=()
				sl[$c.$m]+="${lat:-0} "
			done
		done
	done
	echo
	printf '%-34s %9s %9s %9s %10s %11s %10s %11s\n' "a second thread that only sleeps" upstream "+thread" rdmacm-rs "thread/up" "95% (ratio)" "ours/+thr" "95% (ratio)"
	for m in nb a; do
		case $m in nb) t="latency us, non-blocking (default)" ;; *) t="latency us, rpoll (-T a)" ;; esac
		read -r tm _ _ ti <<<"$(paired "${sl[upstream.$m]}" "${sl[thread.$m]}")"
		read -r om _ _ oi <<<"$(paired "${sl[thread.$m]}" "${sl[ours.$m]}")"
		printf '%-34s %9s %9s %9s %10s %11s %10s %11s\n' "$t" "$(med <<<"${sl[upstream.$m]}")" "$(med <<<"${sl[thread.$m]}")" \
			"$(med <<<"${sl[ours.$m]}")" "$tm" "$ti" "$om" "$oi"
	done
	echo "(rstream -S 64 -C 1 -I 5000, server and client on one library; +thread: upstream's library with"
	echo " build/bench/rs_sleeper.so preloaded in both processes, a thread started before main that sleeps in"
	echo " pause(2) throughout, as our progress engine does between its looks; $ROUNDS9 rounds, the three runs of a"
	echo " round one after the other in rotating order; usec per transfer, medians; thread/up: the median over"
	echo " rounds of +thread / upstream, ours/+thr: of rdmacm-rs / +thread, with 95 % intervals (bootstrap))"
	echo " per-round: upstream nb ${sl[upstream.nb]}/ +thread nb ${sl[thread.nb]}/ ours nb ${sl[ours.nb]}"
	echo " per-round: upstream -T a ${sl[upstream.a]}/ +thread -T a ${sl[thread.a]}/ ours -T a ${sl[ours.a]}"
elif part 9; then
	echo "(part 9 skipped: needs $S)"
fi
