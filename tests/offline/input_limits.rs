//! Readers that stop: what a pull request's author can commit for a CI job
//! to read (links in a loop, a link to `/dev/zero`, a FIFO, a chart that
//! inflates to gigabytes, git blobs of the same, thousands of files), run
//! through the binary. Each is one line naming the path and the limit,
//! exit 2, and `--max-input-bytes` lets the same input through when it is
//! big on purpose.
//!
//! Every run has a deadline that kills the binary: it guards against a hang
//! (a reader that does not stop would otherwise hold the test forever), it
//! measures nothing.

use crate::support;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::sources::{chart_yaml, colored, git, write};

/// Far beyond what any of these runs takes (well under a second each);
/// only a reader that never stops reaches it.
const DEADLINE: Duration = Duration::from_secs(60);

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    /// The one error line, with the temp directory's path taken out.
    fn error(&self, dir: &Path) -> String {
        assert_eq!(self.code, 2, "{}{}", self.stdout, self.stderr);
        assert_eq!(self.stderr.lines().count(), 1, "{}", self.stderr);
        self.stderr
            .trim_end()
            .replace(&format!("{}/", dir.display()), "")
    }

    fn json(&self) -> Value {
        assert_eq!(self.code, 0, "{}{}", self.stdout, self.stderr);
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

/// The binary run in `dir`, fed `stdin`, killed at [`DEADLINE`].
fn run(dir: &Path, args: &[&str], stdin: Option<Vec<u8>>) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // The binary may stop reading at its cap: a broken pipe is expected.
    let feeder = child.stdin.take().zip(stdin).map(|(mut pipe, data)| {
        std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        })
    });
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the binary can be waited for") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} did not finish within {DEADLINE:?}: a reader that does not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    Out {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

fn widgets() -> String {
    colored("widgets", &["red"])
}

/// The CRDs a JSON report names, by source.
fn sources(report: &Value) -> Vec<String> {
    report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["newSource"].as_str().map(String::from))
        .collect()
}

// ---- directories -------------------------------------------------------------

/// Three links to `.` made the walk branch three ways at every level until
/// its old depth bound (3^32 paths: it never finished). Each directory is
/// now entered once, however many links lead to it; a link back to an
/// ancestor from below too. The chart walk is the same.
#[cfg(unix)]
#[test]
fn links_in_a_loop_are_followed_once() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    write(&d.join("crds/widgets.yaml"), &widgets());
    for link in ["l1", "l2", "l3"] {
        symlink(".", d.join("crds").join(link)).expect("link");
    }
    std::fs::create_dir_all(d.join("crds/sub")).expect("dir");
    symlink("..", d.join("crds/sub/up")).expect("link");
    let report = run(d, &["lint", "crds", "-o", "json"], None).json();
    assert_eq!(sources(&report), ["crds/widgets.yaml:1"]);

    write(&d.join("app/Chart.yaml"), &chart_yaml("app"));
    write(&d.join("app/crds/widgets.yaml"), &widgets());
    for link in ["l1", "l2", "l3"] {
        symlink(".", d.join("app").join(link)).expect("link");
    }
    let report = run(d, &["lint", "app", "-o", "json"], None).json();
    assert_eq!(sources(&report), ["app/crds/widgets.yaml:1"]);
}

/// The old walk stopped silently 32 levels down, dropping what was below;
/// now 64 levels are read and deeper is an error.
#[test]
fn directories_nest_64_deep_and_deeper_is_an_error() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    let deep = |levels: usize| "d/".repeat(levels);
    write(&d.join(format!("ok/{}widgets.yaml", deep(64))), &widgets());
    let report = run(d, &["lint", "ok", "-o", "json"], None).json();
    assert_eq!(sources(&report), [format!("ok/{}widgets.yaml:1", deep(64))]);

    write(&d.join(format!("no/{}widgets.yaml", deep(65))), &widgets());
    let out = run(d, &["lint", "no"], None);
    assert_eq!(
        out.error(d),
        format!(
            "error: no/{}: nested more than 64 directories deep, the most read of one source",
            deep(65).trim_end_matches('/')
        )
    );
}

/// A file linked to `/dev/zero` filled memory until the process died. Named
/// on its own it is read, up to the cap; met in a directory walk it is
/// refused as what it is, as is a FIFO (which blocked the walk for good).
#[cfg(unix)]
#[test]
fn a_device_stops_at_the_cap_and_a_walk_refuses_devices_and_fifos() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    write(&d.join("crds/widgets.yaml"), &widgets());
    symlink("/dev/zero", d.join("crds/zero.yaml")).expect("link");
    let out = run(d, &["lint", "crds/zero.yaml"], None);
    assert_eq!(
        out.error(d),
        "error: crds/zero.yaml: larger than 64 MiB, the most read of one file: raise it with \
         --max-input-bytes (now 64Mi)"
    );
    let out = run(
        d,
        &["lint", "crds/zero.yaml", "--max-input-bytes", "1Mi"],
        None,
    );
    assert_eq!(
        out.error(d),
        "error: crds/zero.yaml: larger than 1 MiB, the most read of one file: raise it with \
         --max-input-bytes (now 1Mi)"
    );
    let out = run(d, &["lint", "crds"], None);
    assert_eq!(
        out.error(d),
        "error: crds/zero.yaml: a character device, not a regular file: a directory is read for \
         regular files only (name it on its own to read it)"
    );

    std::fs::remove_file(d.join("crds/zero.yaml")).expect("link removed");
    let status = Command::new("mkfifo")
        .arg(d.join("crds/pipe.yaml"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let out = run(d, &["diff", "crds", "crds"], None);
    assert_eq!(
        out.error(d),
        "error: crds/pipe.yaml: a FIFO, not a regular file: a directory is read for regular \
         files only (name it on its own to read it)"
    );
}

/// Standard input, as `-` or as a path, is read as before, through the cap.
#[cfg(unix)]
#[test]
fn stdin_is_read_through_the_cap() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    let crd = widgets().into_bytes();
    for arg in ["-", "/dev/stdin"] {
        let report = run(d, &["lint", arg, "-o", "json"], Some(crd.clone())).json();
        assert_eq!(report["crds"].as_array().map(Vec::len), Some(1), "{arg}");
    }
    let mut large = crd.clone();
    large.extend(format!("---\n# {}\n", "x".repeat(64 << 10)).into_bytes());
    let out = run(d, &["lint", "-", "--max-input-bytes", "64Ki"], Some(large));
    assert_eq!(
        out.error(d),
        "error: <stdin>: larger than 64 KiB, the most read of one file: raise it with \
         --max-input-bytes (now 64Ki)"
    );
}

/// The files of one source are counted, and the flag raises the count
/// with the sizes.
#[test]
fn a_directory_holds_a_bounded_number_of_files() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    write(&d.join("crds/a.yaml"), &widgets());
    write(
        &d.join("crds/b.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
    );
    let out = run(d, &["lint", "crds", "--max-input-bytes", "4Ki"], None);
    assert_eq!(
        out.error(d),
        "error: crds/b.yaml: more than 1 file, the most read of one source (one per 4 KiB of \
         --max-input-bytes): raise it with --max-input-bytes (now 4Ki)"
    );
    let report = run(
        d,
        &["lint", "crds", "--max-input-bytes", "8Ki", "-o", "json"],
        None,
    )
    .json();
    assert_eq!(sources(&report), ["crds/a.yaml:1"]);
}

// ---- chart archives ------------------------------------------------------------

/// A packaged chart `NAME` with the widgets CRD and `extra` entries (path
/// below the chart, size), each streamed as zeros: small on disk however
/// large the entries.
fn packaged(path: &Path, name: &str, extra: &[(String, u64)]) {
    let file = std::fs::File::create(path).expect("archive is created");
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let mut add = |entry: &str, size: u64, data: &mut dyn std::io::Read| {
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("{name}/{entry}"), data)
            .expect("entry is written");
    };
    let chart = chart_yaml(name);
    add("Chart.yaml", chart.len() as u64, &mut chart.as_bytes());
    let crd = widgets();
    add("crds/widgets.yaml", crd.len() as u64, &mut crd.as_bytes());
    for (entry, size) in extra {
        add(entry, *size, &mut std::io::repeat(0).take(*size));
    }
    tar.into_inner()
        .and_then(|gz| gz.finish())
        .expect("archive is finished");
}

/// The bomb in small: an entry of 2 MiB of zeros against a cap
/// lowered to 1 MiB is refused from its header, before it is inflated;
/// raised, the same chart reads.
#[test]
fn an_archive_entry_larger_than_the_cap_is_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    packaged(
        &d.join("bomb.tgz"),
        "bomb",
        &[("files/zeros.bin".into(), 2 << 20)],
    );
    let out = run(d, &["lint", "bomb.tgz", "--max-input-bytes", "1Mi"], None);
    assert_eq!(
        out.error(d),
        "error: bomb.tgz: entry bomb/files/zeros.bin: larger than 1 MiB, the most read of one \
         file: raise it with --max-input-bytes (now 1Mi)"
    );
    let report = run(
        d,
        &["lint", "bomb.tgz", "--max-input-bytes", "2Mi", "-o", "json"],
        None,
    )
    .json();
    assert_eq!(sources(&report), ["bomb.tgz:bomb/crds/widgets.yaml:1"]);
}

/// With the default cap, an entry one byte over 64 MiB (a 64 KiB file:
/// zeros compress well).
#[test]
fn the_default_cap_refuses_an_entry_just_over_64_mib() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    packaged(
        &d.join("bomb.tgz"),
        "bomb",
        &[("files/zeros.bin".into(), (64 << 20) + 1)],
    );
    let out = run(d, &["lint", "bomb.tgz"], None);
    assert_eq!(
        out.error(d),
        "error: bomb.tgz: entry bomb/files/zeros.bin: larger than 64 MiB, the most read of one \
         file: raise it with --max-input-bytes (now 64Mi)"
    );
}

/// Entries that each fit, but not together; and many small ones.
#[test]
fn an_archive_holds_a_bounded_total_and_number_of_entries() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    let many = |n: usize, size: u64| -> Vec<(String, u64)> {
        (0..n)
            .map(|i| (format!("files/{i:04}.bin"), size))
            .collect()
    };
    packaged(&d.join("large.tgz"), "large", &many(5, 1 << 20));
    let out = run(d, &["lint", "large.tgz", "--max-input-bytes", "1Mi"], None);
    assert_eq!(
        out.error(d),
        "error: large.tgz: more than 4 MiB in all, the most read of one source (4 times \
         --max-input-bytes): raise it with --max-input-bytes (now 1Mi)"
    );
    packaged(&d.join("many.tgz"), "many", &many(300, 1));
    let out = run(d, &["lint", "many.tgz", "--max-input-bytes", "1Mi"], None);
    assert_eq!(
        out.error(d),
        "error: many.tgz: more than 256 files, the most read of one source (one per 4 KiB of \
         --max-input-bytes): raise it with --max-input-bytes (now 1Mi)"
    );
    for chart in ["large.tgz", "many.tgz"] {
        let out = run(d, &["lint", chart, "--max-input-bytes", "2Mi"], None);
        assert_eq!(out.code, 0, "{chart}: {}", out.stderr);
    }
}

// ---- git -----------------------------------------------------------------------

/// A repository whose `crds/` holds the widgets CRD and `others` (name,
/// text) committed as they are.
fn repository(others: &[(String, String)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    git(d, &["init", "-q"]);
    write(&d.join("crds/widgets.yaml"), &widgets());
    for (name, text) in others {
        write(&d.join("crds").join(name), text);
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "crds"]);
    tmp
}

fn config_map(name: &str, pad: usize) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{a: '{}'}}\n",
        "x".repeat(pad)
    )
}

#[test]
fn a_git_blob_larger_than_the_cap_is_refused() {
    let repo = repository(&[("big.yaml".into(), config_map("big", 100 << 10))]);
    let d = repo.path();
    let out = run(
        d,
        &["lint", "git:HEAD:crds", "--max-input-bytes", "64Ki"],
        None,
    );
    assert_eq!(
        out.error(d),
        "error: git:HEAD:crds: crds/big.yaml at HEAD: larger than 64 KiB, the most read of one \
         file: raise it with --max-input-bytes (now 64Ki)"
    );
    let out = run(
        d,
        &[
            "lint",
            "git:HEAD:crds/big.yaml",
            "--max-input-bytes",
            "64Ki",
        ],
        None,
    );
    assert_eq!(
        out.error(d),
        "error: git:HEAD:crds/big.yaml: crds/big.yaml at HEAD: larger than 64 KiB, the most read \
         of one file: raise it with --max-input-bytes (now 64Ki)"
    );
    let report = run(
        d,
        &[
            "lint",
            "git:HEAD:crds",
            "--max-input-bytes",
            "1Mi",
            "-o",
            "json",
        ],
        None,
    )
    .json();
    assert_eq!(sources(&report), ["git:HEAD:crds/widgets.yaml:1"]);
}

/// With the default cap: a blob one byte over 64 MiB, written straight
/// into the object database (git stores it compressed, about 64 KB), is
/// refused from its header, never inflated.
#[test]
fn the_default_cap_refuses_a_git_blob_just_over_64_mib() {
    let repo = repository(&[]);
    let d = repo.path();
    let mut hash = Command::new("git")
        .args(["hash-object", "-w", "--stdin"])
        .current_dir(d)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git runs");
    {
        let mut pipe = hash.stdin.take().expect("stdin is piped");
        std::io::copy(&mut std::io::repeat(0).take((64 << 20) + 1), &mut pipe)
            .expect("git reads the blob");
    }
    let out = hash.wait_with_output().expect("git finishes");
    assert!(out.status.success());
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    git(
        d,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{id},crds/zeros.yaml"),
        ],
    );
    git(d, &["commit", "-q", "-m", "zeros"]);
    let out = run(d, &["lint", "git:HEAD:crds"], None);
    assert_eq!(
        out.error(d),
        "error: git:HEAD:crds: crds/zeros.yaml at HEAD: larger than 64 MiB, the most read of one \
         file: raise it with --max-input-bytes (now 64Mi)"
    );
}

#[test]
fn a_git_tree_holds_a_bounded_number_of_files() {
    let others: Vec<(String, String)> = (0..16)
        .map(|i| {
            (
                format!("cm-{i:02}.yaml"),
                config_map(&format!("cm-{i:02}"), 0),
            )
        })
        .collect();
    let repo = repository(&others);
    let d = repo.path();
    // Seventeen manifests; the tree lists them by name, the CRD last.
    let out = run(
        d,
        &["lint", "git:HEAD:crds", "--max-input-bytes", "64Ki"],
        None,
    );
    assert_eq!(
        out.error(d),
        "error: git:HEAD:crds: crds/widgets.yaml at HEAD: more than 16 files, the most read of \
         one source (one per 4 KiB of --max-input-bytes): raise it with --max-input-bytes (now \
         64Ki)"
    );
    let report = run(d, &["lint", "git:HEAD:crds", "-o", "json"], None).json();
    assert_eq!(sources(&report), ["git:HEAD:crds/widgets.yaml:1"]);
}

/// `git` in `dir` with `input` on its stdin; its output, trimmed.
fn git_with_input(dir: &Path, args: &[&str], input: &str) -> String {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git runs");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("git reads its input");
    let out = child.wait_with_output().expect("git finishes");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Trees are shared by id: a tree listing one subtree sixteen times, ten
/// levels deep, is 16^10 paths of trees with nothing a walk keeps (only
/// `x.txt` at the bottom). Trees count as files, so the walk stops.
#[test]
fn a_git_tree_that_repeats_one_subtree_stops_at_the_count() {
    let repo = repository(&[]);
    let d = repo.path();
    let blob = git_with_input(d, &["hash-object", "-w", "--stdin"], "not a manifest\n");
    let mut tree = git_with_input(d, &["mktree"], &format!("100644 blob {blob}\tx.txt\n"));
    for _ in 0..10 {
        let listing: String = (b'a'..=b'p')
            .map(|c| format!("040000 tree {tree}\t{}\n", c as char))
            .collect();
        tree = git_with_input(d, &["mktree"], &listing);
    }
    let crds = git(d, &["rev-parse", "HEAD:crds/widgets.yaml"]);
    let crds = git_with_input(
        d,
        &["mktree"],
        &format!("040000 tree {tree}\td\n100644 blob {crds}\twidgets.yaml\n"),
    );
    let root = git_with_input(d, &["mktree"], &format!("040000 tree {crds}\tcrds\n"));
    let commit = git_with_input(d, &["commit-tree", &root, "-m", "repeated"], "");
    let source = format!("git:{commit}:crds");
    let out = run(d, &["lint", &source, "--max-input-bytes", "64Ki"], None);
    let error = out.error(d);
    assert!(
        error.starts_with(&format!("error: {source}: crds/d/a/a/a/")),
        "{error}"
    );
    assert!(
        error.ends_with(
            "more than 16 files, the most read of one source (one per 4 KiB of \
             --max-input-bytes): raise it with --max-input-bytes (now 64Ki)"
        ),
        "{error}"
    );
}

// ---- renderers -----------------------------------------------------------------

/// What `kubectl kustomize` prints is read like a file, through the cap.
#[test]
fn a_kustomization_renders_at_most_the_cap() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    write(
        &d.join("k/widgets.yaml"),
        &colored("widgets", &["red"]).replace(
            "            properties:\n",
            &format!(
                "            description: '{}'\n            properties:\n",
                "x".repeat(8 << 10)
            ),
        ),
    );
    write(
        &d.join("k/kustomization.yaml"),
        "resources:\n- widgets.yaml\n",
    );
    let out = run(
        d,
        &["lint", "kustomize:k", "--max-input-bytes", "4Ki"],
        None,
    );
    assert_eq!(
        out.error(d),
        "error: kustomize:k: the output of kubectl kustomize: larger than 4 KiB, the most read of \
         one file: raise it with --max-input-bytes (now 4Ki)"
    );
    let out = run(
        d,
        &["lint", "kustomize:k", "--max-input-bytes", "64Ki"],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

// ---- the files a run reads besides its manifests ----------------------------------

/// A directory holding the widgets CRD, and `zero.yaml` linked to
/// `/dev/zero`.
#[cfg(unix)]
fn with_zero() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    write(&d.join("crds/widgets.yaml"), &widgets());
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.yaml")).expect("link");
    tmp
}

/// The error of a file linked to `/dev/zero` read under `--max-input-bytes
/// 1Mi`: the manifests' words, naming the path and the limit.
const ZERO_OVER_1MI: &str = "zero.yaml: larger than 1 MiB, the most read of one file: raise it \
                             with --max-input-bytes (now 1Mi)";

/// `--requirements` (and a config file's `requirements:`) filled memory
/// from a file linked to `/dev/zero`, and ignored `--max-input-bytes`; now
/// they are read through the same cap as the manifests.
#[cfg(unix)]
#[test]
fn requirements_files_are_read_through_the_cap() {
    let tmp = with_zero();
    let d = tmp.path();
    let out = run(
        d,
        &[
            "lint",
            "crds",
            "--requirements",
            "zero.yaml",
            "--max-input-bytes",
            "1Mi",
        ],
        None,
    );
    assert_eq!(out.error(d), format!("error: {ZERO_OVER_1MI}"));
    write(&d.join("config.yaml"), "requirements:\n- zero.yaml\n");
    let out = run(
        d,
        &[
            "lint",
            "crds",
            "--config",
            "config.yaml",
            "--max-input-bytes",
            "1Mi",
        ],
        None,
    );
    assert_eq!(out.error(d), format!("error: {ZERO_OVER_1MI}"));
}

/// `--config` read the whole file whatever it was.
#[cfg(unix)]
#[test]
fn a_config_file_is_read_through_the_cap() {
    let tmp = with_zero();
    let d = tmp.path();
    let out = run(
        d,
        &[
            "lint",
            "crds",
            "--config",
            "zero.yaml",
            "--max-input-bytes",
            "1Mi",
        ],
        None,
    );
    assert_eq!(out.error(d), format!("error: {ZERO_OVER_1MI}"));
    // With the default cap, as the manifests have it.
    let out = run(d, &["diff", "crds", "crds", "--config", "zero.yaml"], None);
    assert_eq!(
        out.error(d),
        "error: zero.yaml: larger than 64 MiB, the most read of one file: raise it with \
         --max-input-bytes (now 64Mi)"
    );
}

/// `--baseline` read the whole file whatever it was.
#[cfg(unix)]
#[test]
fn a_baseline_is_read_through_the_cap() {
    let tmp = with_zero();
    let d = tmp.path();
    let out = run(
        d,
        &[
            "lint",
            "crds",
            "--baseline",
            "zero.yaml",
            "--max-input-bytes",
            "1Mi",
        ],
        None,
    );
    assert_eq!(out.error(d), format!("error: {ZERO_OVER_1MI}"));
}

/// `serve --config` read the file whole at start (and at every reload);
/// it stops at the cap, at start before it listens.
#[cfg(unix)]
#[test]
fn serves_config_file_is_read_through_the_cap() {
    let tmp = with_zero();
    let d = tmp.path();
    let out = run(
        d,
        &[
            "serve",
            "--config",
            "zero.yaml",
            "--max-input-bytes",
            "1Mi",
            "--tls-cert-file",
            "no-such.crt",
            "--tls-private-key-file",
            "no-such.key",
            "--listen",
            "127.0.0.1:0",
            // Read from no cluster before the configuration fails.
            "--server",
            "https://127.0.0.1:9",
            "--token",
            "unused",
        ],
        None,
    );
    assert_eq!(out.error(d), format!("error: {ZERO_OVER_1MI}"));
}
