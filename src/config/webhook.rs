//! The `webhook:` section of the configuration: how `serve` turns findings
//! into admission verdicts. The levels and exceptions of the rest of the
//! file apply to the webhook as they do to the CLI.
//!
//! ```yaml
//! webhook:
//!   mode: warn              # enforce | warn | audit
//!   breakGlass: true        # honour the crd-safety.io/accept annotation
//!   breakGlassBy:           # optional: only these requesters may use it
//!     users: [alice@example.com]
//!     groups: [platform-admins]
//!   deleteGuard: true       # refuse deleting a CRD whose objects exist
//!   failMode: open          # open | closed: what a check that cannot finish does
//!   reviewDeadline: 8s      # every review answers by then (below timeoutSeconds)
//!   reveal: names           # names | values: what the scan's messages show of objects
//!   scanObjects:
//!     enabled: false
//!     deadline: 5s          # below the webhook's timeoutSeconds
//!     maxObjects: 5000
//! ```

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// What `serve` does with error findings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookMode {
    /// Deny a request with error findings.
    Enforce,
    /// Allow it, and return every finding as an admission warning (shown by
    /// kubectl, Helm and Argo CD). The default: a webhook that denies on a
    /// false alarm blocks a legitimate upgrade for everyone.
    #[default]
    Warn,
    /// Allow it and only log the findings.
    Audit,
}

impl WebhookMode {
    /// The name used in the configuration and the log.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookMode::Enforce => "enforce",
            WebhookMode::Warn => "warn",
            WebhookMode::Audit => "audit",
        }
    }
}

/// What the webhook does when a check cannot finish (the object scan ran
/// out of time or objects, the object count could not be read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unfinished {
    /// Allow, with a warning saying what was not checked.
    #[default]
    Open,
    /// Deny, saying why.
    Closed,
}

/// What the messages of the object scan show of the objects they name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reveal {
    /// `namespace/name` and the rule that fails, never a field's value:
    /// the scan reads objects with the webhook's rights, and its answer
    /// goes to whoever sent the request, who may not read them.
    #[default]
    Names,
    /// Also a sample of the values that fail (opted into in the config).
    Values,
}

/// The optional scan of stored objects on UPDATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanSettings {
    /// Whether UPDATEs validate the stored objects against the new schema.
    pub enabled: bool,
    /// The scan gives up after this long.
    #[serde(serialize_with = "as_seconds")]
    pub deadline: Duration,
    /// The scan is not attempted when the CRD has more objects than this.
    pub max_objects: u64,
}

impl Default for ScanSettings {
    fn default() -> Self {
        ScanSettings {
            enabled: false,
            // The chart's webhook timeout is 10 s: the scan must leave room
            // for the comparison and the answer.
            deadline: Duration::from_secs(5),
            max_objects: 5000,
        }
    }
}

fn as_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// `breakGlassBy`: who may use break-glass. Without it, anyone who may
/// update a CRD can accept its findings; with it, only the users and
/// members of the groups listed (as the API server names them in the
/// review's `userInfo`, which it fills from authentication and a body
/// cannot change when `--client-ca-file` admits only the API server).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BreakGlassBy {
    /// User names, e.g. `alice@example.com` or
    /// `system:serviceaccount:argocd:argocd-application-controller`.
    pub users: Vec<String>,
    /// Group names, e.g. `platform-admins`.
    pub groups: Vec<String>,
}

impl BreakGlassBy {
    /// Whether the requester `user`, member of `groups`, is listed.
    pub fn admits(&self, user: &str, groups: &[String]) -> bool {
        self.users.iter().any(|u| u == user)
            || groups.iter().any(|g| self.groups.iter().any(|l| l == g))
    }
}

/// The resolved `webhook:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSettings {
    /// `mode`.
    pub mode: WebhookMode,
    /// `breakGlass`: whether the accept annotation is honoured.
    pub break_glass: bool,
    /// `breakGlassBy`: when set, only these requesters may use it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub break_glass_by: Option<BreakGlassBy>,
    /// `deleteGuard`.
    pub delete_guard: bool,
    /// `failMode`.
    pub fail_mode: Unfinished,
    /// `scanObjects`.
    pub scan_objects: ScanSettings,
    /// `reviewDeadline`: a review that has not finished by then is answered
    /// by `failMode`, so the API server gets an answer before its own
    /// `timeoutSeconds` (10 s in the chart) turns into `failurePolicy`.
    #[serde(serialize_with = "as_seconds")]
    pub review_deadline: Duration,
    /// `reveal`.
    pub reveal: Reveal,
}

impl WebhookSettings {
    /// Whether answers may carry the values of the objects the scan read.
    pub fn reveals_values(&self) -> bool {
        self.reveal == Reveal::Values
    }
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            mode: WebhookMode::default(),
            break_glass: true,
            break_glass_by: None,
            delete_guard: true,
            fail_mode: Unfinished::default(),
            scan_objects: ScanSettings::default(),
            review_deadline: Duration::from_secs(8),
            reveal: Reveal::default(),
        }
    }
}

const KEYS: &[&str] = &[
    "mode",
    "breakGlass",
    "breakGlassBy",
    "deleteGuard",
    "failMode",
    "scanObjects",
    "reviewDeadline",
    "reveal",
];
const SCAN_KEYS: &[&str] = &["enabled", "deadline", "maxObjects"];
const BY_KEYS: &[&str] = &["users", "groups"];

/// Why the `webhook:` section cannot be read. Each names the key, so the
/// edge adds only the file ([`super::ConfigError::Webhook`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    /// A value of the wrong kind or outside the allowed words.
    #[error("{key}: expected {expected}, found {found}")]
    Expected {
        /// The key's path, `webhook.scanObjects.deadline`.
        key: String,
        /// What the key takes, in words.
        expected: &'static str,
        /// The value found, as JSON.
        found: String,
    },
    /// A key the section does not have.
    #[error("{at}: unknown key {key:?}; valid keys: {}", valid.join(", "))]
    UnknownKey {
        /// The map holding it, `webhook` or `webhook.scanObjects`.
        at: String,
        /// The key as written.
        key: String,
        /// The keys the map takes.
        valid: &'static [&'static str],
    },
}

/// A [`SettingError::Expected`] for `key`.
fn expected(key: &str, expected: &'static str, found: &Value) -> SettingError {
    SettingError::Expected {
        key: key.to_string(),
        expected,
        found: found.to_string(),
    }
}

/// A [`SettingError::UnknownKey`] in the map at `at`.
fn unknown(at: &str, key: &str, valid: &'static [&'static str]) -> SettingError {
    SettingError::UnknownKey {
        at: at.to_string(),
        key: key.to_string(),
        valid,
    }
}

/// Reads the `webhook:` value; errors name the key (`webhook.mode: ...`).
pub(super) fn parse(v: &Value) -> Result<WebhookSettings, SettingError> {
    let Value::Object(map) = v else {
        return Err(expected("webhook", "a map", v));
    };
    let mut out = WebhookSettings::default();
    for (key, v) in map {
        let ctx = format!("webhook.{key}");
        match key.as_str() {
            "mode" => {
                out.mode = match v.as_str() {
                    Some("enforce") => WebhookMode::Enforce,
                    Some("warn") => WebhookMode::Warn,
                    Some("audit") => WebhookMode::Audit,
                    _ => return Err(expected(&ctx, "enforce, warn or audit", v)),
                }
            }
            "breakGlass" => out.break_glass = boolean(v, &ctx)?,
            "breakGlassBy" => out.break_glass_by = Some(parse_by(v, &ctx)?),
            "deleteGuard" => out.delete_guard = boolean(v, &ctx)?,
            "failMode" => {
                out.fail_mode = match v.as_str() {
                    Some("open") => Unfinished::Open,
                    Some("closed") => Unfinished::Closed,
                    _ => return Err(expected(&ctx, "open or closed", v)),
                }
            }
            "scanObjects" => out.scan_objects = parse_scan(v, &ctx)?,
            "reviewDeadline" => {
                out.review_deadline = duration_of(v)
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| expected(&ctx, "a duration like 8s", v))?
            }
            "reveal" => {
                out.reveal = match v.as_str() {
                    Some("names") => Reveal::Names,
                    Some("values") => Reveal::Values,
                    _ => return Err(expected(&ctx, "names or values", v)),
                }
            }
            other => {
                return Err(unknown("webhook", other, KEYS));
            }
        }
    }
    Ok(out)
}

fn parse_by(v: &Value, ctx: &str) -> Result<BreakGlassBy, SettingError> {
    let Value::Object(map) = v else {
        return Err(expected(ctx, "a map with users and groups", v));
    };
    let mut out = BreakGlassBy::default();
    for (key, v) in map {
        let here = format!("{ctx}.{key}");
        let names = || -> Result<Vec<String>, SettingError> {
            match v {
                Value::Null => Ok(Vec::new()),
                Value::Array(items) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .filter(|s| !s.is_empty())
                            .map(str::to_string)
                            .ok_or_else(|| expected(&here, "names", i))
                    })
                    .collect(),
                _ => Err(expected(&here, "a list of names", v)),
            }
        };
        match key.as_str() {
            "users" => out.users = names()?,
            "groups" => out.groups = names()?,
            other => {
                return Err(unknown(ctx, other, BY_KEYS));
            }
        }
    }
    Ok(out)
}

fn parse_scan(v: &Value, ctx: &str) -> Result<ScanSettings, SettingError> {
    let mut out = ScanSettings::default();
    let map = match v {
        // `scanObjects: true` is the short form.
        Value::Bool(b) => {
            out.enabled = *b;
            return Ok(out);
        }
        Value::Object(map) => map,
        _ => return Err(expected(ctx, "true, false or a map", v)),
    };
    for (key, v) in map {
        let here = format!("{ctx}.{key}");
        match key.as_str() {
            "enabled" => out.enabled = boolean(v, &here)?,
            "deadline" => {
                out.deadline = duration_of(v)
                    .ok_or_else(|| expected(&here, "a duration like 5s or 500ms", v))?
            }
            "maxObjects" => {
                out.max_objects = v
                    .as_u64()
                    .ok_or_else(|| expected(&here, "a whole number", v))?
            }
            other => {
                return Err(unknown(ctx, other, SCAN_KEYS));
            }
        }
    }
    Ok(out)
}

/// A duration as text (`5s`), or a number of seconds.
fn duration_of(v: &Value) -> Option<Duration> {
    match v {
        Value::String(s) => crate::duration::parse(s).ok(),
        Value::Number(n) => n
            .as_f64()
            .filter(|s| *s >= 0.0)
            .map(Duration::from_secs_f64),
        _ => None,
    }
}

fn boolean(v: &Value, ctx: &str) -> Result<bool, SettingError> {
    v.as_bool().ok_or_else(|| expected(ctx, "true or false", v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<WebhookSettings, String> {
        let v: Value = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        parse(&v).map_err(|e| e.to_string())
    }

    #[test]
    fn warn_is_the_default_mode_and_every_key_is_read() {
        assert_eq!(WebhookSettings::default().mode, WebhookMode::Warn);
        let s = parse_text(
            "mode: enforce\nbreakGlass: false\ndeleteGuard: false\nfailMode: closed\n\
             scanObjects: {enabled: true, deadline: 1500ms, maxObjects: 20}\n\
             reviewDeadline: 3s\nreveal: values\n",
        )
        .unwrap();
        assert_eq!(s.mode, WebhookMode::Enforce);
        assert!(!s.break_glass && !s.delete_guard);
        assert_eq!(s.fail_mode, Unfinished::Closed);
        assert!(s.scan_objects.enabled);
        assert_eq!(s.scan_objects.deadline, Duration::from_millis(1500));
        assert_eq!(s.scan_objects.max_objects, 20);
        assert_eq!(s.review_deadline, Duration::from_secs(3));
        assert!(s.reveals_values());
        assert!(!WebhookSettings::default().reveals_values());
        assert_eq!(s.break_glass_by, None, "anyone, unless listed");
    }

    #[test]
    fn break_glass_by_lists_users_and_groups() {
        let s = parse_text("breakGlassBy:\n  users: [alice]\n  groups: [admins]\n").unwrap();
        let by = s.break_glass_by.unwrap();
        assert!(by.admits("alice", &[]));
        assert!(by.admits("bob", &["admins".to_string()]));
        assert!(!by.admits("bob", &["devs".to_string()]));
        // Listed but empty: nobody.
        let nobody = parse_text("breakGlassBy: {users: []}\n").unwrap();
        assert!(!nobody.break_glass_by.unwrap().admits("alice", &[]));
        assert_eq!(
            parse_text("breakGlassBy: {user: [alice]}\n").unwrap_err(),
            "webhook.breakGlassBy: unknown key \"user\"; valid keys: users, groups"
        );
        assert!(parse_text("breakGlassBy: {users: alice}\n").is_err());
    }

    #[test]
    fn a_misspelt_key_or_mode_names_what_is_valid() {
        assert_eq!(
            parse_text("mdoe: warn\n").unwrap_err(),
            "webhook: unknown key \"mdoe\"; valid keys: mode, breakGlass, breakGlassBy, deleteGuard, failMode, scanObjects, reviewDeadline, reveal"
        );
        assert_eq!(
            parse_text("mode: error\n").unwrap_err(),
            "webhook.mode: expected enforce, warn or audit, found \"error\""
        );
        assert!(
            parse_text("scanObjects: {deadline: soon}\n")
                .unwrap_err()
                .starts_with("webhook.scanObjects.deadline: expected a duration")
        );
    }
}
