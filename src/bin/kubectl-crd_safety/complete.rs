//! Shell completion. `completion SHELL` prints the script that completes
//! the binary itself (clap_complete). `__complete WORDS...` answers in
//! cobra's protocol, which kubectl (1.26+) speaks with plugins: for
//! `kubectl crd-safety <TAB>` it runs `kubectl_complete-crd_safety WORDS...`
//! (shipped next to the binary; it calls `__complete`) and reads one
//! candidate per line, then `:DIRECTIVE`.
//!
//! Subcommands and flags come from the command-line definition, the values
//! of `--context`, `--cluster` and `--user` from the kubeconfig, and the
//! CRD names of `migrate` from the cluster: those that still list more than
//! one stored version, read with a short timeout.

use std::time::Duration;

use clap::CommandFactory;
use crd_safety::cluster::{self, KubeFlags, kubeconfig};

use crate::cli::Cli;

/// Cobra's directives: what the shell does besides the candidates.
const DEFAULT: u32 = 0;
const NO_FILE: u32 = 4;

/// How long `migrate`'s CRD names may take: a completion that hangs is
/// worse than none.
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(3);

/// The script for `shell` completing `kubectl-crd_safety`.
pub fn script(shell: clap_complete::Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "kubectl-crd_safety", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The answer to `__complete WORDS...`, in cobra's format.
pub fn answer(words: &[String]) -> String {
    let (candidates, directive) = candidates(words);
    let mut out = String::new();
    for c in candidates {
        out.push_str(&c);
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

/// The value of `--flag VALUE` or `--flag=VALUE` among `words`.
fn flag_value<'a>(words: &'a [String], flag: &str) -> Option<&'a str> {
    let eq = format!("{flag}=");
    words.iter().enumerate().find_map(|(i, w)| {
        if let Some(v) = w.strip_prefix(&eq) {
            return Some(v);
        }
        (w == flag)
            .then(|| words.get(i + 1).map(String::as_str))
            .flatten()
    })
}

/// The connection flags among the words typed so far.
fn typed_kube_flags(words: &[String]) -> KubeFlags {
    KubeFlags {
        kubeconfig: flag_value(words, "--kubeconfig").map(Into::into),
        context: flag_value(words, "--context").map(Into::into),
        cluster: flag_value(words, "--cluster").map(Into::into),
        user: flag_value(words, "--user").map(Into::into),
        request_timeout: Some(CLUSTER_TIMEOUT),
        ..KubeFlags::default()
    }
}

fn candidates(words: &[String]) -> (Vec<String>, u32) {
    let Some((partial, before)) = words.split_last() else {
        return (Vec::new(), NO_FILE);
    };
    let root = Cli::command();
    let sub = before
        .iter()
        .find(|w| !w.starts_with('-'))
        .and_then(|w| root.find_subcommand(w));
    let Some(sub) = sub else {
        let names = root
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .filter(|n| n.starts_with(partial.as_str()))
            .collect();
        return (names, NO_FILE);
    };
    // `--flag=partial`, or `--flag partial`: a value of that flag.
    let (flag, value) = match partial.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (Some(f), v),
        _ => (before.last().map(String::as_str), partial.as_str()),
    };
    let prefix = |v: String| {
        if partial.contains('=') {
            format!("{}={v}", flag.unwrap_or_default())
        } else {
            v
        }
    };
    if let Some(arg) = flag.and_then(|f| {
        sub.get_arguments().find(|a| {
            a.get_action().takes_values()
                && (f
                    .strip_prefix("--")
                    .is_some_and(|l| a.get_long() == Some(l))
                    || f.strip_prefix('-').and_then(|s| s.chars().next()) == a.get_short()
                        && f.len() == 2)
        })
    }) {
        let id = arg.get_id().as_str();
        let named = |names: Vec<String>| {
            let found = names
                .into_iter()
                .filter(|n| n.starts_with(value))
                .map(prefix)
                .collect();
            (found, NO_FILE)
        };
        return match id {
            "context" | "cluster" | "user" => named(kubeconfig_names(before, id)),
            _ if !arg.get_possible_values().is_empty() => named(
                arg.get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_string())
                    .collect(),
            ),
            // Paths and everything else: the shell's own file completion.
            _ => (Vec::new(), DEFAULT),
        };
    }
    if partial.starts_with('-') {
        let flags = sub
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .filter(|l| l.starts_with(partial.as_str()))
            .collect();
        return (flags, NO_FILE);
    }
    match sub.get_name() {
        "migrate" => (crds_to_migrate(before, partial), NO_FILE),
        "checks" | "serve" => (Vec::new(), NO_FILE),
        // diff OLD NEW, lint PATH...: files.
        _ => (Vec::new(), DEFAULT),
    }
}

/// The contexts, clusters or users of the kubeconfig in force.
fn kubeconfig_names(words: &[String], what: &str) -> Vec<String> {
    let flags = KubeFlags {
        kubeconfig: flag_value(words, "--kubeconfig").map(Into::into),
        ..KubeFlags::default()
    };
    let Ok(config) = kubeconfig::load(&flags) else {
        return Vec::new();
    };
    match what {
        "context" => config.contexts.into_iter().map(|c| c.name).collect(),
        "cluster" => config.clusters.into_iter().map(|c| c.name).collect(),
        _ => config.auth_infos.into_iter().map(|u| u.name).collect(),
    }
}

/// CRDs that still list more than one stored version, from the cluster;
/// nothing when it does not answer in time.
fn crds_to_migrate(words: &[String], partial: &str) -> Vec<String> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let flags = typed_kube_flags(words);
    let listed = runtime.block_on(async {
        tokio::time::timeout(CLUSTER_TIMEOUT, async {
            let conn = cluster::connect(&flags).await.ok()?;
            conn.stored_versions_of_crds().await.ok()
        })
        .await
        .ok()
        .flatten()
    });
    let mut names: Vec<String> = listed
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, stored)| stored.len() > 1 && name.starts_with(partial))
        .map(|(name, _)| name)
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(words: &[&str]) -> (Vec<String>, u32) {
        candidates(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn subcommands_complete_from_their_prefix() {
        let (names, directive) = complete(&["ap"]);
        assert_eq!(names, ["apply-check", "apply"]);
        assert_eq!(directive, NO_FILE);
    }

    #[test]
    fn flags_of_the_subcommand_complete() {
        let (flags, _) = complete(&["apply-check", "--kube"]);
        assert_eq!(flags, ["--kubeconfig"]);
    }

    #[test]
    fn enumerated_values_complete_in_both_spellings() {
        let (values, _) = complete(&["diff", "a", "b", "-o", "sa"]);
        assert_eq!(values, ["sarif"]);
        let (values, _) = complete(&["diff", "--output=ya"]);
        assert_eq!(values, ["--output=yaml"]);
    }

    #[test]
    fn paths_are_left_to_the_shell() {
        assert_eq!(complete(&["diff", ""]).1, DEFAULT);
        assert_eq!(complete(&["apply-check", "-f", ""]).1, DEFAULT);
    }
}
