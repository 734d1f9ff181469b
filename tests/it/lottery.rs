use std::collections::BTreeSet;
use std::thread;

use redis_patterns::Error;
use redis_patterns::lottery::Lottery;

use crate::harness::{self, InMode, Transcript, assert_invalid, assert_snapshot};
use crate::step;

fn sorted(mut players: Vec<String>) -> Vec<String> {
    players.sort();
    players
}

/// The book's example: four players, a draw that keeps them, a first prize and two
/// second prizes drawn out of the pool. Draws are random, so the transcript shows what
/// does not depend on chance.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let lottery = Lottery::new("lottery:new-year").unwrap();
    for player in ["peter", "jack", "tom", "mary"] {
        t.step(
            &format!("lottery.join({player:?})"),
            lottery.join(player).in_mode().run(con),
        )
        .unwrap();
    }
    let _ = step!(t, con, lottery.join("peter"));
    let _ = step!(t, con, lottery.size());
    let everyone = sorted(vec![
        "jack".into(),
        "mary".into(),
        "peter".into(),
        "tom".into(),
    ]);
    let kept: Vec<String> = lottery.draw(3).in_mode().run(con).unwrap();
    t.step(
        "lottery.draw(3): 3 distinct players, all still in the pool",
        Ok::<_, Error>((
            kept.iter().collect::<BTreeSet<_>>().len(),
            kept.iter().all(|p| everyone.contains(p)),
        )),
    )
    .unwrap();
    let _ = step!(t, con, lottery.size());
    let first: Vec<String> = lottery.draw_and_remove(1).in_mode().run(con).unwrap();
    let second: Vec<String> = lottery.draw_and_remove(2).in_mode().run(con).unwrap();
    let rest: Vec<String> = lottery.draw(10).in_mode().run(con).unwrap();
    t.step(
        "lottery.draw_and_remove(1), draw_and_remove(2), then draw(10): every player once",
        Ok::<_, Error>((
            first.len(),
            second.len(),
            rest.len(),
            sorted([first, second, rest].concat()) == everyone,
        )),
    )
    .unwrap();
    let _ = step!(t, con, lottery.size());
    t.step(
        "lottery.draw_and_remove(1): the last player",
        lottery
            .draw_and_remove::<String>(1)
            .in_mode()
            .run(con)
            .map(|won| won.len()),
    )
    .unwrap();
    let _ = step!(t, con, lottery.draw_and_remove::<String>(1));
    let _ = step!(t, con, lottery.draw::<String>(5));
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("lottery");
    let mut con = db.con();
    assert_snapshot("lottery__scenario", &scenario(&mut recorder.con(&mut con)));
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot("lottery__scenario", &scenario(&mut harness::cluster_con()));
}

/// 8 clients draw 1 to 3 winners at a time out of 1,000 players, at once, until the pool
/// is empty: every player wins exactly once.
#[test]
fn draws_that_remove_never_share_a_winner() {
    let db = harness::fresh_db();
    let lottery = Lottery::new("lottery:contended").unwrap();
    let mut con = db.con();
    let players: Vec<String> = (0..1000).map(|i| format!("p{i}")).collect();
    redis::cmd("SADD")
        .arg(lottery.key())
        .arg(&players)
        .exec(&mut con)
        .unwrap();
    let won: Vec<String> = thread::scope(|scope| {
        let clients: Vec<_> = (0..8)
            .map(|c| {
                let (db, lottery) = (&db, &lottery);
                scope.spawn(move || {
                    let mut con = db.con();
                    let mut won = Vec::new();
                    loop {
                        let drawn: Vec<String> =
                            lottery.draw_and_remove(1 + c % 3).run(&mut con).unwrap();
                        if drawn.is_empty() {
                            return won;
                        }
                        won.extend(drawn);
                    }
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    assert_eq!(won.len(), 1000, "a player won twice");
    assert_eq!(sorted(won), sorted(players));
}

#[test]
fn bad_input_is_refused() {
    let db = harness::fresh_db();
    let mut con = db.con();
    assert_invalid(Lottery::new(""), "key");
    let lottery = Lottery::new("lottery:bad").unwrap();
    lottery.join("peter").run(&mut con).unwrap();
    let before = harness::dump(&mut con);
    assert_invalid(lottery.draw::<String>(0).run(&mut con), "number");
    assert_invalid(lottery.draw_and_remove::<String>(0).run(&mut con), "number");
    assert_invalid(lottery.join(vec!["a", "b"]).run(&mut con), "player");
    assert_eq!(harness::dump(&mut con), before);
}
