use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use redis_patterns::Error;
use redis_patterns::page_cache::PageCache;
use redis_patterns::web_session::WebSessions;

use crate::harness::{self, InMode, Transcript, assert_invalid, assert_snapshot};

const POPULAR: &str = "http://shop/view?item=10086";

/// The book's flow: which requests can be cached, then a popular page rendered once
/// and served from the cache, and an unpopular one rendered every time.
fn scenario(con: &mut dyn redis::ConnectionLike) -> Transcript {
    let mut t = Transcript::default();
    let web = WebSessions::new("web:pages").unwrap();
    let pages = PageCache::new(&web).with_top(1).unwrap();
    for request in [
        POPULAR,
        "/view?item=a+b%21&ref=mail#top",
        "/view?item=10086&_=1700000000",
        "/view?item=&_=",
        "/view",
    ] {
        // These items are all UTF-8: shown as text.
        let item = PageCache::item_of(request).map(|item| String::from_utf8(item).unwrap());
        t.step(
            &format!("PageCache::item_of({request:?})"),
            Ok::<_, Error>(item),
        )
        .unwrap();
    }
    t.step(
        "pages.request_key(POPULAR)",
        Ok::<_, Error>(pages.request_key(POPULAR)),
    )
    .unwrap();
    web.update_token("t", "peter", Some("10086"))
        .in_mode()
        .run(con)
        .unwrap();
    web.update_token("t", "peter", Some("10086"))
        .in_mode()
        .run(con)
        .unwrap();
    web.update_token("t", "peter", Some("10010"))
        .in_mode()
        .run(con)
        .unwrap();
    t.note("10086 viewed twice, 10010 once; only the most viewed is cached (top 1)");
    for request in [
        POPULAR,
        "/view?item=10010",
        "/view?item=10086&_=1",
        "/about",
    ] {
        let _ = t.step(
            &format!("pages.can_cache(con, {request:?})"),
            pages.can_cache(con, request),
        );
    }
    let renders = AtomicU64::new(0);
    for request in [POPULAR, POPULAR, "/view?item=10010", "/view?item=10010"] {
        let page: Result<String, Error> = pages.cache_request(con, request, |request| {
            let n = renders.fetch_add(1, Ordering::Relaxed) + 1;
            Ok(format!("<html>{request}, render {n}</html>"))
        });
        let _ = t.step(
            &format!("pages.cache_request(con, {request:?}, render)"),
            page,
        );
    }
    let ttl: i64 = redis::cmd("PTTL")
        .arg(pages.request_key(POPULAR))
        .query(con)
        .unwrap();
    t.step(
        "PTTL of the cached page, in whole seconds (rounded up)",
        Ok::<_, Error>((ttl + 999) / 1000),
    )
    .unwrap();
    redis::cmd("DEL")
        .arg(pages.request_key(POPULAR))
        .arg(web.views_key())
        .arg("{web:pages}:login")
        .arg("{web:pages}:recent")
        .arg(web.viewed_key("t").unwrap())
        .exec(con)
        .unwrap();
    t
}

#[test]
fn scenario_standalone() {
    let db = harness::fresh_db();
    let recorder = crate::recorder::Recorder::new("page_cache");
    let mut con = db.con();
    assert_snapshot(
        "page_cache__scenario",
        &scenario(&mut recorder.con(&mut con)),
    );
    assert!(harness::dump(&mut con).is_empty(), "a key was left behind");
    recorder.finish();
}

#[test]
fn scenario_cluster() {
    assert_snapshot(
        "page_cache__scenario",
        &scenario(&mut harness::cluster_con()),
    );
}

/// 16 clients request the same popular page at once: it is rendered once, and every
/// client gets that render.
#[test]
fn a_popular_page_missed_by_16_clients_is_rendered_once() {
    let db = harness::fresh_db();
    let web = WebSessions::new("web:stampede").unwrap();
    let pages = PageCache::new(&web);
    web.update_token("t", "u", Some("10086"))
        .run(&mut db.con())
        .unwrap();
    let renders = AtomicU64::new(0);
    let barrier = std::sync::Barrier::new(16);
    let got: Vec<String> = thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (db, pages, renders, barrier) = (&db, &pages, &renders, &barrier);
                scope.spawn(move || {
                    let mut con = db.con();
                    barrier.wait();
                    pages
                        .cache_request(&mut con, POPULAR, |_| {
                            renders.fetch_add(1, Ordering::Relaxed);
                            thread::sleep(Duration::from_millis(50));
                            Ok::<_, Error>("<html>the page</html>".to_owned())
                        })
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(renders.load(Ordering::Relaxed), 1);
    assert!(
        got.iter().all(|page| page == "<html>the page</html>"),
        "{got:?}"
    );
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let pages = PageCache::new(&WebSessions::new("web:bad").unwrap());
    assert_invalid(pages.clone().with_top(0), "top");
    assert_invalid(pages.clone().with_ttl(Duration::ZERO), "ttl");
    assert_invalid(pages.is_popular("").run(&mut con), "item");
    let before = harness::dump(&mut con);
    // A request that names no item is rendered, and nothing is read or written.
    let page: String = pages
        .cache_request(&mut con, "/view?item=", |_| Ok::<_, Error>("x".to_owned()))
        .unwrap();
    assert_eq!(page, "x");
    assert_eq!(harness::dump(&mut con), before);
}

/// The async page cache renders a popular page once and serves it from the cache after.
#[tokio::test]
async fn the_async_page_cache_serves_the_cached_page() {
    let db = harness::fresh_db();
    let mut con = db.multiplexed().await;
    let web = WebSessions::new("web:async-pages").unwrap();
    let pages = PageCache::new(&web);
    web.update_token("t", "u", Some("10086"))
        .run_async(&mut con)
        .await
        .unwrap();
    assert!(pages.can_cache_async(&mut con, POPULAR).await.unwrap());
    assert!(
        !pages
            .can_cache_async(&mut con, "/view?item=1")
            .await
            .unwrap()
    );
    let renders = AtomicU64::new(0);
    for _ in 0..2 {
        let page: String = pages
            .cache_request_async(&mut con, POPULAR, |request| {
                renders.fetch_add(1, Ordering::Relaxed);
                async move { Ok::<_, Error>(format!("<html>{request}</html>")) }
            })
            .await
            .unwrap();
        assert_eq!(page, format!("<html>{POPULAR}</html>"));
    }
    assert_eq!(renders.load(Ordering::Relaxed), 1);
}

/// Items and pages are bytes: a request for a non-UTF-8 item (`%FF%00`) finds that exact
/// item's view count (not a text with a replacement character), and a non-UTF-8 page is
/// rendered once, stored and served back byte for byte.
#[test]
fn binary_items_and_pages_round_trip() {
    let db = harness::fresh_db();
    let mut con = db.con();
    let item: &[u8] = b"\xff\x00item";
    let page: &[u8] = b"\x00\xff<html>\r\n\x80";
    let web = WebSessions::new("web:bin-pages").unwrap();
    let pages = PageCache::new(&web).with_top(1).unwrap();
    web.update_token("t", "u", Some(item))
        .run(&mut con)
        .unwrap();
    let request = "/view?item=%FF%00item";
    assert_eq!(PageCache::item_of(request).as_deref(), Some(item));
    assert!(pages.is_popular(item).run(&mut con).unwrap());
    assert!(pages.can_cache(&mut con, request).unwrap());
    // U+FFFD, what a lossy decoding would have made of %FF, is another item.
    assert!(
        !pages
            .can_cache(&mut con, "/view?item=%EF%BF%BD%00item")
            .unwrap()
    );
    let renders = AtomicU64::new(0);
    for _ in 0..2 {
        let got: Vec<u8> = pages
            .cache_request(&mut con, request, |_| {
                renders.fetch_add(1, Ordering::Relaxed);
                Ok::<_, Error>(page.to_vec())
            })
            .unwrap();
        assert_eq!(got, page);
    }
    assert_eq!(renders.load(Ordering::Relaxed), 1);
    let stored: Vec<u8> = redis::cmd("GET")
        .arg(pages.request_key(request))
        .query(&mut con)
        .unwrap();
    assert_eq!(stored, page);
    let views: Vec<(Vec<u8>, f64)> = harness::zset_with_scores(&mut con, web.views_key());
    assert_eq!(views, [(item.to_vec(), -1.0)]);
    // The cached page read as `String` fails, and the entry stays.
    harness::assert_undecodable_changes_nothing(&mut con, |c| {
        pages.cache_request(c, request, |_| Ok::<_, Error>(String::from("never")))
    });
    let mut keys: Vec<Vec<u8>> = harness::dump(&mut con).into_keys().collect();
    keys.sort();
    let mut expected: Vec<Vec<u8>> = [
        pages.request_key(request),
        web.views_key().to_owned(),
        "{web:bin-pages}:login".to_owned(),
        "{web:bin-pages}:recent".to_owned(),
        web.viewed_key("t").unwrap(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect();
    expected.sort();
    assert_eq!(keys, expected);
}
