//! Loom models of the ring: no lost or duplicated record, no torn record,
//! per-writer order kept, exact drop counts, under every interleaving.

use loom::sync::Arc;
use loom::thread;
use rprof_ring_model::ring::{Push, Ring, Slot};

type TestRing = Ring<(u64, u64), Vec<Slot<(u64, u64)>>>;

fn ring(capacity: usize) -> Arc<TestRing> {
    let slots = (0..capacity).map(|_| Slot::new()).collect();
    match Ring::new(slots) {
        Ok(r) => Arc::new(r),
        Err(_) => panic!("capacity {capacity} refused"),
    }
}

/// Explores interleavings with at most 3 preemptions per execution (loom's
/// bounded search; the default, unbounded, takes hours for three threads).
/// Bugs in lock-free code of this size show up within 2-3 preemptions.
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// A record carries (writer, sequence) in both halves, swapped in the
/// second, so a torn read shows up as a mismatch.
fn rec(writer: u64, seq: u64) -> (u64, u64) {
    (writer << 32 | seq, seq << 32 | writer)
}

fn check(r: (u64, u64)) -> (u64, u64) {
    let (writer, seq) = (r.0 >> 32, r.0 & 0xffff_ffff);
    assert_eq!(r.1, seq << 32 | writer, "torn record {r:?}");
    (writer, seq)
}

/// Pops everything left and checks per-writer order; returns how many.
fn drain(r: &TestRing, last: &mut [Option<u64>]) -> u64 {
    let mut n = 0;
    // SAFETY: The caller is the only consumer.
    while let Some(v) = unsafe { r.pop() } {
        let (w, s) = check(v);
        if let Some(prev) = last[w as usize] {
            assert!(s > prev, "writer {w}: {s} after {prev}");
        }
        last[w as usize] = Some(s);
        n += 1;
    }
    n
}

/// Two writers, each pushing `per_writer` records, against a reader that
/// consumes concurrently; then the rest is drained.  Checks
/// written == read + lost and the ring's own counters.
fn writers_and_reader(capacity: usize, per_writer: u64, reader_pops: usize) {
    model(move || {
        let r = ring(capacity);
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let r = r.clone();
                thread::spawn(move || {
                    let mut stored = 0;
                    for seq in 0..per_writer {
                        if let Push::Stored(fill) = r.push(rec(w, seq)) {
                            // A snapshot: 0 if the reader already took it.
                            assert!(fill <= capacity as u64, "fill {fill}");
                            stored += 1;
                        }
                    }
                    stored
                })
            })
            .collect();
        let reader = {
            let r = r.clone();
            thread::spawn(move || {
                let mut last = [None; 2];
                let mut got = 0u64;
                for _ in 0..reader_pops {
                    // SAFETY: This thread is the only consumer until joined.
                    if let Some(v) = unsafe { r.pop() } {
                        let (w, s) = check(v);
                        if let Some(prev) = last[w as usize] {
                            assert!(s > prev);
                        }
                        last[w as usize] = Some(s);
                        got += 1;
                    }
                }
                (got, last)
            })
        };
        let stored: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
        let (got, mut last) = reader.join().unwrap();
        let rest = drain(&r, &mut last);
        assert_eq!(got + rest, stored, "every stored record is read once");
        assert_eq!(
            stored + r.lost(),
            2 * per_writer,
            "written == stored + lost"
        );
        assert_eq!(r.stored(), stored);
        assert!(r.high_water() <= capacity as u64);
    });
}

#[test]
fn two_writers_one_reader_no_drops() {
    writers_and_reader(4, 1, 2);
}

#[test]
fn two_writers_one_reader_full_ring() {
    // Capacity 2 and three records: some interleavings drop, exactly.
    writers_and_reader(2, 2, 1);
}

#[test]
fn reader_never_sees_an_uncommitted_slot() {
    // One writer, one reader polling: the reader sees either nothing or
    // the complete record, in every interleaving.
    model(|| {
        let r = ring(2);
        let w = {
            let r = r.clone();
            thread::spawn(move || {
                assert!(matches!(r.push(rec(0, 7)), Push::Stored(0 | 1)));
            })
        };
        // SAFETY: Only consumer.
        let early = unsafe { r.pop() };
        w.join().unwrap();
        // SAFETY: Only consumer.
        let late = unsafe { r.pop() };
        match (early, late) {
            (Some(v), None) | (None, Some(v)) => assert_eq!(check(v), (0, 7)),
            other => panic!("record seen {other:?}"),
        }
    });
}

#[test]
fn wrap_around_reuses_slots_without_overwriting() {
    // A writer laps a 2-slot ring while the reader consumes: a slot is
    // reused only after the reader released it.
    model(|| {
        let r = ring(2);
        let w = {
            let r = r.clone();
            thread::spawn(move || {
                (0..3)
                    .filter(|&s| matches!(r.push(rec(1, s)), Push::Stored(_)))
                    .count() as u64
            })
        };
        let mut last = [None, None];
        let mut got = 0;
        for _ in 0..2 {
            got += drain(&r, &mut last);
        }
        let stored = w.join().unwrap();
        got += drain(&r, &mut last);
        assert_eq!(got, stored);
        assert_eq!(stored + r.lost(), 3);
    });
}

#[test]
fn no_drop_while_the_ring_has_room() {
    // Capacity 2, two records in all, one of them consumed concurrently:
    // the ring never holds more than 2, so no push may report Full.  A
    // writer that loads a stale head below a fresh tail would.
    model(|| {
        let r = ring(2);
        let w1 = {
            let r = r.clone();
            thread::spawn(move || r.push(rec(0, 1)))
        };
        let reader = {
            let r = r.clone();
            // SAFETY: The only consumer until it is joined.
            thread::spawn(move || unsafe { r.pop() }.map(check))
        };
        let w2 = {
            let r = r.clone();
            thread::spawn(move || r.push(rec(1, 1)))
        };
        for (name, p) in [
            ("first", w1.join().unwrap()),
            ("second", w2.join().unwrap()),
        ] {
            assert!(
                matches!(p, Push::Stored(_)),
                "{name} push dropped with room in the ring"
            );
        }
        reader.join().unwrap();
        assert_eq!(r.lost(), 0);
    });
}

/// The first slot of a multi-slot record: `rec(writer, seq)` with the
/// number of continuation slots in the top byte of its first half;
/// continuation `i` holds `cont(writer, seq, i)`, so that a torn, stale or
/// misplaced continuation shows up.
fn multi(writer: u64, seq: u64, extra: u64) -> (u64, u64) {
    let (a, b) = rec(writer, seq);
    (a | extra << 56, b)
}

fn cont(writer: u64, seq: u64, i: u64) -> (u64, u64) {
    (writer << 32 | seq, 1000 + i)
}

/// Pops one record of any size and checks it; returns (writer, seq, extra).
///
/// # Safety
///
/// The caller is the only consumer.
unsafe fn pop_checked(r: &TestRing) -> Option<(u64, u64, u64)> {
    // SAFETY: The caller is the only consumer; the extra count is the one
    // its writer passed (it is carried in the first value).
    unsafe {
        r.pop_multi(
            |first| first.0 >> 56,
            |first, rest| {
                let extra = first.0 >> 56;
                let (w, s) = check((first.0 & !(0xff << 56), first.1));
                for i in 0..extra {
                    assert_eq!(rest(i), cont(w, s, i), "continuation {i} of ({w}, {s})");
                }
                (w, s, extra)
            },
        )
    }
}

/// Writer 1 of the multi-slot tests: two single-slot records, as a
/// nested handler would push them; how many were stored.
fn small_writer(r: &Arc<TestRing>) -> thread::JoinHandle<u64> {
    let r = r.clone();
    thread::spawn(move || {
        (0..2)
            .filter(|&s| matches!(r.push(multi(1, s, 0)), Push::Stored(_)))
            .count() as u64
    })
}

#[test]
fn multi_slot_records_whole_or_not_at_all() {
    // Capacity 4: a writer pushes a 3-slot record then a 2-slot one while
    // a nested-style second writer pushes single records and the reader
    // consumes; every record read is whole and in its writer's order,
    // wrap-around included, and written == read + lost exactly.
    model(|| {
        let r = ring(4);
        let big = {
            let r = r.clone();
            thread::spawn(move || {
                let mut stored = 0;
                for (seq, extra) in [(0u64, 2u64), (1, 1)] {
                    let p = r.push_multi_with(extra, || multi(0, seq, extra), |i| cont(0, seq, i));
                    if matches!(p, Push::Stored(_)) {
                        stored += 1;
                    }
                }
                stored
            })
        };
        let small = small_writer(&r);
        let mut last = [None, None];
        let mut got = 0;
        let take = |last: &mut [Option<u64>; 2]| {
            // SAFETY: This thread is the only consumer.
            let mut n = 0;
            while let Some((w, s, _)) = unsafe { pop_checked(&r) } {
                if let Some(prev) = last[w as usize] {
                    assert!(s > prev, "writer {w}: {s} after {prev}");
                }
                last[w as usize] = Some(s);
                n += 1;
            }
            n
        };
        got += take(&mut last);
        let stored = big.join().unwrap() + small.join().unwrap();
        got += take(&mut last);
        assert_eq!(got, stored, "every stored record is read once");
        assert_eq!(stored + r.lost(), 4, "written == stored + lost");
        assert_eq!(r.stored(), stored, "stored() counts records, not slots");
    });
}

#[test]
fn a_chain_that_does_not_fit_falls_back_to_its_sample() {
    // The handler's path (src/sampling/sampler.rs): the sample with its chain
    // through try_push_multi_with, which counts nothing when it does not
    // fit, else the sample alone through push, which counts it lost if
    // even that does not fit.  With a second writer and the reader
    // racing, each sample is stored once, whole (with its chain or
    // without), or counted lost once; never both, never twice.
    model(|| {
        let r = ring(4);
        let chains = {
            let r = r.clone();
            thread::spawn(move || {
                let (mut stored, mut cut) = (0u64, 0u64);
                for seq in 0..2u64 {
                    let p = r.try_push_multi_with(2, || multi(0, seq, 2), |i| cont(0, seq, i));
                    if matches!(p, Push::Stored(_)) {
                        stored += 1;
                        continue;
                    }
                    cut += 1;
                    if matches!(r.push(multi(0, seq, 0)), Push::Stored(_)) {
                        stored += 1;
                    }
                }
                (stored, cut)
            })
        };
        let small = small_writer(&r);
        let mut seen = [0u64; 2];
        let mut take = || {
            // SAFETY: This thread is the only consumer.
            while let Some((w, s, extra)) = unsafe { pop_checked(&r) } {
                assert!(
                    w == 1 || extra == 2 || extra == 0,
                    "a chain record of {extra} continuations"
                );
                assert_eq!(
                    seen[w as usize] & 1 << s,
                    0,
                    "writer {w}'s record {s} read twice"
                );
                seen[w as usize] |= 1 << s;
            }
        };
        take();
        let (stored, cut) = chains.join().unwrap();
        let stored = stored + small.join().unwrap();
        take();
        let got = u64::from(seen[0].count_ones() + seen[1].count_ones());
        assert_eq!(got, stored, "every stored sample is read once");
        assert_eq!(stored + r.lost(), 4, "samples == stored + lost");
        assert!(
            r.lost() <= cut + 2,
            "only the fallback and the small writer count losses"
        );
    });
}

#[test]
fn a_record_larger_than_the_free_space_is_dropped_whole() {
    // Three slots used of four: a 2-slot record does not fit and is
    // counted once; a 1-slot one still fits.
    loom::model(move || {
        let r = ring(4);
        assert!(matches!(
            r.push_multi_with(2, || multi(0, 0, 2), |i| cont(0, 0, i)),
            Push::Stored(3)
        ));
        assert_eq!(
            r.push_multi_with(1, || multi(0, 1, 1), |i| cont(0, 1, i)),
            Push::Full
        );
        assert_eq!(r.lost(), 1);
        assert!(matches!(r.push(multi(0, 2, 0)), Push::Stored(4)));
        assert_eq!(
            r.push_multi_with(4, || multi(0, 3, 4), |i| cont(0, 3, i)),
            Push::Full
        );
        // SAFETY: The only consumer.
        assert_eq!(unsafe { pop_checked(&r) }, Some((0, 0, 2)));
        // SAFETY: As above.
        assert_eq!(unsafe { pop_checked(&r) }, Some((0, 2, 0)));
        // SAFETY: As above.
        assert_eq!(unsafe { pop_checked(&r) }, None);
    });
}

/// A reader that takes a record where it lies (`pop_with`, the drain's
/// chainless path) keeps its slot until it is done with it: a writer that
/// finds the ring full meanwhile drops its record instead of overwriting
/// the one being read (loom fails on a write to a cell that is being
/// read), and once the slot is released the next push may use it.
#[test]
fn pop_with_keeps_its_slot_until_done() {
    model(|| {
        let r = ring(2);
        for seq in 0..2 {
            assert!(matches!(r.push(rec(0, seq)), Push::Stored(_)));
        }
        let writer = {
            let r = r.clone();
            thread::spawn(move || {
                (0..2)
                    .filter(|&seq| matches!(r.push(rec(1, seq)), Push::Stored(_)))
                    .count() as u64
            })
        };
        // SAFETY: This thread is the only consumer.
        let got = unsafe { r.pop_with(|v| check(*v)) };
        assert_eq!(got, Some((0, 0)));
        let stored = writer.join().unwrap();
        let mut last = [Some(0), None];
        let rest = drain(&r, &mut last);
        assert_eq!(1 + rest, 2 + stored, "every stored record is read once");
        assert_eq!(stored + r.lost(), 2, "the writer's records: stored or lost");
    });
}
