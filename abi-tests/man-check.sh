#!/usr/bin/env bash
# man-check.sh — the manual pages (man/*.rst, man/aliases; built by
# man/build.sh into build/man). Checks:
#   - the build succeeds;
#   - every page: `mandoc -Tlint -W warning` prints nothing, lexgrog parses
#     its NAME (and the first name is the page's), `man -l` renders it with
#     nothing on stderr;
#   - every function exported in librdmacm.map has a page or an alias;
#   - every alias: its target page exists, the alias page is the one-line
#     ".so", it is not also a page of its own, the target's source names it;
#   - every SYNOPSIS is exactly one literal block (section 3: present) that
#     compiles (`cc -fsyntax-only -Werror -Wall -Iinclude`) after the
#     library's own headers, so a prototype that differs from the header's
#     is a conflicting-types error; every function it declares is exported
#     or an inline of rdma_cma.h or rdma_verbs.h (not their internal
#     rdmacm_rs_* helpers), and its prototype is the header's, parameter
#     names included (spacing aside).
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/man
work=build/man-check
rm -rf "$work"
mkdir -p "$work"
CC=${CC:-cc}

pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

if bash man/build.sh "$out"; then ok; else bad "man/build.sh"; fi

# Every page built from a source.
shopt -s nullglob
for src in man/*.rst; do
	page=${src#man/}
	page=${page%.rst}
	sec=${page##*.}
	name=${page%.*}
	f=$out/man$sec/$page
	if ! [ -f "$f" ]; then
		bad "$page: not built"
		continue
	fi
	lint=$(mandoc -Tlint -W warning "$f" 2>&1)
	if [ -z "$lint" ]; then ok; else bad "$page: mandoc -Tlint:"; printf '%s\n' "$lint" | sed 's/^/    /'; fi
	lg=$(lexgrog "$f" 2>&1)
	first=$(sed -n 's/^[^:]*: "\([^ ,]*\).*/\1/p' <<<"$lg" | head -n1)
	if [ "$first" = "$name" ]; then ok; else bad "$page: lexgrog: $lg"; fi
	err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	if [ -z "$err" ]; then ok; else bad "$page: man -l:"; printf '%s\n' "$err" | sed 's/^/    /'; fi
done

# Aliases.
declare -A alias_of=()
if [ -f man/aliases ]; then
	while read -r alias target rest || [ -n "${alias:-}" ]; do
		[ -n "$alias" ] && [[ $alias != \#* ]] || continue
		alias_of[${alias%.*}]=1
		asec=${alias##*.} tsec=${target##*.}
		problems=()
		[ -n "$target" ] && [ -z "$rest" ] || problems+=("bad line")
		[ -f "man/$target.rst" ] && [ -f "$out/man$tsec/$target" ] || problems+=("no page $target")
		[ "$(cat "$out/man$asec/$alias" 2>/dev/null)" = ".so man$tsec/$target" ] || problems+=("$out/man$asec/$alias is not '.so man$tsec/$target'")
		! [ -f "man/$alias.rst" ] || problems+=("also a page of its own (man/$alias.rst)")
		grep -qw -- "${alias%.*}" "man/$target.rst" 2>/dev/null || problems+=("man/$target.rst does not mention ${alias%.*}")
		if ((${#problems[@]} == 0)); then ok; else bad "alias $alias -> $target: ${problems[*]}"; fi
	done <man/aliases
fi

# Every exported function has a page or an alias.
for fn in $(sed -n 's/^[[:space:]]\{1,\}\([a-z_][a-z0-9_]*\);.*/\1/p' librdmacm.map); do
	srcs=(man/"$fn".*.rst)
	if ((${#srcs[@]})) || [ -n "${alias_of[$fn]:-}" ]; then ok; else bad "no page or alias for $fn (librdmacm.map)"; fi
done

# SYNOPSIS blocks: structure, names, prototypes (Python, with docutils'
# own parser); it writes one C file per page with a SYNOPSIS.
pyout=$(python3 - "$work" man/*.rst <<'PY'
import os, re, sys
import docutils.core, docutils.nodes as nodes

work, srcs = sys.argv[1], sys.argv[2:]

def strip_c(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    return '\n'.join(l for l in text.split('\n') if not l.lstrip().startswith('#'))

def norm(decl):
    d = ' '.join(decl.split())
    d = re.sub(r'\s*([(),*])\s*', r'\1', d)
    d = re.sub(r'^(static |inline |extern )+', '', d)
    return d.rstrip(';').strip()

def header_decls(path):
    """name -> normalised prototype, and the set of static inline names."""
    text = strip_c(open(path).read())
    text = re.sub(r'extern\s*"C"\s*\{', ';', text)
    decls, inlines = {}, set()
    for m in re.finditer(r'([^;{}]*?)\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*([;{])', text):
        ret, name, params, end = m.groups()
        ret = ret.strip()
        if not ret or re.search(r'[=#]', ret) or name in ('if', 'while', 'for', 'switch', 'return', 'sizeof'):
            continue
        if end == '{' and not re.match(r'static\s', ret):
            continue
        decls.setdefault(name, norm('%s %s(%s)' % (ret, name, params)))
        if re.match(r'static\s+inline\s', ret):
            inlines.add(name)
    return decls, inlines

decls, documented = {}, set()
for h in ('include/rdma/rdma_cma.h', 'include/rdma/rdma_verbs.h', 'include/rdma/rsocket.h'):
    d, inl = header_decls(h)
    for k, v in d.items():
        decls.setdefault(k, v)
    if not h.endswith('rsocket.h'):
        documented |= {n for n in inl if not n.startswith('rdmacm_rs_')}
exported = set(re.findall(r'^\s+([a-z_][a-z0-9_]*);', open('librdmacm.map').read(), re.M))

for src in srcs:
    page = os.path.basename(src)[:-4]
    sec = page.rsplit('.', 1)[1]
    try:
        doc = docutils.core.publish_doctree(open(src).read(), source_path=src,
                                            settings_overrides={'report_level': 5, 'halt_level': 5})
    except Exception as e:
        print('FAIL: %s: cannot parse: %s' % (page, e))
        continue
    syn = [s for s in doc.traverse(nodes.section) if s[0].astext().strip() == 'SYNOPSIS']
    if not syn:
        print(('FAIL: %s: no SYNOPSIS section' % page) if sec.startswith('3') else 'ok')
        continue
    blocks = list(syn[0].traverse(nodes.literal_block))
    if len(syn) != 1 or len(blocks) != 1:
        print('FAIL: %s: the SYNOPSIS must be one section holding exactly one literal block (found %d)' % (page, len(blocks)))
        continue
    block = blocks[0].astext()
    lines = open(src).read().split('\n')
    first = block.split('\n')[0].strip()
    line = next((i + 1 for i, l in enumerate(lines) if l.strip() == first), 1)
    with open(os.path.join(work, page + '.c'), 'w') as f:
        f.write('#include <rdma/rdma_cma.h>\n#include <rdma/rdma_verbs.h>\n#include <rdma/rsocket.h>\n')
        f.write('#line %d "%s"\n%s\n' % (line, src, block))
    problems = []
    for stmt in strip_c(block).split(';'):
        if '{' in stmt:
            problems.append('a definition or body in the SYNOPSIS')
            continue
        m = re.search(r'([A-Za-z_]\w*)\s*\(', stmt)
        if not m:
            continue
        name = m.group(1)
        if name not in exported and name not in documented:
            problems.append('%s is neither exported nor a documented inline' % name)
        elif norm(stmt) != decls.get(name):
            problems.append('%s: prototype differs from the header: "%s" vs "%s"' % (name, norm(stmt), decls.get(name)))
    print('ok' if not problems else 'FAIL: %s: %s' % (page, '; '.join(problems)))
PY
) || { bad "the SYNOPSIS parser failed"; pyout=; }
while IFS= read -r l; do
	case $l in
	ok) ok ;;
	FAIL:*) bad "${l#FAIL: }" ;;
	'') ;;
	*) echo "$l" ;;
	esac
done <<<"$pyout"

for c in "$work"/*.c; do
	page=$(basename "$c" .c)
	if msg=$($CC -fsyntax-only -Werror -Wall -Iinclude -x c "$c" 2>&1) && [ -z "$msg" ]; then
		ok
	else
		bad "$page: SYNOPSIS does not compile against include/:"
		printf '%s\n' "$msg" | sed 's/^/    /'
	fi
done

srcs=(man/*.rst) blocks=("$work"/*.c)
echo "man-check: ${#srcs[@]} pages, ${#alias_of[@]} aliases, ${#blocks[@]} SYNOPSIS blocks compiled"
echo "$pass passed, $fail failed"
((fail == 0))
