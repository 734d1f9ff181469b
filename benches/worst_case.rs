//! Every script at its worst: the largest input its header accepts, against the keyspace
//! that makes it work hardest, timed by the server itself (SLOWLOG, microseconds spent
//! in the call, network excluded). One call of any script must stay under 10 ms.
//!
//! ```sh
//! cargo bench --bench worst_case              # 5 runs of each case, the slowest shown
//! RUNS=20 cargo bench --bench worst_case
//! CASES=session/,web_session/update cargo bench --bench worst_case   # the cases of these scripts only
//! ```
//!
//! Each case names its script; a script of the catalogue without a case fails the run, so
//! a new script gets its worst case the day it lands. Timings are noisy on a shared
//! machine: read the slowest of several runs against the 10 ms bound, not the digits.

use std::time::Duration;

use redis::Value;
use redis_patterns::{Script, catalog};

#[path = "support/fill.rs"]
mod fill;
#[path = "../tests/it/server.rs"]
mod server;

use fill::lua;

/// The bound every call must stay under.
const BOUND_US: u64 = 10_000;

/// One worst case: the script, what the input is, how to fill the keyspace before each
/// run, and the call's keys and arguments.
struct Case {
    script: &'static str,
    input: &'static str,
    setup: fn(&mut redis::Connection),
    keys: Vec<String>,
    args: Vec<Vec<u8>>,
}

fn strings(items: impl IntoIterator<Item = String>) -> Vec<Vec<u8>> {
    items.into_iter().map(String::into_bytes).collect()
}

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|k| k.to_string()).collect()
}

/// The keys of a semaphore named `s`, in the order its acquire and release take them.
const SEMAPHORE_KEYS: [&str; 6] = [
    "{s}:state",
    "{s}:leases",
    "{s}:held",
    "{s}:queue",
    "{s}:places",
    "{s}:wake",
];

/// A semaphore of capacity 1,000 with 500 live holdings of 1 permit.
const SEMAPHORE_FILL: &str = "for i = 1, 500 do
    redis.call('HSET', '{s}:held', 'live' .. i, 1)
    redis.call('ZADD', '{s}:leases', 99999999999999, 'live' .. i)
  end
  redis.call('HSET', '{s}:state', 'capacity', 1000, 'used', 500)";

/// Runs `lua` (a setup that names its keys itself) on the server.
fn semaphore_lua(con: &mut redis::Connection, lua: &str) {
    let _: () = redis::cmd("EVAL").arg(lua).arg(0).query(con).unwrap();
}

/// `n` members `<prefix><i>` added to `key` with `command` (`SADD`, `RPUSH`), in chunks.
fn fill(con: &mut redis::Connection, command: &str, key: &str, prefix: &str, n: usize) {
    lua(
        con,
        "for i = 0, tonumber(ARGV[3]) - 1, 1000 do
           local chunk = {}
           for j = i, math.min(i + 999, tonumber(ARGV[3]) - 1) do chunk[#chunk + 1] = ARGV[2] .. j end
           redis.call(ARGV[1], KEYS[1], unpack(chunk))
         end",
        &[key],
        &[command, prefix, &n.to_string()],
    );
}

fn cases() -> Vec<Case> {
    let rows512: Vec<String> = (0..512).map(|r| format!("{{m}}:row:{r}")).collect();
    let pool = s(&["{p}:available", "{p}:occupied", "{p}:leases", "{p}:holders"]);
    let latch = s(&["{c}:latch", "{c}:ids", "{c}:wake"]);
    let barrier = s(&["{b}:barrier", "{b}:arrived", "{b}:history", "{b}:wake"]);
    // A work_queue script's keys: the queue's, by the names in its header.
    let queue = |name: &str| -> Vec<String> {
        catalog::find(name)
            .expect("a script of the catalogue")
            .keys
            .iter()
            .map(|key| format!("{{w}}:{}", key.name))
            .collect()
    };
    vec![
        Case {
            script: "app_log/common",
            input: "a rotation: 1,000,000 messages moved, 1,000,000 of the hour before freed",
            setup: |con| {
                fill_scored(con, "common:{l:info}", 1_000_000);
                fill_scored(con, "common:{l:info}:last", 1_000_000);
                fill(con, "RPUSH", "recent:{l:info}", "entry ", 10_000);
                lua(
                    con,
                    "redis.call('SET', KEYS[1], '3600')",
                    &["common:{l:info}:start"],
                    &[],
                );
            },
            keys: s(&[
                "common:{l:info}",
                "common:{l:info}:start",
                "common:{l:info}:last",
                "common:{l:info}:pstart",
                "recent:{l:info}",
            ]),
            args: strings(["a message".into(), "10000".into()]),
        },
        Case {
            script: "app_log/recent",
            input: "10,000 entries kept, one trimmed",
            setup: |con| fill(con, "RPUSH", "recent:{l:info}", "entry ", 10_000),
            keys: s(&["recent:{l:info}"]),
            args: strings(["a message".into(), "10000".into()]),
        },
        Case {
            script: "autocomplete/feed",
            input: "64 prefixes, each table 1000 over a cap of 1000 (100 dropped from each)",
            setup: |con| {
                for p in 1..=64 {
                    fill_scored(con, &format!("{{ac}}:{}", "x".repeat(p)), 2000);
                }
            },
            keys: (1..=64)
                .map(|p| format!("{{ac}}:{}", "x".repeat(p)))
                .collect(),
            args: strings([
                "x".repeat(64),
                "1".into(),
                "incr".into(),
                "60000".into(),
                "1000".into(),
            ]),
        },
        Case {
            script: "autocomplete/remove",
            input: "64 prefixes, each table of 10,000",
            setup: |con| {
                for p in 1..=64 {
                    fill_scored(con, &format!("{{ac}}:{}", "x".repeat(p)), 10_000);
                }
            },
            keys: (1..=64)
                .map(|p| format!("{{ac}}:{}", "x".repeat(p)))
                .collect(),
            args: strings(["m500".into()]),
        },
        Case {
            script: "bloom/add",
            input: "100 new items, 30 hashes each, into a new partition of 2^24 bits",
            setup: |_| {},
            keys: s(&["{f}:bloom", "{f}:bits"]),
            args: strings(
                ["388965", "1000000000", "1", "0"]
                    .map(String::from)
                    .into_iter()
                    .chain((0..100).map(|i| format!("item:{i}"))),
            ),
        },
        Case {
            script: "bloom/check",
            input: "100 items, 30 hashes each, in a partition of 2^24 bits",
            setup: |con| {
                let items: Vec<String> = (0..100).map(|i| format!("item:{i}")).collect();
                redis_patterns::bloom::BloomFilter::new("f", 388_965, 1_000_000_000)
                    .unwrap()
                    .add(&items)
                    .run(con)
                    .unwrap();
            },
            keys: s(&["{f}:bloom", "{f}:bits"]),
            args: strings(
                ["388965", "1000000000", "1", "0"]
                    .map(String::from)
                    .into_iter()
                    .chain((0..100).map(|i| format!("item:{i}"))),
            ),
        },
        Case {
            script: "bloom/info",
            input: "a partition",
            setup: |con| {
                redis_patterns::bloom::BloomFilter::new("f", 100, 10)
                    .unwrap()
                    .add(&["a", "b"])
                    .run(con)
                    .unwrap();
            },
            keys: s(&["{f}:bloom", "{f}:bits"]),
            args: vec![],
        },
        Case {
            script: "cache/claim",
            input: "a miss: GET, STRLEN, SET NX",
            setup: |_| {},
            keys: s(&["v", "{v}:computing"]),
            args: strings(["t".repeat(64), "999999999999999".into()]),
        },
        Case {
            script: "cache/fill",
            input: "a 1 MiB value, the marker held",
            setup: |con| {
                let _: () = redis::cmd("SET")
                    .arg("{v}:computing")
                    .arg("t")
                    .query(con)
                    .unwrap();
            },
            keys: s(&["v", "{v}:computing"]),
            args: vec![
                b"t".to_vec(),
                vec![b'x'; 1 << 20],
                b"999999999999999".to_vec(),
            ],
        },
        Case {
            script: "cache/hash_set",
            input: "1000 fields replacing a hash of 1000",
            setup: |con| {
                let mut cmd = redis::cmd("HSET");
                cmd.arg("h");
                for i in 0..1000 {
                    cmd.arg(format!("old{i}")).arg("v");
                }
                let _: () = cmd.query(con).unwrap();
            },
            keys: s(&["h"]),
            args: strings(
                std::iter::once("999999999999999".to_string())
                    .chain((0..1000).flat_map(|i| [format!("field{i}"), format!("value{i}")])),
            ),
        },
        Case {
            script: "circular_queue/unique_insert",
            input: "1000 items, all queued, in a queue of 5,000",
            setup: |con| fill(con, "RPUSH", "q", "item:", 5000),
            keys: s(&["q"]),
            args: strings((0..1000).map(|i| format!("item:{}", i * 5))),
        },
        Case {
            script: "counter/hash_reset",
            input: "a 64-bit value over a 64-bit one",
            setup: |con| {
                let _: () = redis::cmd("HSET")
                    .arg("h")
                    .arg("f")
                    .arg(i64::MAX)
                    .query(con)
                    .unwrap();
            },
            keys: s(&["h"]),
            args: strings(["f".into(), i64::MIN.to_string()]),
        },
        Case {
            script: "barrier/arrive",
            input: "the 10,000th party: a release, 9,999 parties let go, history full (1000)",
            setup: |con| crowded_barrier(con, 9_999, 99999999999999),
            keys: barrier.clone(),
            args: strings([
                "0123456789abcdef0123456789abcdef".into(),
                "10000".into(),
                "999999999999999".into(),
                String::new(),
            ]),
        },
        Case {
            script: "barrier/leave",
            input: "a party of 10,000 waiting leaves: the generation breaks",
            setup: |con| crowded_barrier(con, 10_000, 99999999999999),
            keys: barrier.clone(),
            args: strings(["00000000000000000000000000000007".into()]),
        },
        Case {
            script: "barrier/reset",
            input: "10,000 parties waiting",
            setup: |con| crowded_barrier(con, 10_000, 99999999999999),
            keys: barrier.clone(),
            args: vec![],
        },
        Case {
            script: "barrier/state",
            input: "10,000 parties waiting, their leases run out",
            setup: |con| crowded_barrier(con, 10_000, 1),
            keys: barrier[..2].to_vec(),
            args: vec![],
        },
        Case {
            script: "fenced_lock/acquire",
            input: "a free lock",
            setup: |_| {},
            keys: s(&["l", "{l}:fence"]),
            args: strings(["999999999999999".into()]),
        },
        Case {
            script: "fenced_write/delete",
            input: "a hash of 100,000 fields (UNLINK frees it in the background)",
            setup: |con| {
                semaphore_lua(
                    con,
                    "for i = 1, 100000 do redis.call('HSET', 'fw', 'f' .. i, 'v') end",
                );
                let _: () = redis::cmd("SET")
                    .arg("{fw}:max_token")
                    .arg(7)
                    .query(con)
                    .unwrap();
            },
            keys: s(&["fw", "{fw}:max_token"]),
            args: strings(["9007199254740991".into()]),
        },
        Case {
            script: "fenced_write/fence",
            input: "a token above the highest seen",
            setup: |con| {
                let _: () = redis::cmd("SET")
                    .arg("{fw}:max_token")
                    .arg(7)
                    .query(con)
                    .unwrap();
            },
            keys: s(&["{fw}:max_token"]),
            args: strings(["9007199254740991".into()]),
        },
        Case {
            script: "fenced_write/hset",
            input: "1,000 pairs into a hash of 100,000 fields",
            setup: |con| {
                semaphore_lua(
                    con,
                    "for i = 1, 100000 do redis.call('HSET', 'fw', 'f' .. i, 'v') end",
                );
                let _: () = redis::cmd("SET")
                    .arg("{fw}:max_token")
                    .arg(7)
                    .query(con)
                    .unwrap();
            },
            keys: s(&["fw", "{fw}:max_token"]),
            args: strings(
                std::iter::once("9007199254740991".to_string())
                    .chain((0..2000).map(|i| format!("new:{i}"))),
            ),
        },
        Case {
            script: "fenced_write/set",
            input: "a 1 MiB value with a ttl over a 1 MiB value",
            setup: |con| {
                let _: () = redis::cmd("SET")
                    .arg("fw")
                    .arg(vec![b'y'; 1 << 20])
                    .query(con)
                    .unwrap();
                let _: () = redis::cmd("SET")
                    .arg("{fw}:max_token")
                    .arg(7)
                    .query(con)
                    .unwrap();
            },
            keys: s(&["fw", "{fw}:max_token"]),
            args: vec![
                b"9007199254740991".to_vec(),
                b"999999999999999".to_vec(),
                vec![b'x'; 1 << 20],
            ],
        },
        Case {
            script: "fixed_length_queue/enqueue",
            input: "5,000 items into an empty queue",
            setup: |_| {},
            keys: s(&["q"]),
            args: strings(
                std::iter::once("999999999999999".to_string())
                    .chain((0..5000).map(|i| format!("item:{i}"))),
            ),
        },
        Case {
            script: "fixed_length_queue/enqueue",
            input: "5,000 newest items trimmed from an overfull queue",
            setup: |con| fill(con, "RPUSH", "q", "item:", 15_000),
            keys: s(&["q"]),
            args: strings(["10000".to_string(), "new".to_string()]),
        },
        Case {
            script: "fixed_length_queue/faded_enqueue",
            input: "5,000 items pushed, 5,000 evicted",
            setup: |con| fill(con, "RPUSH", "q", "old:", 5000),
            keys: s(&["q"]),
            args: strings(
                std::iter::once("5000".to_string()).chain((0..5000).map(|i| format!("new:{i}"))),
            ),
        },
        Case {
            script: "geo/distance",
            input: "two live pins among 100,000",
            setup: crowd,
            keys: s(&GEO_KEYS),
            args: strings(["m:1".into(), "m:2".into()]),
        },
        Case {
            script: "geo/locate",
            input: "a live pin among 100,000",
            setup: crowd,
            keys: s(&GEO_KEYS),
            args: strings(["m:1".into()]),
        },
        Case {
            script: "geo/neighbours",
            input: "a miss: the 100 nearest of 10,000 within 1 km, 1000 expired pins",
            setup: crowd,
            keys: s(&["{g}", "{g}:deadlines", "{g}:neighbours:m:1"]),
            args: strings(["m:1".into(), "100".into(), "999999999999999".into()]),
        },
        Case {
            script: "geo/pin",
            input: "a pin with a ttl, 10 expired pins deleted",
            setup: crowd,
            keys: s(&GEO_KEYS),
            args: strings([
                "new".into(),
                "113.21".into(),
                "23.59".into(),
                "999999999999999".into(),
            ]),
        },
        Case {
            script: "geo/purge",
            input: "1000 expired pins",
            setup: crowd,
            keys: s(&GEO_KEYS),
            args: strings(["1000".into()]),
        },
        Case {
            script: "geo/search",
            input: "the 100 nearest of 10,000 within 1 km, 1000 expired pins",
            setup: crowd,
            keys: s(&GEO_KEYS),
            args: strings(["m:1".into(), "1".into(), "100".into()]),
        },
        Case {
            script: "geo/size",
            input: "100,000 pins, 1000 expired",
            setup: crowd,
            keys: s(&GEO_KEYS),
            args: vec![],
        },
        Case {
            script: "identity_lock/extend",
            input: "a held lock",
            setup: held_lock,
            keys: s(&["l"]),
            args: strings(["t".into(), "999999999999999".into()]),
        },
        Case {
            script: "identity_lock/lease",
            input: "a held lock",
            setup: held_lock,
            keys: s(&["l"]),
            args: strings(["t".into()]),
        },
        Case {
            script: "identity_lock/release",
            input: "a held lock",
            setup: held_lock,
            keys: s(&["l"]),
            args: strings(["t".into()]),
        },
        Case {
            script: "latch/arm",
            input: "an open latch of 10,000 with 10,000 ids left behind (a latch another client damaged)",
            setup: |con| crowded_latch(con, 0),
            keys: latch[..2].to_vec(),
            args: strings(["10000".into(), "999999999999999".into()]),
        },
        Case {
            script: "latch/count_down",
            input: "the last count-down of 10,000, a 256-byte id: 9,999 ids freed, waiters woken",
            setup: |con| crowded_latch(con, 1),
            keys: latch.clone(),
            args: strings(["i".repeat(256), "1".into()]),
        },
        Case {
            script: "latch/state",
            input: "any latch",
            setup: |con| crowded_latch(con, 1),
            keys: latch[..1].to_vec(),
            args: vec![],
        },
        Case {
            script: "latch/wait",
            input: "a closed latch, a wake stream",
            setup: |con| crowded_latch(con, 1),
            keys: vec![latch[0].clone(), latch[2].clone()],
            args: strings(["1".into()]),
        },
        Case {
            script: "leaderboard/adopt",
            input: "2000 distinct scores new to levels of 998,000, among 1,000,000",
            setup: |con| {
                board(con, "{b}", 1_000_000);
                lua(
                    con,
                    "redis.call('ZREMRANGEBYRANK', KEYS[1], -2000, -1)",
                    &["{b}:levels"],
                    &[],
                );
            },
            keys: s(&["{b}", "{b}:levels"]),
            args: strings(["".into(), "2000".into()]),
        },
        Case {
            script: "leaderboard/around",
            input: "100 above and 100 below, all scores distinct, among 1,000,000",
            setup: |con| board(con, "{b}", 1_000_000),
            keys: s(&["{b}", "{b}:levels"]),
            args: strings(["i500000".into(), "100".into(), "dense".into()]),
        },
        Case {
            script: "leaderboard/remove",
            input: "the only item of its score, among 1,000,000",
            setup: |con| board(con, "{b}", 1_000_000),
            keys: s(&["{b}", "{b}:levels"]),
            args: strings(["i500000".into()]),
        },
        Case {
            script: "leaderboard/set",
            input: "a new score for the only item of its old one, among 1,000,000",
            setup: |con| board(con, "{b}", 1_000_000),
            keys: s(&["{b}", "{b}:levels"]),
            args: strings(["i500000".into(), "0.5".into()]),
        },
        Case {
            script: "leaderboard/standing",
            input: "10 boards of 100,000",
            setup: |con| {
                for b in 0..10 {
                    board(con, &format!("{{b}}:{b}"), 100_000);
                }
            },
            keys: (0..10)
                .flat_map(|b| [format!("{{b}}:{b}"), format!("{{b}}:{b}:levels")])
                .collect(),
            args: strings(["i50000".into()]),
        },
        Case {
            script: "leaderboard/update",
            input: "the only item of its score, among 1,000,000",
            setup: |con| board(con, "{b}", 1_000_000),
            keys: s(&["{b}", "{b}:levels"]),
            args: strings(["i500000".into(), "0.5".into()]),
        },
        Case {
            script: "logical_matrix/get_all",
            input: "512 rows of 2 KiB (1 MiB)",
            setup: rows_of_2_kib,
            keys: rows512.clone(),
            args: vec![],
        },
        Case {
            script: "logical_matrix/init",
            input: "512 rows of 16,384 bits (1 MiB)",
            setup: |_| {},
            keys: rows512.clone(),
            args: std::iter::once(b"16384".to_vec())
                .chain((0..512).map(|_| vec![0x5a; 2048]))
                .collect(),
        },
        Case {
            script: "matrix/bitfield_init",
            input: "512 rows of 256 i64 cells (1 MiB)",
            setup: |_| {},
            keys: rows512.clone(),
            args: [b"i64".to_vec(), b"256".to_vec()]
                .into_iter()
                .chain((0..512).map(|_| vec![0x5a; 2048]))
                .collect(),
        },
        Case {
            script: "matrix/bitmap_get_all",
            input: "512 rows of 2 KiB (1 MiB)",
            setup: rows_of_2_kib,
            keys: rows512.clone(),
            args: vec![],
        },
        Case {
            script: "matrix/list_get_all",
            input: "512 rows of 16 cells (8,192 cells)",
            setup: |con| {
                lua(
                    con,
                    "for i = 0, 511 do
                       for _ = 1, 8 do
                         redis.call('RPUSH', '{m}:row:' .. i, '-9223372036854775808', '9223372036854775807')
                       end
                     end",
                    &[],
                    &[],
                )
            },
            keys: rows512.clone(),
            args: vec![],
        },
        Case {
            script: "matrix/list_init",
            input: "512 rows of 4 cells, with values",
            setup: |_| {},
            keys: rows512.clone(),
            args: std::iter::once(b"4".to_vec())
                .chain((0..2048).map(|_| i64::MIN.to_string().into_bytes()))
                .collect(),
        },
        Case {
            script: "matrix/list_init",
            input: "1 row of 2048 zeros",
            setup: |_| {},
            keys: s(&["{m}:row:0"]),
            args: strings(["2048".into()]),
        },
        Case {
            script: "online_friends/minute_friends",
            input: "300 friends, all but one in each of 10 minutes of 100,000 users",
            setup: minutes_crowd,
            keys: std::iter::once("{o}:friends:u".to_string())
                .chain((0..10).map(|m| format!("{{o}}:active.users:{m:02}")))
                .collect(),
            args: vec![],
        },
        Case {
            script: "online_friends/minute_visit",
            input: "a user in a set of 100,000",
            setup: minutes_crowd,
            keys: s(&["{o}:active.users:00"]),
            args: strings(["u7".into(), "3000000".into()]),
        },
        Case {
            script: "online_friends/seen_friends",
            input: "2,000 friends among 1,000,000 users seen",
            setup: seen_crowd,
            keys: s(&["{o}:friends:u", "{o}:last.seen"]),
            args: strings(["1700000000000".into(), "600000".into()]),
        },
        Case {
            script: "online_friends/seen_visit",
            input: "100 stale users forgotten, among 1,000,000",
            setup: seen_crowd,
            keys: s(&["{o}:last.seen"]),
            args: strings(["u7".into(), "1700000000000".into(), "1".into()]),
        },
        Case {
            script: "pagination/add",
            input: "1000 items onto 1,000,000, 2,000,000 ever added",
            setup: |con| {
                fill(con, "RPUSH", "{pages}", "item", 1_000_000);
                let _: () = redis::cmd("SET")
                    .arg("{pages}:added")
                    .arg(2_000_000)
                    .query(con)
                    .unwrap();
            },
            keys: s(&["{pages}", "{pages}:added"]),
            args: strings((0..1000).map(|i| format!("new:{i}"))),
        },
        Case {
            script: "pagination/page",
            input: "1000 items from the middle of 1,000,000",
            setup: |con| fill(con, "RPUSH", "{pages}", "item", 1_000_000),
            keys: s(&["{pages}", "{pages}:added"]),
            args: strings(["500000".into(), "1000".into()]),
        },
        Case {
            script: "rate_limiter/duration",
            input: "a full window",
            setup: |con| {
                let _: () = redis::cmd("SET")
                    .arg("rl:u:c")
                    .arg(5)
                    .arg("PX")
                    .arg(60_000)
                    .query(con)
                    .unwrap();
            },
            keys: s(&["rl:u:c"]),
            args: strings(["5".into()]),
        },
        Case {
            script: "rate_limiter/gcra",
            input: "a refused request",
            setup: |_| {},
            keys: s(&["rl:u:tat"]),
            args: strings(["1".into(), "1".into(), "10000000000".into(), "1".into()]),
        },
        Case {
            script: "rate_limiter/is_permitted",
            input: "an admitted attempt",
            setup: |_| {},
            keys: s(&["rl:u:c"]),
            args: strings([
                "999999999999999".into(),
                "10000000000".into(),
                "999999999999999".into(),
            ]),
        },
        Case {
            script: "rate_limiter/sliding_window",
            input: "refused, cost 10^6, against 10^6 logged calls",
            setup: |con| sliding_log(con, 1_000_000, 0),
            keys: s(&["rl:u:log"]),
            args: strings(["1000000".into(), "10000000000".into(), "1000000".into()]),
        },
        Case {
            script: "rate_limiter/sliding_window",
            input: "admitted, 100 stale entries removed, 10^6 logged",
            setup: |con| sliding_log(con, 1_000_000, 500_000),
            keys: s(&["rl:u:log"]),
            args: strings(["1000000".into(), "1000".into(), "1".into()]),
        },
        Case {
            script: "reliable_topic/ack",
            input: "1,000 messages trimmed, 10 lapsed subscriptions dropped",
            setup: |con| topic_backlog(con, 1100),
            keys: topic_keys(),
            args: strings(["s".into(), "60000".into(), "1050-0".into(), "1050".into()]),
        },
        Case {
            script: "reliable_topic/poll",
            input: "1,000 messages of 1 kB, 10 lapsed subscriptions dropped",
            setup: |con| topic_backlog(con, 1000),
            keys: topic_keys(),
            args: strings(["s".into(), "60000".into(), "1000".into()]),
        },
        Case {
            script: "reliable_topic/publish",
            input: "a stream at its cap of 1,000: one message trimmed",
            setup: |con| topic_backlog(con, 1000),
            keys: s(&["{t}:stream", "{t}:seq"]),
            args: strings(["1000".into(), "x".repeat(1000)]),
        },
        Case {
            script: "reliable_topic/subscribe",
            input: "from the oldest message, 10 lapsed subscriptions dropped",
            setup: |con| topic_backlog(con, 1000),
            keys: topic_keys(),
            args: strings(["new-one".into(), "60000".into(), "oldest".into()]),
        },
        Case {
            script: "reliable_topic/unsubscribe",
            input: "a subscription",
            setup: |con| topic_backlog(con, 10),
            keys: topic_keys(),
            args: strings(["s".into()]),
        },
        Case {
            script: "redlock/acquire",
            input: "a free lock",
            setup: |_| {},
            keys: s(&["l", "{l}:fence"]),
            args: strings([
                "0123456789abcdef0123456789abcdef".into(),
                "999999999999999".into(),
            ]),
        },
        Case {
            script: "redlock/raise",
            input: "a held lock, its counter raised",
            setup: |con| {
                redis::cmd("SET")
                    .arg("l")
                    .arg("0123456789abcdef0123456789abcdef")
                    .query::<()>(con)
                    .unwrap();
            },
            keys: s(&["l", "{l}:fence"]),
            args: strings([
                "0123456789abcdef0123456789abcdef".into(),
                "9007199254740990".into(),
            ]),
        },
        Case {
            script: "relation/follow",
            input: "both lists of 1,000,000, the newest entry in the future",
            setup: |con| {
                fill_scored(con, "{r}:following:a", 1_000_000);
                fill_scored(con, "{r}:followers:b", 1_000_000);
            },
            keys: s(&["{r}:following:a", "{r}:followers:b"]),
            args: strings(["a".into(), "b".into()]),
        },
        Case {
            script: "relation/mutual",
            input: "both lists of 1,000,000",
            setup: |con| {
                fill_scored(con, "{r}:following:a", 1_000_000);
                fill_scored(con, "{r}:following:b", 1_000_000);
            },
            keys: s(&["{r}:following:a", "{r}:following:b"]),
            args: strings(["a".into(), "b".into()]),
        },
        Case {
            script: "relation/unfollow",
            input: "both lists of 1,000,000",
            setup: |con| {
                fill_scored(con, "{r}:following:a", 1_000_000);
                fill_scored(con, "{r}:followers:m500000", 1_000_000);
            },
            keys: s(&["{r}:following:a", "{r}:followers:m500000"]),
            args: strings(["a".into(), "m500000".into()]),
        },
        Case {
            script: "resource_pool/acquire",
            input: "1000 expired leases reclaimed first",
            setup: expired_leases,
            keys: pool.clone(),
            args: strings(["1000".into()]),
        },
        Case {
            script: "resource_pool/acquire_lease",
            input: "1000 expired leases reclaimed first",
            setup: expired_leases,
            keys: pool.clone(),
            args: strings(["999999999999999".into(), "token".into(), "1000".into()]),
        },
        Case {
            script: "resource_pool/associate",
            input: "a new resource",
            setup: expired_leases,
            keys: pool[..2].to_vec(),
            args: strings(["new".into()]),
        },
        Case {
            script: "resource_pool/disassociate",
            input: "a leased resource",
            setup: expired_leases,
            keys: pool.clone(),
            args: strings(["r:7".into()]),
        },
        Case {
            script: "resource_pool/extend_lease",
            input: "a held lease",
            setup: expired_leases,
            keys: pool[2..].to_vec(),
            args: strings(["r:7".into(), "t".into(), "999999999999999".into()]),
        },
        Case {
            script: "resource_pool/has",
            input: "a held resource",
            setup: expired_leases,
            keys: pool[..2].to_vec(),
            args: strings(["r:7".into()]),
        },
        Case {
            script: "resource_pool/reclaim",
            input: "1000 expired leases",
            setup: expired_leases,
            keys: pool.clone(),
            args: strings(["1000".into()]),
        },
        Case {
            script: "resource_pool/release",
            input: "a resource held with no lease",
            setup: |con| {
                let _: () = redis::cmd("SADD")
                    .arg("{p}:occupied")
                    .arg("free")
                    .query(con)
                    .unwrap();
            },
            keys: vec![pool[0].clone(), pool[1].clone(), pool[3].clone()],
            args: strings(["free".into()]),
        },
        Case {
            script: "resource_pool/release_lease",
            input: "a held lease",
            setup: expired_leases,
            keys: pool.clone(),
            args: strings(["r:7".into(), "t".into()]),
        },
        Case {
            script: "resource_pool/total_count",
            input: "any pool",
            setup: expired_leases,
            keys: pool[..2].to_vec(),
            args: vec![],
        },
        Case {
            script: "ip_city/find",
            input: "1,000,000 blocks with ends, the address in the last",
            setup: |con| {
                lua(
                    con,
                    "for i = 0, 999999, 1000 do
                       local blocks, cities = {}, {}
                       for j = i, i + 999 do
                         blocks[#blocks + 1] = j * 512
                         blocks[#blocks + 1] = 'c' .. j .. '_' .. (j * 512) .. '_' .. (j * 512 + 255)
                         cities[#cities + 1] = 'c' .. j
                         cities[#cities + 1] = '[\"city\",\"region\",\"country\"]'
                       end
                       redis.call('ZADD', KEYS[1], unpack(blocks))
                       redis.call('HSET', KEYS[2], unpack(cities))
                     end",
                    &["{ip}:ip2cityid", "{ip}:cityid2city"],
                    &[],
                );
            },
            keys: s(&["{ip}:ip2cityid", "{ip}:cityid2city"]),
            args: strings([(999_999u64 * 512 + 7).to_string()]),
        },
        Case {
            script: "row_cache/claim",
            input: "100,000 rows scheduled and due, 500 claimed",
            setup: |con| scheduled_rows(con, 100_000, 1),
            keys: s(&["{rc}:delays", "{rc}:schedule"]),
            args: strings(["500".into()]),
        },
        Case {
            script: "row_cache/schedule",
            input: "100,000 rows scheduled, one more",
            setup: |con| scheduled_rows(con, 100_000, 1),
            keys: s(&["{rc}:delays", "{rc}:schedule", "{rc}:inv:new"]),
            args: strings(["new".into(), "999999999999999".into()]),
        },
        Case {
            script: "row_cache/store",
            input: "a 1 MiB copy of a scheduled row",
            setup: |con| scheduled_rows(con, 100_000, 1),
            keys: s(&["{rc}:delays", "{rc}:inv:r5"]),
            args: vec![b"r5".to_vec(), vec![b'x'; 1 << 20]],
        },
        Case {
            script: "semaphore/acquire",
            input: "100 lapsed holdings reclaimed, 100 lapsed places and 100 placeless ones dropped, 500 live holdings",
            setup: |con| {
                semaphore_lua(con, SEMAPHORE_FILL);
                semaphore_lua(
                    con,
                    "for i = 1, 100 do
                       redis.call('HSET', '{s}:held', 'lapsed' .. i, 1)
                       redis.call('ZADD', '{s}:leases', 1, 'lapsed' .. i)
                       redis.call('ZADD', '{s}:queue', i, 'placeless' .. i)
                       redis.call('ZADD', '{s}:queue', 100 + i, 'gone' .. i)
                       redis.call('ZADD', '{s}:places', 1, 'gone' .. i)
                     end
                     redis.call('HSET', '{s}:state', 'used', 600, 'seq', 200)",
                );
            },
            keys: s(&SEMAPHORE_KEYS),
            args: strings([
                "f".repeat(32),
                "1000".into(),
                "999999999999999".into(),
                "10000000".into(),
                "100".into(),
            ]),
        },
        Case {
            script: "semaphore/extend",
            input: "a lapsed holding, reclaimed, among 500",
            setup: |con| {
                semaphore_lua(con, SEMAPHORE_FILL);
                semaphore_lua(
                    con,
                    "redis.call('HSET', '{s}:held', 'ffffffffffffffffffffffffffffffff', 10)
                     redis.call('ZADD', '{s}:leases', 1, 'ffffffffffffffffffffffffffffffff')
                     redis.call('HSET', '{s}:state', 'used', 510)",
                );
            },
            keys: s(&["{s}:state", "{s}:leases", "{s}:held", "{s}:wake"]),
            args: strings(["f".repeat(32), "999999999999999".into()]),
        },
        Case {
            script: "semaphore/release",
            input: "a holding and a place, among 500 holdings and 1,000 places",
            setup: |con| {
                semaphore_lua(con, SEMAPHORE_FILL);
                semaphore_lua(
                    con,
                    "for i = 1, 1000 do
                       redis.call('ZADD', '{s}:queue', i, 'w' .. i)
                       redis.call('ZADD', '{s}:places', 99999999999999, 'w' .. i)
                     end
                     local t = 'ffffffffffffffffffffffffffffffff'
                     redis.call('HSET', '{s}:held', t, 10)
                     redis.call('ZADD', '{s}:leases', 99999999999999, t)
                     redis.call('HSET', '{s}:state', 'used', 510)
                     redis.call('ZADD', '{s}:queue', 0, t)
                     redis.call('ZADD', '{s}:places', 99999999999999, t)",
                );
            },
            keys: s(&SEMAPHORE_KEYS),
            args: strings(["f".repeat(32)]),
        },
        Case {
            script: "semaphore/set_capacity",
            input: "a raise, which wakes waiters",
            setup: |con| semaphore_lua(con, SEMAPHORE_FILL),
            keys: s(&["{s}:state", "{s}:wake"]),
            args: strings(["1000".into()]),
        },
        Case {
            script: "semaphore/state",
            input: "1,000 holdings, half of them lapsed",
            setup: |con| {
                semaphore_lua(
                    con,
                    "for i = 1, 1000 do
                       redis.call('HSET', '{s}:held', 'h' .. i, 1)
                       redis.call('ZADD', '{s}:leases', (i % 2) * 99999999999999, 'h' .. i)
                     end
                     redis.call('HSET', '{s}:state', 'capacity', 1000, 'used', 1000)",
                );
            },
            keys: s(&["{s}:state", "{s}:leases", "{s}:held", "{s}:places"]),
            args: vec![],
        },
        Case {
            script: "session/create",
            input: "1,000 live sessions with data, all evicted (cap 1)",
            setup: |con| sessions_crowd(con, 0, 1000),
            keys: session_keys(),
            args: strings(["new-token-of-128-bits".into(), "3600000".into(), "1".into()]),
        },
        Case {
            script: "session/end",
            input: "900 expired sessions forgotten, 100 live ones ended",
            setup: |con| sessions_crowd(con, 900, 100),
            keys: session_keys(),
            args: strings((900..1000).map(|i| format!("s{i}"))),
        },
        Case {
            script: "session/list",
            input: "1,000 live sessions",
            setup: |con| sessions_crowd(con, 0, 1000),
            keys: session_keys()[..1].to_vec(),
            args: vec![],
        },
        Case {
            script: "session/set",
            input: "999 expired forgotten; 100 of 256 fields (64 KiB) replaced",
            setup: full_session,
            keys: session_keys(),
            args: std::iter::once(b"live-token".to_vec())
                .chain((0..100).flat_map(|i| [format!("f{i}").into_bytes(), vec![b'y'; 250]]))
                .collect(),
        },
        Case {
            script: "session/unset",
            input: "999 expired forgotten; 100 of 256 fields (64 KiB) removed",
            setup: full_session,
            keys: session_keys(),
            args: std::iter::once(b"live-token".to_vec())
                .chain((0..100).map(|i| format!("f{i}").into_bytes()))
                .collect(),
        },
        Case {
            script: "session/validate",
            input: "999 expired forgotten; slid, with 256 fields (64 KiB)",
            setup: full_session,
            keys: session_keys(),
            args: strings(["live-token".into(), "1".into(), "1".into()]),
        },
        Case {
            script: "user_login/login",
            input: "10,000 recent logins trimmed to 1",
            setup: |con| {
                lua(
                    con,
                    "redis.call('HSET', KEYS[1], 'peter', '1')
                     for i = 1, 10 do
                       local ids = {}
                       for j = 1, 1000 do ids[j] = 'id' .. j end
                       redis.call('LPUSH', KEYS[2], unpack(ids))
                     end",
                    &["{l}:ids", "{l}:recent"],
                    &[],
                )
            },
            keys: s(&["{l}:ids", "{l}:counts", "{l}:last", "{l}:recent"]),
            args: strings(["peter".into(), "1".into()]),
        },
        Case {
            script: "vote/cast",
            input: "a switch, 1,000,000 votes on the subject, 1,000,000 subjects ranked",
            setup: voted,
            keys: vote_keys(),
            args: strings(["s7".into(), "u7".into(), "down".into()]),
        },
        Case {
            script: "vote/forget",
            input: "1,000,000 votes on the subject (freed in the background)",
            setup: voted,
            keys: vote_keys(),
            args: strings(["s7".into()]),
        },
        Case {
            script: "vote/post",
            input: "1,000,000 votes on the subject, 1,000,000 subjects ranked",
            setup: voted,
            keys: vote_keys(),
            args: strings(["s7".into(), "".into()]),
        },
        Case {
            script: "vote/tally",
            input: "1,000,000 votes on the subject",
            setup: voted,
            keys: vote_keys()[..2].to_vec(),
            args: strings(["u7".into()]),
        },
        Case {
            script: "work_queue/ack",
            input: "a held job whose group has parked jobs, a 16 KiB result kept, 2 expired dropped, events full",
            setup: busy_queue,
            keys: queue("work_queue/ack"),
            args: strings(["held".into(), "7".into(), "r".repeat(1 << 14)]),
        },
        Case {
            script: "work_queue/add",
            input: "a new delayed job in a group, on a busy queue",
            setup: busy_queue,
            keys: queue("work_queue/add"),
            args: strings([
                "new".into(),
                "x".repeat(100),
                "255".into(),
                "1000000000000".into(),
                "g".into(),
            ]),
        },
        Case {
            script: "work_queue/counts",
            input: "a busy queue",
            setup: busy_queue,
            keys: queue("work_queue/counts"),
            args: vec![],
        },
        Case {
            script: "work_queue/extend",
            input: "a held job",
            setup: busy_queue,
            keys: queue("work_queue/extend"),
            args: strings(["held".into(), "7".into(), "10000000000".into()]),
        },
        Case {
            script: "work_queue/job",
            input: "a leased job",
            setup: busy_queue,
            keys: queue("work_queue/job"),
            args: strings(["held".into()]),
        },
        Case {
            script: "work_queue/list",
            input: "100 parked jobs, 100-byte payloads",
            setup: busy_queue,
            keys: queue("work_queue/list"),
            args: strings(["parked".into(), "0".into(), "100".into()]),
        },
        Case {
            script: "work_queue/nack",
            input: "a held job on its last delivery, group with parked jobs",
            setup: busy_queue,
            keys: queue("work_queue/nack"),
            args: strings([
                "held".into(),
                "7".into(),
                "1000000000000".into(),
                "1".into(),
                "x".repeat(1000),
            ]),
        },
        Case {
            script: "work_queue/pause",
            input: "a busy queue",
            setup: busy_queue,
            keys: queue("work_queue/pause"),
            args: vec![],
        },
        Case {
            script: "work_queue/paused",
            input: "a busy queue",
            setup: busy_queue,
            keys: queue("work_queue/paused"),
            args: vec![],
        },
        Case {
            script: "work_queue/resume",
            input: "a busy queue, paused",
            setup: |con| {
                busy_queue(con);
                redis::cmd("HSET")
                    .arg("{w}:jobs")
                    .arg("#paused")
                    .arg("1")
                    .exec(con)
                    .unwrap();
            },
            keys: queue("work_queue/resume"),
            args: vec![],
        },
        Case {
            script: "work_queue/remove",
            input: "a parked job",
            setup: busy_queue,
            keys: queue("work_queue/remove"),
            args: strings(["pp:5".into()]),
        },
        Case {
            script: "work_queue/requeue",
            input: "a dead job",
            setup: busy_queue,
            keys: queue("work_queue/requeue"),
            args: strings(["dead".into()]),
        },
        Case {
            script: "work_queue/due",
            input: "100 due schedules (of 1,000), each read and checked",
            setup: scheduled_queue,
            keys: queue("work_queue/due"),
            args: strings(["100".into()]),
        },
        Case {
            script: "work_queue/fire",
            input: "catch-up 100 on a busy queue with metrics: 100 jobs of 100 bytes added",
            setup: scheduled_queue,
            keys: queue("work_queue/fire"),
            args: strings(["s7".into(), "0".into(), "1".into()]),
        },
        Case {
            script: "work_queue/remove_schedule",
            input: "one of 1,000 schedules",
            setup: scheduled_queue,
            keys: queue("work_queue/remove_schedule"),
            args: strings(["s7".into()]),
        },
        Case {
            script: "work_queue/schedule",
            input: "one of 1,000 schedules, 100-byte payload",
            setup: scheduled_queue,
            keys: queue("work_queue/schedule"),
            args: strings(["s7".into()]),
        },
        Case {
            script: "work_queue/schedules",
            input: "a page of 100 of 1,000 schedules, 100-byte payloads",
            setup: scheduled_queue,
            keys: queue("work_queue/schedules"),
            args: strings(["900".into(), "100".into()]),
        },
        Case {
            script: "work_queue/set_schedule",
            input: "a changed timing of one of 1,000 schedules, 100-byte payload",
            setup: scheduled_queue,
            keys: queue("work_queue/set_schedule"),
            args: strings([
                "s7".into(),
                "60000".into(),
                "0".into(),
                "".into(),
                "".into(),
                "100".into(),
                "255".into(),
                "g".into(),
                "x".repeat(100),
                "".into(),
                "1".into(),
            ]),
        },
        Case {
            script: "work_queue/take",
            input: "limit 25: 25 held jobs of groups with parked jobs acked first with 16 KiB results, 25 expired \
                    results dropped, every chore full, 1000-start rate rings, events full",
            setup: busy_queue,
            keys: queue("work_queue/take"),
            args: take_acking_busy_jobs(),
        },
        Case {
            script: "work_queue/take",
            input: "group_rate 1000 -> 1: 25 rings of 1000 begin anew, 25 idle",
            setup: rate_changed,
            keys: queue("work_queue/take"),
            args: strings(
                [
                    "10000000000",
                    "25",
                    "1000",
                    "0123456789abcdef0123456789abcdef",
                ]
                .map(String::from),
            ),
        },
        Case {
            script: "work_queue/take",
            input: "limit 25, groups take turns: the busy queue's chores and 25 acks, 50 waiting jobs moved to \
                    their groups, 300 groups with turns (5 parked jobs each), 50 turns examined",
            setup: turns_queue,
            keys: queue("work_queue/take"),
            args: take_acking_busy_jobs(),
        },
        Case {
            script: "work_queue/take",
            input: "limit 25, turns switched off: 25 jobs of groups with turns handed back, then taken",
            setup: |con| {
                turns_queue(con);
                lua(
                    con,
                    "redis.call('HSET', KEYS[1], '#settings', \
                     '0 1000 10000000000 1000000 1000 10000000000 1 1 1440 100000 3600000 16384 0')",
                    &["{w}:jobs"],
                    &[],
                );
            },
            keys: queue("work_queue/take"),
            args: strings(
                [
                    "10000000000",
                    "25",
                    "1000",
                    "0123456789abcdef0123456789abcdef",
                ]
                .map(String::from),
            ),
        },
        Case {
            script: "work_queue/add",
            input: "a new job of a group without a turn, groups taking turns, on a busy queue",
            setup: turns_queue,
            keys: queue("work_queue/add"),
            args: strings([
                "new".into(),
                "x".repeat(100),
                "255".into(),
                "0".into(),
                "g".into(),
            ]),
        },
        Case {
            script: "work_queue/configure",
            input: "every setting changed: group limits (100 of 1,000 groups woken), queue rate 1000 -> 10, events 100,000 -> 1, turns on",
            setup: big_queue,
            keys: queue("work_queue/configure"),
            args: strings(
                [
                    "5", "10", "1000", "10", "10", "1000", "100", "1000", "60", "1", "1000", "10",
                    "1",
                ]
                .map(String::from),
            ),
        },
        Case {
            script: "work_queue/add_flow",
            input: "100 children of 1 KiB on a busy queue, metrics on",
            setup: busy_queue,
            keys: queue("work_queue/add_flow"),
            args: {
                let mut args = strings(["flow".into(), "p".into(), "0".into(), "".into()]);
                for n in 0..100 {
                    args.extend(strings([
                        format!("flow:{n}"),
                        "c".repeat(1024),
                        "continue".into(),
                    ]));
                }
                args
            },
        },
        Case {
            script: "work_queue/progress",
            input: "a 4 KiB report of a held job, events full",
            setup: busy_queue,
            keys: queue("work_queue/progress"),
            args: strings(["held".into(), "7".into(), "p".repeat(4096)]),
        },
        Case {
            script: "work_queue/result",
            input: "a 16 KiB result",
            setup: |con| {
                busy_queue(con);
                lua(
                    con,
                    "redis.call('HSET', KEYS[12], 'big', string.rep('r', 16384))
                     redis.call('ZADD', KEYS[13], 99999999999999, 'big')",
                    &QUEUE,
                    &[],
                );
            },
            keys: queue("work_queue/result"),
            args: strings(["big".into()]),
        },
        Case {
            script: "work_queue/events",
            input: "1,000 entries of a full stream (100,000) read from the oldest",
            setup: busy_queue,
            keys: queue("work_queue/events"),
            args: strings(["0-0".into(), "1000".into()]),
        },
        Case {
            script: "work_queue/settings",
            input: "a configured queue",
            setup: big_queue,
            keys: queue("work_queue/settings"),
            args: vec![],
        },
        Case {
            script: "work_queue/metrics",
            input: "a day of per-minute slots, every one read",
            setup: big_queue,
            keys: queue("work_queue/metrics"),
            args: strings(["1440".into()]),
        },
        Case {
            script: "work_queue/rate_limit_group",
            input: "a held job whose group has parked jobs",
            setup: busy_queue,
            keys: queue("work_queue/rate_limit_group"),
            args: strings(["held".into(), "7".into(), "10000000000".into()]),
        },
        Case {
            script: "work_queue/retry_dead",
            input: "100 of 1,000 dead jobs back to waiting",
            setup: big_queue,
            keys: queue("work_queue/retry_dead"),
            args: strings(["100".into()]),
        },
        Case {
            script: "work_queue/clean",
            input: "100 parked jobs of 100 groups, with their records",
            setup: big_queue,
            keys: queue("work_queue/clean"),
            args: strings(["parked".into(), "100".into()]),
        },
        Case {
            script: "work_queue/delete_queue",
            input: "100 jobs of a paused queue, with their records (force)",
            setup: |con| {
                big_queue(con);
                redis::cmd("HSET")
                    .arg("{w}:jobs")
                    .arg("#paused")
                    .arg("1")
                    .exec(con)
                    .unwrap();
            },
            keys: queue("work_queue/delete_queue"),
            args: strings(["100".into(), "1".into()]),
        },
        Case {
            script: "work_queue/set_priority",
            input: "a parked job",
            setup: busy_queue,
            keys: queue("work_queue/set_priority"),
            args: strings(["pp:5".into(), "200".into()]),
        },
        Case {
            script: "work_queue/set_delay",
            input: "a parked job",
            setup: busy_queue,
            keys: queue("work_queue/set_delay"),
            args: strings(["pp:5".into(), "1000000000000".into()]),
        },
        Case {
            script: "short_url/claim",
            input: "a slug held by an expired link, deleted first",
            setup: busy_links,
            keys: s(&LINKS_KEYS),
            args: strings([
                "expired-7".into(),
                "u".repeat(2048),
                "999999999999999".into(),
                "999999999999999".into(),
            ]),
        },
        Case {
            script: "short_url/purge",
            input: "100 of 1000 expired links, all cached",
            setup: busy_links,
            keys: s(&PURGE_KEYS),
            args: strings(["100".into()]),
        },
        Case {
            script: "short_url/restore",
            input: "a link with an expiry and a visit limit",
            setup: busy_links,
            keys: s(&LINKS_KEYS),
            args: strings(["limited".into()]),
        },
        Case {
            script: "short_url/shorten",
            input: "999 ids in a row held by slugs, then a free one",
            setup: busy_links,
            keys: s(&SHORTEN_KEYS),
            args: strings([
                "u".repeat(2048),
                "999999999999999".into(),
                "999999999999999".into(),
            ]),
        },
        Case {
            script: "short_url/shorten_cached",
            input: "a miss: 999 ids in a row held by slugs, then a free one",
            setup: busy_links,
            keys: s(&["{s}:id_counter", "{s}:mapping_hash", "{s}:mapping_cache"]),
            args: strings(["u".repeat(2048)]),
        },
        Case {
            script: "short_url/visit",
            input: "a link with an expiry and a visit limit",
            setup: busy_links,
            keys: s(&LINKS_KEYS),
            args: strings(["limited".into()]),
        },
        Case {
            script: "stats/slowest",
            input: "a ranking of 11,001 kept to 10,000: 1000 dropped",
            setup: |con| fill_scored(con, "slowest", 11_000),
            keys: s(&["slowest"]),
            args: strings(["new".into(), "1".into(), "10000".into()]),
        },
        Case {
            script: "stats/update",
            input: "a rotation, the hour before last a 1,000,000-member set",
            setup: |con| {
                fill_scored(con, "{st:c:k}:last", 1_000_000);
                lua(
                    con,
                    "redis.call('SET', KEYS[2], '3600')
                     for _, k in ipairs({'count', 'sum', 'sumsq', 'min', 'max'}) do
                       redis.call('ZADD', KEYS[1], 1, k)
                     end",
                    &["{st:c:k}", "{st:c:k}:start"],
                    &[],
                );
            },
            keys: s(&[
                "{st:c:k}",
                "{st:c:k}:start",
                "{st:c:k}:last",
                "{st:c:k}:pstart",
            ]),
            args: strings(["1e100".into(), "999999999999999".into()]),
        },
        Case {
            script: "tag/add",
            input: "100 tags, each on 100,000 targets",
            setup: |con| tagged(con, 100, 100_000),
            keys: tag_keys("new", 100),
            args: std::iter::once(b"new".to_vec())
                .chain((0..100).map(|t| format!("t{t}").into_bytes()))
                .collect(),
        },
        Case {
            script: "tag/cached",
            input: "a miss: 10 tags of 3,000 targets, all in every tag",
            setup: |con| tagged(con, 10, 3_000),
            keys: std::iter::once("{tags}:cached:x".to_string())
                .chain(tag_keys("x7", 10).into_iter().skip(1))
                .collect(),
            args: strings(["60000".into()]),
        },
        Case {
            script: "tag/remove",
            input: "100 tags, each on 100,000 targets",
            setup: |con| tagged(con, 100, 100_000),
            keys: tag_keys("x7", 100),
            args: std::iter::once(b"x7".to_vec())
                .chain((0..100).map(|t| format!("t{t}").into_bytes()))
                .collect(),
        },
        Case {
            script: "time_series/clean",
            input: "a 1,000,000-sample hash, a chunk of ~1000 scanned and deleted",
            setup: |con| {
                fill_scored(con, "{ts}:known", 100_000);
                lua(
                    con,
                    "for i = 0, 999999, 1000 do
                       local chunk = {}
                       for j = i, i + 999 do chunk[#chunk + 1] = j; chunk[#chunk + 1] = 1 end
                       redis.call('HSET', KEYS[1], unpack(chunk))
                     end",
                    &["{ts}:count:1:c"],
                    &[],
                );
            },
            keys: s(&["{ts}:known", "{ts}:count:1:c"]),
            args: strings([
                "c".into(),
                "1".into(),
                "999999999999999".into(),
                "100".into(),
                "0".into(),
                "1000".into(),
            ]),
        },
        Case {
            script: "time_series/update",
            input: "16 precisions, 100,000 counters known",
            setup: |con| fill_scored(con, "{ts}:known", 100_000),
            keys: {
                let mut keys = s(&["{ts}:known"]);
                keys.extend((1..=16).map(|p| format!("{{ts}}:count:{p}:c")));
                keys
            },
            args: {
                let mut args = strings([
                    "c".into(),
                    "999999999999999".into(),
                    "999999999999999".into(),
                ]);
                args.extend((1..=16u64).map(|p| p.to_string().into_bytes()));
                args
            },
        },
        Case {
            script: "timeline/add",
            input: "1000 entries into 1,000,000, 2000 trimmed",
            setup: |con| fill_scored(con, "{t}", 1_000_000),
            keys: s(&["{t}"]),
            args: std::iter::once(b"999000".to_vec())
                .chain((0..1000).flat_map(|i| {
                    [
                        (4_102_444_900_000_u64 + i).to_string().into_bytes(),
                        format!("new{i}").into_bytes(),
                    ]
                }))
                .collect(),
        },
        Case {
            script: "timeline/delete_range",
            input: "1000 entries of a range of 500,000, among 1,000,000",
            setup: |con| fill_scored(con, "{t}", 1_000_000),
            keys: s(&["{t}"]),
            args: strings(["0".into(), "4102444300000".into(), "1000".into()]),
        },
        Case {
            script: "unique_counter/diff_count",
            input: "two sets of 10,000 members",
            setup: |con| {
                fill(con, "SADD", "{u}:x", "member:", 10_000);
                fill(con, "SADD", "{u}:y", "member:", 10_000);
            },
            keys: s(&["{u}:x", "{u}:y"]),
            args: vec![],
        },
        Case {
            script: "unique_counter/union_count",
            input: "1000 sets of 10 distinct members",
            setup: |con| {
                lua(
                    con,
                    "for s = 0, 999 do
                       for m = 0, 9 do redis.call('SADD', '{u}:' .. s, s .. ':' .. m) end
                     end",
                    &[],
                    &[],
                )
            },
            keys: std::iter::once("{u}:union_scratch".to_string())
                .chain((0..1000).map(|s| format!("{{u}}:{s}")))
                .collect(),
            args: vec![],
        },
        Case {
            script: "unique_counter/union_count",
            input: "two sets of 5000 distinct members",
            setup: |con| {
                fill(con, "SADD", "{u}:x", "x:", 5000);
                fill(con, "SADD", "{u}:y", "y:", 5000);
            },
            keys: s(&["{u}:x:union_scratch", "{u}:x", "{u}:y"]),
            args: vec![],
        },
        Case {
            script: "web_session/clean",
            input: "100 of 100,000 sessions ended, each with 1000 items viewed and a 1000-item cart",
            setup: |con| web_sessions(con, 100_000, 100, 1000),
            keys: {
                let mut keys = s(&["{w}:login", "{w}:recent"]);
                for j in 100_000 - 100..100_000 {
                    keys.push(format!("{{w}}:viewed:m{j}"));
                    keys.push(format!("{{w}}:cart:m{j}"));
                }
                keys
            },
            args: {
                let mut args = strings(["0".into(), "1".into()]);
                for j in 100_000 - 100..100_000u64 {
                    args.push(format!("m{j}").into_bytes());
                    args.push((4_102_444_800_000 - j).to_string().into_bytes());
                }
                args
            },
        },
        Case {
            script: "web_session/rescale",
            input: "11,000 items: 1000 dropped, 10,000 halved",
            setup: |con| fill_scored(con, "{w}:viewed", 11_000),
            keys: s(&["{w}:viewed", "{w}:rescaling"]),
            args: strings(["10000".into()]),
        },
        Case {
            script: "web_session/update",
            input: "100,000 sessions and items; 1000 viewed kept, one trimmed",
            setup: |con| {
                web_sessions(con, 100_000, 0, 0);
                fill_scored(con, "{w}:viewed", 100_000);
                fill_scored(con, "{w}:viewed:m5", 1000);
            },
            keys: s(&["{w}:login", "{w}:recent", "{w}:viewed:m5", "{w}:viewed"]),
            args: strings(["m5".into(), "u".into(), "new".into(), "1000".into()]),
        },
        Case {
            script: "rw_lock/acquire_read",
            input: "1000 lapsed read holds and 1000 lapsed writer places dropped, 100,000 readers",
            setup: |con| rw_state(con, 100_000, 1000, 1000, false),
            keys: rw(&["writer", "readers", "read_holds", "intents", "wake"]),
            args: strings([
                TOKEN.into(),
                "999999999999999".into(),
                "0".into(),
                "1000".into(),
            ]),
        },
        Case {
            script: "rw_lock/acquire_write",
            input: "1000 lapsed read holds and 1000 lapsed places dropped, 100,000 readers: a place",
            setup: |con| rw_state(con, 100_000, 1000, 1000, false),
            keys: rw(&[
                "writer",
                "readers",
                "read_holds",
                "intents",
                "fence",
                "wake",
            ]),
            args: strings([
                "ffffffffffffffffffffffffffffffff".into(),
                "999999999999999".into(),
                "999999999999999".into(),
                "1000".into(),
            ]),
        },
        Case {
            script: "rw_lock/release_read",
            input: "the last hold of 1 reader",
            setup: |con| rw_state(con, 0, 0, 0, false),
            keys: rw(&["readers", "read_holds", "wake"]),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "rw_lock/release_read",
            input: "the last hold of one of 100,000 readers (as cheap as of 1)",
            setup: |con| rw_state(con, 100_000, 0, 0, false),
            keys: rw(&["readers", "read_holds", "wake"]),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "rw_lock/release_write",
            input: "the last write hold",
            setup: |con| rw_state(con, 0, 0, 0, true),
            keys: rw(&["writer", "wake"]),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "rw_lock/extend",
            input: "a write hold and read holds, among 100,000 readers",
            setup: |con| rw_state(con, 100_000, 0, 0, true),
            keys: rw(&["writer", "readers", "read_holds"]),
            args: strings([TOKEN.into(), "999999999999999".into()]),
        },
        Case {
            script: "rw_lock/downgrade",
            input: "a write hold, beside 100,000 readers",
            setup: |con| rw_state(con, 100_000, 0, 0, true),
            keys: rw(&["writer", "readers", "read_holds", "wake"]),
            args: strings([TOKEN.into(), "999999999999999".into()]),
        },
        Case {
            script: "rw_lock/withdraw",
            input: "one of 100,000 waiting writers",
            setup: |con| rw_state(con, 0, 0, 100_000, false),
            keys: rw(&["intents", "wake"]),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "fair_lock/acquire",
            input: "1000 lapsed places at the head dropped, a queue of 100,000: joins at the back",
            setup: |con| fair_state(con, 100_000, 1000),
            keys: fair(&["owner", "queue", "places", "fence", "wake"]),
            args: strings([
                TOKEN.into(),
                "999999999999999".into(),
                "999999999999999".into(),
                "1000".into(),
            ]),
        },
        Case {
            script: "fair_lock/cancel",
            input: "one place of a queue of 100,000",
            setup: |con| fair_state(con, 100_000, 0),
            keys: fair(&["queue", "places", "wake"]),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "fair_lock/extend",
            input: "the holder",
            setup: |con| fair_state(con, 0, 0),
            keys: fair(&["owner"]),
            args: strings([TOKEN.into(), "999999999999999".into()]),
        },
        Case {
            script: "fair_lock/release",
            input: "the holder",
            setup: |con| fair_state(con, 0, 0),
            keys: fair(&["owner", "wake"]),
            args: strings([TOKEN.into()]),
        },
    ]
}

/// The lock `l`, held with the token `t`.
fn held_lock(con: &mut redis::Connection) {
    let _: () = redis::cmd("SET").arg("l").arg("t").query(con).unwrap();
}

/// 512 row strings of 2 KiB each: 1 MiB.
fn rows_of_2_kib(con: &mut redis::Connection) {
    lua(
        con,
        "for i = 0, 511 do redis.call('SET', '{m}:row:' .. i, string.rep('x', 2048)) end",
        &[],
        &[],
    )
}

/// A sliding-window log of `n` calls of cost 1 within the window, the first `stale` of
/// them scored long ago.
fn sliding_log(con: &mut redis::Connection, n: usize, stale: usize) {
    lua(
        con,
        "local t = redis.call('TIME')
         local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
         local n, stale = tonumber(ARGV[1]), tonumber(ARGV[2])
         for i = 0, n - 1, 1000 do
           local chunk = {}
           for j = i, math.min(i + 999, n - 1) do
             local at = j < stale and 1 or (now - 1000000 + j)
             chunk[#chunk + 1] = string.format('%.0f', at)
             chunk[#chunk + 1] = string.format('%016d', j) .. ':1'
           end
           redis.call('ZADD', KEYS[1], unpack(chunk))
         end",
        &["rl:u:log"],
        &[&n.to_string(), &stale.to_string()],
    );
}

/// A pool of 2000 resources, 1000 of them held under leases that ran out and one (`r:7`,
/// token `t`) under a live one.
/// A latch of 10,000, generation 1, with `left` count-downs to go (0: open), the ids of
/// the others in its set (10,000 when open: left behind), and a wake stream.
fn crowded_latch(con: &mut redis::Connection, left: u64) {
    lua(
        con,
        "local left = tonumber(ARGV[1])
         redis.call('HSET', KEYS[1], 'gen', 1, 'count', 10000, 'left', left,
           'opened', left == 0 and 1 or 0)
         for i = 0, 9999 - left, 1000 do
           local batch = {}
           for j = i, math.min(i + 999, 9999 - left) do batch[#batch + 1] = 'id:' .. j end
           redis.call('SADD', KEYS[2], unpack(batch))
         end
         redis.call('XADD', KEYS[3], '*', 'w', '1')",
        &["{c}:latch", "{c}:ids", "{c}:wake"],
        &[&left.to_string()],
    );
}

/// A barrier of 10,000 parties in generation 1001, `waiting` of them waiting with leases
/// to `deadline` (ms), the outcomes of 1000 generations in its history, a wake stream.
/// The party of token `0…07` is one of them.
fn crowded_barrier(con: &mut redis::Connection, waiting: u64, deadline: u64) {
    lua(
        con,
        "redis.call('HSET', KEYS[1], 'parties', 10000, 'gen', 1001)
         for i = 0, tonumber(ARGV[1]) - 1, 1000 do
           local batch = {}
           for j = i, math.min(i + 999, tonumber(ARGV[1]) - 1) do
             batch[#batch + 1] = ARGV[2]
             batch[#batch + 1] = string.format('%032x', j)
           end
           redis.call('ZADD', KEYS[2], unpack(batch))
         end
         for g = 1, 1000 do redis.call('ZADD', KEYS[3], 2 * g, g) end
         redis.call('XADD', KEYS[4], '*', 'w', '1')",
        &["{b}:barrier", "{b}:arrived", "{b}:history", "{b}:wake"],
        &[&waiting.to_string(), &deadline.to_string()],
    );
}

fn expired_leases(con: &mut redis::Connection) {
    lua(
        con,
        "for i = 0, 1999 do redis.call('SADD', KEYS[1], 'r:' .. i) end
         for i = 1000, 1999 do
           redis.call('SMOVE', KEYS[1], KEYS[2], 'r:' .. i)
           redis.call('ZADD', KEYS[3], 1, 'r:' .. i)
           redis.call('HSET', KEYS[4], 'r:' .. i, 'old')
         end
         redis.call('SMOVE', KEYS[1], KEYS[2], 'r:7')
         redis.call('ZADD', KEYS[3], 99999999999999, 'r:7')
         redis.call('HSET', KEYS[4], 'r:7', 't')",
        &["{p}:available", "{p}:occupied", "{p}:leases", "{p}:holders"],
        &[],
    );
}

/// 300 friends of `u`, and 10 minute sets of 100,000 users each, holding every friend but
/// `x` (so every minute is looked at).
fn minutes_crowd(con: &mut redis::Connection) {
    lua(
        con,
        "local function fill(key, n)
           for i = 0, n - 1, 1000 do
             local batch = {}
             for j = i, math.min(i + 999, n - 1) do batch[#batch + 1] = 'u' .. j end
             redis.call('SADD', key, unpack(batch))
           end
         end
         fill(KEYS[1], 299)
         redis.call('SADD', KEYS[1], 'x')
         for m = 0, 9 do fill(string.format('{o}:active.users:%02d', m), 100000) end",
        &["{o}:friends:u"],
        &[],
    );
}

/// 2,000 friends of `u`, and 1,000,000 users seen, many long ago.
fn seen_crowd(con: &mut redis::Connection) {
    lua(
        con,
        "for i = 0, 1999, 1000 do
           local batch = {}
           for j = i, i + 999 do batch[#batch + 1] = 'u' .. j end
           redis.call('SADD', KEYS[1], unpack(batch))
         end
         for i = 0, 999999, 1000 do
           local batch = {}
           for j = i, i + 999 do
             batch[#batch + 1] = 1700000000000 - (j % 1000000)
             batch[#batch + 1] = 'u' .. j
           end
           redis.call('ZADD', KEYS[2], unpack(batch))
         end",
        &["{o}:friends:u", "{o}:last.seen"],
        &[],
    );
}
/// `n` rows `r<j>` scheduled every `delay_ms`, all due (their due times are long past).
fn scheduled_rows(con: &mut redis::Connection, n: usize, delay_ms: u64) {
    lua(
        con,
        "for i = 0, tonumber(ARGV[1]) - 1, 1000 do
           local due, delays = {}, {}
           for j = i, math.min(i + 999, tonumber(ARGV[1]) - 1) do
             due[#due + 1] = j
             due[#due + 1] = 'r' .. j
             delays[#delays + 1] = ARGV[2]
             delays[#delays + 1] = 'r' .. j
           end
           redis.call('ZADD', KEYS[1], unpack(delays))
           redis.call('ZADD', KEYS[2], unpack(due))
         end",
        &["{rc}:delays", "{rc}:schedule"],
        &[&n.to_string(), &delay_ms.to_string()],
    );
}

/// `n` sessions `m<j>` seen at `4102444800000 - j` (so the last ones are the oldest),
/// the `full` oldest of them with `items` items viewed and `items` in their cart.
fn web_sessions(con: &mut redis::Connection, n: usize, full: usize, items: usize) {
    fill_scored(con, "{w}:recent", n);
    lua(
        con,
        "local n, full, items = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
         for i = 0, n - 1, 1000 do
           local login = {}
           for j = i, math.min(i + 999, n - 1) do
             login[#login + 1] = 'm' .. j
             login[#login + 1] = 'u'
           end
           redis.call('HSET', KEYS[1], unpack(login))
         end
         for j = n - full, n - 1 do
           local viewed, cart = {}, {}
           for k = 1, items do
             viewed[#viewed + 1] = k
             viewed[#viewed + 1] = 'item' .. k
             cart[#cart + 1] = 'item' .. k
             cart[#cart + 1] = 1
           end
           if items > 0 then
             redis.call('ZADD', '{w}:viewed:m' .. j, unpack(viewed))
             redis.call('HSET', '{w}:cart:m' .. j, unpack(cart))
           end
         end",
        &["{w}:login"],
        &[&n.to_string(), &full.to_string(), &items.to_string()],
    );
}

/// `n` members `m0`… of the sorted set `key`, scored from far in the future down.
fn fill_scored(con: &mut redis::Connection, key: &str, n: usize) {
    lua(
        con,
        "for i = 0, tonumber(ARGV[1]) - 1, 1000 do
           local batch = {}
           for j = i, math.min(i + 999, tonumber(ARGV[1]) - 1) do
             batch[#batch + 1] = 4102444800000 - j
             batch[#batch + 1] = 'm' .. j
           end
           redis.call('ZADD', KEYS[1], unpack(batch))
         end",
        &[key],
        &[&n.to_string()],
    );
}

/// The keys of `tag/add` for the target `x7` and `n` tags `t0`…
fn tag_keys(target: &str, n: usize) -> Vec<String> {
    std::iter::once(format!("{{tags}}:target:{target}"))
        .chain((0..n).map(|t| format!("{{tags}}:tag:t{t}")))
        .collect()
}

/// `tags` tags `t0`…, each on the same `targets` targets `x0`….
fn tagged(con: &mut redis::Connection, tags: usize, targets: usize) {
    for t in 0..tags {
        fill(con, "SADD", &format!("{{tags}}:tag:t{t}"), "x", targets);
    }
}

/// A vote namespace's keys for the subject `s7`, as the `vote` scripts take them.
fn vote_keys() -> Vec<String> {
    s(&[
        "{v}:up:s7",
        "{v}:down:s7",
        "{v}:posted",
        "{v}:hot",
        "{v}:best",
    ])
}

/// 1,000,000 up votes on `s7`, and 1,000,000 subjects in both rankings.
fn voted(con: &mut redis::Connection) {
    fill(con, "SADD", "{v}:up:s7", "u", 1_000_000);
    fill_scored(con, "{v}:hot", 1_000_000);
    fill_scored(con, "{v}:best", 1_000_000);
}

/// A leaderboard `key` of `n` items `i0`… scored 0, 1, …, and its distinct scores.
fn board(con: &mut redis::Connection, key: &str, n: usize) {
    let levels = format!("{key}:levels");
    lua(
        con,
        "for i = 0, tonumber(ARGV[1]) - 1, 1000 do
           local items, levels = {}, {}
           for j = i, math.min(i + 999, tonumber(ARGV[1]) - 1) do
             items[#items + 1] = j
             items[#items + 1] = 'i' .. j
             levels[#levels + 1] = j
             levels[#levels + 1] = string.format('%.17g', j)
           end
           redis.call('ZADD', KEYS[1], unpack(items))
           redis.call('ZADD', KEYS[2], unpack(levels))
         end",
        &[key, &levels],
        &[&n.to_string()],
    );
}

/// A user's keys, as `session` scripts take them.
fn session_keys() -> Vec<String> {
    s(&["{s:u}:sessions", "{s:u}:records"])
}

/// `expired` sessions `s0`… whose deadline has passed, then `live` ones, each with a
/// ttl record and 1 KiB of data.
fn sessions_crowd(con: &mut redis::Connection, expired: usize, live: usize) {
    lua(
        con,
        "local expired, live = tonumber(ARGV[1]), tonumber(ARGV[2])
         local data = cmsgpack.pack({ cart = string.rep('x', 1024) })
         for i = 0, expired + live - 1 do
           local id = 's' .. i
           redis.call('ZADD', KEYS[1], i < expired and 1 or 4102444800000 + i, id)
           redis.call('HSET', KEYS[2], 't:' .. id, 3600000, 'd:' .. id, data)
         end",
        &["{s:u}:sessions", "{s:u}:records"],
        &[&expired.to_string(), &live.to_string()],
    );
}

/// 999 expired sessions, and the session of `live-token` with the most data it may hold:
/// 256 fields, 64 KiB of names and values.
fn full_session(con: &mut redis::Connection) {
    sessions_crowd(con, 999, 0);
    lua(
        con,
        "local id = redis.sha1hex('live-token')
         local data = {}
         for i = 0, 255 do data['f' .. i] = string.rep('x', 250) end
         redis.call('ZADD', KEYS[1], 4102444800000, id)
         redis.call('HSET', KEYS[2], 't:' .. id, 3600000, 'd:' .. id, cmsgpack.pack(data))",
        &["{s:u}:sessions", "{s:u}:records"],
        &[],
    );
}

/// A location's keys, as `geo` scripts take them.
const GEO_KEYS: [&str; 2] = ["{g}", "{g}:deadlines"];

/// 100,000 pins: 10,000 within about 1 km of `m:1` (1000 of them expired), the rest
/// spread over 100 km.
fn crowd(con: &mut redis::Connection) {
    lua(
        con,
        "for chunk = 0, 99 do
           local args = {}
           for i = chunk * 1000 + 1, chunk * 1000 + 1000 do
             local spread = i <= 10000 and 0.004 or 0.5
             local lon = 113.2 + spread * math.sin(i * 12.9898)
             local lat = 23.59 + spread * math.cos(i * 78.233)
             args[#args + 1] = lon
             args[#args + 1] = lat
             args[#args + 1] = 'm:' .. i
           end
           redis.call('GEOADD', KEYS[1], unpack(args))
         end
         redis.call('GEOADD', KEYS[1], 113.2, 23.59, 'm:1')
         for i = 2, 1001 do redis.call('ZADD', KEYS[2], 1, 'm:' .. i) end",
        &GEO_KEYS,
        &[],
    );
}

/// A shortener's keys, as `short_url` scripts take them.
const LINKS_KEYS: [&str; 4] = [
    "{s}:mapping_hash",
    "{s}:expiries",
    "{s}:limits",
    "{s}:visits",
];
const SHORTEN_KEYS: [&str; 4] = [
    "{s}:id_counter",
    "{s}:mapping_hash",
    "{s}:expiries",
    "{s}:limits",
];
const PURGE_KEYS: [&str; 5] = [
    "{s}:mapping_hash",
    "{s}:mapping_cache",
    "{s}:expiries",
    "{s}:limits",
    "{s}:visits",
];

/// A shortener whose next 999 ids (from 1) are held by slugs, with 1000 expired links
/// (all cached, counted and limited), and `limited`: a live link with an expiry and a
/// visit limit.
fn busy_links(con: &mut redis::Connection) {
    lua(
        con,
        "local links, cache, expiries, limits, visits = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
         local digits = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
         local function base62(n)
           local text = ''
           repeat
             local d = n % 62
             text = string.sub(digits, d + 1, d + 1) .. text
             n = (n - d) / 62
           until n == 0
           return text
         end
         for n = 1, 999 do redis.call('HSET', links, base62(n), 'vanity') end
         for n = 1, 1000 do
           local id, url = 'expired-' .. n, 'https://old/' .. n
           redis.call('HSET', links, id, url)
           redis.call('HSET', cache, url, id)
           redis.call('ZADD', expiries, 1, id)
           redis.call('HSET', limits, id, 10)
           redis.call('HSET', visits, id, 3)
         end
         redis.call('HSET', links, 'limited', 'https://live')
         redis.call('ZADD', expiries, 99999999999999, 'limited')
         redis.call('HSET', limits, 'limited', 1000000, 'x', 1)
         redis.call('HSET', visits, 'limited', 5)",
        &PURGE_KEYS,
        &[],
    );
}

/// A work queue's ten keys.
const QUEUE: [&str; 13] = [
    "{w}:waiting",
    "{w}:delayed",
    "{w}:leased",
    "{w}:dead",
    "{w}:parked",
    "{w}:jobs",
    "{w}:groups",
    "{w}:wake",
    "{w}:idle",
    "{w}:signal",
    "{w}:events",
    "{w}:results",
    "{w}:kept",
];

/// A work queue where one `take` with `limit` 25 does the most work of every kind: 25
/// lapsed leases in groups with parked jobs, 25 due delayed jobs, 25 groups due to wake
/// with 10 parked jobs each, 25 idle groups with full 1000-start rings to drop, and at the
/// head of `waiting` 75 jobs of groups whose full rate rings park them, then 25 jobs of
/// groups whose full (but old) rings let them start. Beside them: 100 more parked jobs,
/// `held` and `h1` to `h24` (token 7, last delivery, each in a group with a parked job:
/// `take` acks the 25 first) and `dead`.
/// A busy queue keeping metrics, with 1,000 schedules every second since 0 (each has
/// missed every run: the most a catch-up adds), 100-byte payloads, catch-up 100.
fn scheduled_queue(con: &mut redis::Connection) {
    busy_queue(con);
    lua(
        con,
        "local s, d, j = unpack(KEYS)
         redis.call('HSET', j, '#settings', '0 0 1000 0 0 1000 10000 15552000000 60')
         for i = 0, 999 do
           redis.call('HSET', s, 't:s' .. i, 'every 1000 0', 'o:s' .. i, '1 100 0', 'd:s' .. i, string.rep('x', 100),
             'g:s' .. i, 'g')
           redis.call('ZADD', d, 0, 's' .. i)
         end",
        &["{w}:schedules", "{w}:due", "{w}:jobs"],
        &[],
    );
}

fn busy_queue(con: &mut redis::Connection) {
    lua(
        con,
        "local w, d, l, x, p, j, g, k, i = unpack(KEYS)
         local function job(id, rank, group, state)
           redis.call('HSET', j, 'd:' .. id, string.rep('x', 100), 's:' .. id, state, 'r:' .. id, rank, 'n:' .. id, 0)
           if group then redis.call('HSET', j, 'g:' .. id, group) end
         end
         local function park(id, rank, group)
           job(id, rank, group, 'parked')
           redis.call('ZADD', p, 0, string.format('%08x', #group) .. group .. string.format('%016d', rank) .. id)
         end
         local function ring(group, at)
           redis.call('HSET', g, 'p:' .. group, 1000, 'z:' .. group, 1000)
           for n = 0, 999 do redis.call('HSET', g, 's:' .. group .. ':' .. n, at) end
         end
         for n = 1, 75 do
           local group = 'R' .. (n % 10)
           job('r:' .. n, n, group, 'waiting')
           redis.call('ZADD', w, n, 'r:' .. n)
         end
         for n = 0, 9 do ring('R' .. n, 99999999999999) end
         for n = 1, 25 do
           job('t:' .. n, 100 + n, 'T' .. n, 'waiting')
           redis.call('ZADD', w, 100 + n, 't:' .. n)
           ring('T' .. n, 1)
           job('l:' .. n, 1000000 + n, 'L' .. n, 'leased')
           redis.call('ZADD', l, 1, 'l:' .. n)
           redis.call('HSET', j, 't:l:' .. n, n, 'n:l:' .. n, 1)
           redis.call('HSET', g, 'r:L' .. n, 1)
           park('pl:' .. n, 1000000 + n, 'L' .. n)
           job('d:' .. n, 2000000 + n, nil, 'delayed')
           redis.call('ZADD', d, 1, 'd:' .. n)
           redis.call('ZADD', k, 1, 'W' .. n)
           for m = 1, 10 do park('pw:' .. n .. ':' .. m, 3000000 + n * 10 + m, 'W' .. n) end
           redis.call('ZADD', i, 1, 'I' .. n)
           ring('I' .. n, 1)
         end
         for n = 1, 100 do park('pp:' .. n, 4000000 + n, 'P' .. n) end
         job('held', 5, 'G', 'leased')
         redis.call('ZADD', l, 99999999999999, 'held')
         redis.call('HSET', j, 't:held', 7, 'n:held', 1)
         redis.call('HSET', g, 'r:G', 1)
         park('pg', 6, 'G')
         for n = 1, 24 do
           job('h' .. n, 5, 'H' .. n, 'leased')
           redis.call('ZADD', l, 99999999999999, 'h' .. n)
           redis.call('HSET', j, 't:h' .. n, 7, 'n:h' .. n, 1)
           redis.call('HSET', g, 'r:H' .. n, 1)
           park('ph' .. n, 6, 'H' .. n)
         end
         job('dead', 8, nil, 'dead')
         redis.call('ZADD', x, 1, 'dead')
         redis.call('HSET', j, '#seq', 5000000)
         -- The queue's settings: group rate 1000 per 10^10 ms, queue concurrency 10^6,
         -- queue rate 1000 with its ring full of old starts, a dead-letter cap of 1 job and
         -- 1 ms (every call that can trims), a day of per-minute metrics, events on with
         -- their stream full (100,000), results of up to 16 KiB, 25 of them expired.
         redis.call('HSET', j, '#settings',
           '0 1000 10000000000 1000000 1000 10000000000 1 1 1440 100000 3600000 16384', '#qn', 1000)
         local events, results, kept = KEYS[11], KEYS[12], KEYS[13]
         for n = 1, 100000 do
           redis.call('XADD', events, '*', 'event', 'failed', 'job', 'r:' .. n, 'error', string.rep('e', 100))
         end
         for n = 1, 25 do
           redis.call('HSET', results, 'old:' .. n, string.rep('r', 1000))
           redis.call('ZADD', kept, 1, 'old:' .. n)
         end
         for n = 0, 999 do redis.call('HSET', j, '#qs:' .. n, 1) end
         for n = 1, 100 do
           job('x:' .. n, 8, nil, 'dead')
           redis.call('ZADD', x, 1, 'x:' .. n)
         end
         for n = 0, 9 do redis.call('HSET', g, 'u:R' .. n, 1) end",
        &QUEUE,
        &[],
    );
}

/// `busy_queue` with its groups taking turns: 300 groups with a turn each and 5 parked
/// jobs each (one rate ring of 1000 starts among them), and the settings' 13th number 1.
/// `take`'s arguments at limit 25 on `busy_queue`: the 25 held jobs (`held`, `h1` … `h24`)
/// acked first, each with a result of the longest size a queue may keep (16 KiB).
fn take_acking_busy_jobs() -> Vec<Vec<u8>> {
    let mut args = strings(
        [
            "10000000000",
            "25",
            "1000",
            "0123456789abcdef0123456789abcdef",
        ]
        .map(String::from),
    );
    for id in std::iter::once("held".to_owned()).chain((1..=24).map(|n| format!("h{n}"))) {
        args.extend(strings([id, "7".into(), "r".repeat(1 << 14)]));
    }
    args
}

fn turns_queue(con: &mut redis::Connection) {
    busy_queue(con);
    lua(
        con,
        "local p, j, t = KEYS[1], KEYS[2], KEYS[3]
         for n = 1, 300 do
           local group = 'Q' .. n
           redis.call('ZADD', t, n, group)
           for m = 1, 5 do
             local id, rank = 'q:' .. n .. ':' .. m, 2550000000000000 + n * 10 + m
             redis.call('HSET', j, 'd:' .. id, string.rep('x', 100), 's:' .. id, 'parked', 'r:' .. id, rank,
               'n:' .. id, 0, 'g:' .. id, group)
             redis.call('ZADD', p, 0, string.format('%08x', #group) .. group .. string.format('%016d', rank) .. id)
           end
         end
         redis.call('HSET', j, '#settings',
           '0 1000 10000000000 1000000 1000 10000000000 1 1 1440 100000 3600000 16384 1')",
        &["{w}:parked", "{w}:jobs", "{w}:turns"],
        &[],
    );
}

/// `busy_queue` and more of what the operators' scripts walk: 1,000 dead jobs, 1,000
/// parked jobs of 1,000 groups, and every per-minute slot of a day.
fn big_queue(con: &mut redis::Connection) {
    busy_queue(con);
    lua(
        con,
        "local x, p, j = KEYS[4], KEYS[5], KEYS[6]
         for n = 1, 1000 do
           local dead, parked, group = 'y:' .. n, 'q:' .. n, 'Q' .. n
           redis.call('HSET', j, 'd:' .. dead, string.rep('x', 100), 's:' .. dead, 'dead', 'r:' .. dead, n,
             'n:' .. dead, 5, 'e:' .. dead, string.rep('e', 100))
           redis.call('ZADD', x, 1, dead)
           redis.call('HSET', j, 'd:' .. parked, string.rep('x', 100), 's:' .. parked, 'parked', 'r:' .. parked, n,
             'n:' .. parked, 0, 'g:' .. parked, group)
           redis.call('ZADD', p, 0, string.format('%08x', #group) .. group .. string.format('%016d', n) .. parked)
         end
         for n = 0, 1439 do redis.call('HSET', j, '#m:' .. n, '1 1 1') end",
        &QUEUE,
        &[],
    );
}

/// A work queue whose groups' rate rings are of another size than the next `take`'s
/// `group_rate`: 25 jobs at the head of `waiting`, each of a group whose ring holds 1000
/// start times (written under a `group_rate` of 1000), and 25 idle groups with rings as
/// full. A take with a `group_rate` of 1 starts the 25 rings anew, which leaves 999 old
/// start times in each, and drops old start times and idle rings, at most its budget.
fn rate_changed(con: &mut redis::Connection) {
    lua(
        con,
        "local w, j, g, i = KEYS[1], KEYS[6], KEYS[7], KEYS[9]
         local function ring(group)
           redis.call('HSET', g, 'p:' .. group, 1000, 'z:' .. group, 1000)
           for n = 0, 999 do redis.call('HSET', g, 's:' .. group .. ':' .. n, 1) end
         end
         for n = 1, 25 do
           local id = 't:' .. n
           redis.call('HSET', j, 'd:' .. id, string.rep('x', 100), 's:' .. id, 'waiting', 'r:' .. id, n,
             'n:' .. id, 0, 'g:' .. id, 'T' .. n)
           redis.call('ZADD', w, n, id)
           ring('T' .. n)
           redis.call('ZADD', i, 1, 'I' .. n)
           ring('I' .. n)
         end",
        &QUEUE,
        &[],
    );
}

/// The server time of one call of `script`, from SLOWLOG; the reply must not be an error.
fn time_one(con: &mut redis::Connection, script: &Script, case: &Case) -> u64 {
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(con).unwrap();
    let mut cmd = redis::cmd(if script.is_read_only() {
        "EVALSHA_RO"
    } else {
        "EVALSHA"
    });
    cmd.arg(script.sha1).arg(case.keys.len()).arg(&case.keys);
    for arg in &case.args {
        cmd.arg(arg.as_slice());
    }
    let reply: Value = cmd.query(con).unwrap();
    if let Value::ServerError(err) = reply {
        panic!("{} ({}): {err:?}", case.script, case.input);
    }
    let log: Vec<Value> = redis::cmd("SLOWLOG").arg("GET").arg(10).query(con).unwrap();
    log.iter()
        .filter_map(|entry| match entry {
            Value::Array(fields) => {
                let name = match fields.get(3) {
                    Some(Value::Array(argv)) => match argv.first() {
                        Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                        _ => String::new(),
                    },
                    _ => String::new(),
                };
                let micros = match fields.get(2) {
                    Some(Value::Int(us)) => *us as u64,
                    _ => 0,
                };
                name.to_ascii_uppercase()
                    .starts_with("EVALSHA")
                    .then_some(micros)
            }
            _ => None,
        })
        .max()
        .expect("the call is in the slow log")
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let server = server::RedisProcess::start(&["--slowlog-log-slower-than", "0"]);
    let mut con = server.connection();
    redis_patterns::load_all(&mut con).unwrap();
    let mut cases = cases();

    let missing: Vec<&str> = catalog::scripts()
        .iter()
        .map(|s| s.name)
        .filter(|name| !cases.iter().any(|c| c.script == *name))
        .collect();
    assert!(
        missing.is_empty(),
        "scripts without a worst case: {missing:?}"
    );
    if let Ok(only) = std::env::var("CASES") {
        let prefixes: Vec<&str> = only.split(',').map(str::trim).collect();
        cases.retain(|c| prefixes.iter().any(|p| c.script.starts_with(p)));
    }

    println!("Each script at its worst: server time of one call (SLOWLOG), slowest of {runs} runs");
    println!("{:<34} {:<52} {:>10}", "script", "input", "µs");
    let mut over = Vec::new();
    for case in &cases {
        let script = catalog::find(case.script).expect("a script of the catalogue");
        let mut slowest = 0;
        for _ in 0..runs {
            let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
            (case.setup)(&mut con);
            std::thread::sleep(Duration::from_millis(2));
            slowest = slowest.max(time_one(&mut con, script, case));
        }
        let mark = if slowest < BOUND_US {
            ""
        } else {
            "  over 10 ms"
        };
        println!("{:<34} {:<52} {slowest:>10}{mark}", case.script, case.input);
        if slowest >= BOUND_US {
            over.push(case.script);
        }
    }
    if over.is_empty() {
        println!("\nEvery script under 10 ms.");
    } else {
        println!("\nOver 10 ms on this run: {over:?}");
    }
}

/// The keys of topic `t`, in the order its scripts take them.
fn topic_keys() -> Vec<String> {
    s(&[
        "{t}:stream",
        "{t}:seq",
        "{t}:subs",
        "{t}:cursors",
        "{t}:positions",
    ])
}

/// Topic `t` with `n` messages of 1 kB, subscription `s` at the first of them and ten
/// subscriptions whose lease ran out, at the start.
fn topic_backlog(con: &mut redis::Connection, n: u64) {
    use redis_patterns::reliable_topic::{From, ReliableTopic};
    let topic = ReliableTopic::new("t", 10_000_000).unwrap();
    let lease = std::time::Duration::from_secs(60);
    topic.subscribe("s", lease, From::Newest).run(con).unwrap();
    for i in 0..10 {
        topic
            .subscribe(
                &format!("lapsed{i}"),
                std::time::Duration::from_millis(1),
                From::Newest,
            )
            .run(con)
            .unwrap();
    }
    let payload = "x".repeat(1000);
    let mut batch = redis_patterns::Batch::new();
    for _ in 0..n {
        let _ = batch.add(topic.publish(payload.as_str()));
    }
    batch.run(con).unwrap();
    // Message ids 1-0, 2-0, …: rewritten so that the cases can name them.
    type Entries = Vec<(String, Vec<(String, Vec<u8>)>)>;
    let entries: Entries = redis::cmd("XRANGE")
        .arg("{t}:stream")
        .arg("-")
        .arg("+")
        .query(con)
        .unwrap();
    let _: () = redis::cmd("DEL").arg("{t}:stream").query(con).unwrap();
    for (i, (_, fields)) in entries.into_iter().enumerate() {
        let mut add = redis::cmd("XADD");
        add.arg("{t}:stream").arg(format!("{}-0", i + 1));
        for (field, value) in fields {
            add.arg(field).arg(value);
        }
        let _: String = add.query(con).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(5));
}

/// The token the rw_lock and fair_lock cases hold and call with.
const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// The keys of the read-write lock `{r}`, by their names in the headers.
fn rw(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("{{r}}:{n}")).collect()
}

/// The keys of the fair lock `{f}`, by their names in the headers.
fn fair(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| format!("{{f}}:{n}")).collect()
}

/// Read-write lock `{r}`: TOKEN reads (one hold) beside `live` other readers, `lapsed`
/// lapsed read holds and `places` lapsed writer places (or live ones when no lapsed
/// holds are asked for); and, with `writing`, TOKEN holds the write hold.
fn rw_state(con: &mut redis::Connection, live: usize, lapsed: usize, places: usize, writing: bool) {
    lua(
        con,
        "local live, lapsed, places = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
         local far = 4102444800000
         redis.call('ZADD', KEYS[2], far, ARGV[5])
         redis.call('HSET', KEYS[3], ARGV[5], 1)
         for i = 0, live + lapsed - 1, 1000 do
           local z, h = {}, {}
           for j = i, math.min(i + 999, live + lapsed - 1) do
             z[#z + 1] = j < live and far or 1
             z[#z + 1] = 'r' .. j
             h[#h + 1] = 'r' .. j
             h[#h + 1] = 1
           end
           redis.call('ZADD', KEYS[2], unpack(z))
           redis.call('HSET', KEYS[3], unpack(h))
         end
         for i = 0, places - 1, 1000 do
           local z = {}
           for j = i, math.min(i + 999, places - 1) do
             z[#z + 1] = lapsed > 0 and 1 or far
             z[#z + 1] = 'w' .. j
           end
           redis.call('ZADD', KEYS[4], unpack(z))
         end
         if ARGV[4] == '1' then
           redis.call('HSET', KEYS[1], 't', ARGV[5], 'n', 1, 'f', 1)
           redis.call('PEXPIRE', KEYS[1], 3600000)
         end",
        &["{r}:writer", "{r}:readers", "{r}:read_holds", "{r}:intents"],
        &[
            &live.to_string(),
            &lapsed.to_string(),
            &places.to_string(),
            if writing { "1" } else { "0" },
            TOKEN,
        ],
    );
}

/// Fair lock `{f}`: held by TOKEN, a queue of `lapsed` lapsed places at its head, then
/// live ones up to `n` waiters, TOKEN among them when nothing lapsed.
fn fair_state(con: &mut redis::Connection, n: usize, lapsed: usize) {
    lua(
        con,
        "local n, lapsed = tonumber(ARGV[1]), tonumber(ARGV[2])
         local far = 4102444800000
         for i = 0, n - 1, 1000 do
           local q, p = {}, {}
           for j = i, math.min(i + 999, n - 1) do
             q[#q + 1] = j + 1
             q[#q + 1] = 'q' .. j
             p[#p + 1] = j < lapsed and 1 or far
             p[#p + 1] = 'q' .. j
           end
           redis.call('ZADD', KEYS[2], unpack(q))
           redis.call('ZADD', KEYS[3], unpack(p))
         end
         if lapsed == 0 then
           redis.call('ZADD', KEYS[2], n + 1, ARGV[3])
           redis.call('ZADD', KEYS[3], far, ARGV[3])
           redis.call('HSET', KEYS[1], 't', ARGV[3], 'f', 1)
           redis.call('PEXPIRE', KEYS[1], 3600000)
         end",
        &["{f}:owner", "{f}:queue", "{f}:places"],
        &[&n.to_string(), &lapsed.to_string(), TOKEN],
    );
}
