// SPDX-License-Identifier: GPL-2.0
/*
 * A perf_event_open user beside rprof's: while switched on (the "perf"
 * call), a thread opens a software cpu-clock event, maps its ring,
 * enables it, runs a little, asks PERF_EVENT_IOC_ID into a freshly mapped
 * page it never touched (perf copies to userspace under the event
 * context's mutex, so the copy's page fault takes mmap_lock under
 * ctx->mutex), reads the count, and closes it; round after round.
 *
 * rprof takes perf's ctx->mutex too, creating its kernel counters, so the
 * two users together give lockdep both orders to compare.  rprof's
 * counters are CPU-wide, and perf gives the mutex of CPU contexts a lock
 * class of its own (cpuctx_mutex), apart from the one of task contexts:
 * the rounds alternate between an event on the thread itself (a task
 * context) and one on every task of CPU 0 or 1 (a CPU context, the class
 * rprof's counters share).
 *
 * Its mappings go to a window reserved at start and are replaced with
 * MAP_FIXED (never unmapped), under the state lock like every other change
 * of the address space.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz.h"

#define WINDOW_PAGES 3 /* the ring (one control page, one data page), one fresh page */

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int want, running, quit;
static char *window;

static void reserve(char *p, size_t len)
{
	mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

static void spin_us(unsigned us)
{
	uint64_t end = now_ns() + us * 1000ULL;
	volatile unsigned x = 0;

	while (now_ns() < end)
		x++;
}

static void round_once(void)
{
	static unsigned rounds;
	struct perf_event_attr attr;
	uint64_t count[4];
	void *ring, *fresh;
	int fd, ret, cpu_wide = rounds++ % 2;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 100000; /* ns */
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	attr.disabled = 1;
	attr.wakeup_events = 1;
	if (cpu_wide)
		fd = syscall(SYS_perf_event_open, &attr, -1, (rounds / 2) % 2, -1, PERF_FLAG_FD_CLOEXEC);
	else
		fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	reach_add(ROW_PERF_OPEN, fd < 0 ? errno_res(errno) : RES_OK);
	if (fd < 0) {
		usleep(5000);
		return;
	}
	state_lock();
	ring = mmap(window, 2 * page_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (ring == MAP_FAILED)
		reserve(window, 2 * page_size);
	state_unlock();
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	spin_us(1000);

	state_lock();
	fresh = mmap(window + 2 * page_size, page_size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	state_unlock();
	arm(50);
	ret = ioctl(fd, PERF_EVENT_IOC_ID, fresh == MAP_FAILED ? NULL : fresh);
	disarm();
	reach_add(ROW_PERF_IOC_ID, ret < 0 ? errno_res(errno) : RES_OK);
	if (read(fd, count, sizeof(count)) < 0)
		reach_add(ROW_PERF_OPEN, errno_res(errno));
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);

	state_lock();
	reserve(window, WINDOW_PAGES * page_size);
	state_unlock();
	close(fd);
}

static void *perf_user(void *arg)
{
	(void)arg;
	register_thread(T_PERF);
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!want && !quit)
			pthread_cond_wait(&cv, &lock);
		if (quit)
			break;
		running = 1;
		pthread_mutex_unlock(&lock);
		round_once();
		pthread_mutex_lock(&lock);
		running = 0;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

void perf_user_set(int on)
{
	pthread_mutex_lock(&lock);
	want = on;
	pthread_cond_broadcast(&cv);
	while (!on && running)
		pthread_cond_wait(&cv, &lock);
	pthread_mutex_unlock(&lock);
}

void perf_user_start(void)
{
	window = mmap(NULL, WINDOW_PAGES * page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	pthread_create(&thread, NULL, perf_user, NULL);
}

void perf_user_stop(void)
{
	pthread_mutex_lock(&lock);
	want = 0;
	quit = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
}
