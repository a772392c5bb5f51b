#!/usr/bin/env bash
# readme.sh REPORT README — (make bench) write the figures of a `make bench`
# report (its whole output) that carry a target into README between the
# lines `<!-- make bench: begin -->` and `<!-- make bench: end -->`: each
# table's header (its line naming the "ratio" column) and its rows that end in a
# verdict ("met" or "MISS", with the target where the table names it). The
# whole report goes to docs/bench-latest.txt beside it.
set -euo pipefail
report=$1 readme=$2
grep -q '^<!-- make bench: begin -->$' "$readme" && grep -q '^<!-- make bench: end -->$' "$readme" || {
	echo "readme.sh: no make bench markers in $readme" >&2
	exit 1
}
kernel=$(grep -o 'kernel [0-9][^ ,)]*' "$report" | head -n1 || true)
digest=$(awk '
	/^$/ { header = ""; next }
	/^[ (]/ { next }
	/(^| )(met|MISS)( |$)/ {
		if (header != shown) { if (out) print ""; print header; shown = header; out = 1 }
		print
		next
	}
	/(^| )ratio( |$)/ { header = $0 }' "$report")
block=$(mktemp)
{
	echo '<!-- make bench: begin -->'
	echo "Every figure with a target in the latest \`make bench\` ($(date -u +%Y-%m-%d)${kernel:+, $kernel under qemu TCG}; written by it,"
	echo "with the whole report in [docs/bench-latest.txt](docs/bench-latest.txt)):"
	echo
	echo '```'
	printf '%s\n' "$digest"
	echo '```'
	echo '<!-- make bench: end -->'
} > "$block"
awk -v block="$block" '
	$0 == "<!-- make bench: begin -->" { while ((getline l < block) > 0) print l; skip = 1; next }
	$0 == "<!-- make bench: end -->" { skip = 0; next }
	!skip { print }' "$readme" > "$readme.new"
mv "$readme.new" "$readme"
rm -f "$block"
cp "$report" "$(dirname "$readme")/docs/bench-latest.txt"
echo "make bench: targets written to $readme, the report to docs/bench-latest.txt"
