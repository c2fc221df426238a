// Rust as `cargo build --release` builds it (rustc -O: no frame pointers),
// for the unwind-table tests (tests/e2e/48-unwind.sh): a frameless leaf
// reached 3:1 through a trait object and through an iterator chain (its
// closures inlined as the compiler likes), with a panic caught every round.
//   rustw SECONDS
use std::hint::black_box;
use std::time::{Duration, Instant};

#[inline(never)]
#[no_mangle]
pub extern "C" fn hot(n: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = x.wrapping_add(i.wrapping_mul(i) ^ (x >> 3));
    }
    black_box(x)
}

trait Work {
    fn work(&self, n: u64) -> u64;
}

struct Square;

impl Work for Square {
    #[inline(never)]
    fn work(&self, n: u64) -> u64 {
        hot(n) + 1
    }
}

/// Three parts: a call through a trait object, then a panic caught across
/// a frame.
#[inline(never)]
#[no_mangle]
pub extern "C" fn dyn_path(n: u64) -> u64 {
    let w: &dyn Work = black_box(&Square);
    let r = w.work(3 * n);
    let caught = std::panic::catch_unwind(|| fail_on(black_box(r)));
    r ^ u64::from(caught.is_err())
}

#[inline(never)]
fn fail_on(v: u64) {
    if v != u64::MAX {
        std::panic::panic_any(v);
    }
}

/// One part: hot from the closures of an iterator chain, n over 8 calls.
#[inline(never)]
#[no_mangle]
pub extern "C" fn iter_path(n: u64) -> u64 {
    (0..8u64).map(|i| hot(n / 8) ^ i).filter(|v| v & 1 == 0).fold(0, |a, v| a ^ v)
}

fn main() {
    // The caught panics print nothing.
    std::panic::set_hook(Box::new(|_| {}));
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2.0);
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let (mut rounds, mut sink) = (0u64, 0u64);
    while Instant::now() < end {
        sink ^= dyn_path(black_box(20000));
        sink ^= iter_path(black_box(20000));
        rounds += 1;
    }
    println!("{rounds} rounds ({sink:x})");
}
