// SPDX-License-Identifier: GPL-2.0
/*
 * RPROF_IOC_ADD_UNWIND in the grammar: unwind tables for real files of
 * the guest (the fuzzer's own executable most of all, so that the
 * sampling handler walks the fuzzer's stacks through whatever rules were
 * uploaded), good and bad descriptors, and tables valid, extreme, hostile
 * or placed where they cannot be read.
 *
 * The oracle is exact where the fuzzer can know the answer.  What the
 * table and the descriptor make of the call is computed from the bytes
 * handed over, with the rules of the uapi header and of the module's
 * `validate` (src/chains/unwind.rs) rewritten here.  What the session
 * makes of it (none, another file's, one without RPROF_CONFIG_UNWIND_TABLES,
 * the file's table already there, the unwind_kb budget spent) comes from a
 * model of the session that every call able to change it keeps up to
 * date, and that is believed only while nothing else can have changed the
 * session: no call ran beside another that may change it, no forked child
 * ran a sub-program, no raw ioctl hit one of those numbers; and for the
 * call judged, no worker busy and the same answer to a FLUSH (which says
 * whether the file owns the session) before and after it.  Otherwise
 * only what the table and descriptor decide is judged: an invalid table
 * never succeeds.
 *
 * Where two errors apply, any of them is accepted: the header lists the
 * errors, not the order in which the module checks for them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/rprof.h>

#include "fuzz.h"

#define HDR sizeof(struct rprof_unwind_table_header)
#define ROW sizeof(struct rprof_unwind_row)
/* The module's largest table (ROWS_MAX in src/chains/tables.rs; the
 * header does not say): past it EINVAL, or ENOSPC. */
#define ROWS_MAX (1u << 24)
/* The CFA offsets validate() takes: 8 to 1 << 24. */
#define CFA_OFF_MAX (1 << 24)
/* Per thread that runs calls: a table buffer then a PROT_NONE page. */
#define TBUF (512 * 1024)
#define TROWS_MAX ((TBUF - HDR) / ROW)

#define BIT(e) (1ULL << (e))
#define RET_OF(x) ((x) < 0 ? errno_res(errno) : RES_OK)

/* ---- the files ------------------------------------------------------------ */

#define NFILES 8
static int files[NFILES]; /* [0]: /proc/self/exe */
static int nfiles;
static int fd_pipe = -1, fd_opath = -1;
static char *tbuf[1 + NWORKER];
static uint64_t limit_bytes; /* unwind_kb of the module, in bytes */
static int have_ipc_lock;

static int open_file(const char *path)
{
	int fd;

	if (nfiles == NFILES)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		files[nfiles++] = fd;
	return fd;
}

static uint64_t read_param(const char *name, uint64_t def)
{
	char path[128];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/rprof/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return def;
	if (fscanf(f, "%llu", &v) != 1)
		v = def;
	fclose(f);
	return v;
}

/* CAP_IPC_LOCK in the effective set: no locked-memory limit (EPERM). */
static int cap_ipc_lock(void)
{
	char line[256];
	unsigned long long caps = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return !!(caps & (1ULL << 14));
}

void unwind_setup(void)
{
	static const char *const more[] = { "/bin/busybox", "/bin/true", "/bin/sh", "/sbin/init" };
	int p[2];
	DIR *d;

	open_file("/proc/self/exe");
	d = opendir("/tests/bin");
	if (d) {
		struct dirent *e;

		while ((e = readdir(d)) && nfiles < NFILES - 2) {
			char path[300];
			struct stat st;

			snprintf(path, sizeof(path), "/tests/bin/%s", e->d_name);
			if (e->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
				open_file(path);
		}
		closedir(d);
	}
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		open_file(more[i]);
	if (pipe2(p, O_CLOEXEC) == 0) {
		fd_pipe = p[0];
		close(p[1]);
	}
	fd_opath = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	for (int i = 0; i <= NWORKER; i++) {
		char *b = mmap(NULL, TBUF + page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (b == MAP_FAILED) {
			perror("rprof-fuzz: mmap");
			exit(3);
		}
		mprotect(b + TBUF, page_size, PROT_NONE);
		tbuf[i] = b;
	}
	limit_bytes = read_param("unwind_kb", 65536) * 1024;
	have_ipc_lock = cap_ipc_lock();
}

/* ---- the session model ---------------------------------------------------- */

#define NKEYS 64
static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int inflight; /* calls that may change the session, running */
	int known;    /* the model is the session (as far as it goes) */
	int forked;   /* a child ran calls: unknown for the program's rest */
	int session;  /* a session exists */
	uint32_t flags;
	uint64_t bytes; /* rows held (the unwind_kb budget) */
	int nkeys;
	struct {
		dev_t dev;
		ino_t ino;
	} keys[NKEYS]; /* files with a table */
} M;

void model_program_start(void)
{
	/* cleanup() closed every file of the program before: no session. */
	memset(&M, 0, sizeof(M));
	M.known = 1;
}

void model_unknown(void)
{
	if (in_child)
		return;
	pthread_mutex_lock(&model_lock);
	M.known = 0;
	pthread_mutex_unlock(&model_lock);
}

void model_enter(void)
{
	if (in_child)
		return;
	pthread_mutex_lock(&model_lock);
	if (++M.inflight > 1)
		M.known = 0;
	pthread_mutex_unlock(&model_lock);
}

/* A SET_CONFIG ended with `res`: a success made a new session, with
 * nothing in its store.  It alone ran: the model is the session again. */
void model_leave_config(int res, uint32_t flags)
{
	if (in_child)
		return;
	pthread_mutex_lock(&model_lock);
	if (res == RES_OK && M.inflight == 1 && !M.forked) {
		M.known = 1;
		M.session = 1;
		M.flags = flags;
		M.bytes = 0;
		M.nkeys = 0;
	}
	M.inflight--;
	pthread_mutex_unlock(&model_lock);
}

/* RESET_COOKIES ended with `res`: a success emptied the store. */
void model_leave_reset(int res)
{
	if (in_child)
		return;
	pthread_mutex_lock(&model_lock);
	if (res == RES_OK) {
		M.bytes = 0;
		M.nkeys = 0;
	}
	M.inflight--;
	pthread_mutex_unlock(&model_lock);
}

/* A forked child runs calls on the program's files from now on. */
void model_forked(void)
{
	pthread_mutex_lock(&model_lock);
	M.known = 0;
	M.forked = 1;
	pthread_mutex_unlock(&model_lock);
}

/* ---- tables --------------------------------------------------------------- */

/* Table classes (argument 3). */
enum {
	T_GARBAGE, /* valid: random rules over random ranges */
	T_EXTREME, /* valid: the bounds of every offset, one row or many */
	T_MANY,    /* valid: thousands of rows */
	T_MUTATED, /* a valid table with one to three mutations */
	T_RANDOM,  /* random bytes */
	T_HUGE,    /* a header announcing more rows than can be held */
	T_NCLASS
};

/* A valid rule, any of them (extreme: the offsets' bounds). */
static struct rprof_unwind_row rule(struct rng *r, int extreme)
{
	struct rprof_unwind_row w = { 0 };
	unsigned x = rn(r, 100);

	w.cfa = x < 35 ? RPROF_UNWIND_CFA_RSP
		: x < 55 ? RPROF_UNWIND_CFA_RBP
		: x < 65 ? RPROF_UNWIND_CFA_PLT
		: x < 75 ? RPROF_UNWIND_CFA_NONE
		: x < 85 ? RPROF_UNWIND_CFA_FP
			 : RPROF_UNWIND_CFA_STOP;
	w.rbp = RPROF_UNWIND_RBP_SAME;
	if (w.cfa != RPROF_UNWIND_CFA_RSP && w.cfa != RPROF_UNWIND_CFA_RBP && w.cfa != RPROF_UNWIND_CFA_PLT)
		return w;
	if (extreme)
		w.cfa_off = chance(r, 50) ? 8 : CFA_OFF_MAX;
	else if (chance(r, 70))
		w.cfa_off = 8 * (1 + rn(r, 8));
	else
		w.cfa_off = 8 + rn(r, CFA_OFF_MAX - 7); /* any, aligned or not */
	w.rbp = rn(r, 3);
	if (w.rbp == RPROF_UNWIND_RBP_SAVED)
		w.rbp_off = extreme ? (chance(r, 50) ? -16 : -32768)
				    : chance(r, 70) ? -16 - 8 * (int)rn(r, 4) : -8 * (2 + (int)rn(r, 4095));
	return w;
}

/* A valid table of `n` rows ending at `end` (at least n) into b; returns
 * its size. */
static size_t build_valid(struct rng *r, char *b, uint32_t n, uint32_t end, int extreme)
{
	struct rprof_unwind_table_header *h = (void *)b;
	struct rprof_unwind_row *w = (void *)(b + HDR);
	uint32_t step = end / n;

	memset(h, 0, HDR);
	h->magic = RPROF_UNWIND_MAGIC;
	h->version = RPROF_UNWIND_VERSION;
	h->nr_rows = n;
	h->end = end;
	h->build_id_len = rn(r, 21);
	for (uint32_t i = 0; i < h->build_id_len; i++)
		h->build_id[i] = rnd(r);
	/* Row i starts in [i * step, (i + 1) * step): strictly increasing,
	 * the last below end. */
	for (uint32_t i = 0; i < n; i++) {
		w[i] = rule(r, extreme);
		w[i].start = i * step + (i == 0 && chance(r, 60) ? 0 : rn(r, step));
	}
	return HDR + (size_t)n * ROW;
}

/* The offsets a table spans: the fuzzer's own text (a static binary of
 * a few MiB, file offsets from 0x1000) is covered by most. */
static uint32_t pick_end(struct rng *r, uint32_t n)
{
	uint32_t end = PICK(r, 0x100000, 0x400000, 0x1000000, 0xffffffff, 1 + rn(r, 0x1000000));

	return end < n ? n : end;
}

/* One to three of the ways a table breaks a rule; the classifier decides
 * what is left. */
static void mutate(struct rng *r, char *b, uint64_t *bytes)
{
	struct rprof_unwind_table_header *h = (void *)b;
	struct rprof_unwind_row *w = (void *)(b + HDR);
	uint32_t n = (*bytes - HDR) / ROW;

	for (unsigned k = 1 + rn(r, 3); k; k--) {
		struct rprof_unwind_row *x = &w[rn(r, n)];

		switch (rn(r, 15)) {
		case 0:
			h->magic ^= 1u << rn(r, 32);
			break;
		case 1:
			h->version = PICK(r, 0, 2, 0xffffffff);
			break;
		case 2:
			h->nr_rows = PICK(r, 0, n - 1, n + 1, 0xffffffff, ROWS_MAX + 1, ROWS_MAX);
			break;
		case 3:
			*bytes = PICK(r, 0, 1, HDR - 1, HDR, *bytes - 1, *bytes - ROW, *bytes + 1, *bytes + ROW,
				      1ULL << 40, ~0ULL);
			break;
		case 4:
			/* Unsorted, or a start twice. */
			if (n > 1) {
				uint32_t i = rn(r, n - 1);

				if (chance(r, 50)) {
					uint32_t t = w[i].start;

					w[i].start = w[i + 1].start;
					w[i + 1].start = t;
				} else {
					w[i + 1].start = w[i].start;
				}
			}
			break;
		case 5:
			/* The last row at or past the end. */
			h->end = PICK(r, w[n - 1].start, 0, rn(r, w[n - 1].start + 1));
			break;
		case 6:
			x->cfa = RPROF_UNWIND_CFA_STOP + 1 + rn(r, 250);
			break;
		case 7:
			x->rbp = RPROF_UNWIND_RBP_UNDEF + 1 + rn(r, 253);
			break;
		case 8:
			/* RBP saved at no multiple of 8, or not below the
			 * return address. */
			x->cfa = RPROF_UNWIND_CFA_RSP;
			x->cfa_off = 16;
			x->rbp = RPROF_UNWIND_RBP_SAVED;
			x->rbp_off = PICK(r, -17, -9, -12, -8, 0, 8, 32767, -32767);
			break;
		case 9:
			/* Offsets, or an RBP rule, on a row that has none. */
			x->cfa = PICK(r, RPROF_UNWIND_CFA_NONE, RPROF_UNWIND_CFA_FP, RPROF_UNWIND_CFA_STOP);
			x->cfa_off = 0;
			x->rbp_off = 0;
			x->rbp = RPROF_UNWIND_RBP_SAME;
			switch (rn(r, 3)) {
			case 0:
				x->cfa_off = PICK(r, 8, -8, 1);
				break;
			case 1:
				x->rbp_off = PICK(r, -16, 8);
				break;
			default:
				x->rbp = PICK(r, RPROF_UNWIND_RBP_SAVED, RPROF_UNWIND_RBP_UNDEF);
				break;
			}
			break;
		case 10:
			x->cfa = PICK(r, RPROF_UNWIND_CFA_RSP, RPROF_UNWIND_CFA_RBP, RPROF_UNWIND_CFA_PLT);
			x->cfa_off = PICK(r, 0, 7, -8, CFA_OFF_MAX + 1, 0x7fffffff, -0x7fffffff - 1);
			break;
		case 11:
			/* SAME or UNDEF with an offset. */
			x->cfa = RPROF_UNWIND_CFA_RBP;
			x->cfa_off = 16;
			x->rbp = PICK(r, RPROF_UNWIND_RBP_SAME, RPROF_UNWIND_RBP_UNDEF);
			x->rbp_off = PICK(r, -16, 8, -1);
			break;
		case 12:
			/* Truncated. */
			*bytes = *bytes ? rn(r, *bytes) : 0;
			break;
		default:
			/* A flipped bit anywhere in the table. */
			b[rn(r, HDR + (uint64_t)n * ROW)] ^= 1u << rn(r, 8);
			break;
		}
	}
}

/*
 * Builds the table of class `cls` from `seed` into b (TBUF bytes);
 * returns the table_bytes to hand over.
 */
static uint64_t build_table(uint64_t seed, unsigned cls, char *b)
{
	struct rng rr, *r = &rr;
	uint64_t bytes;
	uint32_t n;

	rng_seed(r, seed);
	switch (cls) {
	case T_GARBAGE:
		n = chance(r, 50) ? 1 + rn(r, 8) : 1 + rn(r, 400);
		return build_valid(r, b, n, pick_end(r, n), 0);
	case T_EXTREME:
		n = PICK(r, 1, 1, 2, 3, 1, 2, 3, TROWS_MAX);
		return build_valid(r, b, n, PICK(r, n, 0xffffffff, pick_end(r, n)), 1);
	case T_MANY:
		n = PICK(r, 1000, 10000, 25000, TROWS_MAX);
		return build_valid(r, b, n, pick_end(r, n), chance(r, 20));
	case T_MUTATED:
		n = chance(r, 70) ? 1 + rn(r, 16) : 1 + rn(r, 2000);
		bytes = build_valid(r, b, n, pick_end(r, n), chance(r, 20));
		mutate(r, b, &bytes);
		return bytes;
	case T_RANDOM:
		bytes = chance(r, 50) ? HDR + ROW * rn(r, 64) : rn(r, 4096);
		for (uint64_t i = 0; i < bytes; i++)
			b[i] = rnd(r);
		if (chance(r, 50)) {
			/* A header that holds, then junk rows. */
			struct rprof_unwind_table_header *h = (void *)b;

			h->magic = RPROF_UNWIND_MAGIC;
			h->version = RPROF_UNWIND_VERSION;
			if (bytes >= HDR)
				h->nr_rows = (bytes - HDR) / ROW;
			bytes = HDR + (uint64_t)h->nr_rows * ROW;
		}
		return bytes;
	default: {
		/* T_HUGE: only the header is there. */
		struct rprof_unwind_table_header *h = (void *)b;

		memset(h, 0, HDR);
		h->magic = RPROF_UNWIND_MAGIC;
		h->version = RPROF_UNWIND_VERSION;
		h->nr_rows = PICK(r, ROWS_MAX, 0xffffffff, limit_bytes / ROW + 1, 0x80000000);
		h->end = 0xffffffff;
		return HDR + (uint64_t)h->nr_rows * ROW;
	}
	}
}

/* ---- the classifier ------------------------------------------------------- */

/* validate_row() of src/chains/unwind.rs: one spelling per rule. */
static int row_ok(const struct rprof_unwind_row *w)
{
	switch (w->cfa) {
	case RPROF_UNWIND_CFA_RSP:
	case RPROF_UNWIND_CFA_RBP:
	case RPROF_UNWIND_CFA_PLT:
		if (w->cfa_off < 8 || w->cfa_off > CFA_OFF_MAX)
			return 0;
		if (w->rbp == RPROF_UNWIND_RBP_SAME || w->rbp == RPROF_UNWIND_RBP_UNDEF)
			return w->rbp_off == 0;
		return w->rbp == RPROF_UNWIND_RBP_SAVED && w->rbp_off <= -16 && w->rbp_off % 8 == 0;
	case RPROF_UNWIND_CFA_NONE:
	case RPROF_UNWIND_CFA_FP:
	case RPROF_UNWIND_CFA_STOP:
		return w->rbp == RPROF_UNWIND_RBP_SAME && w->cfa_off == 0 && w->rbp_off == 0;
	default:
		return 0;
	}
}

struct verdict {
	uint64_t hard;   /* errors that apply (BIT(e)); 0: the table is good */
	uint64_t rows;   /* bytes of rows the header announces */
	uint64_t index;  /* bytes of the index the module builds for them */
	int over_max;    /* more rows than the module's largest table */
};

/*
 * What the contract says of `bytes` bytes at a table of which the first
 * `readable` can be read, holding b: EINVAL for a table that breaks a
 * rule (judging what can be read), EFAULT if some of it cannot be read.
 */
/* What the module charges (and counts against unwind_kb) for rows and
 * their index of `bytes`: whole pages. */
static uint64_t charged(uint64_t bytes)
{
	if (bytes > UINT64_MAX - page_size)
		return UINT64_MAX;
	return (bytes + page_size - 1) / page_size * page_size;
}

/* a + b, or UINT64_MAX where it would wrap: the module's saturating_add()
 * (a wrapped sum let a table of 2^64 - 1 bytes pass the model's limit
 * check that the module refuses with ENOSPC). */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The bytes of the index the module builds for `nrows` rows that end at
 * `end` (index_shift and index_len in src/chains/unwind.rs): 4 a block,
 * blocks from 256 bytes up, no more blocks than rows, one entry past the
 * last block. */
static uint64_t index_bytes(uint32_t nrows, uint32_t end)
{
	unsigned shift = 8;

	while (shift < 32 && ((uint64_t)end >> shift) >= nrows)
		shift++;
	return (((uint64_t)end >> shift) + 2) * 4;
}

static struct verdict classify(const char *b, uint64_t bytes, uint64_t readable)
{
	struct verdict v = { 0 };
	const struct rprof_unwind_table_header *h = (const void *)b;
	const struct rprof_unwind_row *w = (const void *)(b + HDR);
	uint64_t n, seen;

	if (readable < bytes)
		v.hard |= BIT(EFAULT);
	if (bytes < HDR || (bytes - HDR) % ROW) {
		v.hard |= BIT(EINVAL);
		v.rows = bytes > HDR ? bytes - HDR : 0;
	} else {
		v.rows = bytes - HDR;
	}
	if (bytes < HDR || readable < HDR)
		return v;
	n = h->nr_rows;
	if (n * ROW > v.rows)
		v.rows = n * ROW;
	v.over_max = n > ROWS_MAX;
	if (n && !v.over_max)
		v.index = index_bytes(n, h->end);
	if (h->magic != RPROF_UNWIND_MAGIC || h->version != RPROF_UNWIND_VERSION || n == 0 ||
	    HDR + n * ROW != bytes || v.over_max) {
		v.hard |= BIT(EINVAL);
		return v;
	}
	/* The rows that can be read: each must hold a valid rule, start
	 * after the one before and below the end. */
	seen = (readable - HDR) / ROW;
	if (seen > n)
		seen = n;
	for (uint64_t i = 0; i < seen; i++) {
		if (!row_ok(&w[i]) || w[i].start >= h->end || (i && w[i].start <= w[i - 1].start)) {
			v.hard |= BIT(EINVAL);
			break;
		}
	}
	return v;
}

/* ---- the call --------------------------------------------------------------- */

/*
 * Arguments: f, fdsel, seed, class, tablesel, argsel.  fdsel: a real file
 * (the fuzzer's own executable most often), the device file itself, a
 * pipe, or a bad one (-1, a number not open, one past the limit, an
 * O_PATH file).  tablesel: where the table is (a good buffer most often;
 * NULL, a PROT_NONE page, a kernel or non-canonical address, half in a
 * PROT_NONE page, a read-only page).  argsel: the argument's placement
 * (place()) in the low byte, bit 8: a wrong size field.
 */
void gen_add_unwind(struct rng *r, uint64_t *a)
{
	unsigned x = rn(r, 100);

	a[0] = chance(r, 75) ? 0 : rn(r, NFD);
	a[1] = rnd(r) & ~0xffULL;
	a[1] |= x < 55 ? 0 : x < 75 ? 1 : x < 83 ? 2 : x < 87 ? 3 : 4 + rn(r, 4);
	a[2] = rnd(r);
	x = rn(r, 100);
	/* Thousands of rows cost milliseconds under TCG and KASAN: seldom. */
	a[3] = x < 37 ? T_GARBAGE : x < 49 ? T_EXTREME : x < 52 ? T_MANY : x < 85 ? T_MUTATED : x < 93 ? T_RANDOM : T_HUGE;
	a[4] = chance(r, 85) ? 0 : rn(r, 100);
	a[5] = chance(r, 90) ? 0 : rn(r, 100);
	if (chance(r, 4))
		a[5] |= 0x100;
}

/* The fuzzer's own executable, a valid table of random rules: what the
 * setup prefix uploads for sessions with tables. */
void gen_add_unwind_self(struct rng *r, uint64_t *a, uint64_t f)
{
	a[0] = f;
	a[1] = 0;
	a[2] = rnd(r);
	a[3] = T_GARBAGE;
	a[4] = 0;
	a[5] = 0;
}

/* FD_NOTREG: open, but no regular file (the device, a pipe): EINVAL. */
enum fdkind { FD_FILE, FD_NOTREG, FD_BAD, FD_UNSURE };

/* The descriptor of fdsel, and what it is. */
static int pick_fd(uint64_t sel, int own, enum fdkind *kind)
{
	*kind = FD_FILE;
	switch (sel & 0xff) {
	case 0:
		return files[0];
	case 1:
		return nfiles > 1 ? files[1 + (sel >> 8) % (nfiles - 1)] : files[0];
	case 2:
		*kind = FD_NOTREG;
		return own;
	case 3:
		*kind = FD_NOTREG;
		return fd_pipe;
	case 4:
		*kind = FD_BAD;
		return -1;
	case 5:
		/* Nothing below 1000 stays open long; checked at run time. */
		*kind = fcntl(1000, F_GETFD) < 0 ? FD_BAD : FD_UNSURE;
		return 1000;
	case 6:
		*kind = FD_BAD;
		return 0x7fffffff;
	default:
		/* fget() refuses O_PATH files: EBADF, as perf's group_fd. */
		*kind = FD_BAD;
		return fd_opath;
	}
}

/* Where the table goes; sets *readable to how much of it can be read. */
static char *place_table(uint64_t sel, char *b, uint64_t bytes, uint64_t *readable)
{
	sel %= 100;
	*readable = TBUF;
	if (sel < 85)
		return b;
	*readable = 0;
	if (sel < 87)
		return NULL;
	if (sel < 89)
		return b + TBUF; /* PROT_NONE */
	if (sel < 91)
		return (char *)0xffffffff81000000ULL;
	if (sel < 93)
		return (char *)0x0000800000000000ULL;
	if (sel < 97 && bytes <= TBUF) {
		/* The first half readable. */
		uint64_t half = bytes / 2;

		memmove(b + TBUF - half, b, half);
		*readable = half;
		return b + TBUF - half;
	}
	if (bytes <= page_size) {
		char *p = scratch_ro();

		set_ro(p, 0);
		memcpy(p, b, bytes);
		set_ro(p, 1);
		*readable = page_size;
		return p;
	}
	*readable = TBUF;
	return b;
}

static int key_of(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* Whether the file owns the session (0), another does (EBUSY), or there
 * is none (EINVAL): FLUSH answers so. */
static int probe(int fd)
{
	return RET_OF(ioctl(fd, RPROF_IOC_FLUSH));
}


static const char *names(uint64_t m, char *buf, size_t n)
{
	size_t k = 0;

	buf[0] = 0;
	for (int e = 0; e < 64 && k < n; e++)
		if (m & BIT(e))
			k += snprintf(buf + k, n - k, "%s%s", k ? "|" : "", e ? strerrorname_np(e) : "ok");
	return buf;
}

/*
 * The oracle of one call that ended with `res`.  known: the model is the
 * session, and p1 what FLUSH said of the file (0: it owns the session,
 * EBUSY: another file does, EINVAL: there is none).  Under model_lock
 * unless in a child.
 */
static void judge_call(const struct verdict *v, enum fdkind kind, const struct rprof_unwind_add *add, int arg_ok,
		       int known, int p1, dev_t dev, ino_t ino, int res, const uint64_t *a, uint64_t bytes)
{
	/* The errors that apply for certain (hard), and those that may
	 * (soft: what the model does not know). */
	uint64_t hard = v->hard, soft = BIT(ENOMEM) | (have_ipc_lock ? 0 : BIT(EPERM));
	char h[128], s[128];

	if (v->over_max)
		soft |= BIT(ENOSPC); /* the module's bound, or unwind_kb's */
	if (kind == FD_BAD)
		hard |= BIT(EBADF);
	else if (kind == FD_UNSURE)
		soft |= BIT(EBADF);
	if (add->size != sizeof(*add))
		hard |= BIT(EINVAL);
	if (!arg_ok)
		hard = BIT(EFAULT); /* nothing of the argument reaches the module */
	if (!known) {
		/* The file may also be open O_PATH (no ioctl at all). */
		soft |= BIT(EINVAL) | BIT(EBUSY) | BIT(EEXIST) | BIT(ENOSPC) | BIT(EBADF);
	} else if (p1 == EBUSY || p1 == EINVAL) {
		hard |= BIT(p1);
	} else if (!(M.flags & RPROF_CONFIG_UNWIND_TABLES)) {
		hard |= BIT(EINVAL);
	} else if (arg_ok) {
		int i = 0;

		if (kind == FD_NOTREG)
			hard |= BIT(EINVAL);
		if (kind == FD_FILE)
			for (i = 0; i < M.nkeys; i++)
				if (M.keys[i].dev == dev && M.keys[i].ino == ino)
					break;
		if (kind == FD_FILE && i < M.nkeys)
			hard |= BIT(EEXIST);
		else if (kind == FD_UNSURE)
			soft |= BIT(EEXIST);
		/* The module counts what a table is charged (its rows and
		 * index in whole pages) and refuses before the copy a table whose
		 * size alone would pass the limit. */
		uint64_t cost = charged(sat_add(v->rows, v->index));

		if (sat_add(M.bytes, cost > bytes ? cost : bytes) > limit_bytes) {
			/* Past unwind_kb: certain for a table otherwise
			 * good, possible for one that is not. */
			if (hard)
				soft |= BIT(ENOSPC);
			else
				hard |= BIT(ENOSPC);
		}
	}
	if (known)
		reach_add(ROW_UNWIND_KNOWN, res);
	if (known && !hard)
		reach_add(ROW_UNWIND_GOOD, res);
	reach_add(ROW_UNWIND_CLASS0 + a[3] % T_NCLASS, res);
	if (res == RES_OK ? hard == 0 : !!((hard | soft) & BIT(res)))
		return;
	oracle_fail("ADD_UNWIND (class %llu seed %#llx, %llu bytes, fd %d kind %d, table %#llx, %s%s) gave %s, "
		    "expected %s (or %s)",
		    (unsigned long long)(a[3] % T_NCLASS), (unsigned long long)a[2], (unsigned long long)bytes,
		    add->fd, kind, (unsigned long long)add->table,
		    !known ? "state unknown" : p1 ? "not the owner's" : "the owner's",
		    !known || p1 ? "" : M.flags & RPROF_CONFIG_UNWIND_TABLES ? ", tables on" : ", tables off",
		    res ? strerrorname_np(res) : "ok", hard ? names(hard, h, sizeof(h)) : "ok",
		    names(soft, s, sizeof(s)));
}

int run_add_unwind(const uint64_t *a)
{
	char *b = tbuf[tidx <= NWORKER ? tidx : 0];
	struct rprof_unwind_add add = { .size = sizeof(add) };
	int own, res, p1 = -1, p2 = -1, judge, known, fd = S.fd[a[0] % NFD], arg_ok;
	uint64_t bytes = build_table(a[2], a[3] % T_NCLASS, b), readable;
	enum fdkind kind;
	struct verdict v;
	dev_t dev = 0;
	ino_t ino = 0;
	char *t;

	own = dup(fd);
	if (own < 0)
		return errno_res(errno);
	t = place_table(a[4], b, bytes, &readable);
	/* Whatever the placement, what can be read of it is b's start. */
	v = classify(b, bytes, readable);
	add.fd = pick_fd(a[1], own, &kind);
	add.table = (uintptr_t)t;
	add.table_bytes = bytes;
	if (a[5] & 0x100)
		add.size = (const uint32_t[]){ 0, 16, sizeof(add) + 8, 0xffffffff }[a[2] >> 62];
	/* The argument: readable or not (place()'s selectors). */
	arg_ok = a[5] % 100 < 80 || (a[5] % 100 >= 90 && a[5] % 100 < 94) || a[5] % 100 == 97;

	if (!is_rprof_file(own)) {
		/* Another kind of file in the slot (FOUND.md 6): its answer. */
		res = RET_OF(ioctl(own, RPROF_IOC_ADD_UNWIND, place(a[5], &add, sizeof(add))));
		reach_add(ROW_UNWIND_OTHER, res);
		close(own);
		return res;
	}
	model_enter();
	/* Only the main thread, with no call running beside it, knows that
	 * nothing but this call changes the session meanwhile. */
	judge = !in_child && tidx == T_MAIN && !workers_busy();
	if (judge)
		p1 = probe(own);
	res = RET_OF(ioctl(own, RPROF_IOC_ADD_UNWIND, place(a[5], &add, sizeof(add))));
	if (judge)
		p2 = probe(own);
	if (kind == FD_FILE && key_of(add.fd, &dev, &ino) < 0)
		kind = FD_UNSURE;

	if (in_child) {
		/* No lock in a forked child (a thread of the parent may have
		 * held it): the table and the descriptor alone. */
		judge_call(&v, kind, &add, arg_ok, 0, -1, 0, 0, res, a, bytes);
		close(own);
		return res;
	}
	pthread_mutex_lock(&model_lock);
	known = judge && M.known && p1 == p2 && (p1 == 0 || p1 == EBUSY || p1 == EINVAL);
	if (known && p1 == EINVAL)
		M.session = 0;
	if (known && p1 == 0 && !M.session)
		known = 0; /* a session the model did not see made */
	judge_call(&v, kind, &add, arg_ok, known, p1, dev, ino, res, a, bytes);
	if (res == RES_OK && known) {
		if (M.nkeys < NKEYS) {
			M.keys[M.nkeys].dev = dev;
			M.keys[M.nkeys].ino = ino;
			M.nkeys++;
		} else {
			M.known = 0;
		}
		M.bytes += charged(v.rows + v.index);
	}
	if (res == RES_OK && !known)
		M.known = 0;
	M.inflight--;
	pthread_mutex_unlock(&model_lock);
	close(own);
	return res;
}

int unwind_upload_self(int fd, uint64_t seed)
{
	char *b = tbuf[0];
	struct rprof_unwind_add add = { .size = sizeof(add), .fd = files[0], .table = (uintptr_t)b };

	add.table_bytes = build_table(seed, T_GARBAGE, b);
	return RET_OF(ioctl(fd, RPROF_IOC_ADD_UNWIND, &add));
}
