//! IP-to-city lookup: Redis in Action chapter 5 (`ip_to_score`, `import_ips_to_redis`,
//! `import_cities_to_redis`, `find_city_by_ip`), with a lookup in one round trip and an
//! import that sends 1000 rows per round trip.
//!
//! ```no_run
//! # fn demo() -> redis_patterns::Result<()> {
//! use redis_patterns::ip_city::{City, IpBlock, IpCities, ip_to_score};
//!
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let cities = IpCities::new("geoip")?;
//! let blocks = [IpBlock { start: ip_to_score("1.0.0.0")?, end: Some(ip_to_score("1.0.0.255")?), city_id: "17".into() }];
//! cities.import_blocks(&mut con, blocks.iter().cloned().map(Ok))?;
//! let city = City { city: "Brisbane".into(), region: "07".into(), country: "AU".into() };
//! cities.import_cities(&mut con, [Ok(("17".to_owned(), city))])?;
//! assert_eq!(cities.find_city_by_ip(ip_to_score("1.0.0.1")?).run(&mut con)?.map(|c| c.city), Some("Brisbane".into()));
//! # Ok(()) }
//! ```
//!
//! A [`IpCities`] is a namespace of the book's two keys, in one hash slot:
//!
//! | Book key | Here | Holds |
//! |---|---|---|
//! | `ip2cityid:` | `{ns}:ip2cityid` | zset: `<city id>_<start>[_<end>]` → the block's first address |
//! | `cityid2city:` | `{ns}:cityid2city` | hash: city id → the city, JSON `[city, region, country]` |
//!
//! | Book | Here | Wire |
//! |---|---|---|
//! | `ip_to_score(ip)` | [`ip_to_score(ip)`](ip_to_score) → `Result<u32>` | none |
//! | `import_ips_to_redis(conn, filename)` | [`import_blocks(con, blocks)`](IpCities::import_blocks), [`blocks_from_csv(reader)`](blocks_from_csv) | `ZADD` of 1000 blocks per round trip |
//! | `import_cities_to_redis(conn, filename)` | [`import_cities(con, cities)`](IpCities::import_cities), [`cities_from_csv(reader)`](cities_from_csv) | `HSET` of 1000 cities per round trip |
//! | `find_city_by_ip(conn, ip)` | [`find_city_by_ip(ip)`](IpCities::find_city_by_ip) → `Option<City>` | script `ip_city/find` |
//!
//! What differs from the book, and why:
//!
//! - **The import is batched.** The book sends one `ZADD` per block and one `HSET` per
//!   city, each a round trip: the GeoLite file's 2 million blocks take millions of round
//!   trips. Here one round trip carries one command of up to 1000 rows, so every
//!   command stays short (other clients are never held up) and the import goes at the
//!   speed of the network. A failed row (a bad address, a city id with `_`) stops the
//!   import before anything of its chunk is sent, and says which row.
//! - **A lookup is one round trip**, where the book's takes two; the city comes from the
//!   same moment as the block.
//! - **Blocks may have an end**: an address past the end of the block that starts below
//!   it belongs to no city, where the book answers the last block's city whatever the
//!   distance. The member is `<city id>_<start>` or `<city id>_<start>_<end>` (the book's
//!   is `<city id>_<row number>`: the same block imported twice made two members).
//! - **Addresses are checked**: `ip_to_score("1.2.3")` or `"1.2.3.256"` is an error (the
//!   book's sum goes on regardless), and leading zeros are refused rather than read as
//!   decimal.
//!
//! **On a cluster**, a namespace is one hash slot, so a lookup reads both keys at one
//! moment; the whole table lives on one shard (the GeoLite tables take about 200 MB).

use std::io::BufRead;
use std::net::Ipv4Addr;

use crate::runtime::error::{Error, Result};
use crate::runtime::input;
use crate::runtime::op::Op;
use crate::scripts::ip_city as script;

/// How many rows one round trip of an import carries.
pub const IMPORT_CHUNK: usize = 1000;

/// A block of addresses that belongs to one city.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpBlock {
    /// The first address, as an integer ([`ip_to_score`]).
    pub start: u32,
    /// The last address, when known; `None` (as in the book): up to the next block.
    pub end: Option<u32>,
    /// The city's id: not empty, with no `_`.
    pub city_id: String,
}

/// A city, as the book stores it: JSON `[city, region, country]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct City {
    /// The city's name.
    pub city: String,
    /// The region (a code in the GeoLite data).
    pub region: String,
    /// The country (a two-letter code in the GeoLite data).
    pub country: String,
}

impl City {
    fn to_json(&self) -> String {
        serde_json::to_string(&(&self.city, &self.region, &self.country))
            .expect("strings always serialize")
    }

    fn from_json(json: &str) -> Result<City> {
        let (city, region, country): (String, String, String) = serde_json::from_str(json)
            .map_err(|err| {
                Error::unexpected_reply(
                    "ip_city/find reply",
                    format!("a city is not [city, region, country]: {err}"),
                )
            })?;
        Ok(City {
            city,
            region,
            country,
        })
    }
}

/// The integer of an IPv4 address in dotted form, as the book's `ip_to_score`: `a.b.c.d`
/// is `((a·256 + b)·256 + c)·256 + d`. Anything but four decimal numbers from 0 to 255,
/// without leading zeros, is [`Error::InvalidInput`].
///
/// ```
/// use redis_patterns::ip_city::ip_to_score;
///
/// assert_eq!(ip_to_score("1.2.3.4")?, 16_909_060);
/// assert!(ip_to_score("1.2.3").is_err());
/// assert!(ip_to_score("1.2.3.04").is_err());
/// # Ok::<(), redis_patterns::Error>(())
/// ```
pub fn ip_to_score(ip: &str) -> Result<u32> {
    ip.parse::<Ipv4Addr>().map(u32::from).map_err(|_| {
        Error::invalid(
            "ip",
            format!("{ip:?} is not an IPv4 address in dotted form (a.b.c.d, each 0 to 255)"),
        )
    })
}

/// The blocks of a GeoLite `Blocks` CSV file (`startIpNum,endIpNum,locId`, quoted or not),
/// as the book's `import_ips_to_redis` reads them: the start in dotted form or as an
/// integer; rows that are not blocks (the copyright line, the header) are skipped. A
/// row whose start is neither is an error that names its line.
pub fn blocks_from_csv(reader: impl BufRead) -> impl Iterator<Item = Result<IpBlock>> {
    reader.split(b'\n').enumerate().filter_map(|(n, line)| {
        let line = match line {
            Ok(line) => latin1(&line),
            Err(err) => return Some(Err(Error::invalid("csv", err.to_string()))),
        };
        let fields = csv_fields(&line);
        let start = fields.first().map(String::as_str).unwrap_or("");
        // The book skips a row whose start holds an `i` (the header: `startIpNum`).
        if start.is_empty() || start.to_ascii_lowercase().contains('i') || fields.len() < 3 {
            return None;
        }
        Some(
            block_of(&fields)
                .map_err(|why| Error::invalid("csv", format!("line {}: {why}", n + 1))),
        )
    })
}

fn address(field: &str) -> std::result::Result<u32, String> {
    if field.contains('.') {
        ip_to_score(field).map_err(|err| err.to_string())
    } else {
        field.parse().map_err(|_| {
            format!("{field:?} is neither a dotted address nor an integer from 0 to 4294967295")
        })
    }
}

fn block_of(fields: &[String]) -> std::result::Result<IpBlock, String> {
    let start = address(&fields[0])?;
    let end = match fields[1].as_str() {
        "" => None,
        end => Some(address(end)?),
    };
    Ok(IpBlock {
        start,
        end,
        city_id: fields[2].clone(),
    })
}

/// The cities of a GeoLite `Location` CSV file (`locId,country,region,city,…`), as the
/// book's `import_cities_to_redis` reads them (Latin-1): rows whose first field is not a
/// number are skipped.
pub fn cities_from_csv(reader: impl BufRead) -> impl Iterator<Item = Result<(String, City)>> {
    reader.split(b'\n').filter_map(|line| {
        let line = match line {
            Ok(line) => latin1(&line),
            Err(err) => return Some(Err(Error::invalid("csv", err.to_string()))),
        };
        let fields = csv_fields(&line);
        if fields.len() < 4
            || fields[0].is_empty()
            || !fields[0].bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        Some(Ok((
            fields[0].clone(),
            City {
                city: fields[3].clone(),
                region: fields[2].clone(),
                country: fields[1].clone(),
            },
        )))
    })
}

/// Latin-1 bytes as text (each byte is the code point of the same number), without the
/// line's `\r`.
fn latin1(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// The fields of one CSV line: separated by commas, each optionally in double quotes
/// (a doubled quote inside stands for one).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// The IP-to-city tables of one namespace. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpCities {
    blocks: String,
    cities: String,
}

impl IpCities {
    /// The namespace `namespace` (keys `{namespace}:ip2cityid` and
    /// `{namespace}:cityid2city`, one hash slot). An empty namespace is
    /// [`Error::InvalidInput`].
    pub fn new(namespace: &str) -> Result<Self> {
        Ok(IpCities {
            blocks: script::keys::blocks(namespace)?,
            cities: script::keys::cities(namespace)?,
        })
    }

    /// Imports `blocks`, 1000 per round trip (each one `ZADD`); returns how many. A block
    /// imported again replaces itself. An error among the blocks (a bad row of
    /// [`blocks_from_csv`], an empty city id or one with `_`, an end before the start)
    /// stops the import before its chunk is sent; the chunks before it are imported.
    pub fn import_blocks(
        &self,
        con: &mut dyn redis::ConnectionLike,
        blocks: impl IntoIterator<Item = Result<IpBlock>>,
    ) -> Result<u64> {
        let mut imported = 0;
        let mut cmd = redis::cmd("ZADD");
        let mut in_chunk = 0;
        for block in blocks {
            let block = block?;
            if block.city_id.is_empty() || block.city_id.contains('_') {
                return Err(Error::invalid(
                    "city_id",
                    format!("{:?} must not be empty or hold `_`", block.city_id),
                ));
            }
            if block.end.is_some_and(|end| end < block.start) {
                return Err(Error::invalid(
                    "end",
                    format!("block {:?} ends before it starts", block),
                ));
            }
            if in_chunk == 0 {
                cmd = redis::cmd("ZADD");
                cmd.arg(&self.blocks);
            }
            let member = match block.end {
                Some(end) => format!("{}_{}_{end}", block.city_id, block.start),
                None => format!("{}_{}", block.city_id, block.start),
            };
            cmd.arg(block.start).arg(member);
            in_chunk += 1;
            if in_chunk == IMPORT_CHUNK {
                Op::<i64>::native(std::mem::replace(&mut cmd, redis::cmd("ZADD"))).run(con)?;
                imported += in_chunk as u64;
                in_chunk = 0;
            }
        }
        if in_chunk > 0 {
            Op::<i64>::native(cmd).run(con)?;
            imported += in_chunk as u64;
        }
        Ok(imported)
    }

    /// Imports `cities` (city id → city), 1000 per round trip (each one `HSET`); returns
    /// how many. An error among them stops the import before its chunk is sent.
    pub fn import_cities(
        &self,
        con: &mut dyn redis::ConnectionLike,
        cities: impl IntoIterator<Item = Result<(String, City)>>,
    ) -> Result<u64> {
        let mut imported = 0;
        let mut chunk: Vec<(String, String)> = Vec::with_capacity(IMPORT_CHUNK);
        let send = |chunk: &mut Vec<(String, String)>,
                    con: &mut dyn redis::ConnectionLike|
         -> Result<()> {
            let mut cmd = redis::cmd("HSET");
            cmd.arg(&self.cities);
            for (id, json) in chunk.drain(..) {
                cmd.arg(id).arg(json);
            }
            Op::<i64>::native(cmd).run(con)?;
            Ok(())
        };
        for city in cities {
            let (id, city) = city?;
            input::key("city_id", &id)?;
            chunk.push((id, city.to_json()));
            if chunk.len() == IMPORT_CHUNK {
                send(&mut chunk, con)?;
                imported += IMPORT_CHUNK as u64;
            }
        }
        if !chunk.is_empty() {
            imported += chunk.len() as u64;
            send(&mut chunk, con)?;
        }
        Ok(imported)
    }

    /// The city of the address `ip` (an integer: [`ip_to_score`], or `u32::from` of an
    /// `Ipv4Addr`), or `None` when no block holds it. A block whose city was never
    /// imported is an [`Error::Redis`] of kind `UnexpectedReturnType` (the book raises
    /// `TypeError`). One script
    /// (`ip_city/find`).
    pub fn find_city_by_ip(&self, ip: u32) -> Op<Option<City>> {
        script::find(&self.blocks, &self.cities, u64::from(ip)).map(|(id, json)| match (id, json) {
            (Some(_), Some(json)) => City::from_json(&json).map(Some),
            (Some(id), None) => Err(Error::unexpected_reply(
                "ip_city/find reply",
                format!("block of city {id:?} found, but the city is not imported"),
            )),
            _ => Ok(None),
        })
    }

    /// How many blocks are imported (`ZCARD`).
    pub fn block_count(&self) -> Op<u64> {
        crate::runtime::native::one_key("ZCARD", &self.blocks)
    }
}
