use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::app_config::{Configs, Maintenance};

use crate::harness::{self, Counting, Transcript, assert_invalid, assert_snapshot};

/// How long the scenario trusts a read once it shows the cache expiring: it sleeps that
/// long, so the next read is fresh however the machine is loaded.
const MAX_AGE: Duration = Duration::from_millis(500);

/// How long it trusts a read while it shows the cache answering: back-to-back calls never
/// outlive it, however long a loaded machine keeps the test from running.
const TRUST: Duration = Duration::from_secs(3600);

/// The book's flow: the flag and a config, each written by another app server (a second
/// connection), seen here once this one's read is older than its max age.
fn scenario(
    con: &mut dyn redis::ConnectionLike,
    other: &mut dyn redis::ConnectionLike,
) -> Transcript {
    let mut t = Transcript::default();
    let maintenance = Maintenance::new()
        .with_key("app:is-under-maintenance")
        .unwrap()
        .with_max_age(TRUST);
    let _ = t.step(
        "maintenance.is_under_maintenance(con)",
        maintenance.is_under_maintenance(con),
    );
    Maintenance::new()
        .with_key("app:is-under-maintenance")
        .unwrap()
        .set(other, true)
        .unwrap();
    t.note("another server: set(other, true)");
    let _ = t.step(
        "maintenance.is_under_maintenance(con)",
        maintenance.is_under_maintenance(con),
    );
    t.note("read less than 500 ms ago: the answer is the cached one");
    let maintenance = maintenance.with_max_age(MAX_AGE);
    thread::sleep(MAX_AGE);
    let _ = t.step(
        "maintenance.is_under_maintenance(con), 500 ms later",
        maintenance.is_under_maintenance(con),
    );
    let _ = t.step("maintenance.set(con, false)", maintenance.set(con, false));
    let _ = t.step(
        "maintenance.is_under_maintenance(con)",
        maintenance.is_under_maintenance(con),
    );

    let configs = Configs::new()
        .with_prefix("app:config:")
        .with_max_age(TRUST);
    let _ = t.step(
        "configs.get_config::<BTreeMap<String, u64>>(con, \"redis\", \"statistics\")",
        configs.get_config::<BTreeMap<String, u64>>(con, "redis", "statistics"),
    );
    let _ = t.step(
        "configs.set_config(con, \"redis\", \"statistics\", &{\"db\": 15})",
        configs.set_config(con, "redis", "statistics", &BTreeMap::from([("db", 15)])),
    );
    let _ = t.step(
        "configs.get_config::<BTreeMap<String, u64>>(con, \"redis\", \"statistics\")",
        configs.get_config::<BTreeMap<String, u64>>(con, "redis", "statistics"),
    );
    harness::cmd(other, &["SET", "app:config:redis:statistics", "{\"db\":3}"]);
    t.note("another server: SET app:config:redis:statistics {\"db\":3}");
    let _ = t.step(
        "configs.get_config::<BTreeMap<String, u64>>(con, \"redis\", \"statistics\")",
        configs.get_config::<BTreeMap<String, u64>>(con, "redis", "statistics"),
    );
    let configs = configs.with_max_age(MAX_AGE);
    thread::sleep(MAX_AGE);
    let _ = t.step(
        "configs.get_config::<BTreeMap<String, u64>>(...), 500 ms later",
        configs.get_config::<BTreeMap<String, u64>>(con, "redis", "statistics"),
    );
    let wrong: Result<Option<Vec<String>>, Error> = configs.get_config(con, "redis", "statistics");
    let shown = match wrong {
        Err(err) if err.to_string().contains("does not decode") => "an error: does not decode",
        other => panic!("{other:?}"),
    };
    t.step(
        "configs.get_config::<Vec<String>>(con, \"redis\", \"statistics\")",
        Ok::<_, Error>(shown),
    )
    .unwrap();
    harness::cmd(con, &["DEL", "app:config:redis:statistics"]);
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("app_config");
    let (mut con, mut other) = (db.con(), db.con());
    assert_snapshot(
        "app_config__scenario",
        &scenario(&mut recorder.con(&mut con), &mut recorder.con(&mut other)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "app_config__scenario",
        &scenario(&mut harness::cluster_con(), &mut harness::cluster_con()),
    );
}

/// 16 threads share one flag and one config set, and ask 200 times each over about
/// 600 ms, with a max age of 100 ms: they send one `GET` per key per 100 ms between them,
/// not one per question (counted on their connections).
#[test]
fn threads_sharing_a_cache_read_each_key_once_per_max_age() {
    const SHORT: Duration = Duration::from_millis(100);
    let db = harness::fresh_db();
    let maintenance = Maintenance::new().with_max_age(SHORT);
    let configs = Configs::new().with_max_age(SHORT);
    configs
        .set_config(&mut db.con(), "redis", "stats", &[1, 2, 3])
        .unwrap();
    let started = std::time::Instant::now();
    let requests: usize = thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (db, maintenance, configs) = (&db, &maintenance, &configs);
                scope.spawn(move || {
                    let mut con = Counting {
                        inner: db.con(),
                        requests: 0,
                    };
                    for _ in 0..200 {
                        assert!(!maintenance.is_under_maintenance(&mut con).unwrap());
                        let config: Option<Vec<u64>> =
                            configs.get_config(&mut con, "redis", "stats").unwrap();
                        assert_eq!(config, Some(vec![1, 2, 3]));
                        thread::sleep(Duration::from_millis(3));
                    }
                    con.requests
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let windows = (started.elapsed().as_millis() / SHORT.as_millis() + 1) as usize;
    // One read of each key per window at most (the config was just set, so its first
    // window needed none), and at least a few: the cache does expire.
    assert!(
        requests <= 2 * windows,
        "{requests} GETs in {windows} windows of 100 ms"
    );
    assert!(requests >= 4, "{requests} GETs: the cache never expired");
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(Maintenance::new().with_key(""), "key");
    let configs = Configs::new();
    let before = harness::dump(&mut con);
    assert_invalid(configs.set_config(&mut con, "", "c", &1), "type");
    assert_invalid(configs.set_config(&mut con, "t", "", &1), "component");
    assert_invalid(configs.get_config::<u64>(&mut con, "", "c"), "type");
    // A map with keys that are not strings has no JSON form.
    let bad = BTreeMap::from([(vec![1u8], 1)]);
    assert_invalid(configs.set_config(&mut con, "t", "c", &bad), "config");
    assert_eq!(harness::dump(&mut con), before);
}
