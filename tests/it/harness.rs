//! What every test shares: one standalone server and one cluster per test binary, a fresh
//! database per test, keyspace dumps, and scenario transcripts pinned with insta.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use redis_patterns::Error;
use serde::Serialize;

use crate::server::{RedisCluster, RedisProcess};

/// Enough databases that every test of the binary gets its own.
const DATABASES: u32 = 512;

fn standalone() -> &'static RedisProcess {
    static SERVER: OnceLock<RedisProcess> = OnceLock::new();
    SERVER.get_or_init(|| RedisProcess::start(&["--databases", &DATABASES.to_string()]))
}

/// One database of the shared standalone server, used by one test only, so tests run in
/// parallel without seeing each other's keys.
pub struct Db {
    pub client: redis::Client,
}

impl Db {
    pub fn con(&self) -> redis::Connection {
        self.client
            .get_connection()
            .expect("connect to the test server")
    }

    pub async fn multiplexed(&self) -> redis::aio::MultiplexedConnection {
        self.client
            .get_multiplexed_async_connection()
            .await
            .expect("connect to the test server")
    }
}

/// A database no other test of this binary uses.
pub fn fresh_db() -> Db {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let db = NEXT.fetch_add(1, Ordering::Relaxed);
    assert!(db < DATABASES, "more tests than databases: raise DATABASES");
    Db {
        client: redis::Client::open(standalone().url(db)).expect("a valid url"),
    }
}

/// The shared three-master cluster. Tests on it use keys no other test uses.
pub fn cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(RedisCluster::start)
}

pub fn cluster_client() -> redis::cluster::ClusterClient {
    redis::cluster::ClusterClient::new(cluster().urls()).expect("a valid cluster client")
}

pub fn cluster_con() -> redis::cluster::ClusterConnection {
    cluster_client()
        .get_connection()
        .expect("connect to the test cluster")
}

/// Every key of the connection's database with its serialised value (`DUMP`) and whether
/// it expires: equal dumps mean nothing was written.
pub fn dump(con: &mut redis::Connection) -> BTreeMap<Vec<u8>, (Vec<u8>, bool)> {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    keys.into_iter()
        .map(|key| {
            let value: Vec<u8> = redis::cmd("DUMP").arg(&key).query(con).expect("DUMP");
            let pttl: i64 = redis::cmd("PTTL").arg(&key).query(con).expect("PTTL");
            (key, (value, pttl >= 0))
        })
        .collect()
}

/// A scenario's calls and what each returned, pinned as a snapshot.
#[derive(Serialize, Default)]
pub struct Transcript {
    steps: Vec<Step>,
}

#[derive(Serialize)]
struct Step {
    call: String,
    result: String,
}

impl Transcript {
    /// Records `call` and its result, and hands the result back.
    pub fn step<T: Debug>(&mut self, call: &str, result: Result<T, Error>) -> Result<T, Error> {
        let shown = match &result {
            Ok(value) => format!("{value:?}"),
            Err(err) => match err.code() {
                Some(code) => format!("error {code}: {err}"),
                None => format!("error: {err}"),
            },
        };
        self.steps.push(Step {
            call: call.to_owned(),
            result: shown,
        });
        result
    }

    /// Records a note that is not a call (a sleep, a setup step).
    pub fn note(&mut self, what: &str) {
        self.steps.push(Step {
            call: what.to_owned(),
            result: "-".to_owned(),
        });
    }
}

/// Asserts `value` against `snapshots/<name>.snap`; in CI (`CI=true`) a difference fails
/// and nothing is written.
pub fn assert_snapshot<T: Serialize>(name: &str, value: &T) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_yaml_snapshot!(name, value));
}

/// Asserts that `result` failed with invalid input naming `what`.
#[track_caller]
pub fn assert_invalid<T: Debug>(result: Result<T, Error>, what: &str) {
    match result {
        Err(Error::InvalidInput { what: w, .. }) if w == what => {}
        other => panic!("expected invalid `{what}`, got {other:?}"),
    }
}

/// Asserts that `result` failed with error code `code` (a script's or the server's).
#[track_caller]
pub fn assert_code<T: Debug>(result: Result<T, Error>, code: &str) {
    match &result {
        Err(err) if err.code() == Some(code) => {}
        other => panic!("expected error code {code}, got {other:?}"),
    }
}

/// Runs `script` with raw string keys and arguments, as a non-Rust caller would
/// (`EVAL`, so no loading is involved).
pub fn eval(
    con: &mut dyn redis::ConnectionLike,
    script: &redis_patterns::Script,
    keys: &[&str],
    args: &[&str],
) -> Result<redis::Value, Error> {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script.source).arg(keys.len()).arg(keys).arg(args);
    cmd.query(con).map_err(Error::Redis)
}

/// Sends one command whose reply does not matter, for setting a test up.
pub fn cmd(con: &mut dyn redis::ConnectionLike, args: &[&str]) {
    redis::cmd(args[0])
        .arg(&args[1..])
        .exec(con)
        .unwrap_or_else(|err| panic!("{args:?}: {err}"));
}
