//! The work queue under the faults a deployment meets: a promoted replica that lagged,
//! a renewals connection the server or a proxy closed, a worker waiting on an idle queue.
//! Each test runs its own servers: it reconfigures them, kills their clients or fails
//! them over.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::work_queue::{Job, MAX_TAKE, Stop, WorkQueue, WorkReport};

use crate::harness;
use crate::server::{RedisCluster, RedisProcess};

/// A primary and its replica, started in sync.
fn primary_and_replica() -> (RedisProcess, RedisProcess) {
    let primary = RedisProcess::start(&[]);
    let port = primary.port().to_string();
    let replica = RedisProcess::start(&["--replicaof", "127.0.0.1", &port]);
    let mut con = replica.connection();
    harness::wait_until("the replica to be in sync", 10, || {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut con)
            .unwrap();
        info.contains("master_link_status:up")
    });
    (primary, replica)
}

/// Waits until `replica` has applied everything `primary` wrote so far.
fn wait_for_replica(primary: &mut redis::Connection) {
    let acked: u64 = redis::cmd("WAIT").arg(1).arg(0).query(primary).unwrap();
    assert_eq!(acked, 1);
}

/// A failover to a replica that missed the old primary's last writes: the new primary
/// hands out jobs again, and no delivery gets the (job, token) pair of one the old
/// primary handed out, so a stale worker can neither ack, extend nor nack it.
#[test]
fn a_promoted_lagging_replica_reissues_no_token() {
    let (primary, replica) = primary_and_replica();
    let (mut old, mut new) = (primary.connection(), replica.connection());
    let queue = WorkQueue::new("faults:failover").unwrap();
    for n in 0..100 {
        queue
            .add(&format!("job-{n}"), "payload")
            .run(&mut old)
            .unwrap();
    }
    // A few deliveries the replica sees, then the replica is cut off and promoted: the
    // deliveries after that exist on the old primary only, as with a replica that lagged.
    let mut delivered = Vec::new();
    for _ in 0..2 {
        delivered.extend(queue.take(5).run(&mut old).unwrap());
    }
    wait_for_replica(&mut old);
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .exec(&mut new)
        .unwrap();
    // Every job left, a take of MAX_TAKE at a time.
    let take_all = |con: &mut redis::Connection| {
        let mut taken = Vec::new();
        loop {
            let jobs = queue.take(MAX_TAKE).run(con).unwrap();
            if jobs.is_empty() {
                return taken;
            }
            taken.extend(jobs);
        }
    };
    let lost_on_failover = take_all(&mut old);
    // The new primary hands the jobs it still sees waiting to new workers.
    let reissued = take_all(&mut new);
    let before: HashSet<_> = delivered
        .iter()
        .chain(&lost_on_failover)
        .map(|job| (job.id.clone(), job.token.to_string()))
        .collect();
    let again: Vec<_> = reissued
        .iter()
        .filter(|job| before.contains(&(job.id.clone(), job.token.to_string())))
        .map(|job| format!("{} token {}", job.id, job.token))
        .collect();
    assert_eq!(reissued.len(), 90, "deliveries on the new primary");
    assert_eq!(
        again,
        Vec::<String>::new(),
        "{} of {} reissued",
        again.len(),
        reissued.len()
    );
    // A stale worker's ack changes nothing on the new primary.
    for job in &lost_on_failover {
        let acked = queue.ack(job).run(&mut new);
        assert!(acked.is_err(), "{} acked by a stale token", job.id);
    }
}

/// The lease of the loop tests: renewed every 500 ms, so a renewal thread kept from
/// running for up to a second on a loaded machine still renews in time.
const LEASE: Duration = Duration::from_millis(1500);

/// What the handlers of two workers saw, and the test's hold on its long jobs: a long
/// job runs until the test releases it.
#[derive(Default)]
struct Seen {
    started: Mutex<HashMap<String, u32>>,
    released: Mutex<HashSet<String>>,
}

impl Seen {
    fn handle(&self, job: &Job) -> Result<(), String> {
        *self
            .started
            .lock()
            .unwrap()
            .entry(job.id.clone())
            .or_default() += 1;
        if job.id.starts_with("long") {
            harness::wait_until("the test to release a long job", 5, || {
                self.released.lock().unwrap().contains(&job.id)
            });
        }
        Ok(())
    }

    fn has_started(&self, id: &str) -> bool {
        self.started.lock().unwrap().contains_key(id)
    }

    fn release(&self, id: &str) {
        self.released.lock().unwrap().insert(id.to_owned());
    }

    /// Jobs that started more than once.
    fn twice(&self) -> Vec<String> {
        let started = self.started.lock().unwrap();
        let mut twice: Vec<String> = started
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(id, n)| format!("{id} ×{n}"))
            .collect();
        twice.sort();
        twice
    }
}

/// A queue whose jobs go to the dead-letter queue when their only lease runs out, so that
/// a lease the renewals failed to keep shows as a dead successful job.
fn strict_queue(name: &str) -> WorkQueue {
    WorkQueue::new(name)
        .unwrap()
        .with_lease(LEASE)
        .unwrap()
        .with_max_deliveries(1)
        .unwrap()
}

/// The lease deadline of a held job, read on the server.
fn deadline(con: &mut redis::Connection, queue: &WorkQueue, id: &str) -> u64 {
    redis::cmd("ZSCORE")
        .arg(queue.keys()[2])
        .arg(id)
        .query::<Option<u64>>(con)
        .unwrap()
        .unwrap_or_else(|| panic!("{id} is not held"))
}

/// Waits until long job `id` runs and its lease has been renewed once (its worker has a
/// renewals connection); answers its deadline then.
fn renewed_once(con: &mut redis::Connection, queue: &WorkQueue, seen: &Seen, id: &str) -> u64 {
    harness::wait_until("a long job to start", 5, || seen.has_started(id));
    let first = deadline(con, queue, id);
    harness::wait_until("a renewal", 5, || deadline(con, queue, id) > first);
    deadline(con, queue, id)
}

/// Waits until long job `id` has been held a whole lease past `since` (a deadline it
/// had), by renewals alone, then lets it end.
fn outlive_a_lease(
    con: &mut redis::Connection,
    queue: &WorkQueue,
    seen: &Seen,
    id: &str,
    since: u64,
) {
    let past = since + LEASE.as_millis() as u64;
    harness::wait_until("renewals past a whole lease", 5, || {
        deadline(con, queue, id) >= past
    });
    seen.release(id);
}

/// Runs two sync workers on `client` while `drive` adds jobs and breaks things; then
/// stops them once the queue is empty and returns their reports.
fn two_workers(
    client: &redis::Client,
    queue: &WorkQueue,
    seen: &Seen,
    drive: impl FnOnce(),
) -> [WorkReport; 2] {
    let stop = Stop::new();
    thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let stop = &stop;
                scope.spawn(move || {
                    queue
                        .worker()
                        .poll(Duration::from_millis(50))
                        .run(client, stop, |job| seen.handle(job))
                        .unwrap()
                })
            })
            .collect();
        drive();
        let mut con = client.get_connection().unwrap();
        harness::wait_until("the queue to drain", 10, || {
            let c = queue.counts().run(&mut con).unwrap();
            c.waiting + c.delayed + c.leased + c.parked == 0
        });
        stop.stop();
        let reports: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        [reports[0], reports[1]]
    })
}

/// The clients of `con`'s server, but `con` itself.
fn other_clients(con: &mut redis::Connection) -> usize {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
    list.lines().count() - 1
}

/// The server closes the workers' renewals connections after they sat idle (its
/// `timeout` setting): the next renewals open new ones, so the long jobs after the idle
/// spell keep their leases past a whole lease. Before, the renewal thread dropped its
/// job at the first failure: the lease ran out, the other worker could run the job a
/// second time while it still ran, and the job, which succeeded, went to the
/// dead-letter queue.
#[test]
fn renewals_survive_the_servers_idle_timeout() {
    let server = RedisProcess::start(&["--timeout", "1"]);
    let client = redis::Client::open(server.url(0)).unwrap();
    let mut con = server.connection();
    let queue = strict_queue("faults:idle");
    let seen = Seen::default();
    let reports = two_workers(&client, &queue, &seen, || {
        // A long job on each worker opens its renewals connection...
        for id in ["long-1a", "long-1b"] {
            queue.add(id, "x").run(&mut con).unwrap();
        }
        for id in ["long-1a", "long-1b"] {
            renewed_once(&mut con, &queue, &seen, id);
            seen.release(id);
        }
        harness::wait_until("the first jobs to end", 5, || {
            queue.counts().run(&mut con).unwrap().leased == 0
        });
        // ...which sits idle until the server closes it.
        let with_renewals = other_clients(&mut con);
        harness::wait_until("the server to close both renewals connections", 50, || {
            other_clients(&mut con) <= with_renewals - 2
        });
        for id in ["long-2a", "long-2b"] {
            queue.add(id, "x").run(&mut con).unwrap();
        }
        for id in ["long-2a", "long-2b"] {
            harness::wait_until("a long job to start", 5, || seen.has_started(id));
            let first = deadline(&mut con, &queue, id);
            outlive_a_lease(&mut con, &queue, &seen, id, first);
        }
    });
    assert_eq!(seen.twice(), Vec::<String>::new(), "jobs that ran twice");
    let acked: u64 = reports.iter().map(|r| r.acked).sum();
    let dead = queue.counts().run(&mut con).unwrap().dead;
    assert_eq!((acked, dead), (4, 0), "{reports:?}");
    let renewals_failed: u64 = reports.iter().map(|r| r.renewals_failed).sum();
    assert!(
        renewals_failed >= 2,
        "renewals that met a closed connection: {reports:?}"
    );
}

/// `CLIENT KILL` of every worker connection while long jobs run (a proxy restart, an
/// operator): both loops open new connections, each job is held past a whole lease by
/// renewals sent after the kill, and each runs once and is acked.
#[test]
fn workers_survive_killed_connections() {
    let server = RedisProcess::start(&[]);
    let client = redis::Client::open(server.url(0)).unwrap();
    let mut con = server.connection();
    let queue = strict_queue("faults:killed");
    let seen = Seen::default();
    const JOBS: u64 = 4;
    let reports = two_workers(&client, &queue, &seen, || {
        for n in 0..JOBS {
            queue.add(&format!("long-{n}"), "x").run(&mut con).unwrap();
        }
        for n in 0..JOBS {
            let id = format!("long-{n}");
            let renewed = renewed_once(&mut con, &queue, &seen, &id);
            let _: u64 = redis::cmd("CLIENT")
                .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
                .query(&mut con)
                .unwrap();
            outlive_a_lease(&mut con, &queue, &seen, &id, renewed);
        }
    });
    assert_eq!(seen.twice(), Vec::<String>::new(), "jobs that ran twice");
    let acked: u64 = reports.iter().map(|r| r.acked).sum();
    let dead = queue.counts().run(&mut con).unwrap().dead;
    assert_eq!((acked, dead), (JOBS, 0), "{reports:?}");
    let reconnects: u64 = reports.iter().map(|r| r.reconnects).sum();
    assert!(reconnects >= JOBS, "{reports:?}");
}

/// A job added to an idle queue wakes a waiting worker: with the fallback poll an hour
/// long, only the wake-up can start it. Three jobs added at once wake three workers,
/// which run them side by side.
#[test]
fn an_added_job_wakes_an_idle_worker() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let queue = WorkQueue::new("faults:wake").unwrap();
    let stop = Stop::new();
    let running = AtomicU64::new(0);
    let started = AtomicU64::new(0);
    let waited = Mutex::new(Vec::new());
    let hour = Duration::from_secs(3600);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (db, queue, stop, running, started) = (&db, &queue, &stop, &running, &started);
                scope.spawn(move || {
                    queue
                        .worker()
                        .poll(hour)
                        .run(&db.client, stop, |_job| {
                            started.fetch_add(1, Ordering::SeqCst);
                            running.fetch_add(1, Ordering::SeqCst);
                            // The three ran at once only if three workers were woken.
                            harness::wait_until("three jobs running at once", 1, || {
                                running.load(Ordering::SeqCst) >= 3
                            });
                            Ok::<(), String>(())
                        })
                        .unwrap()
                })
            })
            .collect();
        let blocked = || harness::blocked_in(&mut db.con(), "bzpopmin");
        harness::wait_until("three idle workers", 5, || blocked() == 3);
        let added = std::time::Instant::now();
        queue.add("one", "x").run(&mut con).unwrap();
        harness::wait_until("the first job to start", 1, || {
            started.load(Ordering::SeqCst) >= 1
        });
        waited.lock().unwrap().push(added.elapsed());
        queue.add("two", "x").run(&mut con).unwrap();
        queue.add("three", "x").run(&mut con).unwrap();
        harness::wait_until("all three to start", 1, || {
            started.load(Ordering::SeqCst) == 3
        });
        stop.stop();
        // The workers wait an hour for the next job: wake them to see the flag.
        // A member each: a second add of one member while the first is not yet popped
        // would change nothing and leave a worker waiting out its poll.
        for n in 0..3 {
            redis::cmd("ZADD")
                .arg(queue.keys()[9])
                .arg(0)
                .arg(format!("stop-{n}"))
                .exec(&mut con)
                .unwrap();
            harness::wait_until("a worker to wake", 1, || {
                blocked() < 3 || workers.iter().all(|w| w.is_finished())
            });
        }
        for worker in workers {
            assert_eq!(worker.join().unwrap().acked, 1);
        }
    });
    println!(
        "an idle worker started a job {:?} after it was added",
        waited.lock().unwrap()[0]
    );
}

/// Opens a connection to whichever of `servers` is the primary now, as a client that asks
/// Sentinel, or a DNS name a managed Redis moves, would: none is a connection refused,
/// which the worker loop retries after a pause.
struct ThePrimary(Vec<redis::Client>);

impl redis_patterns::work_queue::Connect for ThePrimary {
    fn connect(&self) -> redis::RedisResult<Box<dyn redis::ConnectionLike + Send>> {
        for client in &self.0 {
            let Ok(mut con) = client.get_connection() else {
                continue;
            };
            let role: redis::RedisResult<Vec<redis::Value>> = redis::cmd("ROLE").query(&mut con);
            if let Ok(role) = role
                && role.first() == Some(&redis::Value::BulkString(b"master".to_vec()))
            {
                return Ok(Box::new(con));
            }
        }
        Err(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "no primary now").into())
    }
}

/// The clients of `con`'s database blocked in `BZPOPMIN`.
fn blocked_workers(con: &mut redis::Connection) -> usize {
    harness::blocked_in(con, "bzpopmin")
}

/// A managed failover as it reaches a worker: while jobs are added (each waiting for the
/// replica) and three workers run them or block in `BZPOPMIN`, the primary is demoted
/// with `REPLICAOF` (the blocked workers get `UNBLOCKED`, the others `READONLY`), and then
/// the replica is promoted. Every worker goes on on the new primary, and every job whose
/// add the replica acknowledged runs.
#[test]
fn workers_go_on_through_a_demotion_and_a_promotion() {
    use redis_patterns::work_queue::Connect;

    let (primary, replica) = primary_and_replica();
    let servers = ThePrimary(vec![
        redis::Client::open(primary.url(0)).unwrap(),
        redis::Client::open(replica.url(0)).unwrap(),
    ]);
    let queue = WorkQueue::new("faults:demoted").unwrap();
    let stop = Stop::new();
    let ran = Mutex::new(HashMap::<String, u32>::new());
    let gates = AtomicU64::new(0);
    let durable = Mutex::new(Vec::new());
    // Adds, each waiting for the replica, on whichever server is the primary.
    let add = |id: &str| {
        use redis_patterns::Durability;
        loop {
            let Ok(mut con) = servers.connect() else {
                thread::sleep(Duration::from_millis(10));
                continue;
            };
            let wait = Durability::replicas(1).timeout(Duration::from_millis(200));
            match queue.add(id, "x").wait_for(wait).run(&mut *con) {
                Ok(added) => {
                    if added.is_met() {
                        durable.lock().unwrap().push(id.to_owned());
                    }
                    return;
                }
                Err(_) => thread::sleep(Duration::from_millis(10)),
            }
        }
    };
    let reports = thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (servers, queue, stop, ran, gates) = (&servers, &queue, &stop, &ran, &gates);
                scope.spawn(move || {
                    queue
                        .worker()
                        .poll(Duration::from_secs(1))
                        .run(servers, stop, |job| {
                            *ran.lock().unwrap().entry(job.id.clone()).or_default() += 1;
                            if job.id.starts_with("gate") {
                                // Three gates run at once only on three workers.
                                gates.fetch_add(1, Ordering::SeqCst);
                                harness::wait_until("three gates at once", 1, || {
                                    gates.load(Ordering::SeqCst) >= 3
                                });
                            }
                            Ok::<(), String>(())
                        })
                        .unwrap()
                })
            })
            .collect();
        let mut old = primary.connection();
        for n in 0..30 {
            add(&format!("before-{n}"));
        }
        harness::wait_until("a worker blocked in BZPOPMIN", 5, || {
            blocked_workers(&mut old) >= 1
        });
        // Under load: a producer goes on adding while the primary is demoted.
        let add = &add;
        let producer = scope.spawn(move || {
            for n in 0..40 {
                add(&format!("during-{n}"));
            }
        });
        redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(replica.port())
            .exec(&mut old)
            .unwrap();
        harness::wait_until("no worker blocked on the demoted server", 5, || {
            blocked_workers(&mut old) == 0
        });
        redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .exec(&mut replica.connection())
            .unwrap();
        producer.join().unwrap();
        for n in 0..3 {
            add(&format!("gate-{n}"));
        }
        let mut new = replica.connection();
        harness::wait_until("every job to run", 20, || {
            let c = queue.counts().run(&mut new).unwrap();
            c.waiting + c.leased + c.delayed == 0 && gates.load(Ordering::SeqCst) >= 3
        });
        stop.stop();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    let ran = ran.into_inner().unwrap();
    let lost: Vec<_> = durable
        .into_inner()
        .unwrap()
        .into_iter()
        .filter(|id| !ran.contains_key(id))
        .collect();
    assert_eq!(lost, Vec::<String>::new(), "durable adds that never ran");
    for report in &reports {
        assert!(
            report.server_retries + report.reconnects >= 1,
            "a worker met no fault: {reports:?}"
        );
    }
    println!("{reports:?}");
}

/// A server restarted with a large data set answers `LOADING` for a while: the workers
/// wait (counting the errors) and go on with the jobs it loaded and the jobs added after.
#[test]
fn workers_wait_while_a_restarted_server_loads() {
    // 100 µs per key loaded: 20,000 keys keep the server loading for about 2 s.
    // It answers LOADING only between chunks of the file it reads: 1 KB each here.
    let mut server = RedisProcess::start(&[
        "--key-load-delay",
        "100",
        "--loading-process-events-interval-bytes",
        "1024",
    ]);
    let client = redis::Client::open(server.url(0)).unwrap();
    let queue = WorkQueue::new("faults:loading").unwrap();
    let stop = Stop::new();
    let ran = Mutex::new(HashMap::<String, u32>::new());
    let reports = thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (client, queue, stop, ran) = (&client, &queue, &stop, &ran);
                scope.spawn(move || {
                    queue
                        .worker()
                        .poll(Duration::from_millis(50))
                        .run(client, stop, |job| {
                            *ran.lock().unwrap().entry(job.id.clone()).or_default() += 1;
                            Ok::<(), String>(())
                        })
                        .unwrap()
                })
            })
            .collect();
        let mut con = server.connection();
        let mut fill = redis::pipe();
        for chunk in 0..20 {
            let mut mset = redis::cmd("MSET");
            for n in 0..1000 {
                mset.arg(format!("filler:{chunk}:{n}")).arg("x");
            }
            fill.add_command(mset).ignore();
        }
        fill.exec(&mut con).unwrap();
        // Paused, so that the saved jobs are still waiting when the server restarts.
        queue.pause().run(&mut con).unwrap();
        for n in 0..20 {
            queue.add(&format!("saved-{n}"), "x").run(&mut con).unwrap();
        }
        redis::cmd("SAVE").exec(&mut con).unwrap();
        // Kills and starts it again; it answers once it has loaded the file.
        server.restart();
        let mut con = server.connection();
        assert!(queue.resume().run(&mut con).unwrap(), "the pause was saved");
        for n in 0..20 {
            queue.add(&format!("after-{n}"), "x").run(&mut con).unwrap();
        }
        harness::wait_until("every job to run", 20, || {
            let c = queue.counts().run(&mut con).unwrap();
            let ran = ran.lock().unwrap();
            c.waiting + c.leased == 0 && (0..20).all(|n| ran.contains_key(&format!("after-{n}")))
        });
        stop.stop();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .collect::<Vec<_>>()
    });
    let ran = ran.into_inner().unwrap();
    for n in 0..20 {
        assert!(
            ran.contains_key(&format!("saved-{n}")),
            "saved-{n} never ran"
        );
    }
    let retries: u64 = reports.iter().map(|r| r.server_retries).sum();
    let reconnects: u64 = reports.iter().map(|r| r.reconnects).sum();
    assert!(retries >= 1, "no worker met LOADING: {reports:?}");
    assert!(reconnects >= 2, "{reports:?}");
}

/// An async handler that blocks its thread (no `spawn_blocking`) on a `current_thread`
/// runtime for longer than a whole lease: with `renew_from` the renewals run on a thread
/// of their own, so its lease holds, and a second worker never runs its job again.
#[test]
fn a_blocking_async_handler_keeps_its_lease() {
    let server = RedisProcess::start(&[]);
    let client = redis::Client::open(server.url(0)).unwrap();
    let queue = strict_queue("faults:blocking");
    let seen = Seen::default();
    let stop = Stop::new();
    let mut con = server.connection();
    queue.add("long-1", "x").run(&mut con).unwrap();
    let report = thread::scope(|scope| {
        let (client, queue, stop, seen) = (&client, &queue, &stop, &seen);
        let async_worker = scope.spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut con = client.get_multiplexed_async_connection().await.unwrap();
                queue
                    .worker()
                    .poll(Duration::from_millis(50))
                    .renew_from(client.clone())
                    .run_async(&mut con, stop, |job: Job| async move {
                        // Blocks the runtime's only thread until the test releases it.
                        seen.handle(&job)
                    })
                    .await
                    .unwrap()
            })
        });
        harness::wait_until("the async worker to start the job", 5, || {
            seen.has_started("long-1")
        });
        let other = scope.spawn(move || {
            queue
                .worker()
                .poll(Duration::from_millis(50))
                .run(client, stop, |job| seen.handle(job))
                .unwrap()
        });
        let renewed = renewed_once(&mut con, queue, seen, "long-1");
        outlive_a_lease(&mut con, queue, seen, "long-1", renewed);
        harness::wait_until("the job to end", 5, || {
            queue.counts().run(&mut con).unwrap().leased == 0
        });
        stop.stop();
        let report = async_worker.join().unwrap();
        other.join().unwrap();
        report
    });
    assert_eq!(seen.twice(), Vec::<String>::new(), "jobs that ran twice");
    assert_eq!(report.acked, 1, "{report:?}");
    assert_eq!(queue.counts().run(&mut con).unwrap().dead, 0);
}

/// A server whose `maxmemory-policy` evicts any key: a worker set to refuse it does not
/// start, with a typed error; one set to warn runs and says so in its report; where
/// `CONFIG GET` is refused, the report says the policy is unknown.
#[test]
fn an_evicting_server_is_refused_or_reported() {
    use redis_patterns::work_queue::{MemoryPolicy, OnEviction};

    let server = RedisProcess::start(&["--maxmemory-policy", "allkeys-lru"]);
    let client = redis::Client::open(server.url(0)).unwrap();
    let queue = WorkQueue::new("faults:evicting").unwrap();
    let stop = Stop::new();
    stop.stop();
    let refused = queue
        .worker()
        .on_eviction(OnEviction::Refuse)
        .run(&client, &stop, |_| Ok::<(), String>(()));
    match refused {
        Err(redis_patterns::Error::EvictingServer { policy }) => assert_eq!(policy, "allkeys-lru"),
        other => panic!("expected EvictingServer, got {other:?}"),
    }
    let warned = queue
        .worker()
        .run(&client, &stop, |_| Ok::<(), String>(()))
        .unwrap();
    assert_eq!(warned.memory_policy, MemoryPolicy::AllKeys);
    let ignored = queue
        .worker()
        .on_eviction(OnEviction::Ignore)
        .run(&client, &stop, |_| Ok::<(), String>(()))
        .unwrap();
    assert_eq!(ignored.memory_policy, MemoryPolicy::NotChecked);

    // A user without CONFIG, as on a managed Redis.
    harness::cmd(
        &mut server.connection(),
        &[
            "ACL", "SETUSER", "app", "on", ">secret", "~*", "+@all", "-config",
        ],
    );
    let url = format!("redis://app:secret@127.0.0.1:{}/0", server.port());
    let limited = redis::Client::open(url).unwrap();
    let unknown = queue
        .worker()
        .on_eviction(OnEviction::Refuse)
        .run(&limited, &stop, |_| Ok::<(), String>(()))
        .unwrap();
    assert_eq!(unknown.memory_policy, MemoryPolicy::Unknown);

    let noeviction = RedisProcess::start(&[]);
    let safe = queue
        .worker()
        .on_eviction(OnEviction::Refuse)
        .run(
            &redis::Client::open(noeviction.url(0)).unwrap(),
            &stop,
            |_| Ok::<(), String>(()),
        )
        .unwrap();
    assert_eq!(safe.memory_policy, MemoryPolicy::NoEviction);
}

/// A worker whose client reaches a replica (a stale address, the demoted node of a
/// failover) gets `READONLY` at its first take: it waits, retrying, and goes on once
/// that node is promoted.
#[test]
fn a_worker_on_a_replica_goes_on_once_it_is_promoted() {
    let (primary, replica) = primary_and_replica();
    let queue = WorkQueue::new("faults:readonly").unwrap();
    let mut old = primary.connection();
    queue.add("one", "x").run(&mut old).unwrap();
    wait_for_replica(&mut old);
    let client = redis::Client::open(replica.url(0)).unwrap();
    let stop = Stop::new();
    let ran = AtomicU64::new(0);
    let report = thread::scope(|scope| {
        let worker = scope.spawn(|| {
            queue
                .worker()
                .poll(Duration::from_millis(50))
                .run(&client, &stop, |_| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok::<(), String>(())
                })
                .unwrap()
        });
        let mut new = replica.connection();
        harness::wait_until("the worker to meet READONLY", 5, || {
            let errors: String = redis::cmd("INFO")
                .arg("errorstats")
                .query(&mut new)
                .unwrap();
            errors.contains("errorstat_READONLY")
        });
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .exec(&mut new)
            .unwrap();
        harness::wait_until("the job to run", 5, || ran.load(Ordering::SeqCst) == 1);
        stop.stop();
        worker.join().unwrap()
    });
    assert_eq!(report.acked, 1, "{report:?}");
    assert!(report.server_retries >= 1, "{report:?}");
}

/// One line of `CLUSTER NODES`: a node's id, port, role and the slots it serves.
struct ClusterNode {
    id: String,
    port: u16,
    master: bool,
    slots: Vec<(u16, u16)>,
}

/// `CLUSTER NODES` as `con`'s node sees the cluster.
fn cluster_nodes(con: &mut redis::Connection) -> redis::RedisResult<Vec<ClusterNode>> {
    let text: String = redis::cmd("CLUSTER").arg("NODES").query(con)?;
    let nodes = text
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            // 127.0.0.1:port@cport
            let address = fields[1].split('@').next().unwrap();
            let port = address.rsplit(':').next().unwrap().parse().unwrap();
            // Past the eighth field: `first-last`, `slot`, or `[slot->-id]` while one moves.
            let slots = fields[8..]
                .iter()
                .filter(|range| !range.starts_with('['))
                .map(|range| match range.split_once('-') {
                    Some((first, last)) => (first.parse().unwrap(), last.parse().unwrap()),
                    None => (range.parse().unwrap(), range.parse().unwrap()),
                })
                .collect();
            ClusterNode {
                id: fields[0].to_owned(),
                port,
                master: fields[2].split(',').any(|flag| flag == "master"),
                slots,
            }
        })
        .collect();
    Ok(nodes)
}

/// The master that `nodes` (one node's view) says serves `slot`.
fn serving(nodes: Vec<ClusterNode>, slot: u16) -> Option<ClusterNode> {
    nodes.into_iter().find(|node| {
        node.master
            && node
                .slots
                .iter()
                .any(|&(first, last)| (first..=last).contains(&slot))
    })
}

/// The id of the master that `con`'s node sees serving `slot`.
fn slot_owner(con: &mut redis::Connection, slot: u16) -> Option<String> {
    serving(cluster_nodes(con).unwrap(), slot).map(|node| node.id)
}

/// A connection to the master serving `slot`, as the first of `ports` that answers sees
/// it: how the producer follows the slot without the sync cluster client, which refuses
/// to send a write and its `WAIT` together.
fn slot_master(ports: &[u16], slot: u16) -> Option<redis::Connection> {
    let open = |port: u16| {
        redis::Client::open(format!("redis://127.0.0.1:{port}/0"))
            .and_then(|client| client.get_connection())
            .ok()
    };
    ports.iter().find_map(|&port| {
        let nodes = cluster_nodes(&mut open(port)?).ok()?;
        open(serving(nodes, slot)?.port)
    })
}

/// Raises `stop` when dropped, so that a failed assertion ends the workers rather than
/// leaving their scope waiting for them.
struct StopOnDrop<'a>(&'a Stop);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// How many error replies with `code` a server has sent (`INFO errorstats`).
fn errors_sent(con: &mut redis::Connection, code: &str) -> u64 {
    let stats: String = redis::cmd("INFO").arg("errorstats").query(con).unwrap();
    let prefix = format!("errorstat_{code}:count=");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0, |count| count.trim().parse().unwrap())
}

/// Moves `slot` from master `from` to master `to` of `cluster` as `redis-cli --cluster
/// reshard` does: `IMPORTING` on `to`, `MIGRATING` on `from`, its keys moved in batches
/// with `MIGRATE … KEYS`, then `SETSLOT … NODE` on every master. Waits (for the
/// servers' count) until clients met `TRYAGAIN` while the slot was half moved, and at
/// the end until every node sees `to` serving it. Answers how many `MIGRATE` calls it
/// took.
fn migrate_slot(cluster: &RedisCluster, slot: u16, from: usize, to: usize) -> u32 {
    let (from_id, to_id) = (cluster.node_id(from), cluster.node_id(to));
    let (mut source, mut target) = (
        cluster.nodes[from].connection(),
        cluster.nodes[to].connection(),
    );
    let setslot = |con: &mut redis::Connection, state: &str, id: &str| {
        redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(state)
            .arg(id)
            .exec(con)
            .unwrap();
    };
    let tryagain = |source: &mut redis::Connection, target: &mut redis::Connection| {
        errors_sent(source, "TRYAGAIN") + errors_sent(target, "TRYAGAIN")
    };
    let tryagain_before = tryagain(&mut source, &mut target);
    setslot(&mut target, "IMPORTING", &from_id);
    setslot(&mut source, "MIGRATING", &to_id);
    let mut batches = 0;
    loop {
        let keys: Vec<String> = redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(100)
            .query(&mut source)
            .unwrap();
        if keys.is_empty() {
            break;
        }
        // In two batches, so that the keys are split between the nodes for a while.
        for batch in keys.chunks(keys.len().div_ceil(2)) {
            let _: redis::Value = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(cluster.nodes[to].port())
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(batch)
                .query(&mut source)
                .unwrap();
            batches += 1;
            if batches == 1 {
                // Each node lacks some of the queue's keys now: its scripts get TRYAGAIN
                // on either (on the target after the source's ASK).
                harness::wait_until("clients to meet TRYAGAIN mid-migration", 1, || {
                    tryagain(&mut source, &mut target) >= tryagain_before + 3
                });
            }
        }
    }
    setslot(&mut target, "NODE", &to_id);
    setslot(&mut source, "NODE", &to_id);
    for other in (0..3).filter(|&i| i != from && i != to) {
        setslot(&mut cluster.nodes[other].connection(), "NODE", &to_id);
    }
    for node in &cluster.nodes {
        let mut con = node.connection();
        harness::wait_until("every node to see the slot moved", 5, || {
            slot_owner(&mut con, slot).as_deref() == Some(to_id.as_str())
        });
    }
    batches
}

/// A handler run of [`workers_go_on_through_a_slot_migration_and_a_master_kill`]: the
/// phase it started in, which worker ran it, and the delivery it got.
#[derive(Debug)]
#[allow(dead_code)] // `worker` and `delivery` are for the report (Debug)
struct Run {
    phase: u8,
    worker: usize,
    delivery: u32,
}

/// The phases of [`workers_go_on_through_a_slot_migration_and_a_master_kill`], as each
/// handler run records the one it started in.
const BEFORE: u8 = 0;
const MIGRATING: u8 = 1;
const MIGRATED: u8 = 2;
const KILLED: u8 = 3;
const FAILED_OVER: u8 = 4;

/// A Redis Cluster of three masters with a replica each, under three workers (two `run`,
/// one `run_concurrent`) on redis-rs's sync cluster client set up as
/// `examples/cluster.rs` advises, while a producer adds jobs, each waiting for a replica
/// (on a connection to the slot's master: the sync cluster client refuses `wait_for`).
/// The queue's hash slot moves to another master (its scripts get `ASK` and `TRYAGAIN`
/// meanwhile), then that master is killed (`SIGKILL`) and its replica promoted. The
/// workers go on through both and end without error when stopped; every job whose add a
/// replica acknowledged runs; each run ends in an ack or a lost lease; a job runs twice
/// only if its first run was in flight at the kill (its take or ack lost with the
/// unreplicated writes, or its lease run out while the master was down), or if the kill
/// cut its add, which the producer then sent again after the job had run (the queue
/// deduplicates an id only while its job is in the queue).
#[test]
fn workers_go_on_through_a_slot_migration_and_a_master_kill() {
    use std::sync::atomic::AtomicU8;
    use std::time::Instant;

    use redis::cluster::ClusterClient;
    use redis_patterns::Durability;
    use redis_patterns::work_queue::is_transient;

    const JOBS: usize = 300;
    // Jobs added and not yet run, at most: the producer keeps adding through every phase.
    const BACKLOG: usize = 20;
    let began = Instant::now();
    let mut cluster = RedisCluster::start_with_replicas(1000);
    let client = ClusterClient::builder(cluster.urls())
        .max_retry_wait(1_000)
        .build()
        .unwrap();
    // Longer than the migration takes, so that no lease runs out while the workers'
    // acks wait for it to end; a job whose ack the kill lost comes back after it.
    let queue = WorkQueue::new("faults:cluster")
        .unwrap()
        .with_lease(Duration::from_secs(5))
        .unwrap();
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(queue.keys()[0])
        .query(&mut cluster.nodes[0].connection())
        .unwrap();
    let owner = slot_owner(&mut cluster.nodes[0].connection(), slot).unwrap();
    let source = (0..3).find(|&i| cluster.node_id(i) == owner).unwrap();
    let target = (source + 1) % 3;
    let promoted = 3 + target;
    let ports: Vec<u16> = cluster.nodes.iter().map(|node| node.port()).collect();

    let phase = AtomicU8::new(BEFORE);
    let runs = Mutex::new(HashMap::<String, Vec<Run>>::new());
    // Adds a replica acknowledged, or made once no master was to be killed any more.
    let durable = Mutex::new(HashSet::<String>::new());
    // Adds applied that no replica acknowledged before the kill: a kill may lose them.
    let at_risk = Mutex::new(Vec::<String>::new());
    // Adds sent again after the connection failed under the first (the kill): the first
    // may have been applied, and its job run and acked before the second added it again.
    let resent = Mutex::new(HashSet::<String>::new());
    let durable_after_migration = AtomicU64::new(0);
    let stop = Stop::new();
    let ran = || runs.lock().unwrap().len();
    let handler = |worker: usize| {
        let (phase, runs) = (&phase, &runs);
        move |job: &Job| {
            let run = Run {
                phase: phase.load(Ordering::SeqCst),
                worker,
                delivery: job.delivery,
            };
            runs.lock()
                .unwrap()
                .entry(job.id.clone())
                .or_default()
                .push(run);
            Ok::<(), String>(())
        }
    };

    let reports = thread::scope(|scope| {
        let (client, queue, stop, ports) = (&client, &queue, &stop, &ports);
        let _stop_on_panic = StopOnDrop(stop);
        let mut workers: Vec<_> = (0..2)
            .map(|worker| {
                scope.spawn(move || {
                    queue.worker().poll(Duration::from_millis(200)).run(
                        client,
                        stop,
                        handler(worker),
                    )
                })
            })
            .collect();
        workers.push(scope.spawn(move || {
            queue
                .worker()
                .concurrency(3)
                .unwrap()
                .poll(Duration::from_millis(200))
                .run_concurrent(client, stop, handler(2))
        }));
        let (phase, durable, at_risk, resent, after) = (
            &phase,
            &durable,
            &at_risk,
            &resent,
            &durable_after_migration,
        );
        let producer = scope.spawn(move || {
            let mut con = None;
            for n in 0..JOBS {
                let id = format!("job-{n}");
                harness::wait_until("the workers to catch up", 1, || {
                    n < ran() + BACKLOG || stop.is_stopped()
                });
                loop {
                    // Only the workers meet the half-moved slot: the TRYAGAIN replies the
                    // migration waits for are theirs (but for one add under way).
                    harness::wait_until("the migration to end", 1, || {
                        phase.load(Ordering::SeqCst) != MIGRATING || stop.is_stopped()
                    });
                    if stop.is_stopped() {
                        return;
                    }
                    let now = phase.load(Ordering::SeqCst);
                    let open = match &mut con {
                        Some(open) => open,
                        None => match slot_master(ports, slot) {
                            Some(new) => con.insert(new),
                            None => {
                                thread::sleep(Duration::from_millis(10));
                                continue;
                            }
                        },
                    };
                    let added = if now == FAILED_OVER {
                        // The new master has no replica, and no kill follows.
                        queue.add(&id, "x").run(open).map(|_| true)
                    } else {
                        let wait = Durability::replicas(1).timeout(Duration::from_millis(500));
                        queue
                            .add(&id, "x")
                            .wait_for(wait)
                            .run(open)
                            .map(|added| added.is_met())
                    };
                    match added {
                        Ok(true) => {
                            durable.lock().unwrap().insert(id);
                            if now == MIGRATED {
                                after.fetch_add(1, Ordering::SeqCst);
                            }
                            break;
                        }
                        Ok(false) => {
                            at_risk.lock().unwrap().push(id);
                            break;
                        }
                        // The slot moved, or is moving, or its master died: ask again which
                        // node serves it.
                        Err(err)
                            if is_transient(&err)
                                || matches!(err.code(), Some("MOVED" | "ASK")) =>
                        {
                            if let redis_patterns::Error::Redis(err) = &err
                                && (err.is_io_error() || err.is_connection_dropped())
                                && !err.is_connection_refusal()
                            {
                                resent.lock().unwrap().insert(id.clone());
                            }
                            con = None;
                            thread::sleep(Duration::from_millis(10));
                        }
                        Err(err) => panic!("adding {id} failed for good: {err}"),
                    }
                }
            }
        });

        harness::wait_until("jobs to run before the migration", 5, || ran() >= 60);
        // A slot with a few keys, to move in more than one batch (most of the time: the
        // workers may drain the queue before the migration starts).
        let mut old = cluster.nodes[source].connection();
        harness::wait_until("the slot to hold a few keys", 1, || {
            let keys: u64 = redis::cmd("CLUSTER")
                .arg("COUNTKEYSINSLOT")
                .arg(slot)
                .query(&mut old)
                .unwrap();
            keys >= 3
        });
        println!("{:?}: migrating", began.elapsed());
        // 1. The queue's slot moves to another master.
        phase.store(MIGRATING, Ordering::SeqCst);
        let batches = migrate_slot(&cluster, slot, source, target);
        phase.store(MIGRATED, Ordering::SeqCst);
        println!("{:?}: migrated in {batches} MIGRATE calls", began.elapsed());
        let migrated = ran();
        harness::wait_until("the workers to go on after the migration", 5, || {
            ran() >= migrated + 40
        });
        // The replica that is to take over serves the slot once promoted only if it
        // knows its master serves it, and has the keys moved there only if it has
        // acknowledged a write made after them.
        let mut replica = cluster.nodes[promoted].connection();
        let target_id = cluster.node_id(target);
        harness::wait_until("the replica to see its master serve the slot", 5, || {
            slot_owner(&mut replica, slot).as_deref() == Some(target_id.as_str())
        });
        harness::wait_until("an add acknowledged on the slot's new master", 5, || {
            durable_after_migration.load(Ordering::SeqCst) >= 1
        });

        // 2. The master now serving the slot dies; its replica takes over.
        phase.store(KILLED, Ordering::SeqCst);
        let killed = ran();
        cluster.nodes[target].kill();
        println!("{:?}: killed", began.elapsed());
        let promoted_id = cluster.node_id(promoted);
        let mut live: Vec<_> = (0..6)
            .filter(|&i| i != target)
            .map(|i| cluster.nodes[i].connection())
            .collect();
        harness::wait_until("the replica to be promoted", 10, || {
            live.iter_mut().all(|con| {
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(con).unwrap();
                info.contains("cluster_state:ok")
                    && slot_owner(con, slot).as_deref() == Some(promoted_id.as_str())
            })
        });
        phase.store(FAILED_OVER, Ordering::SeqCst);
        println!("{:?}: failed over", began.elapsed());
        let failed_over = ran();
        producer.join().unwrap();
        let mut con = client.get_connection().unwrap();
        harness::wait_until("every job to run", 10, || {
            let counts = queue.counts().run(&mut con).unwrap();
            let runs = runs.lock().unwrap();
            counts.waiting + counts.delayed + counts.leased + counts.parked == 0
                && durable
                    .lock()
                    .unwrap()
                    .iter()
                    .all(|id| runs.contains_key(id))
        });
        assert_eq!(queue.counts().run(&mut con).unwrap().dead, 0);
        stop.stop();
        let reports: Vec<WorkReport> = workers
            .into_iter()
            .map(|w| w.join().unwrap().expect("a worker stopped on an error"))
            .collect();
        println!(
            "jobs run: {killed} before the kill, {failed_over} before the failover ended, {} in all",
            ran()
        );
        reports
    });

    let runs = runs.into_inner().unwrap();
    let durable = durable.into_inner().unwrap();
    let at_risk = at_risk.into_inner().unwrap();
    let resent = resent.into_inner().unwrap();
    let mut lost: Vec<_> = durable
        .iter()
        .filter(|id| !runs.contains_key(*id))
        .collect();
    lost.sort();
    assert_eq!(
        lost,
        Vec::<&String>::new(),
        "acknowledged adds that never ran"
    );
    let at_risk_lost = at_risk.iter().filter(|id| !runs.contains_key(*id)).count();
    // Every run ended in an ack, or in an ack that found the lease lost.
    let total_runs: usize = runs.values().map(Vec::len).sum();
    let ended: u64 = reports.iter().map(|r| r.acked + r.lost).sum();
    assert_eq!(ended, total_runs as u64, "{reports:?}");
    // A second run only for a job in flight at the kill, or added again after an add
    // the kill cut (the queue forgets an id once its job is acked).
    let mut twice: Vec<String> = runs
        .iter()
        .filter(|(_, runs)| runs.len() > 1)
        .map(|(id, runs)| format!("{id} {runs:?}"))
        .collect();
    twice.sort();
    let unexplained: Vec<_> = runs
        .iter()
        .filter(|(id, runs)| {
            runs.len() > 1 && !matches!(runs[0].phase, MIGRATED | KILLED) && !resent.contains(*id)
        })
        .map(|(id, runs)| format!("{id} {runs:?}"))
        .collect();
    assert_eq!(
        unexplained,
        Vec::<String>::new(),
        "jobs run twice away from the kill"
    );
    for report in &reports {
        assert!(
            report.server_retries + report.reconnects >= 1,
            "a worker met no fault: {reports:?}"
        );
    }
    println!(
        "{} jobs added ({} acknowledged by a replica or after the failover, {} at risk, {at_risk_lost} of these lost, {} sent again after the kill cut them: {resent:?}), {total_runs} runs; run twice: {twice:?}",
        durable.len() + at_risk.len(),
        durable.len(),
        at_risk.len(),
        resent.len(),
    );
    println!("{reports:?}");
    println!("{:?} in all", began.elapsed());
}

/// A TCP proxy to a server, on a free port of its own, that the test can cut: while cut,
/// it closes every connection it carries and each new one at once, as a network outage
/// or a proxy restart does to a client's connection alone.
struct Proxy {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    carried: std::sync::Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl Proxy {
    fn to(server_port: u16) -> Proxy {
        use std::net::{Shutdown, TcpListener, TcpStream};
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let carried: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (is_cut, sockets) = (cut.clone(), carried.clone());
        // The threads end with the test process; each copy ends when its socket closes.
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if is_cut.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                    continue;
                };
                let mut sockets = sockets.lock().unwrap();
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ] {
                    thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
                sockets.extend([client, server]);
            }
        });
        Proxy { port, cut, carried }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Closes what it carries, and every connection until [`mend`](Self::mend).
    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for socket in self.carried.lock().unwrap().drain(..) {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }

    fn mend(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// An async worker (one job at a time, then two) whose connection is cut the moment its
/// handler returns, for longer than a whole lease, while a second client takes from the
/// queue: the renewals thread (`renew_from`) holds the job until its ack is settled, so
/// the ack goes through once the connection is back, and the job is neither lost to the
/// other client nor dead. Before, the renewals let the job go when its handler returned:
/// its lease ran out during the outage, the other client's take moved it to the
/// dead-letter queue (one delivery allowed), and the ack found it lost.
#[test]
fn an_async_ack_through_an_outage_longer_than_the_lease_keeps_its_job() {
    let server = RedisProcess::start(&[]);
    let client = redis::Client::open(server.url(0)).unwrap();
    let proxy = Proxy::to(server.port());
    let through_proxy = redis::Client::open(proxy.url()).unwrap();
    let mut con = server.connection();
    for concurrency in [1, 2] {
        let queue = strict_queue(&format!("faults:ack-outage-{concurrency}"));
        let seen = Seen::default();
        let stop = Stop::new();
        let id = format!("long-{concurrency}");
        queue.add(&id, "x").run(&mut con).unwrap();
        let report = thread::scope(|scope| {
            let (client, queue, stop, seen, through_proxy) =
                (&client, &queue, &stop, &seen, &through_proxy);
            let worker = scope.spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let mut con = through_proxy.get_connection_manager().await.unwrap();
                    queue
                        .worker()
                        .poll(Duration::from_millis(50))
                        .concurrency(concurrency)
                        .unwrap()
                        .renew_from(client.clone())
                        .run_async(&mut con, stop, |job: Job| async move {
                            tokio::task::block_in_place(|| seen.handle(&job))
                        })
                        .await
                        .unwrap()
                })
            });
            harness::wait_until("the job to start", 5, || seen.has_started(&id));
            proxy.cut();
            let cut_at = harness::server_ms(&mut con);
            seen.release(&id);
            // A whole lease and a quarter on the server's clock, while another client
            // takes: a lapsed lease would be reclaimed (and, at one delivery, the job
            // dead).
            let outage = LEASE + LEASE / 4;
            while harness::server_ms(&mut con) < cut_at + outage.as_millis() as u64 {
                assert_eq!(queue.take(1).run(&mut con).unwrap(), Vec::new());
                thread::sleep(Duration::from_millis(20));
            }
            proxy.mend();
            harness::wait_until("the job to end", 5, || {
                queue.counts().run(&mut con).unwrap().leased == 0
            });
            stop.stop();
            worker.join().unwrap()
        });
        assert_eq!(
            (report.acked, report.lost),
            (1, 0),
            "concurrency {concurrency}: {report:?}"
        );
        assert_eq!(queue.counts().run(&mut con).unwrap().dead, 0);
        assert_eq!(seen.twice(), Vec::<String>::new());
    }
}
