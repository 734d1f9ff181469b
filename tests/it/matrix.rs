use std::sync::{Arc, Barrier};
use std::thread;

use redis_patterns::matrix::{BitmapMatrix, ListMatrix, Matrix, Width};
use redis_patterns::scripts::matrix as script;

use crate::harness::{self, Transcript, assert_code, assert_invalid, assert_snapshot};
use crate::step;

/// The book's examples (chapter 31) for the three forms: init, set, get, get_row,
/// get_all, a second init, and reads before init.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let elements = vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8, 9]];

    t.note("ListMatrix: one list per row");
    let list = ListMatrix::new("matrix:list", 3, 3).unwrap();
    let _ = step!(t, con, list.get(0, 0));
    let _ = step!(t, con, list.get_all());
    let _ = step!(t, con, list.set(0, 0, 1));
    let _ = step!(t, con, list.init(Some(&elements)));
    let _ = step!(t, con, list.get(1, 1));
    let _ = step!(t, con, list.set(1, 1, -50));
    let _ = step!(t, con, list.get_row(1));
    let _ = step!(t, con, list.get_all());
    let _ = step!(t, con, list.init(None));
    let zeros = ListMatrix::new("matrix:list_zeros", 2, 4).unwrap();
    let _ = step!(t, con, zeros.init(None));
    let _ = step!(t, con, zeros.get_all());

    t.note(
        "BitmapMatrix: one BITFIELD string per row; its own keys (the book's all share one set)",
    );
    let bitmap = BitmapMatrix::new("matrix:bitmap", 3, 3, Width::I64).unwrap();
    let other = BitmapMatrix::new("matrix:bitmap_other", 3, 3, Width::I64).unwrap();
    let _ = step!(t, con, bitmap.get(2, 2));
    let _ = step!(t, con, bitmap.init(Some(&elements)));
    let _ = step!(t, con, other.init(None));
    let _ = step!(t, con, bitmap.set(0, 2, i64::MIN));
    let _ = step!(t, con, bitmap.get(0, 2));
    let _ = step!(t, con, bitmap.get_row(0));
    let _ = step!(t, con, bitmap.get_all());
    let _ = step!(t, con, other.get_all());
    let _ = step!(t, con, bitmap.init(None));
    let small = BitmapMatrix::new("matrix:bitmap_u8", 2, 2, Width::U8).unwrap();
    let _ = step!(t, con, small.set(1, 1, 255));
    let _ = step!(t, con, small.get_all());
    let _ = step!(t, con, small.set(1, 1, 256));

    t.note("Matrix (unlisted): one BITFIELD string, offset row*N+col");
    let single = Matrix::new("matrix:single", 3, 3, Width::I64).unwrap();
    let _ = step!(t, con, single.get_row(1));
    let _ = step!(t, con, single.init(Some(&elements)));
    let _ = step!(t, con, single.set(1, 2, 60));
    let _ = step!(t, con, single.get(1, 2));
    let _ = step!(t, con, single.get_row(1));
    let _ = step!(t, con, single.get_all());
    let _ = step!(t, con, single.get(3, 0));
    let _ = step!(t, con, single.init(None));
    let odd = Matrix::new("matrix:single_u63", 2, 3, Width::U63).unwrap();
    let _ = step!(t, con, odd.set(1, 1, i64::MAX));
    let _ = step!(t, con, odd.get_row(1));
    let _ = step!(t, con, odd.get_all());
    t
}

const SCENARIO_KEYS: &[&str] = &[
    "matrix:single",
    "matrix:single_u63",
    "{matrix:list}:row:0",
    "{matrix:list}:row:1",
    "{matrix:list}:row:2",
    "{matrix:list_zeros}:row:0",
    "{matrix:list_zeros}:row:1",
    "{matrix:bitmap}:row:0",
    "{matrix:bitmap}:row:1",
    "{matrix:bitmap}:row:2",
    "{matrix:bitmap_other}:row:0",
    "{matrix:bitmap_other}:row:1",
    "{matrix:bitmap_other}:row:2",
    "{matrix:bitmap_u8}:row:0",
    "{matrix:bitmap_u8}:row:1",
];

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("matrix");
    let mut con = db.con();
    assert_snapshot("matrix__scenario", &scenario(&mut recorder.con(&mut con)));
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    keys.sort();
    let mut expected: Vec<&str> = SCENARIO_KEYS.to_vec();
    expected.retain(|k| *k != "{matrix:bitmap_u8}:row:0"); // only row 1 was set
    expected.sort();
    assert_eq!(keys, expected);
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    let mut con = harness::cluster_con();
    for key in SCENARIO_KEYS {
        harness::cmd(&mut con, &["DEL", key]);
    }
    assert_snapshot("matrix__scenario", &scenario(&mut con));
}

/// The three forms behind one interface, for the concurrency tests.
#[derive(Clone)]
enum Form {
    List(ListMatrix),
    Bitmap(BitmapMatrix),
    Single(Matrix),
}

impl Form {
    fn all(name: &str, rows: usize, cols: usize) -> Vec<Form> {
        vec![
            Form::List(ListMatrix::new(format!("{name}:list"), rows, cols).unwrap()),
            Form::Bitmap(
                BitmapMatrix::new(format!("{name}:bitmap"), rows, cols, Width::I32).unwrap(),
            ),
            Form::Single(Matrix::new(format!("{name}:single"), rows, cols, Width::I32).unwrap()),
        ]
    }

    fn init(
        &self,
        con: &mut redis::Connection,
        elements: &[Vec<i64>],
    ) -> redis_patterns::Result<()> {
        match self {
            Form::List(m) => m.init(Some(elements)).run(con),
            Form::Bitmap(m) => m.init(Some(elements)).run(con),
            Form::Single(m) => m.init(Some(elements)).run(con),
        }
    }

    fn set(&self, con: &mut redis::Connection, row: usize, col: usize, value: i64) {
        match self {
            Form::List(m) => m.set(row, col, value).run(con).unwrap(),
            Form::Bitmap(m) => m.set(row, col, value).run(con).unwrap(),
            Form::Single(m) => {
                m.set(row, col, value).run(con).unwrap();
            }
        }
    }

    fn get_all(&self, con: &mut redis::Connection) -> Vec<Vec<i64>> {
        match self {
            Form::List(m) => m.get_all().run(con).unwrap().expect("initialised"),
            Form::Bitmap(m) => m.get_all().run(con).unwrap(),
            Form::Single(m) => m.get_all().run(con).unwrap(),
        }
    }
}

/// 8 clients race to init the same 20 × 30 matrix, 10 times per form: exactly one wins
/// each race, the others get `EXISTS`, and the matrix holds exactly the winner's cells
/// (a double fill would leave ListMatrix rows of 60 cells, which `get_all` refuses).
#[test]
fn init_race_has_one_winner_and_no_double_fill() {
    const CLIENTS: i64 = 8;
    let db = Arc::new(harness::fresh_db());
    for round in 0..10 {
        for form in Form::all(&format!("race:{round}"), 20, 30) {
            let barrier = Arc::new(Barrier::new(CLIENTS as usize));
            let racers: Vec<_> = (1..=CLIENTS)
                .map(|client| {
                    let (db, barrier, form) = (db.clone(), barrier.clone(), form.clone());
                    thread::spawn(move || {
                        let mut con = db.con();
                        let elements = vec![vec![client; 30]; 20];
                        barrier.wait();
                        (client, form.init(&mut con, &elements))
                    })
                })
                .collect();
            let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
            let winners: Vec<i64> = results
                .iter()
                .filter(|(_, r)| r.is_ok())
                .map(|(client, _)| *client)
                .collect();
            assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
            for (_, result) in results.into_iter().filter(|(_, r)| r.is_err()) {
                assert_code(result, "EXISTS");
            }
            assert_eq!(form.get_all(&mut db.con()), vec![vec![winners[0]; 30]; 20]);
        }
    }
}

/// 8 clients each set their own 1/8 of the cells of a 16 × 25 matrix (400 sets in all,
/// per form): get_all then shows every one of them.
#[test]
fn concurrent_sets_of_distinct_cells_lose_nothing() {
    const CLIENTS: usize = 8;
    let (rows, cols) = (16, 25);
    let db = Arc::new(harness::fresh_db());
    for form in Form::all("sets", rows, cols) {
        form.init(&mut db.con(), &vec![vec![0; cols]; rows])
            .unwrap();
        let writers: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (db, form) = (db.clone(), form.clone());
                thread::spawn(move || {
                    let mut con = db.con();
                    for cell in (client..rows * cols).step_by(CLIENTS) {
                        form.set(&mut con, cell / cols, cell % cols, cell as i64 + 1);
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let expected: Vec<Vec<i64>> = (0..rows)
            .map(|r| (0..cols).map(|c| (r * cols + c) as i64 + 1).collect())
            .collect();
        assert_eq!(form.get_all(&mut db.con()), expected);
    }
}

/// 4 clients rewrite whole rows of a 6 × 40 matrix (300 rewrites each, every row uniform:
/// all 40 cells the same value) while a fifth reads get_all over and over: no snapshot
/// ever holds a row with two values (half old, half new).
#[test]
fn get_all_never_shows_a_torn_row() {
    const WRITERS: i64 = 4;
    let (rows, cols) = (6, 40);
    let db = Arc::new(harness::fresh_db());
    let bitmap = BitmapMatrix::new("torn:bitmap", rows, cols, Width::I32).unwrap();
    let single = Matrix::new("torn:single", rows, cols, Width::I32).unwrap();
    bitmap.init(None).run(&mut db.con()).unwrap();
    single.init(None).run(&mut db.con()).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let snapshots = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (db, bitmap, single, done, snapshots) = (
                db.clone(),
                bitmap.clone(),
                single.clone(),
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
                    let value = writer * 1000 + i;
                    let row = (i as usize * 7 + writer as usize) % rows;
                    bitmap
                        .set_row(row, &vec![value; cols])
                        .run(&mut con)
                        .unwrap();
                    single
                        .set_row(row, &vec![-value; cols])
                        .run(&mut con)
                        .unwrap();
                }
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
        })
        .collect();
    let mut con = db.con();
    while done.load(std::sync::atomic::Ordering::SeqCst) < WRITERS as usize {
        for matrix in [
            bitmap.get_all().run(&mut con).unwrap(),
            single.get_all().run(&mut con).unwrap(),
        ] {
            for row in &matrix {
                assert!(row.iter().all(|v| *v == row[0]), "torn row {row:?}");
            }
        }
        snapshots.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    for writer in writers {
        writer.join().unwrap();
    }
}

/// The extremes of each cell type survive init, set, get, get_row and get_all, also
/// where cells do not start on a byte boundary (u63) or straddle bytes.
#[test]
fn cell_types_round_trip_at_their_limits() {
    let db = harness::fresh_db();
    let mut con = db.con();
    for width in [
        Width::I8,
        Width::I16,
        Width::I32,
        Width::I64,
        Width::U8,
        Width::U16,
        Width::U32,
        Width::U63,
    ] {
        let (min, max) = width.range();
        let small = if min < 0 { -1 } else { 1 };
        let elements = vec![vec![min, max, 0], vec![1, small, max - 1]];
        let name = format!("limits:{}", width.as_str());
        let bitmap = BitmapMatrix::new(format!("{name}:bitmap"), 2, 3, width).unwrap();
        let single = Matrix::new(format!("{name}:single"), 2, 3, width).unwrap();
        bitmap.init(Some(&elements)).run(&mut con).unwrap();
        single.init(Some(&elements)).run(&mut con).unwrap();
        assert_eq!(bitmap.get_all().run(&mut con).unwrap(), elements, "{name}");
        assert_eq!(single.get_all().run(&mut con).unwrap(), elements, "{name}");
        for (r, row) in elements.iter().enumerate() {
            assert_eq!(&bitmap.get_row(r).run(&mut con).unwrap(), row);
            assert_eq!(&single.get_row(r).run(&mut con).unwrap(), row);
            for (c, &cell) in row.iter().enumerate() {
                assert_eq!(bitmap.get(r, c).run(&mut con).unwrap(), cell);
                assert_eq!(single.get(r, c).run(&mut con).unwrap(), cell);
            }
        }
        assert_eq!(single.set(1, 2, min).run(&mut con).unwrap(), max - 1);
        bitmap.set(1, 2, min).run(&mut con).unwrap();
        assert_eq!(single.get_row(1).run(&mut con).unwrap()[2], min);
        assert_eq!(bitmap.get_row(1).run(&mut con).unwrap()[2], min);
    }
    let list = ListMatrix::new("limits:list", 1, 2).unwrap();
    list.init(Some(&[vec![i64::MIN, i64::MAX]]))
        .run(&mut con)
        .unwrap();
    assert_eq!(
        list.get_all().run(&mut con).unwrap(),
        Some(vec![vec![i64::MIN, i64::MAX]])
    );
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    harness::cmd(&mut con, &["SET", "{wrong}:row:0", "text"]);
    harness::cmd(&mut con, &["RPUSH", "{wrong_bitmap}:row:1", "1"]);
    harness::cmd(&mut con, &["RPUSH", "wrong_single", "1"]);
    harness::cmd(&mut con, &["RPUSH", "{taken}:row:1", "1", "2"]);
    let before = harness::dump(&mut con);

    let list = ListMatrix::new("m", 2, 3).unwrap();
    let bitmap = BitmapMatrix::new("m", 2, 3, Width::U8).unwrap();
    let single = Matrix::new("m", 2, 3, Width::I8).unwrap();
    let two_by_three = [vec![1, 2, 3], vec![4, 5, 6]];

    // Shapes, refused when the matrix is built: zero dimensions, too many columns for
    // one call, too many bits for one string, more cells than usize holds.
    assert_invalid(ListMatrix::new("m", 0, 3), "rows");
    assert_invalid(ListMatrix::new("m", 2, 0), "cols");
    assert_invalid(ListMatrix::new("m", 1, 2049), "cols");
    assert_invalid(ListMatrix::new("m", usize::MAX, 2), "rows");
    assert!(ListMatrix::new("m", 1, 2048).is_ok());
    assert_invalid(BitmapMatrix::new("m", 0, 3, Width::U8), "rows");
    assert_invalid(BitmapMatrix::new("m", 3, 0, Width::U8), "cols");
    assert_invalid(BitmapMatrix::new("m", 1, (1 << 20) + 1, Width::U8), "cols");
    assert!(BitmapMatrix::new("m", 1, 1 << 20, Width::U8).is_ok());
    assert_invalid(Matrix::new("m", 0, 3, Width::U8), "rows");
    assert_invalid(Matrix::new("m", 2, 0, Width::U8), "cols");
    assert_invalid(Matrix::new("m", 1 << 16, (1 << 10) + 1, Width::I64), "cols");
    assert_invalid(Matrix::new("m", usize::MAX, usize::MAX, Width::U8), "rows");
    assert!(Matrix::new("m", 1 << 7, 1 << 10, Width::I64).is_ok());
    // Names: empty, or a `}` with no hash tag (the rows would not share a slot).
    for id in ["", "a}b", "a{}b"] {
        assert_invalid(ListMatrix::new(id, 1, 1), "id");
        assert_invalid(BitmapMatrix::new(id, 1, 1, Width::U8), "id");
    }
    assert_invalid(Matrix::new("", 1, 1, Width::U8), "key");
    // Elements: the wrong number of rows or cells.
    assert_invalid(
        list.init(Some(&two_by_three[..1])).run(&mut con),
        "elements",
    );
    assert_invalid(
        list.init(Some(&[vec![1, 2, 3], vec![4, 5]])).run(&mut con),
        "elements",
    );
    assert_invalid(
        bitmap
            .init(Some(&[vec![1, 2, 3, 4], vec![4, 5, 6, 7]]))
            .run(&mut con),
        "elements",
    );
    assert_invalid(single.init(Some(&[])).run(&mut con), "elements");
    // Bounds: rows, columns, values outside the cell type.
    assert_invalid(list.get(2, 0).run(&mut con), "row");
    assert_invalid(list.set(0, 3, 1).run(&mut con), "col");
    assert_invalid(list.get_row(5).run(&mut con), "row");
    assert_invalid(bitmap.set(2, 0, 1).run(&mut con), "row");
    assert_invalid(bitmap.get(0, 3).run(&mut con), "col");
    assert_invalid(bitmap.set(0, 0, 256).run(&mut con), "value");
    assert_invalid(bitmap.set(0, 0, -1).run(&mut con), "value");
    assert_invalid(
        bitmap
            .init(Some(&[vec![1, 2, 3], vec![4, 5, 300]]))
            .run(&mut con),
        "elements",
    );
    assert_invalid(bitmap.set_row(0, &[1, 2]).run(&mut con), "values");
    assert_invalid(bitmap.set_row(0, &[1, 2, 256]).run(&mut con), "values");
    assert_invalid(bitmap.set_row(2, &[1, 2, 3]).run(&mut con), "row");
    assert_invalid(single.set_row(0, &[1, 2, 3, 4]).run(&mut con), "values");
    assert_invalid(single.set_row(1, &[1, -129, 3]).run(&mut con), "values");
    assert_invalid(single.set_row(2, &[1, 2, 3]).run(&mut con), "row");
    assert_invalid(single.get(0, 3).run(&mut con), "col");
    assert_invalid(single.get_row(2).run(&mut con), "row");
    assert_invalid(single.set(1, 1, 128).run(&mut con), "value");
    assert_invalid(
        single
            .init(Some(&[vec![-129, 0, 0], vec![0; 3]]))
            .run(&mut con),
        "elements",
    );
    assert_invalid(list.row_key(2), "row");
    assert_invalid(bitmap.row_key(2), "row");

    // A ListMatrix set before init fails: LSET needs the list.
    assert_code(list.set(0, 0, 1).run(&mut con), "ERR");

    // The wrong type of key, and init over an existing key.
    let wrong = ListMatrix::new("wrong", 2, 1).unwrap();
    assert_code(wrong.get(0, 0).run(&mut con), "WRONGTYPE");
    assert_code(wrong.get_row(0).run(&mut con), "WRONGTYPE");
    assert_code(wrong.get_all().run(&mut con), "WRONGTYPE");
    assert_code(wrong.init(None).run(&mut con), "EXISTS");
    let wrong_bitmap = BitmapMatrix::new("wrong_bitmap", 2, 1, Width::U8).unwrap();
    assert_code(wrong_bitmap.get(1, 0).run(&mut con), "WRONGTYPE");
    assert_code(wrong_bitmap.get_row(1).run(&mut con), "WRONGTYPE");
    assert_code(wrong_bitmap.get_all().run(&mut con), "WRONGTYPE");
    assert_code(wrong_bitmap.init(None).run(&mut con), "EXISTS");
    let wrong_single = Matrix::new("wrong_single", 2, 1, Width::U8).unwrap();
    assert_code(wrong_single.set(0, 0, 1).run(&mut con), "WRONGTYPE");
    assert_code(wrong_single.set_row(0, &[1]).run(&mut con), "WRONGTYPE");
    assert_code(wrong_bitmap.set_row(1, &[1]).run(&mut con), "WRONGTYPE");
    assert_code(wrong_single.get(0, 0).run(&mut con), "WRONGTYPE");
    assert_code(wrong_single.get_row(1).run(&mut con), "WRONGTYPE");
    assert_code(wrong_single.get_all().run(&mut con), "WRONGTYPE");
    assert_code(wrong_single.init(None).run(&mut con), "EXISTS");
    // Only row 1 of `taken` exists: init checks every row, not just row 0.
    assert_code(
        ListMatrix::new("taken", 2, 2)
            .unwrap()
            .init(None)
            .run(&mut con),
        "EXISTS",
    );

    // Raw arguments, as a caller in another language would send them.
    let rows = ["{r}:row:0", "{r}:row:1"];
    let list_init = |con: &mut redis::Connection, keys: &[&str], args: &[&str]| {
        harness::eval(con, &script::LIST_INIT, keys, args)
    };
    assert_code(list_init(&mut con, &[], &["1"]), "BAD_ARGS");
    for cols in ["0", "-1", "1.5", "abc", "", "01", "2049", "99999999999"] {
        assert_code(list_init(&mut con, &rows, &[cols]), "BAD_COLS");
    }
    assert_code(
        list_init(&mut con, &rows, &["2", "1", "2", "3"]),
        "BAD_ARGS",
    );
    for value in [
        "abc",
        "1.5",
        "",
        "-0",
        "01",
        "1e3",
        "9223372036854775808",
        "-9223372036854775809",
    ] {
        assert_code(list_init(&mut con, &rows, &["1", "1", value]), "BAD_VALUES");
    }
    // Two rows of 2048 cells pass what one call writes.
    assert_code(list_init(&mut con, &rows, &["2048"]), "TOO_BIG");
    assert_code(
        list_init(&mut con, &["{taken}:row:0", "{taken}:row:1"], &["1"]),
        "EXISTS",
    );

    let bitfield_init = |con: &mut redis::Connection, keys: &[&str], args: &[&str]| {
        harness::eval(con, &script::BITFIELD_INIT, keys, args)
    };
    for cell_type in ["i65", "u64", "I8", "", "u0"] {
        assert_code(
            bitfield_init(&mut con, &rows, &[cell_type, "1", "", ""]),
            "BAD_CELL_TYPE",
        );
    }
    assert_code(bitfield_init(&mut con, &[], &["u8", "1"]), "BAD_ARGS");
    for cells in ["0", "x", "-3", "8388609"] {
        assert_code(
            bitfield_init(&mut con, &rows, &["u8", cells, "", ""]),
            "BAD_CELLS",
        );
    }
    // One packed value per key.
    assert_code(bitfield_init(&mut con, &rows, &["u8", "2", ""]), "BAD_ARGS");
    // Two u8 cells take two bytes, one i16 cell two: neither one nor three.
    assert_code(
        bitfield_init(&mut con, &rows, &["u8", "2", "\u{1}", ""]),
        "BAD_SHAPE",
    );
    assert_code(
        bitfield_init(&mut con, &rows, &["i16", "1", "\u{1}\u{2}\u{3}", ""]),
        "BAD_SHAPE",
    );
    // A u63 cell uses the top 63 bits of 8 bytes: the last bit is padding.
    assert_code(
        bitfield_init(
            &mut con,
            &rows[..1],
            &["u63", "1", "\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{1}"],
        ),
        "BAD_PADDING",
    );
    // 2^17 i64 cells are 1 MiB: two such strings pass what one call writes, and so does
    // one string of 2^17 + 1 cells.
    assert_code(
        bitfield_init(&mut con, &rows, &["i64", "131072", "", ""]),
        "TOO_BIG",
    );
    assert_code(
        bitfield_init(&mut con, &rows[..1], &["i64", "131073", ""]),
        "TOO_BIG",
    );
    assert_code(
        bitfield_init(&mut con, &["{wrong}:row:0"], &["u8", "1", ""]),
        "EXISTS",
    );

    assert_eq!(harness::dump(&mut con), before);
}

/// A matrix bigger than one call: `init` refuses it and points to `init_chunks`, whose
/// calls (row 0 in the first) build it whole; `get_all` refuses to read it in one call and
/// `get_rows` reads it back a range at a time.
#[test]
fn big_matrices_are_built_in_chunks_and_read_in_ranges() {
    let db = harness::fresh_db();
    let mut con = db.con();
    // 1500 rows of 3 cells: 4500 cells, over the 2048 one list_init call writes.
    let (rows, cols) = (1500, 3);
    let cells: Vec<Vec<i64>> = (0..rows)
        .map(|r| (0..cols).map(|c| (r * cols + c) as i64 - 7).collect())
        .collect();
    let list = ListMatrix::new("big:list", rows, cols).unwrap();
    assert_invalid(list.init(Some(&cells)).run(&mut con), "elements");
    let chunks = list.init_chunks(Some(&cells));
    // 682 rows fit 2048 cells; 512 rows is the most one call takes.
    assert_eq!(chunks.len(), 3);
    for op in chunks {
        op.run(&mut con).unwrap();
    }
    assert_invalid(list.get_all().run(&mut con), "rows");
    let mut read = Vec::new();
    for first in (0..rows).step_by(512) {
        let range = first..(first + 512).min(rows);
        read.extend(list.get_rows(range).run(&mut con).unwrap().unwrap());
    }
    assert_eq!(read, cells);
    assert_invalid(list.get_rows(5..5).run(&mut con), "rows");
    assert_invalid(list.get_rows(1499..1501).run(&mut con), "rows");

    // 600 rows of 2000 u8 cells: 1.2 MB, over the 1 MiB one call writes.
    let (rows, cols) = (600, 2000);
    let cells: Vec<Vec<i64>> = (0..rows)
        .map(|r| (0..cols).map(|c| ((r * 7 + c) % 256) as i64).collect())
        .collect();
    let bitmap = BitmapMatrix::new("big:bitmap", rows, cols, Width::U8).unwrap();
    assert_invalid(bitmap.init(Some(&cells)).run(&mut con), "elements");
    for op in bitmap.init_chunks(Some(&cells)) {
        op.run(&mut con).unwrap();
    }
    assert_invalid(bitmap.get_all().run(&mut con), "rows");
    let mut read = bitmap.get_rows(0..500).run(&mut con).unwrap();
    read.extend(bitmap.get_rows(500..600).run(&mut con).unwrap());
    assert_eq!(read, cells);
    // A second build of the same matrix fails at its first call, and writes nothing.
    let before = harness::dump(&mut con);
    let mut again = bitmap.init_chunks(None).into_iter();
    assert_code(again.next().unwrap().run(&mut con), "EXISTS");
    assert_eq!(harness::dump(&mut con), before);
}

/// 4 clients race to build the same 1500 × 3 ListMatrix in chunks: the first call of
/// exactly one wins, the others fail at their first call, and the matrix holds the
/// winner's cells only.
#[test]
fn a_chunked_init_race_has_one_winner() {
    let db = Arc::new(harness::fresh_db());
    let (rows, cols) = (1500, 3);
    let barrier = Arc::new(Barrier::new(4));
    let racers: Vec<_> = (1..=4i64)
        .map(|client| {
            let (db, barrier) = (db.clone(), barrier.clone());
            thread::spawn(move || {
                let mut con = db.con();
                let list = ListMatrix::new("race:chunked", rows, cols).unwrap();
                let cells = vec![vec![client; cols]; rows];
                let mut chunks = list.init_chunks(Some(&cells)).into_iter();
                barrier.wait();
                match chunks.next().unwrap().run(&mut con) {
                    Ok(()) => {
                        for op in chunks {
                            op.run(&mut con).unwrap();
                        }
                        Some(client)
                    }
                    Err(err) => {
                        assert_eq!(err.code(), Some("EXISTS"), "{err}");
                        None
                    }
                }
            })
        })
        .collect();
    let winners: Vec<i64> = racers
        .into_iter()
        .filter_map(|r| r.join().unwrap())
        .collect();
    assert_eq!(winners.len(), 1, "winners {winners:?}");
    let list = ListMatrix::new("race:chunked", rows, cols).unwrap();
    let mut con = db.con();
    for first in (0..rows).step_by(512) {
        let range = first..(first + 512).min(rows);
        let read = list.get_rows(range.clone()).run(&mut con).unwrap().unwrap();
        assert_eq!(read, vec![vec![winners[0]; cols]; range.len()]);
    }
}

/// Row keys are derived once from the id: `{id}:row:<r>`, or `id:row:<r>` when the id
/// holds a hash tag, so every row is in the id's cluster hash slot.
#[test]
fn row_keys_share_the_ids_slot() {
    let list = ListMatrix::new("m", 2, 1).unwrap();
    assert_eq!(list.row_key(1).unwrap(), "{m}:row:1");
    let tagged = BitmapMatrix::new("{app}:m", 2, 1, Width::U8).unwrap();
    assert_eq!(tagged.row_key(0).unwrap(), "{app}:m:row:0");
    assert_eq!(tagged.id(), "{app}:m");
}
