use std::process::Command;
use std::sync::Arc;
use std::thread;

use redis_patterns::Error;
use redis_patterns::bloom::BloomFilter;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let seen = BloomFilter::new("Bloom:seen", 1000, 100).unwrap();
    t.step("seen.bits(): (m, k)", Ok::<_, Error>(seen.bits()))
        .unwrap();
    let _ = step!(t, con, seen.info(0));
    let _ = step!(t, con, seen.contains(&["a", "b"]));
    let _ = step!(t, con, seen.add(&["a", "b", "a"]));
    let _ = step!(t, con, seen.add(&["b", "c"]));
    let _ = step!(t, con, seen.contains(&["a", "b", "c", "d"]));
    let _ = step!(t, con, seen.info(0));
    t.step("seen.count()", seen.count(con)).unwrap();
    t.note("another client re-creates nothing: a call with other parameters is refused");
    let other = BloomFilter::new("Bloom:seen", 2000, 100).unwrap();
    let _ = step!(t, con, other.contains(&["a"]));
    let _ = step!(t, con, other.add(&["e"]));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("bloom");
    assert_snapshot("bloom__scenario", &scenario(&mut recorder.con(db.con())));
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("bloom__scenario", &scenario(&mut harness::cluster_con()));
}

/// Items over four partitions on the cluster: each partition has a hash tag of its own,
/// so they spread over the masters, and every item is found again.
#[test]
fn partitions_spread_over_a_cluster() {
    let mut con = harness::cluster_con();
    let filter = BloomFilter::new("Bloom:parts", 20_000, 1000)
        .unwrap()
        .with_partitions(4)
        .unwrap();
    let items: Vec<String> = (0..5000).map(|i| format!("item:{i}")).collect();
    let new = filter.add_all(&mut con, &items).unwrap();
    assert!(new.iter().filter(|n| **n).count() >= 4990);
    assert_eq!(
        filter.contains_all(&mut con, &items).unwrap(),
        vec![true; 5000]
    );
    let count = filter.count(&mut con).unwrap();
    assert!((4990..=5000).contains(&count), "{count}");
    let mut slots = std::collections::BTreeSet::new();
    for p in 0..4 {
        let (params, _) = filter.keys(p).unwrap();
        assert_eq!(params, format!("{{Bloom:parts:{p}}}:bloom"));
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(params)
            .query(&mut con)
            .unwrap();
        slots.insert(slot);
        assert_eq!(
            filter.info(p).run(&mut con).unwrap().unwrap().partition,
            p as u64
        );
    }
    assert_eq!(slots.len(), 4);
    // A call with items of two partitions is refused before any I/O.
    let spread = ["item:0", "item:1", "item:2", "item:3", "item:4"];
    assert_invalid(filter.add(&spread).run(&mut con), "items");
}

/// The rate the formula promises, at the capacity: over 20,000 items never added (10^6 in `benches/bloom.rs`), the
/// false positives lie within the 99 % binomial interval of
/// (1 - e^(-kn/m))^k, which is at most 1 / one_in. The items are fixed, so the count is
/// too.
#[test]
fn the_false_positive_rate_is_the_formulas() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for one_in in [10u64, 100, 1000] {
        let n = 10_000;
        let filter = BloomFilter::new(format!("Bloom:rate:{one_in}"), n, one_in).unwrap();
        let added: Vec<String> = (0..n).map(|i| format!("member:{i}")).collect();
        filter.add_all(&mut con, &added).unwrap();
        let (m, k) = filter.bits();
        let (m, k) = (m as f64, k as f64);
        let p = (1.0 - (-k * n as f64 / m).exp()).powf(k);
        assert!(
            p <= 1.0 / one_in as f64,
            "the formula's rate {p} for 1 in {one_in}"
        );
        let trials = 20_000;
        let others: Vec<String> = (0..trials).map(|i| format!("other:{i}")).collect();
        let positives = filter
            .contains_all(&mut con, &others)
            .unwrap()
            .into_iter()
            .filter(|found| *found)
            .count() as f64;
        let (mean, sd) = (trials as f64 * p, (trials as f64 * p * (1.0 - p)).sqrt());
        assert!(
            (positives - mean).abs() <= 2.576 * sd,
            "1 in {one_in}: {positives} false positives in {trials}, expected {mean:.0} ± {:.0}",
            2.576 * sd
        );
        // Nothing added is ever missed.
        assert!(
            filter
                .contains_all(&mut con, &added)
                .unwrap()
                .iter()
                .all(|f| *f)
        );
    }
}

/// Eight clients add their own items at once: every item is found, and the count is the
/// items added, less the few that were false positives when added.
#[test]
fn concurrent_adds_lose_nothing() {
    let db = Arc::new(harness::fresh_db());
    let filter = Arc::new(BloomFilter::new("Bloom:concurrent", 40_000, 1000).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (db, filter) = (db.clone(), filter.clone());
            thread::spawn(move || {
                let mut con = db.con();
                for round in 0..10 {
                    let items: Vec<String> = (0..400).map(|i| format!("{t}:{round}:{i}")).collect();
                    filter.add_all(&mut con, &items).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut con = db.con();
    let all: Vec<String> = (0..8)
        .flat_map(|t| (0..10).flat_map(move |r| (0..400).map(move |i| format!("{t}:{r}:{i}"))))
        .collect();
    assert!(
        filter
            .contains_all(&mut con, &all)
            .unwrap()
            .iter()
            .all(|f| *f)
    );
    let count = filter.count(&mut con).unwrap();
    assert!((31_900..=32_000).contains(&count), "{count}");
}

/// Refused calls change nothing: other parameters, an item of another partition, a
/// filter that is too big for one partition, damaged parameters.
#[test]
fn bad_calls_change_nothing() {
    use redis_patterns::scripts::bloom as script;
    let db = harness::fresh_db();
    let mut con = db.con();
    let filter = BloomFilter::new("Bloom:bad", 1000, 100).unwrap();
    filter.add(&["a"]).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    let (params, bits) = filter.keys(0).unwrap();
    let call = |capacity, one_in, partitions, partition, item: &[u8]| {
        script::add(
            params,
            bits,
            capacity,
            one_in,
            partitions,
            partition,
            &[item],
        )
    };
    assert_code(call(1001, 100, 1, 0, b"b").run(&mut con), "BAD_PARAMS");
    assert_code(call(1000, 1000, 1, 0, b"b").run(&mut con), "BAD_PARAMS");
    assert_code(call(1000, 100, 2, 0, b"b").run(&mut con), "BAD_PARAMS");
    assert_code(call(1000, 100, 2, 2, b"b").run(&mut con), "BAD_PARTITION");
    assert_code(
        call(10_000_000_000, 100, 1, 0, b"b").run(&mut con),
        "BAD_CAPACITY",
    );
    assert_eq!(harness::dump(&mut con), before);
    // An item of the other partition of a two-partition filter.
    let two = BloomFilter::new("Bloom:two", 1000, 100)
        .unwrap()
        .with_partitions(2)
        .unwrap();
    let item = (0..)
        .map(|i| format!("x{i}"))
        .find(|x| two.partition_of(x.as_bytes()) == 1)
        .unwrap();
    let (params, bits) = two.keys(0).unwrap();
    assert_code(
        script::add(params, bits, 1000, 100, 2, 0, &[item.as_bytes()]).run(&mut con),
        "BAD_PARTITION",
    );
    assert_eq!(harness::dump(&mut con), before);
    // Parameters someone else changed.
    harness::cmd(&mut con, &["HSET", "{Bloom:bad}:bloom", "k", "8"]);
    let before = harness::dump(&mut con);
    assert_code(filter.add(&["b"]).run(&mut con), "BAD_FILTER");
    assert_code(filter.contains(&["a"]).run(&mut con), "BAD_FILTER");
    assert_code(filter.info(0).run(&mut con), "BAD_FILTER");
    assert_eq!(harness::dump(&mut con), before);
    // Settings refused when the filter is built.
    assert_invalid(BloomFilter::new("b", 0, 100), "capacity");
    assert_invalid(BloomFilter::new("b", 10, 1), "one_in");
    // 10^7 items at 1 in 1,000 need 143,776,344 bits: nine partitions of 2^24.
    assert_eq!(
        BloomFilter::new("b", 10_000_000, 1000)
            .unwrap()
            .keys(8)
            .unwrap()
            .0,
        "{b:8}:bloom"
    );
    assert!(
        BloomFilter::new("b", 10_000_000, 1000)
            .unwrap()
            .keys(9)
            .is_none()
    );
    assert_invalid(
        BloomFilter::new("b", 10_000_000, 1000)
            .unwrap()
            .with_partitions(8),
        "partitions",
    );
    assert_invalid(
        BloomFilter::new("b", 10_000_000_000, 1_000_000_000),
        "partitions",
    );
    assert_invalid(
        BloomFilter::new("b", 10, 10).unwrap().with_partitions(0),
        "partitions",
    );
    assert_invalid(BloomFilter::new("", 10, 10), "filter");
}

/// A Python client with redis-py and the script file alone shares the filter: it adds raw
/// bytes the Rust client then finds, and finds what the Rust client added.
#[test]
fn a_python_client_shares_the_filter() {
    let Some(python) = crate::python_sharing::python() else {
        return;
    };
    let db = harness::fresh_db();
    let mut con = db.con();
    let filter = BloomFilter::new("Bloom:shared", 1000, 100).unwrap();
    filter.add(&[&b"from rust"[..]]).run(&mut con).unwrap();
    let program = r#"
import sys, redis
url, folder = sys.argv[1], sys.argv[2]
r = redis.Redis.from_url(url)
add = r.register_script(open(folder + '/scripts/bloom/add.lua').read())
check = r.register_script(open(folder + '/scripts/bloom/check.lua').read())
keys = ['{Bloom:shared}:bloom', '{Bloom:shared}:bits']
print(add(keys=keys, args=[1000, 100, 1, 0, b'\xff\xfe from python']))
print(check(keys=keys, args=[1000, 100, 1, 0, b'from rust', b'never added']))
"#;
    let out = Command::new(python)
        .args(["-c", program, &db.url, env!("CARGO_MANIFEST_DIR")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[1]\n[1, 0]\n");
    assert_eq!(
        filter
            .contains(&[&b"\xff\xfe from python"[..], b"other"])
            .run(&mut con)
            .unwrap(),
        vec![true, false]
    );
}

/// The async forms answer as the sync ones, over several partitions.
#[test]
fn async_forms_split_items_by_partition() {
    let db = harness::fresh_db();
    let filter = BloomFilter::new("Bloom:async", 1000, 100)
        .unwrap()
        .with_partitions(3)
        .unwrap();
    let items: Vec<String> = (0..250).map(|i| format!("a{i}")).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut con = db.multiplexed().await;
        let new = filter.add_all_async(&mut con, &items).await.unwrap();
        assert_eq!(new.len(), 250);
        assert!(new.iter().filter(|n| **n).count() >= 245);
        let found = filter.contains_all_async(&mut con, &items).await.unwrap();
        assert_eq!(found, vec![true; 250]);
        let count = filter.count_async(&mut con).await.unwrap();
        assert_eq!(count, new.iter().filter(|n| **n).count() as u64);
    });
}

/// The most items one call takes is the headers' bound for `bloom/add` and `bloom/check`
/// (a header that changes it fails here until the constant follows); one item more is
/// refused before any I/O, and `add_all` splits more into calls of at most that many.
#[test]
fn the_item_bound_is_the_headers() {
    use redis_patterns::bloom::MAX_ITEMS_PER_CALL;
    use redis_patterns::scripts::bloom as script;
    for header in [&script::ADD, &script::CHECK] {
        let items = header.args.iter().find(|a| a.name == "items").unwrap();
        assert_eq!(
            items.count.max.map(|n| n as usize),
            Some(MAX_ITEMS_PER_CALL),
            "{}",
            header.name
        );
    }
    let db = harness::fresh_db();
    let mut con = db.con();
    let filter = BloomFilter::new("Bloom:bound", 1000, 100).unwrap();
    let items: Vec<String> = (0..=2 * MAX_ITEMS_PER_CALL)
        .map(|i| format!("i{i}"))
        .collect();
    assert_invalid(
        filter.add(&items[..=MAX_ITEMS_PER_CALL]).run(&mut con),
        "items",
    );
    assert_invalid(
        filter.contains(&items[..=MAX_ITEMS_PER_CALL]).run(&mut con),
        "items",
    );
    assert!(harness::dump(&mut con).is_empty());
    assert!(
        filter
            .add(&items[..MAX_ITEMS_PER_CALL])
            .run(&mut con)
            .is_ok()
    );
    assert_eq!(
        filter.add_all(&mut con, &items).unwrap(),
        (0..items.len())
            .map(|i| i >= MAX_ITEMS_PER_CALL)
            .collect::<Vec<_>>()
    );
}

/// The bits an item sets are where the header of `bloom/add` says (from its SHA-1: hex
/// digits 1-12 mod m, then steps of digits 13-24 mod m), so a filter the scripts wrote
/// before stays readable by every later version; and a check answers from those bits
/// alone: with one of them cleared, the item is "not added".
#[test]
fn an_items_bits_are_the_headers() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let filter = BloomFilter::new("Bloom:layout", 1000, 100).unwrap();
    let (m, k) = filter.bits();
    let (_, bits) = filter.keys(0).unwrap();
    let items: Vec<String> = (0..20).map(|i| format!("layout:{i}")).collect();
    filter.add(&items).run(&mut con).unwrap();
    let places = |item: &str| -> Vec<u64> {
        let hex = sha1_smol::Sha1::from(item).digest().to_string();
        let at = u64::from_str_radix(&hex[0..12], 16).unwrap() % m;
        let step = match u64::from_str_radix(&hex[12..24], 16).unwrap() % m {
            0 => 1,
            step => step,
        };
        (0..k).map(|i| (at + i * step) % m).collect()
    };
    let mut all: Vec<u64> = items.iter().flat_map(|item| places(item)).collect();
    all.sort_unstable();
    all.dedup();
    let set: u64 = redis::cmd("BITCOUNT").arg(bits).query(&mut con).unwrap();
    assert_eq!(set, all.len() as u64, "the bitmap holds other bits");
    for at in &all {
        let bit: u8 = redis::cmd("GETBIT")
            .arg(bits)
            .arg(at)
            .query(&mut con)
            .unwrap();
        assert_eq!(bit, 1, "bit {at}");
    }
    let last = places(&items[0])[k as usize - 1];
    let _: u8 = redis::cmd("SETBIT")
        .arg(bits)
        .arg(last)
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(
        filter.contains(&[&items[0]]).run(&mut con).unwrap(),
        vec![false]
    );
}
