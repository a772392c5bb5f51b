#!/usr/bin/env bash
# run-diff.sh — differential test of rdma_getaddrinfo/rdma_freeaddrinfo:
# gai_diff's corpus with the reference library and with ours, compared case
# by case.
#
#   run-diff.sh [CASE...]            on this machine in a fake sysfs (no RDMA
#                                    needed), plus the no-device run
#   run-diff.sh --native [CASE...]   on a machine with a real RDMA device (the
#                                    VM suite, inside the soft-RoCE guest)
#
# Libraries:
#   reference  Debian's librdmacm (v44), as the dynamic linker finds it
#   ref2       upstream v65 for the cases tagged v65 (RAI_SA/RAI_DNS, which
#              v44 ignores): $RDMACM_REF2 (a librdmacm.so.1, preloaded), with
#              $RDMACM_REF2_LIBDIR added to LD_LIBRARY_PATH if set; default
#              .cache/upstream/v65-rdmacm/librdmacm.so.1 (abi-tests/upstream/
#              build-v65.sh). Without it the v65 cases are skipped, unless
#              RDMACM_REQUIRE_REF2=1 makes that a failure.
#   ours       $RDMACM_UNDER_TEST, default build/librdmacm.so.1, run in two
#              modes: "libpath" (LD_LIBRARY_PATH=its dir, package replacement)
#              and "preload" (LD_PRELOAD=it). If it does not exist, Debian's
#              library is compared with itself to validate the harness.
#
# Every run is checked to have bound the intended library (gai_diff --log).
# Checks, each counted per case and mode of ours:
#   diff      our output = the reference's, except for the cases listed in
#             expected-diffs.txt, whose output must differ and match the
#             expectation written there (reasoned from upstream's source);
#             compared by compare.awk; plus rdma_freeaddrinfo(NULL) returns
#   errno     a successful call leaves errno as it was (upstream
#             clobbers it, we must not; the references' count is
#             printed for information)
#   no-device (fake sysfs only) with no RDMA device every case but all-NULL
#             is -1/ENODEV (all-NULL is -1/EINVAL), in every library (a
#             reference that disagrees means the harness is broken)
# Failing cases are printed with a short diff; the last line is
# "N passed, M failed[, K skipped]"; exit status 1 on any failure.
# Skipped: v65 cases without a v65 library; in the Debian-vs-Debian harness
# check, the cases of expected-diffs.txt (upstream garbage is not stable).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
GAI=abi-tests/gai
mode=fake
if [ "${1:-}" = --native ]; then
	mode=native
	shift
fi
sel=("$@")
B=build/abi-tests
PROG=$REPO/$B/gai_diff

die() { echo "run-diff: $*"; echo "0 passed, 1 failed"; exit 1; }
if [ "$mode" = fake ]; then
	bash "$GAI/build.sh" || die "cannot build gai_diff"
else
	# The guest sees the host's root read-only: gai_diff is built by the host.
	[ -x "$PROG" ] || die "$B/gai_diff missing (run abi-tests/gai/build.sh on the host)"
fi

# wrap [--no-device] [VAR=VALUE...] CMD...: run in the fake sysfs (or natively),
# with LD_LIBRARY_PATH/LD_PRELOAD only as given.
wrap() {
	local nodev=()
	if [ "$1" = --no-device ]; then nodev=(--no-device); shift; fi
	if [ "$mode" = fake ]; then
		bash "$GAI/fakesysfs.sh" "${nodev[@]}" env -u LD_LIBRARY_PATH -u LD_PRELOAD "$@"
	else
		env -u LD_LIBRARY_PATH -u LD_PRELOAD "$@"
	fi
}

DEB=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD "$PROG" --which) || die "cannot locate Debian's librdmacm"
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
self=0
if [ ! -e "$OURS" ]; then
	echo "NOTE: no $OURS (run make): comparing Debian's library with itself (harness check only)"
	OURS=$DEB self=1
elif [ "$(realpath "$OURS")" = "$DEB" ]; then
	echo "NOTE: the library under test is Debian's: harness check only"
	self=1
fi
REF2=${RDMACM_REF2:-$REPO/.cache/upstream/v65-rdmacm/librdmacm.so.1}
if ((self)); then
	REF2= # Debian against itself: every case has Debian's output as reference
elif [ ! -e "$REF2" ]; then
	[ "${RDMACM_REQUIRE_REF2:-0}" = 1 ] && die "no v65 reference at $REF2 (run abi-tests/upstream/build-v65.sh)"
	echo "NOTE: no v65 reference ($REF2): cases tagged v65 are skipped"
	REF2=
fi

# Environments of the library configurations (command prefixes for wrap).
declare -A ENV
ENV[ref]=""
ENV[ref2]="LD_PRELOAD=$REF2${RDMACM_REF2_LIBDIR:+ LD_LIBRARY_PATH=$RDMACM_REF2_LIBDIR}"
ENV[libpath]="LD_LIBRARY_PATH=$(dirname "$OURS")"
ENV[preload]="LD_PRELOAD=$OURS"
declare -A WANT=([ref]=$DEB [ref2]=${REF2:+$(realpath "$REF2")} [libpath]=$(realpath "$OURS") [preload]=$(realpath "$OURS"))
CONFIGS=(ref libpath preload)
[ -n "$REF2" ] && CONFIGS=(ref ref2 libpath preload)
MODES=(libpath preload)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skipped=0

# The corpus (number, name, reference tag), optionally narrowed to sel.
"$PROG" --list >"$tmp/list" || die "gai_diff --list failed"
if ((${#sel[@]})); then
	for s in "${sel[@]}"; do
		awk -v s="$s" '$1 == s || $2 == s' "$tmp/list"
	done >"$tmp/list.sel"
	[ -s "$tmp/list.sel" ] || die "no such case: ${sel[*]}"
	mv "$tmp/list.sel" "$tmp/list"
fi
mapfile -t NAMES < <(awk '{ print $2 }' "$tmp/list")
ARGS=("${sel[@]}") # no arguments: every case, then rdma_freeaddrinfo(NULL)

# Each configuration: run the corpus, check which library it really bound.
for c in "${CONFIGS[@]}"; do
	# shellcheck disable=SC2086 # ENV values are word lists by design
	wrap ${ENV[$c]} "$PROG" --log "$tmp/$c.log" "${ARGS[@]}" >"$tmp/$c.out" 2>"$tmp/$c.err"
	got=$(sed -n 's/^library //p' "$tmp/$c.log" 2>/dev/null)
	[ "$got" = "${WANT[$c]}" ] || die "$c run bound '$got', expected ${WANT[$c]} ($(head -c 300 "$tmp/$c.err"))"
	grep -h "slow case" "$tmp/$c.err" | sed "s/^/NOTE [$c] /"
done
echo "libraries: reference $DEB${REF2:+, v65 $(realpath "$REF2")}, ours $(realpath "$OURS") ($mode sysfs)"

# 1. Output diff, case by case (one awk per mode).
REF2_OUT=/dev/null
[ -n "$REF2" ] && REF2_OUT=$tmp/ref2.out
for m in "${MODES[@]}"; do
	awk -f "$GAI/compare.awk" -v label="diff $m" -v self="$self" -v count="$tmp/$m.count" \
		"$tmp/list" "$GAI/expected-diffs.txt" "$tmp/ref.out" "$REF2_OUT" "$tmp/$m.out"
	read -r p f k <"$tmp/$m.count"
	pass=$((pass + p)) fail=$((fail + f)) skipped=$((skipped + k))
	if ((${#sel[@]} == 0)); then
		if [ "$(tail -n1 "$tmp/$m.out")" = "case freeaddrinfo-null: ok" ]; then
			pass=$((pass + 1))
		else
			echo "FAIL freeaddrinfo-null [$m]: rdma_freeaddrinfo(NULL) did not return"
			fail=$((fail + 1))
		fi
	fi
done

# 2. errno untouched on success; the references only for information.
for c in "${CONFIGS[@]}"; do
	k=0 s=0
	while read -r _ n rest; do
		s=$((s + 1))
		[ "$rest" = kept ] && continue
		k=$((k + 1))
		[[ $c == ref* ]] || ((self)) || echo "FAIL $n [errno $c]: errno $rest on success (must be left alone)"
	done < <(grep "^errno " "$tmp/$c.log")
	if [[ $c == ref* ]] || ((self)); then
		echo "info $c: errno changed by $k of $s successful calls (upstream bug)"
	else
		pass=$((pass + s - k)) fail=$((fail + k))
	fi
done

# 3. No RDMA device at all (fake sysfs only).
if [ "$mode" = fake ]; then
	for n in "${NAMES[@]}"; do
		if [ "$n" = all-null ]; then echo "case $n: ret=-1 errno=EINVAL"; else echo "case $n: ret=-1 errno=ENODEV"; fi
	done >"$tmp/nodev.want"
	((${#sel[@]})) || echo "case freeaddrinfo-null: ok" >>"$tmp/nodev.want"
	for c in "${CONFIGS[@]}"; do
		# shellcheck disable=SC2086
		wrap --no-device ${ENV[$c]} "$PROG" "${ARGS[@]}" >"$tmp/nodev-$c.out" 2>&1
		if [[ $c == ref* ]]; then
			# The harness itself: the reference must say ENODEV too.
			if cmp -s "$tmp/nodev.want" "$tmp/nodev-$c.out"; then
				echo "ok   no-device [$c]: reference answers -1/ENODEV throughout"
			else
				echo "FAIL no-device [$c]: the reference does not answer -1/ENODEV (fake sysfs broken?)"
				diff "$tmp/nodev.want" "$tmp/nodev-$c.out" | head -n 10
				fail=$((fail + 1))
			fi
			continue
		fi
		# One verdict per case: its "case" line must be the wanted one.
		awk -v m="$c" -v cnt="$tmp/nodev-$c.count" '
			NR == FNR { want[$2] = $0; order[++n] = $2; next }
			/^case / && !($2 in got) { got[$2] = $0 }
			END {
				for (i = 1; i <= n; i++) {
					k = order[i]
					if (got[k] == want[k]) { p++; continue }
					f++
					name = k; sub(/:$/, "", name)
					printf "FAIL %s [no-device %s]: want \"%s\", got \"%s\"\n", name, m, want[k], got[k]
				}
				print p + 0, f + 0 > cnt
			}' "$tmp/nodev.want" "$tmp/nodev-$c.out"
		read -r p f <"$tmp/nodev-$c.count"
		pass=$((pass + p)) fail=$((fail + f))
	done
fi

# 4. A gai.conf that changes glibc's order (fake sysfs, whole corpus; a
#    private mount namespace shows the file to these runs only): the
#    passive lookups with no node, which ours answers itself only under
#    glibc's built-in tables (src/addr/wildcard.rs), must follow glibc.
#    "label ::/0 1" gives :: and ::1 one label, so :: comes first.
gaiconf=""
if [ "$mode" = fake ] && ((${#sel[@]} == 0)) && ((!self)); then
	if [ -e /etc/gai.conf ] && unshare -m true 2>/dev/null; then
		printf '# run-diff.sh: the wildcard lookups put :: first\nlabel ::/0 1\n' >"$tmp/gai.conf"
		nonode=(f-passive-nonode f-passive-nonode-v6 f-passive-nonode-ud passive-xrc-tcp passive-rc-udp src-hint-passive-nonode)
		for c in ref libpath preload; do
			# shellcheck disable=SC2086
			unshare -m bash -c 'mount --bind "$1" /etc/gai.conf && shift && exec "$@"' _ "$tmp/gai.conf" \
				bash "$GAI/fakesysfs.sh" env -u LD_LIBRARY_PATH -u LD_PRELOAD ${ENV[$c]} "$PROG" "${nonode[@]}" \
				>"$tmp/gaiconf-$c.out" 2>&1
		done
		# The file must have changed glibc's answer, or the check proves nothing.
		default_ref=$(wrap ${ENV[ref]} "$PROG" f-passive-nonode 2>&1)
		if [ "$default_ref" = "$(grep -A3 '^case f-passive-nonode:' "$tmp/gaiconf-ref.out" | head -n "$(wc -l <<<"$default_ref")")" ]; then
			echo "FAIL gai.conf: the reference's wildcard answer did not change under 'label ::/0 1' (check broken)"
			fail=$((fail + 1))
		else
			for m in libpath preload; do
				if cmp -s "$tmp/gaiconf-ref.out" "$tmp/gaiconf-$m.out"; then
					echo "ok   gai.conf [$m]: the ${#nonode[@]} wildcard lookups follow glibc's configured order (:: first)"
					pass=$((pass + 1))
				else
					echo "FAIL gai.conf [$m]: the wildcard lookups differ from the reference's under a gai.conf"
					diff "$tmp/gaiconf-ref.out" "$tmp/gaiconf-$m.out" | head -n 10
					fail=$((fail + 1))
				fi
			done
		fi
		gaiconf=" + gai.conf"
	else
		echo "NOTE: no /etc/gai.conf or no private mount namespace here: the gai.conf check is skipped"
		skipped=$((skipped + 1))
	fi
fi

checks="diff + errno$gaiconf"
[ "$mode" = fake ] && checks="diff + errno + no-device$gaiconf"
echo "rdma_getaddrinfo corpus: ${#NAMES[@]} cases x ${#MODES[@]} modes ($checks, $mode sysfs)$( ((self)) && echo ", HARNESS CHECK: Debian vs Debian")"
if ((skipped)); then
	echo "$pass passed, $fail failed, $skipped skipped"
else
	echo "$pass passed, $fail failed"
fi
((fail == 0))
