//! `helm crd-safety upgrade RELEASE CHART [FLAGS]` (the Helm plugin; also
//! `kubectl-crd_safety helm upgrade`): the flags are split between helm
//! upgrade's, which go to helm as typed, and apply-check's, which are
//! parsed as apply-check parses them. helm's own flags win a name both have
//! (`-f` is `--values`, as in `helm upgrade` and helm-diff; `-n` is the
//! release's namespace).

use clap::Parser;

use crd_safety::command::{Failure, helm_upgrade};
use crd_safety::manifest::{HelmUpgrade, Source};

use crate::cli::{Cli, Command, HelmUpgradeArgs};
use crate::live::{check, connect, runtime};
use crate::terminal::show;

/// helm upgrade's flags that take a value (`--flag VALUE` or
/// `--flag=VALUE`), and whether they also pick the release for `helm get`.
const HELM_VALUE_FLAGS: &[(&str, bool)] = &[
    ("-f", false),
    ("--values", false),
    ("--set", false),
    ("--set-string", false),
    ("--set-file", false),
    ("--set-json", false),
    ("--set-literal", false),
    ("--version", false),
    ("--repo", false),
    ("--username", false),
    ("--password", false),
    ("--ca-file", false),
    ("--cert-file", false),
    ("--key-file", false),
    ("--keyring", false),
    ("--post-renderer", false),
    ("--post-renderer-args", false),
    ("--description", false),
    ("--timeout", false),
    ("--registry-config", false),
    ("--repository-config", false),
    ("--repository-cache", false),
    ("-n", true),
    ("--namespace", true),
    ("--kube-context", true),
    ("--kubeconfig", true),
    ("--kube-apiserver", true),
    ("--kube-token", true),
    ("--kube-as-user", true),
    ("--kube-as-group", true),
    ("--kube-ca-file", true),
    ("--kube-tls-server-name", true),
];

/// helm upgrade's flags that take no value.
const HELM_SWITCHES: &[&str] = &[
    "--reuse-values",
    "--reset-values",
    "--reset-then-reuse-values",
    "--devel",
    "--insecure-skip-tls-verify",
    "--plain-http",
    "--pass-credentials",
    "--verify",
    "--skip-crds",
    "--disable-openapi-validation",
    "--skip-schema-validation",
    "--enable-dns",
    "-i",
    "--install",
    "--take-ownership",
    "--kube-insecure-skip-tls-verify",
];

/// The flags split: helm's (all of them; those that pick the release) and
/// the rest, apply-check's.
#[derive(Debug, Default, PartialEq, Eq)]
struct Split {
    helm: Vec<String>,
    release: Vec<String>,
    ours: Vec<String>,
}

fn split(flags: &[String]) -> Split {
    let mut out = Split::default();
    let mut rest = flags.iter();
    while let Some(flag) = rest.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v)),
            _ => (flag.as_str(), None),
        };
        if let Some(&(_, picks)) = HELM_VALUE_FLAGS.iter().find(|(n, _)| *n == name) {
            let mut taken = vec![flag.clone()];
            if inline.is_none()
                && let Some(value) = rest.next()
            {
                taken.push(value.clone());
            }
            if picks {
                out.release.extend(taken.iter().cloned());
            }
            out.helm.extend(taken);
        } else if HELM_SWITCHES.contains(&name) {
            out.helm.push(flag.clone());
        } else {
            out.ours.push(flag.clone());
        }
    }
    out
}

/// The cluster helm would use, as apply-check flags: what helm's own flags
/// and the environment helm gives a plugin (`HELM_KUBECONTEXT`, ...) say.
fn cluster_flags(release_flags: &[String], ours: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let given = |ours: &[String], flag: &str| {
        ours.iter()
            .any(|o| o == flag || o.starts_with(&format!("{flag}=")))
    };
    let mut from_helm = std::collections::BTreeMap::new();
    let mut flags = release_flags.iter();
    while let Some(flag) = flags.next() {
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (flag.clone(), flags.next().cloned()),
        };
        if let Some(v) = value {
            from_helm.insert(name, v);
        }
    }
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    // helm gives a plugin `--kubeconfig` as KUBECONFIG, which is read
    // anyway; the others in variables of its own.
    let pairs = [
        ("--kube-context", Some("HELM_KUBECONTEXT"), "--context"),
        ("--kubeconfig", None, "--kubeconfig"),
        ("--kube-apiserver", Some("HELM_KUBEAPISERVER"), "--server"),
        ("--kube-token", Some("HELM_KUBETOKEN"), "--token"),
        (
            "--kube-ca-file",
            Some("HELM_KUBECAFILE"),
            "--certificate-authority",
        ),
        ("--kube-as-user", Some("HELM_KUBEASUSER"), "--as"),
        (
            "--kube-tls-server-name",
            Some("HELM_KUBETLS_SERVER_NAME"),
            "--tls-server-name",
        ),
    ];
    for (helm_flag, var, ours_flag) in pairs {
        if given(ours, ours_flag) {
            continue;
        }
        if let Some(v) = from_helm
            .get(helm_flag)
            .cloned()
            .or_else(|| var.and_then(env))
        {
            out.push(format!("{ours_flag}={v}"));
        }
    }
    if !given(ours, "--insecure-skip-tls-verify")
        && env("HELM_KUBEINSECURE_SKIP_TLS_VERIFY").is_some_and(|v| v == "true")
    {
        out.push("--insecure-skip-tls-verify".into());
    }
    out
}

pub fn upgrade(args: HelmUpgradeArgs) -> Result<u8, Failure> {
    let split = split(&args.flags);
    let mut argv = vec![
        "kubectl-crd_safety".to_string(),
        "apply-check".into(),
        "-f".into(),
        "-".into(),
    ];
    argv.extend(cluster_flags(&split.release, &split.ours));
    argv.extend(split.ours.iter().cloned());
    let check_args = match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::ApplyCheck(a),
        }) => a,
        Ok(_) => return Err(Failure::Usage("helm upgrade: unexpected arguments".into())),
        Err(e) if e.use_stderr() => {
            let text = e.to_string();
            let line = text.lines().next().unwrap_or_default();
            let line = line.strip_prefix("error: ").unwrap_or(line);
            return Err(Failure::Usage(format!("helm crd-safety upgrade: {line}")));
        }
        // --help: apply-check's flags, which are the ones left to explain.
        Err(e) => e.exit(),
    };
    let spec = HelmUpgrade {
        release: args.release,
        chart: args.chart,
        flags: split.helm,
        release_flags: split.release,
    };
    let mut request = check_args.manifests()?;
    request.new = vec![Source::HelmUpgrade(spec.clone())];
    let new = helm_upgrade::load(&request)?;
    let checked = runtime()?.block_on(async {
        let conn = connect(&check_args.kube)
            .await?
            .with_field_manager(&check_args.field_manager);
        check(&conn, &request, &new, &check_args, Some(&spec)).await
    })?;
    let report = &checked.check.report;
    show(report, &check_args.report)?;
    Ok(report.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn helm_flags_go_to_helm_and_the_rest_to_apply_check() {
        let got = split(&strings(&[
            "-f",
            "values.yaml",
            "--objects",
            "--set=a=b",
            "--reuse-values",
            "-o",
            "json",
            "-n",
            "ops",
            "--version",
            "2.0.0",
            "--kube-context=prod",
        ]));
        assert_eq!(
            got,
            Split {
                helm: strings(&[
                    "-f",
                    "values.yaml",
                    "--set=a=b",
                    "--reuse-values",
                    "-n",
                    "ops",
                    "--version",
                    "2.0.0",
                    "--kube-context=prod",
                ]),
                release: strings(&["-n", "ops", "--kube-context=prod"]),
                ours: strings(&["--objects", "-o", "json"]),
            }
        );
    }

    #[test]
    fn the_release_s_context_becomes_the_check_s() {
        let flags = cluster_flags(&strings(&["--kube-context", "prod"]), &[]);
        assert!(flags.contains(&"--context=prod".to_string()), "{flags:?}");
        let flags = cluster_flags(
            &strings(&["--kube-context", "prod"]),
            &strings(&["--context=other"]),
        );
        assert!(
            !flags.iter().any(|f| f.starts_with("--context")),
            "{flags:?}"
        );
    }
}
