use std::sync::{Arc, Barrier};
use std::thread;

use redis_patterns::logical_matrix::{CompactLogicalMatrix, LogicalMatrix};
use redis_patterns::scripts::logical_matrix as script;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's examples (chapter 32) for both forms: init, set, get, get_row, get_all, a
/// second init, reads before init, and the compact form's column check.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let elements = vec![
        vec![true, false, true, false],
        vec![false, true, false, true],
        vec![true, true, false, false],
    ];

    t.note("LogicalMatrix: one bitmap per row");
    let m = LogicalMatrix::new("logical_matrix:rows", 3, 4).unwrap();
    let _ = step!(t, con, m.get(0, 0));
    let _ = step!(t, con, m.get_all());
    let _ = step!(t, con, m.init(Some(&elements)));
    let _ = step!(t, con, m.get(0, 2));
    let _ = step!(t, con, m.set(0, 2, false));
    let _ = step!(t, con, m.set(2, 3, true));
    let _ = step!(t, con, m.get(0, 2));
    let _ = step!(t, con, m.get_row(2));
    let _ = step!(t, con, m.get_all());
    let _ = step!(t, con, m.init(None));
    let wide = LogicalMatrix::new("logical_matrix:wide", 2, 10).unwrap();
    let _ = step!(t, con, wide.init(None));
    let _ = step!(t, con, wide.set(1, 9, true));
    let _ = step!(t, con, wide.get_row(1));

    t.note("CompactLogicalMatrix: one bitmap, bit row*cols+col");
    let c = CompactLogicalMatrix::new("logical_matrix:compact", 3, 4).unwrap();
    let _ = step!(t, con, c.get_row(1));
    let _ = step!(t, con, c.init(Some(&elements)));
    let _ = step!(t, con, c.get(1, 1));
    let _ = step!(t, con, c.set(1, 1, false));
    let _ = step!(t, con, c.set(1, 2, true));
    let _ = step!(t, con, c.get_row(1));
    let _ = step!(t, con, c.get_all());
    t.note("the book's compact get(0, 4) reads row 1's first cell; here it is refused");
    let _ = step!(t, con, c.get(0, 4));
    let _ = step!(t, con, c.init(None));
    t
}

const SCENARIO_KEYS: &[&str] = &[
    "logical_matrix:compact",
    "{logical_matrix:rows}:row:0",
    "{logical_matrix:rows}:row:1",
    "{logical_matrix:rows}:row:2",
    "{logical_matrix:wide}:row:0",
    "{logical_matrix:wide}:row:1",
];

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("logical_matrix");
    let mut con = db.con();
    assert_snapshot(
        "logical_matrix__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    keys.sort();
    assert_eq!(keys, SCENARIO_KEYS);
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    let mut con = harness::cluster_con();
    for key in SCENARIO_KEYS {
        harness::cmd(&mut con, &["DEL", key]);
    }
    assert_snapshot("logical_matrix__scenario", &scenario(&mut con));
}

#[derive(Clone)]
enum Form {
    Rows(LogicalMatrix),
    Compact(CompactLogicalMatrix),
}

impl Form {
    fn both(name: &str, rows: usize, cols: usize) -> [Form; 2] {
        [
            Form::Rows(LogicalMatrix::new(format!("{name}:rows"), rows, cols).unwrap()),
            Form::Compact(
                CompactLogicalMatrix::new(format!("{name}:compact"), rows, cols).unwrap(),
            ),
        ]
    }

    fn init(
        &self,
        con: &mut redis::Connection,
        elements: &[Vec<bool>],
    ) -> redis_patterns::Result<()> {
        match self {
            Form::Rows(m) => m.init(Some(elements)).run(con),
            Form::Compact(m) => m.init(Some(elements)).run(con),
        }
    }

    fn set(&self, con: &mut redis::Connection, row: usize, col: usize, value: bool) {
        match self {
            Form::Rows(m) => m.set(row, col, value).run(con).unwrap(),
            Form::Compact(m) => m.set(row, col, value).run(con).unwrap(),
        }
    }

    fn set_row(&self, con: &mut redis::Connection, row: usize, values: &[bool]) {
        match self {
            Form::Rows(m) => m.set_row(row, values).run(con).unwrap(),
            Form::Compact(m) => m.set_row(row, values).run(con).unwrap(),
        }
    }

    fn get_all(&self, con: &mut redis::Connection) -> Vec<Vec<bool>> {
        match self {
            Form::Rows(m) => m.get_all().run(con).unwrap(),
            Form::Compact(m) => m.get_all().run(con).unwrap(),
        }
    }
}

/// Client `k`'s matrix: cell (r, c) is true when (r + c) % 8 == k.
fn pattern(client: usize, rows: usize, cols: usize) -> Vec<Vec<bool>> {
    (0..rows)
        .map(|r| (0..cols).map(|c| (r + c) % 8 == client).collect())
        .collect()
}

/// 8 clients race to init the same 9 × 13 matrix, 10 times per form: exactly one wins
/// each race, the others get `EXISTS`, and the matrix is exactly the winner's.
#[test]
fn init_race_has_one_winner() {
    const CLIENTS: usize = 8;
    let db = Arc::new(harness::fresh_db());
    for round in 0..10 {
        for form in Form::both(&format!("race:{round}"), 9, 13) {
            let barrier = Arc::new(Barrier::new(CLIENTS));
            let racers: Vec<_> = (0..CLIENTS)
                .map(|client| {
                    let (db, barrier, form) = (db.clone(), barrier.clone(), form.clone());
                    thread::spawn(move || {
                        let mut con = db.con();
                        barrier.wait();
                        (client, form.init(&mut con, &pattern(client, 9, 13)))
                    })
                })
                .collect();
            let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
            let winners: Vec<usize> = results
                .iter()
                .filter(|(_, r)| r.is_ok())
                .map(|(client, _)| *client)
                .collect();
            assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
            for (_, result) in results.into_iter().filter(|(_, r)| r.is_err()) {
                assert_code(result, "EXISTS");
            }
            assert_eq!(form.get_all(&mut db.con()), pattern(winners[0], 9, 13));
        }
    }
}

/// 8 clients each write their own 1/8 of the cells of a 17 × 21 matrix that starts all
/// true (357 writes per form, most of them `false`, cells sharing bytes across clients):
/// get_all shows every write.
#[test]
fn concurrent_sets_of_distinct_cells_lose_nothing() {
    const CLIENTS: usize = 8;
    let (rows, cols) = (17, 21);
    let value = |cell: usize| cell.is_multiple_of(3);
    let db = Arc::new(harness::fresh_db());
    for form in Form::both("sets", rows, cols) {
        form.init(&mut db.con(), &vec![vec![true; cols]; rows])
            .unwrap();
        let writers: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (db, form) = (db.clone(), form.clone());
                thread::spawn(move || {
                    let mut con = db.con();
                    for cell in (client..rows * cols).step_by(CLIENTS) {
                        form.set(&mut con, cell / cols, cell % cols, value(cell));
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let expected: Vec<Vec<bool>> = (0..rows)
            .map(|r| (0..cols).map(|c| value(r * cols + c)).collect())
            .collect();
        assert_eq!(form.get_all(&mut db.con()), expected);
    }
}

/// 4 clients rewrite whole rows of a 6 × 45 matrix (300 rewrites each, every row all
/// true or all false) while a fifth reads get_all over and over: no snapshot ever holds
/// a row that is half old, half new.
#[test]
fn get_all_never_shows_a_torn_row() {
    const WRITERS: usize = 4;
    let (rows, cols) = (6, 45);
    let db = Arc::new(harness::fresh_db());
    let [by_rows, compact] = Form::both("torn", rows, cols);
    for form in [&by_rows, &compact] {
        form.init(&mut db.con(), &vec![vec![false; cols]; rows])
            .unwrap();
    }
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let snapshots = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (db, by_rows, compact, done, snapshots) = (
                db.clone(),
                by_rows.clone(),
                compact.clone(),
                done.clone(),
                snapshots.clone(),
            );
            thread::spawn(move || {
                let mut con = db.con();
                // The reader reads before the writes, and again amid them.
                harness::wait_for_count(&snapshots, 1, "the reader's first snapshot");
                for i in 0..300 {
                    if i == 150 {
                        harness::wait_for_a_whole_turn(&snapshots, 1, "a snapshot amid the writes");
                    }
                    let row = (i * 5 + writer) % rows;
                    let value = vec![(i + writer) % 2 == 0; cols];
                    by_rows.set_row(&mut con, row, &value);
                    compact.set_row(&mut con, row, &value);
                }
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
        })
        .collect();
    let mut con = db.con();
    while done.load(std::sync::atomic::Ordering::SeqCst) < WRITERS {
        for form in [&by_rows, &compact] {
            for row in form.get_all(&mut con) {
                assert!(row.iter().all(|v| *v == row[0]), "torn row {row:?}");
            }
        }
        snapshots.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    for writer in writers {
        writer.join().unwrap();
    }
}

/// Rows that do not start on a byte boundary read back exactly through every call.
#[test]
fn compact_rows_straddle_bytes() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let (rows, cols) = (5, 11);
    let elements: Vec<Vec<bool>> = (0..rows)
        .map(|r| (0..cols).map(|c| (r * 5 + c * 3) % 4 == 1).collect())
        .collect();
    let c = CompactLogicalMatrix::new("straddle", rows, cols).unwrap();
    let m = LogicalMatrix::new("straddle", rows, cols).unwrap();
    c.init(Some(&elements)).run(&mut con).unwrap();
    m.init(Some(&elements)).run(&mut con).unwrap();
    assert_eq!(c.get_all().run(&mut con).unwrap(), elements);
    assert_eq!(m.get_all().run(&mut con).unwrap(), elements);
    for (r, row) in elements.iter().enumerate() {
        assert_eq!(&c.get_row(r).run(&mut con).unwrap(), row);
        assert_eq!(&m.get_row(r).run(&mut con).unwrap(), row);
        for (col, &cell) in row.iter().enumerate() {
            assert_eq!(c.get(r, col).run(&mut con).unwrap(), cell);
            assert_eq!(m.get(r, col).run(&mut con).unwrap(), cell);
        }
    }
    // The packed bitmap is exactly what SETBIT numbering gives: 55 bits in 7 bytes.
    let bytes: Vec<u8> = redis::cmd("GET").arg("straddle").query(&mut con).unwrap();
    assert_eq!(bytes.len(), 7);
    let count: i64 = redis::cmd("BITCOUNT")
        .arg("straddle")
        .query(&mut con)
        .unwrap();
    let trues = elements.iter().flatten().filter(|b| **b).count();
    assert_eq!(count as usize, trues);
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["RPUSH", "{wrong}:row:1", "1"]);
    harness::cmd(&mut con, &["RPUSH", "wrong_compact", "1"]);
    harness::cmd(&mut con, &["SET", "{taken}:row:2", "\u{0}"]);
    let before = harness::dump(&mut con);

    let m = LogicalMatrix::new("m", 2, 3).unwrap();
    let c = CompactLogicalMatrix::new("c", 2, 3).unwrap();
    // Shapes, refused when the matrix is built: zero dimensions, more bits than one
    // bitmap holds, more cells than usize holds.
    assert_invalid(LogicalMatrix::new("m", 0, 3), "rows");
    assert_invalid(LogicalMatrix::new("m", 2, 0), "cols");
    assert_invalid(LogicalMatrix::new("m", 1, (1 << 23) + 1), "cols");
    assert_invalid(LogicalMatrix::new("m", 1, (1 << 32) + 1), "cols");
    assert_invalid(LogicalMatrix::new("m", usize::MAX, 2), "rows");
    assert!(LogicalMatrix::new("m", 1, 1 << 23).is_ok());
    assert_invalid(CompactLogicalMatrix::new("c", 0, 1), "rows");
    assert_invalid(CompactLogicalMatrix::new("c", 1, 0), "cols");
    assert_invalid(
        CompactLogicalMatrix::new("c", 1 << 16, (1 << 16) + 1),
        "cols",
    );
    assert_invalid(CompactLogicalMatrix::new("c", 2, usize::MAX), "rows");
    assert!(CompactLogicalMatrix::new("c", 1 << 11, 1 << 12).is_ok());
    // Names: empty, or a `}` with no hash tag (the rows would not share a slot).
    for id in ["", "a}b", "a{}b"] {
        assert_invalid(LogicalMatrix::new(id, 1, 1), "id");
    }
    assert_invalid(CompactLogicalMatrix::new("", 1, 1), "key");
    // Elements: the wrong number of rows or cells.
    assert_invalid(m.init(Some(&[vec![true; 3]])).run(&mut con), "elements");
    assert_invalid(
        m.init(Some(&[vec![true; 3], vec![true; 4]])).run(&mut con),
        "elements",
    );
    assert_invalid(
        c.init(Some(&[vec![true; 2], vec![true; 2]])).run(&mut con),
        "elements",
    );
    // Bounds, including the book's compact bug: col == cols is not the next row's col 0.
    assert_invalid(m.get(2, 0).run(&mut con), "row");
    assert_invalid(m.set(0, 3, true).run(&mut con), "col");
    assert_invalid(m.get_row(2).run(&mut con), "row");
    assert_invalid(m.set_row(0, &[true; 4]).run(&mut con), "values");
    assert_invalid(m.set_row(2, &[true; 3]).run(&mut con), "row");
    assert_invalid(c.set_row(1, &[true; 2]).run(&mut con), "values");
    assert_invalid(c.set_row(2, &[true; 3]).run(&mut con), "row");
    assert_invalid(c.get(0, 3).run(&mut con), "col");
    assert_invalid(c.set(1, 3, true).run(&mut con), "col");
    assert_invalid(c.get_row(2).run(&mut con), "row");
    assert_invalid(m.row_key(2), "row");

    // The wrong type of key, and init over an existing key.
    let wrong = LogicalMatrix::new("wrong", 2, 3).unwrap();
    assert_code(wrong.get(1, 0).run(&mut con), "WRONGTYPE");
    assert_code(wrong.set(1, 0, true).run(&mut con), "WRONGTYPE");
    assert_code(wrong.get_row(1).run(&mut con), "WRONGTYPE");
    assert_code(wrong.set_row(1, &[true; 3]).run(&mut con), "WRONGTYPE");
    assert_code(wrong.get_all().run(&mut con), "WRONGTYPE");
    assert_code(wrong.init(None).run(&mut con), "EXISTS");
    let wrong_compact = CompactLogicalMatrix::new("wrong_compact", 2, 3).unwrap();
    assert_code(wrong_compact.get(1, 0).run(&mut con), "WRONGTYPE");
    assert_code(wrong_compact.get_row(1).run(&mut con), "WRONGTYPE");
    assert_code(
        wrong_compact.set_row(1, &[true; 3]).run(&mut con),
        "WRONGTYPE",
    );
    assert_code(wrong_compact.get_all().run(&mut con), "WRONGTYPE");
    assert_code(wrong_compact.init(None).run(&mut con), "EXISTS");
    assert_code(
        LogicalMatrix::new("taken", 3, 1)
            .unwrap()
            .init(None)
            .run(&mut con),
        "EXISTS",
    );

    // Raw arguments, as a caller in another language would send them.
    let rows = ["{r}:row:0", "{r}:row:1"];
    let init = |con: &mut redis::Connection, keys: &[&str], args: &[&str]| {
        harness::eval(con, &script::INIT, keys, args)
    };
    assert_code(init(&mut con, &[], &["1"]), "BAD_ARGS");
    for bits in ["0", "-1", "x", "", "1.5", "8388609", "99999999999"] {
        assert_code(init(&mut con, &rows, &[bits, "\u{0}", "\u{0}"]), "BAD_BITS");
    }
    assert_code(init(&mut con, &rows, &["3", "\u{0}"]), "BAD_ARGS");
    assert_code(
        init(&mut con, &rows, &["3", "\u{0}", "\u{0}", "\u{0}"]),
        "BAD_ARGS",
    );
    assert_code(init(&mut con, &rows, &["9", "\u{0}", "\u{0}"]), "BAD_SHAPE");
    // Two bitmaps of 1 MiB pass what one call writes.
    assert_code(init(&mut con, &rows, &["8388608", "", ""]), "TOO_BIG");
    // 3 bits use the top three bits of the byte (`@` is 0x40); 0x10 sets the fourth.
    assert_code(init(&mut con, &rows, &["3", "@", "\u{10}"]), "BAD_PADDING");
    assert_code(
        init(&mut con, &rows, &["3", "\u{1}", "\u{0}"]),
        "BAD_PADDING",
    );
    assert_code(
        init(
            &mut con,
            &["{taken}:row:0", "{taken}:row:2"],
            &["8", "a", "b"],
        ),
        "EXISTS",
    );

    assert_eq!(harness::dump(&mut con), before);
}

/// Row keys are derived once from the id: `{id}:row:<r>`, or `id:row:<r>` when the id
/// holds a hash tag, so every row is in the id's cluster hash slot.
#[test]
fn row_keys_share_the_ids_slot() {
    let m = LogicalMatrix::new("m", 2, 1).unwrap();
    assert_eq!(m.row_key(1).unwrap(), "{m}:row:1");
    let tagged = LogicalMatrix::new("{app}:m", 2, 1).unwrap();
    assert_eq!(tagged.row_key(0).unwrap(), "{app}:m:row:0");
}
