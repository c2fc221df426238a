/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rprof-fuzz: a fuzzer of call sequences against /dev/rprof.
 *
 * The pieces and the files they live in:
 *   main.c     options, the program loop, cleanup between programs, the
 *              health check and the reach table;
 *   gen.c      the random source, program generation, printing and parsing
 *              (the replay format);
 *   calls.c    the grammar: one generator and one executor per call kind;
 *   threads.c  the thread pools (async calls, background waiters), the
 *              watchdog that interrupts blocking calls, fault guards;
 *   perfuser.c a perf_event_open user running beside the device's users.
 *
 * A program is a short list of calls; every call is a kind and six 64-bit
 * arguments, fixed at generation time and never derived from results, so
 * a seed (or a printed program) replays the same calls.  Arguments name
 * resource slots (fd slot 2, mapping slot 4, ...) rather than values;
 * what a slot holds when the call runs is the program's business.
 */
#ifndef RPROF_FUZZ_H
#define RPROF_FUZZ_H

#include <pthread.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Resource slots. */
#define NFD 4       /* open files of the device */
#define NEXTRA 16   /* files displaced from a slot, closed at cleanup */
#define NMAP 6      /* mappings of the device */
#define NEP 2       /* epoll instances */
#define NBG 2       /* background waiter threads */
#define NWORKER 3   /* threads running calls marked async */
#define NCHILD 3    /* child processes */
#define NARGS 6

/* Thread indices (per-thread scratch memory and watchdog entries). */
#define T_MAIN 0
#define T_WORKER0 1
#define T_BG0 (T_WORKER0 + NWORKER)
#define T_PERF (T_BG0 + NBG)
#define NTHREADS (T_PERF + 1)

/*
 * Results, as counted in the reach table: 0 is success, 1..RES_ERRNO_MAX an
 * errno, then outcomes that are not an errno.
 */
#define RES_OK 0
#define RES_ERRNO_MAX 150
#define RES_EOF (RES_ERRNO_MAX + 1)  /* read-like call returned 0 bytes */
#define RES_SEGV (RES_ERRNO_MAX + 2) /* a guarded access got SIGSEGV */
#define RES_BUS (RES_ERRNO_MAX + 3)  /* ... SIGBUS */
#define RES_NOOP (RES_ERRNO_MAX + 4) /* nothing to do (empty slot) */
#define RES_KILLED (RES_ERRNO_MAX + 5) /* a child ended by a signal */
#define RES_EXIT (RES_ERRNO_MAX + 6)   /* a child exited with a status != 0 */
#define NRES (RES_ERRNO_MAX + 7)

/* One call of a program. */
struct call {
	uint16_t kind;
	uint8_t async; /* run on a worker thread, concurrently with the next */
	uint64_t a[NARGS];
};

#define MAX_PROG 80

struct prog {
	unsigned long index; /* program number in the run */
	uint64_t seed;
	int n;
	struct call c[MAX_PROG];
};

/* xorshift64* */
struct rng {
	uint64_t s;
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rnd(struct rng *r);
/* Uniform in [0, n), n > 0. */
uint64_t rn(struct rng *r, uint64_t n);
/* True with probability pct/100. */
int chance(struct rng *r, unsigned pct);
uint64_t mix64(uint64_t x);

uint64_t pick(struct rng *r, const uint64_t *v, size_t n);
/* One of the values; at most one of them may draw from r (C leaves the
 * order of their evaluation open, and replays must not depend on it). */
#define PICK(r, ...)                                                       \
	pick(r, (const uint64_t[]){ __VA_ARGS__ },                         \
	     sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t))

/* The grammar (calls.c). */
enum call_flags {
	CF_NO_CHILD = 1 << 0, /* not inside a forked child's sub-program */
	CF_NO_ASYNC = 1 << 1, /* always on the main thread */
};

struct call_def {
	const char *name;
	unsigned weight;
	unsigned flags;
	void (*gen)(struct rng *r, uint64_t *a);
	/* Runs the call; returns a result index (RES_OK, an errno, R_*). */
	int (*run)(const uint64_t *a);
	/* Row of the reach table to count the result in (NULL: the kind's). */
	int (*row)(const uint64_t *a);
};

extern const struct call_def calls[];
extern const int ncalls;
int call_by_name(const char *name);
void gen_setup_prefix(struct rng *r, struct prog *p, int max);
void gen_open_first(struct rng *r, struct prog *p, int max);

/* Program generation and the text form (gen.c). */
void prog_generate(struct prog *p, unsigned long index, uint64_t seed, int max_calls);
void prog_print(const struct prog *p, FILE *out, int first_call);
int prog_parse(FILE *in, struct prog *p, unsigned long index, int *lineno);
uint64_t prog_seed(uint64_t seed, unsigned long index);
/* A sub-program for a forked child. */
void prog_generate_child(struct prog *p, uint64_t seed, int n);

/* Execution context (main.c). */
struct map_slot {
	char *addr; /* NULL: empty */
	size_t len;
	long pgoff;
	int prot;
	int shared;
};

struct state {
	pthread_mutex_t lock; /* slots, and every change of the address space */
	int fd[NFD];
	int extra[NEXTRA];
	struct map_slot map[NMAP];
	int ep[NEP];
	pid_t child[NCHILD];
	int cpu_offline; /* we took cpu1 offline */
};

struct options {
	uint64_t seed;
	long calls;      /* budget; < 0: unlimited */
	double seconds;  /* duration; <= 0: unlimited */
	int print;       /* -p: print programs */
	int verbose;     /* -v: print programs and results */
	int kmsg;        /* -k: one line per program in /dev/kmsg */
	int dry;         /* -g: generate and print, execute nothing */
	unsigned long first; /* -i: first program index */
	const char *device;
	const char *replay; /* -r FILE */
	uint64_t excluded;  /* -x: call kinds never generated (bit = kind) */
	int health_every;
};

extern struct state S;
extern struct options opt;
extern size_t page_size;
extern size_t data_size; /* bytes of the event buffer's data area */
/* rprof_config.buffer_pages of every valid SET_CONFIG of the program
 * running (0: the module's parameter), chosen from its seed; data_size is
 * its size. */
extern uint32_t session_pages;
/* The module's buffer_pages parameter: the default event buffer. */
extern size_t module_pages;
extern int in_child;     /* inside a forked child: no locks, no threads */

void state_lock(void);
void state_unlock(void);
/* Counts `res` in reach row `row`. */
void reach_add(int row, int res);
int errno_res(int e);
/* Marks a property the module must keep as violated (exit status 1). */
void oracle_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reach table rows beyond one per call kind. */
enum {
	ROW_IOCTL_NR0 = 0x100, /* + nr: raw ioctls with rprof's magic */
	ROW_IOCTL_FOREIGN = 0x200,
	ROW_SET_CONFIG_MUTATED,
	ROW_SET_CONFIG_BADPTR,
	/* Valid configurations (also counted in set_config) with an event
	 * buffer of another size than the module's, with call chains. */
	ROW_SET_CONFIG_PAGES,
	ROW_SET_CONFIG_CHAINS,
	ROW_HEALTH,
	ROW_PERF_OPEN,
	ROW_PERF_IOC_ID,
	ROW_CHILD_EXIT,
	ROW_CONSUME_MALFORMED,
	ROW_CLEANUP,
	ROW_CLEANUP_THREADS, /* time only: parts of ROW_CLEANUP */
	ROW_CLEANUP_CHILDREN,
	ROW_CLEANUP_FILES,
	ROW_CLEANUP_CPU,
	ROW_SET_CONFIG_UNWIND,   /* valid, with RPROF_CONFIG_UNWIND_TABLES */
	ROW_SET_CONFIG_NOUSER,   /* UNWIND_TABLES without a user depth */
	ROW_UNWIND_KNOWN,        /* ADD_UNWIND judged with the session known */
	ROW_UNWIND_GOOD,         /* ... and nothing wrong with it: must be ok */
	ROW_UNWIND_OTHER,        /* ADD_UNWIND on another kind of file */
	ROW_UNWIND_CLASS0,       /* + the table's class (unwind.c) */
	ROW_BG0 = ROW_UNWIND_CLASS0 + 6, /* + kind: background waiters' calls */
	NROWS = ROW_BG0 + 6
};
const char *row_name(int row, char *buf, size_t n);

/* Threads, watchdog, guards (threads.c). */
extern __thread int tidx;
void threads_start(void);
void threads_stop(void);
/* Makes the calling thread thread `i` (scratch memory, watchdog entry). */
void register_thread(int i);
/* Blocking section: the watchdog interrupts this thread (SIGUSR1) once
 * `ms` have passed, and again every few ms until disarm(). */
void arm(unsigned ms);
/* The same, naming the call for the report of a stuck thread. */
void arm_call(unsigned ms, const char *what);
void disarm(void);
/* Runs call `c` on an idle worker; returns 0 if none was idle. */
int worker_submit(const struct call *c);
void workers_wait(void);
/* Whether a worker runs a call now. */
int workers_busy(void);
/* Background waiters. */
void bg_start(int slot, int kind, int target, unsigned ms);
void bg_stop(int slot);
void bg_stop_all(void);
/* Per-thread scratch: a read/write area of SCRATCH bytes, then a
 * PROT_NONE page; a read-only page before it. */
#define SCRATCH (128 * 1024)
char *scratch(void);
char *scratch_ro(void);
char *scratch_end(void); /* first byte of the PROT_NONE page */
void set_ro(void *page, int ro);

/* The guard of the calling thread; volatile, so that the compiler keeps
 * both stores around the guarded statement (to it they look dead). */
extern __thread sigjmp_buf *volatile guard_jb;
extern __thread volatile int guard_sig;
/* Runs STMT; returns 0, or SIGSEGV/SIGBUS if it faulted. */
#define GUARDED(STMT)                                                      \
	({                                                                 \
		sigjmp_buf _jb;                                            \
		volatile int _r = 0;                                       \
		if (sigsetjmp(_jb, 1) == 0) {                              \
			guard_jb = &_jb;                                   \
			__atomic_signal_fence(__ATOMIC_SEQ_CST);           \
			STMT;                                              \
			__atomic_signal_fence(__ATOMIC_SEQ_CST);           \
			guard_jb = NULL;                                   \
		} else {                                                   \
			guard_jb = NULL;                                   \
			_r = guard_sig;                                    \
		}                                                          \
		_r;                                                        \
	})
int sig_res(int sig);
void child_timer_start(void);

/* The perf_event_open user (perfuser.c). */
void perf_user_start(void);
void perf_user_stop(void);
/* Switches it on or off; off returns once its round has ended. */
void perf_user_set(int on);

/* Ends child slot i: signal `sig` (0: none), wait up to `ms`, then
 * SIGKILL (calls.c). */
int child_reap(int i, int sig, unsigned ms);

/* Whether fd is open on the device under test (calls.c). */
int is_rprof_file(int fd);
/* Puts len bytes of src where selector sel says (a good buffer most of
 * the time; NULL, kernel, PROT_NONE, read-only, half-mapped, unaligned,
 * non-canonical) and returns the address to give the kernel (calls.c). */
void *place(uint64_t sel, const void *src, size_t len);

/*
 * RPROF_IOC_ADD_UNWIND (unwind.c), and the model of the session its
 * oracle keeps: every call that may change the session brackets itself
 * with model_enter() and a model_leave_*(); a raw ioctl that may change
 * it calls model_unknown(), a fork that runs calls model_forked().
 */
void unwind_setup(void); /* once, before the threads start */
void gen_add_unwind(struct rng *r, uint64_t *a);
/* A valid table of random rules for the fuzzer's own executable. */
void gen_add_unwind_self(struct rng *r, uint64_t *a, uint64_t f);
int run_add_unwind(const uint64_t *a);
/* A valid table of random rules for /proc/self/exe, uploaded through fd
 * (the health check); returns the ioctl's result. */
int unwind_upload_self(int fd, uint64_t seed);
void model_program_start(void);
void model_enter(void);
void model_leave_config(int res, uint32_t flags);
void model_leave_reset(int res);
void model_unknown(void);
void model_forked(void);

/* Call execution (main.c). */
int run_call(const struct call *c);
uint64_t now_ns(void);

#endif /* RPROF_FUZZ_H */
