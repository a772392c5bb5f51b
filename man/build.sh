#!/usr/bin/env bash
# man/build.sh — the manual pages: every man/<name>.<section>.rst becomes
# build/man/man<section>/<name>.<section> (docutils' rst2man), and every line
# "<alias>.<s> <target>.<t>" of man/aliases a one-line page ".so man<t>/<target>.<t>".
#
# The .TH line gets the version ("rdmacm-rs <Cargo.toml version>") and the
# date: $SOURCE_DATE_EPOCH if set, else the newest git commit touching man/
# (else the newest commit, else the newest source file), so that the same
# tree always gives the same pages. Two cosmetic things rst2man 0.19 emits
# are changed so that `mandoc -Tlint` is clean: the ".sp" right after ".SH"
# (or ".SS") goes, and the literal blocks' ".ft C" becomes ".ft CR" (the same
# constant-width font under a name mandoc also knows).
#
# Pages already up to date (newer than their source, same version, date and
# build script) are left alone; pages whose source is gone are removed.
# Usage: bash man/build.sh [OUTDIR]   (default build/man)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/man}

command -v rst2man >/dev/null || { echo "man/build.sh: rst2man not found (Debian: python3-docutils)" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	epoch=$SOURCE_DATE_EPOCH
else
	epoch=$(git log -1 --format=%ct -- man 2>/dev/null || true)
	[ -n "$epoch" ] || epoch=$(git log -1 --format=%ct 2>/dev/null || true)
	[ -n "$epoch" ] || epoch=$(stat -c %Y man/*.rst man/aliases 2>/dev/null | sort -n | tail -n1)
fi
date=$(date -u -d "@$epoch" +%Y-%m-%d)

mkdir -p "$out"
stamp="$out/.stamp"
want="$version $date $(cksum <man/build.sh)"
fresh=0
[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && fresh=1

declare -A made=()
status=0
shopt -s nullglob
for src in man/*.rst; do
	base=${src#man/}
	page=${base%.rst}            # rdma_create_id.3
	sec=${page##*.}
	if [ "$page" = "$sec" ] || ! [[ $sec =~ ^[1-9][a-z]*$ ]]; then
		echo "man/build.sh: $src: the name must be <name>.<section>.rst" >&2
		status=1
		continue
	fi
	dst="$out/man$sec/$page"
	made[$dst]=1
	if ((fresh)) && [ "$dst" -nt "$src" ]; then
		continue
	fi
	if ! grep -qx ":Manual section: $sec" "$src"; then
		echo "man/build.sh: $src: no ':Manual section: $sec' line" >&2
		status=1
		continue
	fi
	if grep -qE '^:(Date|Version):' "$src"; then
		echo "man/build.sh: $src: no :Date: or :Version: in sources (the build inserts them)" >&2
		status=1
		continue
	fi
	mkdir -p "$out/man$sec"
	tmp="$dst.tmp"
	if ! rst2man --halt=warning --no-generator --no-datestamp --no-source-link "$src" >"$tmp"; then
		echo "man/build.sh: rst2man failed on $src" >&2
		rm -f "$tmp"
		status=1
		continue
	fi
	# .TH "NAME" sec "" "" "group": fill in date and version.
	sed -i -E \
		-e 's/^(\.TH "[^"]*" [^ ]+) "" ""/\1 "'"$date"'" "rdmacm-rs '"$version"'"/' \
		-e '/^\.S[HS] /{n;/^\.sp$/d}' \
		-e 's/^\.ft C$/.ft CR/' "$tmp"
	if ! grep -q "^\.TH .* \"$date\" \"rdmacm-rs $version\"" "$tmp"; then
		echo "man/build.sh: $src: unexpected .TH line from rst2man: $(grep -m1 '^\.TH' "$tmp")" >&2
		rm -f "$tmp"
		status=1
		continue
	fi
	mv "$tmp" "$dst"
done

# Alias pages.
if [ -f man/aliases ]; then
	while read -r alias target rest || [ -n "${alias:-}" ]; do
		[ -n "$alias" ] && [[ $alias != \#* ]] || continue
		if [ -z "$target" ] || [ -n "$rest" ] || [[ $alias != *.* ]] || [[ $target != *.* ]]; then
			echo "man/build.sh: man/aliases: bad line: $alias $target $rest" >&2
			status=1
			continue
		fi
		asec=${alias##*.} tsec=${target##*.}
		if ! [ -f "man/$target.rst" ]; then
			echo "man/build.sh: man/aliases: $alias points at $target, which has no man/$target.rst" >&2
			status=1
			continue
		fi
		dst="$out/man$asec/$alias"
		made[$dst]=1
		line=".so man$tsec/$target"
		if ! [ -f "$dst" ] || [ "$(cat "$dst")" != "$line" ]; then
			mkdir -p "$out/man$asec"
			printf '%s\n' "$line" >"$dst"
		fi
	done <man/aliases
fi

# Pages of sources or aliases that no longer exist.
for f in "$out"/man*/*; do
	[ -n "${made[$f]:-}" ] || rm -f "$f"
done

((status == 0)) && printf '%s\n' "$want" >"$stamp"
exit $status
