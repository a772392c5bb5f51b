/*
 * rs_footprint.c — (make bench only) reads, on stdin, the log of
 *   valgrind --tool=lackey --trace-mem=yes --trace-sched=yes
 * of a program with rs_marks.so preloaded, and prints for each kind of call
 * (see rs_marks.c) what the calling thread touched between the call's two
 * marks, averaged over the calls:
 *   KIND CALLS CODE_LINES DATA_LINES CODE_PAGES DATA_PAGES JUMPS CROSS_PAGE
 * lines: distinct 64-byte lines; pages: distinct 4 KiB pages; jumps: the
 * instructions not at the address after the previous one (taken branches,
 * calls, returns); cross-page: those that land on another page than the
 * previous instruction's. Only thread 1's accesses count (the scheduler
 * lines of --trace-sched say which thread runs: a library thread running
 * while the caller waits in a system call is not the call's own work).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARKS 0x200000000UL
#define KINDS 5
#define SLOTS 65536 /* distinct lines or pages per call, at most: far more than a call touches */
enum { CODE_LINES, DATA_LINES, CODE_PAGES, DATA_PAGES, JUMPS, XPAGE, COUNTS };

static unsigned long seen[4][SLOTS];
static long count[COUNTS];

/* Record key k (non-zero) in set t; count it if new. */
static void add(int t, unsigned long k)
{
	unsigned long h = (k * 0x9E3779B97F4A7C15UL) >> 48;

	while (seen[t][h]) {
		if (seen[t][h] == k)
			return;
		h = (h + 1) & (SLOTS - 1);
	}
	if (count[t] >= SLOTS / 2)
		return;
	seen[t][h] = k;
	count[t]++;
}

int main(void)
{
	static const char *const names[KINDS] = { "send", "recv_data", "recv_none", "poll_ready", "poll_none" };
	double sum[KINDS][COUNTS] = { { 0 } };
	long calls[KINDS] = { 0 };
	unsigned long prev = 0, prev_size = 0;
	int inside = 0, tid = 1;
	char line[512];

	while (fgets(line, sizeof line, stdin)) {
		if (line[0] == '-') {
			char *s = strstr(line, "SCHED[");

			if (s && strstr(line, "acquired lock"))
				tid = atoi(s + 6);
			continue;
		}
		if (tid != 1)
			continue;
		char *p = line;
		while (*p == ' ')
			p++;
		char type = *p;
		if (type != 'I' && type != 'L' && type != 'S' && type != 'M')
			continue;
		p++;
		unsigned long a = strtoul(p, &p, 16), size = *p == ',' ? strtoul(p + 1, NULL, 10) : 0;
		if (type != 'I' && a >= MARKS && a < MARKS + 8192) {
			unsigned long off = a - MARKS;
			if (off < 4096) {
				inside = 1;
				memset(seen, 0, sizeof seen);
				memset(count, 0, sizeof count);
				prev = 0;
			} else if (inside) {
				unsigned long k = (off - 4096) / 64;
				if (k < KINDS) {
					calls[k]++;
					for (int c = 0; c < COUNTS; c++)
						sum[k][c] += count[c];
				}
				inside = 0;
			}
			continue;
		}
		if (!inside)
			continue;
		if (type == 'I') {
			add(CODE_LINES, (a >> 6) + 1);
			add(CODE_PAGES, (a >> 12) + 1);
			if (prev && a != prev + prev_size) {
				count[JUMPS]++;
				if (a >> 12 != prev >> 12)
					count[XPAGE]++;
			}
			prev = a;
			prev_size = size;
		} else {
			add(DATA_LINES, (a >> 6) + 1);
			add(DATA_PAGES, (a >> 12) + 1);
		}
	}
	for (int k = 0; k < KINDS; k++) {
		if (!calls[k])
			continue;
		printf("%s %ld", names[k], calls[k]);
		for (int c = 0; c < COUNTS; c++)
			printf(" %.1f", sum[k][c] / calls[k]);
		printf("\n");
	}
	return 0;
}
