//! Which HTTP proxy to connect through, with kubectl's rules.
//!
//! A cluster's `proxy-url` is always used. Otherwise the environment is read
//! as Go's `http.ProxyFromEnvironment` reads it: `HTTPS_PROXY` (or
//! `https_proxy`) for an `https` server, `HTTP_PROXY` for `http`, except for
//! `localhost` and loopback addresses and hosts matched by `NO_PROXY`.
//! Only `http://` proxies (HTTP CONNECT) are supported; a `socks5://` or
//! `https://` proxy is an error rather than a silent direct connection.

use std::net::IpAddr;

use http::Uri;

/// The proxy for `server`, if any. `cluster_proxy` is the kubeconfig's
/// `proxy-url`; `env` reads an environment variable.
pub fn choose(
    cluster_proxy: Option<&str>,
    server: &Uri,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Uri>, String> {
    let nonempty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let proxy = match cluster_proxy.filter(|p| !p.is_empty()) {
        Some(p) => p.to_string(),
        None => {
            let host = server.host().unwrap_or_default();
            if is_loopback(host) {
                return Ok(None);
            }
            let from_env = if server.scheme_str() == Some("http") {
                nonempty("HTTP_PROXY").or_else(|| nonempty("http_proxy"))
            } else {
                nonempty("HTTPS_PROXY").or_else(|| nonempty("https_proxy"))
            };
            let Some(p) = from_env else { return Ok(None) };
            let no_proxy = nonempty("NO_PROXY").or_else(|| nonempty("no_proxy"));
            if no_proxy.is_some_and(|list| excluded(&list, host, server.port_u16())) {
                return Ok(None);
            }
            p
        }
    };
    // Go reads a proxy without a scheme as http://.
    let text = if proxy.contains("://") {
        proxy
    } else {
        format!("http://{proxy}")
    };
    let uri: Uri = text
        .parse()
        .map_err(|e| format!("proxy URL {}: {e}", redact(&text)))?;
    match uri.scheme_str() {
        Some("http") => Ok(Some(uri)),
        other => Err(format!(
            "proxy URL {}: only http:// proxies are supported, not {}://",
            redact(&text),
            other.unwrap_or("?")
        )),
    }
}

/// The proxy URL without its user and password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `NO_PROXY` excludes `host`: `*`, an IP, a CIDR, or a domain
/// (`example.com` and `.example.com` both match the domain's subdomains;
/// the first also the domain itself), each optionally with `:port`.
fn excluded(list: &str, host: &str, port: Option<u16>) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let ip = host.parse::<IpAddr>().ok();
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            if let (Some(ip), Some((net, bits))) = (ip, entry.split_once('/')) {
                return in_cidr(ip, net, bits);
            }
            let (name, entry_port) = match entry.rsplit_once(':') {
                Some((n, p)) if !n.contains(':') && p.parse::<u16>().is_ok() => (n, p.parse().ok()),
                _ => (entry, None),
            };
            if entry_port.is_some() && entry_port != port {
                return false;
            }
            let name = name
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase();
            if let (Some(ip), Ok(other)) = (ip, name.parse::<IpAddr>()) {
                return ip == other;
            }
            match name.strip_prefix('.') {
                Some(domain) => host.ends_with(&format!(".{domain}")),
                None => host == name || host.ends_with(&format!(".{name}")),
            }
        })
}

fn in_cidr(ip: IpAddr, net: &str, bits: &str) -> bool {
    let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn uri(s: &str) -> Uri {
        s.parse().expect("test URI")
    }

    #[test]
    fn the_kubeconfig_proxy_url_is_always_used() {
        let p = choose(
            Some("http://proxy:3128"),
            &uri("https://127.0.0.1:6443"),
            env(&[]),
        );
        assert_eq!(p, Ok(Some(uri("http://proxy:3128"))));
    }

    #[test]
    fn the_environment_is_read_like_go() {
        let vars = [
            ("HTTPS_PROXY", "proxy:3128"),
            ("NO_PROXY", ".internal,10.0.0.0/8"),
        ];
        let server = |s: &str| choose(None, &uri(s), env(&vars));
        assert_eq!(
            server("https://api.example.com"),
            Ok(Some(uri("http://proxy:3128")))
        );
        assert_eq!(
            server("https://127.0.0.1:6443"),
            Ok(None),
            "loopback is never proxied"
        );
        assert_eq!(server("https://localhost:6443"), Ok(None));
        assert_eq!(server("https://k8s.internal:6443"), Ok(None));
        assert_eq!(server("https://10.1.2.3:6443"), Ok(None));
        assert_eq!(
            server("http://api.example.com"),
            Ok(None),
            "http uses HTTP_PROXY"
        );
    }

    #[test]
    fn unsupported_proxies_are_an_error_without_credentials() {
        let e = choose(
            Some("socks5://user:secret@proxy:1080"),
            &uri("https://x"),
            env(&[]),
        )
        .expect_err("socks5 is refused");
        assert!(e.contains("only http://") && !e.contains("secret"), "{e}");
    }
}
