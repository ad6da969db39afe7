//! Integers as people write them on a command line, in a profiler spec or
//! in assembly: the one parser every toyvm crate uses.

/// An integer literal: optionally negative (`-`), with `_` separators
/// anywhere after the sign; decimal (`1000`), hexadecimal (`0x3e8`),
/// binary (`0b1111101000`), or decimal with an exponent (`1e3`, `2.5e6`)
/// when the value it names is a whole number. Surrounding whitespace is
/// ignored. `None` for anything else, and for values outside `i128`.
///
/// ```
/// use toyvm_event::parse_int;
///
/// assert_eq!(parse_int("10_000_000"), Some(10_000_000));
/// assert_eq!(parse_int("1e7"), Some(10_000_000));
/// assert_eq!(parse_int("2.5e3"), Some(2500));
/// assert_eq!(parse_int("-0x10"), Some(-16));
/// assert_eq!(parse_int("0b101"), Some(5));
/// assert_eq!(parse_int("1.5"), None);
/// assert_eq!(parse_int("2.5e0"), None);
/// assert_eq!(parse_int("ten"), None);
/// ```
pub fn parse_int(s: &str) -> Option<i128> {
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let body = body.replace('_', "");
    let magnitude = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        digits(h, 16)?
    } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
        digits(b, 2)?
    } else if let Some((mantissa, exp)) = body.split_once(['e', 'E']) {
        scientific(mantissa, exp)?
    } else {
        digits(&body, 10)?
    };
    if neg {
        magnitude.checked_neg()
    } else {
        Some(magnitude)
    }
}

/// Unsigned digits in `radix`, at least one.
fn digits(s: &str, radix: u32) -> Option<i128> {
    if s.is_empty() || !s.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i128::from_str_radix(s, radix).ok()
}

/// `mantissa` (`D+` or `D+.D+`) times ten to the `exp` (`D+`, or `+D+`),
/// when that is a whole number.
fn scientific(mantissa: &str, exp: &str) -> Option<i128> {
    let exp = exp.strip_prefix('+').unwrap_or(exp);
    let exp: u32 = u32::try_from(digits(exp, 10)?).ok()?;
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() || (mantissa.contains('.') && frac.is_empty()) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    let shift = exp.checked_sub(u32::try_from(frac.len()).ok()?)?;
    let all = digits(&format!("{whole}{frac}"), 10)?;
    all.checked_mul(10i128.checked_pow(shift)?)
}

#[cfg(test)]
mod tests {
    use super::parse_int;

    #[test]
    fn forms() {
        for (s, v) in [
            ("0", 0),
            ("  42 ", 42),
            ("-7", -7),
            ("1_000", 1000),
            ("0xff", 255),
            ("0XFF", 255),
            ("0b11", 3),
            ("1e0", 1),
            ("1E3", 1000),
            ("1e+3", 1000),
            ("12.50e2", 1250),
            ("-2e2", -200),
            ("9223372036854775807", i64::MAX as i128),
        ] {
            assert_eq!(parse_int(s), Some(v), "{s}");
        }
    }

    #[test]
    fn refusals() {
        for s in [
            "", "-", "x", "0x", "0xg", "1.5", "1e", "e3", "1e-3", "1.e3", ".5e3", "1.25e1", "1e99",
            "--1", "+1", "1 2", "0b2",
        ] {
            assert_eq!(parse_int(s), None, "{s}");
        }
    }
}
