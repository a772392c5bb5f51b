# compare.awk — compare one run of ours with the reference runs, case by
# case, in one process (the soft-RoCE guest starts a process in about half a
# second, so per-case cmp/grep would take minutes there).
#
#   awk -f compare.awk -v label=MODE -v self=0|1 -v count=FILE \
#       LIST EXPECTED REF_OUT REF2_OUT OURS_OUT
#
# LIST: "NUMBER NAME TAG" lines (gai_diff --list, maybe narrowed); TAG v65
# takes REF2_OUT as reference (an empty file name or an absent file: the
# case is skipped), v44 REF_OUT. EXPECTED: expected-diffs.txt, lines
# "case | kernel | regex | reason" (kernel ignored here; see
# expected-diffs.txt): a listed case must differ from its reference
# and one of our lines must match the regex; every other case must be
# identical. self=1 (the library under test is the reference itself): listed
# cases are skipped, since the reference output of an upstream bug may be
# heap garbage. Outputs are split into blocks at lines "case NAME: ...".
# Prints FAIL lines with a short diff and "ok" lines for documented
# differences; writes "PASSED FAILED SKIPPED" to the file `count`.

function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }

# Short diff: up to 6 differing line pairs, "-" reference, "+" ours.
function shortdiff(a, b,    x, y, na, nb, i, n, shown) {
	na = split(a, x, "\n"); nb = split(b, y, "\n")
	n = na > nb ? na : nb
	for (i = 1; i <= n && shown < 6; i++) {
		if (x[i] == y[i])
			continue
		if (i <= na) print "    - " x[i]
		if (i <= nb) print "    + " y[i]
		shown++
	}
}

# Any line of the block matches the regex?
function anymatch(block, re,    l, n, i) {
	n = split(block, l, "\n")
	for (i = 1; i <= n; i++)
		if (l[i] ~ re)
			return 1
	return 0
}

FILENAME == ARGV[1] { order[++ncase] = $2; tag[$2] = $3; next }
FILENAME == ARGV[2] {
	if ($0 ~ /^[ \t]*(#|$)/)
		next
	split($0, f, "|")
	name = trim(f[1])
	want[name] = trim(f[3])
	rest = $0 # the reason: everything after the third "|"
	for (k = 1; k <= 3; k++)
		rest = substr(rest, index(rest, "|") + 1)
	why[name] = trim(rest)
	next
}
{
	src = FILENAME == ARGV[3] ? "ref" : FILENAME == ARGV[4] ? "ref2" : "ours"
	if ($0 ~ /^case /) {
		cur = $2
		sub(/:$/, "", cur)
		key = src SUBSEP cur
		if (key in out)
			key = ""; # a second block of the same name: keep the first
		else
			out[key] = $0
		next
	}
	if (key != "")
		out[key] = out[key] "\n" $0
}
END {
	for (i = 1; i <= ncase; i++) {
		c = order[i]
		r = tag[c] == "v65" && !self ? "ref2" : "ref"
		if (!((r SUBSEP c) in out) || (self && c in want)) {
			skipped++
			continue
		}
		ref = out[r, c]
		if (!(("ours" SUBSEP c) in out)) {
			printf "FAIL %s [%s vs %s]: no output (crashed?)\n", c, label, r
			failed++
			continue
		}
		ours = out["ours", c]
		if (c in want) {
			if (ours != ref && anymatch(ours, want[c])) {
				printf "ok   %s [%s vs %s] (documented difference: %s)\n", c, label, r, why[c]
				passed++
			} else {
				printf "FAIL %s [%s vs %s]: expected /%s/ (%s)\n", c, label, r, want[c], why[c]
				shortdiff(ref, ours)
				failed++
			}
		} else if (ours == ref) {
			passed++
		} else {
			printf "FAIL %s [%s vs %s] differs from the reference:\n", c, label, r
			shortdiff(ref, ours)
			failed++
		}
	}
	print passed + 0, failed + 0, skipped + 0 > count
}
