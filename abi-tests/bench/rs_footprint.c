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

static unsigned long seen[4][SLOTS], wseen[4][SLOTS];
static long count[COUNTS], wcount[4];

/* Record key k (non-zero) in set t of table tab; count it if new. */
static void add_to(unsigned long tab[4][SLOTS], long *cnt, int t, unsigned long k)
{
	unsigned long h = (k * 0x9E3779B97F4A7C15UL) >> 48;

	while (tab[t][h]) {
		if (tab[t][h] == k)
			return;
		h = (h + 1) & (SLOTS - 1);
	}
	if (cnt[t] >= SLOTS / 2)
		return;
	tab[t][h] = k;
	cnt[t]++;
}

static void add(int t, unsigned long k)
{
	add_to(seen, count, t, k);
}

static void wadd(int t, unsigned long k)
{
	add_to(wseen, wcount, t, k);
}

int main(void)
{
	static const char *const names[KINDS] = { "send", "recv_data", "recv_none", "poll_ready", "poll_none" };
	double sum[KINDS][COUNTS] = { { 0 } };
	long calls[KINDS] = { 0 };
	double wsum[4] = { 0 };
	long windows = -1; /* the first send starts the first window */
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
			if (off == 0) {
				if (++windows > 0)
					for (int c = 0; c < 4; c++)
						wsum[c] += wcount[c];
				memset(wseen, 0, sizeof wseen);
				memset(wcount, 0, sizeof wcount);
			}
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
		if (windows >= 0) {
			if (type == 'I') {
				wadd(CODE_LINES, (a >> 6) + 1);
				wadd(CODE_PAGES, (a >> 12) + 1);
			} else {
				wadd(DATA_LINES, (a >> 6) + 1);
				wadd(DATA_PAGES, (a >> 12) + 1);
			}
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
	if (windows > 0) {
		printf("window %ld", windows);
		for (int c = 0; c < 4; c++)
			printf(" %.1f", wsum[c] / windows);
		printf("\n");
	}
	return 0;
}
