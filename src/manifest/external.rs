//! Running the programs that render manifests (`helm template`,
//! `kubectl kustomize`): their output is read like a file, their failure
//! becomes one line.

use std::ffi::OsStr;
use std::process::Command;

/// Why a renderer gave no output.
#[derive(Debug)]
pub enum RunError {
    /// The program is not on `PATH`.
    NotFound,
    /// It ran and failed; the line that says why.
    Failed(String),
}

/// Runs `program args...` and returns its standard output.
pub fn run<S: AsRef<OsStr>>(program: &str, args: &[S]) -> Result<String, RunError> {
    let out = match Command::new(program).args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(RunError::NotFound),
        Err(e) => return Err(RunError::Failed(format!("cannot run {program}: {e}"))),
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(RunError::Failed(reason(&stderr, &out.status)));
    }
    String::from_utf8(out.stdout)
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
