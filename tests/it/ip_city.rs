use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use redis_patterns::Error;
use redis_patterns::ip_city::{
    City, IpBlock, IpCities, blocks_from_csv, cities_from_csv, ip_to_score,
};
use redis_patterns::scripts::ip_city as script;

use crate::harness::{self, InMode, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's files, in GeoLite's format: a copyright line, a header, quoted fields.
const BLOCKS_CSV: &str = "Copyright (c) 2011 MaxMind Inc.  All Rights Reserved.\n\
startIpNum,endIpNum,locId\n\
\"16777216\",\"16777471\",\"17\"\n\
\"1.0.4.0\",\"1.0.7.255\",\"22\"\n\
\"16779264\",\"\",\"17\"\r\n";
const CITIES_CSV: &[u8] = b"Copyright (c) 2012 MaxMind LLC.  All Rights Reserved.\n\
locId,country,region,city,postalCode,latitude,longitude,metroCode,areaCode\n\
17,\"AU\",\"07\",\"Brisbane\",\"\",-27.5000,153.0167,,\n\
22,\"DE\",\"02\",\"M\xfcnchen\",\"\",48.1500,11.5833,,\n";

fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let geo = IpCities::new("geoip").unwrap();
    let blocks: Vec<_> = blocks_from_csv(BLOCKS_CSV.as_bytes()).collect();
    t.step(
        "blocks_from_csv(BLOCKS_CSV)",
        Ok::<_, Error>(format!("{blocks:?}")),
    )
    .unwrap();
    let cities: Vec<_> = cities_from_csv(CITIES_CSV).collect();
    t.step(
        "cities_from_csv(CITIES_CSV)",
        Ok::<_, Error>(format!("{cities:?}")),
    )
    .unwrap();
    let _ = t.step(
        "geo.import_cities(con, cities)",
        geo.import_cities(con, cities),
    );
    let _ = t.step(
        "geo.import_blocks(con, blocks)",
        geo.import_blocks(con, blocks),
    );
    let _ = step!(t, con, geo.block_count());
    for ip in [
        "1.0.0.1",
        "1.0.0.255",
        "1.0.1.0",
        "1.0.5.9",
        "1.0.8.0",
        "9.9.9.9",
        "0.255.255.255",
    ] {
        let score = ip_to_score(ip).unwrap();
        let _ = t.step(
            &format!("geo.find_city_by_ip(ip_to_score({ip:?}))"),
            geo.find_city_by_ip(score).in_mode().run(con),
        );
    }
    t.note("1.0.1.0 is past the end of the first block: no city (the book says Brisbane)");
    t.note("1.0.8.0 and on are in the last block, which has no end, as in the book");
    redis::cmd("DEL")
        .arg("{geoip}:ip2cityid")
        .arg("{geoip}:cityid2city")
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("ip_city");
    let mut con = db.con();
    assert_snapshot("ip_city__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("ip_city__scenario", &scenario(&mut harness::cluster_con()));
}

/// 10,000 blocks of 256 addresses each, every other one a city of its own: 4 clients look
/// up addresses while the blocks are imported, 1000 per round trip. Every answer is the
/// right city or none (the block is not imported yet); never another block's city.
#[test]
fn lookups_during_an_import_never_answer_a_wrong_city() {
    let db = harness::fresh_db();
    let geo = IpCities::new("geoip:busy").unwrap();
    let mut con = db.con();
    let cities = (0..10_000u32).map(|i| {
        Ok((
            format!("c{i}"),
            City {
                city: format!("city {i}"),
                ..City::default()
            },
        ))
    });
    assert_eq!(geo.import_cities(&mut con, cities).unwrap(), 10_000);
    let block = |i: u32| IpBlock {
        start: i * 512,
        end: Some(i * 512 + 255),
        city_id: format!("c{i}"),
    };
    let imported = AtomicBool::new(false);
    let lookups = AtomicU64::new(0);
    thread::scope(|scope| {
        let readers: Vec<_> = (0..4u64)
            .map(|r| {
                let (db, geo, imported, lookups) = (&db, &geo, &imported, &lookups);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut rng = harness::Rng::new(r + 7);
                    let check = |con: &mut redis::Connection, ip: u32| {
                        let answer = geo.find_city_by_ip(ip).run(con).unwrap();
                        let (i, offset) = (ip / 512, ip % 512);
                        if let Some(city) = &answer {
                            assert!(offset < 256, "{ip} is in a gap, got {city:?}");
                            assert_eq!(city.city, format!("city {i}"), "{ip}");
                        }
                        answer
                    };
                    loop {
                        let finished = imported.load(Ordering::SeqCst);
                        check(&mut con, rng.below(10_000 * 512) as u32);
                        lookups.fetch_add(1, Ordering::SeqCst);
                        if finished {
                            break;
                        }
                    }
                    // Once imported, every block answers its city and every gap none.
                    for _ in 0..100 {
                        let i = rng.below(10_000) as u32;
                        assert!(check(&mut con, i * 512 + 255).is_some(), "block {i}");
                        assert!(check(&mut con, i * 512 + 256).is_none(), "gap {i}");
                    }
                })
            })
            .collect();
        // Lookups run before the import, amid it (between its halves), and after it.
        harness::wait_for_count(&lookups, 4, "the readers' first lookups");
        let first = geo
            .import_blocks(&mut con, (0..5_000).map(block).map(Ok))
            .unwrap();
        harness::wait_for_a_whole_turn(&lookups, 4, "a lookup amid the import");
        let second = geo
            .import_blocks(&mut con, (5_000..10_000).map(block).map(Ok))
            .unwrap();
        assert_eq!(first + second, 10_000);
        imported.store(true, Ordering::SeqCst);
        for reader in readers {
            reader.join().unwrap();
        }
    });
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for bad in [
        "",
        "1.2.3",
        "1.2.3.256",
        "1.2.3.04",
        "1.2.3.4.5",
        " 1.2.3.4",
        "::1",
        "a.b.c.d",
    ] {
        assert_invalid(ip_to_score(bad), "ip");
    }
    assert_invalid(IpCities::new(""), "namespace");
    let geo = IpCities::new("geoip:bad").unwrap();
    let good = IpBlock {
        start: 1,
        end: None,
        city_id: "1".into(),
    };
    let before = harness::dump(&mut con);
    for (block, what) in [
        (
            IpBlock {
                city_id: String::new(),
                ..good.clone()
            },
            "city_id",
        ),
        (
            IpBlock {
                city_id: "a_b".into(),
                ..good.clone()
            },
            "city_id",
        ),
        (
            IpBlock {
                start: 10,
                end: Some(9),
                ..good.clone()
            },
            "end",
        ),
    ] {
        assert_invalid(
            geo.import_blocks(&mut con, [Ok(good.clone()), Ok(block)]),
            what,
        );
    }
    let bad_csv = "\"1.2.3\",\"\",\"17\"\n";
    assert_invalid(
        geo.import_blocks(&mut con, blocks_from_csv(bad_csv.as_bytes())),
        "csv",
    );
    assert_invalid(
        geo.import_cities(&mut con, [Ok((String::new(), City::default()))]),
        "city_id",
    );
    assert_eq!(harness::dump(&mut con), before, "a refused chunk was sent");

    // Raw calls: a member that is not `<city id>_<start>[_<end>]`.
    let keys = ["{geoip:bad}:ip2cityid", "{geoip:bad}:cityid2city"];
    for member in ["nounderscore", "_5", "17_", "17_x", "17_5_", "17_5_x"] {
        harness::cmd(&mut con, &["DEL", keys[0]]);
        harness::cmd(&mut con, &["ZADD", keys[0], "5", member]);
        let before = harness::dump(&mut con);
        assert_code(
            harness::eval(&mut con, &script::FIND, &keys, &["5"]),
            "BAD_BLOCK",
        );
        assert_eq!(harness::dump(&mut con), before);
    }
}
