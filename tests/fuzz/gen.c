// SPDX-License-Identifier: GPL-2.0
/*
 * Programs: the random source, generation from a seed, and the text form
 * that -p prints and -r reads back.
 *
 * Text form, one call a line: the call's name, its arguments in hex
 * (trailing zeros left out), and "&" when it runs asynchronously.  A line
 * "# prog N ..." or an empty line starts a new program; other lines from
 * "#" on are comments.  The fuzzer's own lines ("rprof-fuzz: ...",
 * "ORACLE: ...") are skipped and "# reach" ends the input, so a captured
 * log can be fed back as it is.  Example:
 *
 *   # prog 7 seed 0x3c1f... calls 112-131
 *   open 0 0x1
 *   set_config 0 0x9b2e41d07a11c5f3
 *   mmap 0 0 0 0 0x3 0
 *   epoll_ctl 0 0 0 0x1 &
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser: turns nearby seeds into unrelated ones */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = mix64(seed);
	if (!r->s)
		r->s = 1; /* xorshift's only fixed point */
}

uint64_t rnd(struct rng *r)
{
	uint64_t x = r->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

uint64_t rn(struct rng *r, uint64_t n)
{
	return rnd(r) % n;
}

int chance(struct rng *r, unsigned pct)
{
	return rn(r, 100) < pct;
}

uint64_t prog_seed(uint64_t seed, unsigned long index)
{
	return mix64(seed ^ mix64(index));
}

/* The weight of kind k in a program (child: in a child's sub-program). */
static unsigned weight(int k, int child)
{
	if (opt.excluded & (1ULL << k))
		return 0;
	if (child && (calls[k].flags & CF_NO_CHILD))
		return 0;
	return calls[k].weight;
}

static int pick_kind(struct rng *r, int child)
{
	static unsigned total[2];
	unsigned x;
	int k;

	if (!total[child]) {
		for (k = 0; k < ncalls; k++)
			total[child] += weight(k, child);
	}
	x = rn(r, total[child]);
	for (k = 0; k < ncalls; k++) {
		if (x < weight(k, child))
			return k;
		x -= weight(k, child);
	}
	return 0;
}

static void add_random(struct rng *r, struct prog *p, int child)
{
	struct call *c = &p->c[p->n++];
	int k = pick_kind(r, child);

	memset(c, 0, sizeof(*c));
	c->kind = k;
	calls[k].gen(r, c->a);
	c->async = !child && !(calls[k].flags & CF_NO_ASYNC) && chance(r, 12);
}

void prog_generate(struct prog *p, unsigned long index, uint64_t seed, int max_calls)
{
	struct rng r;
	int len;

	p->index = index;
	p->seed = prog_seed(seed, index);
	p->n = 0;
	rng_seed(&r, p->seed);
	len = 20 + rn(&r, 61);
	if (len > MAX_PROG)
		len = MAX_PROG;
	if (len > max_calls)
		len = max_calls;
	/* Most programs first build a working session (open, configure,
	 * map, start) so that the random part reaches the deeper paths;
	 * most others open a file first. */
	if (chance(&r, 60))
		gen_setup_prefix(&r, p, len);
	else if (chance(&r, 70))
		gen_open_first(&r, p, len);
	while (p->n < len)
		add_random(&r, p, 0);
}

void prog_generate_child(struct prog *p, uint64_t seed, int n)
{
	struct rng r;

	p->index = 0;
	p->seed = seed;
	p->n = 0;
	rng_seed(&r, seed);
	if (n > MAX_PROG)
		n = MAX_PROG;
	while (p->n < n)
		add_random(&r, p, 1);
}

void prog_print(const struct prog *p, FILE *out, int first_call)
{
	int i, j, last;

	fprintf(out, "# prog %lu seed %#llx calls %d-%d\n", p->index,
		(unsigned long long)p->seed, first_call, first_call + p->n - 1);
	for (i = 0; i < p->n; i++) {
		const struct call *c = &p->c[i];

		fputs(calls[c->kind].name, out);
		for (last = NARGS - 1; last >= 0 && !c->a[last]; last--)
			;
		for (j = 0; j <= last; j++)
			fprintf(out, " %#llx", (unsigned long long)c->a[j]);
		fputs(c->async ? " &\n" : "\n", out);
	}
	fflush(out);
}

/*
 * Reads the next program from `in`; returns 1 with `p` filled, 0 at the
 * end of the input, -1 on a line it cannot parse (reported).
 */
int prog_parse(FILE *in, struct prog *p, unsigned long index, int *lineno)
{
	char line[512];

	p->index = index;
	p->seed = 0;
	p->n = 0;
	for (;;) {
		long pos = ftell(in);
		char *s, *tok, *save = NULL;
		struct call c = { 0 };
		int k, j = 0;

		if (!fgets(line, sizeof(line), in))
			return p->n > 0;
		(*lineno)++;
		/* The fuzzer's own messages may be in a captured log; its
		 * reach table ends the programs. */
		if (!strncmp(line, "rprof-fuzz:", 11) || !strncmp(line, "ORACLE:", 7))
			continue;
		if (!strncmp(line, "# reach", 7))
			return p->n > 0;
		if (!strncmp(line, "# prog", 6) || line[strspn(line, " \t\r\n")] == 0) {
			unsigned long long seed;

			if (p->n > 0) {
				/* The start of the next one: read it again. */
				fseek(in, pos, SEEK_SET);
				(*lineno)--;
				return 1;
			}
			/* The program's seed chooses its event buffer size. */
			if (sscanf(line, "# prog %*u seed %llx", &seed) == 1)
				p->seed = seed;
			continue;
		}
		s = strchr(line, '#');
		if (s)
			*s = 0;
		tok = strtok_r(line, " \t\r\n", &save);
		if (!tok)
			continue;
		k = call_by_name(tok);
		if (k < 0) {
			msg("line %d: unknown call '%s'", *lineno, tok);
			return -1;
		}
		c.kind = k;
		while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
			char *end;

			if (!strcmp(tok, "&")) {
				c.async = 1;
				continue;
			}
			if (j == NARGS) {
				msg("line %d: more than %d arguments", *lineno, NARGS);
				return -1;
			}
			c.a[j++] = strtoull(tok, &end, 0);
			if (*end) {
				msg("line %d: '%s' is not a number", *lineno, tok);
				return -1;
			}
		}
		if (p->n == MAX_PROG) {
			msg("line %d: more than %d calls in one program", *lineno, MAX_PROG);
			return -1;
		}
		p->c[p->n++] = c;
	}
}
