//! Percent-encoding as the share links use it (RFC 3986's unreserved characters kept), its
//! strict decoding, and untrusted text shortened for messages: shared by the link's keys.

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn pct(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes percent-encoding (strictly: a `%` must start two hex digits; the result UTF-8).
pub fn unpct(s: &str, max: usize) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in “{}”", shorten(s)))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
        if out.len() > max {
            return Err(format!(
                "a value longer than {max} bytes in “{}”",
                shorten(s)
            ));
        }
    }
    String::from_utf8(out).map_err(|_| format!("“{}” is not UTF-8 text", shorten(s)))
}

/// At most 60 characters of untrusted text, for messages.
pub fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}
