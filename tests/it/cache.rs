use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use redis_patterns::Error;
use redis_patterns::cache::{
    BinaryCache, Cache, CategoryCache, ComputeOptions, HashCache, JsonCache, Ttl,
};
use redis_patterns::scripts::cache as script;
use redis_patterns::server::{Capability, Server};
use serde::{Deserialize, Serialize};

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's `JsonCache` example value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct User {
    id: u64,
    name: String,
    gender: String,
    age: u32,
}

/// An application's own error type: `get_or_compute` hands back whatever `compute` fails with.
#[derive(Debug)]
enum AppError {
    #[allow(dead_code)] // read through Debug
    Cache(Error),
    Render(String),
}

impl From<Error> for AppError {
    fn from(err: Error) -> Self {
        AppError::Cache(err)
    }
}

fn sorted(map: Option<HashMap<String, String>>) -> Option<BTreeMap<String, String>> {
    map.map(|m| m.into_iter().collect())
}

fn pttl(con: &mut dyn redis::ConnectionLike, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(con).unwrap()
}

fn exists(con: &mut dyn redis::ConnectionLike, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query(con).unwrap()
}

/// Where a PTTL reply falls, so that the transcript does not depend on timing.
fn ttl_shown(ttl: Ttl, max: Duration) -> String {
    match ttl {
        Ttl::Expires(d) if !d.is_zero() && d <= max => format!("Expires(0 < ttl <= {max:?})"),
        other => format!("{other:?}"),
    }
}

const SCENARIO_KEYS: &[&str] = &[
    "cache:greeting",
    "cache:phone",
    "cache:user:json:10086",
    "cache:json:nothing",
    "cache:user:hash:10086",
    "cache:logo.png",
    "cache:10086",
    "{cache:10086}:computing",
    "cache:10087",
    "{cache:10087}:computing",
    "cache:greet",
    "cache:page_cache",
];

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    // The cluster is shared with other tests (and earlier runs of this one on the same
    // server): start from nothing.
    for key in SCENARIO_KEYS {
        harness::cmd(con, &["DEL", key]);
    }
    let mut t = Transcript::default();

    // Ch 1: Cache.
    let cache = Cache::new().via(harness::script_mode());
    let _ = step!(t, con, cache.set("cache:greeting", "hello world", None));
    let _ = step!(t, con, cache.get::<String>("cache:greeting"));
    let _ = step!(
        t,
        con,
        cache.set("cache:phone", "10086", Some(Duration::from_millis(1000)))
    );
    let _ = step!(t, con, cache.get::<String>("cache:phone"));
    harness::wait_until_gone(con, "cache:phone");
    t.note("wait until the phone entry expires");
    let _ = step!(t, con, cache.get::<String>("cache:phone"));
    let _ = step!(
        t,
        con,
        cache.set("cache:phone", "10086", Some(Duration::ZERO))
    );
    let _ = step!(t, con, cache.delete("cache:greeting"));
    let _ = step!(t, con, cache.delete("cache:greeting"));
    let _ = step!(t, con, cache.get::<String>("cache:greeting"));

    // Ch 1: JsonCache.
    let users = JsonCache::<User>::new();
    let peter = User {
        id: 10086,
        name: "peter".into(),
        gender: "male".into(),
        age: 56,
    };
    let _ = step!(t, con, users.set("cache:user:json:10086", &peter, None));
    let _ = step!(t, con, cache.get::<String>("cache:user:json:10086"));
    let _ = step!(t, con, users.get("cache:user:json:10086"));
    let _ = step!(t, con, users.get("cache:user:json:404"));
    let maybe = JsonCache::<Option<User>>::new();
    let _ = step!(t, con, maybe.set("cache:json:nothing", &None, None));
    let _ = step!(t, con, maybe.get("cache:json:nothing"));
    let _ = step!(t, con, maybe.get("cache:user:json:10086"));
    let _ = step!(t, con, maybe.get("cache:json:missing"));

    // Ch 1: HashCache. A second set replaces the entry whole, and its ttl.
    let hashes = HashCache::new();
    let _ = step!(
        t,
        con,
        hashes.set(
            "cache:user:hash:10086",
            [("id", "10086"), ("name", "peter"), ("gender", "male")],
            None
        )
    );
    t.step(
        "hashes.get(\"cache:user:hash:10086\") (sorted)",
        hashes
            .get("cache:user:hash:10086")
            .in_mode()
            .run(con)
            .map(sorted),
    )
    .unwrap();
    t.step(
        "PTTL cache:user:hash:10086",
        Ok(pttl(con, "cache:user:hash:10086")),
    )
    .unwrap();
    let _ = step!(
        t,
        con,
        hashes.set(
            "cache:user:hash:10086",
            [("id", "10086"), ("name", "jack")],
            Some(Duration::from_secs(60))
        )
    );
    t.step(
        "hashes.get(\"cache:user:hash:10086\") (sorted)",
        hashes
            .get("cache:user:hash:10086")
            .in_mode()
            .run(con)
            .map(sorted),
    )
    .unwrap();
    let ttl = pttl(con, "cache:user:hash:10086");
    t.step(
        "PTTL cache:user:hash:10086 in 1..=60000",
        Ok((1..=60_000).contains(&ttl)),
    )
    .unwrap();
    let _ = step!(
        t,
        con,
        hashes.set("cache:user:hash:10086", [("", ""); 0], None)
    );
    let _ = step!(t, con, hashes.get::<String>("cache:user:hash:404"));

    // Ch 2: BinaryCache, from a file.
    let binary = BinaryCache::new();
    // The standalone and cluster scenarios run at once: each writes a file of its own.
    static FILES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "redis-patterns-cache-{}-{n}.png",
        std::process::id()
    ));
    std::fs::write(&path, b"\x89PNG\r\n\x1a\n").unwrap();
    let op = binary
        .set_file("cache:logo.png", &path, Some(Duration::from_secs(60)))
        .unwrap();
    t.step(
        "binary.set_file(\"cache:logo.png\", <8-byte png header>, 60 s)",
        op.in_mode().run(con),
    )
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    let _ = step!(t, con, binary.get("cache:logo.png"));
    let _ = t
        .step(
            "binary.set_file(\"cache:logo.png\", <missing file>, None)",
            Ok(binary
                .set_file("cache:logo.png", &path, None)
                .map(|_| ())
                .map_err(|err| err.kind())),
        )
        .unwrap();
    let _ = step!(t, con, binary.get("cache:logo.png"));

    // cache_usage.py: cache-aside, here without a stampede.
    let _ = step!(t, con, cache.get::<String>("cache:10086"));
    let mut renders = 0;
    let page = cache.get_or_compute(con, "cache:10086", Some(Duration::from_secs(60)), || {
        renders += 1;
        Ok::<_, Error>("<html>page 10086</html>".to_owned())
    });
    t.step("cache.get_or_compute(\"cache:10086\", 60 s, render)", page)
        .unwrap();
    let page = cache.get_or_compute(con, "cache:10086", Some(Duration::from_secs(60)), || {
        renders += 1;
        Ok::<_, Error>("<html>rendered again</html>".to_owned())
    });
    t.step("cache.get_or_compute(\"cache:10086\", 60 s, render)", page)
        .unwrap();
    t.step("renders", Ok(renders)).unwrap();
    let _ = step!(t, con, cache.get::<String>("cache:10086"));
    let ttl = pttl(con, "cache:10086");
    t.step(
        "PTTL cache:10086 in 1..=60000",
        Ok((1..=60_000).contains(&ttl)),
    )
    .unwrap();
    t.step(
        "EXISTS {cache:10086}:computing",
        Ok(exists(con, "{cache:10086}:computing")),
    )
    .unwrap();
    let failed: Result<String, AppError> = cache.get_or_compute(con, "cache:10087", None, || {
        Err(AppError::Render("template not found".into()))
    });
    t.step(
        "cache.get_or_compute(\"cache:10087\", None, <fails>)",
        Ok(format!("{failed:?}")),
    )
    .unwrap();
    t.step(
        "EXISTS {cache:10087}:computing",
        Ok(exists(con, "{cache:10087}:computing")),
    )
    .unwrap();
    let _ = step!(t, con, cache.get::<String>("cache:10087"));

    // 2011 cookbook: the hash cache, one hash per category.
    let greet = CategoryCache::new("cache:greet").unwrap();
    let _ = step!(t, con, greet.set("morning", "good morning!"));
    let _ = step!(t, con, greet.get::<String>("morning"));
    let _ = step!(t, con, greet.size());
    let _ = step!(t, con, greet.delete("morning"));
    let _ = step!(t, con, greet.delete("morning"));
    let _ = step!(t, con, greet.get::<String>("morning"));
    let _ = step!(t, con, greet.size());
    let _ = step!(t, con, greet.ttl());
    let _ = step!(t, con, greet.expire(Duration::from_secs(3)));

    let page = CategoryCache::new("cache:page_cache").unwrap();
    let _ = step!(t, con, page.set("/topic/123", "hello"));
    let _ = step!(t, con, page.set("/topic/10086", "moto"));
    let _ = step!(t, con, page.size());
    let _ = step!(t, con, page.get::<String>("/topic/123"));
    let _ = step!(t, con, page.get::<String>("/topic/10086"));
    let _ = step!(t, con, page.ttl());
    let _ = step!(t, con, page.expire(Duration::from_millis(100)));
    let max = Duration::from_millis(100);
    t.step(
        "page.ttl()",
        page.ttl().in_mode().run(con).map(|ttl| ttl_shown(ttl, max)),
    )
    .unwrap();
    harness::wait_until_gone(con, "cache:page_cache");
    t.note("wait until the category expires");
    let _ = step!(t, con, page.size());
    let _ = step!(t, con, page.get::<String>("/topic/123"));
    let _ = step!(t, con, page.ttl());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("cache");
    assert_snapshot("cache__scenario", &scenario(&mut recorder.con(db.con())));
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("cache__scenario", &scenario(&mut harness::cluster_con()));
}

/// Values come back byte for byte: every byte value, and bytes that are not UTF-8.
#[test]
fn binary_values_round_trip_exactly() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let cache = BinaryCache::new();
    let every_byte: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    cache.set("all", &every_byte, None).run(&mut con).unwrap();
    assert_eq!(cache.get("all").run(&mut con).unwrap(), Some(every_byte));

    let not_utf8 = b"\xff\xfe\xc3\x28\x00 tail".to_vec();
    assert!(std::str::from_utf8(&not_utf8).is_err());
    cache.set("raw", &not_utf8, None).run(&mut con).unwrap();
    assert_eq!(cache.get("raw").run(&mut con).unwrap(), Some(not_utf8));
    // The string cache refuses to pretend those bytes are text.
    assert!(Cache::new().get::<String>("raw").run(&mut con).is_err());

    assert_eq!(cache.get("missing").run(&mut con).unwrap(), None);
    assert!(cache.delete("raw").run(&mut con).unwrap());
    assert_eq!(cache.get("raw").run(&mut con).unwrap(), None);
}

/// Every cache type takes and gives back non-UTF-8 bytes unchanged; `get_or_compute`
/// caches bytes as well as text; a value that cannot decode as the type asked for is an
/// error and stays cached.
#[test]
fn every_cache_is_binary_safe() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let bin = harness::NOT_UTF8;

    let cache = Cache::new();
    cache.set("c:bin", bin, None).run(&mut con).unwrap();
    assert_eq!(
        cache
            .get::<Vec<u8>>("c:bin")
            .run(&mut con)
            .unwrap()
            .as_deref(),
        Some(bin)
    );
    harness::assert_undecodable_changes_nothing(&mut con, |c| cache.get::<String>("c:bin").run(c));
    let computed: Vec<u8> = cache
        .get_or_compute(&mut con, "c:computed", None, || {
            Ok::<_, Error>(bin.to_vec())
        })
        .unwrap();
    assert_eq!(computed, bin);
    let hit: Vec<u8> = cache
        .get_or_compute(
            &mut con,
            "c:computed",
            None,
            || -> Result<Vec<u8>, Error> { panic!("a hit must not compute") },
        )
        .unwrap();
    assert_eq!(hit, bin);
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        cache.get_or_compute(c, "c:computed", None, || -> Result<String, Error> {
            panic!("a hit must not compute, even one that does not decode")
        })
    });

    let hashes = HashCache::new();
    hashes
        .set(
            "h:bin",
            [(bin, bin), (b"text".as_slice(), b"plain".as_slice())],
            None,
        )
        .run(&mut con)
        .unwrap();
    let entry: HashMap<Vec<u8>, Vec<u8>> = hashes.get("h:bin").run(&mut con).unwrap().unwrap();
    assert_eq!(entry[bin], bin);
    assert_eq!(entry[b"text".as_slice()], b"plain");
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        hashes.get::<HashMap<String, String>>("h:bin").run(c)
    });

    let category = CategoryCache::new("cat:bin").unwrap();
    category.set("page", bin).run(&mut con).unwrap();
    let page: Option<Vec<u8>> = category.get("page").run(&mut con).unwrap();
    assert_eq!(page.as_deref(), Some(bin));
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        category.get::<String>("page").run(c)
    });

    let binary = BinaryCache::new();
    assert_eq!(
        binary.get("c:bin").run(&mut con).unwrap().as_deref(),
        Some(bin)
    );
}

/// A hit is one plain `GET`: the connection's last command is that `GET`, and no
/// script ran after it; a miss runs the claim and fill scripts.
#[test]
fn a_hit_is_one_get() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut observer = db.con();
    let id = harness::client_id(&mut con);
    let last_command = |observer: &mut redis::Connection| harness::last_command(observer, id);
    let cache = Cache::new();
    let miss: String = cache
        .get_or_compute(&mut con, "page", None, || {
            Ok::<_, Error>("rendered".to_owned())
        })
        .unwrap();
    assert_eq!(miss, "rendered");
    assert_eq!(last_command(&mut observer), "evalsha"); // cache/fill
    let hit: String = cache
        .get_or_compute(&mut con, "page", None, || -> Result<String, Error> {
            panic!("a hit must not compute")
        })
        .unwrap();
    assert_eq!(hit, "rendered");
    assert_eq!(last_command(&mut observer), "get");

    let json = JsonCache::<Vec<u32>>::new();
    let first = json
        .get_or_compute(&cache, &mut con, "json", None, || {
            Ok::<_, Error>(vec![1, 2])
        })
        .unwrap();
    let again = json
        .get_or_compute(
            &cache,
            &mut con,
            "json",
            None,
            || -> Result<Vec<u32>, Error> { panic!("a hit must not compute") },
        )
        .unwrap();
    assert_eq!((first, again), (vec![1, 2], vec![1, 2]));
    assert_eq!(last_command(&mut observer), "get");
}

/// 16 clients miss the same entries at the same moment: each entry is computed exactly
/// once, and every client gets the value the one computation produced.
#[test]
fn get_or_compute_computes_once_under_a_stampede() {
    let db = Arc::new(harness::fresh_db());
    for round in 0..3 {
        let name = format!("page:{round}");
        let computed = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(16));
        let clients: Vec<_> = (0..16)
            .map(|i| {
                let (db, computed, start, name) =
                    (db.clone(), computed.clone(), start.clone(), name.clone());
                thread::spawn(move || {
                    let mut con = db.con();
                    start.wait();
                    Cache::new()
                        .get_or_compute(&mut con, &name, Some(Duration::from_secs(60)), || {
                            computed.fetch_add(1, Ordering::SeqCst);
                            thread::sleep(Duration::from_millis(150));
                            Ok::<_, Error>(format!("built by client {i}"))
                        })
                        .unwrap()
                })
            })
            .collect();
        let values: HashSet<String> = clients.into_iter().map(|c| c.join().unwrap()).collect();
        assert_eq!(computed.load(Ordering::SeqCst), 1, "{name}");
        assert_eq!(values.len(), 1, "{name}: {values:?}");
        let mut con = db.con();
        let stored = Cache::new().get(&name).run(&mut con).unwrap();
        assert_eq!(stored.as_ref(), values.iter().next());
        assert!(!exists(&mut con, &format!("{{{name}}}:computing")));
    }
}

/// The same on async connections, with an async computation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_or_compute_async_computes_once_under_a_stampede() {
    let db = Arc::new(harness::fresh_db());
    let computed = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(tokio::sync::Barrier::new(16));
    let clients: Vec<_> = (0..16)
        .map(|i| {
            let (db, computed, start) = (db.clone(), computed.clone(), start.clone());
            tokio::spawn(async move {
                let mut con = db.multiplexed().await;
                start.wait().await;
                Cache::new()
                    .get_or_compute_async(&mut con, "async:page", None, || async move {
                        computed.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(150)).await;
                        Ok::<_, Error>(format!("built by task {i}"))
                    })
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut values = HashSet::new();
    for client in clients {
        values.insert(client.await.unwrap());
    }
    assert_eq!(computed.load(Ordering::SeqCst), 1);
    assert_eq!(values.len(), 1, "{values:?}");
    let mut con = db.con();
    assert_eq!(
        Cache::new()
            .get("async:page")
            .run(&mut con)
            .unwrap()
            .as_ref(),
        values.iter().next()
    );
    assert_eq!(pttl(&mut con, "async:page"), -1);
}

/// A client claims an entry and crashes (never fills it): 8 waiting clients compute it
/// exactly once, after the claim's lease runs out.
#[test]
fn a_crashed_computation_lets_another_compute_after_the_lease() {
    let db = Arc::new(harness::fresh_db());
    let mut con = db.con();
    let lease = Duration::from_millis(300);
    let claimed = Instant::now();
    let answer = script::claim("crash", "{crash}:computing", "dead-client", lease)
        .run(&mut con)
        .unwrap();
    assert_eq!(answer, ("compute".to_owned(), None));

    let computed = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..8)
        .map(|i| {
            let (db, computed) = (db.clone(), computed.clone());
            thread::spawn(move || {
                let mut con = db.con();
                // Waits as long as a loaded machine may need: the wait ends when the
                // lease runs out, not at max_wait.
                let cache = Cache::with_options(ComputeOptions {
                    lease: Duration::from_secs(5),
                    max_wait: Duration::from_secs(60),
                    poll: Duration::from_millis(5),
                })
                .unwrap();
                cache
                    .get_or_compute(&mut con, "crash", None, || {
                        computed.fetch_add(1, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(50));
                        Ok::<_, Error>(format!("built by client {i}"))
                    })
                    .unwrap()
            })
        })
        .collect();
    let values: HashSet<String> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    assert!(claimed.elapsed() >= lease);
    assert_eq!(computed.load(Ordering::SeqCst), 1);
    assert_eq!(values.len(), 1, "{values:?}");
    assert!(!exists(&mut con, "{crash}:computing"));
}

/// A waiter gives up after `max_wait` with `Error::Timeout`, and never computes; a failed
/// computation releases its claim at once, so the next caller computes without waiting.
#[test]
fn waiting_is_bounded_and_a_failure_releases_the_claim() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(
        &mut con,
        &["SET", "{slow}:computing", "other", "PX", "10000"],
    );
    let cache = Cache::with_options(ComputeOptions {
        max_wait: Duration::from_millis(150),
        ..ComputeOptions::default()
    })
    .unwrap();
    let started = Instant::now();
    let result = cache.get_or_compute(&mut con, "slow", None, || -> Result<String, Error> {
        panic!("a waiter must not compute")
    });
    match result {
        Err(Error::Timeout { what, waited }) => {
            assert_eq!(what, "cache entry \"slow\"");
            assert!(waited >= Duration::from_millis(150), "{waited:?}");
            // Well before the other claim (10 s) runs out: a waiter that outlived it
            // would have computed, and panicked.
            assert!(started.elapsed() < Duration::from_secs(10));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(!exists(&mut con, "slow"));

    let failed = cache.get_or_compute(&mut con, "fails", None, || -> Result<String, _> {
        Err(AppError::Render("boom".into()))
    });
    assert!(matches!(failed, Err(AppError::Render(ref m)) if m == "boom"));
    assert!(!exists(&mut con, "{fails}:computing"));
    assert!(!exists(&mut con, "fails"));
    // No wait: the read, the claim and the fill, and no look in between. The scripts are
    // loaded first: a server that has not run `cache/fill` yet (this test alone) would add
    // the NOSCRIPT recovery's round trip.
    redis_patterns::catalog::load_all(&mut con).unwrap();
    let mut counted = harness::Counting {
        inner: con,
        requests: 0,
    };
    let value: String = cache
        .get_or_compute(&mut counted, "fails", None, || {
            Ok::<_, AppError>("ok".into())
        })
        .unwrap();
    assert_eq!(value, "ok");
    assert_eq!(counted.requests, 3);
}

/// 4 writers replace one hash entry 150 times each while 8 readers read it with its ttl
/// in one MULTI: every read sees one writer's whole map (never a merge, never a partial
/// write) with a ttl in 1..=60000 ms (never without one).
#[test]
fn hash_set_is_never_seen_without_its_ttl_or_half_written() {
    let db = Arc::new(harness::fresh_db());
    let map = |writer: usize, n: usize| -> Vec<(String, String)> {
        (0..writer + 2)
            .map(|f| (format!("f{f}"), format!("{writer}:{n}")))
            .collect()
    };
    let ttl = Some(Duration::from_secs(60));
    HashCache::new()
        .set("entry", map(0, 0), ttl)
        .run(&mut db.con())
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (db, done, reads) = (db.clone(), done.clone(), reads.clone());
            thread::spawn(move || {
                let mut con = db.con();
                while !done.load(Ordering::SeqCst) {
                    let (fields, pttl): (HashMap<String, String>, i64) = redis::pipe()
                        .atomic()
                        .cmd("HGETALL")
                        .arg("entry")
                        .cmd("PTTL")
                        .arg("entry")
                        .query(&mut con)
                        .unwrap();
                    assert!((1..=60_000).contains(&pttl), "pttl {pttl} with {fields:?}");
                    let stamp = fields.get("f0").expect("the entry is never missing");
                    let writer: usize = stamp.split(':').next().unwrap().parse().unwrap();
                    assert_eq!(fields.len(), writer + 2, "{fields:?}");
                    assert!(fields.values().all(|v| v == stamp), "{fields:?}");
                    reads.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (db, reads) = (db.clone(), reads.clone());
            thread::spawn(move || {
                let mut con = db.con();
                // Reads before the writes, and again while they run.
                harness::wait_for_count(&reads, 1, "a reader's first read");
                for n in 0..150 {
                    if n == 75 {
                        harness::wait_for_a_whole_turn(&reads, 8, "a read among the writes");
                    }
                    HashCache::new()
                        .set("entry", map(w, n), ttl)
                        .run(&mut con)
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        reader.join().unwrap();
    }
}

#[test]
fn json_values_that_do_not_decode_are_errors() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["SET", "text", "not json"]);
    harness::cmd(&mut con, &["SET", "number", "42"]);
    let users = JsonCache::<User>::new();
    for key in ["text", "number"] {
        match users.get(key).run(&mut con) {
            Err(Error::Redis(err)) => {
                assert_eq!(err.kind(), redis::ErrorKind::UnexpectedReturnType);
                assert!(err.to_string().contains(key), "{err}");
            }
            other => panic!("expected a decode error, got {other:?}"),
        }
    }
    assert_eq!(
        JsonCache::<u32>::new().get("number").run(&mut con).unwrap(),
        Some(42)
    );
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["HSET", "a:hash", "f", "v"]);
    harness::cmd(&mut con, &["SET", "a:string", "v"]);
    let before = harness::dump(&mut con);

    let cache = Cache::new();
    let huge = Duration::from_millis(1_000_000_000_000_000);
    assert_invalid(cache.set("", "v", None).run(&mut con), "name");
    assert_invalid(cache.get::<String>("").run(&mut con), "name");
    assert_invalid(cache.delete("").run(&mut con), "name");
    assert_invalid(
        cache.set("k", "v", Some(Duration::ZERO)).run(&mut con),
        "ttl",
    );
    assert_invalid(
        cache
            .set("k", "v", Some(Duration::from_micros(999)))
            .run(&mut con),
        "ttl",
    );
    assert_invalid(cache.set("k", "v", Some(huge)).run(&mut con), "ttl");
    assert_invalid(
        cache.set("k", "v", Some(Duration::MAX)).run(&mut con),
        "ttl",
    );

    let users = JsonCache::<HashMap<Vec<u8>, u8>>::new();
    let not_json = HashMap::from([(vec![1u8], 1u8)]);
    assert_invalid(users.set("k", &not_json, None).run(&mut con), "content");
    assert_invalid(users.set("", &HashMap::new(), None).run(&mut con), "name");
    assert_invalid(users.get("").run(&mut con), "name");

    let hashes = HashCache::new();
    assert_invalid(hashes.set("k", [("", ""); 0], None).run(&mut con), "fields");
    assert_invalid(
        hashes
            .set("k", &HashMap::<String, String>::new(), None)
            .run(&mut con),
        "fields",
    );
    assert_invalid(hashes.set("", [("f", "v")], None).run(&mut con), "name");
    assert_invalid(
        hashes
            .set("k", [("f", "v")], Some(Duration::ZERO))
            .run(&mut con),
        "ttl",
    );
    assert_invalid(
        hashes.set("k", [("f", "v")], Some(huge)).run(&mut con),
        "ttl",
    );
    assert_invalid(hashes.get::<String>("").run(&mut con), "name");

    let binary = BinaryCache::new();
    assert_invalid(binary.set("", b"v", None).run(&mut con), "name");
    assert_invalid(
        binary.set("k", b"v", Some(Duration::ZERO)).run(&mut con),
        "ttl",
    );
    let missing = binary.set_file("k", "/nonexistent/redis-patterns/file.png", None);
    assert_eq!(
        missing.map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );

    assert_invalid(CategoryCache::new(""), "category");
    assert_invalid(CategoryCache::new(""), "category");
    assert_invalid(
        CategoryCache::new("c").unwrap().set("", "v").run(&mut con),
        "name",
    );
    assert_invalid(
        CategoryCache::new("c")
            .unwrap()
            .expire(Duration::ZERO)
            .run(&mut con),
        "ttl",
    );

    let never = || -> Result<String, Error> { panic!("bad input must not compute") };
    assert_invalid(cache.get_or_compute(&mut con, "", None, never), "name");
    assert_invalid(cache.get_or_compute(&mut con, "a}b", None, never), "name");
    assert_invalid(
        cache.get_or_compute(&mut con, "k", Some(Duration::ZERO), never),
        "ttl",
    );
    let no_lease = Cache::with_options(ComputeOptions {
        lease: Duration::ZERO,
        ..ComputeOptions::default()
    });
    assert_invalid(no_lease, "lease");

    // WRONGTYPE: a mistyped name never overwrites another type's value.
    assert_code(
        hashes.set("a:string", [("f", "v")], None).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(hashes.get::<String>("a:string").run(&mut con), "WRONGTYPE");
    assert_code(cache.get::<String>("a:hash").run(&mut con), "WRONGTYPE");
    assert_code(
        CategoryCache::new("a:string")
            .unwrap()
            .set("n", "v")
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(
        cache.get_or_compute(&mut con, "a:hash", None, never),
        "WRONGTYPE",
    );

    // The scripts check their raw arguments, as a non-Rust caller sends them.
    for ttl in ["0", "-1", "1e3", "0x10", "abc", " 1", "1000000000000000"] {
        assert_code(
            harness::eval(&mut con, &script::HASH_SET, &["k"], &[ttl, "f", "v"]),
            "BAD_TTL",
        );
        assert_code(
            harness::eval(
                &mut con,
                &script::FILL,
                &["k", "{k}:computing"],
                &["t", "v", ttl],
            ),
            "BAD_TTL",
        );
        assert_code(
            harness::eval(
                &mut con,
                &script::CLAIM,
                &["k", "{k}:computing"],
                &["t", ttl],
            ),
            "BAD_LEASE",
        );
    }
    assert_code(
        harness::eval(
            &mut con,
            &script::CLAIM,
            &["k", "{k}:computing"],
            &["t", ""],
        ),
        "BAD_LEASE",
    );
    for (fields, code) in [
        (&[][..], "BAD_ARGS"),
        (&["f"][..], "BAD_ARGS"),
        (&["f", "v", "g"][..], "BAD_FIELDS"),
    ] {
        let mut args = vec!["1000"];
        args.extend_from_slice(fields);
        assert_code(
            harness::eval(&mut con, &script::HASH_SET, &["k"], &args),
            code,
        );
    }
    assert_code(
        harness::eval(&mut con, &script::HASH_SET, &["a:string"], &["", "f", "v"]),
        "WRONGTYPE",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::CLAIM,
            &["k", "{k}:computing"],
            &["", "1000"],
        ),
        "BAD_TOKEN",
    );
    assert_code(
        harness::eval(
            &mut con,
            &script::FILL,
            &["k", "{k}:computing"],
            &["", "v", ""],
        ),
        "BAD_TOKEN",
    );
    // A claim on a key of another type fails before it writes its marker.
    assert_code(
        harness::eval(
            &mut con,
            &script::CLAIM,
            &["a:hash", "{a:hash}:computing"],
            &["t", "1000"],
        ),
        "WRONGTYPE",
    );

    assert_eq!(harness::dump(&mut con), before);
}

/// A fill by a client whose lease ran out stores its value but leaves the newer claim.
#[test]
fn a_late_fill_keeps_the_newer_claim() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(
        &mut con,
        &["SET", "{late}:computing", "newer", "PX", "100000"],
    );
    let kept = script::fill("late", "{late}:computing", "older", b"value", None)
        .run(&mut con)
        .unwrap();
    assert!(!kept);
    assert_eq!(
        Cache::new()
            .get::<String>("late")
            .run(&mut con)
            .unwrap()
            .as_deref(),
        Some("value")
    );
    let holder: String = redis::cmd("GET")
        .arg("{late}:computing")
        .query(&mut con)
        .unwrap();
    assert_eq!(holder, "newer");
    let dropped = script::fill(
        "late",
        "{late}:computing",
        "newer",
        b"value 2",
        Some(Duration::from_secs(60)),
    )
    .run(&mut con)
    .unwrap();
    assert!(dropped);
    assert!(!exists(&mut con, "{late}:computing"));
    assert!((1..=60_000).contains(&pttl(&mut con, "late")));
}

/// `get_or_compute_async` waits between looks with a timer of its own: on smol, with no
/// tokio runtime anywhere, a waiter outlives another client's claim and computes.
#[test]
fn get_or_compute_async_runs_without_tokio() {
    let db = harness::fresh_db();
    let claimed_at = harness::server_ms(&mut db.con());
    harness::cmd(
        &mut db.con(),
        &["SET", "{smol}:computing", "other", "PX", "150"],
    );
    smol::block_on(async {
        assert!(tokio::runtime::Handle::try_current().is_err());
        let mut con = db.client.get_multiplexed_async_connection().await.unwrap();
        let db = &db;
        let value: String = Cache::new()
            .get_or_compute_async(&mut con, "smol", None, || async move {
                // It computes only once the other client's claim has run out, on the
                // server's clock.
                let computing_at = harness::server_ms(&mut db.con());
                assert!(computing_at >= claimed_at + 150, "computed while claimed");
                Ok::<_, Error>("computed on smol".to_owned())
            })
            .await
            .unwrap();
        assert_eq!(value, "computed on smol");
    });
    // Its own claim replaced the other's, and is gone.
    let mut con = db.con();
    assert!(!exists(&mut con, "{smol}:computing"));
}

/// An entry of a category with a ttl of its own, where the server has per-field expiry
/// (Redis 8.0, Valkey 9); elsewhere the server refuses the command and nothing is written.
#[test]
fn category_entries_expire_alone_where_the_server_has_field_expiry() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let server = Server::probe(&mut con).unwrap();
    let pages = CategoryCache::new("cache:each").unwrap();
    pages.set("kept", "a").run(&mut con).unwrap();
    let brief = pages.set_with_ttl("brief", "b", Duration::from_millis(200));
    if !server.supports(Capability::HashFieldExpiry) {
        let before = harness::dump(&mut con);
        let refused = brief.run(&mut con).unwrap_err();
        assert!(
            refused.to_string().contains("unknown command"),
            "{server}: {refused}"
        );
        let refused = pages.entry_ttl("kept").run(&mut con).unwrap_err();
        assert!(
            refused.to_string().contains("unknown command"),
            "{server}: {refused}"
        );
        assert_eq!(harness::dump(&mut con), before);
        return;
    }
    brief.run(&mut con).unwrap();
    match pages.entry_ttl("brief").run(&mut con).unwrap() {
        Ttl::Expires(left) => assert!(left <= Duration::from_millis(200), "{left:?}"),
        other => panic!("{server}: {other:?}"),
    }
    assert_eq!(pages.entry_ttl("kept").run(&mut con).unwrap(), Ttl::Forever);
    assert_eq!(pages.entry_ttl("none").run(&mut con).unwrap(), Ttl::Missing);
    assert_eq!(pages.ttl().run(&mut con).unwrap(), Ttl::Forever);
    assert_eq!(pages.size().run(&mut con).unwrap(), 2);

    // The entry goes alone; the category and its other entry stay.
    let deadline = Instant::now() + Duration::from_secs(30);
    while pages
        .get::<String>("brief")
        .run(&mut con)
        .unwrap()
        .is_some()
    {
        assert!(Instant::now() < deadline, "{server}: never expired");
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        pages.entry_ttl("brief").run(&mut con).unwrap(),
        Ttl::Missing
    );
    assert_eq!(
        pages
            .get::<String>("kept")
            .run(&mut con)
            .unwrap()
            .as_deref(),
        Some("a")
    );

    // A plain set of the entry keeps it for good again.
    pages
        .set_with_ttl("brief", "b", Duration::from_secs(60))
        .run(&mut con)
        .unwrap();
    pages.set("brief", "c").run(&mut con).unwrap();
    assert_eq!(
        pages.entry_ttl("brief").run(&mut con).unwrap(),
        Ttl::Forever
    );

    // Bad input is refused before anything is sent.
    assert_invalid(
        pages.set_with_ttl("x", "v", Duration::ZERO).run(&mut con),
        "ttl",
    );
    assert_invalid(
        pages
            .set_with_ttl("", "v", Duration::from_secs(1))
            .run(&mut con),
        "name",
    );
    assert_invalid(pages.entry_ttl("").run(&mut con), "name");
    // A key of another type: the server's WRONGTYPE, and nothing changes.
    harness::cmd(&mut con, &["SET", "cache:a_string", "v"]);
    let before = harness::dump(&mut con);
    let wrong = CategoryCache::new("cache:a_string").unwrap();
    assert_code(
        wrong
            .set_with_ttl("f", "v", Duration::from_secs(1))
            .run(&mut con),
        "WRONGTYPE",
    );
    assert_code(wrong.entry_ttl("f").run(&mut con), "WRONGTYPE");
    assert_eq!(harness::dump(&mut con), before);
}
