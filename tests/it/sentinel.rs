//! Redis Sentinel: the work queue's loops connect through the sentinels
//! (`Mutex<SentinelClient>` for the sync loops, `SentinelConnection` for the async one), and
//! go on on the new primary after its sentinels fail the old one over.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use redis::sentinel::{SentinelClient, SentinelServerType};
use redis_patterns::Durability;
use redis_patterns::sentinel::SentinelConnection;
use redis_patterns::work_queue::{Connect, Job, Stop, WorkQueue, is_transient};

use crate::harness;
use crate::server::RedisProcess;

/// The name the sentinels monitor the primary under.
const SERVICE: &str = "jobs";

/// Waits until each sentinel knows the two others and the replica: only then can they
/// agree that the primary is down, elect a leader and promote the replica.
fn wait_for_sentinels(sentinels: &[RedisProcess]) {
    for sentinel in sentinels {
        let mut con = sentinel.connection();
        harness::wait_until("a sentinel to know its peers and the replica", 20, || {
            let peers: Vec<redis::Value> = redis::cmd("SENTINEL")
                .arg("sentinels")
                .arg(SERVICE)
                .query(&mut con)
                .unwrap();
            let replicas: Vec<redis::Value> = redis::cmd("SENTINEL")
                .arg("replicas")
                .arg(SERVICE)
                .query(&mut con)
                .unwrap();
            peers.len() == 2 && replicas.len() == 1
        });
    }
}

/// The port of the primary `sentinel` names now.
fn named_primary(sentinel: &RedisProcess) -> u16 {
    let (_, port): (String, u16) = redis::cmd("SENTINEL")
        .arg("get-master-addr-by-name")
        .arg(SERVICE)
        .query(&mut sentinel.connection())
        .unwrap();
    port
}

/// What the workers handled: each job's id with the worker that ran it, and whether the
/// primary was killed by then.
#[derive(Default)]
struct Handled {
    runs: Mutex<Vec<(String, usize, bool)>>,
}

impl Handled {
    fn record(&self, job: &Job, worker: usize, killed: &AtomicBool) {
        let after_kill = killed.load(Ordering::SeqCst);
        self.lock().push((job.id.clone(), worker, after_kill));
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(String, usize, bool)>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether every one of `workers` ran a job after the kill.
    fn all_went_on(&self, workers: usize) -> bool {
        let after: BTreeSet<usize> = self
            .lock()
            .iter()
            .filter(|(_, _, after)| *after)
            .map(|(_, w, _)| *w)
            .collect();
        after.len() == workers
    }
}

/// Two sync workers and an async one work through a sentinel-watched primary while a
/// producer adds jobs, each acknowledged by the replica (`wait_for`); the primary is
/// SIGKILLed halfway, the sentinels promote the replica, and every worker goes on on it:
/// every job a replica acknowledged is handled, and every worker handles jobs added
/// after the failover.
#[test]
fn workers_follow_a_sentinel_failover() {
    let mut primary = RedisProcess::start(&[]);
    let replica = RedisProcess::start_replica_of(&primary, &[]);
    let sentinels: Vec<RedisProcess> = (0..3)
        .map(|_| RedisProcess::start_sentinel(&primary, SERVICE))
        .collect();
    wait_for_sentinels(&sentinels);
    let urls: Vec<String> = sentinels.iter().map(|s| s.url(0)).collect();
    let client = || {
        SentinelClient::build(
            urls.clone(),
            SERVICE.into(),
            None,
            SentinelServerType::Master,
        )
        .unwrap()
    };
    let queue = WorkQueue::new("sentinel:jobs")
        .unwrap()
        .with_lease(Duration::from_secs(2))
        .unwrap();
    let stop = Stop::new();
    let killed = AtomicBool::new(false);
    let handled = Handled::default();
    let mut acknowledged = Vec::new();

    thread::scope(|scope| {
        let sync_workers: Vec<_> = (0..2)
            .map(|worker| {
                let (queue, stop, killed, handled) = (&queue, &stop, &killed, &handled);
                let connect = Mutex::new(client());
                scope.spawn(move || {
                    queue
                        .worker()
                        .poll(Duration::from_millis(50))
                        .run(&connect, stop, |job| {
                            handled.record(job, worker, killed);
                            Ok::<(), String>(())
                        })
                })
            })
            .collect();
        let async_worker = {
            let (queue, stop, killed, handled) = (&queue, &stop, &killed, &handled);
            let client = client();
            scope.spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let mut con = SentinelConnection::new(client).await.unwrap();
                    queue
                        .worker()
                        .poll(Duration::from_millis(50))
                        .run_async(&mut con, stop, |job: Job| async move {
                            handled.record(&job, 2, killed);
                            Ok::<(), String>(())
                        })
                        .await
                })
            })
        };

        // The producer: adds through the sentinels too, a new connection after an error
        // that passes, until each worker has run a job added after the failover.
        let connect = Mutex::new(client());
        let mut con = connect.connect().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut n = 0;
        while !(killed.load(Ordering::SeqCst) && handled.all_went_on(3)) {
            if Instant::now() > deadline {
                let runs = handled.lock();
                let after: Vec<_> = runs.iter().filter(|r| r.2).map(|r| r.1).collect();
                let logs: Vec<String> = sentinels.iter().map(|s| s.log()).collect();
                panic!(
                    "the workers did not go on: {n} added, {} runs, workers after the kill {after:?}, primary named {}\n{}",
                    runs.len(),
                    named_primary(&sentinels[0]),
                    logs[0]
                );
            }
            if n == 100 {
                primary.kill();
                killed.store(true, Ordering::SeqCst);
            }
            let id = format!("job-{n}");
            let durability = Durability::replicas(1).timeout(Duration::from_millis(500));
            match queue.add(&id, "x").wait_for(durability).run(&mut *con) {
                Ok(added) => {
                    if added.is_met() {
                        acknowledged.push(id);
                    }
                    n += 1;
                }
                Err(err) if is_transient(&err) => {
                    thread::sleep(Duration::from_millis(50));
                    if let Ok(new) = connect.connect() {
                        con = new;
                    }
                }
                Err(err) => panic!("add {id}: {err}"),
            }
        }
        // Every job a replica acknowledged, handled.
        harness::wait_until("every acknowledged job to be handled", 20, || {
            let runs = handled.lock();
            let seen: BTreeSet<&str> = runs.iter().map(|(id, _, _)| id.as_str()).collect();
            acknowledged.iter().all(|id| seen.contains(id.as_str()))
        });
        stop.stop();
        for worker in sync_workers {
            worker.join().unwrap().expect("a sync worker went on");
        }
        async_worker
            .join()
            .unwrap()
            .expect("the async worker went on");
    });
    assert_eq!(named_primary(&sentinels[0]), replica.port());
    let runs = handled.lock();
    let mut per_worker: HashMap<usize, usize> = HashMap::new();
    for (_, worker, after) in runs.iter() {
        if *after {
            *per_worker.entry(*worker).or_default() += 1;
        }
    }
    assert_eq!(per_worker.len(), 3, "{per_worker:?}");
    assert!(
        acknowledged.len() >= 50,
        "{} jobs acknowledged",
        acknowledged.len()
    );
}
