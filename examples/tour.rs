//! A walk through every finished pattern: each call, what it returned, and why.
//!
//! ```sh
//! cargo run --example tour                          # the Redis at 127.0.0.1:6379
//! REDIS_URL=redis://127.0.0.1:6379/15 cargo run --example tour   # another
//! ```
//!
//! With no Redis running, `redis-server --daemonize yes` starts one (Debian: `apt-get install redis-server`). It writes only keys whose names start with `tour:` or `{tour:`
//! (and `Chat:tour:` and `User:tour:`, as a chat's key is `Chat:<broadcaster>` and the
//! book's session key is `User:<uid>:token`), and deletes them at the
//! end (found with SCAN, never KEYS).

use std::fmt::Debug;
use std::time::Duration;

use redis_patterns::app_config::{Configs, Maintenance};
use redis_patterns::app_log::{AppLog, Severity};
use redis_patterns::autocomplete::Autocomplete;
use redis_patterns::barrier::Barrier;
use redis_patterns::binary_recorder::BinaryRecorder;
use redis_patterns::circular_queue::{CircularQueue, UniqueCircularQueue};
use redis_patterns::compact_string::CompactString;
use redis_patterns::counter::{CompactCounter, Counter, HashCounter, Overflow, Width};
use redis_patterns::fair_lock::FairLock;
use redis_patterns::fenced_lock::FencedLock;
use redis_patterns::fenced_write::FencedResource;
use redis_patterns::fifo_queue::{FifoQueue, ReversedFifoQueue};
use redis_patterns::fixed_length_queue::{FadedQueue, FixedLengthQueue};
use redis_patterns::geo::Location;
use redis_patterns::id_generator::{HashIdGenerator, IdGenerator};
use redis_patterns::identity_lock::IdentityLock;
use redis_patterns::ip_city::{City, IpBlock, IpCities, ip_to_score};
use redis_patterns::latch::Latch;
use redis_patterns::leaderboard::{Leaderboard, RankPolicy};
use redis_patterns::lock::{AutoReleaseLock, Lock};
use redis_patterns::log::Log;
use redis_patterns::logical_matrix::{CompactLogicalMatrix, LogicalMatrix};
use redis_patterns::lottery::Lottery;
use redis_patterns::matrix::{BitmapMatrix, ListMatrix, Matrix};
use redis_patterns::online_friends::{LastSeen, MinuteSets};
use redis_patterns::page_cache::PageCache;
use redis_patterns::pagination::Paging;
use redis_patterns::priority_queue::PriorityQueue;
use redis_patterns::rate_limiter::{GcraLimiter, Limiter, RateLimiter, SlidingWindowLimiter};
use redis_patterns::relation::Relations;
use redis_patterns::resource_pool::ResourcePool;
use redis_patterns::row_cache::RowCache;
use redis_patterns::rw_lock::RwLock;
use redis_patterns::semaphore::{Order, Semaphore};
use redis_patterns::server::{Capability, Server};
use redis_patterns::session::{Session, SessionStore};
use redis_patterns::short_url::{LinkOptions, UrlShorty, base62};
use redis_patterns::stack::Stack;
use redis_patterns::stats::Stats;
use redis_patterns::tag::Tags;
use redis_patterns::time_series::TimeSeries;
use redis_patterns::timeline::Timeline;
use redis_patterns::unique_counter::{HllUniqueCounter, UniqueCounter};
use redis_patterns::user_login::UserLogin;
use redis_patterns::vote::Votes;
use redis_patterns::web_session::WebSessions;
use redis_patterns::work_queue::{Backoff, Job, JobOptions, Limits, Settings, State, WorkQueue};
use redis_patterns::{Batch, Op, catalog, wait};

/// The widest call column; a longer call gets its result on the next line.
const MAX_CALL_WIDTH: usize = 44;
/// The widest line before a note moves to a line of its own.
const MAX_LINE_WIDTH: usize = 100;

/// One line of a section, printed when the section ends so that its columns fit its calls.
enum Row {
    /// A call, what it returned, and why when that is not obvious.
    Call {
        call: String,
        result: String,
        note: String,
    },
    /// A line of its own: what happens between calls.
    Text(String),
}

/// The connection, and the rows of the section being shown.
struct Tour {
    con: redis::Connection,
    rows: Vec<Row>,
}

impl Tour {
    /// Runs `op` and shows the call, its result and `note` (may be empty); returns the
    /// result.
    fn show<T: Debug + 'static>(
        &mut self,
        call: &str,
        note: &str,
        op: Op<T>,
    ) -> redis_patterns::Result<T> {
        let result = op.run(&mut self.con);
        let shown = match &result {
            Ok(value) => format!("{value:?}"),
            Err(err) => format!("error: {err}"),
        };
        self.say(call, shown, note);
        result
    }

    /// Shows a call made without an `Op`, and what it gave.
    fn say(&mut self, call: &str, result: impl Into<String>, note: &str) {
        self.rows.push(Row::Call {
            call: call.to_owned(),
            result: result.into(),
            note: note.to_owned(),
        });
    }

    /// Shows a line of its own.
    fn text(&mut self, line: impl Into<String>) {
        self.rows.push(Row::Text(line.into()));
    }

    /// Prints the rows shown so far, then starts a section: a title, and what it is about.
    fn section(&mut self, title: &str, about: &str) {
        self.flush();
        println!("\n{title}");
        for line in about.lines() {
            println!("  {line}");
        }
    }

    /// Prints the rows shown so far: calls in a column as wide as the longest (up to
    /// `MAX_CALL_WIDTH`), results after an arrow, notes after the results or, when the
    /// line would be too long, under them.
    fn flush(&mut self) {
        let width = self
            .rows
            .iter()
            .filter_map(|row| match row {
                Row::Call { call, .. } => Some(call.chars().count()),
                Row::Text(_) => None,
            })
            .filter(|&len| len <= MAX_CALL_WIDTH)
            .max()
            .unwrap_or(0);
        // Where results start: the indent, the call column, and " → ".
        let result_column = 4 + width + 3;
        for row in self.rows.drain(..) {
            match row {
                Row::Text(line) => println!("    {line}"),
                Row::Call { call, result, note } => {
                    let mut line = if call.chars().count() > width {
                        format!("    {call}\n{:result_column$}", "")
                    } else {
                        format!("    {call:<width$}   ")
                    };
                    line.push_str(&format!("→ {result}"));
                    let last_line = line.rsplit('\n').next().unwrap_or("");
                    if !note.is_empty() {
                        if last_line.chars().count() + note.chars().count() + 4 <= MAX_LINE_WIDTH {
                            line.push_str(&format!("  ({note})"));
                        } else {
                            line.push_str(&format!("\n{:result_column$}  ({note})", ""));
                        }
                    }
                    println!("{line}");
                }
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let con = redis::Client::open(url.as_str())?
        .get_connection()
        .map_err(|err| format!("no Redis answers at {url} ({err}): start one with `redis-server --daemonize yes`, or set REDIS_URL"))?;
    let mut tour = Tour {
        con,
        rows: Vec::new(),
    };
    println!("redis-patterns tour, on {url}");
    println!(
        "  it writes only keys named tour:…, {{tour:…, Chat:tour:…, User:tour:…, recent:{{tour:… or common:{{tour:…, and deletes them at the end"
    );
    println!("  Each line shows a call → what it returned  (and why, when that is not obvious).");
    println!(
        "  \"ch. N\" is a chapter of 《Redis 应用实例》 (huangz); the README names every source."
    );
    let t = &mut tour;

    locks(t)?;
    latch_and_barrier(t)?;
    id_generator(t)?;
    matrix(t)?;
    logical_matrix(t)?;
    counters(t)?;
    keyspace(t)?;
    stream_iterator(t)?;
    message_queue(t)?;
    cache(t)?;
    rate_limiter(t)?;
    queues(t)?;
    log(t)?;
    unique_counter(t)?;
    binary_recorder(t)?;
    compact_string(t)?;
    resource_pool(t)?;
    tags(t)?;
    autocomplete(t)?;
    lottery(t)?;
    relations(t)?;
    session(t)?;
    pagination(t)?;
    timeline(t)?;
    votes(t)?;
    leaderboard(t)?;
    short_url(t)?;
    geo(t)?;
    user_login(t)?;
    online_friends(t)?;
    work_queue(t)?;
    web_app(t)?;
    ip_city(t)?;
    app_config(t)?;
    time_series(t)?;
    stats(t)?;
    app_log(t)?;
    batch(t)?;
    catalogue(t);

    let deleted = delete_tour_keys(&mut t.con)?;
    println!("\nDeleted the {deleted} keys the tour wrote.");
    Ok(())
}

/// Deletes every key whose name starts with `tour:`, `{tour:`, `Chat:tour:`,
/// `User:tour:`, `recent:{tour:` or `common:{tour:`, a SCAN
/// batch at a time: each call does bounded work, however many keys the server holds.
fn delete_tour_keys(con: &mut redis::Connection) -> redis::RedisResult<u64> {
    let mut deleted = 0;
    for pattern in [
        "tour:*",
        "{tour:*",
        "Chat:tour:*",
        "User:tour:*",
        "recent:{tour:*",
        "common:{tour:*",
    ] {
        let mut cursor = 0_u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000)
                .query(con)?;
            // SCAN may return a key twice; DEL counts only the keys it removed.
            if !keys.is_empty() {
                deleted += redis::cmd("DEL").arg(&keys).query::<u64>(con)?;
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok(deleted)
}

fn locks(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Lock and AutoReleaseLock (ch. 3): one native command each; the lock knows no owner",
        "Anyone can release it. AutoReleaseLock adds a lease: Redis frees the lock when it ends.",
    );
    let lock = Lock::new("tour:lock")?;
    t.show("lock.acquire()", "", lock.acquire())?;
    t.show(
        "lock.acquire()",
        "already held: acquire tries once, it does not wait",
        lock.acquire(),
    )?;
    t.show("lock.release()", "", lock.release())?;
    let auto = AutoReleaseLock::new("tour:auto_lock")?;
    t.show(
        "auto.acquire(100 ms)",
        "held, with a 100 ms lease",
        auto.acquire(Duration::from_millis(100)),
    )?;
    std::thread::sleep(Duration::from_millis(150));
    t.text("150 ms pass; nobody releases the lock");
    t.show(
        "auto.acquire(10 s)",
        "free again: Redis ended the 100 ms lease",
        auto.acquire(Duration::from_secs(10)),
    )?;

    t.section(
        "IdentityLock (ch. 4): only the holder's token releases or extends it",
        "Release, extend and lease are one script each; the book's release \
         (WATCH/GET/MULTI/DEL)\ngives up when another client touches the key.",
    );
    let lock = IdentityLock::new("tour:identity_lock")?;
    let token = IdentityLock::random_token();
    t.say(
        "token = IdentityLock::random_token()",
        format!("{token:?}"),
        "the holder's secret: 128 random bits",
    );
    t.show(
        "lock.acquire(&token, Some(30 s))",
        "held for 30 s",
        lock.acquire(&token, Some(Duration::from_secs(30))),
    )?;
    t.show(
        "lock.release(\"guess\")",
        "not the holder's token: the lock stays held",
        lock.release("guess"),
    )?;
    t.show(
        "lock.extend(&token, 60 s)",
        "the lease now ends 60 s from now",
        lock.extend(&token, Duration::from_secs(60)),
    )?;
    t.show(
        "lock.lease(&token)",
        "how long the lock stays held",
        lock.lease(&token),
    )?;
    t.show("lock.release(&token)", "", lock.release(&token))?;
    let _ = t.show(
        "lock.release(\"\")",
        "refused before anything is sent to Redis",
        lock.release(""),
    );
    let server = Server::probe(&mut t.con)?;
    t.say(
        "server = Server::probe(&mut con)",
        server.to_string(),
        "what the server is and can do, read once per client",
    );
    let lock = lock.with_server(&server);
    t.show(
        "lock.acquire(&token, None)",
        "a lock built .with_server(&server)",
        lock.acquire(&token, None),
    )?;
    t.show(
        "lock.release(&token)",
        if server.supports(Capability::DeleteIfEqual) {
            "the server's own DELIFEQ: no script"
        } else {
            "this server has no DELIFEQ: the script"
        },
        lock.release(&token),
    )?;

    t.section(
        "FencedLock (beyond the books): each acquisition gets a larger fencing token",
        "Send the token with every write to the resource the lock protects: if it refuses \
         tokens\nlower than the highest it has seen, a holder whose lease ran out cannot \
         overwrite the next\nholder's work.",
    );
    let lock = FencedLock::new("tour:fenced_lock")?;
    let first = t.show(
        "lock.acquire(100 ms)",
        "the first holder's token",
        lock.acquire(Duration::from_millis(100)),
    )?;
    std::thread::sleep(Duration::from_millis(150));
    t.text("150 ms pass: the first holder's lease runs out while it is paused");
    let second = t.show(
        "lock.acquire(30 s)",
        "a second holder: its token is larger",
        lock.acquire(Duration::from_secs(30)),
    )?;
    if let (Some(first), Some(second)) = (first, second) {
        t.show(
            &format!("lock.release({first})"),
            "the first holder's token: the lock is no longer its own",
            lock.release(first),
        )?;
        t.show(
            &format!("lock.release({second})"),
            "the current holder's token",
            lock.release(second),
        )?;
        let report = FencedResource::new("tour:fenced_report")?;
        t.show(
            &format!("report.set({second}, \"final\", None)"),
            "the second holder writes: the highest token seen before",
            report.set(second, "final", None),
        )?;
        let _ = t.show(
            &format!("report.set({first}, \"stale\", None)"),
            "the paused holder's write is refused: STALE_TOKEN",
            report.set(first, "stale", None),
        );
    }

    t.section(
        "RwLock (beyond the books): many readers or one writer, each under a lease",
        "Holds are counted per caller token; a waiting writer stops new readers; a write hold \
         returns\na fencing token; a refused attempt says which stream to block on, and for how long.",
    );
    let rw = RwLock::new("tour:rw_lock")?;
    let (reader, writer) = (RwLock::random_token(), RwLock::random_token());
    let lease = Duration::from_secs(30);
    t.show(
        "rw.try_read(reader)",
        "a read hold: Done(1)",
        rw.try_read(&reader, lease),
    )?;
    t.show(
        "rw.try_write(writer)",
        "NotYet: the writer waits, and holds a place that keeps new readers out",
        rw.try_write(&writer, lease),
    )?;
    t.show(
        "rw.release_read(reader)",
        "holds left: Some(0)",
        rw.release_read(&reader),
    )?;
    t.show(
        "rw.try_write(writer)",
        "the write hold: Done(fencing token)",
        rw.try_write(&writer, lease),
    )?;
    t.show(
        "rw.downgrade(writer)",
        "now a read hold, with no writer between",
        rw.downgrade(&writer, lease),
    )?;
    t.show("rw.release_read(writer)", "", rw.release_read(&writer))?;

    t.section(
        "FairLock (beyond the books): first come, first served, under leased places",
        "Each attempt renews the waiter's place; a waiter that dies loses it within one place \
         lease.",
    );
    let fair = FairLock::new("tour:fair_lock")?;
    let (first, second) = (FairLock::random_token(), FairLock::random_token());
    t.show(
        "fair.try_acquire(first)",
        "Done(fencing token)",
        fair.try_acquire(&first, lease),
    )?;
    t.show(
        "fair.try_acquire(second)",
        "NotYet: second queues",
        fair.try_acquire(&second, lease),
    )?;
    t.show("fair.release(first)", "", fair.release(&first))?;
    t.show(
        "fair.try_acquire(second)",
        "second's turn: Done(the next fencing token)",
        fair.try_acquire(&second, lease),
    )?;
    t.show("fair.release(second)", "", fair.release(&second))?;
    Ok(())
}

fn latch_and_barrier(t: &mut Tour) -> redis_patterns::Result<()> {
    // A try as the tour shows it: done, or what the waiter would block on.
    fn shown<T: Debug + 'static>(op: Op<wait::Attempt<T>>) -> Op<String> {
        op.map(|attempt| {
            Ok(match attempt {
                wait::Attempt::Done(value) => format!("Done({value:?})"),
                wait::Attempt::NotYet(wake) => format!("NotYet: block on {}", wake.key),
            })
        })
    }
    t.section(
        "Latch (beyond the books): a countdown latch with generations",
        "Each arm starts a new generation; a waiter asks about the generation it saw, so it\n\
         learns that it opened even after the latch was armed again. A latch nobody armed is\n\
         never open.",
    );
    let latch = Latch::new("tour:latch")?;
    t.show("latch.state()", "nobody armed it: not open", latch.state())?;
    t.show("latch.arm(2, None)", "generation 1", latch.arm(2, None))?;
    t.show(
        "latch.count_down(Some(\"a\"))",
        "one left",
        latch.count_down(Some("a")),
    )?;
    t.show(
        "latch.count_down(Some(\"a\"))",
        "resent: counts once",
        latch.count_down(Some("a")),
    )?;
    t.show(
        "latch.try_wait(Some(1))",
        "closed",
        shown(latch.try_wait(Some(1))),
    )?;
    t.show(
        "latch.count_down(Some(\"b\"))",
        "opens it, wakes every waiter",
        latch.count_down(Some("b")),
    )?;
    t.show("latch.arm(1, None)", "generation 2", latch.arm(1, None))?;
    t.show(
        "latch.try_wait(Some(1))",
        "generation 1 opened, all the same",
        shown(latch.try_wait(Some(1))),
    )?;

    t.section(
        "Barrier (beyond the books): a cyclic barrier whose parties hold leases",
        "The last of n parties releases them all; a party whose lease runs out (it crashed)\n\
         breaks the generation for every waiter instead of hanging it.",
    );
    let barrier = Barrier::new("tour:barrier", 2)?;
    let (a, b) = (barrier.party(), barrier.party());
    let lease = Duration::from_secs(10);
    t.show(
        "barrier.try_arrive(&a, 10 s)",
        "waits",
        shown(barrier.try_arrive(&a, lease)),
    )?;
    t.show(
        "barrier.try_arrive(&b, 10 s)",
        "the second party: released",
        shown(barrier.try_arrive(&b, lease)),
    )?;
    t.show(
        "barrier.try_arrive(&a, 10 s)",
        "a asks again: released too",
        shown(barrier.try_arrive(&a, lease)),
    )?;
    t.show(
        "barrier.try_arrive(&a, 10 s)",
        "generation 2",
        shown(barrier.try_arrive(&a, lease)),
    )?;
    t.show(
        "barrier.leave(&a)",
        "a gives up: generation 2 breaks",
        barrier.leave(&a),
    )?;
    t.show("barrier.state()", "ready for generation 3", barrier.state())?;
    Ok(())
}

fn id_generator(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "IdGenerator (ch. 5; the 2011 cookbook's Auid): ids that never repeat",
        "produce is INCR; reserve (SET NX) makes ids start after those already in use elsewhere.",
    );
    let ids = IdGenerator::new("tour:user_id")?;
    t.show(
        "ids.reserve(10000)",
        "ids up to 10000 are kept, e.g. for imported users",
        ids.reserve(10_000),
    )?;
    t.show(
        "ids.produce()",
        "the first id after the reserved ones",
        ids.produce(),
    )?;
    t.show(
        "ids.reserve(5)",
        "refused: ids were produced, and reserving now could repeat one",
        ids.reserve(5),
    )?;
    let hashed = HashIdGenerator::new("tour:ids")?;
    t.show(
        "hashed.produce(\"post\")",
        "HashIdGenerator: one counter per name, all in one hash",
        hashed.produce("post"),
    )?;
    Ok(())
}

fn matrix(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Matrices (ch. 31): ListMatrix (a list per row), BitmapMatrix (a BITFIELD string per \
         row),\nMatrix (one BITFIELD string for the whole matrix)",
        "init is one script, all or nothing. Rows and columns count from 0; every index and \
         value\nis checked before any I/O.",
    );
    let cells = [vec![1, 2, 3], vec![4, 5, 6]];
    t.text("cells = [[1, 2, 3], [4, 5, 6]]");
    let list = ListMatrix::new("tour:{list_matrix}", 2, 3)?;
    t.show(
        "list.init(Some(&cells))",
        "a 2 × 3 matrix",
        list.init(Some(&cells)),
    )?;
    let _ = t.show(
        "list.init(None)",
        "the matrix exists: refused, nothing written",
        list.init(None),
    );
    t.show(
        "list.set(1, 1, -50)",
        "row 1, column 1",
        list.set(1, 1, -50),
    )?;
    t.show(
        "list.get_all()",
        "one consistent read; None when there is no matrix",
        list.get_all(),
    )?;
    let bitmap = BitmapMatrix::new("tour:{bitmap_matrix}", 2, 3, Width::U8)?;
    t.show(
        "bitmap.init(None)",
        "u8 cells; None: all 0",
        bitmap.init(None),
    )?;
    t.show("bitmap.set(0, 2, 255)", "", bitmap.set(0, 2, 255))?;
    let _ = t.show(
        "bitmap.set(0, 2, 256)",
        "256 is not a u8",
        bitmap.set(0, 2, 256),
    );
    t.show("bitmap.get_row(0)", "", bitmap.get_row(0))?;
    let matrix = Matrix::new("tour:matrix", 2, 3, Width::I16)?;
    t.show(
        "matrix.init(Some(&cells))",
        "i16 cells",
        matrix.init(Some(&cells)),
    )?;
    t.show(
        "matrix.set(1, 2, -7)",
        "answers the value it replaced",
        matrix.set(1, 2, -7),
    )?;
    let _ = t.show(
        "matrix.get(0, 3)",
        "the columns are 0 to 2",
        matrix.get(0, 3),
    );
    t.show("matrix.get_all()", "", matrix.get_all())?;
    Ok(())
}

fn logical_matrix(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Logical matrices (ch. 32): LogicalMatrix (a bitmap per row), CompactLogicalMatrix \
         (one bitmap)",
        "init writes packed bitmaps; rows are read as bytes and decoded in Rust.\n\
         `cargo run --example matrix_memory` measures the memory each form takes.",
    );
    let cells = [vec![true, false, true], vec![false, true, false]];
    t.text("cells = [[true, false, true], [false, true, false]]");
    let rows = LogicalMatrix::new("tour:{logical_matrix}", 2, 3)?;
    t.show("rows.init(Some(&cells))", "", rows.init(Some(&cells)))?;
    t.show("rows.set(1, 2, true)", "", rows.set(1, 2, true))?;
    t.show("rows.get_all()", "", rows.get_all())?;
    let compact = CompactLogicalMatrix::new("tour:compact_logical_matrix", 2, 3)?;
    t.show("compact.init(Some(&cells))", "", compact.init(Some(&cells)))?;
    t.show("compact.get_row(1)", "", compact.get_row(1))?;
    let _ = t.show(
        "compact.get(0, 3)",
        "no column 3; the book's code checks nothing, and would read row 1, column 0",
        compact.get(0, 3),
    );
    Ok(())
}

fn counters(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Counters (ch. 6; the 2011 cookbook's counters)",
        "Counter: a string. HashCounter: a field of a hash; its reset is one script that \
         refuses\nto overwrite a field that holds no integer. CompactCounter: small counters \
         packed in one\nstring (BITFIELD), each with an overflow policy.",
    );
    let views = Counter::new("tour:views")?;
    t.show("views.increase(10)", "", views.increase(10))?;
    t.show(
        "views.reset(0)",
        "answers the value it replaced",
        views.reset(0),
    )?;
    let likes = HashCounter::new("tour:post:7", "likes")?;
    t.show(
        "likes.increase(3)",
        "the field `likes` of the hash tour:post:7",
        likes.increase(3),
    )?;
    t.show(
        "likes.reset(0)",
        "answers the value it replaced",
        likes.reset(0),
    )?;
    t.text(
        "wrap, sat, fail: three u8 counters (0 to 255) in the string tour:compact, one per policy",
    );
    for (name, overflow, note) in [
        (
            "wrap",
            Overflow::Wrap,
            "Overflow::Wrap: 300 wraps to 300 - 256",
        ),
        ("sat", Overflow::Sat, "Overflow::Sat: stops at 255"),
        ("fail", Overflow::Fail, "Overflow::Fail: refused"),
    ] {
        let index = overflow as u64;
        let counter = CompactCounter::new("tour:compact", index, Width::U8, overflow)?;
        let _ = t.show(
            &format!("{name}.increase(300)"),
            note,
            counter.increase(300),
        );
    }
    Ok(())
}

fn keyspace(t: &mut Tour) -> redis_patterns::Result<()> {
    use redis_patterns::keyspace::{DbIterator, DbSampler, KeyType, RandomKeyGenerator};

    t.section(
        "Keyspace (ch. 12): walk the keys with SCAN, a batch per call; sample their types",
        "Several round trips by nature. A key may come twice; every key that exists for the \
         whole\nwalk comes at least once.",
    );
    let keys = RandomKeyGenerator::new("tour:keys", 42).generate(&mut t.con, 30)?;
    let (first, first_type) = &keys[0];
    t.say(
        "RandomKeyGenerator::new(\"tour:keys\", 42).generate(30)",
        format!(
            "{} keys; the first: {first:?}, a {first_type:?}",
            keys.len()
        ),
        "random types, from seed 42",
    );
    t.text("it = DbIterator::new(10).matching(\"tour:keys:*\")");
    let mut it = DbIterator::new(10).matching("tour:keys:*");
    let mut note = "one SCAN; its COUNT 10 is a hint, so batch sizes vary";
    while let Some(batch) = it.next(&mut t.con)? {
        let keys = if batch.len() == 1 { "key" } else { "keys" };
        t.say("it.next()", format!("{} {keys}", batch.len()), note);
        note = "";
    }
    let done = it.next(&mut t.con)?;
    t.say("it.next()", format!("{done:?}"), "the walk is done");
    let lists = DbIterator::new(10)
        .matching("tour:keys:*")
        .of_type(KeyType::List)
        .keys(&mut t.con)
        .collect::<redis_patterns::Result<Vec<_>>>()?;
    t.say(
        "DbIterator…of_type(KeyType::List).keys()",
        format!("{} lists", lists.len()),
        "the TYPEs of each batch, pipelined",
    );
    let mut sampler = DbSampler::from_iterator(DbIterator::new(10).matching("tour:keys:*"));
    while sampler.sample(&mut t.con)?.is_some() {}
    let mut call = "sampler.stats()";
    for line in sampler.stats().to_string().lines() {
        t.say(call, line, "");
        call = "";
    }
    Ok(())
}

fn stream_iterator(t: &mut Tour) -> redis_patterns::Result<()> {
    use redis_patterns::stream_iterator::{Block, XrangeIterator, XreadIterator};

    t.section(
        "Stream iterators (ch. 13): XrangeIterator (XRANGE), XreadIterator (XREAD, may wait)",
        "One command per batch, from a cursor: entries added between calls are picked up.",
    );
    let _: () = redis::cmd("DEL").arg("tour:stream").query(&mut t.con)?;
    for n in 1..=5 {
        let _: () = redis::cmd("XADD")
            .arg("tour:stream")
            .arg(format!("{n}-1"))
            .arg("reading")
            .arg(n * 10)
            .query(&mut t.con)?;
    }
    t.text("the stream tour:stream holds 5 entries, ids 1-1 to 5-1, readings 10 to 50");
    let mut it = XrangeIterator::new("tour:stream");
    for _ in 0..3 {
        let ids: Vec<String> = it
            .next(&mut t.con, 2)?
            .iter()
            .map(|e| e.id.to_string())
            .collect();
        let cursor = it.cursor();
        let after = cursor.trim_start_matches('(');
        t.say(
            "it.next(2)",
            format!("{ids:?}"),
            &format!("cursor {cursor:?}: the next XRANGE starts after {after}"),
        );
    }
    let mut reader = XreadIterator::new("tour:stream");
    reader.rewind_to("4-1")?;
    t.say(
        "reader.rewind_to(\"4-1\")",
        "Ok(())",
        "moves the cursor; no I/O",
    );
    let fresh = reader.next(&mut t.con, 10, Some(Duration::from_millis(100)))?;
    let readings: Vec<_> = fresh.iter().filter_map(|e| e.get_str("reading")).collect();
    t.say(
        "reader.next(10, Some(100 ms))",
        format!("{readings:?}"),
        "the readings after 4-1: only entry 5-1's",
    );
    let none = reader.next(&mut t.con, 10, Some(Duration::from_millis(100)))?;
    t.say(
        "reader.next(10, Some(100 ms))",
        format!("{none:?}"),
        "waited 100 ms: no entry was added",
    );
    let bad = reader.rewind_to("abc").unwrap_err();
    t.say(
        "reader.rewind_to(\"abc\")",
        format!("error: {bad}"),
        "no I/O",
    );
    let mut live = XreadIterator::from_now("tour:stream");
    t.say(
        "let mut live = XreadIterator::from_now(..)",
        format!("cursor {:?}", live.cursor()),
        "\"now\" is resolved on the first read",
    );
    let none = live.next(&mut t.con, 10, None)?;
    let cursor = live.cursor().map(|id| id.to_string());
    t.say(
        "live.next(10, None)",
        format!("{none:?}"),
        &format!("cursor {cursor:?}: the newest entry, once (XREVRANGE + - COUNT 1)"),
    );
    let _: () = redis::cmd("XADD")
        .arg("tour:stream")
        .arg("6-1")
        .arg("reading")
        .arg(60)
        .query(&mut t.con)?;
    t.text("XADD tour:stream 6-1 reading 60, between two reads");
    let fresh = live.next(&mut t.con, 10, Block::Forever)?;
    let readings: Vec<_> = fresh.iter().filter_map(|e| e.get_str("reading")).collect();
    t.say(
        "live.next(10, Block::Forever)",
        format!("{readings:?}"),
        "waits in 250 ms XREAD BLOCKs until an entry comes; none is missed",
    );
    Ok(())
}

/// Message queues and live comments (ch. 14): fan-out over one stream.
fn message_queue(t: &mut Tour) -> redis_patterns::Result<()> {
    use redis_patterns::message_queue::{Chat, DEFAULT_COUNT, MessageQueue};
    use redis_patterns::stream_iterator::{Block, StreamEntry};

    t.section(
        "Message queue and live comments (ch. 14): MessageQueue, Chat",
        "A stream; each receiver reads every message from a cursor of its own (fan-out, no acks).\n\
         A Chat is the stream Chat:<broadcaster>, trimmed with MAXLEN ~; a viewer sees what comes after it joins.",
    );
    let _: () = redis::cmd("DEL")
        .arg("tour:mq")
        .arg("Chat:tour:peter")
        .query(&mut t.con)?;
    fn texts(batch: &[StreamEntry]) -> Vec<String> {
        batch
            .iter()
            .map(|e| e.get_str("text").unwrap_or("?").to_owned())
            .collect()
    }
    let mut mq = MessageQueue::new("tour:mq")?;
    let id = mq
        .send(&[("user", "peter"), ("text", "hi")])
        .run(&mut t.con)?;
    t.say(
        "mq.send(&[(\"user\", \"peter\"), (\"text\", \"hi\")])",
        id.to_string(),
        "XADD tour:mq * …: the id the server gave",
    );
    let next = mq
        .send(&[("user", "tom"), ("text", "hello")])
        .run(&mut t.con)?;
    t.say(
        "mq.send(&[(\"user\", \"tom\"), (\"text\", \"hello\")])",
        next.to_string(),
        "",
    );
    t.show("mq.length()", "XLEN", mq.length())?;
    t.show(
        "mq.get(id)",
        "XRANGE tour:mq id id",
        mq.get(id).map(|msg| Ok(msg.map(|m| texts(&[m])))),
    )?;
    let got = mq.receive(&mut t.con, DEFAULT_COUNT, None)?;
    t.say(
        "mq.receive(10, None)",
        format!("{:?}", texts(&got)),
        "from 0-0; the cursor is now the last id read",
    );
    let got = mq.receive(&mut t.con, DEFAULT_COUNT, None)?;
    t.say(
        "mq.receive(10, None)",
        format!("{:?}", texts(&got)),
        "nothing new, and no wait",
    );
    let mut late = MessageQueue::from_now("tour:mq")?;
    let got = late.receive(&mut t.con, DEFAULT_COUNT, None)?;
    t.say(
        "late = MessageQueue::from_now(..); late.receive",
        format!("{:?}", texts(&got)),
        "from now on: the messages already sent are not for it",
    );
    mq.send(&[("user", "ann"), ("text", "bye")])
        .run(&mut t.con)?;
    t.text("mq.send(&[(\"user\", \"ann\"), (\"text\", \"bye\")])");
    for (name, queue) in [("mq", &mut mq), ("late", &mut late)] {
        let got = queue.receive(&mut t.con, DEFAULT_COUNT, Block::Forever)?;
        t.say(
            &format!("{name}.receive(10, Block::Forever)"),
            format!("{:?}", texts(&got)),
            "every receiver reads every message",
        );
    }
    let refused = t.show("mq.send(&[])", "no I/O", mq.send::<&str, &str>(&[]));
    assert!(refused.is_err());

    let room = Chat::new("tour:peter")?.with_history(1000)?;
    let mut viewer = Chat::new("tour:peter")?;
    room.send("tom", "am I first?", 0).run(&mut t.con)?;
    t.text("room.send(\"tom\", \"am I first?\", 0): before the viewer joins");
    let joined = viewer.join(&mut t.con)?;
    t.say(
        "viewer.join()",
        joined.to_string(),
        "XREVRANGE: from tom's comment on",
    );
    room.send("jack", "hello peter", 0).run(&mut t.con)?;
    room.send("mary", "for the cat", 100).run(&mut t.con)?;
    t.text("room.send(\"jack\", \"hello peter\", 0); room.send(\"mary\", \"for the cat\", 100)");
    let comments: Vec<String> = viewer
        .receive(&mut t.con, DEFAULT_COUNT)?
        .iter()
        .map(ToString::to_string)
        .collect();
    t.say(
        "viewer.receive(10)",
        format!("{comments:?}"),
        "waits until a comment comes; tom's came before it joined",
    );
    Ok(())
}

/// Caches (ch. 1 and 2, the 2011 cookbook's category cache), and a cache-aside read that
/// computes a missing value once.
fn cache(t: &mut Tour) -> Result<(), Box<dyn std::error::Error>> {
    use redis_patterns::cache::{BinaryCache, Cache, CategoryCache, HashCache, JsonCache};

    t.section(
        "Caches (ch. 1, 2; the 2011 cookbook): native commands, one script for hashes",
        "Cache: any value, read back as the type asked for. JsonCache: serde values as JSON;\n\
         it tells a cached null from a miss.\n\
         HashCache: a hash per entry; set replaces the entry and its TTL in one script.\n\
         BinaryCache: bytes. CategoryCache: entries of one hash that share a TTL.",
    );
    let cache = Cache::new();
    let minute = Some(Duration::from_secs(60));
    t.show(
        "cache.set(\"tour:greeting\", \"hello\", Some(60 s))",
        "",
        cache.set("tour:greeting", "hello", minute),
    )?;
    t.show(
        "cache.get(\"tour:greeting\")",
        "",
        cache.get::<String>("tour:greeting"),
    )?;
    let _ = t.show(
        "cache.set(\"tour:greeting\", \"hello\", Some(0 s))",
        "a TTL must be at least 1 ms",
        cache.set("tour:greeting", "hello", Some(Duration::ZERO)),
    );

    let json = JsonCache::<Option<Vec<u32>>>::new();
    t.text("json = JsonCache::<Option<Vec<u32>>>::new()");
    t.show(
        "json.set(\"tour:json\", &None, None)",
        "caches a JSON null, with no TTL",
        json.set("tour:json", &None, None),
    )?;
    t.show(
        "json.get(\"tour:json\")",
        "a cached null, not a miss",
        json.get("tour:json"),
    )?;
    t.show(
        "json.get(\"tour:json:missing\")",
        "a miss",
        json.get("tour:json:missing"),
    )?;

    let hashes = HashCache::new();
    t.show(
        "hashes.set(\"tour:user\", {id, name}, 60 s)",
        "",
        hashes.set("tour:user", [("id", "10086"), ("name", "peter")], minute),
    )?;
    t.show(
        "hashes.set(\"tour:user\", {name}, 60 s)",
        "",
        hashes.set("tour:user", [("name", "jack")], minute),
    )?;
    t.show(
        "hashes.get(\"tour:user\")",
        "replaced, not merged: id is gone",
        hashes.get::<std::collections::BTreeMap<String, String>>("tour:user"),
    )?;

    let binary = BinaryCache::new();
    t.show(
        "binary.set(\"tour:bytes\", &[0, 159, 255], None)",
        "",
        binary.set("tour:bytes", &[0, 159, 255], None),
    )?;
    t.show("binary.get(\"tour:bytes\")", "", binary.get("tour:bytes"))?;

    let page = cache.get_or_compute(&mut t.con, "tour:page:10086", minute, || {
        Ok::<_, redis_patterns::Error>("<html>10086</html>".to_owned())
    })?;
    t.say(
        "cache.get_or_compute(\"tour:page:10086\", 60 s, render)",
        format!("{page:?}"),
        "a miss: render ran, and its page is now cached for 60 s",
    );

    let pages = CategoryCache::new("tour:page_cache")?;
    t.show(
        "pages.set(\"/topic/123\", \"hello\")",
        "an entry of the hash tour:page_cache",
        pages.set("/topic/123", "hello"),
    )?;
    t.show(
        "pages.expire(3 s)",
        "the whole category expires in 3 s",
        pages.expire(Duration::from_secs(3)),
    )?;
    t.show("pages.size()", "entries in the category", pages.size())?;
    Ok(())
}

/// Rate limiters (ch. 8 and beyond): the book's fixed window, a sliding window, GCRA.
fn rate_limiter(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "RateLimiter (ch. 8): a fixed window",
        "Peter may try to log in 3 times per hour. is_permitted is one script; a refused \
         attempt\nis not counted.",
    );
    let login =
        RateLimiter::new("login", 3, Duration::from_secs(3600))?.with_prefix("tour:RateLimiter")?;
    for note in ["", "", "the third attempt: the last allowed", "refused"] {
        t.show(
            "login.is_permitted(\"Peter\")",
            note,
            login.is_permitted("Peter"),
        )?;
    }
    t.show(
        "login.remaining(\"Peter\")",
        "attempts left in this hour",
        login.remaining("Peter"),
    )?;
    t.show(
        "login.duration(\"Peter\")",
        "until the window ends and Peter may try again",
        login.duration("Peter"),
    )?;
    t.show(
        "login.reset(\"Peter\")",
        "forgets Peter's attempts: the book's revoke",
        login.reset("Peter"),
    )?;

    t.section(
        "SlidingWindowLimiter and GcraLimiter (beyond the books): one Limiter trait",
        "attempt(client, cost) answers a Decision, timed on the server's clock.\n\
         messages: at most 2 in any 1 s; exact, one sorted-set entry per request.\n\
         api (GCRA): a burst of 3, then 10 per second (one every 100 ms); one string per client.",
    );
    let messages = SlidingWindowLimiter::new("message", 2, Duration::from_secs(1))?
        .with_prefix("tour:SlidingWindowLimiter")?;
    for note in ["", "", "a third within 1 s: refused"] {
        t.show(
            "messages.attempt(\"Peter\", 1)",
            note,
            messages.attempt("Peter", 1),
        )?;
    }
    let api = GcraLimiter::new("api", 10, Duration::from_secs(1))?
        .with_burst(3)?
        .with_prefix("tour:GcraLimiter")?;
    t.show(
        "api.attempt(\"Peter\", 3)",
        "the whole burst at once",
        api.attempt("Peter", 3),
    )?;
    t.show(
        "api.attempt(\"Peter\", 1)",
        "the bucket is empty: refused until one unit is back",
        api.attempt("Peter", 1),
    )?;
    std::thread::sleep(Duration::from_millis(100));
    t.text("100 ms pass");
    t.show(
        "api.attempt(\"Peter\", 1)",
        "one unit is back",
        api.attempt("Peter", 1),
    )?;
    t.say(
        "messages.key(\"Peter\"), api.key(\"Peter\")",
        format!("{}, {}", messages.key("Peter")?, api.key("Peter")?),
        "one key per client",
    );
    Ok(())
}

/// Queues (ch. 26–30): FIFO, bounded, stack, priority and circular.
fn queues(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Queues (ch. 26–30): FIFO, fixed-length, stack, priority, circular",
        "One native command each, but for the scripts that bound a queue or keep it unique.\n\
         A blocking pop needs a connection that waits as long: see the fifo_queue docs.",
    );
    let fifo = FifoQueue::new("tour:fifo")?;
    t.show(
        "fifo.enqueue(&[\"a\", \"b\"])",
        "the queue's length",
        fifo.enqueue(&["a", "b"]),
    )?;
    t.show(
        "fifo.dequeue()",
        "first in, first out",
        fifo.dequeue::<String>(),
    )?;
    t.show(
        "fifo.dequeue_blocking(Some(100 ms))",
        "an item was there: no wait",
        fifo.dequeue_blocking::<String>(Some(Duration::from_millis(100))),
    )?;
    t.show(
        "fifo.dequeue_blocking(Some(100 ms))",
        "empty: waited 100 ms for an item",
        fifo.dequeue_blocking::<String>(Some(Duration::from_millis(100))),
    )?;
    let reversed = ReversedFifoQueue::new("tour:fifo_r")?;
    t.show(
        "reversed.enqueue(&[\"a\", \"b\"])",
        "pushed on the list's other end",
        reversed.enqueue(&["a", "b"]),
    )?;
    t.show(
        "reversed.dequeue()",
        "still first in, first out",
        reversed.dequeue::<String>(),
    )?;

    let fixed = FixedLengthQueue::new("tour:fixed", 3)?;
    t.text("fixed = FixedLengthQueue::new(\"tour:fixed\", 3): keeps its oldest 3 items");
    t.show(
        "fixed.enqueue(&[\"a\", \"b\"])",
        "both fit",
        fixed.enqueue(&["a", "b"]),
    )?;
    t.show(
        "fixed.enqueue(&[\"c\", \"d\", \"e\"])",
        "only c fits; d and e are dropped",
        fixed.enqueue(&["c", "d", "e"]),
    )?;
    let faded = FadedQueue::new("tour:faded", 3)?;
    t.text("faded = FadedQueue::new(\"tour:faded\", 3): keeps its newest 3 items");
    t.show(
        "faded.enqueue(&[\"a\", \"b\"])",
        "",
        faded.enqueue(&["a", "b"]),
    )?;
    t.show(
        "faded.enqueue_counted(&[\"c\", \"d\", \"e\"])",
        "a and b make room",
        faded.enqueue_counted(&["c", "d", "e"]),
    )?;
    t.show(
        "faded.dequeue()",
        "the oldest left",
        faded.dequeue::<String>(),
    )?;

    let stack = Stack::new("tour:stack")?;
    for (item, note) in [("1", "the stack's height"), ("2", ""), ("3", "")] {
        t.show(&format!("stack.push({item:?})"), note, stack.push(item))?;
    }
    t.show("stack.pop()", "last in, first out", stack.pop::<String>())?;
    t.show("stack.trim(1)", "keeps the top item only", stack.trim(1))?;
    t.show(
        "stack.as_lifo_queue().dequeue()",
        "the same list, seen as a LIFO queue",
        stack.as_lifo_queue().dequeue::<String>(),
    )?;

    let tasks = PriorityQueue::new("tour:tasks")?;
    t.show("tasks.insert(\"docs\", 3.0)", "", tasks.insert("docs", 3.0))?;
    t.show(
        "tasks.insert(\"outage\", 1.0)",
        "",
        tasks.insert("outage", 1.0),
    )?;
    t.show(
        "tasks.pop_min()",
        "the lowest priority value first",
        tasks.pop_min::<String>(),
    )?;
    let _ = t.show(
        "tasks.insert(\"x\", f64::NAN)",
        "refused before any I/O",
        tasks.insert("x", f64::NAN),
    );

    let ring = CircularQueue::new("tour:ring")?;
    t.show(
        "ring.insert(&[\"s1\", \"s2\", \"s3\"])",
        "",
        ring.insert(&["s1", "s2", "s3"]),
    )?;
    t.show(
        "ring.rotate()",
        "moves the front item to the rear, and answers it",
        ring.rotate::<String>(),
    )?;
    t.show("ring.rotate()", "", ring.rotate::<String>())?;
    t.show("ring.front()", "the next to rotate", ring.front::<String>())?;
    let unique = UniqueCircularQueue::new("tour:unique_ring")?;
    t.show(
        "unique.insert(&[\"a\", \"b\", \"c\"])",
        "",
        unique.insert(&["a", "b", "c"]),
    )?;
    t.show(
        "unique.insert(&[\"a\"])",
        "a was queued: one script moves it to the rear",
        unique.insert(&["a"]),
    )?;
    let _ = t.show(
        "unique.insert(&[\"d\", \"d\"])",
        "refused before any I/O",
        unique.insert(&["d", "d"]),
    );
    Ok(())
}

/// The 2011 cookbook's log, newest first.
fn log(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Log (the 2011 cookbook): a list, newest entry first",
        "keep(n) keeps the newest n; keep(0) empties it (the cookbook's kept everything).",
    );
    let log = Log::new("tour:log")?;
    for (entry, note) in [("boot", "the log's length"), ("login", ""), ("logout", "")] {
        t.show(&format!("log.append({entry:?})"), note, log.append(entry))?;
    }
    t.show(
        "log.read(0, 1)",
        "entries 0 to 1, both included",
        log.read::<String>(0, 1),
    )?;
    t.show("log.keep(1)", "", log.keep(1))?;
    t.show("log.read(0, -1)", "every entry", log.read::<String>(0, -1))?;
    Ok(())
}

fn unique_counter(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "UniqueCounter, HllUniqueCounter (ch. 7): count each item once",
        "UniqueCounter: a set. Union and difference are counted in Redis: no member is sent \
         back.\nHllUniqueCounter: a HyperLogLog, at most 12 KiB however many items, and \
         approximate.",
    );
    let monday = UniqueCounter::new("tour:{visits}:monday")?;
    let tuesday = UniqueCounter::new("tour:{visits}:tuesday")?;
    t.show("monday.include(\"Peter\")", "new", monday.include("Peter"))?;
    t.show(
        "monday.include(\"Peter\")",
        "counted already",
        monday.include("Peter"),
    )?;
    t.show("tuesday.include(\"Jack\")", "", tuesday.include("Jack"))?;
    t.show("tuesday.include(\"Peter\")", "", tuesday.include("Peter"))?;
    t.show(
        "UniqueCounter::union(&[&monday, &tuesday])",
        "Peter and Jack",
        UniqueCounter::union(&[&monday, &tuesday]),
    )?;
    t.show(
        "UniqueCounter::diff(&tuesday, &monday)",
        "Jack",
        UniqueCounter::diff(&tuesday, &monday),
    )?;
    let other = UniqueCounter::new("tour:other")?;
    let _ = t.show(
        "UniqueCounter::inter(&[&monday, &other])",
        "refused before any I/O",
        UniqueCounter::inter(&[&monday, &other]),
    );
    let hll = HllUniqueCounter::new("tour:hll_visits")?;
    for who in ["Peter", "Jack", "Tom", "Tom"] {
        t.show(&format!("hll.include({who:?})"), "", hll.include(who))?;
    }
    t.show("hll.count()", "approximate", hll.count())?;
    Ok(())
}

fn binary_recorder(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "BinaryRecorder (ch. 9): one bit per day, a year in 46 bytes",
        "Peter's sign-ins, bit n for day n.",
    );
    let sign_in = BinaryRecorder::new("tour:User:256512:sign_in")?;
    t.show(
        "sign_in.setbit(1)",
        "answers the bit it replaced",
        sign_in.setbit(1),
    )?;
    t.show(
        "sign_in.setbit(1)",
        "day 1 was recorded already",
        sign_in.setbit(1),
    )?;
    t.show("sign_in.setbit(3)", "", sign_in.setbit(3))?;
    t.show(
        "sign_in.getbit(2)",
        "no sign-in on day 2",
        sign_in.getbit(2),
    )?;
    t.show(
        "sign_in.countbits(0, 6)",
        "days 0 to 6, both included: days 1 and 3",
        sign_in.countbits(0, 6),
    )?;
    let _ = t.show(
        "sign_in.setbit(1 << 32)",
        "refused before any I/O",
        sign_in.setbit(1 << 32),
    );
    Ok(())
}

fn compact_string(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "CompactString (ch. 11): short items packed in one string",
        "Each item is appended with a separator (\"\\n\"); a byte range reads them back.",
    );
    let log = CompactString::new("tour:access_log")?;
    t.show(
        "log.append(\"HTTP/1.1 200 OK\")",
        "the string's length in bytes",
        log.append("HTTP/1.1 200 OK"),
    )?;
    t.show(
        "log.append(\"Server: nginx\")",
        "",
        log.append("Server: nginx"),
    )?;
    let as_text = |items: Vec<Vec<u8>>| {
        Ok(items
            .iter()
            .map(|item| String::from_utf8_lossy(item).into_owned())
            .collect::<Vec<_>>())
    };
    t.show(
        "log.get_bytes(0, 20)",
        "bytes 0 to 20 hold the first item and the start of the second",
        log.get_bytes(0, 20).map(as_text),
    )?;
    let _ = t.show(
        "log.append(\"two\\nlines\")",
        "refused before any I/O",
        log.append("two\nlines"),
    );
    Ok(())
}

fn resource_pool(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "ResourcePool (ch. 10, plus leases): take a resource, give it back",
        "One script each. acquire answers None only when every resource is held; a resource\n\
         taken with a lease comes back to the pool when its holder crashes.",
    );
    let pool = ResourcePool::new("tour:{printers}")?;
    t.show(
        "pool.associate(\"printer-1\")",
        "added to the pool",
        pool.associate("printer-1"),
    )?;
    t.show(
        "pool.associate(\"printer-1\")",
        "in the pool already",
        pool.associate("printer-1"),
    )?;
    let printer = t.show("pool.acquire()", "", pool.acquire())?;
    t.show("pool.acquire()", "every printer is held", pool.acquire())?;
    if let Some(printer) = printer {
        t.show("pool.release(\"printer-1\")", "", pool.release(&printer))?;
    }
    let lease = t.show(
        "lease = pool.acquire_with_lease(100 ms)",
        "",
        pool.acquire_with_lease(Duration::from_millis(100)),
    )?;
    std::thread::sleep(Duration::from_millis(150));
    t.text("the holder crashes, and 150 ms pass");
    t.show(
        "pool.acquire()",
        "the lease ran out: printer-1 is back",
        pool.acquire(),
    )?;
    if let Some(lease) = lease {
        t.show(
            "pool.release_lease(&lease)",
            "that lease is over: printer-1 is another client's now",
            pool.release_lease(&lease),
        )?;
    }
    t.show(
        "pool.total_count()",
        "resources, available and held",
        pool.total_count(),
    )?;

    t.section(
        "Semaphore (beyond the books): permits under leases, an optional FIFO line",
        "A crashed holder's permits come back after its lease; a request for many permits waits\nin \
         line and is not starved by requests for few.",
    );
    let sem = Semaphore::new("tour:exports")?;
    t.show(
        "sem.set_capacity(3)",
        "the capacity before",
        sem.set_capacity(3),
    )?;
    let (lease, timeout) = (Duration::from_secs(30), Duration::from_secs(1));
    let holding = sem.acquire_within(&mut t.con, 2, lease, Order::Fifo, timeout)?;
    let permits = holding.as_ref().map(|h| h.permits);
    t.say(
        "sem.acquire_within(2, 30 s, Fifo, 1 s)",
        format!("{permits:?}"),
        "permits held",
    );
    if let Some(holding) = holding {
        t.show(
            "sem.release(&holding.token)",
            "permits given back",
            sem.release(&holding.token),
        )?;
    }
    t.show(
        "sem.state()",
        "capacity, in use and the holdings' sum",
        sem.state(),
    )?;
    Ok(())
}

fn tags(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Tags (ch. 15, 2011 cookbook): both directions in one step, a cache built once per miss",
        "The cached intersection caches an empty answer too, under a key that sorts the tags.",
    );
    let tags = Tags::new("tour:books")?;
    t.show(
        "tags.add(\"SICP\", &[\"Lisp\", \"programming\"])",
        "",
        tags.add("SICP", &["Lisp", "programming"]),
    )?;
    t.show(
        "tags.add(\"K&R\", &[\"C\", \"programming\"])",
        "",
        tags.add("K&R", &["C", "programming"]),
    )?;
    t.show(
        "tags.get_target_by_tags(&[\"programming\", \"C\"])",
        "",
        tags.get_target_by_tags(&["programming", "C"]),
    )?;
    t.show(
        "tags.lookup_cached(&[\"C\", \"Lisp\"], 60 s)",
        "a miss: computed, and the empty answer cached",
        tags.lookup_cached(&["C", "Lisp"], Duration::from_secs(60)),
    )?;
    t.show(
        "tags.lookup_cached(&[\"Lisp\", \"C\"], 60 s)",
        "a hit, in any order",
        tags.lookup_cached(&["Lisp", "C"], Duration::from_secs(60)),
    )?;
    Ok(())
}

fn autocomplete(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Autocomplete (ch. 16): one table per prefix, fed in one step, capped, removable",
        "Prefixes are cut by characters; hint(0) is refused (the book returns the whole table).",
    );
    let complete = Autocomplete::new("tour:search")?.with_cap(100)?;
    t.show(
        "complete.feed(\"redis\", 1.0)",
        "",
        complete.feed("redis", 1.0),
    )?;
    t.show(
        "complete.feed(\"redis cluster\", 1.0)",
        "",
        complete.feed("redis cluster", 1.0),
    )?;
    t.show(
        "complete.feed(\"redis\", 1.0)",
        "",
        complete.feed("redis", 1.0),
    )?;
    t.show(
        "complete.hint(\"re\", 10)",
        "heaviest first",
        complete.hint("re", 10),
    )?;
    t.show(
        "complete.feed(\"红茶\", 1.0)",
        "",
        complete.feed("红茶", 1.0),
    )?;
    t.show("complete.hint(\"红\", 10)", "", complete.hint("红", 10))?;
    t.show(
        "complete.remove(\"redis\")",
        "out of its 5 prefix tables",
        complete.remove("redis"),
    )?;
    Ok(())
}

fn lottery(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Lottery (ch. 17): a pool of players, drawn with or without removal",
        "One native command each; a draw's number is at least 1 (a negative one repeats winners).",
    );
    let lottery = Lottery::new("tour:lottery")?;
    for player in ["peter", "jack", "tom"] {
        t.show(
            &format!("lottery.join({player:?})"),
            "",
            lottery.join(player),
        )?;
    }
    t.show(
        "lottery.draw::<String>(2)",
        "they stay in the pool",
        lottery.draw::<String>(2),
    )?;
    t.show(
        "lottery.draw_and_remove::<String>(1)",
        "the first prize: out of the pool",
        lottery.draw_and_remove::<String>(1),
    )?;
    t.show("lottery.size()", "", lottery.size())?;
    Ok(())
}

fn pagination(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Paging (ch. 23): offset pages as in the book, and cursor pages that never shift",
        "A cursor is the number of the next item to read, which neither new items nor trims move.",
    );
    let paging = Paging::new("tour:pages")?;
    t.show(
        "paging.add(&[\"1\", …, \"7\"])",
        "",
        paging.add(&["1", "2", "3", "4", "5", "6", "7"]),
    )?;
    t.show("paging.get::<String>(1, 3)", "", paging.get::<String>(1, 3))?;
    let first = t.show(
        "paging.first_page::<String>(3)",
        "",
        paging.first_page::<String>(3),
    )?;
    t.show("paging.add(&[\"8\"])", "a new item", paging.add(&["8"]))?;
    t.show(
        "paging.get::<String>(2, 3)",
        "the offset page shifted: 5 again",
        paging.get::<String>(2, 3),
    )?;
    if let Some(cursor) = first.next {
        let second = t.show(
            "paging.page_after::<String>(cursor, 3)",
            "the cursor page did not",
            paging.page_after::<String>(cursor, 3),
        )?;
        let _: () = redis::cmd("LTRIM")
            .arg(paging.key())
            .arg(0)
            .arg(4)
            .query(&mut t.con)?;
        if let Some(cursor) = second.next {
            t.show(
                "LTRIM tour:pages 0 4, then paging.page_after::<String>(cursor, 3)",
                "the one unread item, 1, was trimmed: an empty last page, no item twice",
                paging.page_after::<String>(cursor, 3),
            )?;
        }
    }
    Ok(())
}

fn timeline(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Timeline (ch. 24, 2011 cookbook): every entry of an add kept, a maximum length held",
        "Times are the caller's (ms). The book's add silently drops all but its first mapping.",
    );
    let timeline = Timeline::new("tour:timeline")?.with_max_length(3)?;
    t.show(
        "timeline.add(&[(100, \"a\"), (200, \"b\")])",
        "",
        timeline.add(&[(100, "a"), (200, "b")]),
    )?;
    t.show(
        "timeline.add(&[(300, \"c\"), (400, \"d\")])",
        "over the maximum of 3: the oldest goes",
        timeline.add(&[(300, "c"), (400, "d")]),
    )?;
    t.show(
        "timeline.get::<String>(1, 2)",
        "newest first",
        timeline.get::<String>(1, 2),
    )?;
    t.show(
        "timeline.get_by_time_range::<String>(150, 350, 1, 10)",
        "",
        timeline.get_by_time_range::<String>(150, 350, 1, 10),
    )?;
    t.show(
        "timeline.delete_by_time_range(0, 250, 100)",
        "bounded, and says whether more remain",
        timeline.delete_by_time_range(0, 250, 100),
    )?;
    Ok(())
}

fn votes(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Votes (ch. 21): up, down and back in one step, a vote read back, reddit's rankings",
        "Each vote also updates \"hot\" (net votes and age) and \"best\" (Wilson lower bound).",
    );
    let votes = Votes::new("tour:news")?;
    t.show(
        "votes.post(\"post:1\", None)",
        "posted now",
        votes.post("post:1", None),
    )?;
    t.show(
        "votes.up(\"post:1\", \"peter\")",
        "",
        votes.up("post:1", "peter"),
    )?;
    t.show(
        "votes.up(\"post:1\", \"jack\")",
        "",
        votes.up("post:1", "jack"),
    )?;
    t.show(
        "votes.down(\"post:1\", \"peter\")",
        "a switch",
        votes.down("post:1", "peter"),
    )?;
    t.show(
        "votes.is_voted(\"post:1\", \"peter\")",
        "the book can only say 1",
        votes.is_voted("post:1", "peter"),
    )?;
    t.show("votes.total(\"post:1\")", "", votes.total("post:1"))?;
    t.show("votes.best(3)", "", votes.best(3))?;
    Ok(())
}

fn leaderboard(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Leaderboard (ch. 22): floats kept, ranks by tie policy, \"around me\", several boards",
        "Writes also keep each distinct score once, so a dense rank is one count; reads of\n\
         ranks are one script, so every answer is of one moment.",
    );
    let board = Leaderboard::new("{tour:game}:all-time")?;
    for (item, score) in [("ann", 100.0), ("bob", 90.0), ("cat", 90.0), ("dan", 80.0)] {
        t.show(
            &format!("board.set_weight({item:?}, {score:?})"),
            "",
            board.set_weight(item, score),
        )?;
    }
    t.show(
        "board.update_weight(\"dan\", 0.5)",
        "",
        board.update_weight("dan", 0.5),
    )?;
    t.show("board.top::<String>(2)", "", board.top::<String>(2))?;
    for policy in [
        RankPolicy::Standard,
        RankPolicy::Dense,
        RankPolicy::Modified,
    ] {
        t.show(
            &format!("board.rank(\"dan\", {policy:?})"),
            "",
            board.rank("dan", policy),
        )?;
    }
    t.show(
        "board.around::<String>(\"bob\", 1, RankPolicy::Standard)",
        "one above, one below",
        board.around::<String>("bob", 1, RankPolicy::Standard),
    )?;
    t.show("board.standing(\"bob\")", "", board.standing("bob"))?;

    // A sorted set another app wrote has no levels: dense reads wait for its adoption.
    let imported = Leaderboard::new("{tour:game}:imported")?;
    redis::cmd("ZADD")
        .arg(imported.key())
        .arg(&["70", "eve", "60", "fay", "60", "gus"])
        .exec(&mut t.con)?;
    t.say(
        "ZADD {tour:game}:imported 70 eve 60 fay 60 gus",
        "-",
        "another app's board",
    );
    t.show(
        "imported.rank(\"gus\", RankPolicy::Dense)",
        "refused: its levels are not built",
        imported.rank("gus", RankPolicy::Dense),
    )
    .ok();
    let added = imported.adopt(&mut t.con)?;
    t.say(
        "imported.adopt(&mut con)",
        format!("{added:?}"),
        "levels built in bounded steps",
    );
    t.show(
        "imported.rank(\"gus\", RankPolicy::Dense)",
        "",
        imported.rank("gus", RankPolicy::Dense),
    )?;
    Ok(())
}

fn relations(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Relations (ch. 18): who follows whom, both sides in one step, lists paged by time",
        "A namespace is one hash slot, so a follow stays atomic on a cluster too.",
    );
    let relations = Relations::new("tour:social")?;
    t.show(
        "relations.follow(\"peter\", \"jack\")",
        "",
        relations.follow("peter", "jack"),
    )?;
    t.show(
        "relations.follow(\"peter\", \"jack\")",
        "again: nothing changes, the first time stays",
        relations.follow("peter", "jack"),
    )?;
    t.show(
        "relations.follow(\"jack\", \"peter\")",
        "",
        relations.follow("jack", "peter"),
    )?;
    t.show(
        "relations.is_following_each_other(\"peter\", \"jack\")",
        "",
        relations.is_following_each_other("peter", "jack"),
    )?;
    t.show(
        "relations.follow(\"tom\", \"tom\")",
        "refused",
        relations.follow("tom", "tom"),
    )
    .ok();
    t.show(
        "relations.followers(\"jack\", None, 10)",
        "(user, ms) newest first, and the next page's cursor",
        relations.followers("jack", None, 10),
    )?;
    Ok(())
}

fn session(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Session (ch. 19): one token per user; SessionStore: several, capped, sliding, with data",
        "The book's token is compared in constant time. A store keeps a user's sessions in an\n\
         index of deadlines that every call cleans; its keys expire with the last session.",
    );
    let book = Session::new("tour:peter")?;
    let token = t.show("book.create()", "a 30-day token", book.create())?;
    t.show("book.validate(token)", "", book.validate(token.as_str()))?;
    t.show("book.validate(\"guess\")", "", book.validate("guess"))?;
    t.show("book.destroy()", "", book.destroy())?;

    let store = SessionStore::new("tour:sessions")?.with_cap(2)?;
    let phone = t.show(
        "store.create(\"peter\")",
        "a token for the phone",
        store.create("peter"),
    )?;
    let phone = phone.token.as_str();
    t.show(
        "store.set(\"peter\", phone, &[(\"theme\", \"dark\")])",
        "",
        store.set("peter", phone, &[("theme", "dark")]),
    )?;
    t.show(
        "store.load(\"peter\", phone) → .get(\"theme\")",
        "checked, slid and loaded in one step",
        store.load("peter", phone).map(|session| {
            session
                .map(|s| s.get::<String>("theme"))
                .transpose()
                .map(Option::flatten)
        }),
    )?;
    t.show(
        "store.create(\"peter\")",
        "the laptop",
        store.create("peter"),
    )?;
    std::thread::sleep(Duration::from_millis(2));
    t.show(
        "store.validate(\"peter\", phone)",
        "the phone is used again: the laptop is now the least recently used",
        store.validate("peter", phone),
    )?;
    t.show(
        "store.create(\"peter\")",
        "a third, over the cap of 2: the laptop's session ends",
        store.create("peter"),
    )?;
    t.show(
        "store.list(\"peter\")",
        "soonest to expire first",
        store.list("peter"),
    )?;
    t.show(
        "store.end_all(\"peter\")",
        "log out everywhere",
        store.end_all("peter"),
    )?;
    Ok(())
}

fn short_url(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "UrlShorty (ch. 20): short links, base62 ids, custom slugs, links that run out",
        "One script each: shorten_cached gives a URL one id however many clients ask at once;\n\
         visit (the redirect) enforces a link's expiry and visit limit and counts the visit.",
    );
    t.say(
        "base62(10086)",
        format!("{:?}", base62(10086)),
        "the book's example",
    );
    let shorty = UrlShorty::with_name("tour:{links}")?;
    t.show(
        "shorty.shorten(\"https://redis.io\")",
        "",
        shorty.shorten("https://redis.io"),
    )?;
    t.show(
        "shorty.shorten(\"https://redis.io\")",
        "a new id each time, as in the book",
        shorty.shorten("https://redis.io"),
    )?;
    t.show(
        "shorty.shorten_cached(\"https://redis.io\")",
        "",
        shorty.shorten_cached("https://redis.io"),
    )?;
    t.show(
        "shorty.shorten_cached(\"https://redis.io\")",
        "the same id",
        shorty.shorten_cached("https://redis.io"),
    )?;
    t.show("shorty.restore(\"1\")", "", shorty.restore("1"))?;
    let once = LinkOptions::new().max_visits(1);
    t.show(
        "shorty.claim(\"one-shot\", \"https://secret\", max_visits(1))",
        "a custom slug",
        shorty.claim("one-shot", "https://secret", once),
    )?;
    t.show(
        "shorty.visit(\"one-shot\")",
        "counted",
        shorty.visit("one-shot"),
    )?;
    t.show(
        "shorty.visit(\"one-shot\")",
        "used up",
        shorty.visit("one-shot"),
    )?;
    t.show("shorty.visits(\"one-shot\")", "", shorty.visits("one-shot"))?;
    Ok(())
}

fn geo(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Location (ch. 25): pins, distances, search, \"shake\", pins that expire",
        "The member never takes a place in a search's limit; an unknown member is a typed\n\
         answer; the shake cache is built once per miss and caches \"no neighbours\" too.",
    );
    let places = Location::new("tour:places")?;
    places
        .pin("peter", 113.2099647, 23.593675)
        .run(&mut t.con)?;
    places.pin("jack", 113.2099100, 23.593600).run(&mut t.con)?;
    places.pin("mary", 113.2150000, 23.596000).run(&mut t.con)?;
    t.text("pinned peter, jack (10 m away) and mary (570 m away)");
    let found = places.search("peter", 1.0, 1).run(&mut t.con)?;
    let found: Vec<_> = found
        .iter()
        .map(|(who, km)| format!("{who} {:.0} m", km * 1000.0))
        .collect();
    t.say(
        "places.search(\"peter\", 1.0, 1)",
        format!("{found:?}"),
        "the nearest, peter left out",
    );
    let km = places.distance("peter", "mary").run(&mut t.con)?;
    t.say(
        "places.distance(\"peter\", \"mary\")",
        format!("{:?}", km.map(|km| format!("{km:.3} km"))),
        "",
    );
    let nobody = places.search("nobody", 1.0, 10).run(&mut t.con);
    t.say(
        "places.search(\"nobody\", 1.0, 10)",
        format!("{:?}", nobody.map_err(|e| e.code().map(str::to_owned))),
        "a declared code, not a server error",
    );
    places
        .pin_for("tom", 113.2098, 23.5935, Duration::from_millis(50))
        .run(&mut t.con)?;
    t.show("places.size()", "tom is pinned for 50 ms", places.size())?;
    std::thread::sleep(Duration::from_millis(60));
    t.show(
        "places.size()",
        "60 ms later: tom's pin expired",
        places.size(),
    )?;
    Ok(())
}

fn user_login(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "UserLogin (2011 cookbook): counts, last login, latest logins, the regulars",
        "A login is one script; each user's count is its score in the ranking.",
    );
    let logins = UserLogin::new("tour:logins")?;
    t.show(
        "logins.register(\"peter\", \"10086\")",
        "",
        logins.register("peter", "10086"),
    )?;
    t.show(
        "logins.register(\"jack\", \"10087\")",
        "",
        logins.register("jack", "10087"),
    )?;
    t.show(
        "logins.login::<String>(\"peter\")",
        "",
        logins.login::<String>("peter"),
    )?;
    t.show(
        "logins.login::<String>(\"peter\")",
        "",
        logins.login::<String>("peter"),
    )?;
    t.show(
        "logins.login::<String>(\"jack\")",
        "",
        logins.login::<String>("jack"),
    )?;
    t.show(
        "logins.login::<String>(\"nobody\")",
        "never registered: nothing recorded",
        logins.login::<String>("nobody"),
    )?;
    t.show(
        "logins.recent::<String>(10)",
        "newest first",
        logins.recent::<String>(10),
    )?;
    t.show(
        "logins.most_frequent::<String>(2)",
        "",
        logins.most_frequent::<String>(2),
    )?;
    Ok(())
}

fn online_friends(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Online friends (《Redis入门指南》 §5.3.4): one set per minute, or one sorted set",
        "Both designs answer a user's online friends in one read-only script, with no\n\
         temporary key; the per-minute sets always expire, last.seen is trimmed as it grows.",
    );
    let minutes = MinuteSets::new("tour:online")?;
    let seen = LastSeen::new("tour:online")?;
    t.show(
        "minutes.add_friends(\"peter\", &[\"jack\", \"tom\"])",
        "one friends set serves both designs",
        minutes.add_friends("peter", &["jack", "tom"]),
    )?;
    t.show(
        "minutes.visit(\"jack\")",
        "in this minute's set",
        minutes.visit("jack"),
    )?;
    t.show(
        "minutes.online_friends(\"peter\")",
        "",
        minutes.online_friends("peter"),
    )?;
    t.show("seen.visit(\"tom\")", "", seen.visit("tom"))?;
    t.show(
        "seen.online_friends(\"peter\")",
        "",
        seen.online_friends("peter"),
    )?;
    t.show("seen.online_count()", "", seen.online_count())?;
    Ok(())
}

fn work_queue(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "WorkQueue (beyond the books): jobs under leases, retries, dead letters, group limits",
        "One script per step. A taken job is held under a lease: a worker that dies loses it,\n\
         and it is handed out again. Failures are retried after a backoff, then dead-lettered.",
    );
    let queue = WorkQueue::new("tour:{emails}")?
        .with_lease(Duration::from_millis(100))?
        .with_max_deliveries(2)?
        .with_backoff(Backoff::Fixed(Duration::ZERO));
    t.show(
        "queue.configure(&Settings::new().group_limits(Limits::new().concurrency(1)?))",
        "the queue's own limits, for every worker",
        queue.configure(&Settings::new().group_limits(Limits::new().concurrency(1)?)),
    )?;
    t.show(
        "queue.add(\"welcome:7\", \"ann@example.com\")",
        "",
        queue.add("welcome:7", "ann@example.com"),
    )?;
    t.show(
        "queue.add(\"welcome:7\", \"ann@example.com\")",
        "deduplicated by id",
        queue.add("welcome:7", "ann@example.com"),
    )?;
    t.show(
        "queue.add_with(\"reset:9\", …, priority(5))",
        "",
        queue.add_with("reset:9", "bob@example.com", JobOptions::new().priority(5)),
    )?;
    for id in ["digest:1", "digest:2"] {
        queue
            .add_with(id, "weekly", JobOptions::new().group("tenant-1"))
            .run(&mut t.con)?;
    }
    t.text("added digest:1 and digest:2 in group tenant-1, which runs one job at a time");
    let jobs = queue.take(10).run(&mut t.con)?;
    t.say(
        "queue.take(10)",
        taken(&jobs),
        "priority first; digest:2 is parked behind digest:1",
    );
    t.show("queue.counts()", "", queue.counts())?;
    if let Some(reset) = jobs.iter().find(|j| j.id == "reset:9") {
        t.show(
            "queue.ack(&reset)",
            "done: ms of the server's clock",
            queue.ack(reset),
        )?;
    }
    if let Some(welcome) = jobs.iter().find(|j| j.id == "welcome:7") {
        t.show(
            "queue.nack(&welcome, \"smtp timeout\")",
            "retried at once: the tour's backoff is 0",
            queue.nack(welcome, "smtp timeout"),
        )?;
    }
    std::thread::sleep(Duration::from_millis(150));
    t.text("150 ms pass: the worker holding digest:1 died, its lease ran out");
    let jobs = queue.take(10).run(&mut t.con)?;
    t.say(
        "queue.take(10)",
        taken(&jobs),
        "digest:1 again (delivery 2), so digest:2 still waits",
    );
    for job in &jobs {
        if job.id == "welcome:7" {
            t.show(
                "queue.nack(&welcome, \"smtp timeout\")",
                "its last delivery: dead-lettered",
                queue.nack(job, "smtp timeout"),
            )?;
        } else {
            queue.ack(job).run(&mut t.con)?;
        }
    }
    let dead = queue.list(State::Dead, 0, 10).run(&mut t.con)?;
    let dead: Vec<_> = dead.iter().map(|j| (&j.id, j.deliveries)).collect();
    t.say(
        "queue.list(State::Dead, 0, 10)",
        format!("{dead:?}"),
        "(id, deliveries)",
    );
    t.show(
        "queue.requeue(\"welcome:7\")",
        "back to waiting, deliveries reset",
        queue.requeue("welcome:7"),
    )?;
    t.show("queue.counts()", "", queue.counts())?;
    Ok(())
}

/// Jobs as `id #delivery`.
fn web_app(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Web app state (Redis in Action ch. 2): tokens, carts, page and row caches",
        "A request is one script; the cleanup never ends a session seen since it read it;\n\
         each due row goes to one worker.",
    );
    let web = WebSessions::new("tour:web")?.with_limit(1)?;
    web.update_token("t1", "peter", Some("item:1"))
        .run(&mut t.con)?;
    t.say(
        "web.update_token(\"t1\", \"peter\", Some(\"item:1\"))",
        "its last-seen time",
        "ms of the server's clock",
    );
    t.show(
        "web.check_token::<String>(\"t1\")",
        "",
        web.check_token::<String>("t1"),
    )?;
    t.show(
        "web.add_to_cart(\"t1\", \"item:1\", 2)",
        "",
        web.add_to_cart("t1", "item:1", 2),
    )?;
    t.show("web.cart::<String>(\"t1\")", "", web.cart::<String>("t1"))?;
    std::thread::sleep(std::time::Duration::from_millis(2));
    web.update_token("t2", "jack", None::<&str>)
        .run(&mut t.con)?;
    t.text("web.update_token(\"t2\", \"jack\", None::<&str>)");
    let ended = web.clean_full_sessions(&mut t.con, 100)?;
    t.say(
        "web.clean_full_sessions(&mut con, 100)",
        format!("{ended:?}"),
        "a limit of 1: the oldest ends, with its cart",
    );
    t.show("web.cart::<String>(\"t1\")", "", web.cart::<String>("t1"))?;

    let pages = PageCache::new(&web).with_prefix("tour:cache:");
    let request = "http://shop/view?item=item:1";
    let page: String = pages.cache_request(&mut t.con, request, |request| {
        Ok::<_, redis_patterns::Error>(format!("<html>{request}</html>"))
    })?;
    t.say(
        "pages.cache_request(&mut con, request, render)",
        format!("{page:?}"),
        "item:1 is among the most viewed: cached for 300 s",
    );
    t.say(
        "pages.request_key(request)",
        pages.request_key(request),
        "the same in every process, unlike Python's hash()",
    );

    let rows = RowCache::new("tour:rows")?;
    rows.schedule_row_cache("item:1", std::time::Duration::from_secs(5))
        .run(&mut t.con)?;
    t.text("rows.schedule_row_cache(\"item:1\", 5 s)");
    let pass = rows.cache_rows(&mut t.con, 100, |row| {
        Ok::<_, redis_patterns::Error>(Some(format!(r#"{{"id":"{row}","qty":629}}"#)))
    })?;
    t.say(
        "rows.cache_rows(&mut con, 100, fetch)",
        format!("{pass:?}"),
        "",
    );
    t.show(
        "rows.get::<String>(\"item:1\")",
        "",
        rows.get::<String>("item:1"),
    )?;
    let again = rows.cache_rows(&mut t.con, 100, |_| {
        Ok::<_, redis_patterns::Error>(Some("never rendered".to_owned()))
    })?;
    t.say(
        "rows.cache_rows(&mut con, 100, fetch)",
        format!("{again:?}"),
        "not due again for 5 s",
    );
    Ok(())
}

fn ip_city(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "IP to city (Redis in Action ch. 5): a lookup in one round trip, imports of 1000 rows per trip",
        "Blocks may have an end: an address past it belongs to no city.",
    );
    let geo = IpCities::new("tour:geoip")?;
    let brisbane = City {
        city: "Brisbane".into(),
        region: "07".into(),
        country: "AU".into(),
    };
    let cities = geo.import_cities(&mut t.con, [Ok(("17".to_owned(), brisbane))])?;
    t.say(
        "geo.import_cities(&mut con, [(\"17\", Brisbane)])",
        cities.to_string(),
        "",
    );
    let block = IpBlock {
        start: ip_to_score("1.0.0.0")?,
        end: Some(ip_to_score("1.0.0.255")?),
        city_id: "17".into(),
    };
    let blocks = geo.import_blocks(&mut t.con, [Ok(block)])?;
    t.say(
        "geo.import_blocks(&mut con, [1.0.0.0 to 1.0.0.255: 17])",
        blocks.to_string(),
        "",
    );
    t.show(
        "geo.find_city_by_ip(ip_to_score(\"1.0.0.9\")?)",
        "",
        geo.find_city_by_ip(ip_to_score("1.0.0.9")?),
    )?;
    t.show(
        "geo.find_city_by_ip(ip_to_score(\"1.0.1.0\")?)",
        "past the block's end; the book answers Brisbane",
        geo.find_city_by_ip(ip_to_score("1.0.1.0")?),
    )?;
    Ok(())
}

fn app_config(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Configuration (Redis in Action ch. 5): the maintenance flag and JSON configs",
        "Each key is read from Redis at most once a second; threads share the cache.",
    );
    let maintenance = Maintenance::new().with_key("tour:is-under-maintenance")?;
    let on = maintenance.is_under_maintenance(&mut t.con)?;
    t.say(
        "maintenance.is_under_maintenance(&mut con)",
        on.to_string(),
        "",
    );
    maintenance.set(&mut t.con, true)?;
    let on = maintenance.is_under_maintenance(&mut t.con)?;
    t.say(
        "maintenance.set(&mut con, true)?; maintenance.is_under_maintenance(&mut con)",
        on.to_string(),
        "others see it within a second",
    );
    let configs = Configs::new().with_prefix("tour:config:");
    configs.set_config(
        &mut t.con,
        "redis",
        "statistics",
        &serde_json::json!({"db": 15}),
    )?;
    let config: Option<serde_json::Value> =
        configs.get_config(&mut t.con, "redis", "statistics")?;
    t.say(
        "configs.get_config::<serde_json::Value>(&mut con, \"redis\", \"statistics\")",
        format!("{config:?}"),
        "",
    );
    Ok(())
}

fn time_series(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Time-series counters (Redis in Action ch. 5): every precision in one step",
        "Time is the caller's (ms); cleaning goes in bounded steps.",
    );
    const T0: u64 = 1_700_000_000_000;
    let hits = TimeSeries::new("tour:ts")?;
    t.show(
        "hits.update_counter(\"hits\", 1, T0)",
        "",
        hits.update_counter("hits", 1, T0),
    )?;
    t.show(
        "hits.update_counter(\"hits\", 2, T0 + 6_000)",
        "",
        hits.update_counter("hits", 2, T0 + 6_000),
    )?;
    t.show(
        "hits.get_counter(\"hits\", 5)",
        "each: slot start in s, count",
        hits.get_counter("hits", 5),
    )?;
    t.show(
        "hits.get_counter(\"hits\", 60)",
        "",
        hits.get_counter("hits", 60),
    )?;
    let cleaned = hits.clean_all(&mut t.con, T0 + 103_000)?;
    t.say(
        "hits.clean_all(&mut con, T0 + 103_000)",
        format!("{cleaned:?}"),
        "1 s slots keep the last 100 s",
    );
    Ok(())
}

fn stats(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Statistics (Redis in Action ch. 5): hourly count, sum, min, max, average, deviation",
        "One script per value, no temporary keys; the hour rotates once, on the caller's clock.",
    );
    const H0: u64 = 1_699_999_200_000;
    let stats = Stats::new()
        .with_prefix("tour:stats")?
        .with_slowest("tour:slowest", 100)?;
    t.show(
        "stats.update_stats(\"Home\", \"AccessTime\", 0.5, H0)",
        "",
        stats.update_stats("Home", "AccessTime", 0.5, H0),
    )?;
    t.show(
        "stats.update_stats(\"Home\", \"AccessTime\", 1.5, H0 + 1_000)",
        "",
        stats.update_stats("Home", "AccessTime", 1.5, H0 + 1_000),
    )?;
    t.show(
        "stats.get_stats(\"Home\", \"AccessTime\")",
        "",
        stats.get_stats("Home", "AccessTime"),
    )?;
    t.show(
        "stats.update_stats(\"Home\", \"AccessTime\", 2.0, H0 + 3_600_000)",
        "a new hour: the last one rotates out",
        stats.update_stats("Home", "AccessTime", 2.0, H0 + 3_600_000),
    )?;
    t.show(
        "stats.get_stats(\"Nowhere\", \"AccessTime\")",
        "the book raises KeyError",
        stats.get_stats("Nowhere", "AccessTime"),
    )?;
    Ok(())
}

fn app_log(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Application logs (Redis in Action ch. 5): recent entries, and hourly common messages",
        "One script per message on the server's clock; the book's WATCH loop could log nothing.",
    );
    let log = AppLog::new("tour")?;
    log.log_recent("started", Severity::Info).run(&mut t.con)?;
    t.text("log.log_recent(\"started\", Severity::Info)");
    for _ in 0..2 {
        t.show(
            "log.log_common(\"disk full\", Severity::Error)",
            "its count this hour",
            log.log_common("disk full", Severity::Error),
        )?;
    }
    let entries = log.recent(Severity::Error).run(&mut t.con)?;
    let messages: Vec<&str> = entries.iter().map(|e| e.message.as_str()).collect();
    t.say(
        "log.recent(Severity::Error)",
        format!("{messages:?}"),
        "each with the server's time in ms",
    );
    t.show(
        "log.common(Severity::Error, 10)",
        "",
        log.common(Severity::Error, 10),
    )?;
    Ok(())
}

fn taken(jobs: &[Job]) -> String {
    let ids: Vec<_> = jobs
        .iter()
        .map(|j| format!("{} #{}", j.id, j.delivery))
        .collect();
    format!("{ids:?}")
}

fn batch(t: &mut Tour) -> redis_patterns::Result<()> {
    t.section(
        "Batch: several operations in one round trip",
        "Here a transaction (MULTI/EXEC); the SCRIPT LOAD of each script it calls goes first, \
         in\nthe same round trip.",
    );
    let views = Counter::new("tour:views")?;
    let likes = HashCounter::new("tour:post:7", "likes")?;
    let mut batch = Batch::transaction();
    let a = batch.add(views.increase(5));
    let b = batch.add(likes.reset(1));
    let mut replies = batch.run(&mut t.con)?;
    let (a, b) = (a.take(&mut replies)?, b.take(&mut replies)?);
    t.say(
        "views.increase(5), likes.reset(1)",
        format!("{a:?}, {b:?}"),
        "views went from 0 to 5; likes held 0",
    );
    Ok(())
}

fn catalogue(t: &mut Tour) {
    t.section(
        "The catalogue: every script, for tools and for apps in other languages",
        "catalog::scripts() lists them; catalog::export(dir) writes them to a folder.",
    );
    t.flush();
    let scripts = catalog::scripts();
    let width = scripts.iter().map(|s| s.name.len()).max().unwrap_or(0);
    println!("    {:<width$}  {:<8}  summary", "name", "SHA1");
    for script in scripts {
        println!(
            "    {:<width$}  {}  {}",
            script.name,
            &script.sha1[..8],
            script.summary
        );
    }
    println!(
        "\n  Any of them runs from a shell, keys then a comma then arguments:\n    \
         redis-cli --eval scripts/identity_lock/release.lua lock:1 , secret"
    );
}
