// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark's workload: COPIES processes, each pinned to its own CPU
 * (copy i on CPU i), run the same CPU-bound loop of ITERATIONS steps of a
 * 64-bit linear congruential generator, started together.  Each copy
 * times its own loop (CLOCK_MONOTONIC), and the span runs from the first
 * copy's start to the last copy's end; the parent also counts the CPU time
 * the profiler's reader (its parent under `perf record -- work`, its
 * grandparent under `rprof record -- work`, see reader_pid) spent over
 * the same window, with a counting
 * task-clock perf event on that process (the benchmark kernel has no
 * POSIX CPU-time clocks; the event costs the reader a little at each of
 * its context switches).
 *
 *   work COPIES ITERATIONS [DEPTH]
 *
 * With DEPTH, each copy runs the loop DEPTH calls deep (a recursion with
 * frame pointers), so that a sampled user call chain has DEPTH frames
 * more than without: the call-chain figures of `make bench`.
 *
 * prints one line:
 *   work copies=N iterations=I ns=NS0,NS1,... span_ns=S reader_cpu_ns=R check=X
 *
 * (reader_cpu_ns=-1 if the event could not be opened).
 *
 * Static, so that it runs in the busybox guest as it is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_COPIES 64

struct result {
	uint64_t start, end; /* CLOCK_MONOTONIC, ns */
	uint64_t check;
};

static uint64_t ns_of(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The parent process of pid and its comm (from /proc/PID/stat), or -1. */
static pid_t parent_of(pid_t pid, char *comm, size_t len)
{
	char path[64], buf[512];
	int ppid = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	if (!open || !close || close < open)
		return -1;
	snprintf(comm, len, "%.*s", (int)(close - open - 1), open + 1);
	if (sscanf(close + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/*
 * The profiler's reader process: our parent, or, when our parent is a
 * fork of the process above it that did not exec (the same comm: `rprof
 * record -- CMD` runs CMD under a forked subreaper that only waits), the
 * process above.  perf record forks the command itself, whose parent is
 * then perf.
 */
static pid_t reader_pid(void)
{
	char comm[64], up_comm[64];
	pid_t parent = getppid();
	pid_t up = parent_of(parent, comm, sizeof(comm));

	if (up > 1 && parent_of(up, up_comm, sizeof(up_comm)) >= 0 &&
	    strcmp(comm, up_comm) == 0)
		return up;
	return parent;
}

/* A counting task-clock event on the process pid (its main thread). */
static int task_clock(pid_t pid)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_TASK_CLOCK,
	};

	return syscall(SYS_perf_event_open, &attr, pid, -1, -1, 0);
}

static int64_t read_counter(int fd)
{
	uint64_t v;

	return fd >= 0 && read(fd, &v, sizeof(v)) == sizeof(v) ? (int64_t)v : -1;
}

/* The work: Knuth's MMIX LCG, one multiply and one add a step. */
__attribute__((noinline)) static uint64_t lcg(uint64_t iterations)
{
	uint64_t x = 1;

	for (uint64_t i = 0; i < iterations; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		/* Keep the loop a loop: no closed form for the compiler. */
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/* The loop `depth` calls down: the code after the call keeps each frame
 * (no tail call), and the recursion is not unrolled. */
__attribute__((noinline)) static uint64_t deep(int depth, uint64_t iterations)
{
	uint64_t x;

	if (depth <= 0)
		return lcg(iterations);
	x = deep(depth - 1, iterations);
	__asm__ volatile("" : "+r"(x));
	return x;
}

static void copy(int cpu, int go, uint64_t iterations, int depth, struct result *out)
{
	cpu_set_t set;
	char c;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "work: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
	/* Wait for the start: the parent closes the pipe. */
	if (read(go, &c, 1) < 0)
		_exit(1);
	out->start = ns_of(CLOCK_MONOTONIC);
	out->check = depth > 0 ? deep(depth, iterations) : lcg(iterations);
	out->end = ns_of(CLOCK_MONOTONIC);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: work COPIES ITERATIONS [DEPTH]\n");
		return 2;
	}
	int copies = atoi(argv[1]);
	uint64_t iterations = strtoull(argv[2], NULL, 0);
	int depth = argc == 4 ? atoi(argv[3]) : 0;

	if (copies < 1 || copies > MAX_COPIES || iterations == 0 || depth < 0 || depth > 1000) {
		fprintf(stderr, "work: bad arguments\n");
		return 2;
	}
	struct result *res = mmap(NULL, sizeof(*res) * MAX_COPIES, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int go[2];

	if (res == MAP_FAILED || pipe(go)) {
		perror("work");
		return 1;
	}
	for (int i = 0; i < copies; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("work: fork");
			return 1;
		}
		if (pid == 0) {
			close(go[1]);
			copy(i, go[0], iterations, depth, &res[i]);
		}
	}
	close(go[0]);

	/* The reader: the profiler (or the shell without one). */
	int reader = task_clock(reader_pid());
	/* Let every copy reach its read() before the start. */
	usleep(20000);
	int64_t r0 = read_counter(reader);

	close(go[1]);
	int failed = 0, status;

	while (wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	int64_t r1 = read_counter(reader);

	uint64_t first = UINT64_MAX, last = 0;

	printf("work copies=%d iterations=%" PRIu64 " ns=", copies, iterations);
	for (int i = 0; i < copies; i++) {
		printf("%s%" PRIu64, i ? "," : "", res[i].end - res[i].start);
		first = res[i].start < first ? res[i].start : first;
		last = res[i].end > last ? res[i].end : last;
	}
	printf(" span_ns=%" PRIu64 " reader_cpu_ns=%" PRId64 " check=%" PRIx64 "\n", last - first,
	       r0 < 0 || r1 < 0 ? (int64_t)-1 : r1 - r0, res[0].check);
	return failed;
}
