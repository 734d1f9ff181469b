use std::sync::Arc;
use std::thread;

use redis_patterns::binary_recorder::{BinaryRecorder, MAX_INDEX};

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's sign-in example (chapter 9, key `User:256512:sign_in`): days signed in,
/// a day taken back, and counts over inclusive bit ranges that cross byte boundaries.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let sign_in = BinaryRecorder::new("binary_recorder:User:256512:sign_in").unwrap();
    let _ = step!(t, con, sign_in.getbit(1));
    let _ = step!(t, con, sign_in.countbits(0, 31));
    let _ = step!(t, con, sign_in.setbit(1));
    let _ = step!(t, con, sign_in.setbit(1));
    let _ = step!(t, con, sign_in.setbit(3));
    let _ = step!(t, con, sign_in.setbit(7));
    let _ = step!(t, con, sign_in.setbit(8));
    let _ = step!(t, con, sign_in.setbit(20));
    let _ = step!(t, con, sign_in.getbit(1));
    let _ = step!(t, con, sign_in.getbit(2));
    let _ = step!(t, con, sign_in.countbits(0, 31));
    let _ = step!(t, con, sign_in.countbits(1, 1));
    let _ = step!(t, con, sign_in.countbits(2, 2));
    let _ = step!(t, con, sign_in.countbits(7, 8));
    let _ = step!(t, con, sign_in.countbits(4, 19));
    let _ = step!(t, con, sign_in.countbits(9, 3));
    let _ = step!(t, con, sign_in.clearbit(3));
    let _ = step!(t, con, sign_in.clearbit(3));
    let _ = step!(t, con, sign_in.countbits(0, 31));
    let _ = step!(t, con, sign_in.countbits(0, MAX_INDEX));
    let _ = step!(t, con, sign_in.getbit(MAX_INDEX));
    let _ = step!(t, con, sign_in.setbit(MAX_INDEX + 1));
    redis::cmd("DEL").arg(sign_in.key()).exec(con).unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("binary_recorder");
    let mut con = db.con();
    assert_snapshot(
        "binary_recorder__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "binary_recorder__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// No script here (every operation is one command), but the count is exact under
/// concurrency: 8 clients set 250 bits each, interleaved (client c sets bits c, c + 8, …,
/// each twice), and the first setbit of each bit alone returns false.
#[test]
fn concurrent_setbits_count_exactly() {
    let db = Arc::new(harness::fresh_db());
    let clients: Vec<_> = (0..8u64)
        .map(|c| {
            let db = db.clone();
            thread::spawn(move || {
                let mut con = db.con();
                let recorder = BinaryRecorder::new("bits").unwrap();
                let mut first = 0;
                for i in 0..250u64 {
                    let index = c + 8 * i;
                    if !recorder.setbit(index).run(&mut con).unwrap() {
                        first += 1;
                    }
                    assert!(recorder.setbit(index).run(&mut con).unwrap());
                }
                first
            })
        })
        .collect();
    let first: u64 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(first, 2000);
    let recorder = BinaryRecorder::new("bits").unwrap();
    let mut con = db.con();
    assert_eq!(
        recorder.countbits(0, MAX_INDEX).run(&mut con).unwrap(),
        2000
    );
    assert_eq!(recorder.countbits(0, 999).run(&mut con).unwrap(), 1000);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["SETBIT", "bits", "5", "1"]);
    harness::cmd(&mut con, &["SADD", "a:set", "x"]);
    let before = harness::dump(&mut con);

    let bits = BinaryRecorder::new("bits").unwrap();
    for index in [MAX_INDEX + 1, u64::MAX] {
        assert_invalid(bits.setbit(index).run(&mut con), "index");
        assert_invalid(bits.clearbit(index).run(&mut con), "index");
        assert_invalid(bits.getbit(index).run(&mut con), "index");
        assert_invalid(bits.countbits(index, 0).run(&mut con), "start");
        assert_invalid(bits.countbits(0, index).run(&mut con), "end");
    }
    assert_invalid(BinaryRecorder::new(""), "key");

    let set = BinaryRecorder::new("a:set").unwrap();
    assert_code(set.setbit(0).run(&mut con), "WRONGTYPE");
    assert_code(set.clearbit(0).run(&mut con), "WRONGTYPE");
    assert_code(set.getbit(0).run(&mut con), "WRONGTYPE");
    assert_code(set.countbits(0, 7).run(&mut con), "WRONGTYPE");

    assert_eq!(harness::dump(&mut con), before);
    // Clearing a bit that is already 0 leaves the string as it was.
    assert!(!bits.clearbit(4).run(&mut con).unwrap());
    assert_eq!(harness::dump(&mut con), before);
}
