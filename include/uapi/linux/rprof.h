/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rprof: system-wide statistical profiler, userspace ABI.
 *
 * This header is the single source of truth for everything that crosses
 * /dev/rprof: ioctl numbers and arguments, the mmap control page and the
 * records of the event stream.  The module (Rust) and the userspace crates
 * get their definitions from it with bindgen.
 *
 * Conventions:
 *  - Fixed-width types only; every structure is naturally aligned, has no
 *    implicit padding and a size that is a multiple of 8.
 *  - Structures passed by ioctl that may grow start with a __u32 size field
 *    (as perf_event_attr does): the kernel accepts a smaller size from old
 *    userspace (missing fields read as zero) and a larger one from new
 *    userspace as long as the bytes it does not know are zero (-E2BIG
 *    otherwise).  Reserved fields and flag bits must be zero (-EINVAL).
 *  - Every record in the event stream starts with struct rprof_record_header
 *    whose size covers the whole record and is a multiple of 8, so a reader
 *    can skip record types it does not know.
 *
 * Times: every time_ns in the stream (samples, START, STOP, THROTTLE) is
 * CLOCK_MONOTONIC in nanoseconds, the clock clock_gettime(CLOCK_MONOTONIC)
 * reads, the same on every CPU (the kernel's ktime_get_mono_fast_ns(),
 * NMI-safe), so a reader can place samples against its own clock.
 */
#ifndef _UAPI_LINUX_RPROF_H
#define _UAPI_LINUX_RPROF_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * The ABI version returned by RPROF_IOC_GET_VERSION.  It changes only when a
 * change is not backwards compatible; additions grow structures by size.
 *   1  the first;
 *   2  every time_ns is CLOCK_MONOTONIC (in 1, the sampling CPU's
 *      local_clock()): a reader that schedules by the stream's clock
 *      must not take a version-1 module's times for its own.
 */
#define RPROF_ABI_VERSION 2

/*
 * ioctl magic 0xB9, numbers 00-1F: unused in
 * Documentation/userspace-api/ioctl/ioctl-number.rst as of 6.12, but not
 * registered there (an in-tree submission would add the line).
 */
#define RPROF_IOC_MAGIC 0xB9

/* Limits. */
#define RPROF_MAX_EVENTS 8 /* events sampled at once in one session */
#define RPROF_MAX_FRAMES 127 /* frames per side (kernel, user) of a chain */

/* ------------------------------------------------------------------------ */
/* Configuration (RPROF_IOC_SET_CONFIG)                                      */
/* ------------------------------------------------------------------------ */

/* What an event counts.  Values are rprof's own, not perf's. */
enum rprof_event_kind {
	RPROF_EVENT_CPU_CLOCK = 1,    /* software, hrtimer driven */
	RPROF_EVENT_TASK_CLOCK = 2,   /* software, only while tasks run */
	RPROF_EVENT_CYCLES = 3,       /* hardware (PMU NMI) */
	RPROF_EVENT_INSTRUCTIONS = 4, /* hardware */
	RPROF_EVENT_CACHE_MISSES = 5, /* hardware */
	RPROF_EVENT_BRANCH_MISSES = 6 /* hardware */
};

/* rprof_event_config.flags */
#define RPROF_EVENT_FREQ (1U << 0) /* period is a frequency in Hz */
#define RPROF_EVENT_FLAGS_ALL (RPROF_EVENT_FREQ)

struct rprof_event_config {
	__u32 kind;   /* enum rprof_event_kind */
	__u32 flags;  /* RPROF_EVENT_* */
	__u64 period; /* events per sample, or Hz with RPROF_EVENT_FREQ; != 0 */
};

/* rprof_config.flags */
#define RPROF_CONFIG_EXCLUDE_USER (1U << 0)
#define RPROF_CONFIG_EXCLUDE_KERNEL (1U << 1)
#define RPROF_CONFIG_PID_FILTER (1U << 2) /* only samples of config.pid */
#define RPROF_CONFIG_CALLCHAIN (1U << 3) /* call chains, see max_*_frames */
/* With PID_FILTER: also the samples of every process descending from
 * config.pid (children, grandchildren, ...), as the parent links stand at
 * the sample.  A process orphaned inside the tree and adopted by a
 * subreaper or init outside it leaves it. */
#define RPROF_CONFIG_PID_DESCENDANTS (1U << 4)
/* With CALLCHAIN and max_user_frames: the user side is walked by the
 * unwind tables given with RPROF_IOC_ADD_UNWIND where one covers a frame,
 * by its frame pointer elsewhere (RPROF_STACK_USER_TABLE).  A module
 * without it refuses the flag with -EINVAL. */
#define RPROF_CONFIG_UNWIND_TABLES (1U << 5)
#define RPROF_CONFIG_FLAGS_ALL                                                 \
	(RPROF_CONFIG_EXCLUDE_USER | RPROF_CONFIG_EXCLUDE_KERNEL |             \
	 RPROF_CONFIG_PID_FILTER | RPROF_CONFIG_CALLCHAIN |                    \
	 RPROF_CONFIG_PID_DESCENDANTS | RPROF_CONFIG_UNWIND_TABLES)

struct rprof_config {
	__u32 size;              /* sizeof(struct rprof_config) of the caller */
	__u32 flags;             /* RPROF_CONFIG_* */
	__u32 nr_events;         /* 1..RPROF_MAX_EVENTS entries of events[] */
	__s32 pid;               /* thread group id, with PID_FILTER, as the
				  * SET_CONFIG caller's pid namespace numbers
				  * it (ESRCH if it names no process there);
				  * samples carry the initial namespace's ids */
	__u32 ring_records;      /* per-CPU ring slots, power of 2; 0: default */
	__u32 drain_interval_ms; /* periodic drain; 0: default (50 ms) */
	__u32 wakeup_bytes;      /* wake readers at this much data; 0: 1/4 */
	__u32 buffer_pages;      /* data pages of the session's event buffer,
				  * a power of 2, at most 16 times the module's
				  * buffer_pages parameter (and 65536); 0: that
				  * parameter.  (Once a reserved
				  * field that had to be 0: an older module
				  * refuses other values with -EINVAL.) */
	struct rprof_event_config events[RPROF_MAX_EVENTS];
	/* Since RPROF_CONFIG_SIZE_VER1.  With RPROF_CONFIG_CALLCHAIN, the
	 * deepest chain taken on each side, 0..RPROF_MAX_FRAMES (0: that
	 * side off; both 0: -EINVAL).  Without the flag both must be 0. */
	__u16 max_kernel_frames;
	__u16 max_user_frames;
	__u32 reserved1;         /* must be 0 */
};
#define RPROF_CONFIG_SIZE_VER0 160 /* first published size */
#define RPROF_CONFIG_SIZE_VER1 168 /* + max_kernel_frames, max_user_frames */

/* ------------------------------------------------------------------------ */
/* Statistics (RPROF_IOC_GET_STATS)                                          */
/* ------------------------------------------------------------------------ */

/*
 * Counters of one CPU, or their sums.  At STOP, for every CPU and in total:
 *   samples == delivered + lost_ring + lost_buffer + lost_no_mm +
 *              lost_no_mapping + lost_no_cookie
 */
struct rprof_cpu_stats {
	__u64 samples;          /* records written by the sampling handler */
	__u64 lost_ring;        /* dropped: this CPU's ring was full */
	__u64 lost_buffer;      /* dropped: the event buffer was full */
	__u64 delivered;        /* put into the event buffer */
	__u64 ring_high_water;  /* highest ring fill seen, in slots (a
				 * sample with a chain takes several) */
	__u64 throttled;        /* times perf throttled a counter */
	__u64 lost_no_mm;       /* user sample of a task without an mm */
	__u64 lost_no_mapping;  /* user ip in no mapping (or one changed since,
				 * or its process gone before the handler
				 * could name the mapping) */
	__u64 lost_no_cookie;   /* the session's cookie table was full */
};

/*
 * Call chains of a session with RPROF_CONFIG_CALLCHAIN, summed over CPUs.
 * A sample whose chain did not fit the ring is delivered without it
 * (flagged RPROF_SAMPLE_CHAIN_CUT) and counted in cut_space: a chain
 * never costs its sample a ring slot.
 */
struct rprof_chain_stats {
	__u64 chains;        /* samples delivered with a chain */
	__u64 kernel_frames; /* frames of those chains, kernel side */
	__u64 user_frames;   /* frames of those chains, user side */
	__u64 truncated;     /* chains cut at max_*_frames (either side) */
	__u64 user_fault;    /* user walks ended by an unreadable stack word */
	__u64 user_bad_fp;   /* user walks ended by a bad frame pointer */
	__u64 cut_space;     /* chains cut or left out: no room in the ring */
	__u64 unresolved;    /* user frames left as RPROF_COOKIE_UNRESOLVED,
			      * in the chains of delivered samples */
	__u64 stacks;        /* STACK records written (distinct stacks) */
	__u64 user_skipped;  /* user sides not walked (RPROF_STACK_USER_SKIPPED) */
	/* With RPROF_CONFIG_UNWIND_TABLES (once reserved, 0 without): user
	 * frames found by an unwind table's rule, and those found by the
	 * frame pointer in a table walk: no table covers the frame (its file
	 * has none yet, a JIT, a gap between functions) or its row says so
	 * (RPROF_UNWIND_CFA_NONE or _FP). */
	__u64 user_table_frames;
	__u64 user_no_table;
};

struct rprof_stats {
	__u32 size;      /* sizeof(struct rprof_stats) of the caller */
	__u32 nr_cpus;   /* in: entries at cpus; out: CPUs the kernel has */
	__u64 cpus;      /* user pointer to nr_cpus struct rprof_cpu_stats, or 0 */
	__u64 drains;    /* drain passes run */
	__u64 wakeups;   /* reader wakeups issued */
	/* With RPROF_CONFIG_PID_DESCENDANTS: processes followed although their
	 * parent ended before them (orphans: re-parented away from the
	 * filter's process), and those not followed for want of room in the
	 * table of orphans (their samples are not kept). */
	__u64 orphans;
	__u64 orphans_lost;
	__u64 resets;      /* RESET records written (RPROF_IOC_RESET_COOKIES) */
	__u64 reserved[1]; /* in: zero */
	struct rprof_cpu_stats total;
	struct rprof_chain_stats chains; /* since RPROF_STATS_SIZE_VER1 */
	/* Since RPROF_STATS_SIZE_VER2.  User samples not resolved because the
	 * sampled process's mmap_lock was taken (RPROF_LOST_MM_BUSY), summed
	 * over CPUs (per CPU: the LOST records of the stream).  Counted in no
	 * field of struct rprof_cpu_stats: total.samples == total.delivered +
	 * every total.lost_* + lost_mm_busy (+ what the rings still hold). */
	__u64 lost_mm_busy;
	/* Memory the session's event buffer, rings and unwind tables take, in bytes, charged
	 * to its owner's locked memory (docs/design.md, "Memory"). */
	__u64 locked_bytes;
};
#define RPROF_STATS_SIZE_VER0 136
#define RPROF_STATS_SIZE_VER1 232
#define RPROF_STATS_SIZE_VER2 248

/* ------------------------------------------------------------------------ */
/* ioctls                                                                    */
/* ------------------------------------------------------------------------ */

/* The ABI version (RPROF_ABI_VERSION of the module), into a __u32. */
#define RPROF_IOC_GET_VERSION _IOR(RPROF_IOC_MAGIC, 0x00, __u32)
/* Configure a session; the caller becomes its owner.  -EBUSY if another
 * file owns one, or if this one is running. */
#define RPROF_IOC_SET_CONFIG _IOW(RPROF_IOC_MAGIC, 0x01, struct rprof_config)
/* Start / stop sampling of the configured session. */
#define RPROF_IOC_START _IO(RPROF_IOC_MAGIC, 0x02)
#define RPROF_IOC_STOP _IO(RPROF_IOC_MAGIC, 0x03)
/* Drain every CPU's ring into the event buffer now. */
#define RPROF_IOC_FLUSH _IO(RPROF_IOC_MAGIC, 0x04)
/* Read statistics (struct rprof_stats, size-versioned). */
#define RPROF_IOC_GET_STATS _IOWR(RPROF_IOC_MAGIC, 0x05, struct rprof_stats)
/* The path of a cookie of the caller's session (struct rprof_cookie_lookup):
 * -ENOENT for an unknown cookie, -ENAMETOOLONG if path_len is too small
 * (path_len then says how much is needed). */
#define RPROF_IOC_LOOKUP_COOKIE                                                \
	_IOWR(RPROF_IOC_MAGIC, 0x06, struct rprof_cookie_lookup)
/* Forget every cookie and stack of the running session, and let go of the
 * files they pin, without pausing sampling: drains the rings, then writes
 * a RESET record (struct rprof_reset) and empties the tables.  Cookies and
 * stack ids go on from where they were: none is reused.  -EINVAL unless
 * the session runs; -EAGAIN when the record does not fit now (the buffer
 * is full, or START or an unload is still owed): read, then try again. */
#define RPROF_IOC_RESET_COOKIES _IO(RPROF_IOC_MAGIC, 0x07)
/*
 * Give the session (of the calling file, before or while it runs) the
 * compiled unwind table of one file, named by an open descriptor of it:
 * every process that maps that file (its inode) walks through the table.
 * The table is a struct rprof_unwind_table_header then its rows, checked
 * here (-EINVAL: see the header's rules); -EEXIST if the session has one
 * for that file; -ENOSPC past the module's unwind_kb parameter per
 * session; -EPERM past the owner's locked-memory limit (as SET_CONFIG);
 * -EBADF for a bad descriptor (-EINVAL for one of no regular file).
 * Tables go with the session and with
 * RPROF_IOC_RESET_COOKIES.
 */
#define RPROF_IOC_ADD_UNWIND _IOW(RPROF_IOC_MAGIC, 0x08, struct rprof_unwind_add)

/*
 * bindgen cannot evaluate _IOR() and friends; the ioctl command numbers are
 * spelled out for it here and checked against the macros above by the
 * module (a static assertion in C) and by userspace tests.
 */
enum rprof_ioctl_nr {
	RPROF_IOC_NR_GET_VERSION = 0x00,
	RPROF_IOC_NR_SET_CONFIG = 0x01,
	RPROF_IOC_NR_START = 0x02,
	RPROF_IOC_NR_STOP = 0x03,
	RPROF_IOC_NR_FLUSH = 0x04,
	RPROF_IOC_NR_GET_STATS = 0x05,
	RPROF_IOC_NR_LOOKUP_COOKIE = 0x06,
	RPROF_IOC_NR_RESET_COOKIES = 0x07,
	RPROF_IOC_NR_ADD_UNWIND = 0x08
};

struct rprof_cookie_lookup {
	__u64 cookie;   /* in */
	__u64 path;     /* in: user pointer to path_len bytes */
	__u32 path_len; /* in: size of the buffer; out: bytes of the path + NUL */
	__u32 flags;    /* out: RPROF_COOKIE_* */
	__u64 dev;      /* out: device of the file (new_encode_dev) */
	__u64 ino;      /* out: inode number */
};

/* ------------------------------------------------------------------------ */
/* mmap layout                                                               */
/* ------------------------------------------------------------------------ */

/*
 * The event buffer is mapped in two parts, by the file that configured the
 * session:
 *   mmap(fd, offset 0, length one page): the control page below, which may
 *     be mapped writable (the kernel only ever reads data_tail from it);
 *   mmap(fd, offset one page, length data_size): the data area, read-only
 *     for good (PROT_WRITE or PROT_EXEC: -EPERM; mprotect cannot add them).
 * Any other offset or length gets -EINVAL; neither mapping can grow.
 *
 * Protocol (as perf's):
 *   reader: head = load_acquire(&page->data_head);
 *           read records in [data_tail, head) at data[pos % data_size];
 *           store_release(&page->data_tail, head);
 * The kernel never writes data the reader has not released through
 * data_tail.  Records may wrap around the end of the data area.  After
 * STOP, and whenever the buffer was full, RPROF_IOC_FLUSH once space is
 * free lets the kernel write the LOST and STOP records it still owes.
 */
struct rprof_mmap_page {
	__u32 version;     /* RPROF_ABI_VERSION */
	__u32 reserved0;
	__u64 data_offset; /* offset of the data area in the mapping */
	__u64 data_size;   /* bytes, power of 2 */
	__u64 reserved1[13];
	/* Written by the kernel; on a cache line of its own. */
	__u64 data_head;
	__u64 reserved2[7];
	/* Written by the reader; on a cache line of its own. */
	__u64 data_tail;
	__u64 reserved3[7];
};

/* ------------------------------------------------------------------------ */
/* Records                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * The stream is compact, like OProfile's: samples carry only time, offset
 * and period.  Who and where come from context records that precede them
 * and hold until the next record of the same kind:
 *   TASK    the CPU and task of the following samples;
 *   SWITCH  the cookie the following samples' offsets are relative to.
 * A COOKIE record names a cookie before the first SWITCH to it; a MODULE
 * record names a kernel module's cookie.  A reader keeps the current TASK
 * and cookie; LOST, START, STOP and THROTTLE records do not change them.
 */
enum rprof_record_type {
	RPROF_RECORD_SAMPLE = 1,
	RPROF_RECORD_LOST = 2,
	RPROF_RECORD_START = 3,
	RPROF_RECORD_STOP = 4,
	RPROF_RECORD_THROTTLE = 5,
	RPROF_RECORD_UNTHROTTLE = 6,
	RPROF_RECORD_COOKIE = 7,
	RPROF_RECORD_TASK = 8,
	RPROF_RECORD_SWITCH = 9,
	RPROF_RECORD_MODULE = 10,
	RPROF_RECORD_STACK = 11,
	RPROF_RECORD_RESET = 12
};

struct rprof_record_header {
	__u16 type;  /* enum rprof_record_type */
	__u16 flags; /* per type; for samples RPROF_SAMPLE_* */
	__u32 size;  /* whole record in bytes, multiple of 8 */
};

/*
 * Cookies name what an offset is relative to, for one session.  Values
 * below RPROF_COOKIE_FIRST are fixed; the others name files (COOKIE
 * records) or kernel modules (MODULE records).
 */
#define RPROF_COOKIE_NONE 0   /* no cookie yet */
#define RPROF_COOKIE_KERNEL 1 /* the kernel image: the offset is the ip */
#define RPROF_COOKIE_ANON 2   /* anonymous executable memory (JIT): the ip */
#define RPROF_COOKIE_UNRESOLVED 3 /* a chain frame not resolved: the raw ip */
#define RPROF_COOKIE_FIRST 16

/* rprof_sample.header.flags */
#define RPROF_SAMPLE_USER (1U << 0)     /* taken in user mode */
#define RPROF_SAMPLE_STACK (1U << 1)    /* has a stack: size covers .stack */
#define RPROF_SAMPLE_CHAIN_CUT (1U << 2) /* the chain did not fit the ring:
					  * the sample comes without it */
#define RPROF_SAMPLE_EVENT_SHIFT 8      /* bits 8-10: index into events[] */
#define RPROF_SAMPLE_EVENT_MASK (7U << RPROF_SAMPLE_EVENT_SHIFT)

/* One sample, in the current TASK's context, relative to the current
 * cookie: for a file, the offset in the file; for a module, the offset
 * from the module's base; for KERNEL and ANON, the ip itself. */
struct rprof_sample {
	struct rprof_record_header header;
	__u64 time_ns; /* CLOCK_MONOTONIC, ns (see "Times" above) */
	__u64 offset;
	__u64 period;  /* events this sample stands for */
};

/* A sample with RPROF_SAMPLE_STACK in its flags: `stack` names the callers
 * of the sampled ip (a STACK record earlier in the stream).  A reader that
 * does not know the flag reads it as a struct rprof_sample and skips the
 * rest by header.size. */
struct rprof_sample_stack {
	struct rprof_sample sample;
	__u64 stack; /* rprof_stack.id */
};

/* The CPU and task of the following samples. */
struct rprof_task {
	struct rprof_record_header header;
	__u32 cpu;
	__u32 pid;        /* thread group id (0: idle) */
	__u32 tid;
	__u32 reserved;
	__u64 exe_cookie; /* the task's executable, RPROF_COOKIE_NONE if none */
	char comm[16];    /* NUL-terminated, as when sampled */
};

/* The cookie of the following samples. */
struct rprof_switch {
	struct rprof_record_header header;
	__u64 cookie;
};

/* rprof_cookie_record.header.flags and rprof_cookie_lookup.flags */
#define RPROF_COOKIE_DELETED (1U << 0)   /* the file was unlinked */
#define RPROF_COOKIE_TRUNCATED (1U << 1) /* the path did not fit (PATH_MAX) */
#define RPROF_COOKIE_NO_PATH (1U << 2)   /* d_path failed: path is a name */
#define RPROF_COOKIE_UNREACHABLE (1U << 3) /* not under the root of the
					    * session owner (another mount
					    * namespace, outside a chroot) */

/* Names a file cookie.  The path is as d_path() gives it from the
 * kernel's initial root (" (deleted)" appended to unlinked files),
 * NUL-terminated, padded with NULs to a multiple of 8.  Flags say when it
 * is not a path the session's owner can open. */
struct rprof_cookie_record {
	struct rprof_record_header header;
	__u64 cookie;
	__u64 dev; /* new_encode_dev() of the file's device */
	__u64 ino;
	char path[];
};

/* rprof_module.header.flags */
#define RPROF_MODULE_UNLOAD (1U << 0) /* the module is going away */
#define RPROF_MODULE_INIT (1U << 1)   /* the region is the init text */

/*
 * Names a module cookie (first use, or load), or marks its unload.  An
 * unload during a run is always reported (after its samples, before
 * STOP).  A module that goes between two runs of one session has no
 * record: its cookie may still read as loaded, and a module loaded at its
 * place later gets a new cookie, so samples are named right either way.
 */
struct rprof_module {
	struct rprof_record_header header;
	__u64 cookie;
	__u64 base; /* start of the module's text */
	__u64 size; /* bytes of text */
	char name[56];
};

/* rprof_stack.header.flags: why a side of the chain ended where it did.
 * Without any of them, each side ended normally: the kernel side where the
 * kernel stack (or its entry from user mode) ends, the user side at a null
 * frame pointer (the outermost frame). */
#define RPROF_STACK_KERNEL_TRUNCATED (1U << 0) /* max_kernel_frames reached */
#define RPROF_STACK_USER_TRUNCATED (1U << 1)   /* max_user_frames reached */
#define RPROF_STACK_USER_FAULT (1U << 2)  /* a stack word could not be read
					   * without faulting it in */
#define RPROF_STACK_USER_BAD_FP (1U << 3) /* misaligned frame pointer, or
					   * one not above the previous (with
					   * tables: a frame address not above
					   * the stack pointer, or a rule
					   * needing an RBP no frame kept) */
#define RPROF_STACK_KERNEL_ERROR (1U << 4) /* the kernel unwinder failed */
#define RPROF_STACK_CUT (1U << 5)  /* dropped for space in the ring */
#define RPROF_STACK_USER_SKIPPED (1U << 6) /* the user side was not walked:
					    * 32-bit code outside the flat
					    * segments (e.g. in the task's
					    * own LDT; only the leaf is
					    * known) */
#define RPROF_STACK_USER_TABLE (1U << 7) /* an unwind table gave at least
					  * one user frame */

/* One frame of a chain, relative to a cookie as a sample is (a COOKIE or
 * MODULE record names it earlier in the stream). */
struct rprof_frame {
	__u64 cookie;
	__u64 offset;
};

/*
 * A call chain, written once per distinct chain in a session and named by
 * an id that samples carry (RPROF_SAMPLE_STACK).  Ids are unique in the
 * session and never reused; a STACK record precedes every sample that
 * names it.  frames[] holds nr_kernel kernel frames then nr_user user
 * frames, each side innermost first, not counting the sample's own ip.
 * Every frame is a return address (a reader symbolizes address - 1, the
 * call) except the first user frame of a sample taken in kernel mode,
 * which is where the task entered the kernel (the user ip of its
 * registers).
 */
struct rprof_stack {
	struct rprof_record_header header; /* flags: RPROF_STACK_* */
	__u64 id;          /* >= 1 */
	__u16 nr_kernel;
	__u16 nr_user;
	__u32 reserved;
	struct rprof_frame frames[];
};

/* rprof_lost.stage */
enum rprof_lost_stage {
	RPROF_LOST_RING = 1,       /* a CPU's ring was full */
	RPROF_LOST_BUFFER = 2,     /* the event buffer was full */
	RPROF_LOST_NO_MM = 3,      /* user sample, task without an mm */
	RPROF_LOST_NO_MAPPING = 4, /* user ip in no mapping, or changed since,
				    * or its process gone unnamed */
	RPROF_LOST_NO_COOKIE = 5,  /* the session's cookie table was full */
	RPROF_LOST_MM_BUSY = 6     /* user ip not resolved: the sampled
				    * process held its mmap_lock (or a writer
				    * waited for it), and the drain never waits */
};

/* Records dropped, reported in-band once space returns.  Exact. */
struct rprof_lost {
	struct rprof_record_header header;
	__u32 stage; /* enum rprof_lost_stage */
	__u32 cpu;   /* CPU whose samples were lost */
	__u64 count;
};

/* START and STOP: the session's configuration and the time. */
struct rprof_session {
	struct rprof_record_header header;
	__u64 time_ns;
	struct rprof_config config;
};

/*
 * RESET (RPROF_IOC_RESET_COOKIES): from here on, no record names a cookie
 * below next_cookie or a stack below next_stack; a COOKIE, MODULE or STACK
 * record names each one used again, under a new number.  A TASK and a
 * SWITCH come before the next sample.  Samples before the record were
 * taken before time_ns; some taken just before it may still follow it.
 * The module also resets by itself, flagged RPROF_RESET_AUTO, when its
 * cookie table is full and a sample needs a new cookie (at most once per
 * drain pass; a sample that still finds no room is lost as NO_COOKIE): a
 * reader that never asks for a reset loses nothing for want of one.
 */
#define RPROF_RESET_AUTO (1U << 0) /* header.flags */
struct rprof_reset {
	struct rprof_record_header header;
	__u64 time_ns;
	__u64 next_cookie;
	__u64 next_stack;
};

/*
 * THROTTLE: perf throttled one counter (too many samples per tick) with the
 * sample taken at time_ns.  UNTHROTTLE: the first sample of that counter
 * after a throttle, at time_ns; perf resumed it at a tick before that.
 * Both are informational: they are left out when the buffer is short of
 * space, while GET_STATS counts every throttle.
 */
struct rprof_throttle {
	struct rprof_record_header header;
	__u64 time_ns;
	__u32 cpu;
	__u32 event;
};

/*
 * Unwind tables (issue 31): how the sampling handler finds a caller in code
 * without frame pointers.  Userspace compiles a file's .eh_frame (and
 * .debug_frame) into rows sorted by file offset; each row holds from its
 * start to the next row's start (the last to the table's end).  With the
 * frame's registers RSP, RBP and RIP:
 *
 *   CFA = RSP or RBP (row.cfa) + row.cfa_off, or the PLT stub's rule
 *   return address = the 8 bytes at CFA - 8 (x86-64: the call pushed it)
 *   caller's RSP = CFA
 *   caller's RBP = the 8 bytes at CFA + row.rbp_off (RPROF_UNWIND_RBP_SAVED)
 *                  or RBP unchanged (RPROF_UNWIND_RBP_SAME)
 *
 * A walk stops where a CFA would not be above the frame's RSP: no table
 * makes it loop.  Rows whose rule is none of these say what to do instead
 * (RPROF_UNWIND_CFA_FP: this frame by its frame pointer; _STOP: the
 * outermost frame, or a rule the handler does not follow, e.g. a signal
 * frame; _NONE: no unwind information covers it).  Offsets are file
 * offsets (address - p_vaddr + p_offset of the executable PT_LOAD), so a
 * handler finds a row from ip - vm_start + vm_pgoff * PAGE_SIZE.
 *
 * RPROF_IOC_ADD_UNWIND refuses (-EINVAL) a table unless: it has 1 to 2^24
 * rows; starts strictly increase and the last is below `end`; every cfa
 * and rbp is one of the enums below; RSP/RBP/PLT rows have 8 <= cfa_off
 * <= 2^24, and rbp_off == 0 unless RBP_SAVED, where rbp_off <= -16 and
 * is a multiple of 8; NONE/FP/STOP rows have RBP_SAME and both offsets 0
 * (one spelling per rule).
 */
enum rprof_unwind_cfa {
	RPROF_UNWIND_CFA_NONE = 0, /* no unwind information: frame pointers */
	RPROF_UNWIND_CFA_RSP = 1,  /* CFA = RSP + cfa_off */
	RPROF_UNWIND_CFA_RBP = 2,  /* CFA = RBP + cfa_off */
	RPROF_UNWIND_CFA_PLT = 3,  /* CFA = RSP + cfa_off + (((RIP & 15) >= 11) ? 8 : 0) */
	RPROF_UNWIND_CFA_FP = 4,   /* a rule beyond these: frame pointers */
	RPROF_UNWIND_CFA_STOP = 5  /* the outermost frame (or a signal
				    * frame): the chain ends here */
};

enum rprof_unwind_rbp {
	RPROF_UNWIND_RBP_SAME = 0,  /* the caller's RBP is this frame's */
	RPROF_UNWIND_RBP_SAVED = 1, /* at CFA + rbp_off */
	RPROF_UNWIND_RBP_UNDEF = 2  /* not recoverable: the caller's RBP is
				     * unknown (a later RBP-based rule stops) */
};

struct rprof_unwind_row {
	__u32 start;   /* file offset of the first byte the row covers */
	__s32 cfa_off;
	__s16 rbp_off; /* RPROF_UNWIND_RBP_SAVED: a multiple of 8 */
	__u8 cfa;      /* enum rprof_unwind_cfa */
	__u8 rbp;      /* enum rprof_unwind_rbp */
};

/* A compiled table as cached on disk (and later uploaded): this header,
 * then nr_rows rows with strictly increasing starts. */
#define RPROF_UNWIND_MAGIC 0x52505557U /* "RPUW" */
#define RPROF_UNWIND_VERSION 1
struct rprof_unwind_table_header {
	__u32 magic;     /* RPROF_UNWIND_MAGIC */
	__u32 version;   /* RPROF_UNWIND_VERSION */
	__u32 nr_rows;
	__u32 end;       /* file offset past the last row's range */
	__u8 build_id[20]; /* the file's GNU build-id, zero-padded */
	__u32 build_id_len;
};

/* RPROF_IOC_ADD_UNWIND's argument. */
struct rprof_unwind_add {
	__u32 size;        /* sizeof(struct rprof_unwind_add) */
	__s32 fd;          /* an open descriptor of the file */
	__u64 table;       /* user address of the header and rows */
	__u64 table_bytes; /* the header's and rows' size */
};

#endif /* _UAPI_LINUX_RPROF_H */
