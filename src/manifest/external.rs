//! Running the programs that render manifests (`helm template`,
//! `kubectl kustomize`): their output is read like a file, through the same
//! cap, and their failure becomes one line.

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Command, Stdio};

use super::input::{self, LimitError};

/// Why a renderer gave no output.
#[derive(Debug)]
pub enum RunError {
    /// The program is not on `PATH`.
    NotFound,
    /// It ran and failed; the line that says why.
    Failed(String),
    /// It printed more than `cap` bytes (it is stopped there).
    TooLarge(LimitError),
}

/// Of a renderer's stderr, what is kept for the reason of a failure; the
/// rest is read and dropped, so the program never blocks on a full pipe.
const STDERR_KEPT: u64 = 1 << 20;

/// Runs `program args...` and returns its standard output, which may hold
/// at most `cap` bytes: a template that loops, or a kustomization that
/// repeats a large resource, is stopped at the cap instead of filling
/// memory.
pub fn run<S: AsRef<OsStr>>(program: &str, args: &[S], cap: u64) -> Result<String, RunError> {
    let spawned = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(RunError::NotFound),
        Err(e) => return Err(RunError::Failed(format!("cannot run {program}: {e}"))),
    };
    let cannot = |e: std::io::Error| RunError::Failed(format!("cannot read from {program}: {e}"));
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let _ = (&mut pipe).take(STDERR_KEPT).read_to_end(&mut kept);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            kept
        })
    });
    let stdout = match child.stdout.take() {
        Some(pipe) => input::read_capped(pipe, 0, cap),
        None => Ok(Some(Vec::new())),
    };
    let stdout = match stdout {
        Ok(Some(out)) => out,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::TooLarge(LimitError::File { limit: cap }));
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(cannot(e));
        }
    };
    let status = child.wait().map_err(cannot)?;
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        return Err(RunError::Failed(reason(&stderr, &status)));
    }
    String::from_utf8(stdout)
        .map_err(|_| RunError::Failed(format!("{program} printed output that is not UTF-8")))
}

/// The line of a renderer's stderr that explains the failure: the first
/// `Error:`/`error:` line (helm and kubectl print one), else the last line.
fn reason(stderr: &str, status: &std::process::ExitStatus) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .find(|l| l.starts_with("Error:") || l.starts_with("error:"))
        .or(lines.last());
    match line {
        Some(l) => l
            .trim_start_matches("Error:")
            .trim_start_matches("error:")
            .trim()
            .to_string(),
        None => format!("exited with {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_line_is_picked_from_stderr() {
        let status = Command::new("false").status().unwrap();
        let stderr =
            "walk.go:74: found symbolic link\nError: template: c/templates/a.yaml:3: bad\n";
        assert_eq!(
            reason(stderr, &status),
            "template: c/templates/a.yaml:3: bad"
        );
        assert_eq!(reason("only this\n", &status), "only this");
        assert!(reason("", &status).starts_with("exited with"));
    }
}
