// SPDX-License-Identifier: GPL-2.0
/*
 * The grammar: what rprof-fuzz knows about /dev/rprof and its neighbours.
 *
 * Each call kind has a generator, which draws its six arguments from the
 * program's random source, and an executor, which turns the arguments
 * into system calls on the current resources and returns a result index
 * for the reach table.  Generators decide everything that can be decided
 * without running anything; executors look up slots and sizes at run time.
 *
 * Arguments, by kind (f: fd slot, m: mapping slot, e: epoll slot,
 * b: background thread slot, c: child slot, sel: selector, seed: the
 * seed of a derived structure):
 *   open f flags          close f which           dup fsrc fdst
 *   set_config f seed ptrsel valid  start/stop/flush f junk
 *   get_stats f seed ptrsel         lookup_cookie f seed ptrsel
 *   get_version f ptrsel            ioctl f cmd ptrsel seed
 *   read f size bufsel m            readv f seed        write f size
 *   fcntl f op arg
 *   mmap f m lensel offsel prot flagsel    munmap m part
 *   mremap m lensel flagsel mdst           mprotect m prot part
 *   madvise m advice                       ctrl_write m field valsel raw
 *   consume mctrl mdata mode
 *   poll f events ms f2    select f ms sets
 *   epoll_create e cloexec  epoll_ctl e op target events  epoll_wait e ms max
 *   waiter b kind target ms   join b
 *   fork c seed ncalls   exec c flags   reap c how
 *   cpu online   perf on   busy us   sleep us   splice f len   open_nobody
 *   add_unwind f fdsel seed class tablesel argsel (unwind.c)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>
#include <linux/fs.h>
#include <linux/rprof.h>

#include "fuzz.h"

#define RET(x) ((x) < 0 ? errno_res(errno) : RES_OK)

static const uint64_t kernel_addr = 0xffffffff81000000ULL;
static const uint64_t noncanonical = 0x0000800000000000ULL;

/* Whether fd is open on the device under test (its character device
 * number, as opt.device has it). */
int is_rprof_file(int fd)
{
	struct stat dev, st;

	return stat(opt.device, &dev) == 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
	       st.st_rdev == dev.st_rdev;
}

static int fd_of(uint64_t slot)
{
	return S.fd[slot % NFD];
}

uint64_t pick(struct rng *r, const uint64_t *v, size_t n)
{
	return v[rn(r, n)];
}

/* A slot index: low slots most often, so calls meet each other. */
static uint64_t slot(struct rng *r, int n)
{
	return chance(r, 75) ? 0 : rn(r, n);
}

/* A mapping slot: the prefix maps the control page to 0, the data to 1. */
static uint64_t mslot(struct rng *r)
{
	return chance(r, 40) ? 0 : chance(r, 50) ? 1 : rn(r, NMAP);
}

/* A pointer selector: mostly a good buffer. */
static uint64_t ptrsel(struct rng *r)
{
	return chance(r, 88) ? 0 : rn(r, 100);
}

/*
 * Puts `len` bytes of `src` where selector `sel` says and returns the
 * address to give the kernel: a good buffer, NULL, a kernel address,
 * a PROT_NONE page, a read-only page, a buffer running into a PROT_NONE
 * page, an unaligned buffer, a non-canonical address.
 */
void *place(uint64_t sel, const void *src, size_t len)
{
	char *p;

	if (len > SCRATCH / 2)
		len = SCRATCH / 2;
	sel %= 100;
	if (sel < 80) {
		memcpy(scratch(), src, len);
		return scratch();
	}
	if (sel < 84)
		return NULL;
	if (sel < 87)
		return (void *)kernel_addr;
	if (sel < 90)
		return scratch_end();
	if (sel < 94) {
		p = scratch_ro();
		set_ro(p, 0);
		memcpy(p, src, len < page_size ? len : page_size);
		set_ro(p, 1);
		return p;
	}
	if (sel < 97) {
		/* The first half in good memory, the rest faults. */
		p = scratch_end() - len / 2;
		memcpy(p, src, len / 2);
		return p;
	}
	if (sel < 98) {
		memcpy(scratch() + 1, src, len);
		return scratch() + 1;
	}
	if (sel < 99)
		return (void *)noncanonical;
	return (void *)(uintptr_t)-8;
}

/* ---- files ---------------------------------------------------------- */

static void displace(int old)
{
	int i;

	if (old < 0)
		return;
	for (i = 0; i < NEXTRA; i++) {
		if (S.extra[i] < 0) {
			S.extra[i] = old;
			return;
		}
	}
	close(old);
}

static void gen_open(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	/* bit 0 O_NONBLOCK, bits 1-2 access mode (RDWR, RDONLY, WRONLY,
	 * O_PATH), bit 3 O_CLOEXEC */
	a[1] = chance(r, 60);
	if (chance(r, 15))
		a[1] |= rn(r, 4) << 1;
	if (chance(r, 20))
		a[1] |= 8;
}

static int run_open(const uint64_t *a)
{
	static const int acc[] = { O_RDWR, O_RDONLY, O_WRONLY, O_PATH };
	int flags = acc[(a[1] >> 1) & 3], fd;

	if (a[1] & 1)
		flags |= O_NONBLOCK;
	if (a[1] & 8)
		flags |= O_CLOEXEC;
	fd = open(opt.device, flags);
	if (fd < 0)
		return errno_res(errno);
	state_lock();
	displace(S.fd[a[0] % NFD]);
	S.fd[a[0] % NFD] = fd;
	state_unlock();
	return RES_OK;
}

static void gen_close(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = chance(r, 80) ? 0 : rn(r, 3); /* fd, epoll fd, displaced fd */
}

static int run_close(const uint64_t *a)
{
	int *p, fd, i;

	state_lock();
	switch (a[1] % 3) {
	case 0:
		p = &S.fd[a[0] % NFD];
		break;
	case 1:
		p = &S.ep[a[0] % NEP];
		break;
	default:
		p = NULL;
		for (i = 0; i < NEXTRA && !p; i++)
			if (S.extra[i] >= 0)
				p = &S.extra[i];
	}
	if (!p || *p < 0) {
		state_unlock();
		return RES_NOOP;
	}
	fd = *p;
	*p = -1;
	state_unlock();
	return RET(close(fd));
}

static void gen_dup(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = rn(r, NFD);
}

static int run_dup(const uint64_t *a)
{
	int fd = dup(fd_of(a[0]));

	if (fd < 0)
		return errno_res(errno);
	state_lock();
	displace(S.fd[a[1] % NFD]);
	S.fd[a[1] % NFD] = fd;
	state_unlock();
	return RES_OK;
}

/* ---- SET_CONFIG ----------------------------------------------------- */

#define CONFIG_BUF 4224 /* the module reads at most 4096 bytes */

static uint64_t pick_hz(struct rng *r)
{
	if (chance(r, 80))
		return 100 + rn(r, 1900);
	if (chance(r, 80))
		return 2000 + rn(r, 18000);
	return PICK(r, 1, 20000, 50000, 100000);
}

/* A pid for the filter: ours, init, a child's, one that does not exist. */
static int32_t pick_pid(uint64_t sel)
{
	switch (sel % 5) {
	case 0:
	case 1:
		return getpid();
	case 2:
		return 1;
	case 3:
		return S.child[0] > 0 ? S.child[0] : getpid();
	default:
		return 4000000;
	}
}

/* Whether the module would take `pages` as rprof_config.buffer_pages and
 * give the session an event buffer of another size than data_size. */
static int other_valid_size(uint32_t pages)
{
	size_t max = module_pages * 16 < 65536 ? module_pages * 16 : 65536;

	if (!pages)
		return module_pages * page_size != data_size;
	return !(pages & (pages - 1)) && pages <= max && pages * page_size != data_size;
}

/* Bits of set_config's fourth argument. */
#define CFG_VALID 1   /* never mutated */
#define CFG_NOUSER 2  /* UNWIND_TABLES without a user depth: EINVAL */
#define CFG_TABLES 4  /* user call chains walked by unwind tables */

/*
 * RPROF_CONFIG_UNWIND_TABLES, from a random source of its own (the
 * configurations of older seeds stay what they were): on half of the
 * configurations with a user depth; on all with CFG_TABLES (a user depth
 * then); with CFG_NOUSER, on one without a user depth (and nothing else
 * wrong), which the module must refuse with EINVAL.
 */
static void config_tables(uint64_t seed, unsigned how, struct rprof_config *c)
{
	struct rng rr, *r = &rr;

	rng_seed(r, seed ^ 0x756e77696e64ULL);
	if (how & CFG_NOUSER) {
		c->flags |= RPROF_CONFIG_UNWIND_TABLES;
		c->max_user_frames = 0;
		if (chance(r, 50)) {
			c->flags |= RPROF_CONFIG_CALLCHAIN;
			c->max_kernel_frames = PICK(r, 1, 16, RPROF_MAX_FRAMES);
		} else {
			c->flags &= ~RPROF_CONFIG_CALLCHAIN;
			c->max_kernel_frames = 0;
		}
		return;
	}
	if (how & CFG_TABLES) {
		c->flags |= RPROF_CONFIG_CALLCHAIN | RPROF_CONFIG_UNWIND_TABLES;
		c->flags &= ~RPROF_CONFIG_EXCLUDE_USER;
		c->max_user_frames = PICK(r, 1, 8, 64, RPROF_MAX_FRAMES);
		if (chance(r, 50))
			c->max_kernel_frames = 0;
		return;
	}
	if ((c->flags & RPROF_CONFIG_CALLCHAIN) && c->max_user_frames && chance(r, 50))
		c->flags |= RPROF_CONFIG_UNWIND_TABLES;
}

/*
 * Builds a configuration from `seed` into `buf` (CONFIG_BUF bytes) and
 * returns how many bytes to hand over.  Unless `how` has CFG_VALID (or
 * CFG_NOUSER), a quarter of them are mutated (*mutated says so).
 */
static size_t build_config(uint64_t seed, unsigned how, unsigned char *buf, int *mutated)
{
	int valid = how & (CFG_VALID | CFG_NOUSER);

	struct rprof_config *c = (struct rprof_config *)buf;
	struct rng rr, *r = &rr;
	uint32_t i, n;

	rng_seed(r, seed);
	memset(buf, 0, CONFIG_BUF);
	c->size = sizeof(*c);
	c->buffer_pages = session_pages;
	n = chance(r, 75) ? 1 : 1 + rn(r, RPROF_MAX_EVENTS);
	c->nr_events = n;
	for (i = 0; i < n; i++) {
		struct rprof_event_config *e = &c->events[i];

		e->kind = chance(r, 60)	  ? RPROF_EVENT_CPU_CLOCK
			  : chance(r, 60) ? RPROF_EVENT_TASK_CLOCK
					  : RPROF_EVENT_CYCLES + rn(r, 4);
		if (chance(r, 70)) {
			e->flags = RPROF_EVENT_FREQ;
			e->period = pick_hz(r);
		} else {
			/* For the clocks a period is in ns; perf takes
			 * 10 us as the shortest. */
			e->period = chance(r, 90) ? 200000 + rn(r, 10000000) : PICK(r, 1, 10000, ~0ULL >> 1);
		}
	}
	if (chance(r, 15))
		c->flags |= RPROF_CONFIG_EXCLUDE_USER;
	else if (chance(r, 15))
		c->flags |= RPROF_CONFIG_EXCLUDE_KERNEL;
	if (chance(r, 12)) {
		c->flags |= RPROF_CONFIG_PID_FILTER;
		c->pid = pick_pid(rnd(r));
		if (chance(r, 50))
			c->flags |= RPROF_CONFIG_PID_DESCENDANTS;
	}
	if (chance(r, 40))
		c->ring_records = chance(r, 92) ? 64u << rn(r, 7) : chance(r, 97) ? 8192u << rn(r, 4) : 1u << 20;
	if (chance(r, 40))
		c->drain_interval_ms = chance(r, 80) ? 1 + rn(r, 50) : 1 + rn(r, 1000);
	if (chance(r, 30))
		c->wakeup_bytes = PICK(r, 1, 8, 64, 4096, data_size / 2, data_size);
	if (chance(r, 35)) {
		/* Call chains: either side may be off, not both. */
		c->flags |= RPROF_CONFIG_CALLCHAIN;
		c->max_kernel_frames = PICK(r, 0, 1, 2, 16, RPROF_MAX_FRAMES);
		c->max_user_frames = PICK(r, 1, 3, 64, RPROF_MAX_FRAMES, 0);
		if (!c->max_kernel_frames && !c->max_user_frames)
			c->max_user_frames = 1 + rn(r, RPROF_MAX_FRAMES);
	}
	*mutated = 0;
	config_tables(seed, how, c);
	if (valid || !chance(r, 25))
		return sizeof(*c);

	/* Mutations: one to three. */
	*mutated = 1;
	for (n = 1 + rn(r, 3); n; n--) {
		struct rprof_event_config *e = &c->events[rn(r, RPROF_MAX_EVENTS)];

		switch (rn(r, 16)) {
		case 0: {
			size_t at = rn(r, sizeof(*c));

			buf[at] ^= 1u << rn(r, 8);
			break;
		}
		case 1:
			c->size = PICK(r, 0, 4, 8, 100, RPROF_CONFIG_SIZE_VER0 - 8,
				       RPROF_CONFIG_SIZE_VER0 - 1, sizeof(*c) + 8, 4096, 4097,
				       0xffffffff, 0x80000000);
			break;
		case 2: {
			/* Larger than ours, with something in the tail. */
			size_t at;

			c->size = sizeof(*c) + 8 * (1 + rn(r, 16));
			at = sizeof(*c) + rn(r, c->size - sizeof(*c));
			buf[at] = 1 + rn(r, 255);
			break;
		}
		case 3:
			c->nr_events = PICK(r, 0, RPROF_MAX_EVENTS + 1, 0xffffffff, 0x80000000);
			break;
		case 4:
			e->kind = PICK(r, 0, RPROF_EVENT_BRANCH_MISSES + 1, 0xffffffff, rnd(r));
			break;
		case 5:
			e->flags = rnd(r);
			break;
		case 6:
			e->period = PICK(r, 0, ~0ULL, 1ULL << 63, 100001);
			if (chance(r, 50))
				e->flags |= RPROF_EVENT_FREQ;
			break;
		case 7:
			c->flags = chance(r, 50) ? rnd(r) : RPROF_CONFIG_EXCLUDE_USER | RPROF_CONFIG_EXCLUDE_KERNEL;
			break;
		case 8:
			c->pid = PICK(r, -1, 0, 0x7fffffff, 0x80000000u, getpid());
			if (chance(r, 50))
				c->flags ^= RPROF_CONFIG_PID_FILTER;
			break;
		case 9:
			/* Never a valid size: the mmap checks know one
			 * (session_pages). */
			c->buffer_pages = PICK(r, 3, 1000, 1u << 17, 0x80000000, 0xffffffff);
			break;
		case 10:
			/* An unused event slot not zero. */
			if (c->nr_events < RPROF_MAX_EVENTS)
				c->events[RPROF_MAX_EVENTS - 1].period = 1;
			break;
		case 11:
			c->ring_records = PICK(r, 1, 32, 63, 65, 3000, 1u << 21, 0xffffffff, 0x80000000);
			break;
		case 12:
			c->drain_interval_ms = PICK(r, 1001, 0xffffffff, 0x80000000);
			break;
		case 13:
			/* Chain depths out of range, or with the flag off. */
			c->max_kernel_frames = PICK(r, 0, RPROF_MAX_FRAMES + 1, 0xffff, 0x8000);
			c->max_user_frames = PICK(r, 0, RPROF_MAX_FRAMES + 1, 0xffff, 1);
			if (chance(r, 50))
				c->flags ^= RPROF_CONFIG_CALLCHAIN;
			break;
		case 14:
			c->reserved1 = 1 + rn(r, 0xffffffff);
			break;
		default:
			c->wakeup_bytes = PICK(r, data_size + 1, data_size * 2, 0xffffffff);
			break;
		}
	}
	/* A flipped bit may leave another valid size, whose data area the
	 * mmap oracle would not know: make it no power of 2. */
	if (other_valid_size(c->buffer_pages))
		c->buffer_pages |= 3;
	if (c->size < RPROF_CONFIG_SIZE_VER0)
		return sizeof(*c);
	return c->size < CONFIG_BUF ? c->size : CONFIG_BUF;
}

static void gen_set_config(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = rnd(r);
	a[2] = ptrsel(r);
	a[3] = chance(r, 4) ? CFG_NOUSER : 0; /* CFG_* */
}

/*
 * The oracle of a valid configuration (not mutated, from a good buffer):
 * the module must take it, or refuse it for what the call cannot know in
 * advance: no file in the slot (EBADF), another file's or a running
 * session (EBUSY), memory (ENOMEM), a pid filter's process gone (ESRCH).
 * Counts the ones with a non-default event buffer and with call chains
 * in rows of their own.
 */
static void judge_valid_config(const struct rprof_config *c, int res)
{
	if (c->buffer_pages && c->buffer_pages != module_pages)
		reach_add(ROW_SET_CONFIG_PAGES, res);
	if (c->flags & RPROF_CONFIG_CALLCHAIN)
		reach_add(ROW_SET_CONFIG_CHAINS, res);
	if (c->flags & RPROF_CONFIG_UNWIND_TABLES)
		reach_add(ROW_SET_CONFIG_UNWIND, res);
	if (res == RES_OK || res == EBADF || res == EBUSY || res == ENOMEM ||
	    (res == ESRCH && (c->flags & RPROF_CONFIG_PID_FILTER)))
		return;
	oracle_fail("SET_CONFIG of a valid configuration (flags %#x, buffer_pages %u, chains %u/%u, "
		    "ring_records %u, %u events, first kind %u period %llu flags %#x) failed with %s",
		    c->flags, c->buffer_pages, c->max_kernel_frames, c->max_user_frames, c->ring_records,
		    c->nr_events, c->events[0].kind, (unsigned long long)c->events[0].period,
		    c->events[0].flags, strerrorname_np(res));
}

/*
 * UNWIND_TABLES without a user depth (CFG_NOUSER): EINVAL.  The file may
 * also be open O_PATH (EBADF, as judge_valid_config), not be allowed to
 * configure now (EBUSY), or a pid filter's process be gone (ESRCH): the
 * header does not say which error comes first.
 */
static void judge_nouser_config(const struct rprof_config *c, int res)
{
	reach_add(ROW_SET_CONFIG_NOUSER, res);
	if (res == EINVAL || res == EBUSY || res == EBADF || (res == ESRCH && (c->flags & RPROF_CONFIG_PID_FILTER)))
		return;
	oracle_fail("SET_CONFIG with RPROF_CONFIG_UNWIND_TABLES and no user depth (flags %#x, chains %u/%u) "
		    "gave %s, expected EINVAL (or EBUSY, EBADF, ESRCH)",
		    c->flags, c->max_kernel_frames, c->max_user_frames, res ? strerrorname_np(res) : "success");
}

static int run_set_config(const uint64_t *a)
{
	static __thread unsigned char buf[CONFIG_BUF];
	int mutated, res, fd = fd_of(a[0]), own;
	size_t len = build_config(a[1], a[3], buf, &mutated);

	/* Through a duplicate, as run_ioctl: the oracle judges only what
	 * rprof's own files answer. */
	own = dup(fd);
	model_enter();
	res = RET(ioctl(own >= 0 ? own : fd, RPROF_IOC_SET_CONFIG, place(a[2], buf, len)));
	model_leave_config(res, ((const struct rprof_config *)buf)->flags);
	if (!mutated && a[2] % 100 < 80 && own >= 0 && is_rprof_file(own)) {
		if (a[3] & CFG_NOUSER)
			judge_nouser_config((const struct rprof_config *)buf, res);
		else
			judge_valid_config((const struct rprof_config *)buf, res);
	}
	if (own >= 0)
		close(own);
	return res;
}

static int row_set_config(const uint64_t *a)
{
	static __thread unsigned char buf[CONFIG_BUF];
	int mutated;

	if (a[2] % 100 >= 80)
		return ROW_SET_CONFIG_BADPTR;
	build_config(a[1], a[3], buf, &mutated);
	return mutated ? ROW_SET_CONFIG_MUTATED : -1;
}

/* ---- START, STOP, FLUSH, GET_VERSION --------------------------------- */

static void gen_fd_junk(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = chance(r, 80) ? 0 : rnd(r);
}

static int run_start(const uint64_t *a)
{
	return RET(ioctl(fd_of(a[0]), RPROF_IOC_START, (unsigned long)a[1]));
}

static int run_stop(const uint64_t *a)
{
	return RET(ioctl(fd_of(a[0]), RPROF_IOC_STOP, (unsigned long)a[1]));
}

static int run_flush(const uint64_t *a)
{
	return RET(ioctl(fd_of(a[0]), RPROF_IOC_FLUSH, (unsigned long)a[1]));
}

static int run_reset_cookies(const uint64_t *a)
{
	int res;

	model_enter();
	res = RET(ioctl(fd_of(a[0]), RPROF_IOC_RESET_COOKIES, (unsigned long)a[1]));
	model_leave_reset(res);
	return res;
}

static void gen_fd_ptr(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = ptrsel(r);
}

static int run_get_version(const uint64_t *a)
{
	uint32_t zero = 0, *v = place(a[1], &zero, sizeof(zero));
	int fd = fd_of(a[0]);

	if (ioctl(fd, RPROF_IOC_GET_VERSION, v) < 0)
		return errno_res(errno);
	if (a[1] % 100 < 80 && *v != RPROF_ABI_VERSION)
		oracle_fail("GET_VERSION on fd %d gave %u, expected %u", fd, *v, RPROF_ABI_VERSION);
	return RES_OK;
}

/* ---- GET_STATS, LOOKUP_COOKIE ----------------------------------------- */

static void gen_seed_ptr(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = rnd(r);
	a[2] = ptrsel(r);
}

/* A second pointer, for the arrays the structures point to. */
static uint64_t aux_ptr(uint64_t sel)
{
	switch (sel % 10) {
	case 0:
		return 0;
	case 1:
		return kernel_addr;
	case 2:
		return (uintptr_t)scratch_end();
	case 3:
		return (uintptr_t)scratch_ro();
	case 4:
		return (uintptr_t)(scratch_end() - 40);
	default:
		return (uintptr_t)(scratch() + SCRATCH / 2);
	}
}

static int run_get_stats(const uint64_t *a)
{
	struct rprof_stats st;
	struct rng r;

	rng_seed(&r, a[1]);
	memset(&st, 0, sizeof(st));
	st.size = chance(&r, 80) ? sizeof(st) : PICK(&r, 0, 8, RPROF_STATS_SIZE_VER0 - 1, sizeof(st) + 8, 4096, 0xffffffff);
	st.nr_cpus = PICK(&r, 0, 1, 2, 2, 8, 64, 0xffffffff);
	st.cpus = chance(&r, 50) ? aux_ptr(rnd(&r)) : 0;
	if (chance(&r, 5)) {
		st.reserved[0] = rnd(&r);
	}
	if (chance(&r, 5))
		st.drains = rnd(&r); /* an output field: ignored on input */
	return RET(ioctl(fd_of(a[0]), RPROF_IOC_GET_STATS, place(a[2], &st, sizeof(st))));
}

static int run_lookup_cookie(const uint64_t *a)
{
	struct rprof_cookie_lookup l;
	struct rng r;

	rng_seed(&r, a[1]);
	memset(&l, 0, sizeof(l));
	if (chance(&r, 75)) {
		l.cookie = PICK(&r, 0, 1, 2, 15);
		if (chance(&r, 70))
			l.cookie += 16 + rn(&r, 48);
	} else {
		l.cookie = rnd(&r);
	}
	l.path = chance(&r, 80) ? (uintptr_t)(scratch() + SCRATCH / 2) : aux_ptr(rnd(&r));
	l.path_len = PICK(&r, 0, 1, 8, 64, 256, 4096, 4096, 0xffffffff);
	if (chance(&r, 10))
		l.flags = rnd(&r);
	return RET(ioctl(fd_of(a[0]), RPROF_IOC_LOOKUP_COOKIE, place(a[2], &l, sizeof(l))));
}

/* ---- other ioctl numbers ------------------------------------------------ */

/* `cmd` without its size field. */
static unsigned long sizeless(unsigned long cmd)
{
	return cmd & ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT);
}

/*
 * The requests the module serves: the exact numbers, and SET_CONFIG and
 * GET_STATS with any size in their number (the structures carry their own
 * size, so a caller built against a larger one is served too).
 */
static int known_cmd(unsigned long cmd)
{
	return cmd == RPROF_IOC_GET_VERSION || cmd == RPROF_IOC_START || cmd == RPROF_IOC_STOP ||
	       cmd == RPROF_IOC_FLUSH || cmd == RPROF_IOC_LOOKUP_COOKIE || cmd == RPROF_IOC_RESET_COOKIES ||
	       cmd == RPROF_IOC_ADD_UNWIND ||
	       sizeless(cmd) == sizeless(RPROF_IOC_SET_CONFIG) || sizeless(cmd) == sizeless(RPROF_IOC_GET_STATS);
}

static void gen_ioctl(struct rng *r, uint64_t *a)
{
	static const uint64_t sizes[] = { 0, 4, 8, 32, sizeof(struct rprof_stats), sizeof(struct rprof_config),
					  sizeof(struct rprof_cookie_lookup) };
	uint64_t dir = rn(r, 4), nr, size;

	a[0] = slot(r, NFD);
	if (chance(r, 85)) {
		/* rprof's magic: a number in its range, or past it, or a
		 * known number with the wrong direction or size. */
		nr = chance(r, 85) ? rn(r, 0x20) : rn(r, 256);
		size = chance(r, 70) ? sizes[rn(r, 7)] : rn(r, 1 << 14);
		a[1] = _IOC(dir, RPROF_IOC_MAGIC, nr, size);
	} else {
		/* Requests the VFS or other drivers know, or any other. */
		uint64_t type = rn(r, 256);

		nr = rn(r, 256);
		size = rn(r, 64);
		a[1] = PICK(r, FIONBIO, FIOASYNC, FIOCLEX, FIONCLEX, FIONREAD, FIGETBSZ, FS_IOC_GETFLAGS,
			    FIOQSIZE, FS_IOC_GETVERSION, 0x5401 /* TCGETS */, _IOC(dir, type, nr, size));
	}
	a[2] = ptrsel(r);
	a[3] = rnd(r);
}

static int run_ioctl(const uint64_t *a)
{
	unsigned long cmd = (unsigned long)a[1];
	unsigned char fill[4096];
	size_t n = _IOC_SIZE(cmd) ? _IOC_SIZE(cmd) : 64, i;
	struct rng r;
	int fd = fd_of(a[0]), own, ret, res;

	if (n > sizeof(fill))
		n = sizeof(fill);
	rng_seed(&r, a[3]);
	for (i = 0; i < n; i++)
		fill[i] = rnd(&r);
	/* FIONBIO and FIOASYNC read an int: keep it 0 or 1 mostly. */
	if (cmd == FIONBIO || cmd == FIOASYNC)
		memset(fill + 1, 0, 3), fill[0] &= 1;
	/* Through a duplicate that no other thread can close or replace, so
	 * that the file checked below is the one the ioctl met (the slot's
	 * number may name another file by then: FOUND.md 6). */
	own = dup(fd);
	/* Random bytes seldom make a configuration or a table, but a reset
	 * needs none: the session model cannot follow these. */
	if (cmd == RPROF_IOC_RESET_COOKIES || cmd == RPROF_IOC_ADD_UNWIND ||
	    sizeless(cmd) == sizeless(RPROF_IOC_SET_CONFIG))
		model_unknown();
	ret = ioctl(own >= 0 ? own : fd, cmd, place(a[2], fill, n));
	res = RET(ret);
	/* Only rprof's own files owe ENOTTY: the slot may hold an epoll file
	 * (which answers EINVAL where the kernel has busy polling), a pipe,
	 * a perf event or a duplicate of any. */
	if (_IOC_TYPE(cmd) == RPROF_IOC_MAGIC && !known_cmd(cmd) && res != ENOTTY && res != EBADF &&
	    own >= 0 && is_rprof_file(own))
		oracle_fail("ioctl %#lx (unknown to rprof) on fd %d: expected ENOTTY, got %s", cmd, fd,
			    res ? strerrorname_np(res) : "success");
	if (own >= 0)
		close(own);
	return res;
}

static int row_ioctl(const uint64_t *a)
{
	unsigned long cmd = (unsigned long)a[1];

	if (_IOC_TYPE(cmd) == RPROF_IOC_MAGIC)
		return ROW_IOCTL_NR0 + _IOC_NR(cmd);
	return ROW_IOCTL_FOREIGN;
}

/* ---- read, readv, write, fcntl, splice ------------------------------------ */

static const uint64_t read_sizes[] = { 0,    1,	   7,	  8,	 16,	 24,	  31,	   32,	    33,
				       63,   64,   100,	  4095,	 4096,	 4097,	  8192,	   65536,   SCRATCH,
				       SCRATCH + 1, 1 << 20, 0x7ffff000, ~0ULL };

static void gen_read(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = chance(r, 50) ? PICK(r, 4096, 65536, SCRATCH) : pick(r, read_sizes, sizeof(read_sizes) / 8);
	a[2] = chance(r, 85) ? 0 : rn(r, 100);
	a[3] = rn(r, NMAP);
}

static int read_res(ssize_t n)
{
	return n < 0 ? errno_res(errno) : n == 0 ? RES_EOF : RES_OK;
}

static int run_read(const uint64_t *a)
{
	uint64_t sel = a[2] % 100;
	size_t len = a[1];
	int fd = fd_of(a[0]), res;
	struct map_slot *m;
	char *buf;

	if (sel < 70) {
		buf = scratch(); /* a longer read runs into the PROT_NONE page */
	} else if (sel < 75) {
		buf = NULL;
	} else if (sel < 78) {
		buf = (char *)kernel_addr;
	} else if (sel < 82) {
		buf = scratch_end();
	} else if (sel < 86) {
		buf = scratch_ro();
	} else if (sel < 90) {
		buf = scratch_end() - (len < SCRATCH ? len / 2 : 64);
	} else if (sel < 95) {
		/* Into one of our mappings of the device (the control page
		 * may be writable); under the lock, so that it stays ours. */
		state_lock();
		m = &S.map[a[3] % NMAP];
		if (!m->addr) {
			state_unlock();
			return RES_NOOP;
		}
		res = read_res(read(fd, m->addr, len < m->len ? len : m->len));
		state_unlock();
		return res;
	} else {
		buf = (char *)noncanonical;
	}
	return read_res(read(fd, buf, len));
}

static int run_readv(const uint64_t *a)
{
	struct iovec iov[4];
	struct rng r;
	int i, n;

	rng_seed(&r, a[1]);
	n = 1 + rn(&r, 4);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = chance(&r, 90) ? scratch() + i * (SCRATCH / 4) : (void *)aux_ptr(rnd(&r));
		iov[i].iov_len = PICK(&r, 0, 7, 8, 32, 64, 4096, SCRATCH / 4);
	}
	return read_res(readv(fd_of(a[0]), iov, n));
}

static void gen_fd_size(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = pick(r, read_sizes, sizeof(read_sizes) / 8);
}

static int run_write(const uint64_t *a)
{
	return read_res(write(fd_of(a[0]), scratch(), a[1] < SCRATCH ? a[1] : SCRATCH));
}

static int run_splice(const uint64_t *a)
{
	int p[2], res;

	if (pipe2(p, O_NONBLOCK) < 0)
		return errno_res(errno);
	res = read_res(splice(fd_of(a[0]), NULL, p[1], NULL, a[1], SPLICE_F_NONBLOCK));
	close(p[0]);
	close(p[1]);
	return res;
}

static void gen_fcntl(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = rn(r, 10);
	a[2] = rnd(r);
}

static int run_fcntl(const uint64_t *a)
{
	int fd = fd_of(a[0]), fl = fcntl(fd, F_GETFL);
	struct stat st;

	switch (a[1] % 10) {
	case 0:
		return RET(fcntl(fd, F_SETFL, fl | O_NONBLOCK));
	case 1:
		return RET(fcntl(fd, F_SETFL, fl & ~O_NONBLOCK));
	case 2:
		return RET(fcntl(fd, F_SETFL, fl ^ O_ASYNC));
	case 3:
		return RET(fcntl(fd, F_SETFD, FD_CLOEXEC));
	case 4:
		return RET(fcntl(fd, F_SETFD, 0));
	case 5:
		return RET(lseek(fd, (off_t)a[2], (int)(a[2] >> 62)));
	case 6:
		return RET(fstat(fd, &st));
	case 7:
		return RET(fcntl(fd, F_SETOWN, getpid()));
	case 8:
		return RET(flock(fd, LOCK_EX | LOCK_NB));
	default:
		return RET(ftruncate(fd, 0));
	}
}

/* ---- mappings ------------------------------------------------------------- */

/*
 * Every change of the address space happens under the state lock, and the
 * fuzzer maps nothing else while it runs (threads and scratch memory are
 * set up first), so a slot's range is always exactly one of our mappings:
 * the fuzzer never writes to or unmaps memory that is not its own.
 */

static void slot_clear(struct map_slot *m)
{
	memset(m, 0, sizeof(*m));
}

static void slot_unmap(struct map_slot *m)
{
	if (m->addr)
		munmap(m->addr, m->len);
	slot_clear(m);
}

static size_t round_page(size_t n)
{
	return (n + page_size - 1) & ~(page_size - 1);
}

static void gen_mmap(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = rn(r, NMAP);
	a[2] = chance(r, 75) ? 0 : 1 + rn(r, 8);
	a[3] = chance(r, 45) ? 0 : chance(r, 80) ? 1 : rn(r, 8);
	/* prot: the control page read-write, the data area read-only. */
	a[4] = chance(r, 80) ? (a[3] == 0 ? PROT_READ | PROT_WRITE : PROT_READ) : rn(r, 8);
	a[5] = chance(r, 80) ? 0 : 1 + rn(r, 6);
}

static int run_mmap(const uint64_t *a)
{
	static const int flagsel[] = { MAP_SHARED,	 MAP_PRIVATE, MAP_SHARED_VALIDATE,
				       MAP_SHARED | MAP_FIXED, MAP_SHARED | MAP_POPULATE,
				       MAP_SHARED_VALIDATE | 0x4000000 /* unknown */, MAP_SHARED | MAP_LOCKED };
	struct map_slot *m = &S.map[a[1] % NMAP];
	size_t len, mlen;
	off_t off;
	int prot = a[4] & 7, flags = flagsel[a[5] % 7], res;
	void *want = NULL, *p;

	switch (a[3] % 8) {
	case 0:
		off = 0;
		break;
	case 1:
		off = page_size;
		break;
	case 2:
		off = 2 * page_size;
		break;
	case 3:
		off = page_size + data_size;
		break;
	case 4:
		off = page_size * (a[2] * 7 % 300);
		break;
	case 5:
		off = 7;
		break;
	case 6:
		off = (off_t)1 << 50;
		break;
	default:
		off = -(off_t)page_size;
	}
	switch (a[2] % 9) {
	case 0:
		len = off == (off_t)page_size ? data_size : page_size;
		break;
	case 1:
		len = page_size;
		break;
	case 2:
		len = data_size;
		break;
	case 3:
		len = data_size + page_size;
		break;
	case 4:
		len = 2 * data_size;
		break;
	case 5:
		len = page_size / 2;
		break;
	case 6:
		len = 0;
		break;
	case 7:
		len = page_size * (1 + a[4] % 5);
		break;
	default:
		len = (size_t)1 << 40;
	}

	state_lock();
	if (flags & MAP_FIXED) {
		/* Only over the slot's own mapping, never past its end. */
		if (!m->addr || round_page(len) > m->len || !len) {
			flags &= ~MAP_FIXED;
		} else {
			want = m->addr;
		}
	}
	if (!(flags & MAP_FIXED))
		slot_unmap(m);
	p = mmap(want, len, prot, flags, fd_of(a[0]), off);
	if (p == MAP_FAILED) {
		res = errno_res(errno);
		/* A failed MAP_FIXED may have unmapped the range (all ours). */
		slot_unmap(m);
		state_unlock();
		return res;
	}
	if (flags & MAP_FIXED) {
		if (m->len > round_page(len))
			munmap(m->addr + round_page(len), m->len - round_page(len));
	}
	m->addr = p;
	m->len = round_page(len);
	m->pgoff = off / (off_t)page_size;
	m->prot = prot;
	m->shared = !(flags & MAP_PRIVATE) || (flags & MAP_SHARED_VALIDATE) == MAP_SHARED_VALIDATE;
	/* Judged on this call's own length: once unlocked, another thread's
	 * call may change the slot. */
	mlen = m->len;
	state_unlock();

	if (off == 0 && (mlen != page_size || (prot & PROT_EXEC)))
		oracle_fail("mmap of the control page with length %zu prot %#x succeeded", len, prot);
	else if (off == (off_t)page_size && (mlen != data_size || (prot & (PROT_WRITE | PROT_EXEC))))
		oracle_fail("mmap of the data area with length %zu prot %#x succeeded", len, prot);
	else if (off != 0 && off != (off_t)page_size)
		oracle_fail("mmap at offset %#llx succeeded", (unsigned long long)off);
	return RES_OK;
}

static void gen_map_part(struct rng *r, uint64_t *a)
{
	a[0] = mslot(r);
	a[1] = chance(r, 70) ? 0 : rn(r, 4);
}

/* The byte range of part `part` of `m`: whole, first, last or a middle page. */
static void part_range(const struct map_slot *m, uint64_t part, char **p, size_t *n)
{
	*p = m->addr;
	*n = m->len;
	if (m->len <= page_size)
		return;
	switch (part % 4) {
	case 1:
		*n = page_size;
		break;
	case 2:
		*p = m->addr + m->len - page_size;
		*n = page_size;
		break;
	case 3:
		*p = m->addr + (m->len / page_size / 2) * page_size;
		*n = page_size;
		break;
	}
}

static int run_munmap(const uint64_t *a)
{
	struct map_slot *m = &S.map[a[0] % NMAP];
	char *p, *end;
	size_t n;
	int res;

	state_lock();
	if (!m->addr) {
		state_unlock();
		return RES_NOOP;
	}
	part_range(m, a[1], &p, &n);
	res = RET(munmap(p, n));
	if (res == RES_OK) {
		/* Keep the first piece left, unmap any other one. */
		end = m->addr + m->len;
		if (p == m->addr) {
			if (p + n < end)
				munmap(p + n, end - (p + n));
			slot_clear(m);
		} else {
			if (p + n < end)
				munmap(p + n, end - (p + n));
			m->len = p - m->addr;
		}
	}
	state_unlock();
	return res;
}

static void gen_mremap(struct rng *r, uint64_t *a)
{
	a[0] = mslot(r);
	a[1] = rn(r, 5);
	a[2] = rn(r, 4);
	a[3] = rn(r, NMAP);
}

static int run_mremap(const uint64_t *a)
{
	struct map_slot *m = &S.map[a[0] % NMAP], *d = &S.map[a[3] % NMAP];
	size_t old, len;
	int flags = 0, res;
	void *p, *to = NULL;

	state_lock();
	if (!m->addr) {
		state_unlock();
		return RES_NOOP;
	}
	old = m->len;
	switch (a[1] % 5) {
	case 0:
		len = old;
		break;
	case 1:
		len = old > page_size ? round_page(old / 2) : old;
		break;
	case 2:
		len = 2 * old;
		break;
	case 3:
		len = old + page_size;
		break;
	default:
		len = page_size;
	}
	switch (a[2] % 4) {
	case 1:
		flags = MREMAP_MAYMOVE;
		break;
	case 2:
		/* Onto another slot's mapping, never past its end. */
		if (d != m && d->addr && len <= d->len) {
			flags = MREMAP_MAYMOVE | MREMAP_FIXED;
			to = d->addr;
		}
		break;
	case 3:
		if (len == old)
			flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP;
		break;
	}
	p = mremap(m->addr, old, len, flags, to);
	if (p == MAP_FAILED) {
		res = errno_res(errno);
		if (flags & MREMAP_FIXED)
			slot_unmap(d); /* may be gone already: all ours */
		state_unlock();
		return res;
	}
	if (flags & MREMAP_DONTUNMAP)
		munmap(m->addr, old); /* the old range stays mapped, empty */
	if (flags & MREMAP_FIXED) {
		if (d->len > len)
			munmap(d->addr + len, d->len - len);
		slot_clear(d);
	}
	m->addr = p;
	m->len = len;
	state_unlock();
	if (len > old)
		oracle_fail("mremap grew a mapping of the device from %zu to %zu bytes", old, len);
	return RES_OK;
}

static void gen_mprotect(struct rng *r, uint64_t *a)
{
	a[0] = mslot(r);
	a[1] = rn(r, 8);
	a[2] = chance(r, 80) ? 0 : 1;
}

static int run_mprotect(const uint64_t *a)
{
	struct map_slot *m = &S.map[a[0] % NMAP];
	int prot = a[1] & 7, res;
	long pgoff;
	char *p;
	size_t n;

	state_lock();
	if (!m->addr) {
		state_unlock();
		return RES_NOOP;
	}
	part_range(m, a[2] ? 1 : 0, &p, &n);
	pgoff = m->pgoff;
	res = RET(mprotect(p, n, prot));
	if (res == RES_OK && n == m->len)
		m->prot = prot;
	state_unlock();
	if (res == RES_OK && pgoff == 1 && (prot & (PROT_WRITE | PROT_EXEC)))
		oracle_fail("mprotect made the data area %s", prot & PROT_WRITE ? "writable" : "executable");
	if (res == RES_OK && pgoff == 0 && (prot & PROT_EXEC))
		oracle_fail("mprotect made the control page executable");
	return res;
}

static void gen_madvise(struct rng *r, uint64_t *a)
{
	a[0] = mslot(r);
	a[1] = PICK(r, MADV_DONTNEED, MADV_DONTNEED, MADV_WILLNEED, MADV_DONTFORK, MADV_DOFORK, MADV_WIPEONFORK,
		    MADV_KEEPONFORK, MADV_COLD, MADV_PAGEOUT, MADV_REMOVE, MADV_FREE, 22 /* POPULATE_READ */,
		    23 /* POPULATE_WRITE */, MADV_HUGEPAGE, MADV_MERGEABLE, MADV_DODUMP, rn(r, 128));
}

static int run_madvise(const uint64_t *a)
{
	struct map_slot *m = &S.map[a[0] % NMAP];
	int res;

	state_lock();
	res = m->addr ? RET(madvise(m->addr, m->len, (int)a[1])) : RES_NOOP;
	state_unlock();
	return res;
}

/* ---- the control page --------------------------------------------------- */

#define CTRL_OFF(f) offsetof(struct rprof_mmap_page, f)

static void gen_ctrl_write(struct rng *r, uint64_t *a)
{
	a[0] = chance(r, 60) ? 0 : mslot(r);
	a[1] = chance(r, 55) ? 0 : rn(r, 9);
	a[2] = rn(r, 16);
	a[3] = rnd(r);
}

static int run_ctrl_write(const uint64_t *a)
{
	struct map_slot *m = &S.map[a[0] % NMAP];
	volatile uint64_t head = 0, tail = 0, v;
	volatile size_t off;
	int sig;
	char *base;

	state_lock();
	if (!m->addr || m->len < page_size) {
		state_unlock();
		return RES_NOOP;
	}
	base = m->addr;
	sig = GUARDED({
		head = *(volatile uint64_t *)(base + CTRL_OFF(data_head));
		tail = *(volatile uint64_t *)(base + CTRL_OFF(data_tail));
	});
	switch (a[2] % 16) {
	case 0:
		v = head;
		break;
	case 1:
		v = head + 8;
		break;
	case 2:
		v = head - 8;
		break;
	case 3:
		v = head - data_size;
		break;
	case 4:
		v = head - data_size - 8;
		break;
	case 5:
		v = head + data_size;
		break;
	case 6:
		v = head + 4;
		break;
	case 7:
		v = 0;
		break;
	case 8:
		v = 0xfffffffffffffffcULL;
		break;
	case 9:
		v = ~0ULL;
		break;
	case 10:
		v = 1ULL << 63;
		break;
	case 11:
		v = a[3];
		break;
	case 12:
		v = tail + 8;
		break;
	case 13:
		v = tail + a[3] % data_size;
		break;
	case 14:
		v = head - 4;
		break;
	default:
		v = head - 1 - a[3] % 7;
	}
	switch (a[1] % 9) {
	case 0:
		off = CTRL_OFF(data_tail);
		break;
	case 1:
		off = CTRL_OFF(data_head);
		break;
	case 2:
		off = CTRL_OFF(version);
		break;
	case 3:
		off = CTRL_OFF(data_offset);
		break;
	case 4:
		off = CTRL_OFF(data_size);
		break;
	case 5:
		off = CTRL_OFF(reserved1) + 8 * (a[3] % 13);
		break;
	case 6:
		off = a[3] & 1 ? CTRL_OFF(reserved2) : CTRL_OFF(reserved3);
		break;
	case 7:
		/* Any byte, any width, unaligned. */
		off = a[3] % (page_size - 8);
		if (!sig)
			sig = GUARDED({
				switch ((a[3] >> 32) % 4) {
				case 0:
					*(volatile uint8_t *)(base + off) = v;
					break;
				case 1:
					*(volatile uint16_t *)(base + off) = v;
					break;
				case 2:
					*(volatile uint32_t *)(base + off) = v;
					break;
				default:
					*(volatile uint64_t *)(base + off) = v;
				}
			});
		state_unlock();
		return sig ? sig_res(sig) : RES_OK;
	default:
		if (!sig)
			sig = GUARDED(memset(base, (int)a[3], page_size));
		state_unlock();
		return sig ? sig_res(sig) : RES_OK;
	}
	if (!sig)
		sig = GUARDED(__atomic_store_n((uint64_t *)(base + off), v, __ATOMIC_RELEASE));
	state_unlock();
	return sig ? sig_res(sig) : RES_OK;
}

static void gen_consume(struct rng *r, uint64_t *a)
{
	a[0] = chance(r, 70) ? 0 : mslot(r);
	a[1] = chance(r, 70) ? 1 : mslot(r);
	a[2] = chance(r, 60) ? 0 : rn(r, 4);
}

/*
 * A reader of the mapping as the header says: records from data_tail to
 * data_head, then data_tail = what was consumed (mode 0: all, 1: one
 * record, 2: nothing, 3: all, without looking at the records).
 */
static int run_consume(const uint64_t *a)
{
	struct map_slot *c = &S.map[a[0] % NMAP], *d = &S.map[a[1] % NMAP];
	volatile uint64_t head = 0, tail = 0, pos;
	volatile int malformed = 0;
	int sig, mode = a[2] % 4;

	state_lock();
	if (!c->addr || c->pgoff != 0) {
		state_unlock();
		return RES_NOOP;
	}
	sig = GUARDED({
		head = __atomic_load_n((uint64_t *)(c->addr + CTRL_OFF(data_head)), __ATOMIC_ACQUIRE);
		tail = *(volatile uint64_t *)(c->addr + CTRL_OFF(data_tail));
	});
	pos = tail;
	if (!sig && mode != 3 && d->addr && d->pgoff == 1 && d->len == data_size && head - tail <= data_size) {
		sig = GUARDED({
			unsigned n = 0;

			while (pos < head && n++ < 100000) {
				const struct rprof_record_header *h =
					(const void *)(d->addr + (pos & (data_size - 1)));
				uint32_t size = h->size;

				if (size < 8 || size % 8 || size > head - pos) {
					malformed = 1;
					break;
				}
				pos += size;
				if (mode == 1)
					break;
			}
		});
	} else {
		pos = head;
	}
	if (malformed)
		reach_add(ROW_CONSUME_MALFORMED, RES_OK);
	if (!sig && mode != 2)
		sig = GUARDED(__atomic_store_n((uint64_t *)(c->addr + CTRL_OFF(data_tail)), pos, __ATOMIC_RELEASE));
	state_unlock();
	return sig ? sig_res(sig) : RES_OK;
}

/* ---- poll, select, epoll ---------------------------------------------------- */

static void gen_poll(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = chance(r, 80) ? POLLIN : rn(r, 0x400);
	a[2] = rn(r, 11);
	a[3] = chance(r, 70) ? 0xff : rn(r, NFD);
}

static int run_poll(const uint64_t *a)
{
	struct pollfd p[2] = { { fd_of(a[0]), a[1], 0 }, { a[3] == 0xff ? -1 : fd_of(a[3]), POLLIN, 0 } };

	return RET(poll(p, 2, a[2]));
}

static void gen_select(struct rng *r, uint64_t *a)
{
	a[0] = slot(r, NFD);
	a[1] = rn(r, 11);
	a[2] = chance(r, 80) ? 1 : rn(r, 8);
}

static int run_select(const uint64_t *a)
{
	fd_set rs, ws, es;
	struct timeval tv = { 0, a[1] * 1000 };
	int fd = fd_of(a[0]);

	if (fd < 0 || fd >= FD_SETSIZE)
		return RES_NOOP;
	FD_ZERO(&rs);
	FD_ZERO(&ws);
	FD_ZERO(&es);
	if (a[2] & 1)
		FD_SET(fd, &rs);
	if (a[2] & 2)
		FD_SET(fd, &ws);
	if (a[2] & 4)
		FD_SET(fd, &es);
	return RET(select(fd + 1, &rs, &ws, &es, &tv));
}

static void gen_epoll_create(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NEP);
	a[1] = chance(r, 50);
}

static int run_epoll_create(const uint64_t *a)
{
	int fd = epoll_create1(a[1] ? EPOLL_CLOEXEC : 0), old;

	if (fd < 0)
		return errno_res(errno);
	state_lock();
	old = S.ep[a[0] % NEP];
	S.ep[a[0] % NEP] = fd;
	state_unlock();
	if (old >= 0)
		close(old);
	return RES_OK;
}

static void gen_epoll_ctl(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NEP);
	a[1] = chance(r, 50) ? EPOLL_CTL_ADD : chance(r, 40) ? EPOLL_CTL_MOD : chance(r, 90) ? EPOLL_CTL_DEL : rn(r, 8);
	/* The target: an fd slot, or (0x100 | slot) the other epoll fd. */
	a[2] = chance(r, 90) ? slot(r, NFD) : 0x100 | rn(r, NEP);
	a[3] = chance(r, 60) ? EPOLLIN : PICK(r, EPOLLIN | EPOLLET, EPOLLIN | EPOLLONESHOT, EPOLLIN | EPOLLEXCLUSIVE,
					      EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP, rnd(r) & 0xffffffff);
}

static int run_epoll_ctl(const uint64_t *a)
{
	struct epoll_event ev = { .events = (uint32_t)a[3], .data.u64 = a[2] };
	int target = a[2] & 0x100 ? S.ep[a[2] % NEP] : fd_of(a[2]);

	return RET(epoll_ctl(S.ep[a[0] % NEP], (int)a[1], target, &ev));
}

static void gen_epoll_wait(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NEP);
	a[1] = rn(r, 11);
	a[2] = chance(r, 95) ? 1 + rn(r, 8) : 0;
}

static int run_epoll_wait(const uint64_t *a)
{
	struct epoll_event ev[8];

	return RET(epoll_wait(S.ep[a[0] % NEP], ev, (int)a[2], (int)a[1]));
}

/* ---- threads ------------------------------------------------------------------ */

static void gen_waiter(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NBG);
	a[1] = rn(r, 6); /* poll, epoll_wait, select, read, ppoll, read(O_NONBLOCK) */
	a[2] = a[1] == 1 ? rn(r, NEP) : slot(r, NFD);
	a[3] = 5 + rn(r, 60);
}

static int run_waiter(const uint64_t *a)
{
	bg_start(a[0] % NBG, a[1] % 6, a[2], a[3] % 1000);
	return RES_OK;
}

static void gen_join(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NBG);
}

static int run_join(const uint64_t *a)
{
	bg_stop(a[0] % NBG);
	return RES_OK;
}

/* ---- processes ------------------------------------------------------------------- */

/* Ends child `i`: waits up to `ms`, then kills it. */
int child_reap(int i, int sig, unsigned ms)
{
	pid_t pid = S.child[i];
	int status, res;
	uint64_t end = now_ns() + ms * 1000000ULL;

	if (pid <= 0)
		return RES_NOOP;
	if (sig)
		kill(pid, sig);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0) {
			S.child[i] = 0;
			return errno_res(errno);
		}
		if (now_ns() > end) {
			kill(pid, SIGKILL);
			end = ~0ULL;
			/* A task stuck in the kernel cannot die: give up on it
			 * after a few seconds rather than hang the fuzzer. */
			for (int k = 0; k < 5000 && waitpid(pid, &status, WNOHANG) == 0; k++)
				usleep(1000);
			break;
		}
		usleep(1000);
	}
	S.child[i] = 0;
	if (WIFEXITED(status))
		res = WEXITSTATUS(status) ? RES_EXIT : RES_OK;
	else
		res = RES_KILLED;
	reach_add(ROW_CHILD_EXIT, res);
	return res;
}

static void gen_fork(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NCHILD);
	a[1] = rnd(r);
	a[2] = 1 + rn(r, 6);
}

static int run_fork(const uint64_t *a)
{
	int i = a[0] % NCHILD;
	pid_t pid;

	child_reap(i, SIGKILL, 0);
	model_forked();
	pid = fork();
	if (pid < 0)
		return errno_res(errno);
	if (pid == 0) {
		struct prog p;
		int k;

		in_child = 1;
		child_timer_start();
		prog_generate_child(&p, a[1], a[2] % 16);
		for (k = 0; k < p.n; k++)
			run_call(&p.c[k]);
		_exit(0);
	}
	S.child[i] = pid;
	return RES_OK;
}

static void gen_exec(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NCHILD);
	a[1] = rn(r, 4); /* bit 0: clear close-on-exec first; bit 1: vfork */
}

static int run_exec(const uint64_t *a)
{
	int i = a[0] % NCHILD, k;
	pid_t pid;

	child_reap(i, SIGKILL, 0);
	if (a[1] & 1)
		for (k = 0; k < NFD; k++)
			if (S.fd[k] >= 0)
				fcntl(S.fd[k], F_SETFD, 0);
	pid = (a[1] & 2) ? vfork() : fork();
	if (pid < 0)
		return errno_res(errno);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	S.child[i] = pid;
	return RES_OK;
}

static void gen_reap(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, NCHILD);
	a[1] = rn(r, 4);
}

static int run_reap(const uint64_t *a)
{
	static const int sigs[] = { 0, SIGKILL, SIGTERM, SIGSTOP };
	int i = a[0] % NCHILD, sig = sigs[a[1] % 4];

	if (sig == SIGSTOP && S.child[i] > 0) {
		kill(S.child[i], SIGSTOP);
		usleep(2000);
		kill(S.child[i], SIGCONT);
		sig = 0;
	}
	return child_reap(i, sig, 200);
}

static int run_open_nobody(const uint64_t *a)
{
	int status, res;
	pid_t pid;

	(void)a;
	pid = fork();
	if (pid < 0)
		return errno_res(errno);
	if (pid == 0) {
		int fd;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(255);
		fd = open(opt.device, O_RDWR);
		_exit(fd >= 0 ? 0 : errno < 255 ? errno : 254);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status))
		return RES_KILLED;
	res = WEXITSTATUS(status);
	if (res == 255 || res == 254)
		return RES_EXIT;
	if (res == 0)
		oracle_fail("uid 65534 opened %s", opt.device);
	return res;
}

/* ---- the rest ------------------------------------------------------------------ */

static void gen_cpu(struct rng *r, uint64_t *a)
{
	a[0] = chance(r, 50);
}

static int run_cpu(const uint64_t *a)
{
	int fd = open("/sys/devices/system/cpu/cpu1/online", O_WRONLY), res;

	if (fd < 0)
		return errno_res(errno);
	res = write(fd, a[0] ? "1" : "0", 1) < 0 ? errno_res(errno) : RES_OK;
	close(fd);
	if (res == RES_OK)
		S.cpu_offline = !a[0];
	return res;
}

static void gen_perf(struct rng *r, uint64_t *a)
{
	a[0] = chance(r, 70);
}

static int run_perf(const uint64_t *a)
{
	perf_user_set(a[0] & 1);
	return RES_OK;
}

static void gen_us(struct rng *r, uint64_t *a)
{
	a[0] = chance(r, 80) ? rn(r, 2000) : rn(r, 10000);
}

/* User time in this program's own text: samples that resolve to a file. */
static int __attribute__((noinline)) run_busy(const uint64_t *a)
{
	uint64_t end = now_ns() + a[0] * 1000;
	volatile uint64_t x = 0;

	while (now_ns() < end)
		for (int i = 0; i < 1000; i++)
			x += i;
	return RES_OK;
}

/*
 * User time with a hostile frame pointer: whatever a chain session's user
 * walk finds at %rbp must end it cleanly (FAULT or BAD_FP), never oops.
 * The targets: unmapped, kernel, non-canonical and misaligned addresses,
 * a frame that straddles into this thread's PROT_NONE page, its read-only
 * page, a mapping of the device (which other calls unmap meanwhile), and
 * hand-made chains in scratch memory: a loop, a chain that walks down the
 * stack, and one that climbs to the guard page through return addresses
 * that point into the kernel, at 0 and at junk.
 */
static uint64_t badfp_target(uint64_t sel)
{
	uint64_t *f = (uint64_t *)scratch();
	unsigned n = 64, i;

	switch (sel % 11) {
	case 0:
		return 0x1000;
	case 1:
		return 0xffffffff81000000ULL;
	case 2:
		return 0x8000000000000000ULL;
	case 3:
		return (uint64_t)scratch() + 4;
	case 4:
		return (uint64_t)scratch_end() - 8;
	case 5:
		return (uint64_t)scratch_ro();
	case 6: {
		char *m = __atomic_load_n(&S.map[(sel / 11) % NMAP].addr, __ATOMIC_RELAXED);

		return m ? (uint64_t)m + (sel / 97) % 4096 : 0;
	}
	case 7:
		f[0] = (uint64_t)f;
		f[1] = 0x401000;
		return (uint64_t)f;
	case 8:
		/* Each frame points below itself. */
		for (i = 1; i < n; i++) {
			f[2 * i] = (uint64_t)&f[2 * (i - 1)];
			f[2 * i + 1] = 0x401000 + i;
		}
		return (uint64_t)&f[2 * (n - 1)];
	default: {
		/* Upwards, frame after frame, to the end of scratch memory
		 * and into the guard page. */
		uint64_t *end = (uint64_t *)scratch_end();
		uint64_t *p = f;

		while (p + 4 <= end) {
			p[0] = (uint64_t)(p + 2 + (sel & 2));
			static const uint64_t ret[] = { 0xffffffff81000000ULL, 0, 0x401000 };

			p[1] = (sel >> 8) % 4 < 3 ? ret[(sel >> 8) % 4] : sel;
			p += 2 + (sel & 2);
			sel = mix64(sel);
		}
		if (p < end)
			p[0] = (uint64_t)end;
		return (uint64_t)f;
	}
	}
}

/* Spins for `ns` with %rbp = fp (saved in %r12 and restored after). */
static void __attribute__((noinline)) spin_with_fp(uint64_t fp, uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	do
		__asm__ volatile("mov %%rbp, %%r12\n\t"
				 "mov %0, %%rbp\n\t"
				 "mov $20000, %%rcx\n"
				 "1:\n\t"
				 "dec %%rcx\n\t"
				 "jnz 1b\n\t"
				 "mov %%r12, %%rbp\n\t"
				 :
				 : "r"(fp)
				 : "rcx", "r12", "memory", "cc");
	while (now_ns() < end);
}

static void gen_badfp(struct rng *r, uint64_t *a)
{
	a[0] = rn(r, 3000);
	a[1] = rnd(r);
}

static int run_badfp(const uint64_t *a)
{
	spin_with_fp(badfp_target(a[1]), a[0] * 1000);
	return RES_OK;
}

static int run_sleep(const uint64_t *a)
{
	return RET(usleep(a[0]));
}

static void gen_none(struct rng *r, uint64_t *a)
{
	(void)r;
	(void)a;
}

/*
 * Weights: how often each kind is drawn, out of their sum (about 1300).
 * The slow calls are rare: under TCG with KASAN a fork costs about 20 ms
 * (130 ms with other guests busy on the host), open_nobody (fork, setuid,
 * exit) 35 ms, CPU hotplug 30 ms, exec 15 ms, against well under a
 * millisecond for most others and 5 ms for SET_CONFIG (the reach table
 * prints the time spent per call).
 */
const struct call_def calls[] = {
	{ "open", 60, 0, gen_open, run_open, NULL },
	{ "close", 30, 0, gen_close, run_close, NULL },
	{ "dup", 20, 0, gen_dup, run_dup, NULL },
	{ "set_config", 100, 0, gen_set_config, run_set_config, row_set_config },
	{ "start", 80, 0, gen_fd_junk, run_start, NULL },
	{ "stop", 60, 0, gen_fd_junk, run_stop, NULL },
	{ "flush", 50, 0, gen_fd_junk, run_flush, NULL },
	{ "reset_cookies", 30, 0, gen_fd_junk, run_reset_cookies, NULL },
	{ "get_stats", 40, 0, gen_seed_ptr, run_get_stats, NULL },
	{ "lookup_cookie", 30, 0, gen_seed_ptr, run_lookup_cookie, NULL },
	{ "get_version", 20, 0, gen_fd_ptr, run_get_version, NULL },
	{ "ioctl", 50, 0, gen_ioctl, run_ioctl, row_ioctl },
	{ "read", 80, 0, gen_read, run_read, NULL },
	{ "readv", 20, 0, gen_seed_ptr, run_readv, NULL },
	{ "write", 10, 0, gen_fd_size, run_write, NULL },
	{ "splice", 10, 0, gen_fd_size, run_splice, NULL },
	{ "fcntl", 30, 0, gen_fcntl, run_fcntl, NULL },
	{ "mmap", 90, 0, gen_mmap, run_mmap, NULL },
	{ "munmap", 30, 0, gen_map_part, run_munmap, NULL },
	{ "mremap", 20, 0, gen_mremap, run_mremap, NULL },
	{ "mprotect", 20, 0, gen_mprotect, run_mprotect, NULL },
	{ "madvise", 15, 0, gen_madvise, run_madvise, NULL },
	{ "ctrl_write", 70, 0, gen_ctrl_write, run_ctrl_write, NULL },
	{ "consume", 60, 0, gen_consume, run_consume, NULL },
	{ "poll", 40, 0, gen_poll, run_poll, NULL },
	{ "select", 20, 0, gen_select, run_select, NULL },
	{ "epoll_create", 30, 0, gen_epoll_create, run_epoll_create, NULL },
	{ "epoll_ctl", 50, 0, gen_epoll_ctl, run_epoll_ctl, NULL },
	{ "epoll_wait", 30, 0, gen_epoll_wait, run_epoll_wait, NULL },
	{ "waiter", 40, CF_NO_CHILD | CF_NO_ASYNC, gen_waiter, run_waiter, NULL },
	{ "join", 20, CF_NO_CHILD | CF_NO_ASYNC, gen_join, run_join, NULL },
	{ "fork", 6, CF_NO_CHILD | CF_NO_ASYNC, gen_fork, run_fork, NULL },
	{ "exec", 3, CF_NO_CHILD | CF_NO_ASYNC, gen_exec, run_exec, NULL },
	{ "reap", 15, CF_NO_CHILD | CF_NO_ASYNC, gen_reap, run_reap, NULL },
	{ "open_nobody", 1, CF_NO_CHILD, gen_none, run_open_nobody, NULL },
	{ "cpu", 2, CF_NO_CHILD, gen_cpu, run_cpu, NULL },
	{ "perf", 10, CF_NO_CHILD | CF_NO_ASYNC, gen_perf, run_perf, NULL },
	{ "busy", 30, 0, gen_us, run_busy, NULL },
	{ "sleep", 30, 0, gen_us, run_sleep, NULL },
	{ "badfp", 25, 0, gen_badfp, run_badfp, NULL },
	{ "add_unwind", 50, 0, gen_add_unwind, run_add_unwind, NULL },
};
const int ncalls = sizeof(calls) / sizeof(calls[0]);

int call_by_name(const char *name)
{
	for (int k = 0; k < ncalls; k++)
		if (!strcmp(calls[k].name, name))
			return k;
	return -1;
}

/*
 * A working session first: open, a valid configuration, both mappings,
 * START.  Each step draws its randomness before checking `max`, so that a
 * program cut short by the call budget begins as the whole one does.
 */
void gen_setup_prefix(struct rng *r, struct prog *p, int max)
{
	uint64_t f = chance(r, 80) ? 0 : rn(r, NFD);
	uint64_t nonblock = chance(r, 70);
	uint64_t seed = rnd(r);
	int skip_data = chance(r, 30);
	int skip_start = chance(r, 20);
	/* A third walk user stacks by tables, the fuzzer's own executable
	 * through a table of random rules: its busy and badfp calls are
	 * sampled through them. */
	uint64_t tables = chance(r, 33) ? CFG_TABLES : 0;
	struct call c[6] = {
		{ .kind = call_by_name("open"), .a = { f, nonblock } },
		{ .kind = call_by_name("set_config"), .a = { f, seed, 0, CFG_VALID | tables } },
		{ .kind = call_by_name("add_unwind") },
		{ .kind = call_by_name("mmap"), .a = { f, 0, 0, 0, PROT_READ | PROT_WRITE, 0 } },
		{ .kind = call_by_name("mmap"), .a = { f, 1, 0, 1, PROT_READ, 0 } },
		{ .kind = call_by_name("start"), .a = { f } },
	};

	gen_add_unwind_self(r, c[2].a, f);
	for (int i = 0; i < 6 && p->n < max; i++) {
		if ((i == 2 && !tables) || (i == 4 && skip_data) || (i == 5 && skip_start))
			continue;
		p->c[p->n++] = c[i];
	}
}

/* An open of slot 0, first in a program without the whole prefix. */
void gen_open_first(struct rng *r, struct prog *p, int max)
{
	struct call c = { .kind = call_by_name("open") };

	gen_open(r, c.a);
	c.a[0] = 0;
	if (p->n < max)
		p->c[p->n++] = c;
}
