//! The Kubernetes minor version whose rules are applied. The CRD
//! validation, the CEL environment and the checks each change with it, so
//! it sits below all three.

use std::fmt;
use std::str::FromStr;

/// The Kubernetes minor version whose rules are applied (1.x).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeVersion {
    pub minor: u32,
}

impl KubeVersion {
    /// The newest version whose rules this build knows; the offline default.
    pub const NEWEST: KubeVersion = KubeVersion { minor: 37 };
    /// The oldest version accepted by `--kube-version`.
    pub const OLDEST: KubeVersion = KubeVersion { minor: 25 };
    /// The oldest version whose rules are held to a real API server of
    /// that version (`tests/live/crd_validation.rs` runs on 1.30, 1.34 and
    /// 1.37); older ones are judged by what the code knows of them.
    pub const CHECKED_SINCE: KubeVersion = KubeVersion { minor: 30 };

    /// The rules to judge a server of minor version `minor` by: its own,
    /// or the nearest this build knows (a newer server is judged by the
    /// newest rules known here).
    pub fn for_server(minor: u32) -> KubeVersion {
        KubeVersion {
            minor: minor.clamp(KubeVersion::OLDEST.minor, KubeVersion::NEWEST.minor),
        }
    }

    /// What a report says when the rules applied are not exactly those of
    /// the server (`self` is what [`KubeVersion::for_server`] chose for
    /// it): a newer server is judged by the newest rules known here, an
    /// older one by the oldest.
    pub fn notice_for_server(self, server_minor: u32, server: &str) -> Option<String> {
        if server_minor > self.minor {
            Some(format!(
                "the server runs {server}, newer than the newest CRD rules this build knows: it is judged \
by the rules of Kubernetes {self}, and its own dry run (apiServerRejects) has the last word"
            ))
        } else if server_minor < self.minor {
            Some(format!(
                "the server runs {server}, older than the oldest CRD rules this build knows: it is judged by \
the rules of Kubernetes {self}, which may accept what it refuses (newer CEL libraries) or refuse what it \
accepts; its own dry run (apiServerRejects) has the last word"
            ))
        } else if self < KubeVersion::CHECKED_SINCE {
            Some(format!(
                "the server runs {server}: CRD rules before Kubernetes {} are not checked against a real API \
server of their version (cost estimates and CEL type checks follow newer servers), so its own dry run \
(apiServerRejects) has the last word",
                KubeVersion::CHECKED_SINCE
            ))
        } else {
            None
        }
    }

    /// The version whose CEL libraries new rules may use: the server's
    /// compatibility version, one minor below its own
    /// (`DefaultCompatibilityVersion`), so that a rollback by one version
    /// still compiles every rule it accepted. Rules the stored CRD already
    /// has are compiled with the server's own libraries.
    pub fn for_new_expressions(self) -> KubeVersion {
        KubeVersion {
            minor: self.minor.saturating_sub(1),
        }
    }

    /// Selectable fields exist from 1.31 (beta, on by default); before, the
    /// server drops the field instead of validating it.
    pub fn has_selectable_fields(self) -> bool {
        self.minor >= 31
    }
}

/// Where the judged Kubernetes version came from, as reports say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum KubeVersionSource {
    /// Nothing chose one: the newest this build knows.
    #[default]
    Default,
    /// `kubeVersion` in the configuration file.
    Config,
    /// `--kube-version`.
    Flag,
    /// The connected API server's `/version`.
    Server,
}

impl fmt::Display for KubeVersionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KubeVersionSource::Default => "the newest this build knows",
            KubeVersionSource::Config => "kubeVersion in the configuration",
            KubeVersionSource::Flag => "--kube-version",
            KubeVersionSource::Server => "the server's version",
        })
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        KubeVersion::NEWEST
    }
}

impl fmt::Display for KubeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}

impl FromStr for KubeVersion {
    type Err = String;

    /// `1.33`, `v1.33` or `v1.33.2`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_start_matches('v');
        let mut parts = t.split('.');
        let major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let minor = parts
            .next()
            .and_then(|p| p.trim_end_matches('+').parse::<u32>().ok());
        match (major, minor) {
            (Some(1), Some(minor)) => {
                let v = KubeVersion { minor };
                if v < KubeVersion::OLDEST || v > KubeVersion::NEWEST {
                    Err(format!(
                        "Kubernetes version {s:?} is not supported (supported: {} to {})",
                        KubeVersion::OLDEST,
                        KubeVersion::NEWEST
                    ))
                } else {
                    Ok(v)
                }
            }
            _ => Err(format!(
                "invalid Kubernetes version {s:?} (use e.g. 1.33 or v1.33.2)"
            )),
        }
    }
}
