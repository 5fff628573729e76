//! Durations as kubectl writes them, for flags (`--request-timeout`,
//! `serve --reload-interval`) and the configuration file
//! (`scanObjects.deadline`): one syntax everywhere.

use std::time::Duration;

/// kubectl's duration syntax: `500ms`, `30s`, `2m`, `1h`, `1m30s`, or a bare number of seconds.
pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(num_len);
        let value: f64 = num
            .parse()
            .map_err(|_| format!("invalid duration {s:?} (use e.g. 30s, 1m, 500ms)"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let factor = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(format!("invalid duration {s:?} (use e.g. 30s, 1m, 500ms)")),
        };
        total += value * factor;
        rest = next;
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kubectl_reads_them() {
        assert_eq!(parse("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("30"), Ok(Duration::from_secs(30)));
        assert!(parse("soon").is_err());
        assert!(parse("5d").is_err());
    }
}
