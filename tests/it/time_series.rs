use std::collections::{BTreeMap, BTreeSet};
use std::thread;

use redis_patterns::scripts::time_series as script;
use redis_patterns::time_series::TimeSeries;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// 2023-11-14 22:13:20 UTC, in ms: a multiple of 5 s and of 1 min, not of 5 min.
const T0: u64 = 1_700_000_000_000;
const T0_S: u64 = T0 / 1000;

/// The book's flow: a page's hits counted at every precision, read back, then cleaned
/// as time passes; a counter with no sample left is forgotten.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let hits = TimeSeries::new("ts").unwrap().via(harness::script_mode());
    let _ = step!(t, con, hits.update_counter("hits", 1, T0));
    let _ = step!(t, con, hits.update_counter("hits", 2, T0 + 999));
    let _ = step!(t, con, hits.update_counter("hits", 1, T0 + 5_000));
    let _ = step!(t, con, hits.update_counter("hits", 3, T0 + 61_000));
    let _ = step!(t, con, hits.update_counter("hits", -1, T0 + 61_500));
    for precision in [1, 5, 60, 300, 86_400] {
        let _ = t.step(
            &format!("hits.get_counter(\"hits\", {precision})"),
            hits.get_counter("hits", precision).in_mode().run(con),
        );
    }
    let _ = step!(t, con, hits.get_counter("nothing", 1));
    let _ = step!(t, con, hits.known());
    let _ = t.step(
        "hits.clean_all(con, T0 + 102_000)",
        hits.clean_all(con, T0 + 102_000),
    );
    t.note("1 s slots keep 100 s: the slot of T0 is gone, those after T0 + 2 s stay");
    let _ = step!(t, con, hits.get_counter("hits", 1));
    let few = TimeSeries::new("ts:few")
        .unwrap()
        .with_precisions(&[1, 60])
        .unwrap()
        .with_samples(2)
        .unwrap()
        .via(harness::script_mode());
    let _ = step!(t, con, few.update_counter("logins", 7, T0));
    let _ = t.step(
        "few.clean_all(con, T0 + 180_000)",
        few.clean_all(con, T0 + 180_000),
    );
    t.note("logins at 1 s and at 1 min keep 2 slots: all gone, and forgotten");
    let _ = step!(t, con, few.known());
    let _ = t.step(
        "hits.clean_all(con, T0 + 10_000_000_000)",
        hits.clean_all(con, T0 + 10_000_000_000),
    );
    let _ = step!(t, con, hits.known());
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("time_series");
    let mut con = db.con();
    assert_snapshot(
        "time_series__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "time_series__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 16 writers count 200 events each over an hour of caller time, into 4 counters, while
/// a cleaner cleans at an hour later, over and over; old samples (a day before) were
/// there first. No update is lost: every slot newer than the cleaner's cutoff holds the
/// exact sum of its events, every old sample is gone, and the index lists exactly the
/// counters that still have samples.
#[test]
fn counters_lose_no_update_under_16_writers_and_a_cleaner() {
    let db = harness::fresh_db();
    let series = TimeSeries::new("ts:busy").unwrap();
    let names = ["a", "b", "c", "d"];
    let mut con = db.con();
    let day_before = T0 - 86_400_000;
    for name in names {
        series
            .update_counter(name, 5, day_before)
            .run(&mut con)
            .unwrap();
    }
    series
        .update_counter("only-old", 1, day_before)
        .run(&mut con)
        .unwrap();
    // The cleaner's time: 1 s slots keep 100 s, so it cuts everything before T0 + 3600 s
    // - 100 s at 1 s; at 5 h and 1 day, the old samples are within reach and stay.
    let clean_at = T0 + 3_700_000;
    let events: Vec<Vec<(String, i64, u64)>> = thread::scope(|scope| {
        let writers: Vec<_> = (0..16u64)
            .map(|w| {
                let (db, series) = (&db, &series);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut rng = harness::Rng::new(w + 100);
                    let mut mine = Vec::new();
                    for _ in 0..200 {
                        let name = names[rng.below(4) as usize].to_owned();
                        let count = rng.below(10) as i64 - 3;
                        let now = T0 + 3_600_000 + rng.below(100_000);
                        series
                            .update_counter(&name, count, now)
                            .run(&mut con)
                            .unwrap();
                        mine.push((name, count, now));
                    }
                    mine
                })
            })
            .collect();
        let cleaner = scope.spawn(|| {
            let mut con = db.con();
            for _ in 0..20 {
                series.clean_all(&mut con, clean_at).unwrap();
            }
        });
        cleaner.join().unwrap();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    series.clean_all(&mut con, clean_at).unwrap();
    for precision in [1, 5, 60, 300, 3600] {
        let mut expected: BTreeMap<(&str, u64), i64> = BTreeMap::new();
        for name in names {
            expected.insert((name, day_before / 1000 / precision * precision), 5);
        }
        for (name, count, now) in events.iter().flatten() {
            let slot = now / 1000 / precision * precision;
            *expected.entry((name.as_str(), slot)).or_default() += count;
        }
        for name in names {
            let got: BTreeMap<u64, i64> = series
                .get_counter(name, precision)
                .run(&mut con)
                .unwrap()
                .into_iter()
                .collect();
            let cutoff = clean_at / 1000 - 100 * precision;
            let want: BTreeMap<u64, i64> = expected
                .iter()
                .filter(|((n, slot), _)| *n == name && *slot > cutoff)
                .map(|((_, slot), count)| (*slot, *count))
                .collect();
            assert_eq!(got, want, "{name} at {precision} s");
        }
    }
    let known: BTreeSet<(u64, String)> =
        series.known().run(&mut con).unwrap().into_iter().collect();
    let mut with_samples = BTreeSet::new();
    for name in names.iter().chain(&["only-old"]) {
        for &precision in series.precisions() {
            if !series
                .get_counter(name, precision)
                .run(&mut con)
                .unwrap()
                .is_empty()
            {
                with_samples.insert((precision, name.to_string()));
            }
        }
    }
    assert_eq!(known, with_samples);
    assert!(
        !known.contains(&(1, "only-old".to_owned())),
        "only-old kept at 1 s"
    );
    assert!(known.contains(&(86_400, "only-old".to_owned())));
}

/// A counter whose 1 s hash holds 20,000 old samples is cleaned in bounded steps.
#[test]
fn a_big_hash_is_cleaned_in_bounded_steps() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let series = TimeSeries::new("ts:big")
        .unwrap()
        .with_precisions(&[1])
        .unwrap();
    let mut fill = redis::pipe();
    let key = series.count_key("big", 1).unwrap();
    for i in 0..20_000u64 {
        fill.cmd("HSET").arg(&key).arg(T0_S + i).arg(1).ignore();
    }
    fill.cmd("ZADD")
        .arg("{ts:big}:known")
        .arg(0)
        .arg("1:big")
        .ignore();
    fill.exec(&mut con).unwrap();
    let mut steps = 0;
    let mut from = None;
    let mut deleted = 0;
    loop {
        let step = series
            .clean_counters(&mut con, (T0_S + 20_100) * 1000, from.as_ref(), 2)
            .unwrap();
        deleted += step.deleted;
        steps += 1;
        match step.next {
            Some(next) => from = Some(next),
            None => break,
        }
    }
    assert_eq!(deleted, 20_000);
    assert!(steps >= 10, "{steps} steps: not bounded");
    assert!(series.known().run(&mut con).unwrap().is_empty());
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(TimeSeries::new(""), "namespace");
    let series = TimeSeries::new("ts:bad").unwrap();
    for bad in [&[][..], &[0], &[1, 1], &[1_000_000_001], &[1; 17]] {
        assert_invalid(series.clone().with_precisions(bad), "precisions");
    }
    assert_invalid(series.clone().with_samples(0), "samples");
    series.update_counter("x", 1, T0).run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(series.update_counter("", 1, T0).run(&mut con), "name");
    assert_invalid(
        series
            .update_counter("x", 1_000_000_000_000_000, T0)
            .run(&mut con),
        "count",
    );
    assert_invalid(
        series
            .update_counter("x", 1, 1_000_000_000_000_000)
            .run(&mut con),
        "now",
    );
    assert_invalid(series.get_counter("", 1).run(&mut con), "name");
    assert_invalid(series.clean_counters(&mut con, T0, None, 0), "budget");
    assert_eq!(harness::dump(&mut con), before);

    // Raw calls, as from another language.
    let known = "{ts:bad}:known";
    let (h1, h5) = ("{ts:bad}:count:1:x", "{ts:bad}:count:5:x");
    let now = T0.to_string();
    let update = |con: &mut redis::Connection, keys: &[&str], args: &[&str]| {
        harness::eval(con, &script::UPDATE, keys, args)
    };
    assert_code(
        update(&mut con, &[known, h1, h5], &["x", "1", &now, "1"]),
        "BAD_ARGS",
    );
    for precision in ["0", "1000000001", "1.5", "01"] {
        assert_code(
            update(
                &mut con,
                &[known, h1, h5],
                &["x", "1", &now, "1", precision],
            ),
            "BAD_PRECISION",
        );
    }
    let slot = T0_S.to_string();
    harness::cmd(&mut con, &["HSET", h5, &slot, "not a number"]);
    let mut before = harness::dump(&mut con);
    assert_code(
        update(&mut con, &[known, h1, h5], &["x", "1", &now, "1", "5"]),
        "BAD_SAMPLE",
    );
    assert_eq!(harness::dump(&mut con), before, "the 1 s slot was counted");
    // 2^63 - 1 + 1 leaves the 64-bit integers; so does -2^63 - 1.
    for (held, count) in [("9223372036854775807", "1"), ("-9223372036854775808", "-1")] {
        harness::cmd(&mut con, &["HSET", h5, &slot, held]);
        before = harness::dump(&mut con);
        assert_code(
            update(&mut con, &[known, h1, h5], &["x", count, &now, "1", "5"]),
            "OVERFLOW",
        );
        assert_eq!(harness::dump(&mut con), before);
    }
    for cursor in ["-1", "x", "1.5", "123456789012345678901"] {
        assert_code(
            harness::eval(
                &mut con,
                &script::CLEAN,
                &[known, h1],
                &["x", "1", &now, "100", cursor, "10"],
            ),
            "BAD_CURSOR",
        );
    }
    assert_eq!(harness::dump(&mut con), before);
}
