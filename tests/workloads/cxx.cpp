// C++ built as Debian builds it (g++ -O2: no frame pointers), for the
// unwind-table tests (tests/e2e/48-unwind.sh): a frameless leaf reached 3:1
// through a virtual call and through std::sort's comparator (a lambda in
// a template the compiler instantiates and inlines as it likes), with an
// exception thrown across a frame and caught every round.
//   cxx SECONDS
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <time.h>

static volatile unsigned long sink;

extern "C" {
__attribute__((noinline)) unsigned long hot(unsigned long n)
{
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += (i * i) ^ (x >> 3);
	sink = x;
	return x;
}
}

struct Shape {
	virtual ~Shape() = default;
	virtual unsigned long work(unsigned long n) const = 0;
};

struct Square final : Shape {
	__attribute__((noinline)) unsigned long work(unsigned long n) const override
	{
		return hot(n) + 1;
	}
};

// The array each round sorts.
static const std::array<unsigned long, 12> input{ 5, 3, 7, 1, 8, 2, 6, 4, 12, 9, 11, 10 };

extern "C" {
__attribute__((noinline)) void fail_on(unsigned long v)
{
	if (v != ~0UL)
		throw std::runtime_error("every round");
}

// Three parts: a virtual call, then a throw across fail_on's frame.
__attribute__((noinline)) unsigned long virtual_path(const Shape &s, unsigned long n)
{
	unsigned long r = s.work(3 * n);
	try {
		fail_on(r);
	} catch (const std::runtime_error &) {
		r ^= 1;
	}
	return r;
}

// One part: hot from std::sort's comparator, in its first call (one call
// of hot a round on each path: the two paths differ only in n).
__attribute__((noinline)) unsigned long sort_path(unsigned long n)
{
	std::array<unsigned long, 12> v = input;
	unsigned long r = 0;
	bool first = true;
	std::sort(v.begin(), v.end(), [&](unsigned long a, unsigned long b) {
		if (first) {
			first = false;
			r += hot(n);
		}
		return a < b;
	});
	return r + v[0];
}
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	Square sq;
	const Shape &s = sq;
	unsigned long rounds = 0;
	double end = now() + secs;
	while (now() < end) {
		sink += virtual_path(s, 20000);
		sink += sort_path(20000);
		rounds++;
	}
	printf("%lu rounds\n", rounds);
	return 0;
}
