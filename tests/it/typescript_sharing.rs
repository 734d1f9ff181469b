//! A TypeScript app and Rust workers share a work queue: the TypeScript package
//! (`clients/typescript`), run by node as `clients/typescript/test/rust-peer.ts` (built to
//! `dist/test/` by `.ci/typescript-client`), adds jobs with its generated `WorkQueue`, in
//! pipelines, while Rust workers take them; every job is handled once, by one of them, and
//! acked, and the keys the package named are the Rust API's.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use redis_patterns::work_queue::{Stop, WorkQueue};
use serde::Deserialize;

use crate::harness;
use crate::python_sharing::{keys_of, skip};

/// node (`REDIS_PATTERNS_NODE`, else `node` on the PATH) and the built peer program; with
/// either missing, a test is skipped with a message saying how to run it, or fails in CI.
fn node_peer() -> Option<(String, PathBuf)> {
    let node = std::env::var("REDIS_PATTERNS_NODE").unwrap_or_else(|_| "node".into());
    let peer =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/typescript/dist/test/rust-peer.js");
    let runs = Command::new(&node)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !runs {
        skip(&format!(
            "no node ({node}): install Node 20 or later (Debian: apt-get install nodejs), or \
             set REDIS_PATTERNS_NODE to one"
        ));
        return None;
    }
    if !peer.exists() {
        skip(&format!(
            "{} is missing: `bash .ci/typescript-client` builds the TypeScript package",
            peer.display()
        ));
        return None;
    }
    Some((node, peer))
}

#[derive(Deserialize)]
struct Added {
    keys: Vec<String>,
    added: u64,
}

/// A TypeScript producer adds jobs while three Rust workers drain the queue, for a queue
/// named plainly and one whose name holds a hash tag.
#[test]
fn a_typescript_producer_and_rust_workers_share_a_queue() {
    let Some((node, peer)) = node_peer() else {
        return;
    };
    let db = harness::fresh_db();
    let mut con = db.con();
    for (name, count) in [("ts:emails", 300u64), ("{tenant:7}:emails", 40)] {
        let queue = WorkQueue::new(name).unwrap();
        let stop = Stop::new();
        let handled = Mutex::new(Vec::new());
        let (added, reports) = std::thread::scope(|s| {
            // The workers stop however this scope ends, so a failed wait fails the test
            // rather than leaving the scope joined on workers that never stop.
            let _stop = StopOnDrop(&stop);
            let workers: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        queue
                            .worker()
                            .poll(Duration::from_millis(50))
                            .run(&db.client, &stop, |job| {
                                let payload: String = job.payload_as().unwrap();
                                handled.lock().unwrap().push((job.id.clone(), payload));
                                Ok::<_, String>(())
                            })
                            .unwrap()
                    })
                })
                .collect();
            let out = Command::new(&node)
                .arg(&peer)
                .args(["add-jobs", &db.url, name, &count.to_string()])
                .output()
                .expect("run node");
            assert!(
                out.status.success(),
                "rust-peer.js add-jobs failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let added: Added = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
            });
            harness::wait_until("the queue drained", 5, || {
                let counts = queue.counts().run(&mut con).unwrap();
                (counts.waiting, counts.delayed, counts.leased) == (0, 0, 0)
                    && handled.lock().unwrap().len() as u64 >= count
            });
            stop.stop();
            let reports: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
            (added, reports)
        });
        assert_eq!(added.added, count, "{name}: every job is new");
        assert_eq!(
            added.keys,
            keys_of(&queue.add("x", "x")),
            "{name}: work_queue/add's keys"
        );
        let mut handled = handled.into_inner().unwrap();
        handled.sort();
        let mut expected: Vec<(String, String)> = (0..count)
            .map(|i| (format!("job-{i}"), format!("email {i}")))
            .collect();
        expected.sort();
        assert_eq!(handled, expected, "{name}: every job once");
        let acked: u64 = reports.iter().map(|r| r.acked).sum();
        assert_eq!(acked, count, "{name}: {reports:?}");
        let counts = queue.counts().run(&mut con).unwrap();
        assert_eq!((counts.parked, counts.dead), (0, 0), "{name}: {counts:?}");
    }
}

/// Raises its [`Stop`] when dropped.
struct StopOnDrop<'s>(&'s Stop);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}
