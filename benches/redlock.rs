//! How often Redlock grants one lock to two clients at once when one of its five servers
//! restarts, with and without the persistence its safety needs.
//!
//! ```sh
//! cargo bench --bench redlock                 # 10 s per configuration
//! SECONDS=30 CLIENTS=8 cargo bench --bench redlock
//! ```
//!
//! Five servers; `CLIENTS` threads (default 6) take the same lock over and over (a lease
//! of 500 ms, held a random 0–`HOLD_MS` ms (default 20), then released), each noting when it holds it. Another
//! thread restarts server 0 every 100 ms (`SIGKILL`, then start again): without
//! persistence it comes back empty, so a lock it granted is gone; with
//! `--appendonly yes --appendfsync always` it comes back with every grant it answered. A
//! double grant is a client starting to hold the lock while another one holds it and its
//! validity has not run out; a fence inversion is a holder getting a fencing token not
//! above the last holder's. The run prints both per configuration, with the grants they
//! come from.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis::ConnectionLike;
use redis_patterns::redlock::Redlock;

#[path = "../tests/it/server.rs"]
mod server;

use server::RedisProcess;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Default)]
struct Counts {
    grants: AtomicU64,
    double_grants: AtomicU64,
    fence_inversions: AtomicU64,
    failed: AtomicU64,
}

/// A connection per server, opened again when the last one broke (its server restarted).
fn reconnect(cons: &mut [Option<redis::Connection>], urls: &[String]) {
    for (con, url) in cons.iter_mut().zip(urls) {
        if con.as_ref().is_none_or(|c| !c.is_open()) {
            *con = redis::Client::open(url.as_str()).ok().and_then(|client| {
                let con = client
                    .get_connection_with_timeout(Duration::from_millis(50))
                    .ok()?;
                con.set_read_timeout(Some(Duration::from_millis(50))).ok()?;
                con.set_write_timeout(Some(Duration::from_millis(50)))
                    .ok()?;
                Some(con)
            });
        }
    }
}

/// A connection that is not there answers as a server that is down.
struct Maybe<'a>(&'a mut Option<redis::Connection>);

impl ConnectionLike for Maybe<'_> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        match self.0 {
            Some(con) => con.req_packed_command(cmd),
            None => Err(down()),
        }
    }
    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        match self.0 {
            Some(con) => con.req_packed_commands(cmd, offset, count),
            None => Err(down()),
        }
    }
    fn get_db(&self) -> i64 {
        0
    }
    fn check_connection(&mut self) -> bool {
        self.0.as_mut().is_some_and(|c| c.check_connection())
    }
    fn is_open(&self) -> bool {
        self.0.as_ref().is_some_and(|c| c.is_open())
    }
}

fn down() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "the server is restarting",
    ))
}

fn run(persistent: bool, seconds: u64, clients: usize, hold_ms: u64) -> Counts {
    let extra: &[&str] = if persistent {
        &["--appendonly", "yes", "--appendfsync", "always"]
    } else {
        &[]
    };
    let mut servers: Vec<RedisProcess> = (0..5).map(|_| RedisProcess::start(extra)).collect();
    let urls: Arc<Vec<String>> = Arc::new(servers.iter().map(|s| s.url(0)).collect());
    let counts = Arc::new(Counts::default());
    let stop = Arc::new(AtomicBool::new(false));
    // Who holds the lock now, by this bench's reckoning: the holder's validity end.
    let holder: Arc<Mutex<Option<(usize, Instant)>>> = Arc::new(Mutex::new(None));
    let last_fence = Arc::new(AtomicU64::new(0));

    let threads: Vec<_> = (0..clients)
        .map(|id| {
            let (urls, counts, stop, holder, last_fence) = (
                urls.clone(),
                counts.clone(),
                stop.clone(),
                holder.clone(),
                last_fence.clone(),
            );
            thread::spawn(move || {
                let lock = Redlock::new("bench:redlock").unwrap().retries(0);
                let mut cons: Vec<Option<redis::Connection>> = (0..5).map(|_| None).collect();
                let mut n = id as u64;
                while !stop.load(Ordering::Relaxed) {
                    reconnect(&mut cons, &urls);
                    let mut servers: Vec<Maybe> = cons.iter_mut().map(Maybe).collect();
                    let held = match lock.acquire(&mut servers, Duration::from_millis(500)) {
                        Ok(Some(held)) => held,
                        _ => {
                            counts.failed.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    };
                    counts.grants.fetch_add(1, Ordering::Relaxed);
                    {
                        let mut now = holder.lock().unwrap();
                        if let Some((other, until)) = *now
                            && other != id
                            && until > Instant::now()
                        {
                            counts.double_grants.fetch_add(1, Ordering::Relaxed);
                        }
                        *now = Some((id, Instant::now() + held.validity()));
                    }
                    if held.fence() <= last_fence.fetch_max(held.fence(), Ordering::SeqCst) {
                        counts.fence_inversions.fetch_add(1, Ordering::Relaxed);
                    }
                    n = n
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    thread::sleep(Duration::from_millis((n >> 33) % (hold_ms + 1)));
                    {
                        let mut now = holder.lock().unwrap();
                        if now.is_some_and(|(who, _)| who == id) {
                            *now = None;
                        }
                    }
                    let _ = lock.release(&mut servers, &held);
                }
            })
        })
        .collect();

    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        thread::sleep(Duration::from_millis(100));
        servers[0].restart();
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    Arc::try_unwrap(counts).unwrap_or_else(|_| unreachable!("every thread ended"))
}

fn main() {
    let seconds = env("SECONDS", 10);
    let clients = env("CLIENTS", 6) as usize;
    let hold_ms = env("HOLD_MS", 20);
    println!(
        "Redlock on 5 servers, server 0 restarted every 100 ms, {clients} clients holding 0-{hold_ms} ms, {seconds} s each"
    );
    println!(
        "{:<44} {:>8} {:>14} {:>16} {:>10}",
        "server 0 restarts", "grants", "double grants", "fence inversions", "per 10^4"
    );
    for (persistent, what) in [
        (false, "without persistence (the default)"),
        (true, "with --appendonly yes --appendfsync always"),
    ] {
        let c = run(persistent, seconds, clients, hold_ms);
        let grants = c.grants.load(Ordering::Relaxed);
        let doubles = c.double_grants.load(Ordering::Relaxed);
        println!(
            "{:<44} {:>8} {:>14} {:>16} {:>10.1}",
            what,
            grants,
            doubles,
            c.fence_inversions.load(Ordering::Relaxed),
            doubles as f64 * 1e4 / grants.max(1) as f64
        );
    }
}
