# libcost.awk — from a callgrind output file, the instructions spent in one
# shared object, its callees included, as the rest of the process called
# into it (abi-tests/bench/programs-bench-guest.sh): the sum of the
# inclusive costs of the calls whose caller is outside the object and whose
# callee is inside it. A callgrind call record names the callee's object
# (cob=) only when it is not the caller's own, for that call alone.
# usage: awk -v lib=/librdmacm.so -f libcost.awk callgrind.out
function resolve(s,   id, name) {
	if (match(s, /^\([0-9]+\)/)) {
		id = substr(s, 2, RLENGTH - 2)
		name = substr(s, RLENGTH + 1)
		sub(/^ /, "", name)
		if (name != "")
			objs[id] = name
		return objs[id]
	}
	return s
}
/^ob=/ { ob = resolve(substr($0, 4)); inlib = index(ob, lib) > 0; havecob = 0; next }
/^cob=/ { cob = resolve(substr($0, 5)); havecob = 1; next }
/^fn=/ { havecob = 0; next }
/^calls=/ { incall = 1; next }
incall {
	incall = 0
	callee = havecob ? cob : ob
	havecob = 0
	if (!inlib && index(callee, lib) > 0)
		total += $2
	next
}
END { printf "%d\n", total }
