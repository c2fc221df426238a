// SPDX-License-Identifier: GPL-2.0
/*
 * rprof_mmhold: a test module whose init holds the mmap_lock of process
 * `pid` for writing for `ms` milliseconds, then lets it go and stays
 * loaded (the exit does nothing).  It stands for what a profiler meets on
 * a real machine: a process whose address-space lock is held for seconds
 * (a fault on a slow file, a long mlock() or MAP_POPULATE, a writer
 * queued behind them).  The end-to-end suite checks that rprof's STOP,
 * GET_STATS and the module notifier do not wait for it (issue 29).
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "process whose mmap_lock is held");

static unsigned int ms = 5000;
module_param(ms, uint, 0444);
MODULE_PARM_DESC(ms, "how long it is held, in ms (5000)");

static int __init rprof_mmhold_init(void)
{
	struct pid *p = find_get_pid(pid);
	struct task_struct *task;
	struct mm_struct *mm;

	task = get_pid_task(p, PIDTYPE_PID);
	put_pid(p);
	if (!task)
		return -ESRCH;
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm)
		return -EINVAL;
	mmap_write_lock(mm);
	msleep(ms);
	mmap_write_unlock(mm);
	mmput(mm);
	return 0;
}

static void __exit rprof_mmhold_exit(void)
{
}

module_init(rprof_mmhold_init);
module_exit(rprof_mmhold_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rprof test workload: holds a process's mmap_lock");
