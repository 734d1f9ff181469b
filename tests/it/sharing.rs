//! The Rust API and the Python package (`clients/python`) on the same data, on one server
//! and on a cluster: a Python semaphore holder and a Rust waiter; a leaderboard, rate
//! limiters with their default settings, a Bloom filter and a session, each written by
//! one language and read by the other, both ways; a work queue that Python fills and a
//! Rust worker and a Python worker drain together. Each side names the keys from its own
//! templates; every answer from Python carries the keys it named, compared with the Rust
//! API's.
//!
//! The Python side is `clients/python/tests/sharing.py`, a program that answers requests
//! line by line ([`Peer`]), run with a Python that has the package (see
//! [`python_with_package`]).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use redis_patterns::bloom::BloomFilter;
use redis_patterns::leaderboard::{Leaderboard, RankPolicy};
use redis_patterns::rate_limiter::{GcraLimiter, Limiter, RateLimiter};
use redis_patterns::semaphore::{Order, Semaphore};
use redis_patterns::session::{SessionStore, TokenStatus};
use redis_patterns::wait::Attempt;
use redis_patterns::work_queue::{Connect, Stop, WorkQueue};
use serde_json::{Value as Json, json};

use crate::harness;
use crate::python_sharing::{keys_of, skip};

/// The Python that has the package: `REDIS_PATTERNS_PYTHON` if it imports
/// `redis_patterns`, else the venv `.ci/python-client` makes (`REDIS_PATTERNS_PY_VENV`,
/// by default `target/python-client`). With neither, a test is skipped with a message
/// saying how to run it, or fails in CI.
fn python_with_package() -> Option<String> {
    let imports = |python: &str| {
        Command::new(python)
            .args(["-c", "import redis_patterns"])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    let venv = std::env::var("REDIS_PATTERNS_PY_VENV").unwrap_or("target/python-client".into());
    let venv_python = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(venv)
        .join("bin/python");
    let found = std::env::var("REDIS_PATTERNS_PYTHON")
        .ok()
        .into_iter()
        .chain([venv_python.to_string_lossy().into_owned()])
        .find(|python| imports(python));
    if found.is_none() {
        skip(
            "no python with the redis_patterns package: `bash .ci/python-client` installs it \
             into target/python-client (REDIS_PATTERNS_PY_VENV moves it), where these tests \
             find it; or set REDIS_PATTERNS_PYTHON to a python that has it",
        );
    }
    found
}

/// `clients/python/tests/sharing.py`, running: it takes a request (JSON) a line and
/// answers each with a line.
struct Peer {
    child: Child,
    requests: ChildStdin,
    answers: BufReader<ChildStdout>,
}

impl Peer {
    /// The program on `target`: a standalone server's URL, or `cluster:` and a node's.
    fn start(python: &str, target: &str) -> Peer {
        let program = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/clients/python/tests/sharing.py"
        );
        let mut child = Command::new(python)
            .arg(program)
            .arg(target)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run clients/python/tests/sharing.py");
        let requests = child.stdin.take().unwrap();
        let answers = BufReader::new(child.stdout.take().unwrap());
        Peer {
            child,
            requests,
            answers,
        }
    }

    /// Python's answer to `request`.
    fn ask(&mut self, request: Json) -> Json {
        writeln!(self.requests, "{request}").expect("send a request to Python");
        let mut line = String::new();
        self.answers.read_line(&mut line).expect("Python's answer");
        assert!(
            !line.is_empty(),
            "Python ended without answering {request} (its error is above)"
        );
        let answer: Json = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{e}: Python answered {line:?} to {request}"));
        assert!(answer.get("error").is_none(), "{request}: {answer}");
        answer
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a test runs: a connection for Rust, what opens more (for a worker, a second
/// thread), and Python on the same data.
struct Shared {
    con: Box<dyn redis::ConnectionLike + Send>,
    client: Box<dyn Connect + Send>,
    python: Peer,
}

impl Shared {
    fn another(&self) -> Box<dyn redis::ConnectionLike + Send> {
        self.client.connect().expect("connect")
    }
}

fn one_server() -> Option<Shared> {
    let python = python_with_package()?;
    let db = harness::fresh_db();
    Some(Shared {
        con: Box::new(db.con()),
        python: Peer::start(&python, &db.url),
        client: Box::new(db.client),
    })
}

fn a_cluster() -> Option<Shared> {
    let python = python_with_package()?;
    let target = format!("cluster:{}", harness::cluster().urls()[0]);
    Some(Shared {
        con: Box::new(harness::cluster_con()),
        client: Box::new(harness::cluster_client()),
        python: Peer::start(&python, &target),
    })
}

/// A Python client takes the only permit; a Rust client waiting for one (blocking on the
/// bell, first in line) is in line until Python releases, then gets it.
fn python_holds_a_permit_a_rust_waiter_waits_for(shared: &mut Shared, name: &str) {
    let permits = Semaphore::new(name).unwrap();
    permits.set_capacity(1).run(&mut *shared.con).unwrap();
    let held = shared
        .python
        .ask(json!({"do": "semaphore_acquire", "name": name, "n": 1, "lease_ms": 60_000}));
    assert!(held["deadline"].is_u64(), "Python holds the permit: {held}");
    let token = held["token"].as_str().unwrap().to_owned();
    let keys = keys_of(&permits.try_acquire(&token, 1, Duration::from_secs(1), Order::Fifo));
    assert_eq!(held["keys"], json!(keys), "semaphore/acquire's keys");

    let mut waiter_con = shared.another();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            permits
                .acquire_within(
                    &mut *waiter_con,
                    1,
                    Duration::from_secs(60),
                    Order::Fifo,
                    Duration::from_secs(60),
                )
                .unwrap()
        });
        // The waiter has tried and taken a place in line.
        harness::wait_until("the Rust waiter in line", 5, || {
            permits.state().run(&mut *shared.con).unwrap().waiters == 1
        });
        // A request out of line is not granted while the Rust waiter is in line; it gives
        // up at once, and keeps nothing.
        let any_token = Semaphore::random_token();
        let attempt = permits
            .try_acquire(&any_token, 1, Duration::from_secs(1), Order::Any)
            .run(&mut *shared.con)
            .unwrap();
        assert!(matches!(attempt, Attempt::NotYet(_)), "{attempt:?}");
        assert_eq!(
            permits.release(&any_token).run(&mut *shared.con).unwrap(),
            0
        );
        let released = shared
            .python
            .ask(json!({"do": "semaphore_release", "name": name, "token": token}));
        assert_eq!(released["released"], 1, "{released}");
        let holding = waiter.join().unwrap().expect("the waiter got the permit");
        assert_eq!(holding.permits, 1);
        assert_eq!(
            permits
                .release(&holding.token)
                .run(&mut *shared.con)
                .unwrap(),
            1
        );
    });
    let state = permits.state().run(&mut *shared.con).unwrap();
    assert_eq!((state.used, state.holdings, state.waiters), (0, 0, 0));
}

#[test]
fn a_python_holder_and_a_rust_waiter_on_one_server() {
    let Some(mut shared) = one_server() else {
        return;
    };
    python_holds_a_permit_a_rust_waiter_waits_for(&mut shared, "sharing:permits");
}

#[test]
fn a_python_holder_and_a_rust_waiter_on_a_cluster() {
    let Some(mut shared) = a_cluster() else {
        return;
    };
    python_holds_a_permit_a_rust_waiter_waits_for(&mut shared, "sharing:permits");
}

const WEIGHTS: [(&str, f64); 5] = [
    ("ann", 100.0),
    ("bob", 90.5),
    ("carol", 90.5),
    ("dan", 80.0),
    ("eve", -1.25),
];

/// The rows around carol, by dense rank: highest first, ties in reverse byte order.
fn around_carol(board: &Leaderboard, con: &mut dyn redis::ConnectionLike) -> Vec<Json> {
    let rows = board
        .around::<String>("carol", 2, RankPolicy::Dense)
        .run(con)
        .unwrap()
        .expect("carol is on the board");
    rows.into_iter()
        .map(|row| json!([row.item, row.score, row.rank]))
        .collect()
}

/// Rust writes a board that Python reads, and Python one that Rust reads.
fn leaderboards_written_by_one_read_by_the_other(shared: &mut Shared, prefix: &str) {
    let expected = json!([
        ["ann", 100.0, 1],
        ["carol", 90.5, 2],
        ["bob", 90.5, 2],
        ["dan", 80.0, 3]
    ]);
    let weights: serde_json::Map<String, Json> = WEIGHTS
        .iter()
        .map(|(item, w)| (item.to_string(), json!(w)))
        .collect();

    let by_rust = Leaderboard::new(format!("{prefix}:by-rust")).unwrap();
    for (item, weight) in WEIGHTS {
        by_rust
            .set_weight(item, weight)
            .run(&mut *shared.con)
            .unwrap();
    }
    let read = shared.python.ask(json!({
        "do": "leaderboard_around", "key": by_rust.key(), "item": "carol", "n": 2,
        "policy": RankPolicy::Dense.as_str(),
    }));
    let around = by_rust.around::<String>("carol", 2, RankPolicy::Dense);
    assert_eq!(
        read["keys"],
        json!(keys_of(&around)),
        "leaderboard/around's keys"
    );
    assert_eq!(read["rows"], expected, "Python reads Rust's board");

    let by_python = Leaderboard::new(format!("{prefix}:by-python")).unwrap();
    let written = shared.python.ask(json!({
        "do": "leaderboard_set", "key": by_python.key(), "weights": weights,
    }));
    assert_eq!(
        written["keys"],
        json!(keys_of(&by_python.set_weight("x", 1.0)))
    );
    assert_eq!(
        json!(around_carol(&by_python, &mut *shared.con)),
        expected,
        "Rust reads Python's board"
    );
}

#[test]
fn leaderboards_shared_on_one_server() {
    let Some(mut shared) = one_server() else {
        return;
    };
    leaderboards_written_by_one_read_by_the_other(&mut shared, "sharing:board");
}

#[test]
fn leaderboards_shared_on_a_cluster() {
    let Some(mut shared) = a_cluster() else {
        return;
    };
    leaderboards_written_by_one_read_by_the_other(&mut shared, "sharing:board");
}

/// The limiters as `GcraLimiter::new` and `RateLimiter::new` make them, and Python's
/// with the headers' defaults: one bucket and one window, spent by both.
fn rate_limiters_with_default_settings_spent_by_both(shared: &mut Shared, uid: &str) {
    let period = Duration::from_secs(60);
    let api = GcraLimiter::new("sharing-api", 2, period).unwrap();
    let spend = |peer: &mut Peer, cost: u64| {
        peer.ask(json!({
            "do": "gcra", "uid": uid, "action": "sharing-api", "count": 2,
            "period_ms": period.as_millis() as u64, "cost": cost,
        }))
    };
    let python = spend(&mut shared.python, 1);
    assert_eq!(python["keys"], json!([api.key(uid).unwrap()]), "{python}");
    assert_eq!(
        (&python["decision"][0], &python["decision"][1]),
        (&json!(true), &json!(1))
    );
    let rust = api.attempt(uid, 1).run(&mut *shared.con).unwrap();
    assert_eq!((rust.allowed, rust.remaining), (true, 0), "{rust:?}");
    let python = spend(&mut shared.python, 1);
    assert_eq!(
        python["decision"][0],
        json!(false),
        "the bucket is empty: {python}"
    );

    let logins = RateLimiter::new("sharing-login", 3, Duration::from_secs(3600)).unwrap();
    let python = shared.python.ask(json!({
        "do": "fixed_window", "uid": uid, "action": "sharing-login", "maximum": 3,
        "interval_ms": 3_600_000, "cost": 2,
    }));
    assert_eq!(
        python["keys"],
        json!([logins.key(uid).unwrap()]),
        "{python}"
    );
    assert_eq!(logins.remaining(uid).run(&mut *shared.con).unwrap(), 1);
    assert!(logins.is_permitted(uid).run(&mut *shared.con).unwrap());
    let python = shared.python.ask(json!({
        "do": "fixed_window", "uid": uid, "action": "sharing-login", "maximum": 3,
        "interval_ms": 3_600_000, "cost": 1,
    }));
    assert_eq!(
        python["decision"][0],
        json!(false),
        "the window is spent: {python}"
    );
}

#[test]
fn rate_limiters_shared_on_one_server() {
    let Some(mut shared) = one_server() else {
        return;
    };
    rate_limiters_with_default_settings_spent_by_both(&mut shared, "peter");
}

#[test]
fn rate_limiters_shared_on_a_cluster() {
    let Some(mut shared) = a_cluster() else {
        return;
    };
    rate_limiters_with_default_settings_spent_by_both(&mut shared, "sharing:peter");
}

/// Rust adds items that Python finds, and Python items that Rust finds.
fn a_bloom_filter_filled_by_both(shared: &mut Shared, name: &str) {
    let seen = BloomFilter::new(name, 1000, 100).unwrap();
    let filter = |items: &[&str], what: &str| json!({"do": what, "filter": name, "capacity": 1000, "one_in": 100, "items": items});
    assert_eq!(
        seen.add(&["a", "b"]).run(&mut *shared.con).unwrap(),
        [true, true]
    );
    let found = shared.python.ask(filter(&["a", "b", "c"], "bloom_check"));
    let (params, bits) = seen.keys(0).unwrap();
    assert_eq!(found["keys"], json!([params, bits]), "bloom/check's keys");
    assert_eq!(
        found["found"],
        json!([1, 1, 0]),
        "Python finds Rust's items"
    );
    let added = shared.python.ask(filter(&["c", "d"], "bloom_add"));
    assert_eq!(added["new"], json!([1, 1]));
    assert_eq!(
        seen.contains(&["c", "d", "e"])
            .run(&mut *shared.con)
            .unwrap(),
        [true, true, false],
        "Rust finds Python's items"
    );
    assert_eq!(seen.count(&mut *shared.con).unwrap(), 4);
}

#[test]
fn a_bloom_filter_shared_on_one_server() {
    let Some(mut shared) = one_server() else {
        return;
    };
    a_bloom_filter_filled_by_both(&mut shared, "sharing:seen");
}

#[test]
fn a_bloom_filter_shared_on_a_cluster() {
    let Some(mut shared) = a_cluster() else {
        return;
    };
    a_bloom_filter_filled_by_both(&mut shared, "sharing:seen");
}

/// A session Rust creates and fills, that Python validates and reads; and one Python
/// creates and fills, that Rust loads.
fn sessions_opened_by_one_used_by_the_other(shared: &mut Shared, namespace: &str) {
    let store = SessionStore::new(namespace).unwrap();
    let con = &mut *shared.con;
    let opened = store.create("ann").run(con).unwrap();
    let token = opened.token.as_str();
    assert_eq!(
        store
            .set("ann", token, &[("theme", "dark")])
            .run(con)
            .unwrap(),
        TokenStatus::Correct
    );
    let read = shared.python.ask(json!({
        "do": "session_read", "namespace": namespace, "uid": "ann", "token": token,
    }));
    assert_eq!(
        read["keys"],
        json!(store.keys("ann").unwrap()),
        "session's keys"
    );
    assert_eq!(read["status"], TokenStatus::Correct.as_str());
    assert_eq!(
        read["data"],
        json!({"theme": "dark"}),
        "Python reads Rust's data"
    );

    let opened = shared.python.ask(json!({
        "do": "session_create", "namespace": namespace, "uid": "bob",
    }));
    let token = opened["token"].as_str().unwrap();
    let set = shared.python.ask(json!({
        "do": "session_set", "namespace": namespace, "uid": "bob", "token": token,
        "fields": {"lang": "zh", "theme": "light"},
    }));
    assert_eq!(set["status"], TokenStatus::Correct.as_str());
    let data = store
        .load("bob", token)
        .run(con)
        .unwrap()
        .expect("Rust finds Python's session");
    assert_eq!(data.get::<String>("lang").unwrap().as_deref(), Some("zh"));
    assert_eq!(
        data.get::<String>("theme").unwrap().as_deref(),
        Some("light")
    );
    assert_eq!(
        store.validate("bob", "not-the-token").run(con).unwrap(),
        TokenStatus::Incorrect
    );
}

#[test]
fn sessions_shared_on_one_server() {
    let Some(mut shared) = one_server() else {
        return;
    };
    sessions_opened_by_one_used_by_the_other(&mut shared, "sharing");
}

#[test]
fn sessions_shared_on_a_cluster() {
    let Some(mut shared) = a_cluster() else {
        return;
    };
    sessions_opened_by_one_used_by_the_other(&mut shared, "sharing");
}

/// Python adds jobs; a Rust worker and a Python worker take them, each holding its first
/// job until the other holds one too, so that both work; every job is done once, by one
/// of them, and acked.
fn a_work_queue_drained_by_both(shared: &mut Shared, name: &str) {
    let queue = WorkQueue::new(name).unwrap();
    let jobs: serde_json::Map<String, Json> = (0..30)
        .map(|i| (format!("job-{i:02}"), json!(format!("email {i}"))))
        .collect();
    let added = shared
        .python
        .ask(json!({"do": "work_queue_add", "name": name, "jobs": jobs}));
    assert_eq!(
        added["keys"],
        json!(keys_of(&queue.add("x", "x"))),
        "work_queue/add's keys"
    );
    assert_eq!(added["added"], json!(vec![true; 30]));
    // Each worker counts itself in here at its first job, then holds that job until both
    // have: a count, unlike the jobs leased at one instant, cannot be missed by a worker
    // that looks too late.
    let first = format!("{{{name}}}:first jobs");
    shared
        .python
        .ask(json!({"do": "work_queue_work", "name": name, "together": 2, "first": first}));

    let stop = Stop::new();
    let by_rust = std::sync::Mutex::new(Vec::new());
    let (client, mut con) = (&*shared.client, shared.another());
    let report = std::thread::scope(|s| {
        // The worker stops however this scope ends: a wait that fails fails the test
        // instead of leaving the scope joined on a worker that never stops.
        let _stop = StopOnDrop(&stop);
        let working = s.spawn(|| {
            queue
                .worker()
                .poll(Duration::from_millis(50))
                .run(client, &stop, |job| {
                    if by_rust.lock().unwrap().is_empty() {
                        let _: u64 = redis::cmd("INCR").arg(&first).query(&mut *con).unwrap();
                        harness::wait_until("both workers holding a job", 5, || {
                            let started: u64 =
                                redis::cmd("GET").arg(&first).query(&mut *con).unwrap();
                            started >= 2
                        });
                    }
                    let payload: String = job.payload_as().unwrap();
                    assert_eq!(jobs[&job.id], json!(payload), "{}'s payload", job.id);
                    by_rust.lock().unwrap().push(job.id.clone());
                    Ok::<_, String>(())
                })
                .unwrap()
        });
        harness::wait_until("the queue drained", 5, || {
            let counts = queue.counts().run(&mut *shared.con).unwrap();
            (counts.waiting, counts.delayed, counts.leased) == (0, 0, 0)
        });
        stop.stop();
        working.join().unwrap()
    });
    let by_python = shared
        .python
        .ask(json!({"do": "work_queue_stop", "name": name}));
    let by_rust = by_rust.into_inner().unwrap();
    let from_python: Vec<String> = serde_json::from_value(by_python["handled"].clone()).unwrap();
    assert!(
        !by_rust.is_empty() && !from_python.is_empty(),
        "both worked"
    );
    assert_eq!(report.acked as usize, by_rust.len(), "{report:?}");
    assert_eq!(by_python["acked"], json!(from_python.len()), "{by_python}");
    let mut every: Vec<&String> = by_rust.iter().chain(&from_python).collect();
    every.sort();
    let expected: Vec<&String> = jobs.keys().collect();
    assert_eq!(every, expected, "each job done once");
    let counts = queue.counts().run(&mut *shared.con).unwrap();
    assert_eq!((counts.parked, counts.dead), (0, 0), "{counts:?}");
}

/// Raises its [`Stop`] when dropped.
struct StopOnDrop<'s>(&'s Stop);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[test]
fn a_work_queue_shared_on_one_server() {
    let Some(mut shared) = one_server() else {
        return;
    };
    a_work_queue_drained_by_both(&mut shared, "sharing:emails");
}

#[test]
fn a_work_queue_shared_on_a_cluster() {
    let Some(mut shared) = a_cluster() else {
        return;
    };
    a_work_queue_drained_by_both(&mut shared, "sharing:emails");
}
