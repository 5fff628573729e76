//! Kubernetes version priority (`v1` > `v1beta2` > `v1beta1` > `v1alpha1` >
//! anything else, alphabetically), the order the API server uses to pick the
//! preferred version and the order "older → newer" means in this tool.

use std::cmp::Ordering;

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Parsed<'a> {
    // Variant order is priority order, lowest first.
    Other(std::cmp::Reverse<&'a str>),
    Alpha(u64, u64),
    Beta(u64, u64),
    Ga(u64),
}

fn parse(v: &str) -> Parsed<'_> {
    let Some(rest) = v.strip_prefix('v') else {
        return Parsed::Other(std::cmp::Reverse(v));
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let Ok(major) = rest[..digits].parse::<u64>() else {
        return Parsed::Other(std::cmp::Reverse(v));
    };
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Parsed::Ga(major);
    }
    for (prefix, beta) in [("alpha", false), ("beta", true)] {
        if let Some(n) = tail.strip_prefix(prefix)
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
            && let Ok(minor) = n.parse::<u64>()
        {
            return if beta {
                Parsed::Beta(major, minor)
            } else {
                Parsed::Alpha(major, minor)
            };
        }
    }
    Parsed::Other(std::cmp::Reverse(v))
}

/// Compares two version names by Kubernetes priority: `Less` means `a` is the
/// older (lower priority) one.
pub fn compare_priority(a: &str, b: &str) -> Ordering {
    parse(a).cmp(&parse(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_the_api_server_sorts_them() {
        let mut v = vec![
            "v1",
            "foo",
            "v1alpha1",
            "v2beta1",
            "v1beta2",
            "v1beta1",
            "v2",
            "v11alpha2",
            "bar",
        ];
        v.sort_by(|a, b| compare_priority(a, b));
        assert_eq!(
            v,
            [
                "foo",
                "bar",
                "v1alpha1",
                "v11alpha2",
                "v1beta1",
                "v1beta2",
                "v2beta1",
                "v1",
                "v2"
            ]
        );
    }
}
