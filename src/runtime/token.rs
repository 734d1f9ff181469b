//! Unguessable tokens: the lock holders', the cache's computing claims, the pool's leases.

/// 128 random bits from the operating system, as 32 hex digits.
///
/// # Panics
///
/// If the operating system's random source fails, as `std` does for its hash seeds.
pub(crate) fn random() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
