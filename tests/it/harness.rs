//! What every test shares: one standalone server and one cluster per test binary, a fresh
//! database per test, keyspace dumps, and scenario transcripts pinned with insta.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, mpsc};
use std::thread;

use redis_patterns::Error;
use serde::Serialize;

use crate::recorder;
use crate::server::{RedisCluster, RedisProcess};

/// Enough databases that every test of the binary gets its own.
const DATABASES: u32 = 512;

/// How the scenarios run their scripts: with `IT_SCRIPT_MODE=functions`, through `FCALL`
/// instead of `EVALSHA` (`.ci/test` runs the scenarios both ways). [`step!`] applies it
/// to every operation it runs, and the scenarios pass it to what runs operations for
/// them (a worker, `get_or_compute`).
pub fn script_mode() -> redis_patterns::ScriptMode {
    static MODE: OnceLock<redis_patterns::ScriptMode> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("IT_SCRIPT_MODE").as_deref() {
        Ok("functions") => redis_patterns::ScriptMode::Functions,
        Ok("eval") | Err(_) => redis_patterns::ScriptMode::Eval,
        Ok(other) => panic!("IT_SCRIPT_MODE is `eval` or `functions`, not `{other}`"),
    })
}

/// An operation of a scenario, to run in the scenarios' [`script_mode`].
pub trait InMode {
    /// The operation to run.
    type Op;
    /// The same operation, run in [`script_mode`].
    fn in_mode(self) -> Self::Op;
}

impl<T: 'static> InMode for redis_patterns::Op<T> {
    type Op = Self;
    fn in_mode(self) -> Self {
        self.via(script_mode())
    }
}

impl<T: 'static> InMode for &redis_patterns::Op<T> {
    type Op = redis_patterns::Op<T>;
    fn in_mode(self) -> redis_patterns::Op<T> {
        self.clone().via(script_mode())
    }
}

fn standalone() -> &'static RedisProcess {
    static SERVER: OnceLock<RedisProcess> = OnceLock::new();
    SERVER.get_or_init(|| RedisProcess::start(&["--databases", &DATABASES.to_string()]))
}

/// One database of the shared standalone server, used by one test only, so tests run in
/// parallel without seeing each other's keys.
pub struct Db {
    pub client: redis::Client,
    /// Its URL, for a client that is not this process (another language's).
    pub url: String,
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

/// Clients blocked with `BLPOP` on lists, as a coordination primitive's waiters block,
/// each on a connection of its own: the client of the i-th key sends i on `woken` when its
/// pop returns.
pub struct Poppers {
    pub woken: mpsc::Receiver<usize>,
    ids: Vec<i64>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Poppers {
    /// One client per key of `keys` (index, key), blocked in that order: each is blocked
    /// before the next starts, so Redis serves them in that order too.
    pub fn block(
        db: &Arc<Db>,
        observer: &mut redis::Connection,
        keys: impl IntoIterator<Item = (usize, String)>,
    ) -> Poppers {
        let (woke, woken) = mpsc::channel();
        let (mut ids, mut threads) = (Vec::new(), Vec::new());
        for (i, key) in keys {
            let (db, woke) = (db.clone(), woke.clone());
            let (send_id, id) = mpsc::channel();
            threads.push(thread::spawn(move || {
                let mut con = db.con();
                send_id.send(client_id(&mut con)).unwrap();
                let _: Vec<String> = redis::cmd("BLPOP")
                    .arg(&key)
                    .arg(60)
                    .query(&mut con)
                    .unwrap();
                woke.send(i).unwrap();
            }));
            let id = id.recv().unwrap();
            wait_until_sent(observer, id, "blpop");
            ids.push(id);
        }
        Poppers {
            woken,
            ids,
            threads,
        }
    }

    /// How many of them are blocked now.
    pub fn blocked(&self, con: &mut redis::Connection) -> usize {
        let clients: String = redis::cmd("CLIENT")
            .arg("LIST")
            .arg("ID")
            .arg(&self.ids)
            .query(con)
            .unwrap();
        clients
            .lines()
            .filter(|c| c.contains(" flags=b ") && c.contains(" cmd=blpop "))
            .count()
    }

    /// Waits for every one of them to have woken.
    pub fn join(self) {
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}

/// A database no other test of this binary uses.
pub fn fresh_db() -> Db {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let db = NEXT.fetch_add(1, Ordering::Relaxed);
    assert!(db < DATABASES, "more tests than databases: raise DATABASES");
    let url = standalone().url(db);
    Db {
        client: redis::Client::open(url.as_str()).expect("a valid url"),
        url,
    }
}

/// The shared three-master cluster. Tests on it use keys no other test uses.
pub fn cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(RedisCluster::start)
}

pub fn cluster_client() -> redis::cluster::ClusterClient {
    client_of(cluster())
}

fn client_of(cluster: &RedisCluster) -> redis::cluster::ClusterClient {
    redis::cluster::ClusterClient::new(cluster.urls()).expect("a valid cluster client")
}

pub fn cluster_con() -> redis::cluster::ClusterConnection {
    cluster_client()
        .get_connection()
        .expect("connect to the test cluster")
}

/// A standalone server and a cluster of their own, for the tests that flush or inspect the
/// script cache. `SCRIPT FLUSH` empties a whole server's cache: on the shared servers it
/// would make other tests' pipelines and transactions fail with NOSCRIPT. Holding one of
/// these also makes those tests take turns, so a flush never lands between another
/// script-cache test's load and its check.
pub struct ScriptCacheServers {
    _turn: MutexGuard<'static, ()>,
}

pub fn script_cache_servers() -> ScriptCacheServers {
    static TURN: Mutex<()> = Mutex::new(());
    // A test that failed while holding the turn leaves nothing behind that matters.
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    ScriptCacheServers { _turn: turn }
}

impl ScriptCacheServers {
    pub fn db(&self) -> Db {
        static SERVER: OnceLock<RedisProcess> = OnceLock::new();
        let server = SERVER.get_or_init(|| RedisProcess::start(&[]));
        let url = server.url(0);
        let db = Db {
            client: redis::Client::open(url.as_str()).expect("a valid url"),
            url,
        };
        // Each test starts from an empty keyspace, whatever the one before it left.
        cmd(&mut db.con(), &["FLUSHDB"]);
        db
    }

    pub fn cluster_client(&self) -> redis::cluster::ClusterClient {
        client_of(self.cluster())
    }

    pub fn cluster_con(&self) -> redis::cluster::ClusterConnection {
        self.cluster_client()
            .get_connection()
            .expect("connect to the script-cache cluster")
    }

    pub fn cluster(&self) -> &'static RedisCluster {
        static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
        CLUSTER.get_or_init(RedisCluster::start)
    }
}

/// The last command that the connection with `id` (its `CLIENT ID`) sent, as `CLIENT
/// LIST` names it (`evalsha`, `get`), read from another connection.
pub fn last_command(observer: &mut redis::Connection, id: i64) -> String {
    let info: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("ID")
        .arg(id)
        .query(observer)
        .unwrap();
    let field = info.split(' ').find(|f| f.starts_with("cmd=")).unwrap();
    field["cmd=".len()..].to_owned()
}

/// Waits until the connection with `id` has sent `command` (as [`last_command`] names it):
/// a blocking pop is waiting, say, so that what the test does next happens while it
/// waits, however late its thread got a turn. Panics after 60 s.
pub fn wait_until_sent(observer: &mut redis::Connection, id: i64, command: &str) {
    wait_until(&format!("client {id} sending {command}"), 5, || {
        last_command(observer, id) == command
    });
}

/// Checks `done` every `pause_ms` until it holds: how a test waits for a state rather
/// than for time. Panics with `what` after 60 s, a bound no healthy run comes near.
pub fn wait_until(what: &str, pause_ms: u64, mut done: impl FnMut() -> bool) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < give_up,
            "{what}: not after 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
    }
}

/// The `CLIENT ID` of a connection.
/// How many clients of `con`'s database are blocked in `command` (as `CLIENT LIST` writes
/// it: `bzpopmin`, `xread`): tests share the server, never a database, so a count of the
/// whole server would count other tests' waiters.
pub fn blocked_in(con: &mut redis::Connection, command: &str) -> usize {
    let field = |line: &str, name: &str| {
        line.split(' ')
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .map(str::to_owned)
    };
    let me: String = redis::cmd("CLIENT").arg("INFO").query(con).unwrap();
    let db = field(&me, "db");
    let list: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
    list.lines()
        .filter(|l| field(l, "cmd").as_deref() == Some(command) && field(l, "db") == db)
        .count()
}

pub fn client_id(con: &mut dyn redis::ConnectionLike) -> i64 {
    redis::cmd("CLIENT").arg("ID").query(con).unwrap()
}

/// The `CLIENT ID` of an async connection.
pub async fn client_id_async(con: &mut impl redis::aio::ConnectionLike) -> i64 {
    redis::cmd("CLIENT")
        .arg("ID")
        .query_async(con)
        .await
        .unwrap()
}

/// Every key of the connection's database with its serialised value (`DUMP`; for a hash or
/// a set, its sorted members) and whether it expires: equal dumps mean nothing was written.
pub fn dump(con: &mut redis::Connection) -> BTreeMap<Vec<u8>, (Vec<u8>, bool)> {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    if keys.is_empty() {
        return BTreeMap::new();
    }
    // One round trip for them all.
    let mut pipe = redis::pipe();
    for key in &keys {
        pipe.cmd("TYPE")
            .arg(key)
            .cmd("DUMP")
            .arg(key)
            .cmd("PTTL")
            .arg(key);
    }
    let values: Vec<(String, Vec<u8>, i64)> = pipe.query(con).expect("TYPE, DUMP and PTTL");
    // A hash or set in a hash table dumps its members in table order, which a read can
    // change (a lookup moves an incremental rehash on): such keys are taken as their
    // sorted members, in one more round trip.
    let unordered: Vec<(usize, &str)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, (ty, _, _))| match ty.as_str() {
            "hash" => Some((i, "HGETALL")),
            "set" => Some((i, "SMEMBERS")),
            _ => None,
        })
        .collect();
    let mut members: Vec<Vec<Vec<u8>>> = Vec::new();
    if !unordered.is_empty() {
        let mut pipe = redis::pipe();
        for &(i, command) in &unordered {
            pipe.cmd(command).arg(&keys[i]);
        }
        members = pipe.query(con).expect("HGETALL and SMEMBERS");
    }
    // Each member (a hash's field and value) framed by its length, so that two lists of
    // members never read alike.
    let framed = |parts: &[Vec<u8>]| -> Vec<u8> {
        let mut out = Vec::new();
        for part in parts {
            out.extend_from_slice(format!("{}:", part.len()).as_bytes());
            out.extend_from_slice(part);
        }
        out
    };
    let mut sorted: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    for (&(i, command), items) in unordered.iter().zip(members) {
        let per = if command == "HGETALL" { 2 } else { 1 };
        let mut items: Vec<Vec<u8>> = items.chunks(per).map(framed).collect();
        items.sort();
        sorted.insert(
            i,
            [format!("{command} ").into_bytes(), framed(&items)].concat(),
        );
    }
    keys.into_iter()
        .zip(values)
        .enumerate()
        .map(|(i, (key, (_, value, pttl)))| {
            let value = sorted.remove(&i).unwrap_or(value);
            (key, (value, pttl >= 0))
        })
        .collect()
}

/// Bytes that are not UTF-8 (and hold a NUL and a CR LF), for the binary-safety tests.
pub const NOT_UTF8: &[u8] = b"\xff\xfe\x00bin\r\n\x80";

/// Runs `read`, which takes a value that cannot decode as what it asks for (a non-UTF-8
/// item popped as `String`), and asserts that it fails and that the keyspace is byte for
/// byte as it was: the value went back where it was.
pub fn assert_undecodable_changes_nothing<T: Debug>(
    con: &mut redis::Connection,
    read: impl FnOnce(&mut redis::Connection) -> Result<T, Error>,
) {
    let before = dump(con);
    let result = read(con);
    assert!(result.is_err(), "expected a decoding error, got {result:?}");
    assert_eq!(dump(con), before, "the keyspace changed: {result:?}");
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
        // The type a read decodes into is the test's choice, not part of the call.
        let call = &call.replace("::<String>", "");
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
    let reply: redis::Value = cmd.query(con).map_err(Error::Redis)?;
    assert_reply_type(script, &reply);
    Ok(reply)
}

/// Checks a script's reply against the type its header's `@return` states, as a client
/// in another language reads it: a `bool` is the integer 0 or 1 (never nil), a `float`
/// or `decimal` is text, a tuple has exactly its elements (lists and rows among them), a
/// `(…)?` is nil or the tuple. Every raw call the tests make
/// through [`eval`] is checked.
pub fn assert_reply_type(script: &redis_patterns::Script, reply: &redis::Value) {
    let ty: String = script.returns.ty.split_whitespace().collect();
    if let Err(why) = reply_matches(&ty, reply) {
        panic!(
            "{}: the reply {reply:?} is not a `{}`: {why}",
            script.name, script.returns.ty
        );
    }
}

/// Whether `reply` is of the header type `ty` (written without spaces).
pub fn reply_matches(ty: &str, reply: &redis::Value) -> Result<(), String> {
    use redis::Value;
    if let Some(inner) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let Value::Array(items) = reply else {
            return Err("not an array".into());
        };
        return items.iter().try_for_each(|item| reply_matches(inner, item));
    }
    if let Some(inner) = ty.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        let types = tuple_types(inner);
        let Value::Array(items) = reply else {
            return Err("not an array".into());
        };
        if items.len() != types.len() {
            return Err(format!(
                "{} items for {} elements",
                items.len(),
                types.len()
            ));
        }
        return types
            .iter()
            .zip(items)
            .try_for_each(|(ty, item)| reply_matches(ty, item));
    }
    if let Some(inner) = ty.strip_suffix('?') {
        return match reply {
            Value::Nil => Ok(()),
            _ => reply_matches(inner, reply),
        };
    }
    let text = |reply: &Value| match reply {
        Value::BulkString(bytes) => Ok(bytes.clone()),
        other => Err(format!("{other:?} is not text")),
    };
    match ty {
        "nil" if *reply == Value::Nil => Ok(()),
        "bool" if matches!(reply, Value::Int(0 | 1)) => Ok(()),
        "int" if matches!(reply, Value::Int(_)) => Ok(()),
        "uint" if matches!(reply, Value::Int(n) if *n >= 0) => Ok(()),
        "string" | "bytes" => text(reply).map(drop),
        "float" => {
            let bytes = text(reply)?;
            match std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
            {
                Some(x) if x.is_finite() => Ok(()),
                _ => Err(format!(
                    "{:?} is not a finite number",
                    String::from_utf8_lossy(&bytes)
                )),
            }
        }
        "decimal" => {
            let bytes = text(reply)?;
            let s = String::from_utf8_lossy(&bytes);
            match s.parse::<i64>() {
                Ok(n) if n.to_string() == s => Ok(()),
                _ => Err(format!("{s:?} is not a 64-bit integer in the one form")),
            }
        }
        "nil" | "bool" | "int" | "uint" => Err(format!("{reply:?} is not a {ty}")),
        other => Err(format!("the type `{other}` is not in the header grammar")),
    }
}

/// The element types of a header tuple type's inside (`string,[int],(int,bool)`), split
/// at the commas outside brackets: a tuple may hold lists and rows.
pub fn tuple_types(inner: &str) -> Vec<&str> {
    let mut types = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                types.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    types.push(&inner[start..]);
    types
}

/// The server's clock (`TIME`), in milliseconds: the clock leases and windows run on.
///
/// A recorded scenario ([`recorder`](crate::recorder)) counts its waits and the clock
/// readings it sends from here.
pub fn server_ms(con: &mut dyn redis::ConnectionLike) -> u64 {
    let (secs, micros): (u64, u64) =
        recorder::quietly(|| redis::cmd("TIME").query(con).expect("TIME"));
    let ms = secs * 1000 + micros / 1000;
    recorder::clock_read(ms);
    ms
}

/// Waits until `key` has expired, polling every 10 ms, up to 10 s: a wait that lasts as
/// long as the server needs, where a fixed sleep would race a loaded machine.
pub fn wait_until_gone(con: &mut dyn redis::ConnectionLike, key: &str) {
    recorder::wait_gone(key);
    recorder::quietly(|| poll_until_gone(con, key));
}

fn poll_until_gone(con: &mut dyn redis::ConnectionLike, key: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let exists: bool = redis::cmd("EXISTS").arg(key).query(con).expect("EXISTS");
        if !exists {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{key} did not expire within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Waits until the server's clock has reached `ms` (see [`server_ms`]).
pub fn wait_until_server_ms(con: &mut dyn redis::ConnectionLike, ms: u64) {
    recorder::wait_server_ms(ms);
    recorder::quietly(|| {
        while server_ms(con) < ms {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
}

/// Waits until the server's clock has moved on by more than `d`.
pub fn wait_server(con: &mut dyn redis::ConnectionLike, d: std::time::Duration) {
    let until = server_ms(con) + d.as_millis() as u64 + 1;
    wait_until_server_ms(con, until);
}

/// Waits until `counter` reaches `at_least`: a test whose invariant needs another
/// thread to have made progress (a reader that read while writers wrote) waits for that
/// progress instead of hoping the thread got a turn, which on a busy machine it may not.
/// Panics with `what` after 60 s (see [`wait_until`]).
pub fn wait_for_count(counter: &AtomicU64, at_least: u64, what: &str) {
    wait_until(&format!("{what} ({at_least})"), 1, || {
        counter.load(Ordering::SeqCst) >= at_least
    });
}

/// Waits until a whole turn of one of the `threads` threads that move `counter` has
/// ended, one that began after this call: each thread may end one turn it began before,
/// so the count moves on `threads + 1` times.
pub fn wait_for_a_whole_turn(counter: &AtomicU64, threads: u64, what: &str) {
    let now = counter.load(Ordering::SeqCst);
    wait_for_count(counter, now + threads + 1, what);
}

/// Sends one command whose reply does not matter, for setting a test up.
/// Every member of the sorted set at `key` as bytes, with its score, lowest first: what
/// the keyspace holds, read without the pattern under test.
pub fn zset_with_scores<S: redis::FromRedisValue>(
    con: &mut dyn redis::ConnectionLike,
    key: &str,
) -> Vec<(Vec<u8>, S)> {
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(con)
        .unwrap_or_else(|err| panic!("ZRANGE {key} 0 -1 WITHSCORES: {err}"))
}

pub fn cmd(con: &mut dyn redis::ConnectionLike, args: &[&str]) {
    redis::cmd(args[0])
        .arg(&args[1..])
        .exec(con)
        .unwrap_or_else(|err| panic!("{args:?}: {err}"));
}

/// What [`produce_and_consume`] saw: each push with its batch and what it returned, and
/// the items each consumer popped, in the order it popped them.
pub struct Traffic<R> {
    pub pushes: Vec<(Vec<String>, R)>,
    pub popped: Vec<Vec<String>>,
}

impl<R> Traffic<R> {
    /// Every item popped, sorted.
    pub fn all_popped(&self) -> Vec<String> {
        let mut all: Vec<String> = self.popped.iter().flatten().cloned().collect();
        all.sort();
        all
    }

    /// Every item pushed, sorted.
    pub fn all_pushed(&self) -> Vec<String> {
        let mut all: Vec<String> = self.pushes.iter().flat_map(|(b, _)| b.clone()).collect();
        all.sort();
        all
    }
}

/// `producers` threads each push their batches (`batches(p)`, items named uniquely by the
/// caller) with `push`, while `consumers` threads pop with `pop` (given the consumer's
/// index, so consumers can pop differently) until the producers are done and a pop finds
/// nothing. Every thread has its own connection to `db`.
pub fn produce_and_consume<R: Send>(
    db: &Db,
    producers: usize,
    consumers: usize,
    batches: impl Fn(usize) -> Vec<Vec<String>> + Sync,
    push: impl Fn(&mut redis::Connection, &[String]) -> R + Sync,
    pop: impl Fn(&mut redis::Connection, usize) -> Option<String> + Sync,
) -> Traffic<R> {
    use std::sync::atomic::AtomicBool;
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let popping: Vec<_> = (0..consumers)
            .map(|c| {
                let (done, pop) = (&done, &pop);
                s.spawn(move || {
                    let mut con = db.con();
                    let mut popped = Vec::new();
                    loop {
                        // Read the flag first: a pop that finds nothing after the last
                        // push finished means the queue stays empty.
                        let finished = done.load(Ordering::SeqCst);
                        match pop(&mut con, c) {
                            Some(item) => popped.push(item),
                            None if finished => return popped,
                            None => std::thread::yield_now(),
                        }
                    }
                })
            })
            .collect();
        let pushing: Vec<_> = (0..producers)
            .map(|p| {
                let (batches, push) = (&batches, &push);
                s.spawn(move || {
                    let mut con = db.con();
                    batches(p)
                        .into_iter()
                        .map(|batch| {
                            let reply = push(&mut con, &batch);
                            (batch, reply)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let pushes = pushing
            .into_iter()
            .flat_map(|h| h.join().expect("a producer panicked"))
            .collect();
        done.store(true, Ordering::SeqCst);
        let popped = popping
            .into_iter()
            .map(|h| h.join().expect("a consumer panicked"))
            .collect();
        Traffic { pushes, popped }
    })
}

/// A small deterministic generator (xorshift64*) for test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Producer `p`'s `count` batches of 1 to `max_len` items, named `p<p>:<n>` with `n`
/// counting up (zero-padded, so names sort in push order).
pub fn numbered_batches(p: usize, count: usize, max_len: u64) -> Vec<Vec<String>> {
    let mut rng = Rng::new(p as u64 + 1);
    let mut n = 0;
    (0..count)
        .map(|_| {
            (0..=rng.below(max_len))
                .map(|_| {
                    n += 1;
                    format!("p{p}:{n:05}")
                })
                .collect()
        })
        .collect()
}

/// Asserts that each consumer saw each producer's items (named by [`numbered_batches`])
/// in the order they were pushed: what a FIFO queue promises.
#[track_caller]
pub fn assert_fifo_per_consumer(popped: &[Vec<String>]) {
    for items in popped {
        let mut last: BTreeMap<&str, &str> = BTreeMap::new();
        for item in items {
            let (producer, _) = item.split_once(':').expect("a numbered item");
            if let Some(prev) = last.insert(producer, item) {
                assert!(prev < item.as_str(), "{item} came out after {prev}");
            }
        }
    }
}

/// A sync connection that counts the requests it sends: one pipeline is one request.
pub struct Counting<C> {
    pub inner: C,
    pub requests: usize,
}

impl<C: redis::ConnectionLike> redis::ConnectionLike for Counting<C> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        self.requests += 1;
        self.inner.req_packed_command(cmd)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        self.requests += 1;
        self.inner.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }

    fn supports_pipelining(&self) -> bool {
        self.inner.supports_pipelining()
    }

    fn check_connection(&mut self) -> bool {
        self.inner.check_connection()
    }

    fn is_open(&self) -> bool {
        self.inner.is_open()
    }
}
