#!/usr/bin/env bash
# install-check.sh — `make install` into a DESTDIR with custom PREFIX,
# LIBDIR and INCLUDEDIR: files, symlinks, pkg-config fields, and a program
# built against the installed headers and pkg-config flags.
set -uo pipefail
cd "$(dirname "$0")/.."
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi; }
make --no-print-directory -s install DESTDIR="$d" PREFIX=/opt/rdmacm LIBDIR=/opt/rdmacm/lib64 \
	INCLUDEDIR=/opt/rdmacm/inc >/dev/null || { echo "make install failed"; echo "0 passed, 1 failed"; exit 1; }
R=$d/opt/rdmacm
so=$(basename "$(readlink -f build/librdmacm.so.1)")
check "library file" "[ -f $R/lib64/$so ]"
check "soname link" "[ \"\$(readlink $R/lib64/librdmacm.so.1)\" = $so ]"
check "dev link" "[ \"\$(readlink $R/lib64/librdmacm.so)\" = librdmacm.so.1 ]"
check "headers" "[ -f $R/inc/rdma/rdma_cma.h ] && [ -f $R/inc/rdma/rdma_verbs.h ] && [ -f $R/inc/infiniband/ib.h ]"
check "preload library" "[ -f $R/lib64/rsocket/librspreload.so ] && [ \"\$(readlink $R/lib64/rsocket/librspreload.so.1)\" = librspreload.so ] && [ \"\$(readlink $R/lib64/rsocket/librspreload.so.1.0.0)\" = librspreload.so ]"
check "rsocket.h" "[ -f $R/inc/rdma/rsocket.h ]"
check "rdma_cma_abi.h" "[ -f $R/inc/rdma/rdma_cma_abi.h ] && cmp -s include/rdma/rdma_cma_abi.h $R/inc/rdma/rdma_cma_abi.h"
pc=$R/lib64/pkgconfig/librdmacm.pc
check "pkg-config file" "[ -f $pc ]"
check "pkg-config version" "[ \"\$(PKG_CONFIG_PATH=$R/lib64/pkgconfig pkg-config --modversion librdmacm)\" = 1.${so#librdmacm.so.1.} ]"
check "pkg-config libs" "PKG_CONFIG_PATH=$R/lib64/pkgconfig pkg-config --libs librdmacm | grep -q -- '-L/opt/rdmacm/lib64 -lrdmacm'"
check "Requires.private" "grep -q '^Requires.private: libibverbs' $pc"
cat >"$d/t.c" <<'C'
#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>
#include <rdma/rdma_verbs.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	/* Never true at run time: makes the inline helpers and the SRQ
	 * functions part of the program, so that they must compile and link. */
	if (argc > 5) {
		struct ibv_wc wc;
		rdma_post_send(NULL, NULL, argv, 1, rdma_reg_msgs(NULL, argv, 1), 0);
		rdma_get_recv_comp(NULL, &wc);
		rdma_destroy_srq(NULL);
	}
	puts(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED));
	return 0;
}
C
check "build against the installed files" \
	"cc -I$R/inc -o $d/t $d/t.c -L$R/lib64 -lrdmacm -libverbs && [ \"\$(LD_LIBRARY_PATH=$R/lib64 $d/t)\" = RDMA_CM_EVENT_ESTABLISHED ]"
check "binary links the installed soname" "readelf -d $d/t | grep -q 'NEEDED.*librdmacm.so.1'"
echo "$pass passed, $fail failed"
((fail == 0))
