//! Names of a configuration's events, as reports show them.

/// The name of an event of a configuration, `cpu-clock@999` style.
pub fn event_label(config: &rprof_abi::rprof_config, index: u32) -> String {
    let Some(e) = config.events.get(index as usize) else {
        return format!("event{index}");
    };
    let name = event_name(e.kind);
    if e.flags & rprof_abi::RPROF_EVENT_FREQ != 0 {
        format!("{name}@{}", e.period)
    } else {
        format!("{name}:{}", e.period)
    }
}

/// The name of `enum rprof_event_kind` value `kind`.
pub fn event_name(kind: u32) -> String {
    use rprof_abi::*;
    match kind {
        RPROF_EVENT_CPU_CLOCK => "cpu-clock".into(),
        RPROF_EVENT_TASK_CLOCK => "task-clock".into(),
        RPROF_EVENT_CYCLES => "cycles".into(),
        RPROF_EVENT_INSTRUCTIONS => "instructions".into(),
        RPROF_EVENT_CACHE_MISSES => "cache-misses".into(),
        RPROF_EVENT_BRANCH_MISSES => "branch-misses".into(),
        k => format!("kind{k}"),
    }
}

/// Whether the period of event kind `kind` is in nanoseconds (the
/// software clocks) rather than a count of events.
pub fn period_is_time(kind: u32) -> bool {
    kind == rprof_abi::RPROF_EVENT_CPU_CLOCK || kind == rprof_abi::RPROF_EVENT_TASK_CLOCK
}
