//! Byte sizes as the size flags take them and as messages name them: bytes, or a number with a
//! Kubernetes binary suffix (`Ki`, `Mi`, `Gi`, `Ti`).

/// `--max-input-size`, `--max-line-size`, `--max-response-size`: bytes, or a number with a Kubernetes binary suffix
/// (`Ki`, `Mi`, `Gi`, `Ti`), at least 1 KiB.
pub fn parse(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, shift) = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40)]
        .into_iter()
        .find_map(|(suffix, shift)| text.strip_suffix(suffix).map(|n| (n, shift)))
        .unwrap_or((text, 0));
    let bytes = number.parse::<u64>().ok().and_then(|n| n.checked_mul(1 << shift));
    match bytes {
        Some(bytes) if bytes >= 1 << 10 => Ok(bytes),
        Some(_) => Err("smaller than 1Ki".to_string()),
        None => Err("not a size; use bytes or Ki, Mi, Gi, Ti, e.g. 512Mi or 4Gi".to_string()),
    }
}

/// A byte count as `--max-input-size` takes it (`1Gi`, `512Mi`, or bytes).
pub fn show(bytes: u64) -> String {
    match [(40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")]
        .into_iter()
        .find(|(shift, _)| bytes >= 1 << shift && bytes.is_multiple_of(1 << shift))
    {
        Some((shift, suffix)) => format!("{}{suffix}", bytes >> shift),
        None => format!("{bytes} bytes"),
    }
}
