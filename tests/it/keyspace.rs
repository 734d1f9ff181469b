use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use futures_util::{StreamExt, TryStreamExt};
use redis_patterns::Result;
use redis_patterns::keyspace::{
    ClusterNode, DbIterator, DbSampler, KeyName, KeyType, RandomKeyGenerator, cluster_masters,
};

use crate::harness::{self, Transcript, assert_invalid, assert_snapshot};

/// Records a call that is not an `Op`, written as in the code.
macro_rules! call {
    ($t:expr, $call:expr) => {
        $t.step(stringify!($call), $call)
    };
}

/// The book's examples (chapter 12): generate keys of every type, walk them with
/// `DbIterator` (its batches depend on the server's hash seed, so the transcript holds
/// the sorted keys), sample their types. `con` is a standalone server's connection or the
/// connection of the cluster node that owns the `{keyspace}` slot.
fn scenario(con: &mut redis::Connection) -> Transcript {
    let mut t = Transcript::default();
    let generator = RandomKeyGenerator::new("{keyspace}:key", 7);
    let created = call!(t, generator.generate(con, 12)).unwrap();

    let mut it = DbIterator::new(5).matching("{keyspace}:key:*");
    let mut walked = BTreeSet::new();
    while let Some(batch) = it.next(con).unwrap() {
        walked.extend(batch);
    }
    let _ = t.step(
        "while let Some(batch) = it.next(con) { walked.extend(batch) }; walked",
        Ok(walked),
    );
    let _ = call!(t, it.next(con));
    let _ = t.step("it.is_done()", Ok(it.is_done()));
    it.rewind();
    let _ = t.step("it.rewind(); it.cursor()", Ok(it.cursor()));

    let hashes = DbIterator::new(3)
        .matching("{keyspace}:key:*")
        .of_type(KeyType::Hash);
    let _ = call!(t, hashes.keys(con).collect::<Result<BTreeSet<_>>>());
    let streams = DbIterator::new(3)
        .matching("{keyspace}:key:*")
        .of_type(KeyType::Stream);
    let _ = call!(t, streams.keys(con).collect::<Result<BTreeSet<_>>>());
    let nothing = DbIterator::new(100).matching("{keyspace}:nothing:*");
    let _ = call!(t, nothing.keys(con).collect::<Result<Vec<_>>>());

    let mut sampler = DbSampler::from_iterator(DbIterator::new(4).matching("{keyspace}:key:*"));
    let mut sampled = 0;
    while let Some(n) = sampler.sample(con).unwrap() {
        sampled += n;
    }
    let _ = t.step(
        "while let Some(n) = sampler.sample(con) { sampled += n }; sampled",
        Ok(sampled),
    );
    let _ = t.step(
        "sampler.stats().to_string()",
        Ok(sampler.stats().to_string()),
    );
    let _ = t.step(
        "sampler.stats().share(&KeyType::Hash)",
        Ok(sampler.stats().share(&KeyType::Hash)),
    );
    let _ = call!(t, sampler.sample(con));

    t.note("the same prefix and seed write the same keys and types again");
    let again = generator.generate(con, 12).unwrap();
    let _ = t.step("again == created", Ok(again == created));

    let binary = b"{keyspace}:bin:\xff\xfe";
    redis::cmd("HSET")
        .arg(binary)
        .arg("field")
        .arg("value")
        .exec(con)
        .unwrap();
    t.note("HSET {keyspace}:bin:\\xff\\xfe field value: a key whose name is not UTF-8");
    let mut it = DbIterator::new(10).matching(b"{keyspace}:bin:\xff*");
    let mut walked = Vec::new();
    while let Some(batch) = it.next(con).unwrap() {
        walked.extend(batch);
    }
    let _ = t.step(
        "while let Some(batch) = it.next(con) { walked.extend(batch) }; walked",
        Ok(walked.clone()),
    );
    let _ = t.step("walked[0].to_string()", Ok(walked[0].to_string()));
    let _ = t.step(
        "walked[0].as_bytes() == binary",
        Ok(walked[0].as_bytes() == binary),
    );
    let mut sampler = DbSampler::from_iterator(DbIterator::new(10).matching("{keyspace}:bin:*"));
    while sampler.sample(con).unwrap().is_some() {}
    let _ = t.step(
        "sampler.stats().to_string()",
        Ok(sampler.stats().to_string()),
    );
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    assert_snapshot("keyspace__scenario", &scenario(&mut db.con()));
}

/// The connection of each cluster master (SCAN walks one node).
fn node_connections() -> Vec<(u16, redis::Connection)> {
    harness::cluster()
        .nodes
        .iter()
        .map(|node| (node.port(), node.connection()))
        .collect()
}

#[test]
fn scenario_cluster() {
    // The node that owns `{keyspace}` answers; the others redirect.
    let mut owner = node_connections()
        .into_iter()
        .find_map(|(_, mut con)| {
            let owns = redis::cmd("EXISTS")
                .arg("{keyspace}:probe")
                .query::<i64>(&mut con)
                .is_ok();
            owns.then_some(con)
        })
        .expect("a node owns the slot");
    assert_snapshot("keyspace__scenario", &scenario(&mut owner));
}

/// `cluster_masters` finds every master, and walking each one's connection returns every
/// key of the cluster exactly once per node that holds it.
#[test]
fn a_cluster_is_walked_one_master_at_a_time() {
    let mut cluster = harness::cluster_con();
    let masters = cluster_masters().run(&mut cluster).unwrap();
    let expected: Vec<ClusterNode> = harness::cluster()
        .nodes
        .iter()
        .map(|n| ClusterNode {
            host: "127.0.0.1".into(),
            port: n.port(),
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(masters, expected);

    let keys: BTreeSet<KeyName> = (0..60)
        .map(|i| KeyName::from(format!("keyspace:wide:{i}")))
        .collect();
    for key in &keys {
        redis::cmd("SET")
            .arg(key)
            .arg("x")
            .exec(&mut cluster)
            .unwrap();
    }
    let mut found = BTreeMap::<KeyName, Vec<ClusterNode>>::new();
    for node in &masters {
        let mut con = redis::Client::open(format!("redis://{node}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let walked: BTreeSet<KeyName> = DbIterator::new(7)
            .matching("keyspace:wide:*")
            .keys(&mut con)
            .collect::<Result<_>>()
            .unwrap();
        for key in walked {
            found.entry(key).or_default().push(node.clone());
        }
    }
    assert_eq!(found.keys().cloned().collect::<BTreeSet<_>>(), keys);
    assert!(found.values().all(|nodes| nodes.len() == 1));
    // The keys are spread: every master holds some.
    let holders: BTreeSet<_> = found.values().flatten().collect();
    assert_eq!(holders.len(), masters.len());
}

/// 8 writers keep creating and deleting 400 keys each (so the table grows and shrinks)
/// while a sync walk and an async stream walk the keyspace 5 times each: every one of the
/// 1000 keys that exist throughout is returned by every walk.
#[test]
fn keys_present_for_the_whole_walk_are_always_returned() {
    let db = Arc::new(harness::fresh_db());
    let stable: BTreeSet<KeyName> = RandomKeyGenerator::new("stable", 1)
        .generate(&mut db.con(), 1000)
        .unwrap()
        .into_iter()
        .map(|(key, _)| KeyName::from(key))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (db, stop, rounds) = (db.clone(), stop.clone(), rounds.clone());
            thread::spawn(move || {
                let mut con = db.con();
                while !stop.load(Ordering::Relaxed) {
                    let keys: Vec<String> = (0..400).map(|i| format!("churn:{w}:{i}")).collect();
                    let mut set = redis::pipe();
                    for key in &keys {
                        set.set(key, 1).ignore();
                    }
                    set.exec(&mut con).unwrap();
                    redis::cmd("DEL").arg(&keys).exec(&mut con).unwrap();
                    rounds.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    // The writers churn before the walks, and again between the sync and async ones.
    harness::wait_for_count(&rounds, 1, "the writers' first round");
    let mut con = db.con();
    for round in 0..5 {
        let walked: Vec<KeyName> = DbIterator::new(20)
            .keys(&mut con)
            .collect::<Result<_>>()
            .unwrap();
        let walked: BTreeSet<KeyName> = walked.into_iter().collect();
        assert!(
            walked.is_superset(&stable),
            "sync walk {round} missed a key"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    harness::wait_for_a_whole_turn(&rounds, 8, "a round amid the walks");
    runtime.block_on(async {
        let mut con = db.multiplexed().await;
        for round in 0..5 {
            let walked: BTreeSet<KeyName> = DbIterator::new(20)
                .key_stream(&mut con)
                .try_collect()
                .await
                .unwrap();
            assert!(
                walked.is_superset(&stable),
                "async walk {round} missed a key"
            );
        }
    });
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
}

#[tokio::test]
async fn async_sampler_and_generator_agree() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let created = RandomKeyGenerator::new("gen", 99)
        .generate_async(&mut con, 600)
        .await
        .unwrap();
    assert_eq!(
        created,
        RandomKeyGenerator::new("gen", 99).plan(600).unwrap()
    );
    let mut expected = BTreeMap::<KeyType, u64>::new();
    for (_, key_type) in &created {
        *expected.entry(key_type.clone()).or_default() += 1;
    }
    // Every core type is drawn.
    assert_eq!(expected.len(), 6);

    let mut sampler = DbSampler::new(50);
    while sampler.sample_async(&mut con).await.unwrap().is_some() {}
    let sampled: BTreeMap<KeyType, u64> = sampler
        .stats()
        .iter()
        .map(|(t, n)| (t.clone(), n))
        .collect();
    assert_eq!(sampled, expected);
    assert_eq!(sampler.stats().total(), 600);
    assert!(sampler.sample_async(&mut con).await.unwrap().is_none());
}

#[test]
fn an_empty_database_gives_one_empty_batch_then_none() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let mut it = DbIterator::new(10);
    assert_eq!(it.next(&mut con).unwrap(), Some(vec![]));
    assert_eq!(it.next(&mut con).unwrap(), None);
    let mut sampler = DbSampler::new(10);
    assert_eq!(sampler.sample(&mut con).unwrap(), Some(0));
    assert_eq!(sampler.sample(&mut con).unwrap(), None);
    assert_eq!(sampler.stats().to_string(), "");
}

#[tokio::test]
async fn bad_input_is_refused_before_any_io() {
    let db = harness::fresh_db();
    let mut con = db.con();
    RandomKeyGenerator::new("k", 3)
        .generate(&mut con, 20)
        .unwrap();
    let before = harness::dump(&mut con);

    let mut zero = DbIterator::new(0);
    assert_invalid(zero.next(&mut con), "count");
    assert_eq!(
        zero.cursor(),
        Some(0),
        "a refused call does not move the cursor"
    );
    assert_invalid(DbIterator::new(10).matching("").next(&mut con), "pattern");
    assert_invalid(DbIterator::new(10).matching(b"").next(&mut con), "pattern");
    assert_invalid(
        DbIterator::new(10).of_type(KeyType::Missing).next(&mut con),
        "key_type",
    );
    assert_invalid(
        DbIterator::new(10)
            .of_type(KeyType::Other("two words".into()))
            .next(&mut con),
        "key_type",
    );
    let mut keys = DbIterator::new(0).keys(&mut con);
    assert_invalid(keys.next().unwrap(), "count");
    assert!(keys.next().is_none(), "the iterator ends after an error");
    assert_invalid(DbSampler::new(0).sample(&mut con), "count");
    assert_invalid(
        RandomKeyGenerator::new("", 1).generate(&mut con, 5),
        "prefix",
    );

    let mut multiplexed = db.multiplexed().await;
    {
        let mut stream = std::pin::pin!(DbIterator::new(0).key_stream(&mut multiplexed));
        assert_invalid(stream.next().await.unwrap(), "count");
        assert!(stream.next().await.is_none());
    }
    assert_invalid(
        RandomKeyGenerator::new("", 1)
            .generate_async(&mut multiplexed, 5)
            .await,
        "prefix",
    );

    // SCAN and TYPE never fail with WRONGTYPE: the sampler counts whatever it finds.
    assert_eq!(harness::dump(&mut con), before);
}

/// Keys whose names are not UTF-8 (and one with a NUL byte), of three types, beside a text
/// key: the setup for the binary-name tests.
fn binary_keys(con: &mut dyn redis::ConnectionLike) -> Vec<(KeyName, KeyType)> {
    let keys = [
        (&b"bin:\xff\xfe"[..], KeyType::Hash),
        (&b"bin:\x00\xc3("[..], KeyType::Set),
        (&b"bin:\xe2\x82"[..], KeyType::Stream),
        (&b"bin:text"[..], KeyType::String),
    ];
    for (key, key_type) in &keys {
        let mut cmd = match key_type {
            KeyType::Hash => redis::cmd("HSET"),
            KeyType::Set => redis::cmd("SADD"),
            KeyType::Stream => redis::cmd("XADD"),
            _ => redis::cmd("SET"),
        };
        cmd.arg(key);
        match key_type {
            KeyType::Hash => cmd.arg(b"f\xff").arg(b"v\xfe"),
            KeyType::Stream => cmd.arg("*").arg(b"f\xff").arg(b"v\xfe"),
            _ => cmd.arg(b"v\xfe"),
        };
        cmd.exec(con).unwrap();
    }
    keys.into_iter()
        .map(|(key, key_type)| (KeyName::from(key), key_type))
        .collect()
}

fn names(keys: &[(KeyName, KeyType)]) -> BTreeSet<KeyName> {
    keys.iter().map(|(key, _)| key.clone()).collect()
}

/// The types `keys` hold, counted as a sampler counts them.
fn type_counts(keys: &[(KeyName, KeyType)]) -> BTreeMap<KeyType, u64> {
    let mut counts = BTreeMap::new();
    for (_, key_type) in keys {
        *counts.entry(key_type.clone()).or_default() += 1;
    }
    counts
}

fn sampled(sampler: &DbSampler) -> BTreeMap<KeyType, u64> {
    sampler
        .stats()
        .iter()
        .map(|(key_type, n)| (key_type.clone(), n))
        .collect()
}

/// A key whose name is not UTF-8 comes back from every sync walk with its exact bytes, a
/// binary MATCH pattern finds it, its TYPE is asked with those bytes (a lossy name would
/// count as `none`), and the name returned reaches the same key again.
#[test]
fn binary_key_names_are_walked_and_sampled_unchanged() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let keys = binary_keys(&mut con);
    let before = harness::dump(&mut con);

    let mut it = DbIterator::new(2);
    let mut walked = BTreeSet::new();
    while let Some(batch) = it.next(&mut con).unwrap() {
        walked.extend(batch);
    }
    assert_eq!(walked, names(&keys));

    let walked: BTreeSet<KeyName> = DbIterator::new(2)
        .keys(&mut con)
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(walked, names(&keys));

    let matched: Vec<KeyName> = DbIterator::new(10)
        .matching(b"bin:\xff*")
        .keys(&mut con)
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(matched, vec![KeyName::from(&b"bin:\xff\xfe"[..])]);
    let hashes: Vec<KeyName> = DbIterator::new(10)
        .of_type(KeyType::Hash)
        .keys(&mut con)
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(hashes, matched);

    let key = &matched[0];
    assert_eq!(key.to_str(), None);
    assert_eq!(key.to_string(), "bin:\u{fffd}\u{fffd}");
    assert_eq!(format!("{key:?}"), r#"b"bin:\xff\xfe""#);
    let value: Vec<u8> = redis::cmd("HGET")
        .arg(key)
        .arg(b"f\xff")
        .query(&mut con)
        .unwrap();
    assert_eq!(value, b"v\xfe", "the name returned reaches the same key");

    let mut sampler = DbSampler::new(2);
    let mut total = 0;
    while let Some(n) = sampler.sample(&mut con).unwrap() {
        total += n;
    }
    assert_eq!(total, keys.len());
    assert_eq!(sampled(&sampler), type_counts(&keys));
    assert_eq!(sampler.stats().count(&KeyType::Missing), 0);

    assert_eq!(harness::dump(&mut con), before, "walking writes nothing");
}

/// The same on an async connection: `next_async`, `key_stream` and `sample_async`.
#[tokio::test]
async fn binary_key_names_are_walked_and_sampled_unchanged_async() {
    let db = harness::fresh_db();
    let keys = binary_keys(&mut db.con());
    let mut con = db.multiplexed().await;

    let mut it = DbIterator::new(2);
    let mut walked = BTreeSet::new();
    while let Some(batch) = it.next_async(&mut con).await.unwrap() {
        walked.extend(batch);
    }
    assert_eq!(walked, names(&keys));

    let streamed: BTreeSet<KeyName> = DbIterator::new(2)
        .key_stream(&mut con)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(streamed, names(&keys));
    let matched: Vec<KeyName> = DbIterator::new(10)
        .matching(b"bin:\x00*")
        .key_stream(&mut con)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(matched, vec![KeyName::from(&b"bin:\x00\xc3("[..])]);

    let mut sampler = DbSampler::new(2);
    while sampler.sample_async(&mut con).await.unwrap().is_some() {}
    assert_eq!(sampled(&sampler), type_counts(&keys));
}

/// A `KeyName` decodes from any reply redis-rs gives for a key, and goes back as one
/// argument: it works in the app's own commands (`KEYS`, `TYPE`).
#[test]
fn key_names_work_in_the_apps_own_commands() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let keys = binary_keys(&mut con);
    let listed: BTreeSet<KeyName> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    assert_eq!(listed, names(&keys));
    for (key, key_type) in &keys {
        let name: String = redis::cmd("TYPE").arg(key).query(&mut con).unwrap();
        assert_eq!(KeyType::from_name(&name), *key_type, "{key:?}");
    }
    let text = KeyName::from("bin:text");
    assert_eq!(text, "bin:text");
    assert_eq!(format!("{text} {text:?}"), r#"bin:text "bin:text""#);
    assert!(names(&keys).contains(&b"bin:\xff\xfe"[..]));
}
