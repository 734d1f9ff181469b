//! The coordination primitives under process faults: holders and waiters that are
//! `SIGKILL`ed, a holder `SIGSTOP`ped past its lease, at the scale the design asks for
//! (1,000 kills, 10^5 latch cycles, 10^4 fenced trials), with each family's invariant
//! checked from the server's own state while it happens.
//!
//! ```sh
//! cargo bench --bench coordination_faults                # all three parts
//! PART=kills cargo bench --bench coordination_faults     # or latch, or fenced
//! PART=kills KILLS=100 GAP_MS=10 cargo bench --bench coordination_faults
//! PART=latch CYCLES=10000 BARRIER_TRIALS=10 cargo bench --bench coordination_faults
//! PART=fenced TRIALS=1000 LANES=4 cargo bench --bench coordination_faults
//! ```
//!
//! The bench starts its own `redis-server` on a free port, and its children are this
//! bench run again (`std::env::current_exe()`), told by `COORDINATION_FAULTS_ROLE` which
//! part to play; they die with it (`PR_SET_PDEATHSIG`). A child that meets anything
//! unexpected pushes it to `bench:errors` and exits, and the run fails. The run ends with
//! one table (faults, operations, what was checked, how often it broke, timings) and
//! exits non-zero when any invariant broke. `SEED` makes the victims and gaps repeatable.
//!
//! # 1. Kills (`PART=kills`)
//!
//! `KILLS` (1,000) `SIGKILL`s (`Child::kill`), split between three primitives in turn
//! (`SEM_KILLS`, `FAIR_KILLS`, `RW_KILLS`: 40/30/30 %). Every 0 to 2×`GAP_MS` ms (20; for
//! the fair lock `FAIR_GAP_MS`, 100, so that most kills stand alone and the time each
//! costs can be read) the bench kills a child and starts a new one. Each child publishes
//! its current token before it asks (a hash `inst → token`), so the bench reads from the
//! server, just before a kill, who holds and who waits, and aims at a holder or a waiter
//! in turn (anyone, when there is none of the kind drawn): random kills would mostly hit
//! processes between calls. Holds last `LEASE_MS` (200 ms; waiting places too), work
//! inside a hold is 0–3 ms, every wait has a timeout of a minute.
//!
//! **Semaphore.** Two semaphores of capacity `CAPACITY` (3), one [`Order::Fifo`] and one
//! [`Order::Any`], each with `SEM_CHILDREN` (4) processes that loop: take 1 or 2 permits
//! ([`Semaphore::try_acquire`] in [`wait::until`], as `acquire_within` runs it, with
//! places of `SEM_PLACE_MS` ([`Semaphore::with_place_lease`]), the holds' lease: at the
//! default [`PLACE_LEASE`](redis_patterns::semaphore::PLACE_LEASE), 5 s, each killed waiter would hold the line 25
//! leases), record "in", work, record "out", release. "In" is a sorted-set entry of the
//! permits scored with the holding's deadline as the script answered it (the server's
//! clock), "out" removes it; so a killed holder's entry counts exactly as long as its
//! lease, like its permits. A checker thread, throughout: the `state` script must answer
//! `used = Σ holdings` (`State::consistent`) and `used ≤ capacity`, and the permits of
//! the "in" entries whose deadline is after the server's `TIME` (read in the same
//! `MULTI`) must be at most the capacity: entries are written after a grant and removed
//! before a release, so they can only undercount. After the last kill every child is
//! killed, the bench waits until the server's clock has passed every lease and every
//! place (polled, not slept), and one request for the whole capacity must be granted,
//! leaving `used − live = 0`: no permit leaked.
//!
//! **Fair lock.** `FAIR_CHILDREN` (6) processes loop: draw a token, publish it
//! (`bench:fair:tokens`), `acquire_within`, push `fence:token` to a list, work, release.
//! A checker thread reads, in one `MULTI`, the server's `TIME`, the fence counter, the
//! owner and the queue with its places, as fast as it can. *FIFO*: the order that counts
//! is the queue's own tickets, as the server holds them, not any client's clock. Every
//! snapshot gives pairs (B ahead of A) among the waiters whose place is live; A passing
//! B (A's fencing token below B's, or B never granted) is an **inversion** when B was
//! alive at A's grant: B never killed, or the fence counter read just *before* B's kill
//! was already at A's token. When the counter read just *after* the kill was still below
//! A's token, B died first and its place was rightly dropped; in between the order is
//! undecided (reported). A waiter seen with two tickets, or whose place was seen lapsed
//! while it lived (a stall longer than the place lease), is left out and counted.
//! *Moving on*: at each kill the bench reads the counter; the time until the checker
//! first sees it higher is how long the kill held the queue. For kills with no other kill
//! before that grant, it must stay near one lease (a holder's lease, or the place lease
//! of the head: the first *living* waiter in line, dead ones ahead of it holding the line
//! only until their own places lapse). Kills that come before the grant add up; for them
//! the time from the last kill to the grant is what must stay near one lease. A grant
//! later than a lease and a second counts as stuck, and fails the run.
//!
//! **Read-write lock.** `RW_CHILDREN` (6) processes loop, a writer one time in three
//! (`write_within`), else a reader (`read_within`). The resource is a
//! [`FencedResource`]: a writer `set`s it to its fencing token. Three checks, each of
//! which proves two live holds at one moment:
//! - the checker thread reads in one `MULTI` the writer hash, the readers with their
//!   deadlines and `TIME`: a writer key (it expires with its lease) beside a reader whose
//!   deadline is after `TIME` is an overlap in the lock's own state;
//! - a writer, once granted, reads the readers and `TIME` in one `MULTI` (a live reader
//!   is an overlap); after its work it reads the resource and the writer hash in one
//!   `MULTI`: another value while the hash still names it means another writer wrote
//!   during its hold. A write the fence refused while it still held is an overlap too;
//! - a reader, once granted, reads the resource, the writer hash, its own deadline and
//!   `TIME` in one `MULTI` (a writer beside its live hold is an overlap), and after its
//!   work reads them again: a changed value while its deadline is still ahead means a
//!   writer wrote during its read hold. If that writer itself later found its lease had
//!   run out (a stall past the lease), the write is counted apart, as a fencing case.
//!
//! # 2. Latch and barrier (`PART=latch`)
//!
//! **Latch.** The bench arms and opens one latch `CYCLES` times (10^5) in a tight loop
//! (`arm(1)` and `count_down` in one pipeline: one round trip per cycle), while
//! `LATCH_WAITERS` (4) processes wait on it with `try_wait` / `wait_within`, and one of
//! them is killed and replaced every 0 to 2×`LATCH_GAP_MS` ms (20). A waiter follows the
//! latch: it asks about generation g; "open" at once is recorded as seen open; "not yet"
//! is recorded as *waited on* (pushed to Redis before it blocks), then it blocks with
//! `wait_within(g)` and records g open when it returns. Then it reads the state and moves
//! to the current generation (or the next, when the current one is open). A **missed
//! opening** is a generation some waiter waited on and never saw open, except the one a
//! killed waiter was waiting on when it died (the last record of a killed waiter). Every
//! round each waiter also asks about a latch nobody ever armed (`try_wait(None)`): a
//! **false open** is that latch answering open, or a generation answered open that the
//! state read right after shows closed or not yet armed.
//!
//! **Barrier.** `BARRIER_TRIALS` (50) kills of a party: a barrier of 4 parties, two party
//! processes that loop `arrive_within` (lease `BARRIER_LEASE_MS`, 500 ms), and per trial
//! a third that arrives and, once the barrier's state shows three waiting, is killed. The
//! time from the kill until both others have answered **broken** for that generation
//! is measured (the generation's outcome is also read from the barrier's history); it
//! must stay near one lease.
//!
//! # 3. Fenced writes (`PART=fenced`)
//!
//! `TRIALS` (10^4) trials on `LANES` (8) lanes in parallel, each lane with its own keys
//! and two processes, A and B. The lock rotates by trial between a [`FencedLock`], an
//! [`RwLock`] write hold and a [`FairLock`], all with `FENCE_LEASE_MS` (20 ms) leases:
//!
//! 1. A takes the lock and reports its fencing token, then waits for a go;
//! 2. the bench `SIGSTOP`s A (and waits until `/proc` shows it stopped), sends the go,
//!    and waits until the lock's key has gone from the server (the lease lapsed);
//! 3. B takes the lock (a higher token: checked) and writes the resource through
//!    [`FencedResource::set`], and a plain twin key with `SET`;
//! 4. the bench `SIGCONT`s A, which writes what it had: the fenced write must be refused
//!    (`STALE_TOKEN`), and the resource must still hold B's value. A also `SET`s the twin,
//!    which shows what the same client does to an unfenced key.
//!
//! No sleeps stand for time: each step waits for the state it needs.
//!
//! # What the peers do at these faults
//!
//! As the design notes (`coordination-anchors.md`) record them; "—" where the notes say
//! nothing (they did not read `redis-semaphore`, and pottery and rslock ship only Redlock
//! among these):
//!
//! | Fault | Redisson | redis-semaphore | pottery | rslock |
//! |---|---|---|---|---|
//! | semaphore holder killed | `RSemaphore` keeps no holders: its permits are gone for good (#4462); `RPermitExpirableSemaphore` leases on the client's clock | — | no semaphore | no semaphore |
//! | fair-lock holder or waiter killed | a killed pod can leave the queue stuck (#4595, #3730); expired waiters pruned only from the head, live ones pruned and never woken (#3004); a dead waiter costs `fairLockWaitTimeout`, 5 min by default | — | no fair lock | no fair lock |
//! | read-write holder killed | a read hold per key with its own PTTL, renewed by a watchdog that does not watch read locks (#1604), or renews a dead holder's (PR #7098) | — | none | none |
//! | latch re-armed, waiters killed | one integer: no generation, a slow waiter can miss an opening; a latch never set reads open; untimed `await` waits on pub/sub alone | — | none | none |
//! | barrier party killed | no barrier | — | none | none |
//! | holder paused past its lease, then writes | `RFencedLock` hands out tokens, the resource must check them; `RedissonRedLock` has no fencing | — | `Redlock`: no fencing (`NextID` is a separate counter) | no fencing, no word on safety |

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::Batch;
use redis_patterns::Op;
use redis_patterns::barrier::{Arrival, Barrier};
use redis_patterns::fair_lock::FairLock;
use redis_patterns::fenced_lock::FencedLock;
use redis_patterns::fenced_write::{self, FencedResource};
use redis_patterns::latch::{Armed, Latch, LatchState};
use redis_patterns::rw_lock::RwLock;
use redis_patterns::semaphore::{Order, Semaphore};
use redis_patterns::wait::{self, Attempt};

#[path = "../tests/it/server.rs"]
mod server;

const ROLE: &str = "COORDINATION_FAULTS_ROLE";
const URL: &str = "COORDINATION_FAULTS_URL";
const ERRORS: &str = "bench:errors";

/// A `TIME` reply: seconds and microseconds.
type Time = (u64, u64);
/// A `ZRANGE … WITHSCORES` reply.
type Scored = Vec<(String, f64)>;

type R<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One line of the final table.
struct Row {
    primitive: String,
    faults: String,
    ops: String,
    checked: String,
    broken: u64,
    timing: String,
}

fn main() {
    if let Ok(role) = std::env::var(ROLE) {
        child(&role);
    }
    let part = std::env::var("PART").unwrap_or_else(|_| "all".into());
    let all = part == "all";
    let seed = env(
        "SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1,
    );
    println!("coordination faults: seed {seed}");
    let mut rng = Rng(seed);
    let mut rows = Vec::new();
    if all || part == "kills" {
        rows.extend(kills(&mut rng));
    }
    if all || part == "latch" {
        rows.extend(latch_part(&mut rng));
    }
    if all || part == "fenced" {
        rows.extend(fenced_part());
    }
    print_table(&rows);
    let broken: u64 = rows.iter().map(|r| r.broken).sum();
    if broken > 0 {
        eprintln!("{broken} invariant breaks");
        std::process::exit(1);
    }
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "{:<16} {:<36} {:<30} {:>6}  {:<58} timing",
        "primitive", "faults", "operations", "broken", "checked"
    );
    for r in rows {
        println!(
            "{:<16} {:<36} {:<30} {:>6}  {:<58} {}",
            r.primitive, r.faults, r.ops, r.broken, r.checked, r.timing
        );
    }
}

/// A small xorshift generator: victims, gaps and work times.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    fn seeded() -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        Rng((nanos ^ ((std::process::id() as u64) << 32)) | 1)
    }
}

fn connect(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("cannot connect to the bench's server")
}

/// The server's clock in ms, from a `TIME` reply.
fn time_ms((secs, micros): Time) -> u64 {
    secs * 1000 + micros / 1000
}

fn errors(con: &mut redis::Connection) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(ERRORS)
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap()
}

// ---------------------------------------------------------------------------------------
// Children

fn spawn(url: &str, role: &str) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(ROLE, role)
        .env(URL, url)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe and the closure allocates nothing. Children
        // are spawned from the main thread only, which outlives them.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    cmd.spawn().expect("cannot start a child process")
}

/// Children that are killed and replaced: each instance has a number of its own.
struct Brood {
    url: String,
    prefix: String,
    children: Vec<(u64, Child)>,
    next: u64,
}

impl Brood {
    fn new(url: &str, prefix: &str, n: usize) -> Brood {
        let mut brood = Brood {
            url: url.to_owned(),
            prefix: prefix.to_owned(),
            children: Vec::new(),
            next: 0,
        };
        for _ in 0..n {
            let child = brood.spawn_one();
            brood.children.push(child);
        }
        brood
    }

    fn spawn_one(&mut self) -> (u64, Child) {
        let inst = self.next;
        self.next += 1;
        (inst, spawn(&self.url, &format!("{}:{inst}", self.prefix)))
    }

    /// Kills child `i` (after checking it did not end by itself), and starts another in
    /// its slot: the killed instance's number.
    fn kill(&mut self, i: usize, con: &mut redis::Connection) -> u64 {
        let killed = self.kill_only(i, con);
        self.children[i] = self.spawn_one();
        killed
    }

    /// Kills child `i`, and leaves its slot to [`Brood::respawn`].
    fn kill_only(&mut self, i: usize, con: &mut redis::Connection) -> u64 {
        let (inst, child) = &mut self.children[i];
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{}:{inst} ended by itself ({status}): {:?}",
                self.prefix,
                errors(con)
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
        *inst
    }

    /// Starts a new child in slot `i`.
    fn respawn(&mut self, i: usize) {
        self.children[i] = self.spawn_one();
    }

    /// Kills every child: the instances that were alive.
    fn kill_all(&mut self, con: &mut redis::Connection) -> Vec<u64> {
        let mut killed = Vec::new();
        for (inst, child) in &mut self.children {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "{}:{inst} ended by itself ({status}): {:?}",
                    self.prefix,
                    errors(con)
                );
            }
            let _ = child.kill();
            let _ = child.wait();
            killed.push(*inst);
        }
        self.children.clear();
        killed
    }
}

fn child(role: &str) -> ! {
    let url = std::env::var(URL).expect("COORDINATION_FAULTS_URL");
    let mut con = connect(&url);
    let mut parts = role.splitn(3, ':');
    let kind = parts.next().unwrap_or_default().to_owned();
    let a = parts.next().unwrap_or_default().to_owned();
    let b = parts.next().unwrap_or_default().to_owned();
    let outcome = match kind.as_str() {
        "sem" => sem_child(&mut con, &a, &b),
        "fair" => fair_child(&mut con, &a),
        "rw" => rw_child(&mut con, &a),
        "latch" => latch_waiter(&mut con, &a),
        "party" => barrier_party(&mut con, &a),
        "fence-a" => fence_a(&mut con, &a),
        "fence-b" => fence_b(&mut con, &a),
        _ => Err(format!("unknown role {role}").into()),
    };
    let what = match outcome {
        Ok(()) => "ended".to_owned(),
        Err(err) => err.to_string(),
    };
    let _: redis::RedisResult<()> = redis::cmd("RPUSH")
        .arg(ERRORS)
        .arg(format!("{role}: {what}"))
        .query(&mut con);
    std::process::exit(3)
}

fn work(rng: &mut Rng) {
    thread::sleep(Duration::from_micros(rng.below(3000)));
}

fn lease() -> Duration {
    ms(env("LEASE_MS", 200))
}

fn count(con: &mut redis::Connection, hash: &str, field: &str) -> R<()> {
    redis::cmd("HINCRBY")
        .arg(hash)
        .arg(field)
        .arg(1)
        .exec(con)?;
    Ok(())
}

fn counts(con: &mut redis::Connection, hash: &str) -> HashMap<String, u64> {
    redis::cmd("HGETALL").arg(hash).query(con).unwrap()
}

// ---------------------------------------------------------------------------------------
// 1. Kills: semaphore

const WAIT: Duration = Duration::from_secs(60);

fn semaphore_of(kind: &str) -> (Semaphore, Order) {
    let order = if kind == "fifo" {
        Order::Fifo
    } else {
        Order::Any
    };
    (Semaphore::new(format!("bench:sem:{kind}")).unwrap(), order)
}

fn sem_child(con: &mut redis::Connection, kind: &str, inst: &str) -> R<()> {
    let (sem, order) = semaphore_of(kind);
    let in_key = format!("bench:sem:{kind}:in");
    let stats = format!("bench:sem:{kind}:counts");
    let mut rng = Rng::seeded();
    loop {
        let n = 1 + rng.below(2);
        // `acquire_within`, with the token published first (for the bench to find holders).
        let token = Semaphore::random_token();
        redis::cmd("HSET")
            .arg(format!("bench:sem:{kind}:tokens"))
            .arg(inst)
            .arg(&token)
            .exec(con)?;
        match wait::until(con, WAIT, || sem_try(kind, &token, n, order))? {
            None => {
                sem.release(&token).run(con)?;
                count(con, &stats, "timeouts")?;
            }
            Some(deadline_ms) => {
                let member = format!("{n}:{token}");
                redis::pipe()
                    .cmd("ZADD")
                    .arg(&in_key)
                    .arg(deadline_ms)
                    .arg(&member)
                    .ignore()
                    .cmd("HINCRBY")
                    .arg(&stats)
                    .arg("grants")
                    .arg(1)
                    .ignore()
                    .exec(con)?;
                work(&mut rng);
                redis::cmd("ZREM").arg(&in_key).arg(&member).exec(con)?;
                if sem.release(&token).run(con)? != n {
                    count(con, &stats, "lapsed")?;
                }
            }
        }
    }
}

/// [`Semaphore::try_acquire`] with the waiting place's lease `SEM_PLACE_MS` (the holds'
/// lease by default) instead of [`PLACE_LEASE`](redis_patterns::semaphore::PLACE_LEASE). `Done` with the holding's
/// deadline.
fn sem_try(kind: &str, token: &str, n: u64, order: Order) -> Op<Attempt<u64>> {
    let place = ms(env("SEM_PLACE_MS", lease().as_millis() as u64));
    Semaphore::new(format!("bench:sem:{kind}"))
        .unwrap()
        .with_place_lease(place)
        .unwrap()
        .try_acquire(token, n, lease(), order)
        .map(|attempt| {
            Ok(match attempt {
                Attempt::Done(holding) => Attempt::Done(holding.deadline_ms),
                Attempt::NotYet(wake) => Attempt::NotYet(wake),
            })
        })
}

/// The tokens that hold permits (live leases), and those with a live place in line.
fn sem_classes(con: &mut redis::Connection, kind: &str) -> (HashSet<String>, HashSet<String>) {
    let prefix = format!("{{bench:sem:{kind}}}");
    let (time, leases, places): (Time, Scored, Scored) = redis::pipe()
        .atomic()
        .cmd("TIME")
        .cmd("ZRANGE")
        .arg(format!("{prefix}:leases"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("ZRANGE")
        .arg(format!("{prefix}:places"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(con)
        .unwrap();
    let now = time_ms(time) as f64;
    let live = |v: Scored| -> HashSet<String> {
        v.into_iter()
            .filter(|(_, d)| *d > now)
            .map(|(t, _)| t)
            .collect()
    };
    (live(leases), live(places))
}

#[derive(Default)]
struct SemChecks {
    samples: u64,
    inconsistent: u64,
    over_capacity: u64,
    client_over: u64,
    max_used: u64,
    max_client_live: u64,
}

fn check_semaphores(url: &str, capacity: u64, stop: &AtomicBool) -> HashMap<String, SemChecks> {
    let mut con = connect(url);
    let mut out: HashMap<String, SemChecks> = HashMap::new();
    let mut rounds = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for kind in ["fifo", "any"] {
            let (sem, _) = semaphore_of(kind);
            let c = out.entry(kind.to_owned()).or_default();
            let st = sem.state().run(&mut con).unwrap();
            c.samples += 1;
            if !st.consistent() {
                c.inconsistent += 1;
                eprintln!("  semaphore {kind}: inconsistent state {st:?}");
            }
            if st.used > capacity || st.live > capacity {
                c.over_capacity += 1;
                eprintln!("  semaphore {kind}: over capacity {st:?}");
            }
            c.max_used = c.max_used.max(st.used);
            let in_key = format!("bench:sem:{kind}:in");
            let (time, entries): (Time, Scored) = redis::pipe()
                .atomic()
                .cmd("TIME")
                .cmd("ZRANGE")
                .arg(&in_key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(&mut con)
                .unwrap();
            let now = time_ms(time);
            let live: u64 = entries
                .iter()
                .filter(|(_, deadline)| *deadline as u64 > now)
                .map(|(m, _)| m.split(':').next().unwrap().parse::<u64>().unwrap())
                .sum();
            if live > capacity {
                c.client_over += 1;
                eprintln!("  semaphore {kind}: {live} permits recorded in at once");
            }
            c.max_client_live = c.max_client_live.max(live);
            rounds += 1;
            if rounds.is_multiple_of(1000) {
                // Killed holders' entries: gone from the count once their lease passed.
                redis::cmd("ZREMRANGEBYSCORE")
                    .arg(&in_key)
                    .arg("-inf")
                    .arg(now.saturating_sub(60_000))
                    .exec(&mut con)
                    .unwrap();
            }
        }
    }
    out
}

/// Whom a kill hits, as the server saw its token just before.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Victim {
    /// It held (the lock, permits, a read or write hold).
    Holder,
    /// It was first among the live waiters (fair lock).
    Head,
    /// It waited (a live place in the queue, or no hold).
    Waiter,
    /// Neither: starting, recording, between tries.
    Other,
}

/// The current token of each live child (`inst → token`, from the hash the children
/// write before each acquire), and the slot of each instance.
fn tokens_of(con: &mut redis::Connection, hash: &str, brood: &Brood) -> Vec<(usize, String)> {
    let all: HashMap<u64, String> = redis::cmd("HGETALL").arg(hash).query(con).unwrap();
    brood
        .children
        .iter()
        .enumerate()
        .filter_map(|(i, (inst, _))| all.get(inst).map(|t| (i, t.clone())))
        .collect()
}

/// Picks a victim among `brood`: a holder (when one holds) or a waiter in turn at random,
/// anyone else when there is none of the kind drawn. `classes` names each token's class.
fn pick(
    rng: &mut Rng,
    brood: &Brood,
    tokens: &[(usize, String)],
    class_of: impl Fn(&str) -> Victim,
    wanted: &[Victim],
) -> (usize, Victim) {
    let want = wanted[rng.below(wanted.len() as u64) as usize];
    let matching: Vec<(usize, Victim)> = tokens
        .iter()
        .map(|(i, t)| (*i, class_of(t)))
        .filter(|(_, c)| *c == want)
        .collect();
    if matching.is_empty() {
        let i = rng.below(brood.children.len() as u64) as usize;
        let class = tokens
            .iter()
            .find(|(j, _)| *j == i)
            .map_or(Victim::Other, |(_, t)| class_of(t));
        return (i, class);
    }
    matching[rng.below(matching.len() as u64) as usize]
}

/// Runs `kills` kills on `brood`, one every 0 to 2×`gap` ms: `choose` picks the slot
/// (reading what it needs from the server just before), `after` runs once the victim is
/// dead (and replaced).
fn kill_loop(
    rng: &mut Rng,
    brood: &mut Brood,
    con: &mut redis::Connection,
    (kills, gap, label): (u64, u64, &str),
    mut choose: impl FnMut(&mut redis::Connection, &Brood, &mut Rng) -> usize,
    mut after: impl FnMut(&mut redis::Connection),
) {
    let started = Instant::now();
    for k in 0..kills {
        thread::sleep(ms(rng.below(2 * gap + 1)));
        let i = choose(con, brood, rng);
        brood.kill_only(i, con);
        after(con);
        brood.respawn(i);
        if (k + 1) % 100 == 0 {
            eprintln!(
                "  {label}: {} kills, {:.0} s",
                k + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
}

fn semaphore_phase(rng: &mut Rng, server: &server::RedisProcess, kills: u64) -> Vec<Row> {
    let url = server.url(0);
    let mut con = server.connection();
    let capacity = env("CAPACITY", 3);
    let per = env("SEM_CHILDREN", 4) as usize;
    let gap = env("GAP_MS", 20);
    for kind in ["fifo", "any"] {
        semaphore_of(kind)
            .0
            .set_capacity(capacity)
            .run(&mut con)
            .unwrap();
    }
    println!(
        "semaphore: capacity {capacity}, {per} processes per order (fifo, any) taking 1-2 \
         permits, lease {} ms, {kills} SIGKILLs every 0-{} ms",
        lease().as_millis(),
        2 * gap
    );
    let stop = Arc::new(AtomicBool::new(false));
    let checker = {
        let (stop, url) = (stop.clone(), url.clone());
        thread::spawn(move || check_semaphores(&url, capacity, &stop))
    };
    let mut fifo = Brood::new(&url, "sem:fifo", per);
    let mut any = Brood::new(&url, "sem:any", per);
    let mut kills_of = [0u64; 2];
    let started = Instant::now();
    let mut classes: [HashMap<Victim, u64>; 2] = Default::default();
    for k in 0..kills {
        thread::sleep(ms(rng.below(2 * gap + 1)));
        let which = rng.below(2) as usize;
        let kind = ["fifo", "any"][which];
        let brood = if which == 0 { &mut fifo } else { &mut any };
        let (holders, waiting) = sem_classes(&mut con, kind);
        let tokens = tokens_of(&mut con, &format!("bench:sem:{kind}:tokens"), brood);
        let (i, class) = pick(
            rng,
            brood,
            &tokens,
            |t| {
                if holders.contains(t) {
                    Victim::Holder
                } else if waiting.contains(t) || which == 1 {
                    Victim::Waiter
                } else {
                    Victim::Other
                }
            },
            &[Victim::Holder, Victim::Waiter],
        );
        brood.kill(i, &mut con);
        kills_of[which] += 1;
        *classes[which].entry(class).or_default() += 1;
        if (k + 1) % 100 == 0 {
            eprintln!(
                "  semaphore: {} kills, {:.0} s",
                k + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let checks = checker.join().unwrap();
    fifo.kill_all(&mut con);
    any.kill_all(&mut con);
    let stopped = Instant::now();
    let errs = errors(&mut con);

    let mut rows = Vec::new();
    for (w, kind) in ["fifo", "any"].into_iter().enumerate() {
        let (sem, order) = semaphore_of(kind);
        // Every child is dead: wait until the server's clock is past every lease and
        // every place, then one request for the whole capacity must be granted.
        let prefix = format!("{{bench:sem:{kind}}}");
        loop {
            let (time, lease_last, place_last): (Time, Scored, Scored) = redis::pipe()
                .atomic()
                .cmd("TIME")
                .cmd("ZRANGE")
                .arg(format!("{prefix}:leases"))
                .arg(-1)
                .arg(-1)
                .arg("WITHSCORES")
                .cmd("ZRANGE")
                .arg(format!("{prefix}:places"))
                .arg(-1)
                .arg(-1)
                .arg("WITHSCORES")
                .query(&mut con)
                .unwrap();
            let now = time_ms(time) as f64;
            if lease_last.iter().chain(&place_last).all(|(_, d)| *d < now) {
                break;
            }
            assert!(stopped.elapsed() < Duration::from_secs(30), "never drained");
            thread::sleep(ms(2));
        }
        let drained = stopped.elapsed();
        let before = sem.state().run(&mut con).unwrap();
        let token = Semaphore::random_token();
        let mut granted = false;
        // Each try reclaims at most RECLAIM_PER_CALL lapsed holdings.
        for _ in 0..20 {
            if let Attempt::Done(_) = sem
                .try_acquire(&token, capacity, lease(), order)
                .run(&mut con)
                .unwrap()
            {
                granted = true;
                break;
            }
        }
        let after = sem.state().run(&mut con).unwrap();
        let leaked = after.used - after.live.min(after.used);
        sem.release(&token).run(&mut con).unwrap();
        let c = &checks[kind];
        let stats = counts(&mut con, &format!("bench:sem:{kind}:counts"));
        let broken = c.inconsistent
            + c.over_capacity
            + c.client_over
            + leaked
            + u64::from(!granted)
            + u64::from(!after.consistent());
        println!(
            "semaphore {kind}: {} grants, {} timeouts, {} releases after the lease; {} state \
             samples (max used {}, max recorded in {}), inconsistent {}, used > capacity {}, \
             recorded in > capacity {}; after the kills: {} permits in use by dead holders, \
             every lease and place passed {} ms after the last kill, whole capacity granted: \
             {granted}, leaked {leaked}; kills by victim {:?}",
            stats.get("grants").unwrap_or(&0),
            stats.get("timeouts").unwrap_or(&0),
            stats.get("lapsed").unwrap_or(&0),
            c.samples,
            c.max_used,
            c.max_client_live,
            c.inconsistent,
            c.over_capacity,
            c.client_over,
            before.used,
            drained.as_millis(),
            classes[w]
        );
        rows.push(Row {
            primitive: format!("semaphore {kind}"),
            faults: format!(
                "{} SIGKILL ({} holders)",
                kills_of[w],
                classes[w].get(&Victim::Holder).unwrap_or(&0)
            ),
            ops: format!("{} grants", stats.get("grants").unwrap_or(&0)),
            checked: format!(
                "used≤{capacity}, used=Σheld ({} samples); leaked {leaked}",
                c.samples
            ),
            broken,
            timing: format!(
                "whole capacity granted {} ms after the last kill",
                drained.as_millis()
            ),
        });
    }
    if !errs.is_empty() {
        println!("semaphore children failed: {errs:?}");
        rows[0].broken += errs.len() as u64;
    }
    println!(
        "semaphore phase: {:.1} s\n",
        started.elapsed().as_secs_f64()
    );
    rows
}

// ---------------------------------------------------------------------------------------
// 1. Kills: fair lock

fn fair_lock() -> FairLock {
    FairLock::new("bench:fair")
        .unwrap()
        .with_place_lease(lease())
        .unwrap()
}

fn fair_child(con: &mut redis::Connection, inst: &str) -> R<()> {
    let lock = fair_lock();
    let mut rng = Rng::seeded();
    loop {
        let token = FairLock::random_token();
        redis::cmd("HSET")
            .arg("bench:fair:tokens")
            .arg(inst)
            .arg(&token)
            .exec(con)?;
        match lock.acquire_within(con, &token, lease(), WAIT)? {
            Some(fence) => {
                redis::cmd("RPUSH")
                    .arg("bench:fair:grants")
                    .arg(format!("{fence}:{token}"))
                    .exec(con)?;
                work(&mut rng);
                if !lock.release(&token).run(con)? {
                    count(con, "bench:fair:counts", "lapsed")?;
                }
            }
            None => {
                redis::cmd("RPUSH")
                    .arg("bench:fair:cancelled")
                    .arg(&token)
                    .exec(con)?;
            }
        }
    }
}

/// What the fair lock's checker saw.
#[derive(Default)]
struct FairSeen {
    snapshots: u64,
    /// (when, fence) each time the counter was seen higher.
    fences: Vec<(Instant, u64)>,
    /// fence → token of the owners seen.
    owners: HashMap<u64, String>,
    /// (ahead, behind) among live waiters, by the queue's tickets.
    ahead: HashSet<(u32, u32)>,
    /// token → tickets seen.
    tickets: HashMap<u32, HashSet<u64>>,
    /// tokens whose place was seen lapsed.
    lapsed: HashSet<u32>,
    names: HashMap<String, u32>,
}

impl FairSeen {
    fn id(&mut self, token: &str) -> u32 {
        let n = self.names.len() as u32;
        *self.names.entry(token.to_owned()).or_insert(n)
    }
}

type FairSnapshot = (
    Time,
    Option<u64>,
    Option<String>,
    Option<u64>,
    Scored,
    Scored,
);

fn check_fair(url: &str, stop: &AtomicBool, fence_now: &AtomicU64) -> FairSeen {
    let mut con = connect(url);
    let lock = fair_lock();
    let [owner, queue, places, fence, _] = lock.keys();
    let mut seen = FairSeen::default();
    let mut last_fence = 0;
    let mut last_live: Vec<u32> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let (time, f, t, of, q, p): FairSnapshot = redis::pipe()
            .atomic()
            .cmd("TIME")
            .cmd("GET")
            .arg(fence)
            .cmd("HGET")
            .arg(owner)
            .arg("t")
            .cmd("HGET")
            .arg(owner)
            .arg("f")
            .cmd("ZRANGE")
            .arg(queue)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .cmd("ZRANGE")
            .arg(places)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut con)
            .unwrap();
        let at = Instant::now();
        seen.snapshots += 1;
        let now = time_ms(time) as f64;
        let f = f.unwrap_or(0);
        if f > last_fence {
            seen.fences.push((at, f));
            last_fence = f;
            fence_now.store(f, Ordering::Relaxed);
        }
        if let (Some(t), Some(of)) = (t, of) {
            seen.owners.entry(of).or_insert(t);
        }
        let deadline: HashMap<&str, f64> = p.iter().map(|(m, d)| (m.as_str(), *d)).collect();
        let mut live = Vec::new();
        for (token, ticket) in &q {
            let id = seen.id(token);
            seen.tickets.entry(id).or_default().insert(*ticket as u64);
            match deadline.get(token.as_str()) {
                Some(d) if *d > now => live.push(id),
                _ => {
                    seen.lapsed.insert(id);
                }
            }
        }
        if live != last_live {
            for (i, &b) in live.iter().enumerate() {
                for &a in &live[i + 1..] {
                    seen.ahead.insert((b, a));
                }
            }
            last_live = live;
        }
    }
    seen
}

struct FairKill {
    at: Instant,
    token: Option<String>,
    class: Victim,
    /// The fence counter just before the kill, and just after it.
    before: u64,
    after: u64,
}

fn fair_phase(rng: &mut Rng, server: &server::RedisProcess, kills: u64) -> Row {
    let url = server.url(0);
    let mut con = server.connection();
    let n = env("FAIR_CHILDREN", 6) as usize;
    let gap = env("FAIR_GAP_MS", 100);
    let lease_ms = lease().as_millis() as u64;
    println!(
        "fair lock: {n} processes, lease and place lease {lease_ms} ms, {kills} SIGKILLs every \
         0-{} ms",
        2 * gap
    );
    let lock = fair_lock();
    let [owner, queue, places_key, fence_key, _] = lock.keys();
    let (owner, queue, places_key, fence_key) = (
        owner.to_owned(),
        queue.to_owned(),
        places_key.to_owned(),
        fence_key.to_owned(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let fence_now = Arc::new(AtomicU64::new(0));
    let checker = {
        let (stop, url, fence_now) = (stop.clone(), url.clone(), fence_now.clone());
        thread::spawn(move || check_fair(&url, &stop, &fence_now))
    };
    let mut brood = Brood::new(&url, "fair", n);
    let started = Instant::now();
    let fence_of = |con: &mut redis::Connection| -> u64 {
        redis::cmd("GET")
            .arg(&fence_key)
            .query::<Option<u64>>(con)
            .unwrap()
            .unwrap_or(0)
    };
    let mut kill_log: Vec<FairKill> = Vec::new();
    let pending: Mutex<Option<FairKill>> = Mutex::new(None);
    kill_loop(
        rng,
        &mut brood,
        &mut con,
        (kills, gap, "fair lock"),
        |con, brood, rng| {
            let tokens = tokens_of(con, "bench:fair:tokens", brood);
            let (time, before, holder, queued, places): (
                Time,
                Option<u64>,
                Option<String>,
                Vec<String>,
                Scored,
            ) = redis::pipe()
                .atomic()
                .cmd("TIME")
                .cmd("GET")
                .arg(&fence_key)
                .cmd("HGET")
                .arg(&owner)
                .arg("t")
                .cmd("ZRANGE")
                .arg(&queue)
                .arg(0)
                .arg(-1)
                .cmd("ZRANGE")
                .arg(&places_key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(con)
                .unwrap();
            let now = time_ms(time) as f64;
            let live: HashSet<&str> = places
                .iter()
                .filter(|(_, d)| *d > now)
                .map(|(t, _)| t.as_str())
                .collect();
            let in_line: Vec<&str> = queued
                .iter()
                .map(String::as_str)
                .filter(|t| live.contains(t))
                .collect();
            // The head: the first in line that is alive (dead waiters ahead of it hold
            // the line only until their places lapse).
            let head = in_line
                .iter()
                .find(|t| tokens.iter().any(|(_, mine)| mine == *t))
                .copied();
            let class_of = |t: &str| {
                if holder.as_deref() == Some(t) {
                    Victim::Holder
                } else if head == Some(t) {
                    Victim::Head
                } else if in_line.contains(&t) {
                    Victim::Waiter
                } else {
                    Victim::Other
                }
            };
            let (i, class) = pick(
                rng,
                brood,
                &tokens,
                class_of,
                &[Victim::Holder, Victim::Head, Victim::Waiter],
            );
            let token = tokens.iter().find(|(j, _)| *j == i).map(|(_, t)| t.clone());
            *pending.lock().unwrap() = Some(FairKill {
                at: Instant::now(),
                token,
                class,
                before: before.unwrap_or(0),
                after: 0,
            });
            i
        },
        |con| {
            let mut k = pending.lock().unwrap().take().unwrap();
            k.after = fence_of(con);
            kill_log.push(k);
        },
    );
    // The queue moves on after the last kill too.
    let last = kill_log.last().map_or(0, |k| k.after);
    let waited = Instant::now();
    while fence_now.load(Ordering::Relaxed) <= last && waited.elapsed() < Duration::from_secs(30) {
        thread::sleep(ms(1));
    }
    stop.store(true, Ordering::Relaxed);
    let mut seen = checker.join().unwrap();
    // The survivors die too, each noted as a kill for the FIFO check.
    let survivors: Vec<u64> = brood.children.iter().map(|(i, _)| *i).collect();
    let mut end_tokens = Vec::new();
    for inst in &survivors {
        let token: Option<String> = redis::cmd("HGET")
            .arg("bench:fair:tokens")
            .arg(inst)
            .query(&mut con)
            .unwrap();
        end_tokens.push(token);
    }
    let end_before = fence_of(&mut con);
    brood.kill_all(&mut con);
    let end_after = fence_of(&mut con);
    let errs = errors(&mut con);

    // Who got which fencing token.
    let mut grant_of: HashMap<u32, u64> = HashMap::new();
    let grants: Vec<String> = redis::cmd("LRANGE")
        .arg("bench:fair:grants")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    for g in &grants {
        let (f, t) = g.split_once(':').unwrap();
        let id = seen.id(t);
        grant_of.insert(id, f.parse().unwrap());
    }
    for (f, t) in seen.owners.clone() {
        let id = seen.id(&t);
        grant_of.entry(id).or_insert(f);
    }
    let mut killed: HashMap<u32, (u64, u64)> = HashMap::new();
    for k in &kill_log {
        if let Some(t) = &k.token {
            let id = seen.id(t);
            killed.insert(id, (k.before, k.after));
        }
    }
    for t in end_tokens.iter().flatten() {
        let id = seen.id(t);
        killed.insert(id, (end_before, end_after));
    }
    let cancelled: Vec<String> = redis::cmd("LRANGE")
        .arg("bench:fair:cancelled")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    let cancelled: HashSet<u32> = cancelled.iter().map(|t| seen.id(t)).collect();
    let requeued: HashSet<u32> = seen
        .tickets
        .iter()
        .filter(|(_, t)| t.len() > 1)
        .map(|(id, _)| *id)
        .collect();
    let stalled: HashSet<u32> = seen
        .lapsed
        .iter()
        .filter(|id| !killed.contains_key(id))
        .copied()
        .collect();
    let (mut inversions, mut undecided, mut excused, mut checked) = (0u64, 0u64, 0u64, 0u64);
    for &(b, a) in &seen.ahead {
        let Some(&fa) = grant_of.get(&a) else {
            continue;
        };
        if grant_of.get(&b).is_some_and(|&fb| fb < fa) {
            checked += 1;
            continue;
        }
        if requeued.contains(&b)
            || requeued.contains(&a)
            || stalled.contains(&b)
            || cancelled.contains(&b)
        {
            excused += 1;
            continue;
        }
        checked += 1;
        match killed.get(&b) {
            Some(&(_, after)) if after < fa => {}
            Some(&(before, _)) if before < fa => undecided += 1,
            _ => {
                inversions += 1;
                if inversions <= 5 {
                    eprintln!(
                        "  fair lock: inversion: token {a} granted {fa} ahead of live {b} ({:?})",
                        grant_of.get(&b)
                    );
                }
            }
        }
    }

    // Time from each kill to the next grant the checker saw.
    let mut by_class: HashMap<Victim, (u64, Duration)> = HashMap::new();
    let (mut chained_max, mut chained) = (Duration::ZERO, 0u64);
    let mut last_kill_max = Duration::ZERO;
    // A queue that does not move within a lease and a second more is stuck.
    let bound = lease() + Duration::from_secs(1);
    let mut stuck = 0u64;
    for (i, k) in kill_log.iter().enumerate() {
        let next = seen
            .fences
            .iter()
            .find(|(at, f)| *f > k.before && *at >= k.at);
        let Some(&(at, _)) = next else {
            stuck += 1;
            continue;
        };
        let took = at - k.at;
        let alone = kill_log.get(i + 1).is_none_or(|n| n.at > at);
        if alone && took > bound {
            stuck += 1;
        }
        if alone {
            let e = by_class.entry(k.class).or_default();
            e.0 += 1;
            e.1 = e.1.max(took);
        } else {
            chained += 1;
            chained_max = chained_max.max(took);
            // Faults add up; each is over one lease after it: the grant comes within one
            // lease of the last kill before it.
            let last = kill_log[i..]
                .iter()
                .take_while(|n| n.at < at)
                .last()
                .unwrap();
            last_kill_max = last_kill_max.max(at - last.at);
            if at - last.at > bound {
                stuck += 1;
            }
        }
    }
    let stats = counts(&mut con, "bench:fair:counts");
    println!(
        "fair lock: {} grants (fence {}), {} checker snapshots, {} ordered pairs of live \
         waiters ({} decided by their grants), inversions {inversions}, undecided {undecided}, \
         left out {excused} (requeued {}, stalled {}, cancelled {}); {} releases after the lease",
        grants.len(),
        seen.fences.last().map_or(0, |f| f.1),
        seen.snapshots,
        seen.ahead.len(),
        checked,
        requeued.len(),
        stalled.len(),
        cancelled.len(),
        stats.get("lapsed").unwrap_or(&0)
    );
    println!("  time from a kill to the next grant (kills with no other kill before that grant):");
    let mut timing = Vec::new();
    for class in [Victim::Holder, Victim::Head, Victim::Waiter, Victim::Other] {
        if let Some((n, max)) = by_class.get(&class) {
            println!(
                "    {:<7} {n:>4} kills, max {:>4} ms (lease {lease_ms} ms)",
                format!("{class:?}").to_lowercase(),
                max.as_millis()
            );
            if matches!(class, Victim::Holder | Victim::Head) {
                timing.push(format!(
                    "{} {}",
                    format!("{class:?}").to_lowercase(),
                    max.as_millis()
                ));
            }
        }
    }
    println!(
        "    chained {chained:>4} kills (another kill before the grant), max {} ms, from the \
         last kill before that grant max {} ms; stuck (no grant within a lease and a \
         second): {stuck}",
        chained_max.as_millis(),
        last_kill_max.as_millis()
    );
    if !errs.is_empty() {
        println!("fair lock children failed: {errs:?}");
    }
    println!(
        "fair lock phase: {:.1} s\n",
        started.elapsed().as_secs_f64()
    );
    Row {
        primitive: "fair_lock".into(),
        faults: format!(
            "{} SIGKILL ({} holders, {} heads)",
            kill_log.len(),
            kill_log
                .iter()
                .filter(|k| k.class == Victim::Holder)
                .count(),
            kill_log.iter().filter(|k| k.class == Victim::Head).count()
        ),
        ops: format!("{} grants", grants.len()),
        checked: format!("FIFO among live waiters ({checked} pairs): inversions"),
        broken: inversions + errs.len() as u64 + stuck,
        timing: format!(
            "kill→next grant max ms: {} (lease {lease_ms}); chained: last kill→grant {}",
            timing.join(", "),
            last_kill_max.as_millis()
        ),
    }
}

// ---------------------------------------------------------------------------------------
// 1. Kills: read-write lock

fn rw_lock() -> RwLock {
    RwLock::new("bench:rw")
        .unwrap()
        .with_place_lease(lease())
        .unwrap()
}

const RW_RESOURCE: &str = "bench:rw:resource";
const RW_COUNTS: &str = "bench:rw:counts";
const RW_OVERLAPS: &str = "bench:rw:overlaps";

fn overlap(con: &mut redis::Connection, field: &str, what: String) -> R<()> {
    redis::pipe()
        .cmd("HINCRBY")
        .arg(RW_COUNTS)
        .arg(field)
        .arg(1)
        .ignore()
        .cmd("RPUSH")
        .arg(RW_OVERLAPS)
        .arg(format!("{field}: {what}"))
        .ignore()
        .exec(con)?;
    Ok(())
}

fn live_readers(readers: &[(String, f64)], now: u64, except: &str) -> usize {
    readers
        .iter()
        .filter(|(t, d)| *d as u64 > now && t != except)
        .count()
}

/// What a reader reads in one `MULTI`: the resource, the write holder, its own deadline,
/// and the server's clock (ms).
type ReadView = (Option<String>, Option<String>, Option<f64>, u64);

fn rw_child(con: &mut redis::Connection, inst: &str) -> R<()> {
    let lock = rw_lock();
    let [writer, readers, ..] = lock.keys();
    let (writer, readers) = (writer.to_owned(), readers.to_owned());
    let resource = FencedResource::new(RW_RESOURCE)?;
    let mut rng = Rng::seeded();
    loop {
        let token = RwLock::random_token();
        redis::cmd("HSET")
            .arg("bench:rw:tokens")
            .arg(inst)
            .arg(&token)
            .exec(con)?;
        if rng.below(3) == 0 {
            let Some(fence) = lock.write_within(con, &token, lease(), WAIT)? else {
                count(con, RW_COUNTS, "timeouts")?;
                continue;
            };
            count(con, RW_COUNTS, "writes")?;
            let (time, rs): (Time, Scored) = redis::pipe()
                .atomic()
                .cmd("TIME")
                .cmd("ZRANGE")
                .arg(&readers)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(con)?;
            let live = live_readers(&rs, time_ms(time), "");
            if live > 0 {
                overlap(
                    con,
                    "writer_saw_reader",
                    format!("fence {fence}: {live} live readers"),
                )?;
            }
            let mine = fence.to_string();
            match resource.set(fence, &mine, None).run(con) {
                Ok(_) => {}
                Err(err) if fenced_write::stale(&err).is_some() => {
                    let holder: Option<String> =
                        redis::cmd("HGET").arg(&writer).arg("t").query(con)?;
                    if holder.as_deref() == Some(token.as_str()) {
                        overlap(con, "write_write", format!("fence {fence} refused: {err}"))?;
                    } else {
                        count(con, RW_COUNTS, "lapsed_writers")?;
                    }
                }
                Err(err) => return Err(err.into()),
            }
            work(&mut rng);
            let (value, holder): (Option<String>, Option<String>) = redis::pipe()
                .atomic()
                .cmd("GET")
                .arg(RW_RESOURCE)
                .cmd("HGET")
                .arg(&writer)
                .arg("t")
                .query(con)?;
            if holder.as_deref() != Some(token.as_str()) {
                // Its lease ran out during its work: a stall, not the lock's doing.
                redis::cmd("SADD")
                    .arg("bench:rw:lapsed_fences")
                    .arg(fence)
                    .exec(con)?;
                count(con, RW_COUNTS, "lapsed_writers")?;
            } else if value.as_deref() != Some(mine.as_str()) {
                overlap(
                    con,
                    "write_write",
                    format!("fence {fence} found {value:?} while holding"),
                )?;
            }
            lock.release_write(&token).run(con)?;
        } else {
            if lock.read_within(con, &token, lease(), WAIT)?.is_none() {
                count(con, RW_COUNTS, "timeouts")?;
                continue;
            }
            count(con, RW_COUNTS, "reads")?;
            let read = |con: &mut redis::Connection| -> R<ReadView> {
                let (value, holder, mine, time): (
                    Option<String>,
                    Option<String>,
                    Option<f64>,
                    Time,
                ) = redis::pipe()
                    .atomic()
                    .cmd("GET")
                    .arg(RW_RESOURCE)
                    .cmd("HGET")
                    .arg(&writer)
                    .arg("t")
                    .cmd("ZSCORE")
                    .arg(&readers)
                    .arg(&token)
                    .cmd("TIME")
                    .query(con)?;
                Ok((value, holder, mine, time_ms(time)))
            };
            let (first, holder, mine, now) = read(con)?;
            let live = mine.is_some_and(|d| d as u64 > now);
            if live && holder.is_some() {
                overlap(con, "reader_saw_writer", format!("writer {holder:?}"))?;
            }
            work(&mut rng);
            let (last, holder, mine, now) = read(con)?;
            let live = mine.is_some_and(|d| d as u64 > now);
            if live && holder.is_some() {
                overlap(con, "reader_saw_writer", format!("writer {holder:?}"))?;
            }
            if live && last != first {
                overlap(
                    con,
                    "written_under_reader",
                    format!("{first:?} then {last:?}"),
                )?;
            } else if !live {
                count(con, RW_COUNTS, "lapsed_readers")?;
            }
            lock.release_read(&token).run(con)?;
        }
    }
}

#[derive(Default)]
struct RwSeen {
    snapshots: u64,
    overlaps: u64,
    max_readers: usize,
    writer_seen: u64,
}

fn check_rw(url: &str, stop: &AtomicBool) -> RwSeen {
    let mut con = connect(url);
    let lock = rw_lock();
    let [writer, readers, ..] = lock.keys();
    let mut seen = RwSeen::default();
    while !stop.load(Ordering::Relaxed) {
        let (time, holder, rs): (Time, Option<String>, Scored) = redis::pipe()
            .atomic()
            .cmd("TIME")
            .cmd("HGET")
            .arg(writer)
            .arg("t")
            .cmd("ZRANGE")
            .arg(readers)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut con)
            .unwrap();
        seen.snapshots += 1;
        let live = live_readers(&rs, time_ms(time), "");
        seen.max_readers = seen.max_readers.max(live);
        if holder.is_some() {
            seen.writer_seen += 1;
            if live > 0 {
                seen.overlaps += 1;
                eprintln!("  rw lock: writer {holder:?} beside {live} live readers");
            }
        }
    }
    seen
}

fn rw_phase(rng: &mut Rng, server: &server::RedisProcess, kills: u64) -> Row {
    let url = server.url(0);
    let mut con = server.connection();
    let n = env("RW_CHILDREN", 6) as usize;
    let gap = env("GAP_MS", 20);
    println!(
        "rw lock: {n} processes (a writer one time in three), lease and place lease {} ms, \
         {kills} SIGKILLs every 0-{} ms",
        lease().as_millis(),
        2 * gap
    );
    let stop = Arc::new(AtomicBool::new(false));
    let checker = {
        let (stop, url) = (stop.clone(), url.clone());
        thread::spawn(move || check_rw(&url, &stop))
    };
    let started = Instant::now();
    let mut brood = Brood::new(&url, "rw", n);
    let lock = rw_lock();
    let [writer_key, readers_key, ..] = lock.keys();
    let mut classes: HashMap<Victim, u64> = HashMap::new();
    kill_loop(
        rng,
        &mut brood,
        &mut con,
        (kills, gap, "rw lock"),
        |con, brood, rng| {
            let tokens = tokens_of(con, "bench:rw:tokens", brood);
            let (time, holder, readers): (Time, Option<String>, Scored) = redis::pipe()
                .atomic()
                .cmd("TIME")
                .cmd("HGET")
                .arg(writer_key)
                .arg("t")
                .cmd("ZRANGE")
                .arg(readers_key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(con)
                .unwrap();
            let now = time_ms(time) as f64;
            let (i, class) = pick(
                rng,
                brood,
                &tokens,
                |t| {
                    let reads = readers.iter().any(|(r, d)| r == t && *d > now);
                    if reads || holder.as_deref() == Some(t) {
                        Victim::Holder
                    } else {
                        Victim::Waiter
                    }
                },
                &[Victim::Holder, Victim::Waiter],
            );
            *classes.entry(class).or_default() += 1;
            i
        },
        |_| {},
    );
    stop.store(true, Ordering::Relaxed);
    let seen = checker.join().unwrap();
    brood.kill_all(&mut con);
    let errs = errors(&mut con);
    let stats = counts(&mut con, RW_COUNTS);
    let lapsed_fences: HashSet<String> = redis::cmd("SMEMBERS")
        .arg("bench:rw:lapsed_fences")
        .query(&mut con)
        .unwrap();
    let details: Vec<String> = redis::cmd("LRANGE")
        .arg(RW_OVERLAPS)
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    // A reader that saw a write by a writer whose own lease had run out: a paused writer,
    // which only fencing stops (part 3), not two holds.
    let mut fencing_cases = 0u64;
    let mut holder_overlaps = 0u64;
    for d in &details {
        let stale = d.starts_with("written_under_reader")
            && d.rsplit("then Some(\"")
                .next()
                .and_then(|s| s.strip_suffix("\")"))
                .is_some_and(|f| lapsed_fences.contains(f));
        if stale {
            fencing_cases += 1;
        } else {
            holder_overlaps += 1;
            if holder_overlaps <= 5 {
                eprintln!("  rw lock: {d}");
            }
        }
    }
    let get = |f: &str| *stats.get(f).unwrap_or(&0);
    println!(
        "rw lock: {} write holds, {} read holds, {} timeouts; {} checker snapshots ({} with a \
         writer, max {} live readers), writer beside live reader {}; holders saw: writer beside \
         reader {}, reader beside writer {}, write during a write hold {}, write during a read \
         hold {}; holds that ran past their lease: {} writers, {} readers ({} writes seen by \
         readers after the writer's lease)",
        get("writes"),
        get("reads"),
        get("timeouts"),
        seen.snapshots,
        seen.writer_seen,
        seen.max_readers,
        seen.overlaps,
        get("writer_saw_reader"),
        get("reader_saw_writer"),
        get("write_write"),
        get("written_under_reader"),
        get("lapsed_writers"),
        get("lapsed_readers"),
        fencing_cases
    );
    if !errs.is_empty() {
        println!("rw lock children failed: {errs:?}");
    }
    println!("rw lock phase: {:.1} s\n", started.elapsed().as_secs_f64());
    Row {
        primitive: "rw_lock".into(),
        faults: format!(
            "{kills} SIGKILL ({} holders)",
            classes.get(&Victim::Holder).unwrap_or(&0)
        ),
        ops: format!("{} writes, {} reads", get("writes"), get("reads")),
        checked: format!(
            "W+W, W+R overlaps ({} snapshots + every hold)",
            seen.snapshots
        ),
        broken: seen.overlaps + holder_overlaps + errs.len() as u64,
        timing: format!(
            "{} holds outlived their lease (stalls)",
            get("lapsed_writers") + get("lapsed_readers")
        ),
    }
}

fn kills(rng: &mut Rng) -> Vec<Row> {
    let total = env("KILLS", 1000);
    let sem = env("SEM_KILLS", total * 4 / 10);
    let fair = env("FAIR_KILLS", total * 3 / 10);
    let rw = env("RW_KILLS", total - total * 4 / 10 - total * 3 / 10);
    let server = server::RedisProcess::start(&[]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    println!("\n# kills: {sem} + {fair} + {rw} SIGKILLs");
    let mut rows = Vec::new();
    if sem > 0 {
        rows.extend(semaphore_phase(rng, &server, sem));
    }
    if fair > 0 {
        rows.push(fair_phase(rng, &server, fair));
    }
    if rw > 0 {
        rows.push(rw_phase(rng, &server, rw));
    }
    rows
}

// ---------------------------------------------------------------------------------------
// 2. Latch and barrier

const LATCH: &str = "bench:latch";
const NEVER: &str = "bench:latch:never";

/// A waiter's records, in `bench:latch:seen:<inst>`: 2g for a generation it waited on
/// (saw not yet open), 2g + 1 for one it saw open.
fn latch_waiter(con: &mut redis::Connection, inst: &str) -> R<()> {
    let latch = Latch::new(LATCH)?;
    let never = Latch::new(NEVER)?;
    let list = format!("bench:latch:seen:{inst}");
    let mut pending: Vec<u64> = Vec::new();
    let (mut rounds, mut false_opens) = (0u64, 0u64);
    let flush = |con: &mut redis::Connection,
                 pending: &mut Vec<u64>,
                 rounds: &mut u64,
                 false_opens: &mut u64|
     -> R<()> {
        let mut pipe = redis::pipe();
        if !pending.is_empty() {
            pipe.cmd("RPUSH").arg(&list).arg(&*pending).ignore();
        }
        pipe.cmd("HINCRBY")
            .arg("bench:latch:counts")
            .arg("never_checks")
            .arg(*rounds)
            .ignore()
            .cmd("HINCRBY")
            .arg("bench:latch:counts")
            .arg("false_opens")
            .arg(*false_opens)
            .ignore();
        pipe.exec(con)?;
        pending.clear();
        *rounds = 0;
        *false_opens = 0;
        Ok(())
    };
    let mut g = 0u64;
    loop {
        // The latch nobody armed, and where this one is.
        let mut batch = Batch::new();
        let never_slot = batch.add(never.try_wait(None));
        let state_slot = batch.add(latch.state());
        let mut replies = batch.run(con)?;
        rounds += 1;
        if let Attempt::Done(x) = never_slot.take(&mut replies)? {
            false_opens += 1;
            redis::cmd("RPUSH")
                .arg(ERRORS)
                .arg(format!(
                    "latch:{inst}: the latch nobody armed answered open ({x})"
                ))
                .exec(con)?;
        }
        let next = match state_slot.take(&mut replies)? {
            LatchState::Open { generation, .. } => {
                if generation < g {
                    false_opens += 1;
                }
                generation + 1
            }
            LatchState::Closed { generation, .. } => {
                // g was answered open: the latch must have moved past it.
                if g > 0 && generation <= g {
                    false_opens += 1;
                    redis::cmd("RPUSH")
                        .arg(ERRORS)
                        .arg(format!(
                            "latch:{inst}: {g} answered open, then the latch is closed at {generation}"
                        ))
                        .exec(con)?;
                }
                generation
            }
            LatchState::NotFound => 1,
        };
        g = next.max(g + 1);
        match latch.try_wait(Some(g)).run(con)? {
            Attempt::Done(x) => {
                if x != g {
                    return Err(format!("asked about {g}, answered {x}").into());
                }
                pending.push(2 * g + 1);
            }
            Attempt::NotYet(_) => {
                pending.push(2 * g);
                flush(con, &mut pending, &mut rounds, &mut false_opens)?;
                match latch.wait_within(con, Some(g), Duration::from_secs(30))? {
                    Some(x) if x == g => pending.push(2 * g + 1),
                    other => {
                        redis::cmd("RPUSH")
                            .arg("bench:latch:missed")
                            .arg(format!("{inst}: waited on {g}, got {other:?}"))
                            .exec(con)?;
                    }
                }
            }
        }
        if pending.len() >= 256 {
            flush(con, &mut pending, &mut rounds, &mut false_opens)?;
        }
    }
}

fn barrier() -> Barrier {
    Barrier::new("bench:barrier", 4).unwrap()
}

fn barrier_party(con: &mut redis::Connection, inst: &str) -> R<()> {
    let lease = ms(env("BARRIER_LEASE_MS", 500));
    let barrier = barrier();
    let list = format!("bench:barrier:out:{inst}");
    loop {
        let out = match barrier.arrive_within(con, lease, WAIT)? {
            Some(Arrival::Released(g)) => format!("r:{g}"),
            Some(Arrival::Broken(g)) => format!("b:{g}"),
            None => "timeout".to_owned(),
        };
        redis::cmd("RPUSH").arg(&list).arg(out).exec(con)?;
    }
}

fn latch_part(rng: &mut Rng) -> Vec<Row> {
    let cycles = env("CYCLES", 100_000);
    let waiters = env("LATCH_WAITERS", 4) as usize;
    let gap = env("LATCH_GAP_MS", 20);
    let server = server::RedisProcess::start(&[]);
    let url = server.url(0);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    println!(
        "\n# latch: {cycles} arm/open cycles, {waiters} waiter processes, one SIGKILLed every \
         0-{} ms",
        2 * gap
    );
    let latch = Latch::new(LATCH).unwrap();
    let never = Latch::new(NEVER).unwrap();
    let mut brood = Brood::new(&url, "latch", waiters);
    let done = Arc::new(AtomicBool::new(false));
    let opener = {
        let (done, url, latch) = (done.clone(), url.clone(), latch.clone());
        thread::spawn(move || {
            let mut con = connect(&url);
            let started = Instant::now();
            for c in 1..=cycles {
                let mut batch = Batch::new();
                let armed = batch.add(latch.arm(1, None));
                let down = batch.add(latch.count_down(None));
                let mut replies = batch.run(&mut con).unwrap();
                assert_eq!(armed.take(&mut replies).unwrap(), Armed::New(c));
                let down = down.take(&mut replies).unwrap().unwrap();
                assert_eq!((down.generation, down.remaining), (c, 0));
                if c % 20_000 == 0 {
                    eprintln!(
                        "  latch: {c} cycles, {:.0} s",
                        started.elapsed().as_secs_f64()
                    );
                }
            }
            done.store(true, Ordering::Relaxed);
            started.elapsed()
        })
    };
    let mut killed: HashSet<u64> = HashSet::new();
    while !done.load(Ordering::Relaxed) {
        thread::sleep(ms(rng.below(2 * gap + 1)));
        if done.load(Ordering::Relaxed) {
            break;
        }
        let i = rng.below(waiters as u64) as usize;
        killed.insert(brood.kill(i, &mut con));
    }
    let took = opener.join().unwrap();
    let kills = killed.len();
    // Every live waiter catches up: it waits on the generation after the last.
    let last = 2 * (cycles + 1);
    let caught = Instant::now();
    for (inst, _) in &brood.children {
        let list = format!("bench:latch:seen:{inst}");
        loop {
            let tail: Option<u64> = redis::cmd("LINDEX")
                .arg(&list)
                .arg(-1)
                .query(&mut con)
                .unwrap();
            if tail == Some(last) {
                break;
            }
            assert!(
                caught.elapsed() < Duration::from_secs(60),
                "waiter {inst} did not catch up: {tail:?}, {:?}",
                errors(&mut con)
            );
            thread::sleep(ms(5));
        }
    }
    for inst in brood.kill_all(&mut con) {
        killed.insert(inst);
    }
    let errs = errors(&mut con);
    // Every record list, checked.
    let (mut waited, mut seen_open, mut missed, mut excused, mut false_opens) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    for inst in 0..brood.next {
        let list: Vec<u64> = redis::cmd("LRANGE")
            .arg(format!("bench:latch:seen:{inst}"))
            .arg(0)
            .arg(-1)
            .query(&mut con)
            .unwrap();
        for (i, &r) in list.iter().enumerate() {
            let g = r / 2;
            if r % 2 == 1 {
                seen_open += 1;
                if g > cycles {
                    false_opens += 1;
                }
                continue;
            }
            waited += 1;
            match list.get(i + 1) {
                Some(&next) if next == r + 1 => {}
                None if killed.contains(&inst) => excused += 1,
                _ => {
                    missed += 1;
                    eprintln!("  latch: waiter {inst} waited on {g} and never saw it open");
                }
            }
        }
    }
    let reported: Vec<String> = redis::cmd("LRANGE")
        .arg("bench:latch:missed")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    let stats = counts(&mut con, "bench:latch:counts");
    false_opens += stats.get("false_opens").copied().unwrap_or(0);
    let never_state = never.state().run(&mut con).unwrap();
    if never_state != LatchState::NotFound {
        false_opens += 1;
    }
    let final_state = latch.state().run(&mut con).unwrap();
    assert_eq!(
        final_state,
        LatchState::Open {
            generation: cycles,
            count: 1
        }
    );
    println!(
        "latch: {cycles} cycles in {:.1} s ({:.0}/s), {kills} waiter kills; {waited} \
         generations waited on (blocked), {seen_open} seen open, missed {} ({} reported by \
         waiters), {excused} cut by a kill; the latch nobody armed asked {} times: false opens \
         {false_opens}",
        took.as_secs_f64(),
        cycles as f64 / took.as_secs_f64(),
        missed + reported.len() as u64,
        reported.len(),
        stats.get("never_checks").unwrap_or(&0)
    );
    if !errs.is_empty() {
        println!("latch waiters failed: {errs:?}");
    }
    let mut rows = vec![Row {
        primitive: "latch".into(),
        faults: format!("{kills} SIGKILL (waiters)"),
        ops: format!("{cycles} cycles, {waited} waits"),
        checked: format!(
            "missed openings; false opens ({} never-armed checks)",
            stats.get("never_checks").unwrap_or(&0)
        ),
        broken: missed + reported.len() as u64 + false_opens + errs.len() as u64,
        timing: format!(
            "{:.1} s for {cycles} cycles ({} missed, {false_opens} false)",
            took.as_secs_f64(),
            missed + reported.len() as u64
        ),
    }];
    rows.push(barrier_trials(&server));
    rows
}

fn barrier_trials(server: &server::RedisProcess) -> Row {
    let trials = env("BARRIER_TRIALS", 50);
    let lease_ms = env("BARRIER_LEASE_MS", 500);
    let url = server.url(0);
    let mut con = server.connection();
    let barrier = barrier();
    println!(
        "barrier: 4 parties, 2 party processes looping, {trials} trials of a third arriving \
         and SIGKILLed once three wait; lease {lease_ms} ms"
    );
    let mut parties = Brood::new(&url, "party", 2);
    let survivors: Vec<u64> = parties.children.iter().map(|(i, _)| *i).collect();
    let mut times = Vec::new();
    let mut not_broken = 0u64;
    let started = Instant::now();
    for _ in 0..trials {
        let (_, mut victim) = parties.spawn_one();
        let waited = Instant::now();
        let generation = loop {
            if let Some(st) = barrier.state().run(&mut con).unwrap()
                && st.waiting == 3
            {
                break st.generation;
            }
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "three parties never waited: {:?}",
                errors(&mut con)
            );
            thread::sleep(ms(1));
        };
        let at = Instant::now();
        victim.kill().unwrap();
        victim.wait().unwrap();
        let want = format!("b:{generation}");
        loop {
            let all = survivors.iter().all(|s| {
                let outs: Vec<String> = redis::cmd("LRANGE")
                    .arg(format!("bench:barrier:out:{s}"))
                    .arg(-5)
                    .arg(-1)
                    .query(&mut con)
                    .unwrap();
                outs.contains(&want)
            });
            if all {
                break;
            }
            assert!(
                at.elapsed() < Duration::from_secs(30),
                "the generation never broke: {:?}",
                errors(&mut con)
            );
            thread::sleep(ms(1));
        }
        times.push(at.elapsed());
        let outcome: Option<f64> = redis::cmd("ZSCORE")
            .arg(barrier.history_key())
            .arg(generation)
            .query(&mut con)
            .unwrap();
        if outcome != Some((2 * generation + 1) as f64) {
            not_broken += 1;
        }
    }
    let errs = errors(&mut con);
    parties.kill_all(&mut con);
    let max = times.iter().max().copied().unwrap_or_default();
    let mut sorted = times.clone();
    sorted.sort();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    let over = times
        .iter()
        .filter(|t| t.as_millis() as u64 > lease_ms + 100)
        .count();
    println!(
        "barrier: {trials} kills in {:.1} s; both others answered broken after the kill in \
         median {} ms, max {} ms (lease {lease_ms} ms; {over} over lease + 100 ms); \
         generations the history does not show broken: {not_broken}\n",
        started.elapsed().as_secs_f64(),
        median.as_millis(),
        max.as_millis()
    );
    if !errs.is_empty() {
        println!("barrier parties failed: {errs:?}");
    }
    Row {
        primitive: "barrier".into(),
        faults: format!("{trials} SIGKILL (parties)"),
        ops: format!("{trials} generations"),
        checked: "broken answered to every other party".into(),
        broken: not_broken + errs.len() as u64,
        timing: format!(
            "kill→broken median {} max {} ms (lease {lease_ms})",
            median.as_millis(),
            max.as_millis()
        ),
    }
}

// ---------------------------------------------------------------------------------------
// 3. Fenced writes

const KINDS: [&str; 3] = ["fenced_lock", "rw_lock", "fair_lock"];

/// A lane's lock of `kind`: take it (its fencing token, and the token to release it
/// with), release it, and the key that exists while it is held.
struct LaneLock {
    fenced: FencedLock,
    rw: RwLock,
    fair: FairLock,
}

impl LaneLock {
    fn new(lane: &str) -> LaneLock {
        LaneLock {
            fenced: FencedLock::new(format!("bench:fl:{lane}")).unwrap(),
            rw: RwLock::new(format!("bench:rwl:{lane}")).unwrap(),
            fair: FairLock::new(format!("bench:fairl:{lane}")).unwrap(),
        }
    }

    fn held_key(&self, kind: &str) -> &str {
        match kind {
            "fenced_lock" => self.fenced.key(),
            "rw_lock" => self.rw.keys()[0],
            _ => self.fair.keys()[0],
        }
    }

    fn take(&self, con: &mut redis::Connection, kind: &str) -> R<(u64, String)> {
        let lease = ms(env("FENCE_LEASE_MS", 20));
        let deadline = Instant::now() + Duration::from_secs(10);
        let token = RwLock::random_token();
        let fence = match kind {
            "fenced_lock" => loop {
                if let Some(f) = self.fenced.acquire(lease).run(con)? {
                    break Some(f);
                }
                if Instant::now() > deadline {
                    break None;
                }
                thread::sleep(Duration::from_micros(200));
            },
            "rw_lock" => self.rw.write_within(con, &token, lease, WAIT)?,
            _ => self.fair.acquire_within(con, &token, lease, WAIT)?,
        };
        let fence = fence.ok_or_else(|| format!("{kind}: never taken"))?;
        Ok((fence, token))
    }

    fn release(&self, con: &mut redis::Connection, kind: &str, fence: u64, token: &str) -> R<()> {
        match kind {
            "fenced_lock" => {
                self.fenced.release(fence).run(con)?;
            }
            "rw_lock" => {
                self.rw.release_write(token).run(con)?;
            }
            _ => {
                self.fair.release(token).run(con)?;
            }
        }
        Ok(())
    }
}

fn lane_keys(lane: &str) -> (FencedResource, String) {
    (
        FencedResource::new(format!("bench:res:{lane}")).unwrap(),
        format!("bench:plain:{lane}"),
    )
}

fn blpop(con: &mut redis::Connection, list: &str) -> R<String> {
    let (_, v): (String, String) = redis::cmd("BLPOP").arg(list).arg(0).query(con)?;
    Ok(v)
}

/// Holder A: takes the lock, reports its token, waits for the go (the bench stops it
/// meanwhile), then writes what it had.
fn fence_a(con: &mut redis::Connection, lane: &str) -> R<()> {
    let lock = LaneLock::new(lane);
    let (resource, plain) = lane_keys(lane);
    loop {
        let cmd = blpop(con, &format!("bench:fence:{lane}:a"))?;
        let (trial, kind) = cmd.split_once(' ').ok_or("bad command")?;
        let (fence, token) = lock.take(con, kind)?;
        redis::cmd("RPUSH")
            .arg(format!("bench:fence:{lane}:ready"))
            .arg(format!("{trial} {fence}"))
            .exec(con)?;
        blpop(con, &format!("bench:fence:{lane}:go"))?;
        let accepted = match resource.set(fence, format!("a:{trial}"), None).run(con) {
            Ok(_) => "accepted",
            Err(err) if fenced_write::stale(&err).is_some() => "refused",
            Err(err) => return Err(err.into()),
        };
        redis::cmd("SET")
            .arg(&plain)
            .arg(format!("a:{trial}"))
            .exec(con)?;
        lock.release(con, kind, fence, &token)?;
        redis::cmd("RPUSH")
            .arg(format!("bench:fence:{lane}:result"))
            .arg(format!("{trial} {accepted}"))
            .exec(con)?;
    }
}

/// Holder B: takes the lock once A's lease is gone, and writes.
fn fence_b(con: &mut redis::Connection, lane: &str) -> R<()> {
    let lock = LaneLock::new(lane);
    let (resource, plain) = lane_keys(lane);
    loop {
        let cmd = blpop(con, &format!("bench:fence:{lane}:b"))?;
        let (trial, kind) = cmd.split_once(' ').ok_or("bad command")?;
        let (fence, token) = lock.take(con, kind)?;
        resource.set(fence, format!("b:{trial}"), None).run(con)?;
        redis::cmd("SET")
            .arg(&plain)
            .arg(format!("b:{trial}"))
            .exec(con)?;
        lock.release(con, kind, fence, &token)?;
        redis::cmd("RPUSH")
            .arg(format!("bench:fence:{lane}:done"))
            .arg(format!("{trial} {fence}"))
            .exec(con)?;
    }
}

/// The state letter of process `pid` (`T` when stopped), from `/proc`.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: a plain kill(2) on a child this process started and has not reaped.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

#[derive(Default)]
struct LaneResult {
    trials: u64,
    accepted: u64,
    overwritten: u64,
    unfenced_landed: u64,
    lease_wait: Duration,
    per_kind: HashMap<&'static str, u64>,
}

fn fenced_lane(url: &str, lane: u64, lanes: u64, trials: u64, pid_a: u32) -> R<LaneResult> {
    let mut con = connect(url);
    let name = lane.to_string();
    let lock = LaneLock::new(&name);
    let (resource, plain) = lane_keys(&name);
    let mut out = LaneResult::default();
    let mut trial = lane;
    while trial < trials {
        let kind = KINDS[(trial / lanes) as usize % KINDS.len()];
        redis::cmd("RPUSH")
            .arg(format!("bench:fence:{name}:a"))
            .arg(format!("{trial} {kind}"))
            .exec(&mut con)?;
        let ready = blpop(&mut con, &format!("bench:fence:{name}:ready"))?;
        let (t, f1) = ready.split_once(' ').ok_or("bad ready")?;
        assert_eq!(t, trial.to_string());
        let f1: u64 = f1.parse()?;
        // A is paused: stopped before it writes.
        signal(pid_a, libc::SIGSTOP);
        let since = Instant::now();
        while proc_state(pid_a) != Some('T') {
            assert!(since.elapsed() < Duration::from_secs(10), "A never stopped");
            thread::sleep(Duration::from_micros(100));
        }
        redis::cmd("RPUSH")
            .arg(format!("bench:fence:{name}:go"))
            .arg(trial)
            .exec(&mut con)?;
        // Its lease runs out on the server.
        let lapse = Instant::now();
        loop {
            let held: bool = redis::cmd("EXISTS")
                .arg(lock.held_key(kind))
                .query(&mut con)?;
            if !held {
                break;
            }
            assert!(
                lapse.elapsed() < Duration::from_secs(10),
                "the lease never ran out"
            );
            thread::sleep(Duration::from_micros(500));
        }
        out.lease_wait += lapse.elapsed();
        // B takes the lock and writes.
        redis::cmd("RPUSH")
            .arg(format!("bench:fence:{name}:b"))
            .arg(format!("{trial} {kind}"))
            .exec(&mut con)?;
        let done = blpop(&mut con, &format!("bench:fence:{name}:done"))?;
        let (_, f2) = done.split_once(' ').ok_or("bad done")?;
        let f2: u64 = f2.parse()?;
        assert!(f2 > f1, "{kind}: B's token {f2} is not above A's {f1}");
        // A wakes up and writes.
        signal(pid_a, libc::SIGCONT);
        let result = blpop(&mut con, &format!("bench:fence:{name}:result"))?;
        let (t, verdict) = result.split_once(' ').ok_or("bad result")?;
        assert_eq!(t, trial.to_string());
        let (value, plain_value): (Option<String>, Option<String>) = redis::pipe()
            .cmd("GET")
            .arg(resource.key())
            .cmd("GET")
            .arg(&plain)
            .query(&mut con)?;
        out.trials += 1;
        *out.per_kind.entry(kind).or_default() += 1;
        if verdict == "accepted" {
            out.accepted += 1;
        }
        if value.as_deref() != Some(format!("b:{trial}").as_str()) {
            out.overwritten += 1;
        }
        if plain_value.as_deref() == Some(format!("a:{trial}").as_str()) {
            out.unfenced_landed += 1;
        }
        trial += lanes;
    }
    Ok(out)
}

fn fenced_part() -> Vec<Row> {
    let trials = env("TRIALS", 10_000);
    let lanes = env("LANES", 8).max(1);
    let lease_ms = env("FENCE_LEASE_MS", 20);
    let server = server::RedisProcess::start(&[]);
    let url = server.url(0);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    println!(
        "\n# fenced writes: {trials} trials on {lanes} lanes, a holder SIGSTOPped past its \
         {lease_ms} ms lease while another takes the lock ({})",
        KINDS.join(", ")
    );
    let mut a = Vec::new();
    let mut b = Vec::new();
    for lane in 0..lanes {
        a.push(spawn(&url, &format!("fence-a:{lane}")));
        b.push(spawn(&url, &format!("fence-b:{lane}")));
    }
    let started = Instant::now();
    let handles: Vec<_> = (0..lanes)
        .map(|lane| {
            let url = url.clone();
            let pid = a[lane as usize].id();
            thread::spawn(move || fenced_lane(&url, lane, lanes, trials, pid))
        })
        .collect();
    let mut total = LaneResult::default();
    let mut failures = Vec::new();
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => {
                total.trials += r.trials;
                total.accepted += r.accepted;
                total.overwritten += r.overwritten;
                total.unfenced_landed += r.unfenced_landed;
                total.lease_wait += r.lease_wait;
                for (k, n) in r.per_kind {
                    *total.per_kind.entry(k).or_default() += n;
                }
            }
            Ok(Err(err)) => failures.push(err.to_string()),
            Err(_) => failures.push("a lane panicked".into()),
        }
    }
    let took = started.elapsed();
    for child in a.iter_mut().chain(b.iter_mut()) {
        // SIGCONT first: a lane that failed may have left its A stopped.
        // SAFETY: a child this process started and has not reaped.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGCONT);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    let errs = errors(&mut con);
    println!(
        "fenced: {} trials in {:.1} s ({:.0}/s; waiting for leases to lapse {:.1} s of lane \
         time), per lock {:?}; stale fenced writes accepted {}, resource overwritten by the \
         stale holder {}; the same client's plain SET landed over the newer value {} times",
        total.trials,
        took.as_secs_f64(),
        total.trials as f64 / took.as_secs_f64(),
        total.lease_wait.as_secs_f64(),
        total.per_kind,
        total.accepted,
        total.overwritten,
        total.unfenced_landed
    );
    if !failures.is_empty() || !errs.is_empty() {
        println!("fenced lanes failed: {failures:?} {errs:?}");
    }
    vec![Row {
        primitive: "fenced_write".into(),
        faults: format!("{} SIGSTOP/SIGCONT", total.trials),
        ops: format!("{} stale writes tried", total.trials),
        checked: format!(
            "stale accepted {}, overwritten {} (plain SET: {} landed)",
            total.accepted, total.overwritten, total.unfenced_landed
        ),
        broken: total.accepted
            + total.overwritten
            + failures.len() as u64
            + errs.len() as u64
            + (trials - total.trials.min(trials)),
        timing: format!(
            "{:.1} s, {:.1} ms per trial per lane",
            took.as_secs_f64(),
            took.as_secs_f64() * 1000.0 * lanes as f64 / total.trials.max(1) as f64
        ),
    }]
}
