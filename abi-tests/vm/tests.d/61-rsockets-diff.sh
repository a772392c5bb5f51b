#!/usr/bin/env bash
# 61-rsockets-diff.sh — (guest side) rsocket semantics side by side:
# build/abi-tests/rs_diff (abi-tests/rsdiff/rs_diff.c, built on the host by
# abi-tests/rsdiff/build.sh) runs every case with Debian's v44, upstream
# v65 and ours (LD_LIBRARY_PATH; $RDMACM_UNDER_TEST names another library
# under test). abi-tests/cm/compare.py compares case by case against v65
# (COMPARE_REF=v65: the newer reference; where v44 differs, a note says
# so): ours must print exactly what v65 prints, except the lines documented
# in abi-tests/rsdiff/expected-diffs.txt (upstream crashes, writes past the
# caller's buffer, or reports sends on a dead connection as done).
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure, 77
# when nothing could run.
# suite-kernel: 6.1
# (make test runs it in one boot; the 7.3 boot runs other scripts, so that each
# boot fits its time budget; SUITE_ALL_KERNELS=1 runs it in both)
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
B=build/abi-tests
work_dir rs-diff keep
[ -x "$B/rs_diff" ] || { bad "$B/rs_diff not built (abi-tests/rsdiff/build.sh runs on the host)"; finish; }
libdir_for() { # NAME PATH
	[ -n "$2" ] && [ -e "$2" ] || return 1
	mkdir -p "$tmp/lib-$1" && ln -sf "$(readlink -f "$2")" "$tmp/lib-$1/librdmacm.so.1" && echo "$tmp/lib-$1"
}
OURS=${RDMACM_UNDER_TEST:-$REPO/build/librdmacm.so.1}
OURS_DIR=$(libdir_for ours "$OURS") || { skp "our library $OURS is not built"; finish; }
V65_DIR=$(libdir_for v65 "$REPO/.cache/upstream/v65-rdmacm/librdmacm.so.1") ||
	{ bad "upstream v65 not built (abi-tests/upstream/build-v65.sh)"; finish; }
mapfile -t CASES < <("$B/rs_diff" --list)
split_cases() { awk -v d="$2" '/^case / { n = $2; sub(/:$/, "", n); f = d "/" n; next } f { print > f }' "$1"; }
run_lib() { # LABEL LIBDIR (empty: Debian's)
	local l=$1 env=() t0=$SECONDS
	[ -n "$2" ] && env=(LD_LIBRARY_PATH="$2")
	mkdir -p "$tmp/$l"
	timeout -k 5 500 env "${env[@]}" "$B/rs_diff" >"$tmp/$l.out" 2>"$tmp/$l.err"
	echo "exit $?" >>"$tmp/$l.err"
	split_cases "$tmp/$l.out" "$tmp/$l"
	echo "# rs_diff with $l: $((SECONDS - t0)) s"
}
# The config case once more, with upstream's configuration files present,
# in a private mount namespace (the guest's /etc is the host's, read-only,
# and stays as it is): /etc/rdma/rsocket/* for Debian's library and ours;
# v65, built in place, reads ETC/rdma/rsocket under its build directory
# (the path is in the library), so the same files go there. Each directory
# is covered by a tmpfs copy of itself plus the files. Compared as case
# "config-files".
V65_ETC=$(tr '\0' '\n' <"$V65_DIR/librdmacm.so.1" | grep -m1 '^/.*/rdma/rsocket/polling_time$')
V65_ETC=${V65_ETC%/rdma/rsocket/polling_time}
conf_run() { # LABEL LIBDIR (empty: Debian's)
	local l=$1 env=()
	[ -n "$2" ] && env=(LD_LIBRARY_PATH="$2")
	mkdir -p "$tmp/conf/$l"
	unshare -m bash -c '
		for m in /etc/rdma "$0"; do
			[ -d "$m" ] || continue
			# A copy of the directory plus rsocket/ (v65 also finds its
			# libibverbs.d there), bound over it.
			t=$(mktemp -d) && mount -t tmpfs none "$t" && cp -a "$m/." "$t/" || exit 1
			if [ "$m" = /etc/rdma ]; then r=$t/rsocket; else r=$t/rdma/rsocket; fi
			mkdir -p "$r" && cd "$r" &&
			echo 200 >sqsize_default && echo 300 >rqsize_default && echo 100 >inline_default &&
			echo 65536 >mem_default && echo 32768 >wmem_default && echo 300 >iomap_size &&
			mount --bind "$t" "$m" || exit 1
		done
		cd / && exec "$@"' "${V65_ETC:-/nonexistent}" timeout -k 5 120 env "${env[@]}" "$REPO/$B/rs_diff" config \
		>"$tmp/$l.conf.out" 2>>"$tmp/$l.err"
	split_cases "$tmp/$l.conf.out" "$tmp/conf/$l"
	mv "$tmp/conf/$l/config" "$tmp/conf/$l/config-files" 2>/dev/null
}
run_lib v44 ""
run_lib v65 "$V65_DIR"
run_lib ours "$OURS_DIR"
CONF_CASES=()
if [ -d /etc/rdma ]; then
	conf_run v44 ""
	conf_run v65 "$V65_DIR"
	conf_run ours "$OURS_DIR"
	CONF_CASES=(config-files)
else
	skp "config-files: no /etc/rdma to mount over"
fi
compare() { # DIR CASE...
	COMPARE_REF=v65 python3 abi-tests/cm/compare.py "$@" >"$tmp/compare.out" 2>&1
	grep -v '^counts ' "$tmp/compare.out"
	read -r _ p f k < <(grep '^counts ' "$tmp/compare.out" || echo "counts 0 1 0")
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + k))
}
compare "$tmp" "$KERNEL" abi-tests/rsdiff/expected-diffs.txt "${CASES[@]}"
((${#CONF_CASES[@]})) && compare "$tmp/conf" "$KERNEL" abi-tests/rsdiff/expected-diffs.txt "${CONF_CASES[@]}"
finish
