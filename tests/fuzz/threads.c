// SPDX-License-Identifier: GPL-2.0
/*
 * Threads of rprof-fuzz: the workers that run calls marked async, the
 * background waiters that sit in poll/epoll_wait/select/read while the
 * main thread reconfigures, and the watchdog that interrupts any of them
 * stuck in a blocking call.
 *
 * Every thread is created before the first program runs, and so is every
 * thread's scratch memory: while programs run, the only changes to the
 * address space are the program's own (under the state lock).
 *
 * Blocking calls: a thread arms its watchdog entry with a deadline before
 * a call that may block; past it, the watchdog sends SIGUSR1 every few
 * milliseconds until the thread disarms.  The handler does nothing and is
 * installed without SA_RESTART, so the call returns EINTR.  (A blocking
 * read() of the device with no data may legitimately wait forever.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/time.h>
#include <unistd.h>

#include "fuzz.h"

__thread int tidx;
__thread sigjmp_buf *volatile guard_jb;
__thread volatile int guard_sig;

static struct {
	pthread_t t;
	uint64_t deadline; /* ns, 0: not in a blocking call */
	int live;
	int reported; /* the deadline this thread was reported stuck past */
	const char *what; /* the call it is in */
} wd[NTHREADS];

/* A call still running this long past its deadline is reported: the
 * signals did not end it, so the task is stuck in the kernel. */
#define STUCK_NS 20000000000ULL

static char *scr[NTHREADS];
static volatile int quit;
static pthread_t wd_thread;

/* ---- scratch memory ---------------------------------------------------------- */

/* Per thread: a read-only page, SCRATCH bytes, a PROT_NONE page. */
static void scratch_setup(void)
{
	size_t len = 2 * page_size + SCRATCH;

	for (int i = 0; i < NTHREADS; i++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			msg("cannot map scratch memory: %s", strerror(errno));
			exit(3);
		}
		mprotect(p, page_size, PROT_READ);
		mprotect(p + page_size + SCRATCH, page_size, PROT_NONE);
		scr[i] = p;
	}
}

char *scratch(void)
{
	return scr[tidx] + page_size;
}

char *scratch_ro(void)
{
	return scr[tidx];
}

char *scratch_end(void)
{
	return scr[tidx] + page_size + SCRATCH;
}

void set_ro(void *page, int ro)
{
	mprotect(page, page_size, ro ? PROT_READ : PROT_READ | PROT_WRITE);
}

/* ---- signals ------------------------------------------------------------------- */

static void on_nothing(int sig)
{
	(void)sig;
}

static void on_fault(int sig)
{
	if (guard_jb) {
		guard_sig = sig;
		siglongjmp(*guard_jb, 1);
	}
	/* Not in a guarded access: a bug of the fuzzer.  Die of it. */
	signal(sig, SIG_DFL);
}

int sig_res(int sig)
{
	return sig == SIGBUS ? RES_BUS : RES_SEGV;
}

static void signals_setup(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_nothing; /* no SA_RESTART: blocking calls end */
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_fault;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGIO, SIG_IGN); /* O_ASYNC and F_SETOWN are fuzzed */
}

/* In a forked child there is no watchdog: a timer interrupts instead. */
void child_timer_start(void)
{
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- watchdog ---------------------------------------------------------------- */

void arm_call(unsigned ms, const char *what)
{
	if (!in_child) {
		wd[tidx].what = what;
		__atomic_store_n(&wd[tidx].deadline, now_ns() + ms * 1000000ULL, __ATOMIC_RELEASE);
	}
}

void arm(unsigned ms)
{
	arm_call(ms, NULL);
}

void disarm(void)
{
	if (!in_child)
		__atomic_store_n(&wd[tidx].deadline, 0, __ATOMIC_RELEASE);
}

void register_thread(int i)
{
	tidx = i;
	wd[i].t = pthread_self();
	__atomic_store_n(&wd[i].live, 1, __ATOMIC_RELEASE);
}

static void *watchdog(void *arg)
{
	(void)arg;
	while (!quit) {
		uint64_t now = now_ns();

		for (int i = 0; i < NTHREADS; i++) {
			uint64_t d = __atomic_load_n(&wd[i].deadline, __ATOMIC_ACQUIRE);

			if (d && now > d && __atomic_load_n(&wd[i].live, __ATOMIC_ACQUIRE))
				pthread_kill(wd[i].t, SIGUSR1);
			if (d && now > d + STUCK_NS && wd[i].reported != (int)d) {
				wd[i].reported = (int)d;
				msg("thread %d stuck in %s for %llu s (signals do not end it)", i,
				    wd[i].what ? wd[i].what : "a blocking call",
				    (unsigned long long)((now - d) / 1000000000ULL));
			}
		}
		usleep(2000);
	}
	return NULL;
}

/* ---- workers for async calls ---------------------------------------------------- */

static struct {
	pthread_t t;
	int busy;
	struct call c;
} wk[NWORKER];
static pthread_mutex_t wk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wk_cv = PTHREAD_COND_INITIALIZER, wk_done = PTHREAD_COND_INITIALIZER;

static void *worker(void *arg)
{
	int i = (int)(intptr_t)arg;

	register_thread(T_WORKER0 + i);
	pthread_mutex_lock(&wk_lock);
	for (;;) {
		while (!wk[i].busy && !quit)
			pthread_cond_wait(&wk_cv, &wk_lock);
		if (!wk[i].busy)
			break;
		pthread_mutex_unlock(&wk_lock);
		run_call(&wk[i].c);
		pthread_mutex_lock(&wk_lock);
		wk[i].busy = 0;
		pthread_cond_broadcast(&wk_done);
	}
	pthread_mutex_unlock(&wk_lock);
	return NULL;
}

int worker_submit(const struct call *c)
{
	int i, ok = 0;

	pthread_mutex_lock(&wk_lock);
	for (i = 0; i < NWORKER && !ok; i++) {
		if (!wk[i].busy) {
			wk[i].c = *c;
			wk[i].busy = 1;
			ok = 1;
		}
	}
	pthread_cond_broadcast(&wk_cv);
	pthread_mutex_unlock(&wk_lock);
	return ok;
}

void workers_wait(void)
{
	pthread_mutex_lock(&wk_lock);
	for (;;) {
		int busy = 0;

		for (int i = 0; i < NWORKER; i++)
			busy |= wk[i].busy;
		if (!busy)
			break;
		pthread_cond_wait(&wk_done, &wk_lock);
	}
	pthread_mutex_unlock(&wk_lock);
}

int workers_busy(void)
{
	int busy = 0;

	pthread_mutex_lock(&wk_lock);
	for (int i = 0; i < NWORKER; i++)
		busy |= wk[i].busy;
	pthread_mutex_unlock(&wk_lock);
	return busy;
}

/* ---- background waiters --------------------------------------------------------- */

static struct {
	pthread_t t;
	int busy;
	volatile int stop;
	int kind;
	uint64_t target;
	unsigned ms;
} bg[NBG];
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cv = PTHREAD_COND_INITIALIZER, bg_done = PTHREAD_COND_INITIALIZER;

/* One blocking call of kind `kind` on the target's current fd. */
static int bg_once(int kind, uint64_t target)
{
	int fd = S.fd[target % NFD], ret, res;
	uint64_t t0 = now_ns();
	struct pollfd p = { fd, POLLIN, 0 };
	struct epoll_event ev[4];
	struct timespec ts = { 0, 10000000 };
	struct timeval tv = { 0, 10000 };
	sigset_t none;
	fd_set rs;

	arm(30);
	switch (kind) {
	case 0:
		ret = poll(&p, 1, 10);
		break;
	case 1:
		ret = epoll_wait(S.ep[target % NEP], ev, 4, 10);
		break;
	case 2:
		if (fd < 0 || fd >= FD_SETSIZE) {
			ret = -1;
			errno = EBADF;
			break;
		}
		FD_ZERO(&rs);
		FD_SET(fd, &rs);
		ret = select(fd + 1, &rs, NULL, NULL, &tv);
		break;
	case 3:
	case 5:
		ret = read(fd, scratch(), 65536);
		break;
	default:
		sigemptyset(&none);
		ret = ppoll(&p, 1, &ts, &none);
	}
	disarm();
	res = ret < 0 ? errno_res(errno) : (kind == 3 || kind == 5) && ret == 0 ? RES_EOF : RES_OK;
	/* A call that returns at once must not turn into a hot loop. */
	if (now_ns() - t0 < 1000000)
		usleep(1000);
	return res;
}

static void *waiter(void *arg)
{
	int i = (int)(intptr_t)arg;

	register_thread(T_BG0 + i);
	pthread_mutex_lock(&bg_lock);
	for (;;) {
		uint64_t end;

		while (!bg[i].busy && !quit)
			pthread_cond_wait(&bg_cv, &bg_lock);
		if (!bg[i].busy)
			break;
		pthread_mutex_unlock(&bg_lock);
		end = now_ns() + bg[i].ms * 1000000ULL;
		while (!bg[i].stop && now_ns() < end)
			reach_add(ROW_BG0 + bg[i].kind, bg_once(bg[i].kind, bg[i].target));
		pthread_mutex_lock(&bg_lock);
		bg[i].busy = 0;
		pthread_cond_broadcast(&bg_done);
	}
	pthread_mutex_unlock(&bg_lock);
	return NULL;
}

void bg_start(int i, int kind, int target, unsigned ms)
{
	pthread_mutex_lock(&bg_lock);
	if (!bg[i].busy) {
		bg[i].kind = kind;
		bg[i].target = target;
		bg[i].ms = ms;
		bg[i].stop = 0;
		bg[i].busy = 1;
		pthread_cond_broadcast(&bg_cv);
	}
	pthread_mutex_unlock(&bg_lock);
}

void bg_stop(int i)
{
	pthread_mutex_lock(&bg_lock);
	bg[i].stop = 1;
	while (bg[i].busy)
		pthread_cond_wait(&bg_done, &bg_lock);
	pthread_mutex_unlock(&bg_lock);
}

void bg_stop_all(void)
{
	/* Tell them all, and cut their current call short: the program is
	 * over, and a waiter may sit in a 10 ms poll (longer on a busy host,
	 * where timers fire late). */
	pthread_mutex_lock(&bg_lock);
	for (int i = 0; i < NBG; i++) {
		bg[i].stop = 1;
		if (bg[i].busy)
			pthread_kill(bg[i].t, SIGUSR1);
	}
	pthread_mutex_unlock(&bg_lock);
	for (int i = 0; i < NBG; i++)
		bg_stop(i);
}

/* ---- start and stop -------------------------------------------------------------- */

void threads_start(void)
{
	register_thread(T_MAIN);
	signals_setup();
	scratch_setup();
	pthread_create(&wd_thread, NULL, watchdog, NULL);
	for (intptr_t i = 0; i < NWORKER; i++)
		pthread_create(&wk[i].t, NULL, worker, (void *)i);
	for (intptr_t i = 0; i < NBG; i++)
		pthread_create(&bg[i].t, NULL, waiter, (void *)i);
	perf_user_start();
}

void threads_stop(void)
{
	workers_wait();
	bg_stop_all();
	perf_user_stop();
	pthread_mutex_lock(&wk_lock);
	pthread_mutex_lock(&bg_lock);
	quit = 1;
	pthread_cond_broadcast(&wk_cv);
	pthread_cond_broadcast(&bg_cv);
	pthread_mutex_unlock(&bg_lock);
	pthread_mutex_unlock(&wk_lock);
	for (int i = 0; i < NWORKER; i++)
		pthread_join(wk[i].t, NULL);
	for (int i = 0; i < NBG; i++)
		pthread_join(bg[i].t, NULL);
	pthread_join(wd_thread, NULL);
}
