//! rslock's side of benches/coordination.rs: one cell per run, its results as one JSON
//! line on stdout (the protocol of bench.mjs and bench.py):
//!
//!   coordination-rslock mutex <contenders> <ops> <redis url> <key> <max ms>
//!
//! `contenders` tasks on tokio's multi-threaded runtime, each with its own `LockManager`
//! (so its own connection) on the one server, loop `acquire` (rslock's waiting form: it
//! calls `lock` until it succeeds; `lock` tries 3 times, 0–200 ms apart, its defaults)
//! then `unlock`, with a 10 s TTL, until `ops` acquisitions were claimed between them or
//! `max ms` passed. After one untimed hold per contender it prints `ready` and waits for a
//! line on stdin before the clock starts. Every hold's start of acquire, acquire returning and unlock returning,
//! in µs on one monotonic clock (`Instant`), are printed for the bench to derive the
//! wake-ups. rslock has no semaphore: any other cell is refused.

use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rslock::LockManager;

const TTL: Duration = Duration::from_secs(10);

/// This process's CPU time so far (user and system, every thread), in µs.
fn cpu_us() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, cell, contenders, ops, url, key, max_ms] = &args[..] else {
        eprintln!("usage: coordination-rslock mutex <contenders> <ops> <url> <key> <max ms>");
        std::process::exit(2);
    };
    if cell != "mutex" {
        eprintln!("rslock has no {cell}");
        std::process::exit(3);
    }
    let contenders: usize = contenders.parse().expect("contenders");
    let ops: usize = ops.parse().expect("ops");
    let max = Duration::from_millis(max_ms.parse().expect("max ms"));
    let key = key.clone().into_bytes();

    // Connect every contender before the clock starts.
    let mut managers = Vec::with_capacity(contenders);
    for _ in 0..contenders {
        let manager = LockManager::new(vec![url.clone()]);
        let warm = manager.lock(&b"warm-up"[..], TTL).await.expect("rslock connects");
        manager.unlock(&warm).await;
        managers.push(manager);
    }
    // Ready: the bench reads the server's CPU and resets its stats, then says go.
    println!("ready");
    std::io::stdin().read_line(&mut String::new()).expect("stdin");
    let claimed = Arc::new(AtomicUsize::new(0));
    let base = Instant::now();
    let cpu_before = cpu_us();
    let tasks: Vec<_> = managers
        .into_iter()
        .map(|manager| {
            let (claimed, key) = (claimed.clone(), key.clone());
            tokio::spawn(async move {
                let mut holds = Vec::new();
                loop {
                    if base.elapsed() >= max || claimed.fetch_add(1, Ordering::SeqCst) >= ops {
                        return holds;
                    }
                    let start = base.elapsed();
                    let lock = manager.acquire_no_guard(&key[..], TTL).await.expect("acquire");
                    let acquired = base.elapsed();
                    manager.unlock(&lock).await;
                    let released = base.elapsed();
                    holds.push([start, acquired, released].map(|t| t.as_micros() as u64));
                }
            })
        })
        .collect();
    let mut holds = Vec::new();
    for task in tasks {
        holds.extend(task.await.expect("a contender"));
    }
    let secs = base.elapsed().as_secs_f64();
    let client_cpu_us = cpu_us() - cpu_before;
    let mut out = format!(
        "{{\"lib\":\"rslock\",\"version\":\"0.10.0\",\"ops\":{},\"secs\":{secs},\"client_cpu_us\":{client_cpu_us},\"holds\":[",
        holds.len()
    );
    for (i, [s, a, r]) in holds.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        write!(out, "{sep}[{s},{a},{r}]").unwrap();
    }
    out.push_str("]}");
    println!("{out}");
}
