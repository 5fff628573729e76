//! Configuration: `.crd-safety.yaml` and the flags that override it, and the
//! [`Policy`] that turns raw findings into what the user asked to see.
//!
//! ```yaml
//! mode: error          # error | warn (warn reports everything and never fails)
//! failMode: closed     # closed | open (unknown changes are errors | warnings)
//! checks:
//!   description: ignore          # error | warning | info | ignore
//!   enum: {level: warning, allowAdditions: false}
//! exceptions:
//!   - crd: widgets.example.com
//!     version: v1                # optional
//!     path: "^.spec.legacy*"     # optional glob (`*` matches anything)
//!     check: existingFieldRemoval
//!     reason: "never used since 2.0; see #123"
//! ```
//!
//! The `webhook:` section (how `serve` acts on findings) is described in
//! [`webhook`].
//!
//! `ignore` means "changes to this attribute are accepted": the check still
//! consumes the attribute, so it never resurfaces as an unknown change.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;
use thiserror::Error;

use crate::compare::{Check, CheckOptions, Finding, Severity, options_of};
use crate::crd_validation::{KubeVersion, KubeVersionSource};
use crate::glob;
use crate::manifest::{InputError, InputLimits, read_text};

mod webhook;

pub use webhook::{
    BreakGlassBy, ScanSettings, SettingError, Unfinished, WebhookMode, WebhookSettings,
};

/// Why the configuration is unusable.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file cannot be read, or holds more than a file may
    /// (`--max-input-bytes`); the error names the path.
    #[error(transparent)]
    Read(#[from] InputError),
    /// The file is not valid YAML.
    #[error("{path}: invalid YAML: {message}")]
    Yaml { path: String, message: String },
    /// A key or value is not understood.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    /// The `webhook:` section is not understood; the error names the key.
    #[error("{path}: {source}")]
    Webhook {
        path: String,
        source: webhook::SettingError,
    },
}

/// Whether error findings fail the run (`mode`, `--mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Error findings fail the run (exit 1).
    #[default]
    Error,
    /// Everything is reported; nothing fails.
    Warn,
}

/// How changes no check understands are treated (`failMode`,
/// `--fail-mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    /// Unknown changes are errors.
    #[default]
    Closed,
    /// Unknown changes are warnings.
    Open,
}

/// What a user set for one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Report every finding of the check at this severity.
    Severity(Severity),
    /// Accept every change the check sees.
    Ignore,
}

impl FromStr for Level {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "error" => Ok(Level::Severity(Severity::Error)),
            "warning" | "warn" => Ok(Level::Severity(Severity::Warning)),
            "info" => Ok(Level::Severity(Severity::Info)),
            "ignore" => Ok(Level::Ignore),
            _ => Err(()),
        }
    }
}

/// A finding the user accepted, with their reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exception {
    /// CRD name (glob).
    pub crd: String,
    /// Version, when limited to one.
    pub version: Option<String>,
    /// Path glob; `*` when absent.
    pub path: String,
    /// The check.
    pub check: Check,
    /// Why this is fine (shown in reports).
    pub reason: String,
}

/// The resolved configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `mode`.
    pub mode: Mode,
    /// `failMode`.
    pub fail_mode: FailMode,
    /// `checks.<id>` levels.
    pub levels: BTreeMap<Check, Level>,
    /// Per-check options.
    pub options: CheckOptions,
    /// `exceptions`.
    pub exceptions: Vec<Exception>,
    /// `kubeVersion`: the Kubernetes version whose CRD rules `invalidCrd`
    /// applies (`--kube-version` and a live server's version win).
    pub kube_version: KubeVersion,
    /// Where [`Config::kube_version`] came from.
    pub kube_version_source: KubeVersionSource,
    /// Leaves the offline API-server validation (`invalidCrd`) out of a
    /// run. Not a config-file key (a CRD the server refuses should always be
    /// reported); for embedders, and for the benchmark that measures what
    /// the check adds to a `diff`.
    pub skip_crd_validation: bool,
    /// `webhook`: what `serve` does with findings.
    pub webhook: WebhookSettings,
    /// `requirements`: files or directories of consumers' requirements
    /// that NEW is judged against too (`--requirements` replaces them).
    /// Relative paths in a file are relative to the file's directory, so a
    /// repository's config works from any working directory.
    pub requirements: Vec<std::path::PathBuf>,
    /// How much the files this configuration was read from and names may
    /// hold (`--max-input-bytes`): the requirements are read within it as
    /// the manifests are. Not a config-file key.
    pub input_limits: InputLimits,
    /// `gradeByObjects: false` (or `--no-grade-by-objects`): keep the
    /// schema's grade of every finding even where a complete object scan
    /// decides it, for whoever wants the review prompts an operator's author
    /// gets in front of one cluster too.
    pub keep_schema_grades: bool,
}

/// Top-level keys of the file.
const TOP_KEYS: &[&str] = &[
    "mode",
    "failMode",
    "kubeVersion",
    "checks",
    "exceptions",
    "webhook",
    "requirements",
    "gradeByObjects",
];

/// The file a command reads from its working directory without `--config`.
pub const DEFAULT_FILE: &str = ".crd-safety.yaml";

impl Config {
    /// The configuration a command runs with: `path` when given (`--config`),
    /// else `.crd-safety.yaml` of the working directory when there is one,
    /// else the defaults; every file read within `limits`.
    pub fn discover(path: Option<&Path>, limits: InputLimits) -> Result<Config, ConfigError> {
        let default = Path::new(DEFAULT_FILE);
        let mut config = match path {
            Some(path) => Config::load(path, limits)?,
            None if default.exists() => Config::load(default, limits)?,
            None => Config::default(),
        };
        config.input_limits = limits;
        Ok(config)
    }

    /// Reads a configuration file, through the cap of one file.
    pub fn load(path: &Path, limits: InputLimits) -> Result<Config, ConfigError> {
        let text = read_text(path, limits)?;
        let mut config = Self::parse(&text, &path.display().to_string())?;
        config.input_limits = limits;
        if let Some(dir) = path.parent() {
            for r in &mut config.requirements {
                if r.is_relative() {
                    *r = dir.join(&*r);
                }
            }
        }
        Ok(config)
    }

    /// Parses config text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let value: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_saphyr::from_str(text).map_err(|e| ConfigError::Yaml {
                path: origin.to_string(),
                message: e.without_snippet().to_string(),
            })?
        };
        let bad = |message: String| ConfigError::Invalid {
            path: origin.to_string(),
            message,
        };
        let mut config = Config::default();
        let map = match value {
            Value::Null => return Ok(config),
            Value::Object(m) => m,
            _ => return Err(bad("the configuration must be a map".into())),
        };
        for (key, v) in &map {
            match key.as_str() {
                "mode" => {
                    config.mode = match v.as_str() {
                        Some("error") => Mode::Error,
                        Some("warn") => Mode::Warn,
                        _ => return Err(bad(format!("mode: expected error or warn, found {v}"))),
                    }
                }
                "failMode" => {
                    config.fail_mode = match v.as_str() {
                        Some("closed") => FailMode::Closed,
                        Some("open") => FailMode::Open,
                        _ => {
                            return Err(bad(format!(
                                "failMode: expected closed or open, found {v}"
                            )));
                        }
                    }
                }
                "kubeVersion" => {
                    let text = match v {
                        Value::String(s) => s.clone(),
                        // `kubeVersion: 1.33` reads as a number in YAML.
                        Value::Number(n) => n.to_string(),
                        _ => {
                            return Err(bad(format!(
                                "kubeVersion: expected e.g. \"1.33\", found {v}"
                            )));
                        }
                    };
                    config.kube_version = text
                        .parse::<KubeVersion>()
                        .map_err(|e| bad(format!("kubeVersion: {e}")))?;
                    config.kube_version_source = KubeVersionSource::Config;
                }
                "checks" => parse_checks(v, &mut config).map_err(bad)?,
                "exceptions" => parse_exceptions(v, &mut config).map_err(bad)?,
                "webhook" => {
                    config.webhook = webhook::parse(v).map_err(|source| ConfigError::Webhook {
                        path: origin.to_string(),
                        source,
                    })?
                }
                "requirements" => config.requirements = parse_paths(v).map_err(bad)?,
                "gradeByObjects" => {
                    let Some(on) = v.as_bool() else {
                        return Err(bad(format!(
                            "gradeByObjects: expected true or false, found {v}"
                        )));
                    };
                    config.keep_schema_grades = !on;
                }
                other => {
                    return Err(bad(format!(
                        "unknown key {other:?}; valid keys: {}",
                        TOP_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(config)
    }

    /// The policy that applies this configuration to findings.
    pub fn policy(&self) -> Policy<'_> {
        Policy { config: self }
    }
}

fn valid_ids() -> String {
    Check::ALL
        .iter()
        .map(|c| c.id())
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_check_id(id: &str, context: &str) -> Result<Check, String> {
    id.parse::<Check>().map_err(|()| {
        format!(
            "{context}: unknown check {id:?}; valid checks: {}",
            valid_ids()
        )
    })
}

fn parse_level(v: &Value, context: &str) -> Result<Level, String> {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{context}: expected error, warning, info or ignore, found {v}"))
}

pub(crate) fn parse_checks(v: &Value, config: &mut Config) -> Result<(), String> {
    let Value::Object(map) = v else {
        return Err("checks: expected a map of check ids".into());
    };
    for (id, setting) in map {
        let check = parse_check_id(id, "checks")?;
        let ctx = format!("checks.{id}");
        match setting {
            Value::String(_) => {
                config.levels.insert(check, parse_level(setting, &ctx)?);
            }
            Value::Object(opts) => {
                for (key, val) in opts {
                    if key == "level" {
                        config
                            .levels
                            .insert(check, parse_level(val, &format!("{ctx}.level"))?);
                        continue;
                    }
                    let options = options_of(check);
                    let Some(option) = options.iter().find(|o| o.key == key) else {
                        let mut all = vec!["level"];
                        all.extend(options.iter().map(|o| o.key));
                        return Err(format!(
                            "{ctx}: unknown option {key:?}; valid options: {}",
                            all.join(", ")
                        ));
                    };
                    let Some(b) = val.as_bool() else {
                        return Err(format!("{ctx}.{key}: expected true or false, found {val}"));
                    };
                    (option.set)(&mut config.options, b);
                }
            }
            other => return Err(format!("{ctx}: expected a level or a map, found {other}")),
        }
    }
    Ok(())
}

fn parse_paths(v: &Value) -> Result<Vec<std::path::PathBuf>, String> {
    let items = match v {
        Value::String(_) => vec![v.clone()],
        Value::Array(items) => items.clone(),
        _ => {
            return Err(format!(
                "requirements: expected a path or a list of paths, found {v}"
            ));
        }
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) if !s.is_empty() => Ok(std::path::PathBuf::from(s)),
            other => Err(format!("requirements: expected a path, found {other}")),
        })
        .collect()
}

fn parse_exceptions(v: &Value, config: &mut Config) -> Result<(), String> {
    let Value::Array(items) = v else {
        return Err("exceptions: expected a list".into());
    };
    const KEYS: &[&str] = &["crd", "version", "path", "check", "reason"];
    for (i, item) in items.iter().enumerate() {
        let ctx = format!("exceptions[{i}]");
        let Value::Object(m) = item else {
            return Err(format!("{ctx}: expected a map"));
        };
        if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!(
                "{ctx}: unknown key {k:?}; valid keys: {}",
                KEYS.join(", ")
            ));
        }
        // A non-string value must not silently widen the exception.
        if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
            return Err(format!("{ctx}.{k}: expected a string, found {v}"));
        }
        let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
        let crd = text("crd").ok_or_else(|| format!("{ctx}: crd is required"))?;
        let check_id = text("check").ok_or_else(|| format!("{ctx}: check is required"))?;
        let check = parse_check_id(&check_id, &ctx)?;
        let reason = text("reason")
            .filter(|r| !r.trim().is_empty())
            .ok_or_else(|| {
                format!("{ctx}: reason is required (say why this change is acceptable)")
            })?;
        config.exceptions.push(Exception {
            crd,
            version: text("version"),
            path: text("path").unwrap_or_else(|| "*".to_string()),
            check,
            reason,
        });
    }
    Ok(())
}

/// A finding accepted by an exception.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Excepted {
    /// The finding as it would have been reported.
    #[serde(flatten)]
    pub finding: Finding,
    /// The exception's reason.
    pub reason: String,
}

/// Applies levels, failMode and exceptions to raw findings.
pub struct Policy<'a> {
    config: &'a Config,
}

impl Policy<'_> {
    /// Splits one CRD's findings into reported and excepted ones.
    pub fn apply(&self, crd: &str, findings: Vec<Finding>) -> (Vec<Finding>, Vec<Excepted>) {
        let mut kept = Vec::new();
        let mut excepted = Vec::new();
        for mut f in findings {
            if f.check == Check::UnknownChange && self.config.fail_mode == FailMode::Open {
                f.severity = f.severity.min(Severity::Warning);
            }
            match self.config.levels.get(&f.check) {
                Some(Level::Ignore) => continue,
                Some(Level::Severity(s)) => f.severity = *s,
                None => {}
            }
            if let Some(e) = self.exception_for(crd, &f) {
                excepted.push(Excepted {
                    finding: f,
                    reason: e.reason.clone(),
                });
                continue;
            }
            kept.push(f);
        }
        (kept, excepted)
    }

    fn exception_for(&self, crd: &str, f: &Finding) -> Option<&Exception> {
        self.config.exceptions.iter().find(|e| {
            e.check == f.check
                && glob::matches(&e.crd, crd)
                && e.version
                    .as_ref()
                    .is_none_or(|v| f.version.as_deref() == Some(v.as_str()))
                && glob::matches(&e.path, f.path.as_deref().unwrap_or(""))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_option_sets_its_own_setting() {
        // Each option, alone, must change the options, and differently from
        // every other option: no option may silently set another's field.
        let mut seen: Vec<String> = Vec::new();
        let every_option = Check::ALL
            .iter()
            .flat_map(|&c| options_of(c).iter().map(move |o| (c, o.key)));
        for (check, key) in every_option {
            let text = format!("checks:\n  {}: {{{key}: false}}\n", check.id());
            let c = Config::parse(&text, "c.yaml").expect("valid option");
            let debug = format!("{:?}", c.options);
            assert_ne!(
                debug,
                format!("{:?}", Config::default().options),
                "{check:?}.{key}"
            );
            assert!(
                !seen.contains(&debug),
                "{check:?}.{key} sets what another option sets"
            );
            seen.push(debug);
        }
    }

    #[test]
    fn grade_by_objects_is_on_unless_the_file_turns_it_off() {
        assert!(!Config::default().keep_schema_grades);
        let off = Config::parse("gradeByObjects: false\n", "c.yaml").expect("valid");
        assert!(off.keep_schema_grades);
        let on = Config::parse("gradeByObjects: true\n", "c.yaml").expect("valid");
        assert!(!on.keep_schema_grades);
        let err = Config::parse("gradeByObjects: maybe\n", "c.yaml").unwrap_err();
        assert!(
            err.to_string()
                .contains("gradeByObjects: expected true or false")
        );
    }

    #[test]
    fn an_unknown_top_level_key_names_the_valid_ones() {
        let err = Config::parse("mdoe: warn\n", "c.yaml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: unknown key \"mdoe\"; valid keys: mode, failMode, kubeVersion, checks, exceptions, webhook, requirements, gradeByObjects"
        );
    }

    #[test]
    fn kube_version_reads_as_text_or_number() {
        let c = Config::parse("kubeVersion: \"1.31\"\n", "c.yaml").unwrap();
        assert_eq!(c.kube_version, KubeVersion { minor: 31 });
        let c = Config::parse("kubeVersion: 1.32\n", "c.yaml").unwrap();
        assert_eq!(c.kube_version, KubeVersion { minor: 32 });
        let err = Config::parse("kubeVersion: 2.0\n", "c.yaml").unwrap_err();
        assert!(
            err.to_string()
                .contains("kubeVersion: invalid Kubernetes version"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_check_id_names_the_valid_ones() {
        let err = Config::parse("checks:\n  enums: ignore\n", "c.yaml").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("c.yaml: checks: unknown check \"enums\"; valid checks: scope, "),
            "{msg}"
        );
        assert!(msg.contains("enum"));
    }

    #[test]
    fn an_exception_without_reason_is_refused() {
        let err = Config::parse("exceptions:\n- crd: a\n  check: enum\n", "c.yaml").unwrap_err();
        assert!(err.to_string().contains("reason is required"));
    }

    #[test]
    fn levels_options_and_modes_are_read() {
        let c = Config::parse(
            "mode: warn\nfailMode: open\nchecks:\n  description: ignore\n  enum: {level: warning, allowAdditions: false}\n",
            "c.yaml",
        )
        .unwrap();
        assert_eq!(c.mode, Mode::Warn);
        assert_eq!(c.fail_mode, FailMode::Open);
        assert_eq!(c.levels[&Check::Description], Level::Ignore);
        assert_eq!(c.levels[&Check::Enum], Level::Severity(Severity::Warning));
        assert!(!c.options.enum_allow_additions);
    }

    #[test]
    fn an_option_of_another_check_is_refused() {
        let err = Config::parse("checks:\n  type: {allowAdditions: true}\n", "c.yaml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: checks.type: unknown option \"allowAdditions\"; valid options: level"
        );
    }
}
