// SPDX-License-Identifier: GPL-2.0
/*
 * rprof-fuzz: runs random programs of calls against /dev/rprof.
 *
 *   rprof-fuzz [-s SEED] [-n CALLS] [-t SECONDS] [-i FIRST] [-p] [-v] [-k]
 *              [-g] [-r FILE] [-x CALL,...] [-H N] [-D DEVICE]
 *
 * Program i of a run is generated from (SEED, i) alone, so `-s SEED -n N`
 * replays the first N calls of a run exactly (threads and timing aside),
 * and `-s SEED -i I -n M` the M calls from program I on.  -p prints each
 * program before it runs (the text form of gen.c, which -r reads back);
 * -v prints each call with its result instead.  -k writes one line per
 * program to /dev/kmsg, so that a console report follows the program that
 * caused it.  -g generates and prints without running anything.  -x
 * leaves call kinds out of the programs (a different set of programs:
 * replay with the same -x).
 *
 * Between programs every resource is released: workers and waiters
 * finish, children are killed and reaped, mappings, epoll and device
 * files closed, CPU 1 put back online.  Every -H programs (50) and at the
 * end, a health check runs one normal session and checks its stream and
 * statistics.  The end prints the reach table: per call kind (per ioctl
 * number for raw ioctls), how often each result came back.
 *
 * Exit status: 0, 1 if a property the module promises was violated (lines
 * "ORACLE: ..."), 2 for a usage error, 3 if the device cannot be used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/rprof.h>

#include "fuzz.h"

struct state S = { .lock = PTHREAD_MUTEX_INITIALIZER };
struct options opt = { .calls = -1, .device = "/dev/rprof", .health_every = 50 };
size_t page_size;
size_t data_size;
uint32_t session_pages;
size_t module_pages;
int in_child;

/* Shared with forked children, so that their results count too. */
struct shared {
	uint64_t violations;
	uint64_t reach[NROWS][NRES];
	uint64_t ns[NROWS]; /* time spent in the calls of a row */
};
static struct shared *sh;
static int kmsg_fd = -1;

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void state_lock(void)
{
	if (!in_child)
		pthread_mutex_lock(&S.lock);
}

void state_unlock(void)
{
	if (!in_child)
		pthread_mutex_unlock(&S.lock);
}

int errno_res(int e)
{
	return e > 0 && e <= RES_ERRNO_MAX ? e : RES_ERRNO_MAX;
}

void reach_add(int row, int res)
{
	if (row >= 0 && row < NROWS && res >= 0 && res < NRES)
		__atomic_fetch_add(&sh->reach[row][res], 1, __ATOMIC_RELAXED);
}

/* Prints a line; in a forked child without stdio (its locks may be held
 * by a thread that does not exist there). */
static void vline(const char *prefix, const char *fmt, va_list ap)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%s", prefix);

	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (in_child) {
		if (write(1, buf, n) < 0)
			return;
	} else {
		fwrite(buf, 1, n, stdout);
		fflush(stdout);
	}
}

void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("rprof-fuzz: ", fmt, ap);
	va_end(ap);
}

void oracle_fail(const char *fmt, ...)
{
	va_list ap;

	__atomic_fetch_add(&sh->violations, 1, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	vline("ORACLE: ", fmt, ap);
	va_end(ap);
}

static const char *res_name(int res, char *buf, size_t n)
{
	const char *s;

	switch (res) {
	case RES_OK:
		return "ok";
	case RES_EOF:
		return "eof";
	case RES_SEGV:
		return "SIGSEGV";
	case RES_BUS:
		return "SIGBUS";
	case RES_NOOP:
		return "noop";
	case RES_KILLED:
		return "killed";
	case RES_EXIT:
		return "exit!=0";
	}
	s = res < RES_ERRNO_MAX ? strerrorname_np(res) : NULL;
	if (s)
		return s;
	snprintf(buf, n, "errno%d", res);
	return buf;
}

const char *row_name(int row, char *buf, size_t n)
{
	static const char *const bg[] = { "poll", "epoll_wait", "select", "read", "ppoll", "read_nb" };

	if (row < ncalls)
		return calls[row].name;
	if (row >= ROW_IOCTL_NR0 && row < ROW_IOCTL_NR0 + 0x100) {
		snprintf(buf, n, "ioctl %#x/%#04x", RPROF_IOC_MAGIC, row - ROW_IOCTL_NR0);
		return buf;
	}
	if (row >= ROW_UNWIND_CLASS0 && row < ROW_UNWIND_CLASS0 + 6) {
		static const char *const cls[] = { "garbage", "extreme", "many", "mutated", "random", "huge" };

		snprintf(buf, n, "add_unwind:%s", cls[row - ROW_UNWIND_CLASS0]);
		return buf;
	}
	if (row >= ROW_BG0 && row < NROWS) {
		snprintf(buf, n, "waiter:%s", bg[row - ROW_BG0]);
		return buf;
	}
	switch (row) {
	case ROW_IOCTL_FOREIGN:
		return "ioctl (other magic)";
	case ROW_SET_CONFIG_MUTATED:
		return "set_config:mutated";
	case ROW_SET_CONFIG_BADPTR:
		return "set_config:badptr";
	case ROW_SET_CONFIG_PAGES:
		return "set_config:pages";
	case ROW_SET_CONFIG_CHAINS:
		return "set_config:chains";
	case ROW_SET_CONFIG_UNWIND:
		return "set_config:unwind";
	case ROW_SET_CONFIG_NOUSER:
		return "set_config:nouser";
	case ROW_UNWIND_KNOWN:
		return "add_unwind:known";
	case ROW_UNWIND_GOOD:
		return "add_unwind:good";
	case ROW_UNWIND_OTHER:
		return "add_unwind:other";
	case ROW_HEALTH:
		return "health";
	case ROW_PERF_OPEN:
		return "perf:open+read";
	case ROW_PERF_IOC_ID:
		return "perf:IOC_ID";
	case ROW_CHILD_EXIT:
		return "child:end";
	case ROW_CONSUME_MALFORMED:
		return "consume:malformed";
	case ROW_CLEANUP:
		return "(between programs)";
	case ROW_CLEANUP_THREADS:
		return "(... threads)";
	case ROW_CLEANUP_CHILDREN:
		return "(... children)";
	case ROW_CLEANUP_FILES:
		return "(... files, mappings)";
	case ROW_CLEANUP_CPU:
		return "(... cpu1 online)";
	}
	snprintf(buf, n, "row%d", row);
	return buf;
}

int run_call(const struct call *c)
{
	const struct call_def *d = &calls[c->kind];
	int res, row;
	char b[32];

	uint64_t t0 = now_ns();

	arm_call(50, d->name);
	res = d->run(c->a);
	disarm();
	row = d->row ? d->row(c->a) : -1;
	if (row < 0)
		row = c->kind;
	reach_add(row, res);
	__atomic_fetch_add(&sh->ns[row], now_ns() - t0, __ATOMIC_RELAXED);
	if (opt.verbose && !in_child) {
		char line[256];
		int n = snprintf(line, sizeof(line), "%s%s", tidx ? "& " : "", d->name);

		for (int j = 0; j < NARGS; j++)
			n += snprintf(line + n, sizeof(line) - n, " %#llx", (unsigned long long)c->a[j]);
		printf("%s -> %s\n", line, res_name(res, b, sizeof(b)));
		fflush(stdout);
	}
	return res;
}

/* ---- between programs ------------------------------------------------------------ */

static void set_cpu1_online(void)
{
	int fd = open("/sys/devices/system/cpu/cpu1/online", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "1", 1) < 0)
			msg("cannot put cpu1 back online: %s", strerror(errno));
		close(fd);
	}
	S.cpu_offline = 0;
}

static void close_slot(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Adds the time since *t0 to row `row`, and restarts *t0. */
static void lap(int row, uint64_t *t0)
{
	uint64_t t = now_ns();

	__atomic_fetch_add(&sh->ns[row], t - *t0, __ATOMIC_RELAXED);
	*t0 = t;
}

/* Releases every resource of the program, timing each kind of them. */
static void cleanup(void)
{
	uint64_t t0 = now_ns();
	int i;

	workers_wait();
	bg_stop_all();
	perf_user_set(0);
	lap(ROW_CLEANUP_THREADS, &t0);
	/* Kill them all first, so that they die at the same time. */
	for (i = 0; i < NCHILD; i++)
		if (S.child[i] > 0)
			kill(S.child[i], SIGKILL);
	for (i = 0; i < NCHILD; i++)
		child_reap(i, 0, 0);
	lap(ROW_CLEANUP_CHILDREN, &t0);
	state_lock();
	for (i = 0; i < NMAP; i++) {
		if (S.map[i].addr)
			munmap(S.map[i].addr, S.map[i].len);
		memset(&S.map[i], 0, sizeof(S.map[i]));
	}
	state_unlock();
	for (i = 0; i < NEP; i++)
		close_slot(&S.ep[i]);
	for (i = 0; i < NFD; i++)
		close_slot(&S.fd[i]);
	for (i = 0; i < NEXTRA; i++)
		close_slot(&S.extra[i]);
	lap(ROW_CLEANUP_FILES, &t0);
	if (S.cpu_offline)
		set_cpu1_online();
	lap(ROW_CLEANUP_CPU, &t0);
}

/* ---- the health check -------------------------------------------------------------- */

static void busy_ms(unsigned ms)
{
	uint64_t end = now_ns() + ms * 1000000ULL;
	volatile uint64_t x = 0;

	while (now_ns() < end)
		x++;
}

/*
 * One normal session after everything the programs did: configure, map
 * the control page, start, run, stop, read the whole stream with read(),
 * and compare it with the statistics.  Every other one walks user call
 * chains by unwind tables, the fuzzer's own executable through a table
 * of random rules (valid ones: the walk must end, whatever they say).
 */
static void health(void)
{
	static unsigned long round;
	int tables = round++ & 1;
	struct rprof_config cfg = { .size = sizeof(cfg), .nr_events = 1, .buffer_pages = session_pages };
	struct rprof_stats st = { .size = sizeof(st) };
	uint64_t samples = 0, lost = 0, starts = 0, stops = 0;
	int fd, ret = -1, tries, eof = 0;
	char *buf = scratch();

	cfg.events[0].kind = RPROF_EVENT_CPU_CLOCK;
	cfg.events[0].flags = RPROF_EVENT_FREQ;
	cfg.events[0].period = 1000;
	if (tables) {
		cfg.flags = RPROF_CONFIG_CALLCHAIN | RPROF_CONFIG_UNWIND_TABLES;
		cfg.max_kernel_frames = round & 2 ? 16 : 0;
		cfg.max_user_frames = RPROF_MAX_FRAMES;
	}
	fd = open(opt.device, O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		oracle_fail("health: cannot open %s: %s", opt.device, strerror(errno));
		return;
	}
	/* A task of ours that is still exiting may hold a file for a moment. */
	for (tries = 0; tries < 100; tries++) {
		ret = ioctl(fd, RPROF_IOC_SET_CONFIG, &cfg);
		if (ret == 0 || errno != EBUSY)
			break;
		usleep(20000);
	}
	if (ret < 0) {
		oracle_fail("health: SET_CONFIG of a good configuration: %s", strerror(errno));
		goto out;
	}
	if (tables) {
		int res = unwind_upload_self(fd, mix64(opt.seed ^ round));

		if (res) {
			oracle_fail("health: ADD_UNWIND of a valid table: %s", strerrorname_np(res));
			goto out;
		}
	}
	if (ioctl(fd, RPROF_IOC_START) < 0) {
		oracle_fail("health: START: %s", strerror(errno));
		goto out;
	}
	busy_ms(30);
	if (ioctl(fd, RPROF_IOC_STOP) < 0) {
		oracle_fail("health: STOP: %s", strerror(errno));
		goto out;
	}
	for (tries = 0; tries < 1000 && !eof; tries++) {
		ssize_t n = read(fd, buf, 65536), pos;

		if (n == 0) {
			eof = 1;
		} else if (n < 0 && errno == EAGAIN) {
			ioctl(fd, RPROF_IOC_FLUSH);
		} else if (n < 0) {
			oracle_fail("health: read: %s", strerror(errno));
			goto out;
		}
		for (pos = 0; pos + 8 <= n;) {
			const struct rprof_record_header *h = (const void *)(buf + pos);

			if (h->size < 8 || h->size % 8 || pos + h->size > n) {
				oracle_fail("health: record of size %u at %zd of a %zd-byte read", h->size, pos, n);
				goto out;
			}
			if (h->type == RPROF_RECORD_SAMPLE)
				samples++;
			else if (h->type == RPROF_RECORD_LOST)
				lost += ((const struct rprof_lost *)h)->count;
			else if (h->type == RPROF_RECORD_START)
				starts++;
			else if (h->type == RPROF_RECORD_STOP)
				stops++;
			pos += h->size;
		}
	}
	if (!eof) {
		oracle_fail("health: no end of stream after STOP");
		goto out;
	}
	if (ioctl(fd, RPROF_IOC_GET_STATS, &st) < 0) {
		oracle_fail("health: GET_STATS: %s", strerror(errno));
		goto out;
	}
	{
		const struct rprof_cpu_stats *t = &st.total;
		/* lost_mm_busy: a total only, beside st.total (VER2). */
		uint64_t losses = t->lost_ring + t->lost_buffer + t->lost_no_mm + t->lost_no_mapping +
				  t->lost_no_cookie + st.lost_mm_busy;

		if (t->samples != t->delivered + losses || samples != t->delivered || lost != losses ||
		    starts != 1 || stops != 1)
			oracle_fail("health: samples %llu, delivered %llu, losses %llu; the stream: %llu samples, "
				    "%llu lost, %llu START, %llu STOP",
				    (unsigned long long)t->samples, (unsigned long long)t->delivered,
				    (unsigned long long)losses, (unsigned long long)samples,
				    (unsigned long long)lost, (unsigned long long)starts, (unsigned long long)stops);
	}
out:
	close(fd);
}

/* ---- the reach table --------------------------------------------------------------- */

static void print_reach(void)
{
	char nb[64], rb[32];

	printf("# reach: results per call (ioctl rows by number; waiter rows per blocking call),\n"
	       "# and the time spent in them\n");
	for (int row = 0; row < NROWS; row++) {
		uint64_t *r = sh->reach[row], done[NRES] = { 0 };
		int first = 1;

		for (;;) {
			int best = -1;

			/* ok first, then by count */
			for (int i = 0; i < NRES; i++)
				if (r[i] && !done[i] && (best < 0 || (i == RES_OK) || (best != RES_OK && r[i] > r[best])))
					best = i;
			if (best < 0)
				break;
			done[best] = 1;
			if (first)
				printf("%-22s", row_name(row, nb, sizeof(nb)));
			printf("%s %s %llu", first ? "" : ",", res_name(best, rb, sizeof(rb)),
			       (unsigned long long)r[best]);
			first = 0;
		}
		if (first && sh->ns[row])
			printf("%-22s", row_name(row, nb, sizeof(nb)));
		if (!first || sh->ns[row])
			printf(sh->ns[row] ? " (%llu ms)\n" : "\n", (unsigned long long)(sh->ns[row] / 1000000));
	}
}

/* Runs fn, counting its time in `row`. */
static void timed(int row, void (*fn)(void))
{
	uint64_t t0 = now_ns();

	fn();
	reach_add(row, RES_OK);
	__atomic_fetch_add(&sh->ns[row], now_ns() - t0, __ATOMIC_RELAXED);
}

/* ---- main -------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: rprof-fuzz [-s SEED] [-n CALLS] [-t SECONDS] [-i FIRST] [-p] [-v] [-k]\n"
		"                  [-g] [-r FILE] [-x CALL,...] [-H N] [-D DEVICE]\n"
		"  -s SEED     seed of the run (default: from the clock)\n"
		"  -n CALLS    stop after CALLS calls (default 1000 without -t)\n"
		"  -t SECONDS  stop after SECONDS\n"
		"  -i FIRST    start at program FIRST of the run\n"
		"  -p          print each program before it runs\n"
		"  -v          print each call with its result\n"
		"  -k          one line per program in /dev/kmsg\n"
		"  -g          generate and print programs, run nothing\n"
		"  -r FILE     run the programs of FILE (as -p prints them)\n"
		"  -x CALLS    never generate these calls (comma-separated names)\n"
		"  -H N        health check every N programs (0: only at the end; default 50)\n"
		"  -D DEVICE   the device (default /dev/rprof)\n");
	exit(2);
}

static void options(int argc, char **argv)
{
	int c;
	char *end;

	opt.seed = now_ns() ^ ((uint64_t)getpid() << 32);
	while ((c = getopt(argc, argv, "s:n:t:i:pvkgr:x:H:D:h")) != -1) {
		switch (c) {
		case 's':
			opt.seed = strtoull(optarg, &end, 0);
			if (*end)
				usage();
			break;
		case 'n':
			opt.calls = strtol(optarg, &end, 0);
			if (*end || opt.calls < 0)
				usage();
			break;
		case 't':
			opt.seconds = strtod(optarg, &end);
			if (*end)
				usage();
			break;
		case 'i':
			opt.first = strtoul(optarg, &end, 0);
			if (*end)
				usage();
			break;
		case 'p':
			opt.print = 1;
			break;
		case 'v':
			opt.verbose = 1;
			break;
		case 'k':
			opt.kmsg = 1;
			break;
		case 'g':
			opt.dry = 1;
			opt.print = 1;
			break;
		case 'r':
			opt.replay = optarg;
			break;
		case 'x':
			for (char *save = NULL, *name = strtok_r(optarg, ",", &save); name;
			     name = strtok_r(NULL, ",", &save)) {
				int k = call_by_name(name);

				if (k < 0) {
					fprintf(stderr, "rprof-fuzz: no call named '%s'\n", name);
					usage();
				}
				opt.excluded |= 1ULL << k;
			}
			break;
		case 'H':
			opt.health_every = atoi(optarg);
			break;
		case 'D':
			opt.device = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (opt.calls < 0 && opt.seconds <= 0 && !opt.replay)
		opt.calls = 1000;
}

/* The module's buffer_pages parameter. */
static size_t read_module_pages(void)
{
	FILE *f = fopen("/sys/module/rprof/parameters/buffer_pages", "r");
	unsigned long pages = 0;

	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return pages ? pages : 256;
}


/*
 * The event buffer of program `p`'s valid SET_CONFIGs, from its seed: the
 * module's (asked for with 0 or spelt out), half, twice, four or sixteen
 * times it (the most a session may ask for).  Nothing of the program
 * before is left (cleanup closes every file and mapping, and no session
 * outlives its files), so the mmap and control-page oracles know the size
 * of every data area the program can map.
 */
static void choose_buffer(const struct prog *p)
{
	size_t pages = module_pages;

	switch (mix64(p->seed ^ 0x6275666665722e) % 6) {
	case 0: session_pages = 0; break;
	case 1: session_pages = pages; break;
	case 2: session_pages = pages > 1 ? pages / 2 : pages; break;
	case 3: session_pages = pages * 2; break;
	case 4: session_pages = pages * 4; break;
	default: session_pages = pages * 16 < 65536 ? pages * 16 : 65536; break;
	}
	data_size = (session_pages ? session_pages : pages) * page_size;
}

static void kmsg(const struct prog *p, long first)
{
	char line[160];
	int n;

	if (kmsg_fd < 0)
		return;
	n = snprintf(line, sizeof(line), "rprof-fuzz: -s %#llx prog %lu (%d calls from call %ld)\n",
		     (unsigned long long)opt.seed, p->index, p->n, first);
	if (write(kmsg_fd, line, n) < 0)
		kmsg_fd = -1;
}

int main(int argc, char **argv)
{
	uint64_t start, last_note;
	unsigned long index, programs = 0;
	long done = 0;
	FILE *replay = NULL;
	int lineno = 0, i, stopped = 0;

	options(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	page_size = sysconf(_SC_PAGESIZE);
	module_pages = read_module_pages();
	data_size = module_pages * page_size;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("rprof-fuzz: mmap");
		return 3;
	}
	for (i = 0; i < NFD; i++)
		S.fd[i] = -1;
	for (i = 0; i < NEXTRA; i++)
		S.extra[i] = -1;
	for (i = 0; i < NEP; i++)
		S.ep[i] = -1;
	if (opt.replay) {
		replay = fopen(opt.replay, "r");
		if (!replay) {
			msg("cannot open %s: %s", opt.replay, strerror(errno));
			return 2;
		}
	}
	if (!opt.dry) {
		int fd = open(opt.device, O_RDWR);

		if (fd < 0) {
			msg("cannot open %s: %s", opt.device, strerror(errno));
			return 3;
		}
		close(fd);
		unwind_setup();
		if (opt.kmsg) {
			/* Lines written to /dev/kmsg are rate-limited (ten in
			 * five seconds) unless printk_devkmsg says "on". */
			int fd = open("/proc/sys/kernel/printk_devkmsg", O_WRONLY);

			if (fd >= 0) {
				if (write(fd, "on\n", 3) < 0)
					msg("cannot turn off the rate limit of /dev/kmsg");
				close(fd);
			}
			kmsg_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
		}
	}
	msg("seed %#llx, %s%ld calls, %g s; event buffers of 0, 1/2, 1, 2, 4 and 16 times %zu pages, one a program (replay: rprof-fuzz -s %#llx -n CALLS)",
	    (unsigned long long)opt.seed, opt.calls < 0 ? "unlimited " : "", opt.calls < 0 ? 0 : opt.calls,
	    opt.seconds, module_pages, (unsigned long long)opt.seed);
	threads_start();

	start = last_note = now_ns();
	for (index = opt.first;; index++) {
		struct prog p;
		long left = opt.calls < 0 ? MAX_PROG : opt.calls - done;

		if (left <= 0 || stopped)
			break;
		if (replay) {
			int r = prog_parse(replay, &p, index, &lineno);

			if (r < 0)
				return 2;
			if (r == 0)
				break;
			if (p.n > left)
				p.n = left;
		} else {
			prog_generate(&p, index, opt.seed, left > MAX_PROG ? MAX_PROG : left);
		}
		if (opt.print && !opt.verbose)
			prog_print(&p, stdout, done);
		if (opt.verbose)
			printf("# prog %lu seed %#llx calls %ld-%ld\n", p.index, (unsigned long long)p.seed, done,
			       done + p.n - 1);
		if (opt.dry) {
			done += p.n;
			programs++;
			continue;
		}
		kmsg(&p, done);
		choose_buffer(&p);
		model_program_start();
		for (i = 0; i < p.n; i++) {
			if (opt.seconds > 0 && now_ns() - start > opt.seconds * 1e9) {
				stopped = 1;
				break;
			}
			if (!(p.c[i].async && worker_submit(&p.c[i])))
				run_call(&p.c[i]);
			done++;
		}
		timed(ROW_CLEANUP, cleanup);
		programs++;
		if (opt.health_every > 0 && programs % opt.health_every == 0)
			timed(ROW_HEALTH, health);
		if (now_ns() - last_note > 30e9) {
			last_note = now_ns();
			msg("%ld calls, %lu programs, %.0f s", done, programs, (last_note - start) / 1e9);
		}
	}
	if (!opt.dry) {
		timed(ROW_CLEANUP, cleanup);
		timed(ROW_HEALTH, health);
		threads_stop();
	}
	msg("seed %#llx: %ld calls in %lu programs, %.1f s; %llu oracle violations", (unsigned long long)opt.seed,
	    done, programs, (now_ns() - start) / 1e9, (unsigned long long)sh->violations);
	msg("replay: rprof-fuzz -s %#llx -i %lu -n %ld", (unsigned long long)opt.seed, opt.first, done);
	if (!opt.dry)
		print_reach();
	return sh->violations ? 1 : 0;
}
