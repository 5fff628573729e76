//! Running the plugin binary the way a user would, with a fixed,
//! colorless terminal.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

/// What one run printed and returned.
#[derive(Debug)]
pub struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Standard output as JSON; a failure shows both streams. A report or
    /// a migration plan is held to the output contract on the way.
    pub fn json(&self) -> Value {
        let value: Value = serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        });
        if value.get("crds").is_some() {
            super::contract::assert_holds(&value);
        }
        value
    }
}

/// Runs `kubectl-crd_safety args` in the repository root, feeding `stdin`.
pub fn run(args: &[&str], stdin: Option<&str>) -> Run {
    run_in_columns(120, args, stdin)
}

/// [`run`] in a terminal `columns` wide.
pub fn run_in_columns(columns: u16, args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"));
    cmd.args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env("COLUMNS", columns.to_string())
        .env_remove("KUBECONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the binary starts");
    {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes())
                .expect("stdin accepts the input");
        }
    }
    let out = child.wait_with_output().expect("the binary finishes");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
