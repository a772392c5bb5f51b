#!/usr/bin/env bash
# 25-providers.sh — (guest side) lazy libibverbs: after the first
# rdma_bind_addr to the bed's address, which provider libraries has the
# process mapped, and does the application's own ibv_get_device_list still
# find every device? build/abi-tests/providers (abi-tests/cm/providers.c)
# runs with Debian's librdmacm (upstream loads every provider at
# initialisation) and with ours (LD_PRELOAD): ours must bind to the same
# device, map only the rxe provider (every bed device is an rxe device), and
# leave the application the same device list as Debian's.
# Ends with "N passed, M failed, K skipped"; exit 0, 1 on any failure.
set -uo pipefail
source "$(dirname "$0")/../testlib.sh"
EMPTY_EXIT=0
OURS=${RDMACM_UNDER_TEST:-$PWD/build/librdmacm.so.1}
P=build/abi-tests/providers
if [ ! -x "$P" ] || [ ! -e "$OURS" ]; then
	skp "providers: $P or $OURS not built"
	finish
fi
deb=$("$P" 192.0.2.1 2>&1) || bad "providers with Debian's library: exit $? ($deb)"
ours=$(LD_PRELOAD="$OURS" "$P" 192.0.2.1 2>&1) || bad "providers with ours: exit $? ($ours)"
echo "# Debian: $(tr '\n' ' ' <<<"$deb")"
echo "# ours:   $(tr '\n' ' ' <<<"$ours")"
bind_d=$(grep '^bind ' <<<"$deb"); bind_o=$(grep '^bind ' <<<"$ours")
if [[ $bind_d == "bind rc=0 verbs="* && $bind_o == "$bind_d" ]]; then
	ok "first bind: same result as Debian's ($bind_o)"
else
	bad "first bind: Debian '$bind_d', ours '$bind_o'"
fi
all_rxe=1 devs=""
for d in /sys/class/infiniband/*; do
	devs+="${d##*/} "
	[ -e "$d/parent" ] && [ "$(cat "$d/node_type")" = "1: CA" ] || all_rxe=0
done
if ((all_rxe)); then
	prov_o=$(grep '^provider ' <<<"$ours" | sort | tr '\n' ' ')
	n_d=$(grep -c '^provider ' <<<"$deb")
	if [ "$prov_o" = "provider rxe " ]; then
		ok "ours mapped only the rxe provider (Debian's library: $n_d providers)"
	else
		bad "ours mapped: '$prov_o' (want only rxe; Debian: $n_d)"
	fi
else
	skp "provider count: not every device is an rxe device ($devs)"
fi
app_d=$(grep '^app_device' <<<"$deb" | sort); app_o=$(grep '^app_device' <<<"$ours" | sort)
if [ -n "$app_d" ] && [ "$app_o" = "$app_d" ]; then
	ok "the application's ibv_get_device_list finds the same devices ($(grep -c '^app_device ' <<<"$app_o"))"
else
	bad "application device list: Debian '$(tr '\n' ' ' <<<"$app_d")', ours '$(tr '\n' ' ' <<<"$app_o")'"
fi
finish
