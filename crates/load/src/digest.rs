//! A fingerprint of everything read from one input, so that two engines can be compared without
//! shipping the records: sql.js in the page and rusqlite natively must give the same digest for
//! the same export, and the parser compiled to wasm the same as natively for the same log.

use std::fmt::Write;

/// FNV-1a, 64 bits, fed through `fmt::Write` so the records are never formatted into one string.
struct Fnv(u64);

impl Write for Fnv {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Ok(())
    }
}

/// The digest of a value's `Debug` form (every field of every record), as 16 hex digits.
pub fn records_digest<T: std::fmt::Debug>(records: &T) -> String {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    // Writing into Fnv cannot fail; a Debug impl that fails would only shorten the input.
    let _ = write!(h, "{records:?}");
    format!("{:016x}", h.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_changes_with_any_field() {
        let a = records_digest(&(1u32, "x", 2.5f64));
        assert_eq!(a, records_digest(&(1u32, "x", 2.5f64)));
        assert_ne!(a, records_digest(&(1u32, "x", 2.25f64)));
        assert_ne!(a, records_digest(&(1u32, "y", 2.5f64)));
        assert_eq!(a.len(), 16);
    }
}
