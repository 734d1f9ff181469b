//! The scenarios as data for every language: a [`Recorder`] wraps a scenario test's
//! connection and writes what went over it to `scenarios/<name>.json` (each script call,
//! by name, with its keys and arguments; each other command; the reply; what the call
//! changed in the keyspace), which the clients in other languages replay on a real
//! server. `scenarios/README.md` says how the files read.
//!
//! A file is the same on every run, server kind and script mode (`EVALSHA` or `FCALL`):
//! what varies from run to run (a reading of the server's clock, a random token, a time
//! left, a random pick) is written as a marker, found as follows.
//!
//! - Clock readings and tokens by their look: an integer within a day of the server's
//!   clock (in ms, s, µs or minutes), a stream id of such milliseconds, 32, 40 or 64
//!   lowercase hex digits. An argument that is a clock reading says where it came from:
//!   an earlier reply, the sender's clock, or the scenario's last reading of the server's
//!   clock ([`clock_read`], which the harness's `server_ms` calls).
//! - Times left and random picks by running the call again: a script that reads the
//!   server's clock or a key's time to live runs again on a copy of its keys, 2 ms of the
//!   server's clock later, and what differs in its reply is a time; one that picks at
//!   random (`SPOP`, `SRANDMEMBER`) runs again 20 times, and a pick that changes what the
//!   call writes ends the recording there.
//! - Orders a server leaves open: the replies of `SMEMBERS`, `KEYS` and the like, and the
//!   lists a script reads from a set (as its header's `@return` types them), are sorted.
//!
//! Loading scripts (`SCRIPT LOAD`, `FUNCTION LOAD`), a call that found its script missing
//! (`NOSCRIPT`), the harness's polls and clock readings ([`quietly`]), a blocking read
//! that timed out and the same call after it (a wait loop's next attempt, however many
//! it takes) are not part of a scenario and are left out; the harness's waits are written
//! as waits ([`wait_gone`], [`wait_server_ms`]).
//!
//! With `CI` set, a file that differs fails the test and nothing is written; otherwise
//! the file is rewritten, and a test that changed it fails once, so that the change is
//! seen (`git diff scenarios/`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use redis::Value;
use serde::Serialize;
use serde_json::{Value as Json, json};

/// A day, in milliseconds: how near the server's clock a number must be to be taken for
/// a reading of it.
const DAY_MS: u64 = 86_400_000;

/// The commands whose reply Redis orders as it likes (hash table order): written sorted.
const UNORDERED: &[&str] = &[
    "KEYS", "SMEMBERS", "SINTER", "SUNION", "SDIFF", "HKEYS", "HVALS",
];

thread_local! {
    /// The recording of the scenario this thread runs, for the harness's waits and clock
    /// readings, which take any connection.
    static CURRENT: RefCell<Option<Arc<Mutex<State>>>> = const { RefCell::new(None) };
}

/// Records one scenario, from [`Recorder::new`] to [`Recorder::finish`].
pub struct Recorder {
    name: &'static str,
    state: Arc<Mutex<State>>,
}

/// One step of a scenario, its fields in the order a reader wants them.
#[derive(Serialize, Clone, Default, PartialEq)]
struct Step {
    #[serde(skip_serializing_if = "Option::is_none")]
    wait: Option<Json>,
    /// Why the recording ends here.
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    script: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keys: Option<Vec<Json>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Vec<Json>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<Vec<Json>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply: Option<Json>,
    /// Sent in one round trip with the next step (a pipeline, a transaction): the
    /// keyspace is written after the last.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pipelined: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    keyspace: Option<Changes>,
}

/// What a step changed in the keyspace.
#[derive(Serialize, Clone, PartialEq)]
struct Changes {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    set: Vec<Entry>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    del: Vec<Json>,
}

/// A key of the keyspace.
#[derive(Serialize, Clone, PartialEq)]
struct Entry {
    key: Json,
    #[serde(rename = "type")]
    ty: String,
    value: Json,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    ttl: bool,
}

#[derive(Default)]
struct State {
    steps: Vec<Step>,
    /// Each step's reply as it came, to find a value the scenario sends back.
    replies: Vec<Option<Value>>,
    /// The keyspace after the last step, by each key as written.
    keyspace: BTreeMap<String, Entry>,
    /// Every random token seen, in the order first seen: token `n` is `tokens[n - 1]`.
    tokens: Vec<String>,
    /// The scenario's last reading of the server's clock, in ms.
    anchor: Option<u64>,
    /// How many quiet sections (a poll, a clock reading) the thread is in.
    quiet: usize,
    /// Whether the last command was a blocking read that timed out: a call like the one
    /// before it is then a wait loop's next attempt.
    after_block: bool,
    /// Whether the recording stopped: what follows is not the same on every run.
    stopped: bool,
    /// A key before whose first call the recording stops, and why.
    until: Option<(&'static str, &'static str)>,
    /// The hash fields seen named for a minute ([`slot_field`]), as they are written, to
    /// write them so in replies too (`HKEYS`).
    slots: BTreeMap<String, Json>,
    /// Whether the scenario starts early enough in a minute of the server's clock to end
    /// within it ([`Recorder::within_one_minute`]).
    one_minute: bool,
}

impl Recorder {
    /// Starts recording the scenario `name` (the file `scenarios/<name>.json`).
    pub fn new(name: &'static str) -> Recorder {
        let state = Arc::new(Mutex::new(State::default()));
        CURRENT.with(|current| *current.borrow_mut() = Some(state.clone()));
        Recorder { name, state }
    }

    /// Ends the recording before the first command that names `key`, because of `why`:
    /// what follows is not the same on every run (it sends a time the scenario measured,
    /// say), so no replay could check it.
    pub fn until_key(self, key: &'static str, why: &'static str) -> Recorder {
        lock(&self.state).until = Some((key, why));
        self
    }

    /// Starts the scenario early in a minute of the server's clock (`con`'s), waiting for
    /// the next one when less than [`MINUTE_LEFT_MS`] of this one is left, and says so in
    /// the file: a scenario that writes per-minute slots (`#m:<slot>`) writes one slot
    /// only if it ends in the minute it began, on every run and every replay.
    pub fn within_one_minute(self, con: &mut dyn redis::ConnectionLike) -> Recorder {
        quietly(|| wait_for_minute_start(con));
        lock(&self.state).one_minute = true;
        self
    }

    /// `inner`, recorded.
    pub fn con<C: redis::ConnectionLike>(&self, inner: C) -> Recording<C> {
        Recording {
            inner,
            state: self.state.clone(),
        }
    }

    /// Compares the recording with `scenarios/<name>.json`, or writes it (see the module's
    /// docs).
    pub fn finish(self) {
        let state = lock(&self.state);
        let text = render(self.name, state.one_minute, &state.steps);
        drop(state);
        let path = format!(
            "{}/scenarios/{}.json",
            env!("CARGO_MANIFEST_DIR"),
            self.name
        );
        let old = std::fs::read_to_string(&path).ok();
        if old.as_deref() == Some(text.as_str()) {
            return;
        }
        let in_ci = std::env::var("CI").is_ok_and(|ci| !matches!(ci.as_str(), "" | "0" | "false"));
        assert!(
            !in_ci,
            "{path} is not what the scenario does now; run the test without CI set to \
             rewrite it, and commit it. The recording:\n{text}"
        );
        std::fs::create_dir_all(format!("{}/scenarios", env!("CARGO_MANIFEST_DIR")))
            .expect("create scenarios/");
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("write {path}: {e}"));
        assert!(
            old.is_none(),
            "rewrote {path}: the scenario's calls changed; review `git diff scenarios/` and \
             run the test again"
        );
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        CURRENT.with(|current| *current.borrow_mut() = None);
    }
}

/// What [`Recorder::within_one_minute`] leaves of a minute for the scenario: far more
/// than one takes on a loaded machine.
const MINUTE_LEFT_MS: u64 = 15_000;

/// Waits until at least [`MINUTE_LEFT_MS`] of the server's current minute is left.
fn wait_for_minute_start(con: &mut dyn redis::ConnectionLike) {
    let server_ms = |con: &mut dyn redis::ConnectionLike| {
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(con).expect("TIME");
        secs * 1000 + micros / 1000
    };
    crate::harness::wait_until("a minute of the server's clock starting", 50, || {
        server_ms(con) % 60_000 <= 60_000 - MINUTE_LEFT_MS
    });
}

/// Runs `f` unrecorded: the harness's polls and clock readings are not the scenario's.
pub fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let state = CURRENT.with(|current| current.borrow().clone());
    if let Some(state) = &state {
        lock(state).quiet += 1;
    }
    let out = f();
    if let Some(state) = &state {
        lock(state).quiet -= 1;
    }
    out
}

/// Notes a reading of the server's clock (ms): what later arguments and waits count from.
pub fn clock_read(ms: u64) {
    with_current(|state| {
        // A poll's readings are not the scenario's.
        if state.quiet == 0 {
            state.anchor = Some(ms);
        }
    });
}

/// Notes that the scenario waits until `key` has expired.
pub fn wait_gone(key: &str) {
    with_current(|state| state.push(json!({"gone": key})));
}

/// Notes that the scenario waits until the server's clock reaches `ms`.
pub fn wait_server_ms(ms: u64) {
    with_current(|state| {
        let anchor = state
            .anchor
            .expect("a wait on the server's clock follows a reading of it");
        let after = ms.saturating_sub(anchor);
        state.push(json!({ "server_ms": after }));
    });
}

fn with_current(f: impl FnOnce(&mut State)) {
    CURRENT.with(|current| {
        if let Some(state) = current.borrow().as_ref() {
            f(&mut lock(state));
        }
    });
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A connection whose traffic a [`Recorder`] writes down.
pub struct Recording<C> {
    inner: C,
    state: Arc<Mutex<State>>,
}

impl<C> Recording<C> {
    /// `inner`, of the same type as a recorded connection but not recorded: one of
    /// several servers a scenario runs on, when the recording is of one.
    pub fn unrecorded(inner: C) -> Recording<C> {
        let state = State {
            stopped: true,
            ..State::default()
        };
        Recording {
            inner,
            state: Arc::new(Mutex::new(state)),
        }
    }
}

impl<C: redis::ConnectionLike> redis::ConnectionLike for Recording<C> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<Value> {
        self.req_packed_commands(cmd, 0, 1)
            .map(|mut replies| replies.remove(0))
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<Value>> {
        let mut state = lock(&self.state);
        if !state.recording() {
            drop(state);
            return request(&mut self.inner, cmd, offset, count);
        }
        let commands = parse_commands(cmd);
        if offset > 0 && command_name(&commands[0]) == "MULTI" {
            // MULTI, the calls, EXEC: the calls' replies are EXEC's.
            let replies = request(&mut self.inner, cmd, offset, count)?;
            let calls = &commands[1..commands.len() - 1];
            match &replies[..] {
                [Value::Array(items)] => state.record(&mut self.inner, calls, items, None),
                other => panic!("a transaction the recorder cannot follow: {other:?}"),
            }
            return Ok(replies);
        }
        // The state before a call is known when it is the request's only call (loading
        // its script may go with it).
        let calls: Vec<&Vec<Vec<u8>>> = commands
            .iter()
            .filter(|args| !matches!(classify(args), Call::Skip))
            .collect();
        let before = match calls[..] {
            [call] => Before::read(&mut self.inner, call),
            _ => None,
        };
        let replies = request(&mut self.inner, cmd, offset, count)?;
        state.record(&mut self.inner, &commands, &replies, before);
        Ok(replies)
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

/// Sends a request: one command as one (`offset` 0, `count` 1), for the connections
/// that take a pipeline only as one.
fn request(
    con: &mut dyn redis::ConnectionLike,
    cmd: &[u8],
    offset: usize,
    count: usize,
) -> redis::RedisResult<Vec<Value>> {
    if offset == 0 && count == 1 && parse_commands(cmd).len() == 1 {
        return con.req_packed_command(cmd).map(|reply| vec![reply]);
    }
    con.req_packed_commands(cmd, offset, count)
}

/// The commands of a packed request, each as its arguments.
fn parse_commands(mut packed: &[u8]) -> Vec<Vec<Vec<u8>>> {
    fn header(buf: &[u8], kind: u8) -> (usize, &[u8]) {
        assert_eq!(buf[0], kind, "a request in RESP");
        let end = buf.windows(2).position(|w| w == b"\r\n").expect("CR LF");
        let n = std::str::from_utf8(&buf[1..end]).unwrap().parse().unwrap();
        (n, &buf[end + 2..])
    }
    let mut commands = Vec::new();
    while !packed.is_empty() {
        let (n, mut rest) = header(packed, b'*');
        let mut args = Vec::with_capacity(n);
        for _ in 0..n {
            let (len, after) = header(rest, b'$');
            args.push(after[..len].to_vec());
            rest = &after[len + 2..];
        }
        commands.push(args);
        packed = rest;
    }
    commands
}

fn command_name(args: &[Vec<u8>]) -> String {
    String::from_utf8_lossy(&args[0]).to_ascii_uppercase()
}

/// What a command is to the scenario.
enum Call {
    Script {
        name: &'static str,
        keys: Vec<Vec<u8>>,
        args: Vec<Vec<u8>>,
    },
    Command(Vec<Vec<u8>>),
    /// Not part of the scenario: loading scripts, reading the clock.
    Skip,
}

fn classify(args: &[Vec<u8>]) -> Call {
    let name = command_name(args);
    let script = match name.as_str() {
        "EVALSHA" | "EVALSHA_RO" => {
            let sha1 = String::from_utf8_lossy(&args[1]);
            redis_patterns::catalog::scripts()
                .iter()
                .find(|s| s.sha1.eq_ignore_ascii_case(&sha1))
                .unwrap_or_else(|| panic!("EVALSHA of a script not in the catalog: {sha1}"))
        }
        "FCALL" | "FCALL_RO" => {
            let function = String::from_utf8_lossy(&args[1]);
            redis_patterns::catalog::scripts()
                .iter()
                .find(|s| redis_patterns::catalog::function_name(s) == function)
                .unwrap_or_else(|| panic!("FCALL of a function not in the library: {function}"))
        }
        "SCRIPT" | "FUNCTION" if command_name(&args[1..]) == "LOAD" => return Call::Skip,
        "TIME" => return Call::Skip,
        "EVAL" | "EVAL_RO" => panic!("a scenario runs its scripts by SHA1 or as functions"),
        _ => return Call::Command(args.to_vec()),
    };
    let count: usize = String::from_utf8_lossy(&args[2]).parse().unwrap();
    Call::Script {
        name: script.name,
        keys: args[3..3 + count].to_vec(),
        args: args[3 + count..].to_vec(),
    }
}

/// Whether `reply` says that the script or the library was missing: the call did not
/// run, and runs again after the load.
fn is_missing(reply: &Value) -> bool {
    match reply {
        Value::ServerError(err) => {
            err.code() == "NOSCRIPT"
                || err
                    .details()
                    .is_some_and(|d| d.starts_with("Function not found"))
        }
        _ => false,
    }
}

impl State {
    /// Records a wait.
    fn push(&mut self, wait: Json) {
        if self.stopped {
            return;
        }
        self.steps.push(Step {
            wait: Some(wait),
            ..Step::default()
        });
        self.replies.push(None);
    }

    /// Ends the recording, saying `why`.
    fn stop(&mut self, why: &'static str) {
        self.stopped = true;
        self.steps.push(Step {
            stop: Some(why),
            ..Step::default()
        });
        self.replies.push(None);
    }

    fn recording(&self) -> bool {
        self.quiet == 0 && !self.stopped
    }

    /// Records `commands` and their `replies` (one each), then the keyspace. `before` is
    /// the state a lone script call ran on, to run it again where its reply may differ.
    fn record(
        &mut self,
        con: &mut dyn redis::ConnectionLike,
        commands: &[Vec<Vec<u8>>],
        replies: &[Value],
        before: Option<Before>,
    ) {
        assert_eq!(commands.len(), replies.len(), "a reply per command");
        let now = server_now(con);
        let after_block = std::mem::take(&mut self.after_block);
        let first = self.steps.len();
        for (args, reply) in commands.iter().zip(replies) {
            if is_missing(reply) {
                continue;
            }
            if let Some((key, why)) = self.until
                && args[1..].iter().any(|arg| arg == key.as_bytes())
            {
                self.stop(why);
                return;
            }
            let name = command_name(args);
            if is_block(args) && *reply == Value::Nil {
                self.after_block = true;
                continue;
            }
            let mut step = match classify(args) {
                Call::Skip => continue,
                Call::Script { name, keys, args } => Step {
                    script: Some(name),
                    keys: Some(keys.iter().map(|k| self.sent(k, now)).collect()),
                    args: Some(args.iter().map(|a| self.sent(a, now)).collect()),
                    ..Step::default()
                },
                Call::Command(args) => Step {
                    command: Some(args.iter().map(|a| self.sent(a, now)).collect()),
                    ..Step::default()
                },
            };
            let mut written = self.value(reply, now);
            if let Some(before) = &before {
                match before.differences(con, args, reply) {
                    Differences::None => {}
                    Differences::At(marker, paths) => {
                        for path in paths {
                            mark(&mut written, &path, &marker);
                        }
                    }
                    Differences::Keyspace => {
                        self.stop("what follows depends on a random pick");
                        return;
                    }
                }
            }
            if let Some(script) = step.script.and_then(redis_patterns::catalog::find)
                && reads_sets(script)
            {
                let ty: String = script.returns.ty.split_whitespace().collect();
                unordered_lists(&ty, &mut written);
            }
            match name.as_str() {
                "PTTL" | "TTL" if matches!(reply, Value::Int(n) if *n >= 0) => {
                    written = json!({ "clock": "span" });
                }
                "SRANDMEMBER" | "ZRANDMEMBER" | "HRANDFIELD" | "RANDOMKEY" => {
                    written = json!({ "random": "pick" });
                }
                "SPOP" => {
                    self.stop("what follows depends on a random pick");
                    return;
                }
                _ => {}
            }
            if UNORDERED.contains(&name.as_str()) {
                if let Json::Array(items) = &mut written {
                    items.sort_by_key(Json::to_string);
                }
                written = json!({ "unordered": written });
            }
            step.reply = Some(written);
            self.steps.push(step);
            self.replies.push(Some(reply.clone()));
        }
        let last = self.steps.len();
        for step in self
            .steps
            .get_mut(first..last.saturating_sub(1))
            .unwrap_or_default()
        {
            step.pipelined = true;
        }
        if last > first {
            let changes = self.keyspace_changes(con, now);
            let unchanged = changes.set.is_empty() && changes.del.is_empty();
            let n = self.steps.len();
            if after_block && unchanged && n >= 2 && self.steps[n - 1] == self.steps[n - 2] {
                // A wait loop's attempt like the one before its block: how many a wait
                // takes depends on timing.
                self.steps.pop();
                self.replies.pop();
            } else if !unchanged {
                self.steps.last_mut().unwrap().keyspace = Some(changes);
            }
        }
    }

    /// An argument or key as sent: text with its tokens named, and each reading of a
    /// clock in it said as where it came from.
    fn sent(&mut self, bytes: &[u8], now_ms: u64) -> Json {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return json!({ "bytes": hex(bytes) });
        };
        let pieces = self.pieces(text, now_ms);
        let pieces = pieces
            .into_iter()
            .map(|piece| match piece {
                Piece::Clock(unit, value, digits) => self.clock_sent(unit, value, digits, now_ms),
                other => other.into(),
            })
            .collect();
        joined(pieces)
    }

    /// A clock reading sent: one read back from an earlier reply; the sender's clock now
    /// (within a second of the server's: the library read it); or one the scenario made
    /// from its last reading of the server's clock.
    fn clock_sent(&self, unit: &'static str, value: i128, text: &str, now_ms: u64) -> Json {
        if let Some(from) = self.found_in_replies(text.as_bytes()) {
            return json!({ "clock": unit, "from": from });
        }
        assert!(unit != "id", "a stream id sent that no reply held: {text}");
        let in_ms = |n: i128| match unit {
            "s" => n * 1000,
            "us" => n / 1000,
            _ => n,
        };
        if (in_ms(value) - i128::from(now_ms)).abs() < 1000 {
            return json!({ "clock": unit });
        }
        let anchor_ms = i128::from(self.anchor.unwrap_or_else(|| {
            panic!("{text} reads like the server's clock, but the scenario never read it")
        }));
        let (anchor, second) = match unit {
            "s" => (anchor_ms / 1000, 1),
            "us" => (anchor_ms * 1000, 1_000_000),
            _ => (anchor_ms, 1000),
        };
        // A whole minute, hour or day that the reading was not: rounded down from it, by
        // the finest of them within one of its own steps of the reading's (the start of the
        // hour before is an hour, even when it starts a day too); else the coarsest.
        let rounds = [60, 3600, 86_400].map(|round| round * second);
        let aligned = |r: &i128| value % r == 0 && anchor % r != 0;
        let near = rounds
            .iter()
            .find(|r| aligned(r) && (value - anchor / *r * *r).abs() <= **r);
        if let Some(&r) = near.or_else(|| rounds.iter().rev().find(|r| aligned(r))) {
            return json!({ "clock": unit, "round": r, "add": value - anchor / r * r });
        }
        json!({ "clock": unit, "add": value - anchor })
    }

    /// Where the latest reply that holds `bytes` holds it: `[step, index, index...]`.
    fn found_in_replies(&self, bytes: &[u8]) -> Option<Vec<usize>> {
        fn find(value: &Value, bytes: &[u8], path: &mut Vec<usize>) -> bool {
            match value {
                Value::BulkString(b) => b == bytes,
                Value::Int(n) => n.to_string().as_bytes() == bytes,
                Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                    path.push(i);
                    let found = find(item, bytes, path);
                    if !found {
                        path.pop();
                    }
                    found
                }),
                _ => false,
            }
        }
        self.replies
            .iter()
            .enumerate()
            .rev()
            .find_map(|(step, reply)| {
                let mut path = vec![step];
                find(reply.as_ref()?, bytes, &mut path).then_some(path)
            })
    }

    /// A value of a reply or of the keyspace, with its clock readings and tokens marked.
    fn value(&mut self, value: &Value, now_ms: u64) -> Json {
        match value {
            Value::Nil => Json::Null,
            Value::Int(n) => match clock_unit(i128::from(*n), now_ms) {
                Some(unit) => json!({ "clock": unit }),
                None => json!(n),
            },
            Value::BulkString(bytes) => self.text(bytes, now_ms),
            Value::SimpleString(s) => self.text(s.as_bytes(), now_ms),
            Value::Okay => json!("OK"),
            Value::VerbatimString { text, .. } => self.text(text.as_bytes(), now_ms),
            Value::Array(items) | Value::Set(items) => {
                Json::Array(items.iter().map(|v| self.value(v, now_ms)).collect())
            }
            Value::Map(pairs) => Json::Array(
                pairs
                    .iter()
                    .flat_map(|(k, v)| [self.value(k, now_ms), self.value(v, now_ms)])
                    .collect(),
            ),
            Value::Double(x) => self.text(x.to_string().as_bytes(), now_ms),
            Value::Boolean(b) => json!(i64::from(*b)),
            Value::ServerError(err) => {
                let mut text = err.code().to_owned();
                if let Some(details) = err.details() {
                    // Redis adds where in a script a call failed (its SHA1 or function, and
                    // line), which differs between EVALSHA and FCALL.
                    let details = details.split(" script: ").next().unwrap();
                    text = format!("{text} {details}");
                }
                json!({ "error": self.text(text.as_bytes(), now_ms) })
            }
            other => panic!("a reply the recorder cannot write: {other:?}"),
        }
    }

    /// Bytes: text with its clock readings and tokens marked, or hex.
    fn text(&mut self, bytes: &[u8], now_ms: u64) -> Json {
        if let Some(shortest) = shortest_float(bytes) {
            return json!(shortest);
        }
        if let Some(slot) = std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| self.slots.get(t))
        {
            return slot.clone();
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => joined(
                self.pieces(text, now_ms)
                    .into_iter()
                    .map(Json::from)
                    .collect(),
            ),
            Err(_) => match msgpack(bytes) {
                Some(value) => json!({ "msgpack": value }),
                None => json!({ "bytes": hex(bytes) }),
            },
        }
    }

    /// `text` cut into literal text, clock readings and tokens.
    fn pieces<'t>(&mut self, text: &'t str, now_ms: u64) -> Vec<Piece<'t>> {
        let bytes = text.as_bytes();
        let mut pieces = Vec::new();
        let (mut literal, mut at) = (0, 0);
        while at < bytes.len() {
            if !bytes[at].is_ascii_alphanumeric() {
                at += 1;
                continue;
            }
            let start = at;
            while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
                at += 1;
            }
            let word = &text[start..at];
            let found = if is_token(word) {
                Some((Piece::Token(self.token(word), word.len()), at))
            } else if word.len() < 30 && word.bytes().all(|b| b.is_ascii_digit()) {
                let n: i128 = word.parse().unwrap();
                clock_unit(n, now_ms).map(|unit| {
                    // A stream id: the milliseconds, `-`, the sequence number.
                    let seq = bytes[at..]
                        .strip_prefix(b"-")
                        .map(|rest| rest.iter().take_while(|b| b.is_ascii_digit()).count())
                        .filter(|&digits| digits > 0);
                    match (unit, seq) {
                        ("ms", Some(digits)) => {
                            let end = at + 1 + digits;
                            (Piece::Clock("id", n, &text[start..end]), end)
                        }
                        _ => (Piece::Clock(unit, n, word), at),
                    }
                })
            } else {
                None
            };
            if let Some((piece, end)) = found {
                if literal < start {
                    pieces.push(Piece::Text(&text[literal..start]));
                }
                pieces.push(piece);
                at = end;
                literal = end;
            }
        }
        if literal < text.len() || pieces.is_empty() {
            pieces.push(Piece::Text(&text[literal..]));
        }
        pieces
    }

    /// The number of token `word`, numbering it if it is new.
    fn token(&mut self, word: &str) -> usize {
        match self.tokens.iter().position(|t| t == word) {
            Some(i) => i + 1,
            None => {
                self.tokens.push(word.to_owned());
                self.tokens.len()
            }
        }
    }

    /// What changed in the keyspace since the last step.
    fn keyspace_changes(&mut self, con: &mut dyn redis::ConnectionLike, now_ms: u64) -> Changes {
        let mut entries = BTreeMap::new();
        for (key, ty, expires, contents) in read_keyspace(con) {
            let entry = Entry {
                key: self.text(&key, now_ms),
                value: self.contents(&ty, &contents, now_ms),
                ty,
                ttl: expires,
            };
            entries.insert(entry.key.to_string(), entry);
        }
        let set = entries
            .iter()
            .filter(|(key, entry)| self.keyspace.get(*key) != Some(entry))
            .map(|(_, entry)| entry.clone())
            .collect();
        let del = self
            .keyspace
            .iter()
            .filter(|(key, _)| !entries.contains_key(*key))
            .map(|(_, entry)| entry.key.clone())
            .collect();
        self.keyspace = entries;
        Changes { set, del }
    }

    /// A key's contents: a string's value, a list's or a stream's entries in order, a
    /// set's members and a hash's or a sorted set's pairs, sorted as written.
    fn contents(&mut self, ty: &str, contents: &Value, now_ms: u64) -> Json {
        let json = self.value(contents, now_ms);
        let sorted = |mut items: Vec<Json>| {
            items.sort_by_key(Json::to_string);
            Json::Array(items)
        };
        match (ty, json) {
            ("set", Json::Array(members)) => sorted(members),
            ("hash" | "zset", Json::Array(flat)) => {
                let mut pairs = Vec::new();
                for pair in flat.chunks(2) {
                    let mut field = pair[0].clone();
                    if let Some(slot) = slot_field(&field, &pair[1]) {
                        assert!(
                            self.one_minute,
                            "the scenario writes per-minute slots: start its recording \
                             with `within_one_minute`, or a run that crosses a minute \
                             writes two"
                        );
                        self.slots
                            .insert(field.as_str().unwrap().to_owned(), slot.clone());
                        field = slot;
                    }
                    pairs.push(Json::Array(vec![field, pair[1].clone()]));
                }
                sorted(pairs)
            }
            (_, json) => json,
        }
    }
}

/// A hash field named for the minute its value is of, a slot of a ring of minutes
/// (`#m:39` holding `<minute> <counts>`): the field with its slot marked,
/// `#m:{"clock": "slot"}`.
fn slot_field(field: &Json, value: &Json) -> Option<Json> {
    let of_minute = |value: &Json| value.get("clock") == Some(&json!("min"));
    let minute = of_minute(value)
        || value
            .get("text")
            .and_then(|pieces| pieces.get(0))
            .is_some_and(of_minute);
    let (head, slot) = field.as_str().filter(|_| minute)?.rsplit_once(':')?;
    (!slot.is_empty() && slot.bytes().all(|b| b.is_ascii_digit()))
        .then(|| json!({ "text": [format!("{head}:"), { "clock": "slot" }] }))
}

/// Pieces as JSON: a plain string, one marker, or `{"text": [...]}`.
fn joined(mut pieces: Vec<Json>) -> Json {
    if pieces.len() == 1 {
        pieces.pop().unwrap()
    } else {
        json!({ "text": pieces })
    }
}

/// A part of a text.
enum Piece<'t> {
    Text(&'t str),
    /// A unit (`ms`, `s`, `us`, `id`), the number read (an id's milliseconds), its text.
    Clock(&'static str, i128, &'t str),
    /// A token's number and its length in hex digits.
    Token(usize, usize),
}

impl From<Piece<'_>> for Json {
    fn from(piece: Piece) -> Json {
        match piece {
            Piece::Text(text) => json!(text),
            Piece::Clock(unit, _, _) => json!({ "clock": unit }),
            Piece::Token(n, width) => json!({ "token": n, "width": width }),
        }
    }
}

/// Whether `word` is a random token: 32 or 64 lowercase hex digits (128 or 256 random
/// bits), or 40 (a SHA1, as a script names a token it keeps), letters and digits both
/// among them (as random ones are, but for one in millions).
fn is_token(word: &str) -> bool {
    matches!(word.len(), 32 | 40 | 64)
        && word.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_lowercase())
}

/// The unit `n` is a reading of the server's clock in (ms, s, µs, or whole minutes since
/// the epoch), if it is within a day of `now_ms`.
fn clock_unit(n: i128, now_ms: u64) -> Option<&'static str> {
    let now = i128::from(now_ms);
    let day = i128::from(DAY_MS);
    [
        ("ms", now, day),
        ("s", now / 1000, day / 1000),
        ("us", now * 1000, day * 1000),
        ("min", now / 60_000, day / 60_000),
    ]
    .into_iter()
    .find(|(_, at, within)| (n - at).abs() <= *within)
    .map(|(unit, _, _)| unit)
}

fn server_now(con: &mut dyn redis::ConnectionLike) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(con).expect("TIME");
    secs * 1000 + micros / 1000
}

/// Every key with its type, whether it expires, and its contents.
fn read_keyspace(con: &mut dyn redis::ConnectionLike) -> Vec<(Vec<u8>, String, bool, Value)> {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    read_keys(con, &keys)
}

/// `keys` that exist, each with its type, whether it expires, and its contents.
fn read_keys<K: redis::ToRedisArgs>(
    con: &mut dyn redis::ConnectionLike,
    keys: &[K],
) -> Vec<(Vec<u8>, String, bool, Value)> {
    if keys.is_empty() {
        return Vec::new();
    }
    let mut pipe = redis::pipe();
    for key in keys {
        pipe.cmd("TYPE").arg(key).cmd("PTTL").arg(key);
    }
    let kinds: Vec<(String, i64)> = pipe.query(con).expect("TYPE and PTTL");
    let mut pipe = redis::pipe();
    for (key, (ty, _)) in keys.iter().zip(&kinds) {
        match ty.as_str() {
            "string" => pipe.cmd("GET").arg(key),
            "list" => pipe.cmd("LRANGE").arg(key).arg(0).arg(-1),
            "set" => pipe.cmd("SMEMBERS").arg(key),
            "zset" => pipe.cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES"),
            "hash" => pipe.cmd("HGETALL").arg(key),
            "stream" => pipe.cmd("XRANGE").arg(key).arg("-").arg("+"),
            // None: gone, or never there.
            _ => pipe.cmd("EXISTS").arg(key),
        };
    }
    let contents: Vec<Value> = pipe.query(con).expect("the keys' contents");
    keys.iter()
        .zip(kinds)
        .zip(contents)
        .filter(|((_, (ty, _)), _)| ty != "none")
        .map(|((key, (ty, pttl)), contents)| {
            (key.to_redis_args().concat(), ty, pttl >= 0, contents)
        })
        .collect()
}

/// A float as servers write it apart: Redis 7.0 in 17 digits (`0.10000000000000001`),
/// later ones in the fewest that read back the same, some with an exponent
/// (`1.257715548888889e+04`). Written in those fewest digits, with an exponent (as Rust
/// writes one: `2.2e-7`) only below 10^-5 or from 10^16.
fn shortest_float(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    if !text.contains(['.', 'e', 'E']) {
        return None;
    }
    let x: f64 = text.parse().ok().filter(|x: &f64| x.is_finite())?;
    let shortest = if x == 0.0 || (1e-5..1e16).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    };
    (shortest != text).then_some(shortest)
}

/// `bytes` read as one MessagePack map (what a script keeps with `cmsgpack.pack`), as
/// JSON: its keys sorted, as one server's Lua lays a table out and another's not.
fn msgpack(bytes: &[u8]) -> Option<Json> {
    fn read(bytes: &[u8], at: &mut usize) -> Option<Json> {
        let mut take = |n: usize| -> Option<&[u8]> {
            let slice = bytes.get(*at..*at + n)?;
            *at += n;
            Some(slice)
        };
        let be = |b: &[u8]| b.iter().fold(0u64, |n, &x| n << 8 | u64::from(x));
        let tag = take(1)?[0];
        let (kind, n) = match tag {
            0x00..=0x7f => return Some(json!(tag)),
            0xe0..=0xff => return Some(json!(tag as i8)),
            0xc0 => return Some(Json::Null),
            0xc2 | 0xc3 => return Some(json!(tag == 0xc3)),
            0xcb => return Some(json!(f64::from_bits(be(take(8)?)))),
            0xcc..=0xcf => return Some(json!(be(take(1 << (tag - 0xcc))?))),
            0xd0..=0xd3 => {
                let size = 1 << (tag - 0xd0);
                let raw = be(take(size)?);
                let shift = 64 - 8 * size as u32;
                return Some(json!(((raw << shift) as i64) >> shift));
            }
            0xa0..=0xbf => ("str", usize::from(tag & 0x1f)),
            0xd9..=0xdb => ("str", be(take(1 << (tag - 0xd9))?) as usize),
            0x90..=0x9f => ("array", usize::from(tag & 0x0f)),
            0xdc | 0xdd => ("array", be(take(2 << (tag - 0xdc))?) as usize),
            0x80..=0x8f => ("map", usize::from(tag & 0x0f)),
            0xde | 0xdf => ("map", be(take(2 << (tag - 0xde))?) as usize),
            _ => return None,
        };
        match kind {
            "str" => Some(json!(std::str::from_utf8(take(n)?).ok()?)),
            "array" => (0..n)
                .map(|_| read(bytes, at))
                .collect::<Option<Vec<_>>>()
                .map(Json::Array),
            _ => {
                let mut map = serde_json::Map::new();
                for _ in 0..n {
                    let Json::String(key) = read(bytes, at)? else {
                        return None;
                    };
                    map.insert(key, read(bytes, at)?);
                }
                Some(Json::Object(map))
            }
        }
    }
    let mut at = 0;
    let value = read(bytes, &mut at)?;
    (at == bytes.len() && value.is_object()).then_some(value)
}

/// Whether `args` is a blocking read (`XREAD BLOCK`, `BLPOP`...): one that times out
/// with nil is how a wait loop waits.
fn is_block(args: &[Vec<u8>]) -> bool {
    match command_name(args).as_str() {
        "XREAD" | "XREADGROUP" => args.iter().any(|a| a.eq_ignore_ascii_case(b"BLOCK")),
        name => matches!(
            name,
            "BLPOP" | "BRPOP" | "BZPOPMIN" | "BZPOPMAX" | "BLMPOP" | "BZMPOP"
        ),
    }
}

/// The one database where calls run again ([`Before`]), on the server the scenarios use,
/// taken in turns.
fn scratch() -> MutexGuard<'static, redis::Connection> {
    static SCRATCH: OnceLock<Mutex<redis::Connection>> = OnceLock::new();
    let scratch = SCRATCH.get_or_init(|| Mutex::new(crate::harness::fresh_db().con()));
    scratch
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How many times a script runs again: one whose reply may depend on the clock (it reads
/// `TIME` or a key's time to live) once, ≥ 2 ms later; one that picks at random (`SPOP`,
/// `SRANDMEMBER`) enough times that a pick among two or more shows, but for one time in
/// a million.
fn reruns(script: &redis_patterns::Script) -> usize {
    let reads = |commands: &[&str]| commands.iter().any(|c| script.source.contains(c));
    if reads(&[
        "SPOP",
        "SRANDMEMBER",
        "ZRANDMEMBER",
        "HRANDFIELD",
        "math.random",
    ]) {
        20
    } else if script.clock == Some(redis_patterns::Clock::Server) || reads(&["'PTTL'", "'TTL'"]) {
        1
    } else {
        0
    }
}

/// Whether a script's list replies may come in any order: those it reads from a set,
/// whose order a server leaves to its hash table (Redis 7.0 for any set of text).
fn reads_sets(script: &redis_patterns::Script) -> bool {
    ["SMEMBERS", "SINTER", "SUNION", "SDIFF", "SSCAN"]
        .iter()
        .any(|command| script.source.contains(command))
}

/// Writes the lists of texts in `json` that its header type `ty` (spaces taken out)
/// declares as `{"unordered": [...]}`, sorted.
fn unordered_lists(ty: &str, json: &mut Json) {
    if let Some(inner) = ty.strip_suffix('?') {
        if !json.is_null() {
            unordered_lists(inner, json);
        }
    } else if let Some(inner) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        if let (true, Json::Array(items)) = (matches!(inner, "string" | "bytes"), &mut *json) {
            items.sort_by_key(Json::to_string);
            *json = json!({ "unordered": items });
        }
    } else if let Some(inner) = ty.strip_prefix('(').and_then(|t| t.strip_suffix(')'))
        && let Json::Array(items) = json
    {
        for (ty, item) in crate::harness::tuple_types(inner).into_iter().zip(items) {
            unordered_lists(ty, item);
        }
    }
}

/// The keys of a script call as they were before it ran: each key's `DUMP` and absolute
/// expiry (`PEXPIRETIME`), to run the call again on a copy (in [`scratch`]) and see which
/// parts of its reply differ, the parts that depend on the clock or on a random pick.
struct Before {
    script: &'static redis_patterns::Script,
    keys: Vec<(Vec<u8>, Option<Vec<u8>>, i64)>,
}

/// Where a reply differed when its call ran again.
enum Differences {
    None,
    /// The marker to put at these places of the reply.
    At(Json, Vec<Vec<usize>>),
    /// The call wrote something else: it picked at random.
    Keyspace,
}

impl Before {
    /// The state a lone script call that may answer otherwise another time runs on.
    fn read(con: &mut dyn redis::ConnectionLike, args: &[Vec<u8>]) -> Option<Before> {
        let Call::Script { name, keys, .. } = classify(args) else {
            return None;
        };
        let script = redis_patterns::catalog::find(name).unwrap();
        if reruns(script) == 0 {
            return None;
        }
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("DUMP").arg(key).cmd("PEXPIRETIME").arg(key);
        }
        let read: Vec<(Option<Vec<u8>>, i64)> = pipe.query(con).expect("DUMP and PEXPIRETIME");
        let keys = keys
            .into_iter()
            .zip(read)
            .map(|(key, (dump, at))| (key, dump, at))
            .collect();
        Some(Before { script, keys })
    }

    /// Runs `args` again on a copy of the keys, as often as [`reruns`] says, and compares
    /// each reply (and, where it differs, the keys after) with what the call answered.
    fn differences(
        &self,
        con: &mut dyn redis::ConnectionLike,
        args: &[Vec<u8>],
        reply: &Value,
    ) -> Differences {
        let names: Vec<&[u8]> = self.keys.iter().map(|(key, _, _)| key.as_slice()).collect();
        let mut scratch = scratch();
        let mut paths = Vec::new();
        let mut after: Option<Vec<Json>> = None;
        let ready_at = server_now(con) + 2;
        for _ in 0..reruns(self.script) {
            redis::cmd("FLUSHDB").exec(&mut *scratch).expect("FLUSHDB");
            for (key, dump, at) in &self.keys {
                if let Some(dump) = dump {
                    let ttl = (*at).max(0);
                    redis::cmd("RESTORE")
                        .arg(key)
                        .arg(ttl)
                        .arg(dump)
                        .arg("ABSTTL")
                        .exec(&mut *scratch)
                        .expect("RESTORE");
                }
            }
            while server_now(&mut *scratch) < ready_at {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let packed = redis::cmd(&String::from_utf8_lossy(&args[0]))
                .arg(&args[1..])
                .get_packed_command();
            let again = redis::ConnectionLike::req_packed_command(&mut *scratch, &packed)
                .expect("the call again");
            let before = paths.len();
            differing(reply, &again, &mut Vec::new(), &mut paths);
            if paths.len() > before && !self.random() {
                continue;
            }
            if paths.len() > before {
                let now = ready_at;
                let real = after.get_or_insert_with(|| clock_blind(&read_keys(con, &names), now));
                if *real != clock_blind(&read_keys(&mut *scratch, &names), now) {
                    return Differences::Keyspace;
                }
            }
        }
        paths.sort();
        paths.dedup();
        if paths.is_empty() {
            return Differences::None;
        }
        let marker = if self.random() {
            json!({ "random": "pick" })
        } else {
            json!({ "clock": "span" })
        };
        Differences::At(marker, paths)
    }

    fn random(&self) -> bool {
        reruns(self.script) > 1
    }
}

/// The places where `b` differs from `a`: the leaves, or an array of another length.
fn differing(a: &Value, b: &Value, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                path.push(i);
                differing(x, y, path, out);
                path.pop();
            }
        }
        _ if a == b => {}
        _ => out.push(path.clone()),
    }
}

/// Puts `marker` at `path` of `json`, unless a clock marker is there already.
fn mark(json: &mut Json, path: &[usize], marker: &Json) {
    let mut at = json;
    for &i in path {
        match at {
            Json::Array(items) => at = &mut items[i],
            _ => return,
        }
    }
    if at.get("clock").is_none() {
        *at = marker.clone();
    }
}

/// Keys as [`read_keys`] reads them, as written but for tokens and clock readings (`now`
/// is the server's clock): what differs then is what the call wrote.
fn clock_blind(keys: &[(Vec<u8>, String, bool, Value)], now_ms: u64) -> Vec<Json> {
    let mut state = State::default();
    keys.iter()
        .map(|(key, ty, expires, contents)| {
            json!([hex(key), ty, expires, state.contents(ty, contents, now_ms)])
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file: the steps, one a line (two with its keyspace), for diffs that read well.
fn render(name: &str, one_minute: bool, steps: &[Step]) -> String {
    let mut out = format!("{{\n  \"scenario\": {},\n", json!(name));
    if one_minute {
        out.push_str("  \"within_one_minute\": true,\n");
    }
    out.push_str("  \"steps\": [\n");
    for (i, step) in steps.iter().enumerate() {
        let mut step = step.clone();
        let keyspace = step.keyspace.take();
        let mut line = serde_json::to_string(&step).unwrap();
        if let Some(keyspace) = keyspace {
            line.pop();
            let keyspace = serde_json::to_string(&keyspace).unwrap();
            line.push_str(&format!(",\n     \"keyspace\": {keyspace}}}"));
        }
        let comma = if i + 1 < steps.len() { "," } else { "" };
        out.push_str(&format!("    {line}{comma}\n"));
    }
    out.push_str("  ]\n}\n");
    out
}
