/*
 * stalls SECONDS MS: one busy CPU that also watches the guest's timers.
 * The main thread spins for SECONDS; a second thread sleeps 10 ms at a
 * time and prints every wake-up at least MS milliseconds late, as
 * "START END" in CLOCK_REALTIME seconds (when it should have woken, when
 * it did), one line each, as soon as it sees one.
 *
 * A late wake-up is time in which the guest's timers did not fire: its
 * vCPUs not scheduled on a busy host (under TCG the guest's clock follows
 * the host's, so time goes on while nothing runs), or, seen in CI, the
 * vCPUs running while QEMU's timer thread waits for a host CPU, so that
 * no timer interrupt comes for seconds.  No hrtimer-driven sampler
 * (cpu-clock) takes samples then, so a check that counts samples per
 * second must leave such seconds out (70-cli.sh).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double end, min_late;

static void *watch(void *arg)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	double due, t;

	(void)arg;
	while (now() < end) {
		due = now() + 0.010;
		nanosleep(&tick, NULL);
		t = now();
		if (t - due >= min_late) {
			printf("%.3f %.3f\n", due, t);
			fflush(stdout);
		}
	}
	return NULL;
}

volatile unsigned long sink;

int main(int argc, char **argv)
{
	unsigned long x = 1;
	pthread_t watcher;

	if (argc != 3 || atof(argv[1]) <= 0 || atof(argv[2]) <= 0) {
		fprintf(stderr, "usage: stalls SECONDS MS\n");
		return 2;
	}
	min_late = atof(argv[2]) / 1e3;
	end = now() + atof(argv[1]);
	if (pthread_create(&watcher, NULL, watch, NULL)) {
		fprintf(stderr, "stalls: pthread_create failed\n");
		return 1;
	}
	while (now() < end) {
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
	pthread_join(watcher, NULL);
	return 0;
}
