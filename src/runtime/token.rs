//! Unguessable tokens (the lock holders', the cache's computing claims, the pool's leases, login
//! sessions', the dashboard's) and comparing one with a guess in constant time.

/// 128 random bits from the operating system, as 32 hex digits.
///
/// # Panics
///
/// If the operating system's random source fails, as `std` does for its hash seeds.
pub fn random() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A number picked at random from `0..n` (`n` > 0), each equally likely, from the same
/// source: a draw from the top of the 64-bit range that a multiple of `n` leaves over is
/// drawn again, so that no value is favoured (a plain `% n` would favour the low ones).
///
/// # Panics
///
/// If the operating system's random source fails, as [`random`] does.
pub(crate) fn below(n: usize) -> usize {
    let n = n as u64;
    // The largest multiple of n that fits, as a bound: draws at or above it are redrawn
    // (fewer than one in two, whatever n).
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).expect("the operating system's random source failed");
        let draw = u64::from_le_bytes(bytes);
        if draw < zone {
            return (draw % n) as usize;
        }
    }
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only, not on
/// where they differ: for comparing a secret with a guess. (The `subtle` crate does the
/// same with more guarantees against the optimiser; eight lines here spare every app a
/// dependency.)
pub fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // Keeps the compiler from turning the fold back into an early-exit comparison.
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_below_and_reaches_every_value() {
        for n in [1, 2, 3, 7, 1000] {
            let mut seen = vec![false; n];
            for _ in 0..100 * n {
                seen[below(n)] = true;
            }
            assert!(seen.iter().all(|s| *s), "not every value of 0..{n} drawn");
        }
    }

    #[test]
    fn same_is_equality() {
        assert!(same(b"", b""));
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"xbc"));
        assert!(!same(b"abc", b"ab"));
        assert!(!same(b"", b"a"));
    }
}
