//! A memory limit for a process the tests start, as the chart's
//! `resources.limits.memory` puts one on `serve`'s pod: a cgroup of its
//! own (v2 where the memory controller is there, else v1's), which the
//! kernel holds the process to. Creating one needs the rights of root;
//! without them [`Limit::new`] says why and the caller measures peak RSS
//! instead.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A cgroup with a memory limit, removed when dropped.
pub struct Limit {
    dir: PathBuf,
    v2: bool,
}

impl Limit {
    /// A new cgroup named `name` (with this process's id) limited to
    /// `bytes`, or why there is none.
    pub fn new(name: &str, bytes: u64) -> Result<Limit, String> {
        let name = format!("{name}-{}", std::process::id());
        let unified = Path::new("/sys/fs/cgroup");
        let v2 = std::fs::read_to_string(unified.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"));
        let (dir, limit_file) = if v2 {
            (unified.join(&name), "memory.max")
        } else {
            (unified.join("memory").join(&name), "memory.limit_in_bytes")
        };
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let limit = Limit { dir, v2 };
        let write = |file: &str, value: &str| {
            std::fs::write(limit.dir.join(file), value)
                .map_err(|e| format!("cannot write {file}: {e}"))
        };
        write(limit_file, &bytes.to_string())?;
        if !v2 {
            // No swap to page out to: the limit is the limit.
            let _ = write("memory.swappiness", "0");
        }
        Ok(limit)
    }

    /// The file a process writes its pid to, to join the cgroup.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// How often the kernel killed a process of the cgroup for memory.
    pub fn oom_kills(&self) -> u64 {
        let (file, key) = if self.v2 {
            ("memory.events", "oom_kill")
        } else {
            ("memory.oom_control", "oom_kill")
        };
        std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The most the cgroup held at once, in bytes.
    pub fn peak(&self) -> u64 {
        let file = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Limit {
    fn drop(&mut self) {
        // Its processes are gone by now (the caller's Served drops first).
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The peak resident set of process `pid` (`VmHWM`), in bytes.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}
