//! `kubectl-crd_safety`: parse the command line, call the command's entry in
//! the library ([`crd_safety::command`]), and map what it returns to an exit
//! code ([`crd_safety::exit`]: 0 safe, 1 error findings or refused, 2 bad
//! input, 3 cluster error, 4 declined, 130 interrupted). What needs the
//! terminal lives here: output, the question, progress lines.

mod cli;
mod complete;

use std::cell::OnceCell;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

use cli::{
    ApplyArgs, ApplyCheckArgs, ChangeOutput, Cli, ColorChoice, Command, DataOutput, DiffArgs,
    LintArgs, MigrateArgs, OutputFormat, ReportArgs, RequireArgs, RequirementsArgs, ServeArgs,
    SourceArgs,
};
use crd_safety::change::migrate::{self, PlanOptions, RunOptions};
use crd_safety::change::{Answer, Confirm, Question};
use crd_safety::cluster::{self, KubeFlags};
use crd_safety::command::{self, Baselines, Failure, apply_check};
use crd_safety::compare::Check;
use crd_safety::config::Config;
use crd_safety::engine::StoredVersionsArg;
use crd_safety::live_check::{CheckOptions, Step};
use crd_safety::manifest::{HelmOptions, ManifestSet, Positions, Source, SourceOptions};
use crd_safety::report::{
    Report, TableOptions, render_github, render_markdown, render_migration_outcome,
    render_migration_plan, render_outcomes, render_sarif, render_table, retries_line,
};
use crd_safety::scan::{Progress, ScanOptions};

fn main() -> ExitCode {
    tune_allocator();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Diff(args) => run_diff(args),
        Command::Lint(args) => run_lint(args),
        Command::ApplyCheck(args) => run_apply_check(args),
        Command::Apply(args) => run_apply(args),
        Command::Migrate(args) => run_migrate(args),
        Command::Serve(args) => run_serve(args),
        Command::Require(args) => run_require(args),
        Command::Requirements(args) => run_requirements(args),
        Command::Checks => print_checks(),
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
/// page faults. Measured 2026-11-26 with it removed, medians of 9 runs
/// against this build: `diff -o json` of the five largest corpus pairs
/// 4-17% slower (argocds 1.11x, prometheuses 1.17x), a directory 5%;
/// peak RSS about 1-2 MB higher with it. Pages of the padding are never
/// touched unless used.
#[allow(unsafe_code)]
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a parameter of the allocator; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
    }
}

/// Writes to stdout; a closed pipe (`| head`) is a normal end, not an error.
fn emit(text: &str) -> Result<(), Failure> {
    emit_with(|out| out.write_all(text.as_bytes()))
}

/// Writes to stdout through a buffer; a reader that went away (`| head`)
/// is not an error.
fn emit_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::Output(e)),
    }
}

/// The configuration file, with `--mode` and `--fail-mode` over it.
fn load_config(args: &ReportArgs) -> Result<Config, Failure> {
    let mut config = Config::discover(args.config.as_deref())?;
    if let Some(mode) = args.mode {
        config.mode = mode;
    }
    if let Some(fail_mode) = args.fail_mode {
        config.fail_mode = fail_mode;
    }
    if !args.requirements.is_empty() {
        config.requirements = args.requirements.clone();
    }
    Ok(config)
}

fn baselines(args: &ReportArgs) -> Baselines {
    Baselines {
        accept: args.baseline.clone(),
        write: args.write_baseline.clone(),
    }
}

/// Tells the user that `--write-baseline` wrote its file.
fn told_baseline(written: Option<usize>, args: &ReportArgs) {
    if let (Some(count), Some(path)) = (written, &args.write_baseline) {
        eprintln!(
            "wrote {} to the baseline {}",
            crd_safety::text::plural(count, "finding", "findings"),
            path.display()
        );
    }
}

fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    }
}

fn table_width() -> u16 {
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<u16>().ok())
    {
        return w.max(60);
    }
    if std::io::stdout().is_terminal()
        && let Some(w) = comfy_table::Table::new().width()
    {
        return w.max(60);
    }
    140
}

/// Shows the report on stdout in the chosen format. JSON is written as it
/// is serialized; the other formats are built as text first.
fn show(report: &Report, args: &ReportArgs) -> Result<(), Failure> {
    if args.output == OutputFormat::Json {
        return emit_with(|mut out| report.write_json(&mut out));
    }
    emit(&render(report, args))
}

fn render(report: &Report, args: &ReportArgs) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    match args.output {
        OutputFormat::Table | OutputFormat::Wide => render_table(
            report,
            TableOptions {
                color: use_color(args.color),
                width: table_width(),
                show_info: args.show_info,
                wide: args.output == OutputFormat::Wide,
                cwd: Some(&cwd),
            },
        ),
        OutputFormat::Json => report.to_json() + "\n",
        OutputFormat::Yaml => report.to_yaml(),
        OutputFormat::Markdown => render_markdown(report),
        OutputFormat::Sarif => render_sarif(report, &cwd),
        OutputFormat::Github => render_github(report, &cwd),
    }
}

/// The structured output of `apply` and `migrate`, as pretty JSON or YAML.
fn render_structured(output: &impl serde::Serialize, yaml: bool) -> Result<String, Failure> {
    let failed = |e: &dyn std::fmt::Display| Failure::Serialize(e.to_string());
    let value = serde_json::to_value(output).map_err(|e| failed(&e))?;
    if yaml {
        serde_saphyr::to_string(&value).map_err(|e| failed(&e))
    } else {
        serde_json::to_string_pretty(&value)
            .map(|text| text + "\n")
            .map_err(|e| failed(&e))
    }
}

fn run_diff(args: DiffArgs) -> Result<u8, Failure> {
    let mut config = load_config(&args.report)?;
    if let Some(v) = args.kube_version {
        config.kube_version = v;
        config.kube_version_source = crd_safety::crd_validation::KubeVersionSource::Flag;
    }
    let mut stored = StoredVersionsArg::default();
    for v in &args.stored_versions {
        stored.add(v).map_err(Failure::Usage)?;
    }
    let request = command::diff::Request {
        old: parse_sources([args.old.as_str()])?,
        new: parse_sources([args.new.as_str()])?,
        sources: source_options(&args.sources, &args.report),
        stored,
        config,
        baselines: baselines(&args.report),
    };
    let diffed = command::diff::run(&request)?;
    told_baseline(diffed.baseline_written, &args.report);
    show(&diffed.report, &args.report)?;
    let code = diffed.report.exit_code();
    // The process ends now: see `Diffed::manifests` for why they are leaked.
    std::mem::forget(diffed);
    Ok(code)
}

/// The sources as typed (`-`, a path, `git:REF:PATH`, `kustomize:DIR`).
fn parse_sources<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Vec<Source>, Failure> {
    args.into_iter()
        .map(|a| Source::parse(a).map_err(Failure::from))
        .collect()
}

fn source_options(args: &SourceArgs, report: &ReportArgs) -> SourceOptions {
    SourceOptions {
        positions: if places_findings(report.output) {
            Positions::Recorded
        } else {
            Positions::Never
        },
        ..source_options_of(args)
    }
}

/// How git revisions, charts and kustomizations are read, from their flags.
fn source_options_of(args: &SourceArgs) -> SourceOptions {
    SourceOptions {
        repo: args.repo.clone(),
        helm: HelmOptions {
            values: args.helm_values.clone(),
            set: args.helm_set.clone(),
            require: args.require_helm,
        },
        positions: Positions::default(),
    }
}

/// Formats that show where each finding is (file, line, column).
fn places_findings(output: OutputFormat) -> bool {
    matches!(
        output,
        OutputFormat::Json | OutputFormat::Yaml | OutputFormat::Sarif | OutputFormat::Github
    )
}

/// `lint`: the new side alone, as if nothing were installed yet.
fn run_lint(args: LintArgs) -> Result<u8, Failure> {
    let mut config = load_config(&args.report)?;
    if let Some(v) = args.kube_version {
        config.kube_version = v;
        config.kube_version_source = crd_safety::crd_validation::KubeVersionSource::Flag;
    }
    let request = command::Manifests {
        new: parse_sources(args.paths.iter().map(String::as_str))?,
        sources: source_options(&args.sources, &args.report),
        config,
        baselines: baselines(&args.report),
    };
    let linted = command::lint::run(&request)?;
    told_baseline(linted.baseline_written, &args.report);
    show(&linted.report, &args.report)?;
    Ok(linted.report.exit_code())
}

fn kube_flags(args: &cli::KubeArgs) -> KubeFlags {
    KubeFlags {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
        cluster: args.cluster.clone(),
        user: args.user.clone(),
        // kubectl reads 0 as "no limit".
        request_timeout: args.request_timeout.filter(|t| !t.is_zero()),
        server: args.server.clone(),
        token: args.token.clone(),
        certificate_authority: args.certificate_authority.clone(),
        client_certificate: args.client_certificate.clone(),
        client_key: args.client_key.clone(),
        insecure_skip_tls_verify: args.insecure_skip_tls_verify,
        tls_server_name: args.tls_server_name.clone(),
        impersonate: args.as_user.clone(),
        impersonate_groups: args.as_group.clone(),
        impersonate_uid: args.as_uid.clone(),
    }
}

/// Connects as kubectl would; with `-v 6` or more, each request to the API
/// server is printed on stderr (never its headers or body, so never a
/// credential).
async fn connect(args: &cli::KubeArgs) -> Result<cluster::Connection, Failure> {
    let conn = cluster::connect(&kube_flags(args)).await?;
    if args.verbosity >= 6 {
        conn.on_request(|trace| eprintln!("request: {trace}"));
    }
    Ok(conn)
}

/// The runtime of the live commands: one thread is plenty for a client.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failure::Runtime)
}

/// What `apply-check` and `apply` read, from their flags.
fn check_request(args: &ApplyCheckArgs) -> Result<command::Manifests, Failure> {
    let mut new = parse_sources(args.filenames.iter().map(String::as_str))?;
    new.extend(args.kustomize.iter().cloned().map(Source::Kustomize));
    Ok(command::Manifests {
        new,
        sources: source_options(&args.sources, &args.report),
        config: load_config(&args.report)?,
        baselines: baselines(&args.report),
    })
}

/// `serve`: the admission webhook, on a multi-threaded runtime (reviews
/// of large CRDs run side by side), until SIGTERM or Ctrl-C.
fn run_serve(args: ServeArgs) -> Result<u8, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Failure::Runtime)?;
    runtime.block_on(async {
        let conn = connect(&args.kube).await?;
        let opts = crd_safety::webhook::ServeOptions {
            listen: args.listen,
            cert_file: args.tls_cert_file.clone(),
            key_file: args.tls_private_key_file.clone(),
            client_ca_file: args.client_ca_file.clone(),
            config_file: args.config.clone(),
            reload_interval: args.reload_interval,
            max_body_bytes: args.max_body_bytes,
            shutdown_delay: args.shutdown_delay,
            drain_timeout: args.drain_timeout,
            header_read_timeout: args.header_read_timeout,
            body_read_timeout: args.body_read_timeout,
            max_connections: args.max_connections,
        };
        crd_safety::webhook::serve(conn, opts, terminated()).await?;
        Ok(0)
    })
}

/// Completes on SIGTERM (the kubelet stopping the pod) or Ctrl-C.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn run_apply_check(args: ApplyCheckArgs) -> Result<u8, Failure> {
    let request = check_request(&args)?;
    let new = apply_check::load(&request)?;
    let checked = runtime()?.block_on(async {
        let conn = connect(&args.kube).await?;
        live_check(&conn, &request, &new, &args).await
    })?;
    let report = &checked.check.report;
    show(report, &args.report)?;
    Ok(report.exit_code())
}

/// Runs the live check, with the object scan and a progress line when
/// asked.
async fn live_check(
    conn: &cluster::Connection,
    request: &command::Manifests,
    new: &ManifestSet,
    args: &ApplyCheckArgs,
) -> Result<apply_check::Checked, Failure> {
    // A progress line on a terminal: the dry runs over the bundle's CRDs,
    // then the object scans.
    let bar = terminal_bar(indicatif::ProgressBar::new_spinner(), SPINNER);
    show_retries(conn, bar.as_ref());
    let progress = |step: Step<'_>| {
        let Some(bar) = &bar else { return };
        let message = match step {
            Step::DryRun { done, total } => format!(
                "server-side dry run: {done} of {}",
                crd_safety::text::plural(total, "CRD", "CRDs")
            ),
            Step::Scan(p) => {
                let total = p.total.map(|t| format!(" of ~{t}")).unwrap_or_default();
                format!(
                    "scanning {} {}: {} objects{total}",
                    p.crd, p.version, p.scanned
                )
            }
        };
        bar.set_message(format!("{message}{}", retries_so_far(conn)));
        bar.tick();
    };
    let options = CheckOptions {
        concurrency: usize::from(args.concurrency),
        scan: args.objects.then(|| ScanOptions {
            chunk_size: args.chunk_size,
            max_examples: args.max_examples,
            namespace: args.namespace.clone(),
            ..ScanOptions::default()
        }),
        progress: &progress,
    };
    let result = apply_check::run(conn, request, new, &options).await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    show_retries(conn, None);
    let checked = result?;
    told_baseline(checked.baseline_written, &args.report);
    Ok(checked)
}

/// Marks where the retry note starts in a progress message.
const RETRY_MARK: &str = "  | retrying ";

/// Shows every retry as it happens: on the progress line when there is
/// one, else as a warning line on stderr.
fn show_retries(conn: &cluster::Connection, bar: Option<&indicatif::ProgressBar>) {
    let bar = bar.cloned();
    conn.on_retry(move |notice| match &bar {
        Some(bar) => {
            let message = bar.message();
            let base = message.split(RETRY_MARK).next().unwrap_or_default();
            bar.set_message(format!("{base}{RETRY_MARK}{notice}"));
            bar.tick();
        }
        None => eprintln!("warning: {notice}"),
    });
}

/// `, 3 retries` for a progress line, once there are any.
fn retries_so_far(conn: &cluster::Connection) -> String {
    match conn.retries() {
        0 => String::new(),
        1 => ", 1 retry".to_string(),
        n => format!(", {n} retries"),
    }
}

fn run_apply(args: ApplyArgs) -> Result<u8, Failure> {
    let request = check_request(&args.check)?;
    let new = apply_check::load(&request)?;
    let report_args = &args.check.report;
    let structured = matches!(report_args.output, OutputFormat::Json | OutputFormat::Yaml);
    runtime()?.block_on(async {
        let conn = connect(&args.check.kube).await?;
        let checked = live_check(&conn, &request, &new, &args.check).await?;
        let report = &checked.check.report;
        if !structured {
            show(report, report_args)?;
        }
        let apply = command::apply::Request {
            yes: args.yes,
            force: args.force,
            force_conflicts: args.force_conflicts,
            wait: args.wait_timeout,
            concurrency: usize::from(args.check.concurrency),
        };
        let run = command::apply::run(&conn, &checked.check, apply, &mut TerminalConfirm).await?;
        if let Some(message) = &run.decided.message {
            eprintln!("{message}");
        }
        if structured {
            let output = command::apply::Output::new(report, &run);
            emit(&render_structured(
                &output,
                report_args.output == OutputFormat::Yaml,
            )?)?;
        } else if run.decided.decision.went_ahead() {
            let mut outcomes =
                render_outcomes(&conn.context, &run.results, use_color(report_args.color));
            if run.retries > 0 {
                outcomes.push_str(&format!("{}\n", retries_line(run.retries)));
            }
            // SARIF and workflow commands stay machine-readable on stdout.
            if matches!(
                report_args.output,
                OutputFormat::Sarif | OutputFormat::Github
            ) {
                eprint!("{outcomes}");
            } else {
                emit(&outcomes)?;
            }
        }
        Ok(run.decided.decision.exit_code())
    })
}

/// Asks the user on the terminal (stderr), default No. Without a terminal
/// there is nobody to ask, which the library turns into a refusal.
struct TerminalConfirm;

impl Confirm for TerminalConfirm {
    fn confirm(&mut self, question: &Question) -> Result<Answer, String> {
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Ok(Answer::NoTerminal);
        }
        eprint!("{}", question.text());
        match dialoguer::Confirm::new()
            .with_prompt(question.prompt.clone())
            .default(false)
            .interact_opt()
        {
            Ok(Some(true)) => Ok(Answer::Yes),
            // Esc or q: no answer is a no.
            Ok(Some(false) | None) => Ok(Answer::No),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The check's progress line.
const SPINNER: &str = "{spinner} {msg} [{elapsed}]";

/// What Ctrl-C during the rewrite prints.
const INTERRUPTED: &str =
    "\ninterrupted: finishing the writes in flight; storedVersions stays as it is";

fn run_migrate(args: MigrateArgs) -> Result<u8, Failure> {
    let structured = args.output != ChangeOutput::Table;
    let color = use_color(args.color);
    runtime()?.block_on(async {
        let conn = connect(&args.kube).await?;
        let options = PlanOptions {
            // Every object must be rewritten: never narrowed to a namespace.
            scan: ScanOptions {
                chunk_size: args.chunk_size,
                max_examples: args.max_examples,
                namespace: None,
                ..ScanOptions::default()
            },
            by_namespace: args.by_namespace,
            allow_pruning: args.allow_pruning,
            engine: args.engine,
        };
        let spinner = terminal_bar(indicatif::ProgressBar::new_spinner(), SPINNER);
        show_retries(&conn, spinner.as_ref());
        let mut progress = |p: Progress<'_>| {
            if let Some(bar) = &spinner {
                bar.set_message(format!(
                    "checking {} in {}: {} objects{}",
                    p.crd,
                    p.version,
                    p.scanned,
                    retries_so_far(&conn)
                ));
                bar.tick();
            }
        };
        let planned = command::migrate::plan(&conn, &args.crds, options, &mut progress).await;
        if let Some(bar) = &spinner {
            bar.finish_and_clear();
        }
        show_retries(&conn, None);
        let plan = planned?;
        if !structured {
            emit(&render_migration_plan(
                &plan,
                TableOptions {
                    color,
                    width: table_width(),
                    show_info: false,
                    wide: false,
                    cwd: None,
                },
            ))?;
        }
        // Once the answer is yes: Ctrl-C stops the run cleanly instead of
        // killing it, and a bar counts the objects.
        let stop = Arc::new(AtomicBool::new(false));
        let bar = OnceCell::new();
        let mut started = || {
            let flag = Arc::clone(&stop);
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    flag.store(true, Ordering::SeqCst);
                    eprintln!("{INTERRUPTED}");
                }
            });
            let total: u64 = plan.crds.iter().filter_map(|c| c.objects).sum();
            let drawn = terminal_bar(
                indicatif::ProgressBar::new(total),
                "{msg} [{bar:30}] {pos}/{len} {rate} ETA {eta}",
            );
            show_retries(&conn, drawn.as_ref());
            let _ = bar.set(drawn);
        };
        let mut before = 0u64;
        let mut current = String::new();
        let mut tick = |p: migrate::RewriteProgress<'_>| {
            if let Some(bar) = bar.get().and_then(Option::as_ref) {
                if current != p.crd {
                    before = bar.position();
                    current = p.crd.to_string();
                    bar.set_message(format!("rewriting {}", p.crd));
                }
                bar.set_position(before + p.done);
            }
        };
        let request = command::migrate::Request {
            dry_run: args.dry_run,
            yes: args.yes,
            run: RunOptions {
                chunk_size: args.chunk_size,
                concurrency: usize::from(args.concurrency),
                server: migrate::ServerWait {
                    pickup: args.server_wait,
                    poll: std::time::Duration::from_secs(1),
                },
            },
        };
        let hooks = command::migrate::Hooks {
            started: &mut started,
            progress: &mut tick,
            stop: &stop,
        };
        let run = command::migrate::run(&conn, &plan, request, &mut TerminalConfirm, hooks).await;
        if let Some(bar) = bar.get().and_then(Option::as_ref) {
            bar.finish_and_clear();
        }
        show_retries(&conn, None);
        let run = run?;
        if let Some(message) = &run.decided.message {
            eprintln!("{message}");
        }
        if structured {
            let output = command::migrate::Output::new(&plan, &run);
            emit(&render_structured(
                &output,
                args.output == ChangeOutput::Yaml,
            )?)?;
        } else if run.decided.decision.went_ahead() {
            emit(&render_migration_outcome(
                &conn.context,
                &run.results,
                color,
            ))?;
        }
        Ok(run.decided.decision.exit_code())
    })
}

/// `bar` with `template`, drawn on stderr, when stderr is a terminal.
fn terminal_bar(bar: indicatif::ProgressBar, template: &str) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let style = indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        // `{per_sec}` shows four decimals (`41.9873/s`); a rate is read whole.
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        );
    bar.set_style(style);
    Some(bar)
}

/// `require`: writes a requirement from the installed CRD or a file's.
fn run_require(args: RequireArgs) -> Result<u8, Failure> {
    let request = command::require::Request {
        draft: crd_safety::requirement::Draft {
            name: args.name.clone(),
            owner: args.owner.clone(),
            contact: args.contact.clone(),
            versions: args.versions.clone(),
            fields: args.fields.clone(),
            excluded: args.exclude.clone(),
            action: args.action,
        },
        crd: args.crd.clone(),
        fields_from: parse_sources(args.fields_from.iter().map(String::as_str))?,
        sources: SourceOptions {
            positions: Positions::Never,
            ..source_options_of(&args.sources)
        },
    };
    let crd = if args.from == "cluster" {
        runtime()?.block_on(async {
            let conn = connect(&args.kube).await?;
            command::require::pinned_from_cluster(&conn, &request).await
        })?
    } else {
        command::require::pinned_from_files(&request, &parse_sources([args.from.as_str()])?)?
    };
    let document = command::require::write(&request, crd)?;
    emit(&render_structured(
        &document,
        args.output == DataOutput::Yaml,
    )?)?;
    Ok(0)
}

/// `requirements`: each requirement's state against the cluster, or
/// against `-f` manifests.
fn run_requirements(args: RequirementsArgs) -> Result<u8, Failure> {
    let mut config = Config::discover(args.config.as_deref())?;
    if !args.requirements.is_empty() {
        config.requirements = args.requirements.clone();
    }
    if config.requirements.is_empty() {
        return Err(Failure::Usage(
            "no requirements: give --requirements PATH, or `requirements` in the config file"
                .into(),
        ));
    }
    let requirements = crd_safety::requirement::load(&config.requirements)?;
    let states = if args.filenames.is_empty() {
        runtime()?.block_on(async {
            let conn = connect(&args.kube).await?;
            command::requirements::against_cluster(&conn, &requirements).await
        })?
    } else {
        let sources = parse_sources(args.filenames.iter().map(String::as_str))?;
        let new = crd_safety::manifest::load_with(&sources, &source_options_of(&args.sources))?;
        let label = args.filenames.join(", ");
        command::requirements::against_files(&requirements, &new, label)
    };
    let text = match args.output {
        ChangeOutput::Table => crd_safety::requirement::render_states(&states, args.show_info),
        ChangeOutput::Json => render_structured(&states, false)?,
        ChangeOutput::Yaml => render_structured(&states, true)?,
    };
    emit(&text)?;
    Ok(states.exit_code())
}

fn print_checks() -> Result<u8, Failure> {
    let mut text = String::new();
    for c in Check::ALL {
        text.push_str(&format!(
            "{:<22} {:<8} {}\n",
            c.id(),
            c.default_severity().as_str(),
            c.summary()
        ));
    }
    emit(&text)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crd_safety::cluster::RetryNotice;
    use std::time::Duration;

    #[tokio::test]
    async fn the_progress_line_shows_the_latest_retry_and_the_count() {
        let never = tower::service_fn(|_: http::Request<kube::client::Body>| async {
            Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("unused"))
        });
        let conn = cluster::Connection::from_client(
            kube::Client::new(never, "default"),
            "test",
            "http://test",
        );
        let bar = indicatif::ProgressBar::hidden();
        bar.set_message("scanning widgets v1: 500 objects");
        show_retries(&conn, Some(&bar));
        for retry in 1..=2 {
            conn.note_retry(&RetryNotice {
                request: "LIST example.com/v1 widgets".into(),
                cause: "503 Service Unavailable".into(),
                retry,
                wait: Duration::from_millis(250 * u64::from(retry)),
            });
        }
        assert_eq!(
            bar.message(),
            "scanning widgets v1: 500 objects  | retrying LIST example.com/v1 widgets: \
             503 Service Unavailable; retry 2 in 0.5s"
        );
        assert_eq!(retries_so_far(&conn), ", 2 retries");
    }
}
