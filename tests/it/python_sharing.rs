//! A Python app and a Rust app share data: `examples/python/share_with_rust.py`, with only
//! the manifest and script files (exported to a folder, as an app outside the repository
//! gets them, or the repository's own), names a work queue's and a leaderboard's keys
//! from the manifest's templates; the Rust API then finds its jobs, and both read the
//! same leaderboard to the byte. The Python is found as `.ci/python` finds it (see
//! [`python`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use redis_patterns::leaderboard::{Leaderboard, RankPolicy};
use redis_patterns::work_queue::WorkQueue;
use redis_patterns::{Op, catalog};
use serde::Deserialize;

use crate::harness;

/// A python3 with redis-py: `REDIS_PATTERNS_PYTHON` (which must have it), else the
/// `python3` on the PATH or Debian's `/usr/bin/python3`, the first that has it, as
/// `.ci/python` looks (which then installs python3-redis; a test installs nothing).
/// With none, a test that needs one is skipped with a message saying how to run it,
/// except in CI (`CI` set, as `.ci/test` sets it), where it fails.
pub(crate) fn python() -> Option<String> {
    let has_redis = |python: &str| {
        Command::new(python)
            .args(["-c", "import redis"])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if let Ok(python) = std::env::var("REDIS_PATTERNS_PYTHON") {
        assert!(
            has_redis(&python),
            "REDIS_PATTERNS_PYTHON={python} cannot import redis (redis-py): install it there \
             (pip install redis), or unset REDIS_PATTERNS_PYTHON"
        );
        return Some(python);
    }
    if let Some(python) = ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|p| has_redis(p))
    {
        return Some(python.to_owned());
    }
    skip(
        "no python3 with redis-py (neither the python3 on the PATH nor /usr/bin/python3 \
         imports redis): `bash .ci/python redis` prints one, installing python3-redis when \
         none has it; run the tests with REDIS_PATTERNS_PYTHON set to it (`bash .ci/test` \
         does), or pip install redis into your python3",
    );
    None
}

/// Says why the running test is skipped (`how` to run it), or in CI (`CI` set, as
/// `.ci/test` sets it) fails it: CI has everything a test needs.
pub(crate) fn skip(how: &str) {
    let in_ci = std::env::var("CI").is_ok_and(|ci| !matches!(ci.as_str(), "" | "0" | "false"));
    assert!(!in_ci, "{how}");
    // Straight to stderr: the test harness would hold back `eprintln!` of a test that passes.
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(std::io::stderr(), "\nskipped {test}: {how}");
}
/// The scripts and the manifest, exported as a non-Rust app gets them, into a fresh folder.
fn exported(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    catalog::export(dir.join("scripts")).unwrap();
    catalog::export_manifest(dir.join("manifest.json")).unwrap();
    dir
}

#[derive(Deserialize)]
struct Output {
    keys: Vec<String>,
    #[serde(default)]
    added: u64,
    #[serde(default)]
    rows: Vec<(String, String, u64)>,
}

/// Runs the Python program with `python`, `args` after its command's folder and URL;
/// without a folder, it reads the repository's `generated/manifest.json` and `scripts/`.
fn run_python(
    python: &str,
    command: &str,
    folder: Option<&Path>,
    url: &str,
    args: &[&str],
) -> Output {
    let program = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/python/share_with_rust.py"
    );
    let out = Command::new(python)
        .arg(program)
        .arg(command)
        .args(folder)
        .arg(url)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "share_with_rust.py {command} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The keys an operation's command names (after `EVALSHA <sha1> <count>`).
pub(crate) fn keys_of<T: 'static>(op: &Op<T>) -> Vec<String> {
    let args: Vec<Vec<u8>> = op
        .cmd()
        .unwrap()
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => bytes.to_vec(),
            other => panic!("a script call has no {other:?}"),
        })
        .collect();
    let count: usize = String::from_utf8_lossy(&args[2]).parse().unwrap();
    args[3..3 + count]
        .iter()
        .map(|k| String::from_utf8(k.clone()).unwrap())
        .collect()
}

/// Python adds jobs to the queue `emails` (and to one whose name holds a hash tag), with
/// the exported files; a Rust worker takes and acks every one of them, and the counts
/// agree.
#[test]
fn python_adds_jobs_that_a_rust_worker_drains() {
    let Some(python) = python() else { return };
    let db = harness::fresh_db();
    let mut con = db.con();
    let folder = exported("python-sharing-queue");
    for (name, count) in [("emails", 25u64), ("{tenant:7}:emails", 7)] {
        let added = run_python(
            &python,
            "add-jobs",
            Some(&folder),
            &db.url,
            &[name, &count.to_string()],
        );
        assert_eq!(added.added, count, "{name}: every job is new");
        let queue = WorkQueue::new(name).unwrap();
        // The keys Python named are the Rust queue's: waiting, delayed and jobs.
        assert_eq!(
            added.keys,
            keys_of(&queue.add("x", "x")),
            "{name}: work_queue/add's keys"
        );
        let counts = queue.counts().run(&mut con).unwrap();
        assert_eq!(counts.waiting, count, "{name}: {counts:?}");

        let mut payloads = Vec::new();
        loop {
            let jobs = queue.take(10).run(&mut con).unwrap();
            if jobs.is_empty() {
                break;
            }
            for job in jobs {
                let payload = job.payload_as::<String>().unwrap();
                // The trace context Python kept with job i: trace and span id i + 1.
                let i: u64 = payload.strip_prefix("email ").unwrap().parse().unwrap();
                assert_eq!(
                    job.trace_context,
                    Some(format!("00-{:032x}-{:016x}-01", i + 1, i + 1)),
                    "{name}: {payload}"
                );
                payloads.push(payload);
                queue.ack(&job).run(&mut con).unwrap();
            }
        }
        payloads.sort();
        let mut expected: Vec<String> = (0..count).map(|i| format!("email {i}")).collect();
        expected.sort();
        assert_eq!(payloads, expected, "{name}: every job once");
        let counts = queue.counts().run(&mut con).unwrap();
        assert_eq!(
            (counts.waiting, counts.leased, counts.delayed, counts.dead),
            (0, 0, 0, 0),
            "{name}: {counts:?}"
        );
    }
}

/// Rust writes a leaderboard; Python, from the repository's own manifest, reads the items
/// around one with the same script, from keys it named itself: the reply is the Rust
/// API's, byte for byte.
#[test]
fn python_reads_a_leaderboard_that_rust_wrote() {
    let Some(python) = python() else { return };
    let db = harness::fresh_db();
    let mut con = db.con();
    for key in ["scores", "{game:7}:scores"] {
        let board = Leaderboard::new(key).unwrap();
        for (item, weight) in [
            ("ann", 100.0),
            ("bob", 90.5),
            ("carol", 90.5),
            ("dan", 80.0),
            ("eve", -1.25),
        ] {
            board.set_weight(item, weight).run(&mut con).unwrap();
        }
        let around = board.around::<String>("carol", 2, RankPolicy::Dense);
        // Through the API first, which loads the script, then as the raw command.
        let ranked = around
            .run(&mut con)
            .unwrap()
            .expect("carol is on the board");
        let rust_raw: Vec<(Vec<u8>, String, u64)> = around.cmd().unwrap().query(&mut con).unwrap();
        let from_python = run_python(
            &python,
            "around",
            None,
            &db.url,
            &[key, "carol", "2", RankPolicy::Dense.as_str()],
        );
        assert_eq!(
            from_python.keys,
            keys_of(&around),
            "{key}: leaderboard/around's keys"
        );
        assert_eq!(
            from_python.rows,
            rust_raw
                .iter()
                .map(|(item, score, rank)| (hex(item), score.clone(), *rank))
                .collect::<Vec<_>>(),
            "{key}: the rows, byte for byte"
        );
        // The Rust API reads the window: highest first, ties in reverse byte order, the
        // tied `bob` and `carol` at one dense rank.
        let items: Vec<(&str, u64)> = ranked.iter().map(|r| (r.item.as_str(), r.rank)).collect();
        assert_eq!(
            items,
            [("ann", 1), ("carol", 2), ("bob", 2), ("dan", 3)],
            "{key}"
        );
        assert_eq!(from_python.rows.len(), ranked.len(), "{key}");
    }
}
