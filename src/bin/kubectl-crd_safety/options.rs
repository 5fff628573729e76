//! The flags turned into the library's option types, in one place: the
//! command modules ask the clap structs for what the library takes and
//! copy no field themselves.

use std::path::Path;

use crd_safety::cluster::KubeFlags;
use crd_safety::cluster_write::migrate::{PlanOptions, RunOptions, ServerWait};
use crd_safety::command::{self, Baselines, Failure};
use crd_safety::config::Config;
use crd_safety::crd_validation::{KubeVersion, KubeVersionSource};
use crd_safety::manifest::{HelmOptions, InputLimits, Positions, Source, SourceOptions};
use crd_safety::report::{OutputFormat, RenderOptions};
use crd_safety::scan::ScanOptions;
use crd_safety::webhook::ServeOptions;

use crate::cli::{
    ApplyArgs, ApplyCheckArgs, KubeArgs, MigrateArgs, ReportArgs, RequireArgs, RequirementsArgs,
    ServeArgs, SourceArgs,
};
use crate::terminal::{table_width, use_color};

impl ReportArgs {
    /// The configuration file, with `--mode` and `--fail-mode` over it,
    /// and `--kube-version` where the command has one; it and the files
    /// it names are read within `limits` (`--max-input-bytes`).
    pub fn config(
        &self,
        kube_version: Option<KubeVersion>,
        limits: InputLimits,
    ) -> Result<Config, Failure> {
        let mut config = Config::discover(self.config.as_deref(), limits)?;
        if let Some(mode) = self.mode {
            config.mode = mode;
        }
        if let Some(fail_mode) = self.fail_mode {
            config.fail_mode = fail_mode;
        }
        if !self.requirements.is_empty() {
            config.requirements = self.requirements.clone();
        }
        if let Some(v) = kube_version {
            config.kube_version = v;
            config.kube_version_source = KubeVersionSource::Flag;
        }
        Ok(config)
    }

    pub fn baselines(&self, limits: InputLimits) -> Baselines {
        Baselines {
            accept: self.baseline.clone(),
            write: self.write_baseline.clone(),
            limits,
        }
    }

    /// How the report is drawn, with the terminal's facts.
    pub fn render<'a>(&self, cwd: &'a Path) -> RenderOptions<'a> {
        RenderOptions {
            format: self.output,
            color: use_color(self.color),
            width: table_width(),
            show_info: self.show_info,
            cwd,
        }
    }
}

impl SourceArgs {
    /// How sources are read; positions are recorded only for the formats
    /// that show them.
    pub fn options(&self, output: OutputFormat) -> SourceOptions {
        SourceOptions {
            positions: if output.places_findings() {
                Positions::Recorded
            } else {
                Positions::Never
            },
            ..self.reading()
        }
    }

    /// How git revisions, charts and kustomizations are read and how much
    /// each source may hold, positions as the library's default.
    pub fn reading(&self) -> SourceOptions {
        SourceOptions {
            repo: self.repo.clone(),
            helm: HelmOptions {
                values: self.helm_values.clone(),
                set: self.helm_set.clone(),
                require: self.require_helm,
            },
            positions: Positions::default(),
            limits: self.limits(),
        }
    }

    /// How much one file or source may hold (`--max-input-bytes`): the
    /// manifests, and the configuration, baseline and requirements too.
    pub fn limits(&self) -> InputLimits {
        InputLimits::new(self.max_input_bytes)
    }
}

/// The sources as typed (`-`, a path, `git:REF:PATH`, `kustomize:DIR`).
pub fn parse_sources<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Vec<Source>, Failure> {
    args.into_iter()
        .map(|a| Source::parse(a).map_err(Failure::from))
        .collect()
}

impl KubeArgs {
    pub fn flags(&self) -> KubeFlags {
        KubeFlags {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
            // kubectl reads 0 as "no limit".
            request_timeout: self.request_timeout.filter(|t| !t.is_zero()),
            server: self.server.clone(),
            token: self.token.clone(),
            certificate_authority: self.certificate_authority.clone(),
            client_certificate: self.client_certificate.clone(),
            client_key: self.client_key.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            tls_server_name: self.tls_server_name.clone(),
            impersonate: self.as_user.clone(),
            impersonate_groups: self.as_group.clone(),
            impersonate_uid: self.as_uid.clone(),
        }
    }
}

impl ServeArgs {
    pub fn options(&self) -> ServeOptions {
        ServeOptions {
            listen: self.listen,
            cert_file: self.tls_cert_file.clone(),
            key_file: self.tls_private_key_file.clone(),
            client_ca_file: self.client_ca_file.clone(),
            config_file: self.config.clone(),
            reload_interval: self.reload_interval,
            max_body_bytes: self.max_body_bytes,
            shutdown_delay: self.shutdown_delay,
            drain_timeout: self.drain_timeout,
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            max_connections: self.max_connections,
            memory_budget: self.memory_budget,
            body_memory: self.body_memory,
            input_limits: InputLimits::new(self.max_input_bytes),
        }
    }
}

impl ApplyCheckArgs {
    /// What `apply-check` and `apply` read.
    pub fn manifests(&self) -> Result<command::Manifests, Failure> {
        let mut new = parse_sources(self.filenames.iter().map(String::as_str))?;
        new.extend(self.kustomize.iter().cloned().map(Source::Kustomize));
        Ok(command::Manifests {
            new,
            sources: self.sources.options(self.report.output),
            config: {
                let mut config = self.report.config(None, self.sources.limits())?;
                config.keep_schema_grades |= self.no_grade_by_objects;
                config
            },
            baselines: self.report.baselines(self.sources.limits()),
        })
    }

    /// The object scan, with `--objects`.
    pub fn scan(&self) -> Option<ScanOptions> {
        self.objects.then(|| ScanOptions {
            chunk_size: self.chunk_size,
            max_examples: self.max_examples,
            namespace: self.namespace.clone(),
            ..ScanOptions::default()
        })
    }
}

impl ApplyArgs {
    pub fn request(&self) -> command::apply::Request {
        command::apply::Request {
            yes: self.yes,
            force: self.force,
            force_conflicts: self.force_conflicts,
            override_owners: self.override_owners,
            wait: self.wait_timeout,
            concurrency: usize::from(self.check.concurrency),
        }
    }
}

impl MigrateArgs {
    pub fn plan(&self) -> PlanOptions {
        PlanOptions {
            // Every object must be rewritten: never narrowed to a namespace.
            scan: ScanOptions {
                chunk_size: self.chunk_size,
                max_examples: self.max_examples,
                namespace: None,
                ..ScanOptions::default()
            },
            by_namespace: self.by_namespace,
            allow_pruning: self.allow_pruning,
            engine: self.engine,
        }
    }

    pub fn request(&self) -> command::migrate::Request {
        command::migrate::Request {
            dry_run: self.dry_run,
            yes: self.yes,
            run: RunOptions {
                chunk_size: self.chunk_size,
                concurrency: usize::from(self.concurrency),
                server: ServerWait {
                    pickup: self.server_wait,
                    poll: std::time::Duration::from_secs(1),
                },
            },
        }
    }
}

impl RequireArgs {
    pub fn request(&self) -> Result<command::require::Request, Failure> {
        Ok(command::require::Request {
            draft: crd_safety::requirement::Draft {
                name: self.name.clone(),
                owner: self.owner.clone(),
                contact: self.contact.clone(),
                versions: self.versions.clone(),
                fields: self.fields.clone(),
                excluded: self.exclude.clone(),
                action: self.action,
            },
            crd: self.crd.clone(),
            fields_from: parse_sources(self.fields_from.iter().map(String::as_str))?,
            sources: SourceOptions {
                positions: Positions::Never,
                ..self.sources.reading()
            },
        })
    }
}

impl RequirementsArgs {
    /// The configuration file, with `--requirements` over its list.
    pub fn config(&self) -> Result<Config, Failure> {
        let mut config = Config::discover(self.config.as_deref(), self.sources.limits())?;
        if !self.requirements.is_empty() {
            config.requirements = self.requirements.clone();
        }
        Ok(config)
    }
}
