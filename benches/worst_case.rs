//! Every script at its worst: the largest input its header accepts, against the keyspace
//! that makes it work hardest, timed by the server itself (SLOWLOG, microseconds spent
//! in the call, network excluded). One call of any script must stay under 10 ms.
//!
//! ```sh
//! cargo bench --bench worst_case              # 5 runs of each case, the slowest shown
//! RUNS=20 cargo bench --bench worst_case
//! CASES=session/,web_session/update cargo bench --bench worst_case   # the cases of these scripts only
//! RUNS=1 cargo test --bench worst_case        # what CI runs: every case once, in a debug build
//! ```
//!
//! Each case names its script; a script of the catalogue without a case fails the run, so
//! a new script gets its worst case the day it lands. Every case's keys are built from its
//! script's `@key` templates, and its setup fills them by the header's key names, so a
//! header that gains, drops or renames a key changes the cases with it; a case whose
//! arguments no longer fit its header fails the run (the script's `BAD_ARGS`), as does
//! any error reply. Timings are noisy on a shared machine: read the slowest of several
//! runs against the 10 ms bound, not the digits, and the fastest for what a quiet server
//! takes. CI runs every case once and fails on errors only, never on a timing.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

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
    setup: fn(&mut redis::Connection, &Keys),
    keys: Keys,
    args: Vec<Vec<u8>>,
}

/// The keys of one call, built from its script's `@key` templates with the values of
/// their placeholders: the fixed keys in header order, then the variadic key's items, a
/// round of forms per item.
#[derive(Debug, Clone)]
struct Keys {
    script: &'static Script,
    values: Vec<(&'static str, String)>,
    keys: Vec<String>,
    /// How many of `keys` are fixed (the variadic key's items follow them).
    fixed: usize,
}

impl Keys {
    /// `script`'s keys, with `values` for their placeholders; a variadic key gets no item.
    fn of(script: &str, values: &[(&'static str, &str)]) -> Keys {
        Keys::with_items(script, values, Vec::<Vec<(&'static str, String)>>::new())
    }

    /// `script`'s keys, with `values` for the placeholders every key shares, and for its
    /// variadic key a round of forms per entry of `items`, each with the values that
    /// change per item (`prefix`, `tag`, `row`, `key` for a free key, …).
    fn with_items(
        script: &str,
        values: &[(&'static str, &str)],
        items: impl IntoIterator<Item = Vec<(&'static str, String)>>,
    ) -> Keys {
        let script = catalog::find(script)
            .unwrap_or_else(|| panic!("{script}: not a script of the catalogue"));
        let values: Vec<(&'static str, String)> = values
            .iter()
            .map(|(param, value)| (*param, value.to_string()))
            .collect();
        let build = |form: &redis_patterns::KeyForm, item: &[(&'static str, String)]| {
            let given: Vec<&str> = form
                .params
                .iter()
                .map(|param| {
                    item.iter()
                        .chain(&values)
                        .find(|(name, _)| name == param)
                        .map(|(_, value)| value.as_str())
                        .unwrap_or_else(|| {
                            panic!("{}: no value for <{param}> of `{}`", script.name, form.text)
                        })
                })
                .collect();
            form.build(&given)
                .unwrap_or_else(|err| panic!("{}: `{}`: {err}", script.name, form.text))
        };
        let forms = |key: &redis_patterns::Param| {
            key.template
                .unwrap_or_else(|| panic!("{}: key {} has no template", script.name, key.name))
                .forms
        };
        let mut keys: Vec<String> = script
            .keys
            .iter()
            .filter(|key| !key.variadic)
            .map(|key| build(&forms(key)[0], &[]))
            .collect();
        let fixed = keys.len();
        let items: Vec<_> = items.into_iter().collect();
        match script.keys.iter().find(|key| key.variadic) {
            Some(variadic) => {
                for item in &items {
                    keys.extend(forms(variadic).iter().map(|form| build(form, item)));
                }
            }
            None => assert!(items.is_empty(), "{}: no variadic key", script.name),
        }
        Keys {
            script,
            values,
            keys,
            fixed,
        }
    }

    /// The keys of `script` (of the same family) for the same placeholder values: what a
    /// setup fills beside the call's own keys.
    fn like(&self, script: &str) -> Keys {
        let values: Vec<(&'static str, &str)> = self
            .values
            .iter()
            .map(|(param, value)| (*param, value.as_str()))
            .collect();
        Keys::of(script, &values)
    }

    /// The value of placeholder `param`, as the call's keys were built with it.
    fn value(&self, param: &str) -> &str {
        self.values
            .iter()
            .find(|(name, _)| *name == param)
            .map(|(_, value)| value.as_str())
            .unwrap_or_else(|| panic!("{}: no value for <{param}>", self.script.name))
    }

    /// The fixed keys `names`, in that order: the KEYS of a setup's Lua.
    fn named(&self, names: &[&str]) -> Vec<&str> {
        names.iter().map(|name| &self[*name]).collect()
    }

    /// The variadic key's items.
    fn items(&self) -> &[String] {
        &self.keys[self.fixed..]
    }

    /// Every key, in the order the call takes them.
    fn all(&self) -> &[String] {
        &self.keys
    }
}

impl std::ops::Index<&str> for Keys {
    type Output = str;

    /// The fixed key of the header's name `name`.
    fn index(&self, name: &str) -> &str {
        let at = self
            .script
            .keys
            .iter()
            .filter(|key| !key.variadic)
            .position(|key| key.name == name)
            .unwrap_or_else(|| panic!("{} has no key {name}", self.script.name));
        &self.keys[at]
    }
}

/// One value per item of a variadic key: `param` = each of `values`.
fn each<T: ToString>(
    param: &'static str,
    values: impl IntoIterator<Item = T>,
) -> Vec<Vec<(&'static str, String)>> {
    values
        .into_iter()
        .map(|value| vec![(param, value.to_string())])
        .collect()
}

fn strings(items: impl IntoIterator<Item = String>) -> Vec<Vec<u8>> {
    items.into_iter().map(String::into_bytes).collect()
}

/// A semaphore of capacity 1,000 with 500 live holdings of 1 permit (KEYS: state, leases,
/// held).
const SEMAPHORE_FILL: &str = "for i = 1, 500 do
    redis.call('HSET', KEYS[3], 'live' .. i, 1)
    redis.call('ZADD', KEYS[2], 99999999999999, 'live' .. i)
  end
  redis.call('HSET', KEYS[1], 'capacity', 1000, 'used', 500)";

/// Runs a semaphore setup's Lua over the semaphore's keys (KEYS: state, leases, held,
/// queue, places, bell).
fn semaphore_lua(con: &mut redis::Connection, k: &Keys, body: &str) {
    let all = k.like("semaphore/acquire");
    lua(
        con,
        body,
        &all.named(&["state", "leases", "held", "queue", "places", "bell"]),
        &[],
    );
}

/// What a [`fill_lua`] wrote into each of its keys, as its ttl (ms, 0 for none) and DUMP
/// payload (`None` for a key it left absent), by its body, number of keys and arguments.
type Filled = HashMap<(String, usize, Vec<String>), Vec<(i64, Option<Vec<u8>>)>>;

/// Runs `body` over `keys` as [`lua`] does, for a setup that fills big keys: the first
/// time only, for the same body, number of keys and arguments, while every key is
/// absent; later, RESTORE puts what it wrote into the keys given then, several times
/// faster than filling them anew (a million sorted-set members in about a second rather
/// than four), which keeps a whole run short. Only for bodies that touch nothing but
/// their KEYS, write the same whatever the keys are named, and read no clock.
fn fill_lua(con: &mut redis::Connection, body: &str, keys: &[&str], args: &[&str]) {
    static FILLED: OnceLock<Mutex<Filled>> = OnceLock::new();
    let filled = FILLED.get_or_init(Mutex::default);
    let id = (
        body.to_owned(),
        keys.len(),
        args.iter().map(|a| a.to_string()).collect(),
    );
    let absent = redis::cmd("EXISTS").arg(keys).query::<usize>(con).unwrap() == 0;
    if !absent {
        return lua(con, body, keys, args);
    }
    if let Some(dumps) = filled.lock().unwrap().get(&id) {
        for (key, (ttl, dump)) in keys.iter().zip(dumps) {
            if let Some(dump) = dump {
                redis::cmd("RESTORE")
                    .arg(key)
                    .arg(ttl)
                    .arg(dump)
                    .exec(con)
                    .unwrap();
            }
        }
        return;
    }
    lua(con, body, keys, args);
    let dumps = keys
        .iter()
        .map(|key| {
            let ttl: i64 = redis::cmd("PTTL").arg(key).query(con).unwrap();
            let dump = redis::cmd("DUMP").arg(key).query(con).unwrap();
            (ttl.max(0), dump)
        })
        .collect();
    filled.lock().unwrap().insert(id, dumps);
}

/// `n` members `<prefix><i>` added to `key` with `command` (`SADD`, `RPUSH`), in chunks.
fn fill(con: &mut redis::Connection, command: &str, key: &str, prefix: &str, n: usize) {
    fill_lua(
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

/// The placeholder values of the instances the cases run on.
const APP_LOG: &[(&str, &str)] = &[("name", "l"), ("severity", "info")];
const BARRIER: &[(&str, &str)] = &[("name", "b")];
const BLOOM: &[(&str, &str)] = &[("filter", "f")];
const FAIR_LOCK: &[(&str, &str)] = &[("name", "f"), ("token", TOKEN)];
const GEO: &[(&str, &str)] = &[("key", "{g}")];
const LATCH: &[(&str, &str)] = &[("name", "c")];
const BOARD: &[(&str, &str)] = &[("key", "{b}")];
const POOL: &[(&str, &str)] = &[("name", "p")];
const ROW_CACHE: &[(&str, &str)] = &[("namespace", "rc")];
const RW_LOCK: &[(&str, &str)] = &[("name", "r")];
const SEMAPHORE: &[(&str, &str)] = &[("name", "s"), ("token", "ffffffffffffffffffffffffffffffff")];
const SESSION: &[(&str, &str)] = &[("namespace", "s"), ("uid", "u")];
const LINKS: &[(&str, &str)] = &[("name", "s")];
const TOPIC: &[(&str, &str)] = &[("name", "t")];
const VOTE: &[(&str, &str)] = &[("namespace", "v"), ("subject", "s7")];
const QUEUE: &[(&str, &str)] = &[("name", "w")];
const WEB: &[(&str, &str)] = &[("namespace", "w")];

/// The 512 rows of matrix `m`, by the templates of `script` (whose rows are
/// `{<id>}:row:<row>`).
fn rows(script: &str) -> Keys {
    Keys::with_items(script, &[("id", "m")], each("row", 0..512))
}

/// The same 512 rows, as the free keys of `script` (whose rows are `<key>`).
fn rows_as_keys(script: &str) -> Keys {
    Keys::with_items(
        script,
        &[],
        each("key", rows("matrix/list_get_all").items().to_vec()),
    )
}

/// The keys of `web_session/clean` that ends the last 100 of 100,000 sessions.
fn web_clean_keys() -> Keys {
    Keys::with_items(
        "web_session/clean",
        WEB,
        each("token", (100_000 - 100..100_000).map(|j| format!("m{j}"))),
    )
}

/// Its arguments: each of those sessions with the time it was last seen.
fn web_clean_args() -> Vec<Vec<u8>> {
    let mut args = strings(["0".into(), "1".into()]);
    for j in 100_000 - 100..100_000u64 {
        args.push(format!("m{j}").into_bytes());
        args.push((4_102_444_800_000 - j).to_string().into_bytes());
    }
    args
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            script: "app_log/common",
            input: "a rotation: 1,000,000 messages moved, 1,000,000 of the hour before freed",
            setup: |con, k| {
                fill_scored(con, &k["common"], 1_000_000);
                fill_scored(con, &k["last"], 1_000_000);
                fill(con, "RPUSH", &k["recent"], "entry ", 10_000);
                lua(
                    con,
                    "redis.call('SET', KEYS[1], '3600')",
                    &[&k["start"]],
                    &[],
                );
            },
            keys: Keys::of("app_log/common", APP_LOG),
            args: strings(["a message".into(), "10000".into()]),
        },
        Case {
            script: "app_log/recent",
            input: "10,000 entries kept, one trimmed",
            setup: |con, k| fill(con, "RPUSH", &k["recent"], "entry ", 10_000),
            keys: Keys::of("app_log/recent", APP_LOG),
            args: strings(["a message".into(), "10000".into()]),
        },
        Case {
            script: "autocomplete/feed",
            input: "64 prefixes, each table 1000 over a cap of 1000 (100 dropped from each)",
            setup: |con, k| {
                for table in k.items() {
                    fill_scored(con, table, 2000);
                }
            },
            keys: Keys::with_items(
                "autocomplete/feed",
                &[("subject", "ac")],
                each("prefix", (1..=64).map(|p| "x".repeat(p))),
            ),
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
            setup: |con, k| {
                for table in k.items() {
                    fill_scored(con, table, 10_000);
                }
            },
            keys: Keys::with_items(
                "autocomplete/remove",
                &[("subject", "ac")],
                each("prefix", (1..=64).map(|p| "x".repeat(p))),
            ),
            args: strings(["m500".into()]),
        },
        Case {
            script: "bloom/add",
            input: "the most items a call takes (`MAX_ITEMS_PER_CALL`), new, 30 hashes each, into a new partition of 2^24 bits",
            setup: |_, _| {},
            keys: Keys::of("bloom/add", BLOOM),
            args: strings(
                ["388965", "1000000000", "1", "0"]
                    .map(String::from)
                    .into_iter()
                    .chain(
                        (0..redis_patterns::bloom::MAX_ITEMS_PER_CALL).map(|i| format!("item:{i}")),
                    ),
            ),
        },
        Case {
            script: "bloom/check",
            input: "the most items a call takes, all added (every bit read), 30 hashes each, in a partition of 2^24 bits",
            setup: |con, k| {
                let items: Vec<String> = (0..redis_patterns::bloom::MAX_ITEMS_PER_CALL)
                    .map(|i| format!("item:{i}"))
                    .collect();
                redis_patterns::bloom::BloomFilter::new(k.value("filter"), 388_965, 1_000_000_000)
                    .unwrap()
                    .add(&items)
                    .run(con)
                    .unwrap();
            },
            keys: Keys::of("bloom/check", BLOOM),
            args: strings(
                ["388965", "1000000000", "1", "0"]
                    .map(String::from)
                    .into_iter()
                    .chain(
                        (0..redis_patterns::bloom::MAX_ITEMS_PER_CALL).map(|i| format!("item:{i}")),
                    ),
            ),
        },
        Case {
            script: "bloom/info",
            input: "a partition",
            setup: |con, k| {
                redis_patterns::bloom::BloomFilter::new(k.value("filter"), 100, 10)
                    .unwrap()
                    .add(&["a", "b"])
                    .run(con)
                    .unwrap();
            },
            keys: Keys::of("bloom/info", BLOOM),
            args: vec![],
        },
        Case {
            script: "cache/claim",
            input: "a miss: GET, STRLEN, SET NX",
            setup: |_, _| {},
            keys: Keys::of("cache/claim", &[("name", "v")]),
            args: strings(["t".repeat(64), "999999999999999".into()]),
        },
        Case {
            script: "cache/fill",
            input: "a 1 MiB value, the marker held",
            setup: |con, k| {
                lua(con, "redis.call('SET', KEYS[1], 't')", &[&k["marker"]], &[]);
            },
            keys: Keys::of("cache/fill", &[("name", "v")]),
            args: vec![
                b"t".to_vec(),
                vec![b'x'; 1 << 20],
                b"999999999999999".to_vec(),
            ],
        },
        Case {
            script: "cache/hash_set",
            input: "1000 fields replacing a hash of 1000",
            setup: |con, k| {
                let mut cmd = redis::cmd("HSET");
                cmd.arg(&k["cache"]);
                for i in 0..1000 {
                    cmd.arg(format!("old{i}")).arg("v");
                }
                let _: () = cmd.query(con).unwrap();
            },
            keys: Keys::of("cache/hash_set", &[("name", "h")]),
            args: strings(
                std::iter::once("999999999999999".to_string())
                    .chain((0..1000).flat_map(|i| [format!("field{i}"), format!("value{i}")])),
            ),
        },
        Case {
            script: "circular_queue/unique_insert",
            input: "1000 items, all queued, in a queue of 5,000",
            setup: |con, k| fill(con, "RPUSH", &k["queue"], "item:", 5000),
            keys: Keys::of("circular_queue/unique_insert", &[("key", "q")]),
            args: strings((0..1000).map(|i| format!("item:{}", i * 5))),
        },
        Case {
            script: "counter/hash_reset",
            input: "a 64-bit value over a 64-bit one",
            setup: |con, k| {
                let _: () = redis::cmd("HSET")
                    .arg(&k["counters"])
                    .arg("f")
                    .arg(i64::MAX)
                    .query(con)
                    .unwrap();
            },
            keys: Keys::of("counter/hash_reset", &[("key", "h")]),
            args: strings(["f".into(), i64::MIN.to_string()]),
        },
        Case {
            script: "barrier/arrive",
            input: "the 10,000th party: a release, 9,999 parties let go, history full (1000)",
            setup: |con, k| crowded_barrier(con, k, 9_999, 99999999999999),
            keys: Keys::of("barrier/arrive", BARRIER),
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
            setup: |con, k| crowded_barrier(con, k, 10_000, 99999999999999),
            keys: Keys::of("barrier/leave", BARRIER),
            args: strings(["00000000000000000000000000000007".into()]),
        },
        Case {
            script: "barrier/reset",
            input: "10,000 parties waiting",
            setup: |con, k| crowded_barrier(con, k, 10_000, 99999999999999),
            keys: Keys::of("barrier/reset", BARRIER),
            args: vec![],
        },
        Case {
            script: "barrier/state",
            input: "10,000 parties waiting, their leases run out",
            setup: |con, k| crowded_barrier(con, k, 10_000, 1),
            keys: Keys::of("barrier/state", BARRIER),
            args: vec![],
        },
        Case {
            script: "fenced_lock/acquire",
            input: "a free lock",
            setup: |_, _| {},
            keys: Keys::of("fenced_lock/acquire", &[("name", "l")]),
            args: strings(["999999999999999".into()]),
        },
        Case {
            script: "fenced_write/delete",
            input: "a hash of 1,000,000 fields (UNLINK frees it in the background)",
            setup: |con, k| {
                fenced_hash(con, k, 1_000_000);
                fenced_max_token(con, k);
            },
            keys: Keys::of("fenced_write/delete", &[("key", "fw")]),
            args: strings(["9007199254740991".into()]),
        },
        Case {
            script: "fenced_write/fence",
            input: "a token above the highest seen",
            setup: fenced_max_token,
            keys: Keys::of("fenced_write/fence", &[("key", "fw")]),
            args: strings(["9007199254740991".into()]),
        },
        Case {
            script: "fenced_write/hset",
            input: "1,000 pairs into a hash of 100,000 fields",
            setup: |con, k| {
                fenced_hash(con, k, 100_000);
                fenced_max_token(con, k);
            },
            keys: Keys::of("fenced_write/hset", &[("key", "fw")]),
            args: strings(
                std::iter::once("9007199254740991".to_string())
                    .chain((0..2000).map(|i| format!("new:{i}"))),
            ),
        },
        Case {
            script: "fenced_write/set",
            input: "a 1 MiB value with a ttl over a 1 MiB value",
            setup: |con, k| {
                let _: () = redis::cmd("SET")
                    .arg(&k["resource"])
                    .arg(vec![b'y'; 1 << 20])
                    .query(con)
                    .unwrap();
                fenced_max_token(con, k);
            },
            keys: Keys::of("fenced_write/set", &[("key", "fw")]),
            args: vec![
                b"9007199254740991".to_vec(),
                b"999999999999999".to_vec(),
                vec![b'x'; 1 << 20],
            ],
        },
        Case {
            script: "fixed_length_queue/enqueue",
            input: "5,000 items into an empty queue",
            setup: |_, _| {},
            keys: Keys::of("fixed_length_queue/enqueue", &[("key", "q")]),
            args: strings(
                std::iter::once("999999999999999".to_string())
                    .chain((0..5000).map(|i| format!("item:{i}"))),
            ),
        },
        Case {
            script: "fixed_length_queue/enqueue",
            input: "5,000 newest items trimmed from an overfull queue",
            setup: |con, k| fill(con, "RPUSH", &k["queue"], "item:", 15_000),
            keys: Keys::of("fixed_length_queue/enqueue", &[("key", "q")]),
            args: strings(["10000".to_string(), "new".to_string()]),
        },
        Case {
            script: "fixed_length_queue/faded_enqueue",
            input: "5,000 items pushed, 5,000 evicted",
            setup: |con, k| fill(con, "RPUSH", &k["queue"], "old:", 5000),
            keys: Keys::of("fixed_length_queue/faded_enqueue", &[("key", "q")]),
            args: strings(
                std::iter::once("5000".to_string()).chain((0..5000).map(|i| format!("new:{i}"))),
            ),
        },
        Case {
            script: "geo/distance",
            input: "two live pins among 100,000",
            setup: crowd,
            keys: Keys::of("geo/distance", GEO),
            args: strings(["m:1".into(), "m:2".into()]),
        },
        Case {
            script: "geo/locate",
            input: "a live pin among 100,000",
            setup: crowd,
            keys: Keys::of("geo/locate", GEO),
            args: strings(["m:1".into()]),
        },
        Case {
            script: "geo/neighbours",
            input: "a miss: the 100 nearest of 10,000 within 1 km, 1000 expired pins",
            setup: crowd,
            keys: Keys::of("geo/neighbours", &[("key", "{g}"), ("member", "m:1")]),
            args: strings(["m:1".into(), "100".into(), "999999999999999".into()]),
        },
        Case {
            script: "geo/pin",
            input: "a pin with a ttl, 10 expired pins deleted",
            setup: crowd,
            keys: Keys::of("geo/pin", GEO),
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
            keys: Keys::of("geo/purge", GEO),
            args: strings(["1000".into()]),
        },
        Case {
            script: "geo/search",
            input: "the 100 nearest of 10,000 within 1 km, 1000 expired pins",
            setup: crowd,
            keys: Keys::of("geo/search", GEO),
            args: strings(["m:1".into(), "1".into(), "100".into()]),
        },
        Case {
            script: "geo/size",
            input: "100,000 pins, 1000 expired",
            setup: crowd,
            keys: Keys::of("geo/size", GEO),
            args: vec![],
        },
        Case {
            script: "identity_lock/extend",
            input: "a held lock",
            setup: held_lock,
            keys: Keys::of("identity_lock/extend", &[("key", "l")]),
            args: strings(["t".into(), "999999999999999".into()]),
        },
        Case {
            script: "identity_lock/lease",
            input: "a held lock",
            setup: held_lock,
            keys: Keys::of("identity_lock/lease", &[("key", "l")]),
            args: strings(["t".into()]),
        },
        Case {
            script: "identity_lock/release",
            input: "a held lock",
            setup: held_lock,
            keys: Keys::of("identity_lock/release", &[("key", "l")]),
            args: strings(["t".into()]),
        },
        Case {
            script: "latch/arm",
            input: "an open latch of 10,000 with 10,000 ids left behind (a latch another client damaged)",
            setup: |con, k| crowded_latch(con, k, 0),
            keys: Keys::of("latch/arm", LATCH),
            args: strings(["10000".into(), "999999999999999".into()]),
        },
        Case {
            script: "latch/count_down",
            input: "the last count-down of 10,000, a 256-byte id: 9,999 ids freed, waiters woken",
            setup: |con, k| crowded_latch(con, k, 1),
            keys: Keys::of("latch/count_down", LATCH),
            args: strings(["i".repeat(256), "1".into()]),
        },
        Case {
            script: "latch/state",
            input: "any latch",
            setup: |con, k| crowded_latch(con, k, 1),
            keys: Keys::of("latch/state", LATCH),
            args: vec![],
        },
        Case {
            script: "latch/wait",
            input: "a closed latch, a wake stream",
            setup: |con, k| crowded_latch(con, k, 1),
            keys: Keys::of("latch/wait", LATCH),
            args: strings(["1".into()]),
        },
        Case {
            script: "leaderboard/adopt",
            input: "1000 distinct scores new to levels of 999,000, among 1,000,000",
            setup: |con, k| {
                board(con, &k["board"], &k["levels"], 1_000_000);
                lua(
                    con,
                    "redis.call('ZREMRANGEBYRANK', KEYS[1], -1000, -1)",
                    &[&k["levels"]],
                    &[],
                );
            },
            keys: Keys::of("leaderboard/adopt", BOARD),
            args: strings(["".into(), "1000".into()]),
        },
        Case {
            script: "leaderboard/around",
            input: "100 above and 100 below, all scores distinct, among 1,000,000",
            setup: |con, k| board(con, &k["board"], &k["levels"], 1_000_000),
            keys: Keys::of("leaderboard/around", BOARD),
            args: strings(["i500000".into(), "100".into(), "dense".into()]),
        },
        Case {
            script: "leaderboard/remove",
            input: "the only item of its score, among 1,000,000",
            setup: |con, k| board(con, &k["board"], &k["levels"], 1_000_000),
            keys: Keys::of("leaderboard/remove", BOARD),
            args: strings(["i500000".into()]),
        },
        Case {
            script: "leaderboard/set",
            input: "a new score for the only item of its old one, among 1,000,000",
            setup: |con, k| board(con, &k["board"], &k["levels"], 1_000_000),
            keys: Keys::of("leaderboard/set", BOARD),
            args: strings(["i500000".into(), "0.5".into()]),
        },
        Case {
            script: "leaderboard/standing",
            input: "10 boards of 100,000",
            setup: |con, k| {
                for pair in k.items().chunks(2) {
                    board(con, &pair[0], &pair[1], 100_000);
                }
            },
            keys: Keys::with_items(
                "leaderboard/standing",
                &[],
                each("key", (0..10).map(|b| format!("{{b}}:{b}"))),
            ),
            args: strings(["i50000".into()]),
        },
        Case {
            script: "leaderboard/update",
            input: "the only item of its score, among 1,000,000",
            setup: |con, k| board(con, &k["board"], &k["levels"], 1_000_000),
            keys: Keys::of("leaderboard/update", BOARD),
            args: strings(["i500000".into(), "0.5".into()]),
        },
        Case {
            script: "logical_matrix/get_all",
            input: "512 rows of 2 KiB (1 MiB)",
            setup: rows_of_2_kib,
            keys: rows("logical_matrix/get_all"),
            args: vec![],
        },
        Case {
            script: "logical_matrix/init",
            input: "512 rows of 16,384 bits (1 MiB)",
            setup: |_, _| {},
            keys: rows_as_keys("logical_matrix/init"),
            args: std::iter::once(b"16384".to_vec())
                .chain((0..512).map(|_| vec![0x5a; 2048]))
                .collect(),
        },
        Case {
            script: "matrix/bitfield_init",
            input: "512 rows of 256 i64 cells (1 MiB)",
            setup: |_, _| {},
            keys: rows_as_keys("matrix/bitfield_init"),
            args: [b"i64".to_vec(), b"256".to_vec()]
                .into_iter()
                .chain((0..512).map(|_| vec![0x5a; 2048]))
                .collect(),
        },
        Case {
            script: "matrix/bitmap_get_all",
            input: "512 rows of 2 KiB (1 MiB)",
            setup: rows_of_2_kib,
            keys: rows("matrix/bitmap_get_all"),
            args: vec![],
        },
        Case {
            script: "matrix/list_get_all",
            input: "512 rows of 16 cells (8,192 cells)",
            setup: |con, k| {
                let rows: Vec<&str> = k.items().iter().map(String::as_str).collect();
                fill_lua(
                    con,
                    "for i = 1, #KEYS do
                       for _ = 1, 8 do
                         redis.call('RPUSH', KEYS[i], '-9223372036854775808', '9223372036854775807')
                       end
                     end",
                    &rows,
                    &[],
                )
            },
            keys: rows("matrix/list_get_all"),
            args: vec![],
        },
        Case {
            script: "matrix/list_init",
            input: "512 rows of 4 cells, with values",
            setup: |_, _| {},
            keys: rows("matrix/list_init"),
            args: std::iter::once(b"4".to_vec())
                .chain((0..2048).map(|_| i64::MIN.to_string().into_bytes()))
                .collect(),
        },
        Case {
            script: "matrix/list_init",
            input: "1 row of 2048 zeros",
            setup: |_, _| {},
            keys: Keys::with_items("matrix/list_init", &[("id", "m")], each("row", [0])),
            args: strings(["2048".into()]),
        },
        Case {
            script: "online_friends/minute_friends",
            input: "300 friends, all but one in each of 10 minutes of 100,000 users",
            setup: minutes_crowd,
            keys: minutes(),
            args: vec![],
        },
        Case {
            script: "online_friends/minute_friends",
            input: "300 friends, none of them in 10 minutes of 100,000 users (each looked up in each)",
            setup: |con, k| {
                minutes_crowd(con, k);
                lua(
                    con,
                    "redis.call('DEL', KEYS[1])
                     for i = 0, 299 do redis.call('SADD', KEYS[1], 'away' .. i) end",
                    &[&k["friends"]],
                    &[],
                );
            },
            keys: minutes(),
            args: vec![],
        },
        Case {
            script: "online_friends/minute_visit",
            input: "a user in a set of 100,000",
            setup: minutes_crowd,
            keys: Keys::of(
                "online_friends/minute_visit",
                &[("ns", "o"), ("minute", "00")],
            ),
            args: strings(["u7".into(), "3000000".into()]),
        },
        Case {
            script: "online_friends/seen_friends",
            input: "1,000 friends among 1,000,000 users seen",
            setup: seen_crowd,
            keys: Keys::of("online_friends/seen_friends", &[("ns", "o"), ("user", "u")]),
            args: strings(["1700000000000".into(), "600000".into()]),
        },
        Case {
            script: "online_friends/seen_visit",
            input: "100 stale users forgotten, among 1,000,000",
            setup: seen_crowd,
            keys: Keys::of("online_friends/seen_visit", &[("ns", "o")]),
            args: strings(["u7".into(), "1700000000000".into(), "1".into()]),
        },
        Case {
            script: "pagination/add",
            input: "1000 items onto 1,000,000, 2,000,000 ever added",
            setup: |con, k| {
                fill(con, "RPUSH", &k["list"], "item", 1_000_000);
                lua(
                    con,
                    "redis.call('SET', KEYS[1], '2000000')",
                    &[&k["added"]],
                    &[],
                );
            },
            keys: Keys::of("pagination/add", &[("key", "{pages}")]),
            args: strings((0..1000).map(|i| format!("new:{i}"))),
        },
        Case {
            script: "pagination/page",
            input: "1000 items from the middle of 1,000,000",
            setup: |con, k| fill(con, "RPUSH", &k["list"], "item", 1_000_000),
            keys: Keys::of("pagination/page", &[("key", "{pages}")]),
            args: strings(["500000".into(), "1000".into()]),
        },
        Case {
            script: "rate_limiter/duration",
            input: "a full window",
            setup: |con, k| {
                lua(
                    con,
                    "redis.call('SET', KEYS[1], 5, 'PX', 60000)",
                    &[&k["counter"]],
                    &[],
                );
            },
            keys: Keys::of(
                "rate_limiter/duration",
                &[("prefix", "rl"), ("uid", "u"), ("action", "c")],
            ),
            args: strings(["5".into()]),
        },
        Case {
            script: "rate_limiter/gcra",
            input: "a refused request",
            setup: |_, _| {},
            keys: Keys::of(
                "rate_limiter/gcra",
                &[("prefix", "rl"), ("uid", "u"), ("action", "tat")],
            ),
            args: strings(["1".into(), "1".into(), "10000000000".into(), "1".into()]),
        },
        Case {
            script: "rate_limiter/is_permitted",
            input: "an admitted attempt",
            setup: |_, _| {},
            keys: Keys::of(
                "rate_limiter/is_permitted",
                &[("prefix", "rl"), ("uid", "u"), ("action", "c")],
            ),
            args: strings([
                "999999999999999".into(),
                "10000000000".into(),
                "999999999999999".into(),
            ]),
        },
        Case {
            script: "rate_limiter/sliding_window",
            input: "refused, cost 10^6, against 10^6 logged calls",
            setup: |con, k| sliding_log(con, &k["log"], 1_000_000, 0),
            keys: Keys::of(
                "rate_limiter/sliding_window",
                &[("prefix", "rl"), ("uid", "u"), ("action", "log")],
            ),
            args: strings(["1000000".into(), "10000000000".into(), "1000000".into()]),
        },
        Case {
            script: "rate_limiter/sliding_window",
            input: "admitted, 100 stale entries removed, 10^6 logged",
            setup: |con, k| sliding_log(con, &k["log"], 1_000_000, 500_000),
            keys: Keys::of(
                "rate_limiter/sliding_window",
                &[("prefix", "rl"), ("uid", "u"), ("action", "log")],
            ),
            args: strings(["1000000".into(), "1000".into(), "1".into()]),
        },
        Case {
            script: "reliable_topic/ack",
            input: "1,000 messages trimmed, 10 lapsed subscriptions dropped",
            setup: |con, k| topic_backlog(con, k, 1100),
            keys: Keys::of("reliable_topic/ack", TOPIC),
            args: strings(["s".into(), "60000".into(), "1050-0".into(), "1050".into()]),
        },
        Case {
            script: "reliable_topic/poll",
            input: "250 of 1,000 messages of 1 kB, 10 lapsed subscriptions dropped",
            setup: |con, k| topic_backlog(con, k, 1000),
            keys: Keys::of("reliable_topic/poll", TOPIC),
            args: strings(["s".into(), "60000".into(), "250".into()]),
        },
        Case {
            script: "reliable_topic/publish",
            input: "a stream at its cap of 1,000: one message trimmed",
            setup: |con, k| topic_backlog(con, k, 1000),
            keys: Keys::of("reliable_topic/publish", TOPIC),
            args: strings(["1000".into(), "x".repeat(1000)]),
        },
        Case {
            script: "reliable_topic/subscribe",
            input: "from the oldest message, 10 lapsed subscriptions dropped",
            setup: |con, k| topic_backlog(con, k, 1000),
            keys: Keys::of("reliable_topic/subscribe", TOPIC),
            args: strings(["new-one".into(), "60000".into(), "oldest".into()]),
        },
        Case {
            script: "reliable_topic/unsubscribe",
            input: "a subscription",
            setup: |con, k| topic_backlog(con, k, 10),
            keys: Keys::of("reliable_topic/unsubscribe", TOPIC),
            args: strings(["s".into()]),
        },
        Case {
            script: "redlock/acquire",
            input: "a free lock",
            setup: |_, _| {},
            keys: Keys::of("redlock/acquire", &[("name", "l")]),
            args: strings([
                "0123456789abcdef0123456789abcdef".into(),
                "999999999999999".into(),
            ]),
        },
        Case {
            script: "redlock/raise",
            input: "a held lock, its counter raised",
            setup: |con, k| {
                lua(
                    con,
                    "redis.call('SET', KEYS[1], '0123456789abcdef0123456789abcdef')",
                    &[&k["lock"]],
                    &[],
                );
            },
            keys: Keys::of("redlock/raise", &[("name", "l")]),
            args: strings([
                "0123456789abcdef0123456789abcdef".into(),
                "9007199254740990".into(),
            ]),
        },
        Case {
            script: "relation/follow",
            input: "both lists of 1,000,000, the newest entry in the future",
            setup: |con, k| {
                fill_scored(con, &k["following"], 1_000_000);
                fill_scored(con, &k["followers"], 1_000_000);
            },
            keys: Keys::of(
                "relation/follow",
                &[("namespace", "r"), ("user", "a"), ("target", "b")],
            ),
            args: strings(["a".into(), "b".into()]),
        },
        Case {
            script: "relation/mutual",
            input: "both lists of 1,000,000",
            setup: |con, k| {
                fill_scored(con, &k["a_following"], 1_000_000);
                fill_scored(con, &k["b_following"], 1_000_000);
            },
            keys: Keys::of(
                "relation/mutual",
                &[("namespace", "r"), ("user", "a"), ("other", "b")],
            ),
            args: strings(["a".into(), "b".into()]),
        },
        Case {
            script: "relation/unfollow",
            input: "both lists of 1,000,000",
            setup: |con, k| {
                fill_scored(con, &k["following"], 1_000_000);
                fill_scored(con, &k["followers"], 1_000_000);
            },
            keys: Keys::of(
                "relation/unfollow",
                &[("namespace", "r"), ("user", "a"), ("target", "m500000")],
            ),
            args: strings(["a".into(), "m500000".into()]),
        },
        Case {
            script: "resource_pool/acquire",
            input: "1000 expired leases reclaimed first",
            setup: expired_leases,
            keys: Keys::of("resource_pool/acquire", POOL),
            args: strings(["1000".into()]),
        },
        Case {
            script: "resource_pool/acquire_lease",
            input: "1000 expired leases reclaimed first",
            setup: expired_leases,
            keys: Keys::of("resource_pool/acquire_lease", POOL),
            args: strings(["999999999999999".into(), "token".into(), "1000".into()]),
        },
        Case {
            script: "resource_pool/associate",
            input: "a new resource",
            setup: expired_leases,
            keys: Keys::of("resource_pool/associate", POOL),
            args: strings(["new".into()]),
        },
        Case {
            script: "resource_pool/disassociate",
            input: "a leased resource",
            setup: expired_leases,
            keys: Keys::of("resource_pool/disassociate", POOL),
            args: strings(["r:7".into()]),
        },
        Case {
            script: "resource_pool/extend_lease",
            input: "a held lease",
            setup: expired_leases,
            keys: Keys::of("resource_pool/extend_lease", POOL),
            args: strings(["r:7".into(), "t".into(), "999999999999999".into()]),
        },
        Case {
            script: "resource_pool/has",
            input: "a held resource",
            setup: expired_leases,
            keys: Keys::of("resource_pool/has", POOL),
            args: strings(["r:7".into()]),
        },
        Case {
            script: "resource_pool/reclaim",
            input: "1000 expired leases",
            setup: expired_leases,
            keys: Keys::of("resource_pool/reclaim", POOL),
            args: strings(["1000".into()]),
        },
        Case {
            script: "resource_pool/release",
            input: "a resource held with no lease",
            setup: |con, k| {
                lua(
                    con,
                    "redis.call('SADD', KEYS[1], 'free')",
                    &[&k["occupied"]],
                    &[],
                );
            },
            keys: Keys::of("resource_pool/release", POOL),
            args: strings(["free".into()]),
        },
        Case {
            script: "resource_pool/release_lease",
            input: "a held lease",
            setup: expired_leases,
            keys: Keys::of("resource_pool/release_lease", POOL),
            args: strings(["r:7".into(), "t".into()]),
        },
        Case {
            script: "resource_pool/total_count",
            input: "any pool",
            setup: expired_leases,
            keys: Keys::of("resource_pool/total_count", POOL),
            args: vec![],
        },
        Case {
            script: "ip_city/find",
            input: "1,000,000 blocks with ends, the address in the last",
            setup: |con, k| {
                fill_lua(
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
                    &k.named(&["blocks", "cities"]),
                    &[],
                );
            },
            keys: Keys::of("ip_city/find", &[("namespace", "ip")]),
            args: strings([(999_999u64 * 512 + 7).to_string()]),
        },
        Case {
            script: "row_cache/claim",
            input: "100,000 rows scheduled and due, 500 claimed",
            setup: |con, k| scheduled_rows(con, k, 100_000, 1),
            keys: Keys::of("row_cache/claim", ROW_CACHE),
            args: strings(["500".into()]),
        },
        Case {
            script: "row_cache/schedule",
            input: "100,000 rows scheduled, one more",
            setup: |con, k| scheduled_rows(con, k, 100_000, 1),
            keys: Keys::of("row_cache/schedule", &[("namespace", "rc"), ("row", "new")]),
            args: strings(["new".into(), "999999999999999".into()]),
        },
        Case {
            script: "row_cache/schedule",
            input: "a row unscheduled, among 100,000: its 1 MiB copy deleted",
            setup: |con, k| {
                scheduled_rows(con, k, 100_000, 1);
                lua(
                    con,
                    "redis.call('SET', KEYS[1], string.rep('x', 1048576))",
                    &[&k["copy"]],
                    &[],
                );
            },
            keys: Keys::of("row_cache/schedule", &[("namespace", "rc"), ("row", "r5")]),
            args: strings(["r5".into(), "0".into()]),
        },
        Case {
            script: "row_cache/store",
            input: "a 1 MiB copy of a scheduled row",
            setup: |con, k| scheduled_rows(con, k, 100_000, 1),
            keys: Keys::of("row_cache/store", &[("namespace", "rc"), ("row", "r5")]),
            args: vec![b"r5".to_vec(), vec![b'x'; 1 << 20]],
        },
        Case {
            script: "semaphore/acquire",
            input: "100 lapsed holdings reclaimed, 100 lapsed places and 100 placeless ones dropped, 500 live holdings",
            setup: |con, k| {
                semaphore_lua(con, k, SEMAPHORE_FILL);
                semaphore_lua(
                    con,
                    k,
                    "for i = 1, 100 do
                       redis.call('HSET', KEYS[3], 'lapsed' .. i, 1)
                       redis.call('ZADD', KEYS[2], 1, 'lapsed' .. i)
                       redis.call('ZADD', KEYS[4], i, 'placeless' .. i)
                       redis.call('ZADD', KEYS[4], 100 + i, 'gone' .. i)
                       redis.call('ZADD', KEYS[5], 1, 'gone' .. i)
                     end
                     redis.call('HSET', KEYS[1], 'used', 600, 'seq', 200)",
                );
            },
            keys: Keys::of("semaphore/acquire", SEMAPHORE),
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
            setup: |con, k| {
                semaphore_lua(con, k, SEMAPHORE_FILL);
                semaphore_lua(
                    con,
                    k,
                    "redis.call('HSET', KEYS[3], 'ffffffffffffffffffffffffffffffff', 10)
                     redis.call('ZADD', KEYS[2], 1, 'ffffffffffffffffffffffffffffffff')
                     redis.call('HSET', KEYS[1], 'used', 510)",
                );
            },
            keys: Keys::of("semaphore/extend", SEMAPHORE),
            args: strings(["f".repeat(32), "999999999999999".into()]),
        },
        Case {
            script: "semaphore/release",
            input: "a holding and a place, among 500 holdings and 1,000 places",
            setup: |con, k| {
                semaphore_lua(con, k, SEMAPHORE_FILL);
                semaphore_lua(
                    con,
                    k,
                    "for i = 1, 1000 do
                       redis.call('ZADD', KEYS[4], i, 'w' .. i)
                       redis.call('ZADD', KEYS[5], 99999999999999, 'w' .. i)
                     end
                     local t = 'ffffffffffffffffffffffffffffffff'
                     redis.call('HSET', KEYS[3], t, 10)
                     redis.call('ZADD', KEYS[2], 99999999999999, t)
                     redis.call('HSET', KEYS[1], 'used', 510)
                     redis.call('ZADD', KEYS[4], 0, t)
                     redis.call('ZADD', KEYS[5], 99999999999999, t)",
                );
            },
            keys: Keys::of("semaphore/release", SEMAPHORE),
            args: strings(["f".repeat(32)]),
        },
        Case {
            script: "semaphore/set_capacity",
            input: "a raise, which rings the bell",
            setup: |con, k| semaphore_lua(con, k, SEMAPHORE_FILL),
            keys: Keys::of("semaphore/set_capacity", SEMAPHORE),
            args: strings(["1000".into()]),
        },
        Case {
            script: "semaphore/state",
            input: "1,000 holdings, half of them lapsed",
            setup: |con, k| {
                semaphore_lua(
                    con,
                    k,
                    "for i = 1, 1000 do
                       redis.call('HSET', KEYS[3], 'h' .. i, 1)
                       redis.call('ZADD', KEYS[2], (i % 2) * 99999999999999, 'h' .. i)
                     end
                     redis.call('HSET', KEYS[1], 'capacity', 1000, 'used', 1000)",
                );
            },
            keys: Keys::of("semaphore/state", SEMAPHORE),
            args: vec![],
        },
        Case {
            script: "session/create",
            input: "1,000 live sessions with data, all evicted (cap 1)",
            setup: |con, k| sessions_crowd(con, k, 0, 1000),
            keys: Keys::of("session/create", SESSION),
            args: strings(["new-token-of-128-bits".into(), "3600000".into(), "1".into()]),
        },
        Case {
            script: "session/end",
            input: "900 expired sessions forgotten, 100 live ones ended",
            setup: |con, k| sessions_crowd(con, k, 900, 100),
            keys: Keys::of("session/end", SESSION),
            args: strings((900..1000).map(|i| format!("s{i}"))),
        },
        Case {
            script: "session/list",
            input: "1,000 live sessions",
            setup: |con, k| sessions_crowd(con, k, 0, 1000),
            keys: Keys::of("session/list", SESSION),
            args: vec![],
        },
        Case {
            script: "session/set",
            input: "999 expired forgotten; 100 of 256 fields (64 KiB) replaced",
            setup: full_session,
            keys: Keys::of("session/set", SESSION),
            args: std::iter::once(b"live-token".to_vec())
                .chain((0..100).flat_map(|i| [format!("f{i}").into_bytes(), vec![b'y'; 250]]))
                .collect(),
        },
        Case {
            script: "session/unset",
            input: "999 expired forgotten; 100 of 256 fields (64 KiB) removed",
            setup: full_session,
            keys: Keys::of("session/unset", SESSION),
            args: std::iter::once(b"live-token".to_vec())
                .chain((0..100).map(|i| format!("f{i}").into_bytes()))
                .collect(),
        },
        Case {
            script: "session/validate",
            input: "999 expired forgotten; slid, with 256 fields (64 KiB)",
            setup: full_session,
            keys: Keys::of("session/validate", SESSION),
            args: strings(["live-token".into(), "1".into(), "1".into()]),
        },
        Case {
            script: "user_login/login",
            input: "10,000 recent logins trimmed to 1",
            setup: |con, k| {
                lua(
                    con,
                    "redis.call('HSET', KEYS[1], 'peter', '1')
                     for i = 1, 10 do
                       local ids = {}
                       for j = 1, 1000 do ids[j] = 'id' .. j end
                       redis.call('LPUSH', KEYS[2], unpack(ids))
                     end",
                    &k.named(&["ids", "recent"]),
                    &[],
                )
            },
            keys: Keys::of("user_login/login", &[("name", "l")]),
            args: strings(["peter".into(), "1".into()]),
        },
        Case {
            script: "vote/cast",
            input: "a switch, 1,000,000 votes on the subject, 1,000,000 subjects ranked",
            setup: voted,
            keys: Keys::of("vote/cast", VOTE),
            args: strings(["s7".into(), "u7".into(), "down".into()]),
        },
        Case {
            script: "vote/forget",
            input: "1,000,000 votes on the subject (freed in the background)",
            setup: voted,
            keys: Keys::of("vote/forget", VOTE),
            args: strings(["s7".into()]),
        },
        Case {
            script: "vote/post",
            input: "1,000,000 votes on the subject, 1,000,000 subjects ranked",
            setup: voted,
            keys: Keys::of("vote/post", VOTE),
            args: strings(["s7".into(), "".into()]),
        },
        Case {
            script: "vote/tally",
            input: "1,000,000 votes on the subject",
            setup: voted,
            keys: Keys::of("vote/tally", VOTE),
            args: strings(["u7".into()]),
        },
        Case {
            script: "work_queue/ack",
            input: "a held job whose group has parked jobs, a 16 KiB result kept, 2 expired dropped, events full",
            setup: busy_queue,
            keys: Keys::of("work_queue/ack", QUEUE),
            args: strings(["held".into(), "7".into(), "r".repeat(1 << 14)]),
        },
        Case {
            script: "work_queue/ack",
            input: "the busy queue keeping 1 completed job for 1 ms: the acked job kept with a 16 KiB result, 2 \
                    old ones dropped (each with 64 KiB of log lines and a 16 KiB result)",
            setup: retained_queue,
            keys: Keys::of("work_queue/ack", QUEUE),
            args: strings(["held".into(), "7".into(), "r".repeat(1 << 14)]),
        },
        Case {
            script: "work_queue/add",
            input: "a new delayed LIFO job in a group with retry options, both removals and a 1 KiB trace context, on a busy queue",
            setup: busy_queue,
            keys: Keys::of("work_queue/add", QUEUE),
            args: strings([
                "new".into(),
                "x".repeat(100),
                "255".into(),
                "1000000000000".into(),
                "g".into(),
                "1000".into(),
                "exponential".into(),
                "1000000000000".into(),
                "1000000000000".into(),
                "1".into(),
                "1".into(),
                "1".into(),
                "t".repeat(1024),
            ]),
        },
        Case {
            script: "work_queue/counts",
            input: "a busy queue",
            setup: busy_queue,
            keys: Keys::of("work_queue/counts", QUEUE),
            args: vec![],
        },
        Case {
            script: "work_queue/extend",
            input: "a held job",
            setup: busy_queue,
            keys: Keys::of("work_queue/extend", QUEUE),
            args: strings(["held".into(), "7".into(), "10000000000".into()]),
        },
        Case {
            script: "work_queue/job",
            input: "a leased job",
            setup: busy_queue,
            keys: Keys::of("work_queue/job", QUEUE),
            args: strings(["held".into()]),
        },
        Case {
            script: "work_queue/list",
            input: "100 parked jobs, 100-byte payloads",
            setup: busy_queue,
            keys: Keys::of("work_queue/list", QUEUE),
            args: strings(["parked".into(), "0".into(), "100".into()]),
        },
        Case {
            script: "work_queue/nack",
            input: "a held job on its last delivery, group with parked jobs",
            setup: busy_queue,
            keys: Keys::of("work_queue/nack", QUEUE),
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
            keys: Keys::of("work_queue/pause", QUEUE),
            args: vec![],
        },
        Case {
            script: "work_queue/paused",
            input: "a busy queue",
            setup: busy_queue,
            keys: Keys::of("work_queue/paused", QUEUE),
            args: vec![],
        },
        Case {
            script: "work_queue/resume",
            input: "a busy queue, paused",
            setup: |con, k| {
                busy_queue(con, k);
                pause(con, k);
            },
            keys: Keys::of("work_queue/resume", QUEUE),
            args: vec![],
        },
        Case {
            script: "work_queue/remove",
            input: "a parked job",
            setup: busy_queue,
            keys: Keys::of("work_queue/remove", QUEUE),
            args: strings(["pp:5".into()]),
        },
        Case {
            script: "work_queue/requeue",
            input: "a dead job",
            setup: busy_queue,
            keys: Keys::of("work_queue/requeue", QUEUE),
            args: strings(["dead".into()]),
        },
        Case {
            script: "work_queue/due",
            input: "100 due schedules (of 1,000), each read and checked",
            setup: scheduled_queue,
            keys: Keys::of("work_queue/due", QUEUE),
            args: strings(["100".into()]),
        },
        Case {
            script: "work_queue/fire",
            input: "catch-up 100 on a busy queue with metrics: 100 jobs of 100 bytes added, each with a 1 KiB trace context",
            setup: scheduled_queue,
            keys: Keys::of("work_queue/fire", QUEUE),
            args: strings(["s7".into(), "0".into(), "1".into(), "t".repeat(1024)]),
        },
        Case {
            script: "work_queue/remove_schedule",
            input: "one of 1,000 schedules",
            setup: scheduled_queue,
            keys: Keys::of("work_queue/remove_schedule", QUEUE),
            args: strings(["s7".into()]),
        },
        Case {
            script: "work_queue/schedule",
            input: "one of 1,000 schedules, 100-byte payload",
            setup: scheduled_queue,
            keys: Keys::of("work_queue/schedule", QUEUE),
            args: strings(["s7".into()]),
        },
        Case {
            script: "work_queue/schedules",
            input: "a page of 100 of 1,000 schedules, 100-byte payloads",
            setup: scheduled_queue,
            keys: Keys::of("work_queue/schedules", QUEUE),
            args: strings(["900".into(), "100".into()]),
        },
        Case {
            script: "work_queue/set_schedule",
            input: "a changed timing of one of 1,000 schedules, 100-byte payload, the jobs' retries and removal",
            setup: scheduled_queue,
            keys: Keys::of("work_queue/set_schedule", QUEUE),
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
                "1000".into(),
                "exponential".into(),
                "1000".into(),
                "1000000000000".into(),
                "1".into(),
                "1".into(),
            ]),
        },
        Case {
            script: "work_queue/take",
            input: "limit 10: 10 held jobs of groups with parked jobs acked first with 16 KiB results, 10 expired \
                    results dropped, every chore full, 1000-start rate rings, events full",
            setup: busy_queue,
            keys: Keys::of("work_queue/take", QUEUE),
            args: take_acking_busy_jobs(),
        },
        Case {
            script: "work_queue/take",
            input: "limit 10 on the busy queue keeping 1 completed job for 1 ms: 10 acked jobs kept with 16 KiB \
                    results, 10 old ones dropped (each with 64 KiB of log lines and a 16 KiB result)",
            setup: retained_queue,
            keys: Keys::of("work_queue/take", QUEUE),
            args: take_acking_busy_jobs(),
        },
        Case {
            script: "work_queue/take",
            input: "group_rate 1000 -> 1: 25 rings of 1000 begin anew, 25 idle",
            setup: rate_changed,
            keys: Keys::of("work_queue/take", QUEUE),
            args: strings(
                [
                    "10000000000",
                    "10",
                    "1000",
                    "0123456789abcdef0123456789abcdef",
                ]
                .map(String::from),
            ),
        },
        Case {
            script: "work_queue/take",
            input: "limit 10, groups take turns: the busy queue's chores and 10 acks, 20 waiting jobs moved to \
                    their groups, 300 groups with turns (5 parked jobs each), 20 turns examined",
            setup: turns_queue,
            keys: Keys::of("work_queue/take", QUEUE),
            args: take_acking_busy_jobs(),
        },
        Case {
            script: "work_queue/take",
            input: "limit 10, turns switched off: 10 jobs of groups with turns handed back, then taken",
            setup: |con, k| {
                turns_queue(con, k);
                lua(
                    con,
                    "redis.call('HSET', KEYS[1], '#settings', \
                     '0 1000 10000000000 1000000 1000 10000000000 1 1 1440 100000 3600000 16384 0')",
                    &[&k["jobs"]],
                    &[],
                );
            },
            keys: Keys::of("work_queue/take", QUEUE),
            args: strings(
                [
                    "10000000000",
                    "10",
                    "1000",
                    "0123456789abcdef0123456789abcdef",
                ]
                .map(String::from),
            ),
        },
        Case {
            script: "work_queue/add_deduplicated",
            input: "a window held by a delayed job: its payload replaced, its due time moved and the window \
                    extended, on a busy queue",
            setup: |con, k| {
                busy_queue(con, k);
                redis::cmd("SET")
                    .arg(&k["window"])
                    .arg("d:1")
                    .exec(con)
                    .unwrap();
            },
            keys: Keys::of(
                "work_queue/add_deduplicated",
                &[("name", "w"), ("dedup", "u")],
            ),
            args: strings([
                "new".into(),
                "x".repeat(100),
                "255".into(),
                "1000000000000".into(),
                "g".into(),
                "1000".into(),
                "exponential".into(),
                "1000000000000".into(),
                "1000000000000".into(),
                "1".into(),
                "1".into(),
                "1".into(),
                "u".into(),
                "1000000000000".into(),
                "1".into(),
                "1".into(),
                "t".repeat(1024),
            ]),
        },
        Case {
            script: "work_queue/add_deduplicated",
            input: "a new job of a group without a turn, groups taking turns, opening a window, on a busy queue",
            setup: turns_queue,
            keys: Keys::of(
                "work_queue/add_deduplicated",
                &[("name", "w"), ("dedup", "u")],
            ),
            args: strings([
                "new".into(),
                "x".repeat(100),
                "255".into(),
                "0".into(),
                "g".into(),
                "0".into(),
                "worker".into(),
                "0".into(),
                "0".into(),
                "0".into(),
                "0".into(),
                "0".into(),
                "u".into(),
                "1000000000000".into(),
                "0".into(),
                "0".into(),
                "t".repeat(1024),
            ]),
        },
        Case {
            script: "work_queue/add",
            input: "a new job of a group without a turn, groups taking turns, on a busy queue",
            setup: turns_queue,
            keys: Keys::of("work_queue/add", QUEUE),
            args: strings([
                "new".into(),
                "x".repeat(100),
                "255".into(),
                "0".into(),
                "g".into(),
                "0".into(),
                "worker".into(),
                "0".into(),
                "0".into(),
                "0".into(),
                "0".into(),
                "0".into(),
                "t".repeat(1024),
            ]),
        },
        Case {
            script: "work_queue/configure",
            input: "every setting changed: group limits (100 of 1,000 groups woken), queue rate 1000 -> 10, events 100,000 -> 1, turns on, completed jobs kept",
            setup: big_queue,
            keys: Keys::of("work_queue/configure", QUEUE),
            args: strings(
                [
                    "5", "10", "1000", "10", "10", "1000", "100", "1000", "60", "1", "1000", "10",
                    "1", "1000", "1000",
                ]
                .map(String::from),
            ),
        },
        Case {
            script: "work_queue/add_flow",
            input: "50 children of 1 KiB and a 1 KiB trace context on a busy queue, metrics on",
            setup: busy_queue,
            keys: Keys::of("work_queue/add_flow", QUEUE),
            args: {
                let mut args = strings([
                    "flow".into(),
                    "p".into(),
                    "0".into(),
                    "".into(),
                    "t".repeat(1024),
                ]);
                for n in 0..50 {
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
            script: "work_queue/log",
            input: "a 4 KiB line for a held job keeping 1000 lines of 64 bytes (the 64 KiB cap)",
            setup: logged_queue,
            keys: Keys::of("work_queue/log", QUEUE),
            args: strings(["held".into(), "7".into(), "l".repeat(4096), "1000".into()]),
        },
        Case {
            script: "work_queue/logs",
            input: "1000 lines of 64 bytes, all read",
            setup: logged_queue,
            keys: Keys::of("work_queue/logs", QUEUE),
            args: strings(["held".into(), "0".into(), "1000".into()]),
        },
        Case {
            script: "work_queue/progress",
            input: "a 4 KiB report of a held job, events full",
            setup: busy_queue,
            keys: Keys::of("work_queue/progress", QUEUE),
            args: strings(["held".into(), "7".into(), "p".repeat(4096)]),
        },
        Case {
            script: "work_queue/result",
            input: "a 16 KiB result",
            setup: |con, k| {
                busy_queue(con, k);
                lua(
                    con,
                    "redis.call('HSET', KEYS[1], 'big', string.rep('r', 16384))
                     redis.call('ZADD', KEYS[2], 99999999999999, 'big')",
                    &k.named(&["results", "kept"]),
                    &[],
                );
            },
            keys: Keys::of("work_queue/result", QUEUE),
            args: strings(["big".into()]),
        },
        Case {
            script: "work_queue/events",
            input: "1,000 entries of a full stream (100,000) read from the oldest",
            setup: busy_queue,
            keys: Keys::of("work_queue/events", QUEUE),
            args: strings(["0-0".into(), "1000".into()]),
        },
        Case {
            script: "work_queue/settings",
            input: "a configured queue",
            setup: big_queue,
            keys: Keys::of("work_queue/settings", QUEUE),
            args: vec![],
        },
        Case {
            script: "work_queue/metrics",
            input: "a day of per-minute slots, every one read",
            setup: big_queue,
            keys: Keys::of("work_queue/metrics", QUEUE),
            args: strings(["1440".into()]),
        },
        Case {
            script: "work_queue/rate_limit_group",
            input: "a held job whose group has parked jobs",
            setup: busy_queue,
            keys: Keys::of("work_queue/rate_limit_group", QUEUE),
            args: strings(["held".into(), "7".into(), "10000000000".into()]),
        },
        Case {
            script: "work_queue/retry_dead",
            input: "100 of 1,000 dead jobs back to waiting",
            setup: big_queue,
            keys: Keys::of("work_queue/retry_dead", QUEUE),
            args: strings(["100".into()]),
        },
        Case {
            script: "work_queue/clean",
            input: "100 parked jobs of 100 groups, with their records",
            setup: big_queue,
            keys: Keys::of("work_queue/clean", QUEUE),
            args: strings(["parked".into(), "100".into(), "0".into()]),
        },
        Case {
            script: "work_queue/clean",
            input: "100 completed jobs past a grace time, each with 64 KiB of log lines and a 16 KiB result",
            setup: retained_queue,
            keys: Keys::of("work_queue/clean", QUEUE),
            args: strings(["completed".into(), "100".into(), "1000".into()]),
        },
        Case {
            script: "work_queue/delete_queue",
            input: "100 jobs of a paused queue, with their records (force)",
            setup: |con, k| {
                big_queue(con, k);
                pause(con, k);
            },
            keys: Keys::of("work_queue/delete_queue", QUEUE),
            args: strings(["100".into(), "1".into()]),
        },
        Case {
            script: "work_queue/delete_queue",
            input: "the last 100 jobs of a paused busy queue, then its keys: events full (100,000), 45 rate rings",
            setup: |con, k| {
                busy_queue(con, k);
                pause(con, k);
                lua(
                    con,
                    "for _, jobs in ipairs(KEYS) do redis.call('ZREMRANGEBYRANK', jobs, 20, -1) end",
                    &queue_keys(k).named(&["waiting", "delayed", "leased", "dead", "parked"]),
                    &[],
                );
            },
            keys: Keys::of("work_queue/delete_queue", QUEUE),
            args: strings(["100".into(), "1".into()]),
        },
        Case {
            script: "work_queue/set_priority",
            input: "a parked job",
            setup: busy_queue,
            keys: Keys::of("work_queue/set_priority", QUEUE),
            args: strings(["pp:5".into(), "200".into()]),
        },
        Case {
            script: "work_queue/set_delay",
            input: "a parked job",
            setup: busy_queue,
            keys: Keys::of("work_queue/set_delay", QUEUE),
            args: strings(["pp:5".into(), "1000000000000".into()]),
        },
        Case {
            script: "short_url/claim",
            input: "a slug held by an expired link, deleted first",
            setup: busy_links,
            keys: Keys::of("short_url/claim", LINKS),
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
            keys: Keys::of("short_url/purge", LINKS),
            args: strings(["100".into()]),
        },
        Case {
            script: "short_url/restore",
            input: "a link with an expiry and a visit limit",
            setup: busy_links,
            keys: Keys::of("short_url/restore", LINKS),
            args: strings(["limited".into()]),
        },
        Case {
            script: "short_url/shorten",
            input: "999 ids in a row held by slugs, then a free one",
            setup: busy_links,
            keys: Keys::of("short_url/shorten", LINKS),
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
            keys: Keys::of("short_url/shorten_cached", LINKS),
            args: strings(["u".repeat(2048)]),
        },
        Case {
            script: "short_url/visit",
            input: "a link with an expiry and a visit limit",
            setup: busy_links,
            keys: Keys::of("short_url/visit", LINKS),
            args: strings(["limited".into()]),
        },
        Case {
            script: "stats/slowest",
            input: "a ranking of 11,001 kept to 10,000: 1000 dropped",
            setup: |con, k| fill_scored(con, &k["slowest"], 11_000),
            keys: Keys::of("stats/slowest", &[("key", "slowest")]),
            args: strings(["new".into(), "1".into(), "10000".into()]),
        },
        Case {
            script: "stats/update",
            input: "a rotation, the hour before last a 1,000,000-member set",
            setup: |con, k| {
                fill_scored(con, &k["last"], 1_000_000);
                lua(
                    con,
                    "redis.call('SET', KEYS[2], '3600')
                     for _, k in ipairs({'count', 'sum', 'sumsq', 'min', 'max'}) do
                       redis.call('ZADD', KEYS[1], 1, k)
                     end",
                    &k.named(&["stats", "start"]),
                    &[],
                );
            },
            keys: Keys::of(
                "stats/update",
                &[("prefix", "st"), ("context", "c"), ("kind", "k")],
            ),
            args: strings(["1e100".into(), "999999999999999".into()]),
        },
        Case {
            script: "tag/add",
            input: "100 tags, each on 100,000 targets",
            setup: |con, k| tagged(con, k, 100_000),
            keys: tags("tag/add", "new", 100),
            args: std::iter::once(b"new".to_vec())
                .chain((0..100).map(|t| format!("t{t}").into_bytes()))
                .collect(),
        },
        Case {
            script: "tag/cached",
            input: "a miss: 10 tags of 1,500 targets, all in every tag",
            setup: |con, k| tagged(con, k, 1_500),
            keys: Keys::with_items(
                "tag/cached",
                &[("namespace", "tags"), ("tags", "x")],
                each("tag", (0..10).map(|t| format!("t{t}"))),
            ),
            args: strings(["60000".into()]),
        },
        Case {
            script: "tag/remove",
            input: "100 tags, each on 100,000 targets",
            setup: |con, k| tagged(con, k, 100_000),
            keys: tags("tag/remove", "x7", 100),
            args: std::iter::once(b"x7".to_vec())
                .chain((0..100).map(|t| format!("t{t}").into_bytes()))
                .collect(),
        },
        Case {
            script: "time_series/clean",
            input: "a 1,000,000-sample hash, a chunk of ~1000 scanned and deleted",
            setup: |con, k| {
                fill_scored(con, &k["known"], 100_000);
                fill_lua(
                    con,
                    "for i = 0, 999999, 1000 do
                       local chunk = {}
                       for j = i, i + 999 do chunk[#chunk + 1] = j; chunk[#chunk + 1] = 1 end
                       redis.call('HSET', KEYS[1], unpack(chunk))
                     end",
                    &[&k["hash"]],
                    &[],
                );
            },
            keys: Keys::of(
                "time_series/clean",
                &[("namespace", "ts"), ("precision", "1"), ("name", "c")],
            ),
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
            setup: |con, k| fill_scored(con, &k["known"], 100_000),
            keys: Keys::with_items(
                "time_series/update",
                &[("namespace", "ts"), ("name", "c")],
                each("precision", 1..=16),
            ),
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
            setup: |con, k| fill_scored(con, &k["timeline"], 1_000_000),
            keys: Keys::of("timeline/add", &[("key", "{t}")]),
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
            setup: |con, k| fill_scored(con, &k["timeline"], 1_000_000),
            keys: Keys::of("timeline/delete_range", &[("key", "{t}")]),
            args: strings(["0".into(), "4102444300000".into(), "1000".into()]),
        },
        Case {
            script: "unique_counter/diff_count",
            input: "two sets of 10,000 members",
            setup: |con, k| {
                fill(con, "SADD", &k["x"], "member:", 10_000);
                fill(con, "SADD", &k["y"], "member:", 10_000);
            },
            keys: Keys::of(
                "unique_counter/diff_count",
                &[("x", "{u}:x"), ("y", "{u}:y")],
            ),
            args: vec![],
        },
        Case {
            script: "unique_counter/union_count",
            input: "1000 sets of 10 distinct members",
            setup: |con, k| {
                let counters: Vec<&str> = k.items().iter().map(String::as_str).collect();
                fill_lua(
                    con,
                    "for s = 1, #KEYS do
                       for m = 0, 9 do redis.call('SADD', KEYS[s], s .. ':' .. m) end
                     end",
                    &counters,
                    &[],
                )
            },
            keys: Keys::with_items(
                "unique_counter/union_count",
                &[("key", "u")],
                each("key", (0..1000).map(|s| format!("{{u}}:{s}"))),
            ),
            args: vec![],
        },
        Case {
            script: "unique_counter/union_count",
            input: "two sets of 5000 distinct members",
            setup: |con, k| {
                fill(con, "SADD", &k.items()[0], "x:", 5000);
                fill(con, "SADD", &k.items()[1], "y:", 5000);
            },
            keys: Keys::with_items(
                "unique_counter/union_count",
                &[("key", "{u}:x")],
                each("key", ["{u}:x", "{u}:y"]),
            ),
            args: vec![],
        },
        Case {
            script: "web_session/clean",
            input: "100 of 100,000 sessions ended, each with 1000 items viewed and a 1000-item cart",
            setup: |con, k| {
                web_sessions(con, k, 100_000);
                let sessions: Vec<&str> = k.items().iter().map(String::as_str).collect();
                fill_lua(
                    con,
                    "local viewed, cart = {}, {}
                     for n = 1, 1000 do
                       viewed[#viewed + 1] = n
                       viewed[#viewed + 1] = 'item' .. n
                       cart[#cart + 1] = 'item' .. n
                       cart[#cart + 1] = 1
                     end
                     for i = 1, #KEYS, 2 do
                       redis.call('ZADD', KEYS[i], unpack(viewed))
                       redis.call('HSET', KEYS[i + 1], unpack(cart))
                     end",
                    &sessions,
                    &[],
                );
            },
            keys: web_clean_keys(),
            args: web_clean_args(),
        },
        Case {
            script: "web_session/clean",
            input: "100 of 100,000 sessions ended, one of them with a 1,000,000-item cart",
            setup: |con, k| {
                web_sessions(con, k, 100_000);
                fill_lua(
                    con,
                    "for i = 0, 999999, 1000 do
                       local cart = {}
                       for n = i, i + 999 do cart[#cart + 1] = 'item' .. n; cart[#cart + 1] = 1 end
                       redis.call('HSET', KEYS[1], unpack(cart))
                     end",
                    &[&k.items()[1]],
                    &[],
                );
            },
            keys: web_clean_keys(),
            args: web_clean_args(),
        },
        Case {
            script: "web_session/rescale",
            input: "11,000 items: 1000 dropped, 10,000 halved",
            setup: |con, k| fill_scored(con, &k["views"], 11_000),
            keys: Keys::of("web_session/rescale", WEB),
            args: strings(["10000".into()]),
        },
        Case {
            script: "web_session/update",
            input: "100,000 sessions and items; 1000 viewed kept, one trimmed",
            setup: |con, k| {
                web_sessions(con, k, 100_000);
                fill_scored(con, &k["views"], 100_000);
                fill_scored(con, &k["viewed"], 1000);
            },
            keys: Keys::of("web_session/update", &[("namespace", "w"), ("token", "m5")]),
            args: strings(["m5".into(), "u".into(), "new".into(), "1000".into()]),
        },
        Case {
            script: "rw_lock/acquire_read",
            input: "1000 lapsed read holds and 1000 lapsed writer places dropped, 100,000 readers",
            setup: |con, k| rw_state(con, k, 100_000, 1000, 1000, false),
            keys: Keys::of("rw_lock/acquire_read", RW_LOCK),
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
            setup: |con, k| rw_state(con, k, 100_000, 1000, 1000, false),
            keys: Keys::of("rw_lock/acquire_write", RW_LOCK),
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
            setup: |con, k| rw_state(con, k, 0, 0, 0, false),
            keys: Keys::of("rw_lock/release_read", RW_LOCK),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "rw_lock/release_read",
            input: "the last hold of one of 100,000 readers (as cheap as of 1)",
            setup: |con, k| rw_state(con, k, 100_000, 0, 0, false),
            keys: Keys::of("rw_lock/release_read", RW_LOCK),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "rw_lock/release_write",
            input: "the last write hold",
            setup: |con, k| rw_state(con, k, 0, 0, 0, true),
            keys: Keys::of("rw_lock/release_write", RW_LOCK),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "rw_lock/extend",
            input: "a write hold and read holds, among 100,000 readers",
            setup: |con, k| rw_state(con, k, 100_000, 0, 0, true),
            keys: Keys::of("rw_lock/extend", RW_LOCK),
            args: strings([TOKEN.into(), "999999999999999".into()]),
        },
        Case {
            script: "rw_lock/downgrade",
            input: "a write hold, beside 100,000 readers",
            setup: |con, k| rw_state(con, k, 100_000, 0, 0, true),
            keys: Keys::of("rw_lock/downgrade", RW_LOCK),
            args: strings([TOKEN.into(), "999999999999999".into()]),
        },
        Case {
            script: "rw_lock/withdraw",
            input: "one of 100,000 waiting writers",
            setup: |con, k| rw_state(con, k, 0, 0, 100_000, false),
            keys: Keys::of("rw_lock/withdraw", RW_LOCK),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "fair_lock/acquire",
            input: "1000 lapsed places at the head dropped, a queue of 100,000: joins at the back",
            setup: |con, k| fair_state(con, k, 100_000, 1000),
            keys: Keys::of("fair_lock/acquire", FAIR_LOCK),
            args: strings([
                TOKEN.into(),
                "999999999999999".into(),
                "999999999999999".into(),
                "1000".into(),
                "fifo".into(),
            ]),
        },
        Case {
            script: "fair_lock/acquire",
            input: "barging: 1000 lapsed places dropped, a queue of 100,000 goes first",
            setup: |con, k| fair_state(con, k, 100_000, 1000),
            keys: Keys::of("fair_lock/acquire", FAIR_LOCK),
            args: strings([
                TOKEN.into(),
                "999999999999999".into(),
                "999999999999999".into(),
                "1000".into(),
                "any".into(),
            ]),
        },
        Case {
            script: "fair_lock/cancel",
            input: "one place of a queue of 100,000",
            setup: |con, k| fair_state(con, k, 100_000, 0),
            keys: Keys::of("fair_lock/cancel", FAIR_LOCK),
            args: strings([TOKEN.into()]),
        },
        Case {
            script: "fair_lock/extend",
            input: "the holder",
            setup: |con, k| fair_state(con, k, 0, 0),
            keys: Keys::of("fair_lock/extend", FAIR_LOCK),
            args: strings([TOKEN.into(), "999999999999999".into()]),
        },
        Case {
            script: "fair_lock/release",
            input: "the holder, 100,000 in line: rings its turn key",
            setup: |con, k| fair_state(con, k, 100_000, 0),
            keys: Keys::of("fair_lock/release", FAIR_LOCK),
            args: strings([TOKEN.into()]),
        },
    ]
}

/// The lock, held with the token `t`.
fn held_lock(con: &mut redis::Connection, k: &Keys) {
    lua(con, "redis.call('SET', KEYS[1], 't')", &[&k["lock"]], &[]);
}

/// The fenced resource: a hash of `n` fields.
fn fenced_hash(con: &mut redis::Connection, k: &Keys, n: usize) {
    fill_lua(
        con,
        "for i = 1, tonumber(ARGV[1]), 1000 do
           local chunk = {}
           for j = i, math.min(i + 999, tonumber(ARGV[1])) do chunk[#chunk + 1] = 'f' .. j; chunk[#chunk + 1] = 'v' end
           redis.call('HSET', KEYS[1], unpack(chunk))
         end",
        &[&k["resource"]],
        &[&n.to_string()],
    );
}

/// The fenced resource's highest token seen: 7.
fn fenced_max_token(con: &mut redis::Connection, k: &Keys) {
    lua(
        con,
        "redis.call('SET', KEYS[1], '7')",
        &[&k["max_token"]],
        &[],
    );
}

/// The call's rows, strings of 2 KiB each: 1 MiB for 512.
fn rows_of_2_kib(con: &mut redis::Connection, k: &Keys) {
    let rows: Vec<&str> = k.items().iter().map(String::as_str).collect();
    lua(
        con,
        "for i = 1, #KEYS do redis.call('SET', KEYS[i], string.rep('x', 2048)) end",
        &rows,
        &[],
    )
}

/// A sliding-window log of `n` calls of cost 1 within the window, the first `stale` of
/// them scored long ago.
fn sliding_log(con: &mut redis::Connection, log: &str, n: usize, stale: usize) {
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
        &[log],
        &[&n.to_string(), &stale.to_string()],
    );
}

/// A latch of 10,000, generation 1, with `left` count-downs to go (0: open), the ids of
/// the others in its set (10,000 when open: left behind), and a wake stream.
fn crowded_latch(con: &mut redis::Connection, k: &Keys, left: u64) {
    let latch = k.like("latch/count_down");
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
        &latch.named(&["latch", "ids", "wake"]),
        &[&left.to_string()],
    );
}

/// A barrier of 10,000 parties in generation 1001, `waiting` of them waiting with leases
/// to `deadline` (ms), the outcomes of 1000 generations in its history, a wake stream.
/// The party of token `0…07` is one of them.
fn crowded_barrier(con: &mut redis::Connection, k: &Keys, waiting: u64, deadline: u64) {
    let barrier = k.like("barrier/arrive");
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
        &barrier.named(&["state", "arrived", "history", "wake"]),
        &[&waiting.to_string(), &deadline.to_string()],
    );
}

/// A pool of 2000 resources, 1000 of them held under leases that ran out and one (`r:7`,
/// token `t`) under a live one.
fn expired_leases(con: &mut redis::Connection, k: &Keys) {
    let pool = k.like("resource_pool/acquire");
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
        &pool.named(&["available", "occupied", "leases", "holders"]),
        &[],
    );
}

/// The keys of `minute_friends` for the friends of `u` in namespace `o`, over minutes `00`
/// to `09`.
fn minutes() -> Keys {
    Keys::with_items(
        "online_friends/minute_friends",
        &[("ns", "o"), ("user", "u")],
        each("minute", (0..10).map(|m| format!("{m:02}"))),
    )
}

/// 300 friends of `u`, and 10 minute sets of 100,000 users each, holding every friend but
/// `x` (so every minute is looked at).
fn minutes_crowd(con: &mut redis::Connection, k: &Keys) {
    let all = minutes();
    assert_eq!(k.value("ns"), all.value("ns"));
    let keys: Vec<&str> = all.all().iter().map(String::as_str).collect();
    fill_lua(
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
         for m = 2, #KEYS do fill(KEYS[m], 100000) end",
        &keys,
        &[],
    );
}

/// 1,000 friends of `u`, and 1,000,000 users seen, many long ago.
fn seen_crowd(con: &mut redis::Connection, k: &Keys) {
    let friends = Keys::of(
        "online_friends/seen_friends",
        &[("ns", k.value("ns")), ("user", "u")],
    );
    fill_lua(
        con,
        "local batch = {}
         for j = 0, 999 do batch[#batch + 1] = 'u' .. j end
         redis.call('SADD', KEYS[1], unpack(batch))
         for i = 0, 999999, 1000 do
           local batch = {}
           for j = i, i + 999 do
             batch[#batch + 1] = 1700000000000 - (j % 1000000)
             batch[#batch + 1] = 'u' .. j
           end
           redis.call('ZADD', KEYS[2], unpack(batch))
         end",
        &friends.named(&["friends", "seen"]),
        &[],
    );
}

/// `n` rows `r<j>` scheduled every `delay_ms`, all due (their due times are long past).
fn scheduled_rows(con: &mut redis::Connection, k: &Keys, n: usize, delay_ms: u64) {
    let rows = Keys::of("row_cache/claim", &[("namespace", k.value("namespace"))]);
    fill_lua(
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
        &rows.named(&["delays", "schedule"]),
        &[&n.to_string(), &delay_ms.to_string()],
    );
}

/// `n` sessions `m<j>` of user `u`, seen at `4102444800000 - j` (so the last ones are the
/// oldest).
fn web_sessions(con: &mut redis::Connection, k: &Keys, n: usize) {
    fill_scored(con, &k["recent"], n);
    fill_lua(
        con,
        "local n = tonumber(ARGV[1])
         for i = 0, n - 1, 1000 do
           local login = {}
           for j = i, math.min(i + 999, n - 1) do
             login[#login + 1] = 'm' .. j
             login[#login + 1] = 'u'
           end
           redis.call('HSET', KEYS[1], unpack(login))
         end",
        &[&k["login"]],
        &[&n.to_string()],
    );
}

/// `n` members `m0`… of the sorted set `key`, scored from far in the future down.
fn fill_scored(con: &mut redis::Connection, key: &str, n: usize) {
    fill_lua(
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

/// The keys of `script` (`tag/add`, `tag/remove`) for `target` and `n` tags `t0`… of
/// namespace `tags`.
fn tags(script: &str, target: &str, n: usize) -> Keys {
    Keys::with_items(
        script,
        &[("namespace", "tags"), ("target", target)],
        each("tag", (0..n).map(|t| format!("t{t}"))),
    )
}

/// The call's tags, each on the same `targets` targets `x0`… (the first filled, the others
/// restored from its DUMP, many times faster than filling them).
fn tagged(con: &mut redis::Connection, k: &Keys, targets: usize) {
    let (first, others) = k.items().split_first().expect("a tag");
    fill(con, "SADD", first, "x", targets);
    let dump: Vec<u8> = redis::cmd("DUMP").arg(first).query(con).unwrap();
    for tag in others {
        redis::cmd("RESTORE")
            .arg(tag)
            .arg(0)
            .arg(&dump)
            .exec(con)
            .unwrap();
    }
}

/// 1,000,000 up votes on the subject, and 1,000,000 subjects in both rankings.
fn voted(con: &mut redis::Connection, k: &Keys) {
    let vote = k.like("vote/cast");
    fill(con, "SADD", &vote["up"], "u", 1_000_000);
    fill_scored(con, &vote["hot_rank"], 1_000_000);
    fill_scored(con, &vote["best_rank"], 1_000_000);
}

/// A leaderboard `key` of `n` items `i0`… scored 0, 1, …, and its distinct scores in
/// `levels`.
fn board(con: &mut redis::Connection, key: &str, levels: &str, n: usize) {
    fill_lua(
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
        &[key, levels],
        &[&n.to_string()],
    );
}

/// `expired` sessions `s0`… whose deadline has passed, then `live` ones, each with a
/// ttl record and 1 KiB of data.
fn sessions_crowd(con: &mut redis::Connection, k: &Keys, expired: usize, live: usize) {
    let session = k.like("session/create");
    lua(
        con,
        "local expired, live = tonumber(ARGV[1]), tonumber(ARGV[2])
         local data = cmsgpack.pack({ cart = string.rep('x', 1024) })
         for i = 0, expired + live - 1 do
           local id = 's' .. i
           redis.call('ZADD', KEYS[1], i < expired and 1 or 4102444800000 + i, id)
           redis.call('HSET', KEYS[2], 't:' .. id, 3600000, 'd:' .. id, data)
         end",
        &session.named(&["sessions", "records"]),
        &[&expired.to_string(), &live.to_string()],
    );
}

/// 999 expired sessions, and the session of `live-token` with the most data it may hold:
/// 256 fields, 64 KiB of names and values.
fn full_session(con: &mut redis::Connection, k: &Keys) {
    sessions_crowd(con, k, 999, 0);
    lua(
        con,
        "local id = redis.sha1hex('live-token')
         local data = {}
         for i = 0, 255 do data['f' .. i] = string.rep('x', 250) end
         redis.call('ZADD', KEYS[1], 4102444800000, id)
         redis.call('HSET', KEYS[2], 't:' .. id, 3600000, 'd:' .. id, cmsgpack.pack(data))",
        &k.named(&["sessions", "records"]),
        &[],
    );
}

/// 100,000 pins: 10,000 within about 1 km of `m:1` (1000 of them expired), the rest
/// spread over 100 km.
fn crowd(con: &mut redis::Connection, k: &Keys) {
    fill_lua(
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
        &k.named(&["places", "deadlines"]),
        &[],
    );
}

/// A shortener whose next 999 ids (from 1) are held by slugs, with 1000 expired links
/// (all cached, counted and limited), and `limited`: a live link with an expiry and a
/// visit limit.
fn busy_links(con: &mut redis::Connection, k: &Keys) {
    let links = k.like("short_url/purge");
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
        &links.named(&["links", "cache", "expiries", "limits", "visits"]),
        &[],
    );
}

/// The queue's keys, as `take` names them, in the order the setups' Lua takes them:
/// waiting, delayed, leased, dead, parked, jobs, groups, wake, idle, signal, events,
/// results, kept, turns, completed, blocked.
fn queue_keys(k: &Keys) -> Keys {
    k.like("work_queue/take")
}

/// The names of [`queue_keys`], in that order.
const QUEUE_KEYS: [&str; 16] = [
    "waiting",
    "delayed",
    "leased",
    "dead",
    "parked",
    "jobs",
    "groups",
    "wake",
    "idle",
    "signal",
    "events",
    "results",
    "kept",
    "turns",
    "completed",
    "blocked",
];

/// The queue, paused.
fn pause(con: &mut redis::Connection, k: &Keys) {
    lua(
        con,
        "redis.call('HSET', KEYS[1], '#paused', '1')",
        &[&queue_keys(k)["jobs"]],
        &[],
    );
}

/// A busy queue keeping metrics, with 1,000 schedules every second since 0 (each has
/// missed every run: the most a catch-up adds), 100-byte payloads, catch-up 100, and
/// jobs with retries and removal of their own.
fn scheduled_queue(con: &mut redis::Connection, k: &Keys) {
    busy_queue(con, k);
    let queue = k.like("work_queue/fire");
    lua(
        con,
        "local s, d, j = unpack(KEYS)
         redis.call('HSET', j, '#settings', '0 0 1000 0 0 1000 10000 15552000000 60')
         for i = 0, 999 do
           redis.call('HSET', s, 't:s' .. i, 'every 1000 0', 'o:s' .. i, '1 100 0 1000 e 1000 1000000000000 cd', 'd:s' .. i, string.rep('x', 100),
             'g:s' .. i, 'g')
           redis.call('ZADD', d, 0, 's' .. i)
         end",
        &queue.named(&["schedules", "due", "jobs"]),
        &[],
    );
}

/// A work queue where one `take` with `limit` 25 does the most work of every kind: 25
/// lapsed leases in groups with parked jobs, 25 due delayed jobs, 25 groups due to wake
/// with 10 parked jobs each, 25 idle groups with full 1000-start rings to drop, and at the
/// head of `waiting` 75 jobs of groups whose full rate rings park them, then 25 jobs of
/// groups whose full (but old) rings let them start. Beside them: 100 more parked jobs,
/// `held` and `h1` to `h24` (token 7, last delivery, each in a group with a parked job:
/// `take` acks the 25 first) and `dead`.
fn busy_queue(con: &mut redis::Connection, k: &Keys) {
    let queue = queue_keys(k);
    fill_lua(
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
        &queue.named(&QUEUE_KEYS),
        &[],
    );
}

/// `busy_queue` keeping its history at the tightest bounds (1 completed job, for 1 ms),
/// with 1,000 completed jobs already kept, each with its record, 1,000 log lines of 64
/// bytes and a 16 KiB result: every ack and take drops the most (2 and `limit`).
fn retained_queue(con: &mut redis::Connection, k: &Keys) {
    busy_queue(con, k);
    let queue = queue_keys(k);
    fill_lua(
        con,
        "local j, c = KEYS[1], KEYS[2]
         redis.call('HSET', j, '#settings', cmsgpack.pack({ 3, 0, 1000, 10000000000, 1000000, 1000, 10000000000,
           1, 1, 1440, 100000, 3600000, 16384, 0, 1, 1 }))
         local lines = {}
         for n = 1, 1000 do lines[n] = string.rep('l', 64) end
         local log = cmsgpack.pack(lines)
         for n = 1, 1000 do
           local id = 'c:' .. n
           redis.call('HSET', j, 'd:' .. id, string.rep('x', 100), 's:' .. id, 'completed', 'r:' .. id, 9,
             'n:' .. id, 1, 'b:' .. id, 1, 'f:' .. id, 1, 'v:' .. id, string.rep('r', 16384), 'l:' .. id, log)
           redis.call('ZADD', c, 1, id)
         end",
        &queue.named(&["jobs", "completed"]),
        &[],
    );
}

/// `busy_queue`, its held job keeping 1,000 log lines of 64 bytes: the 64 KiB a job keeps
/// at most (see `log.lua`).
fn logged_queue(con: &mut redis::Connection, k: &Keys) {
    busy_queue(con, k);
    lua(
        con,
        "local lines = {}
         for n = 1, 1000 do lines[n] = string.rep('l', 64) end
         redis.call('HSET', KEYS[1], 'l:held', cmsgpack.pack(lines))",
        &k.named(&["jobs"]),
        &[],
    );
}

/// `take`'s arguments at limit 10 on `busy_queue`: 10 held jobs (`held`, `h1` … `h9`)
/// acked first, each with a result of the longest size a queue may keep (16 KiB).
fn take_acking_busy_jobs() -> Vec<Vec<u8>> {
    let mut args = strings(
        [
            "10000000000",
            "10",
            "1000",
            "0123456789abcdef0123456789abcdef",
        ]
        .map(String::from),
    );
    for id in std::iter::once("held".to_owned()).chain((1..=9).map(|n| format!("h{n}"))) {
        args.extend(strings([id, "7".into(), "r".repeat(1 << 14)]));
    }
    args
}

/// `busy_queue` with its groups taking turns: 300 groups with a turn each and 5 parked
/// jobs each (one rate ring of 1000 starts among them), and the settings' 13th number 1.
fn turns_queue(con: &mut redis::Connection, k: &Keys) {
    busy_queue(con, k);
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
        &queue_keys(k).named(&["parked", "jobs", "turns"]),
        &[],
    );
}

/// `busy_queue` and more of what the operators' scripts walk: 1,000 dead jobs, 1,000
/// parked jobs of 1,000 groups, and every per-minute slot of a day.
fn big_queue(con: &mut redis::Connection, k: &Keys) {
    busy_queue(con, k);
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
        &queue_keys(k).named(&QUEUE_KEYS),
        &[],
    );
}

/// A work queue whose groups' rate rings are of another size than the next `take`'s
/// `group_rate`: 25 jobs at the head of `waiting`, each of a group whose ring holds 1000
/// start times (written under a `group_rate` of 1000), and 25 idle groups with rings as
/// full. A take with a `group_rate` of 1 starts the 25 rings anew, which leaves 999 old
/// start times in each, and drops old start times and idle rings, at most its budget.
fn rate_changed(con: &mut redis::Connection, k: &Keys) {
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
        &queue_keys(k).named(&QUEUE_KEYS),
        &[],
    );
}

/// How many objects the server has yet to free in the background.
fn lazyfree_pending(con: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("lazyfree_pending_objects:"))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// The server time of one call of `script`, from SLOWLOG; the reply must not be an error.
fn time_one(con: &mut redis::Connection, script: &Script, case: &Case) -> u64 {
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(con).unwrap();
    let mut cmd = redis::cmd(if script.is_read_only() {
        "EVALSHA_RO"
    } else {
        "EVALSHA"
    });
    cmd.arg(script.sha1)
        .arg(case.keys.all().len())
        .arg(case.keys.all());
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
    // A fresh server's first background free (UNLINK of a big key, in a script or not)
    // took up to 13 ms here, once: paid now, not by the first case that unlinks.
    fill(&mut con, "SADD", "warm-up", "member:", 100_000);
    let _: () = redis::cmd("UNLINK").arg("warm-up").query(&mut con).unwrap();
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

    println!(
        "Each script at its worst: server time of one call (SLOWLOG, µs), the slowest and the \
         fastest of {runs} runs"
    );
    println!(
        "{:<34} {:<52} {:>9} {:>9}",
        "script", "input", "slowest", "fastest"
    );
    let started = Instant::now();
    let mut over = Vec::new();
    for case in &cases {
        let script = catalog::find(case.script).expect("a script of the catalogue");
        let (mut slowest, mut fastest) = (0, u64::MAX);
        for _ in 0..runs {
            // The old keyspace is freed in the background while the setup runs, and
            // wholly before the timed call.
            let _: () = redis::cmd("FLUSHALL").arg("ASYNC").query(&mut con).unwrap();
            (case.setup)(&mut con, &case.keys);
            while lazyfree_pending(&mut con) > 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(2));
            let took = time_one(&mut con, script, case);
            slowest = slowest.max(took);
            fastest = fastest.min(took);
        }
        let mark = if slowest < BOUND_US {
            ""
        } else {
            "  over 10 ms"
        };
        println!(
            "{:<34} {:<52} {slowest:>9} {fastest:>9}{mark}",
            case.script, case.input
        );
        if slowest >= BOUND_US {
            over.push(case.script);
        }
    }
    println!(
        "\n{} cases, {runs} run(s) each, in {:.0} s.",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    if over.is_empty() {
        println!("Every script under 10 ms.");
    } else {
        println!("Over 10 ms on this run: {over:?}");
    }
}

/// The topic with `n` messages of 1 kB, subscription `s` at the first of them and ten
/// subscriptions whose lease ran out, at the start.
fn topic_backlog(con: &mut redis::Connection, k: &Keys, n: u64) {
    use redis_patterns::reliable_topic::{From, ReliableTopic};
    let topic = ReliableTopic::new(k.value("name"), 10_000_000).unwrap();
    let stream = &k["stream"];
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
        .arg(stream)
        .arg("-")
        .arg("+")
        .query(con)
        .unwrap();
    let _: () = redis::cmd("DEL").arg(stream).query(con).unwrap();
    for (i, (_, fields)) in entries.into_iter().enumerate() {
        let mut add = redis::cmd("XADD");
        add.arg(stream).arg(format!("{}-0", i + 1));
        for (field, value) in fields {
            add.arg(field).arg(value);
        }
        let _: String = add.query(con).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(5));
}

/// The token the rw_lock and fair_lock cases hold and call with.
const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// The read-write lock: TOKEN reads (one hold) beside `live` other readers, `lapsed`
/// lapsed read holds and `places` lapsed writer places (or live ones when no lapsed
/// holds are asked for); and, with `writing`, TOKEN holds the write hold.
fn rw_state(
    con: &mut redis::Connection,
    k: &Keys,
    live: usize,
    lapsed: usize,
    places: usize,
    writing: bool,
) {
    let lock = k.like("rw_lock/acquire_write");
    fill_lua(
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
        &lock.named(&["writer", "readers", "read_holds", "intents"]),
        &[
            &live.to_string(),
            &lapsed.to_string(),
            &places.to_string(),
            if writing { "1" } else { "0" },
            TOKEN,
        ],
    );
}

/// The fair lock: held by TOKEN, a queue of `lapsed` lapsed places at its head, then
/// live ones up to `n` waiters, TOKEN among them when nothing lapsed.
fn fair_state(con: &mut redis::Connection, k: &Keys, n: usize, lapsed: usize) {
    let lock = k.like("fair_lock/acquire");
    fill_lua(
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
        &lock.named(&["owner", "queue", "places"]),
        &[&n.to_string(), &lapsed.to_string(), TOKEN],
    );
}
