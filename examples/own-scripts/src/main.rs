//! An app's own Redis scripts, called through typed Rust functions that
//! `redis-patterns-codegen` generates from their headers at build time.
//!
//! `lua/inventory/reserve.lua` reserves units of stock for an order if enough are left;
//! `lua/inventory/release.lua` gives an order's units back. `build.rs` turns each into a
//! `static` [`Script`](redis_patterns::Script) and a function in [`scripts::inventory`].
//!
//! Run it against a Redis 7 server (it writes two keys under `{example:sku:42}`):
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1/ cargo run -p own-scripts-example
//! ```

/// The typed calls of `lua/<family>/<op>.lua`, one module per family.
mod scripts {
    include!(concat!(env!("OUT_DIR"), "/scripts.rs"));
}

use scripts::inventory;

fn main() -> redis_patterns::Result<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1/".into());
    let mut con = redis::Client::open(url)?.get_connection()?;

    // Optional: each call loads its script on first use. Loading at start-up fails fast on
    // a server that refuses scripts, and lets the app send EVALSHA in its own pipelines.
    redis_patterns::load(&mut con, &[&inventory::RESERVE, &inventory::RELEASE])?;

    // The headers name the keys (`{<sku>}:stock`, `{<sku>}:reserved`) and the build made a
    // function of each: both share the hash tag `{example:sku:42}`, one cluster slot.
    let (stock, reserved) = (
        &inventory::keys::stock("example:sku:42")?,
        &inventory::keys::reserved("example:sku:42")?,
    );
    redis::cmd("SET").arg(stock).arg(10).exec(&mut con)?;
    redis::cmd("DEL").arg(reserved).exec(&mut con)?;

    // Each function takes the header's keys and arguments, in order, and returns an `Op`
    // of the header's return type: `int?` is `Option<i64>`.
    let left = inventory::reserve(stock, reserved, "order-1", 7).run(&mut con)?;
    println!("order-1 reserves 7 units: {left:?} left"); // Some(3)
    let left = inventory::reserve(stock, reserved, "order-2", 5).run(&mut con)?;
    println!("order-2 asks for 5 units: {left:?} (not enough, nothing reserved)"); // None
    let back = inventory::release(stock, reserved, "order-1").run(&mut con)?;
    println!("order-1 is cancelled: {back} units back in stock"); // 7
    let left = inventory::reserve(stock, reserved, "order-2", 5).run(&mut con)?;
    println!("order-2 asks again: {left:?} left"); // Some(5)

    // The header's rules are checked in Rust before anything is sent (`quantity` is
    // `1..=10^9`): a typed error, and Redis is untouched.
    let err = inventory::reserve(stock, reserved, "order-3", 0)
        .run(&mut con)
        .unwrap_err();
    println!("order-3 asks for 0 units: {err}");
    Ok(())
}
