//! `kubectl-crd_safety`: parse the command line, call the command's entry in
//! the library ([`crd_safety::command`]), and map what it returns to an exit
//! code ([`crd_safety::exit`]: 0 safe, 1 error findings or refused, 2 bad
//! input, 3 cluster error, 4 declined, 5 left half applied, 130
//! interrupted). What needs the terminal lives here: output, the question,
//! progress lines.
//!
//! This file only dispatches. [`cli`] holds the flags and [`options`] turns
//! them into the library's option types; [`offline`], [`live`], [`helm`],
//! [`migrate`], [`requirements`] and [`serve`] run one command or
//! group each; [`terminal`] is stdout,
//! colors, the question and progress lines; [`complete`] answers the shell.

mod cli;
mod complete;
mod helm;
mod live;
mod migrate;
mod offline;
mod options;
mod requirements;
mod serve;
mod terminal;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};
use terminal::emit;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tune_allocator(matches!(cli.command, Command::Serve(_)));
    let result = match cli.command {
        Command::Diff(args) => offline::diff(args),
        Command::Lint(args) => offline::lint(args),
        Command::ApplyCheck(args) => live::apply_check(args),
        Command::Apply(args) => live::apply(args),
        Command::Migrate(args) => migrate::migrate(args),
        Command::Serve(args) => serve::serve(args),
        Command::Require(args) => requirements::require(args),
        Command::Requirements(args) => requirements::requirements(args),
        Command::Helm(cli::HelmCommand::Upgrade(args)) => helm::upgrade(args),
        Command::Checks => offline::checks(),
        Command::Completion { shell } => emit(&complete::script(shell)).map(|()| 0),
        Command::Complete { words } => emit(&complete::answer(&words)).map(|()| 0),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("error: {f}");
            ExitCode::from(f.exit_code())
        }
    }
}

/// Asks glibc's allocator to grow its heaps 8 MiB at a time (`M_TOP_PAD`;
/// the default is 128 KiB). A `diff` builds its whole working set in a few
/// milliseconds on two threads, and growing the heap in small steps costs
/// page faults. Pages of the padding are never touched unless used
/// (figures: docs/BENCHMARKS.md, "What each speed trick buys").
///
/// `serve` also keeps to one arena (`M_ARENA_MAX`): its judgments run on
/// whichever blocking-pool thread is free, glibc gives each thread an
/// arena of its own (up to 8 per core), and each arena keeps what the
/// judgments on it freed, so the process grew to the sum of many arenas'
/// peaks; one arena takes no longer (figures: docs/BENCHMARKS.md, "One
/// malloc arena for `serve`").
#[allow(unsafe_code)]
fn tune_allocator(serving: bool) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets parameters of the allocator; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
        if serving {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = serving;
}
