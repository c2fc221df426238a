/*
 * fifo_spin SECONDS: spins for SECONDS on every online CPU at once, one
 * thread per CPU, each pinned and at SCHED_FIFO priority 50, so that no
 * ordinary (CFS) task, the kernel's workqueue workers included, runs on
 * any CPU while it spins, except in the share the kernel's RT throttling
 * (sched_rt_runtime_us) leaves them.  The hrtimers of sampling still fire.
 * 30-sampling.sh uses it to keep rprof's drain from running, so that the
 * per-CPU rings overflow for real and the loss accounting is checked with
 * ring drops.  Exits 0 when every thread got its CPU and priority.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double seconds;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
	long cpu = (long)arg;
	struct sched_param sp = { .sched_priority = 50 };
	cpu_set_t set;
	double end;
	int err;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!err)
		err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (err) {
		fprintf(stderr, "fifo_spin: cpu %ld: %s\n", cpu, strerror(err));
		return (void *)1;
	}
	end = now() + seconds;
	while (now() < end)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN), i;
	pthread_t *t;
	int bad = 0;

	if (argc != 2 || (seconds = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: fifo_spin SECONDS\n");
		return 2;
	}
	t = calloc(n, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, spin, (void *)i))
			return 1;
	for (i = 0; i < n; i++) {
		void *r;

		pthread_join(t[i], &r);
		bad |= r != NULL;
	}
	return bad;
}
