# diffcases.sh — (sourced) shared by the differential runners: split a run's
# output into one file per case, read an expected-diffs file, and compare
# one case of ours against its reference.
#
# expected-diffs format: case | kernel (6.1, new, any) | regex our output
# must match | reason. A listed case must differ from the reference and
# match the regex; any other case must be identical. QUIET_OK=1 keeps
# identical cases quiet.

declare -A expect reason
pass=${pass:-0} fail=${fail:-0}

# split_cases FILE DIR: "case NAME:" lines start a new file DIR/NAME.
split_cases() {
	mkdir -p "$2"
	awk -v d="$2" '/^case / { n = $2; sub(/:$/, "", n); f = d "/" n } f { print > f }' "$1"
}

# load_expected FILE KERNEL
load_expected() {
	local name k exp why
	while IFS='|' read -r name k exp why; do
		name=$(echo "$name" | xargs)
		k=$(echo "$k" | xargs)
		[ -z "$name" ] || [[ $name == \#* ]] && continue
		[ "$k" = any ] || [ "$k" = "$2" ] || continue
		expect[$name]=$(echo "$exp" | sed 's/^ *//; s/ *$//')
		reason[$name]=$(echo "$why" | sed 's/^ *//')
	done <"$1"
}

# compare_case NAME REF_FILE OURS_FILE LABEL
compare_case() {
	local c=$1 ref=$2 ours=$3 label=$4
	if [ ! -s "$ours" ]; then
		echo "FAIL $c [$label]: no output (crashed?)"
		fail=$((fail + 1))
	elif [ -n "${expect[$c]:-}" ]; then
		if grep -qE "${expect[$c]}" "$ours" && ! cmp -s "$ref" "$ours"; then
			echo "ok   $c [$label] (documented difference: ${reason[$c]})"
			pass=$((pass + 1))
		else
			echo "FAIL $c [$label]: expected /${expect[$c]}/ (${reason[$c]})"
			diff "$ref" "$ours" | head -n 10
			fail=$((fail + 1))
		fi
	elif cmp -s "$ref" "$ours"; then
		[ -n "${QUIET_OK:-}" ] || echo "ok   $c [$label]"
		pass=$((pass + 1))
	else
		echo "FAIL $c [$label] differs from the reference:"
		diff "$ref" "$ours" | head -n 20
		fail=$((fail + 1))
	fi
}
