//! Commands that change the cluster (`apply`, `migrate`) share one shape:
//! plan, check, confirm, execute, a per-item outcome, and a [`Decision`]
//! with its exit code. This module holds what they share: the
//! [`Proposal`] a command makes once it has planned and checked, the rules
//! that turn it into a decision (refusal first, then `--yes`, then the
//! question, default No), and the decision's exit code and JSON word.
//!
//! The question is asked through [`Confirm`], which the binary implements on
//! the terminal (dialoguer). The library never touches the terminal, so the
//! rules are tested here with scripted answers, and a run without anybody to
//! ask is a refusal, never a silent yes.

pub mod apply;
pub mod migrate;

use crate::exit;
use thiserror::Error;

/// How a command that changes the cluster ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The cluster already is as asked: nothing written.
    NothingToDo,
    /// `--dry-run`: planned and checked, nothing written.
    DryRun,
    /// The checks forbid it (error findings, conflicts): nothing written.
    Refused,
    /// The answer was no: nothing written.
    Declined,
    /// Everything was done.
    Done,
    /// Something failed; the outcome says what was and was not done.
    Failed,
    /// Stopped by Ctrl-C; the outcome says what was done.
    Interrupted,
    /// `apply`: part of the bundle is left applied (a restore failed or
    /// was not safe); the outcome says which.
    Partial,
}

impl Decision {
    /// The change was started: its outcomes are worth showing.
    pub fn went_ahead(self) -> bool {
        matches!(
            self,
            Decision::Done | Decision::Failed | Decision::Interrupted | Decision::Partial
        )
    }

    /// The word for JSON/YAML `decision`; `done` is the command's own word
    /// for [`Decision::Done`] (`applied`, `migrated`).
    pub fn as_str(self, done: &'static str) -> &'static str {
        match self {
            Decision::NothingToDo => "nothingToDo",
            Decision::DryRun => "dryRun",
            Decision::Refused => "refused",
            Decision::Declined => "declined",
            Decision::Done => done,
            Decision::Failed => "failed",
            Decision::Interrupted => "interrupted",
            Decision::Partial => "partial",
        }
    }

    /// 0 done or nothing to do, 1 refused, 3 failed (a cluster error), 4
    /// declined at the question, 5 left partly applied, 130 interrupted.
    pub fn exit_code(self) -> u8 {
        match self {
            Decision::NothingToDo | Decision::DryRun | Decision::Done => exit::SAFE,
            Decision::Refused => exit::FINDINGS,
            Decision::Failed => exit::CLUSTER,
            Decision::Declined => exit::DECLINED,
            Decision::Interrupted => exit::INTERRUPTED,
            Decision::Partial => exit::PARTIAL,
        }
    }
}

/// The command's own words, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verb {
    /// `apply`, `migrate`.
    pub verb: &'static str,
    /// `applying`, `migrating`.
    pub doing: &'static str,
    /// `applied`, `migrated`.
    pub done: &'static str,
}

/// What a command proposes to change, once it has planned and checked.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The command.
    pub verb: Verb,
    /// Set when there is nothing to change: the sentence that says so.
    pub nothing_to_do: Option<String>,
    /// Set when the checks forbid going ahead: why, and how to override it
    /// if that is possible (one line).
    pub refusal: Option<String>,
    /// What the user is asked.
    pub question: Question,
    /// `apply`: fields other field managers own that the change sets,
    /// asked about after a yes to the plan (take them over?). Unlike
    /// [`Proposal::second`], without a terminal this is the refusal it has
    /// always been, not a missing answer.
    pub conflicts: Option<Second>,
    /// A second question, asked after a yes to the first, about something
    /// `--yes` does not answer.
    pub second: Option<Second>,
}

/// A second, specific question (changing CRDs someone else manages), which
/// `--yes` does not answer: only its own flag does, so a pipeline that
/// passes `--yes` for the plan is not taken to agree to it.
#[derive(Debug, Clone)]
pub struct Second {
    /// The question.
    pub question: Question,
    /// Its own flag was given: answered yes.
    pub answered: bool,
    /// Why nothing is done under `--yes` without that flag: one line that
    /// names the flag.
    pub refusal: String,
}

/// The question before a change: where, what, and the prompt.
#[derive(Debug, Clone)]
pub struct Question {
    /// The first line, naming the context and the server.
    pub heading: String,
    /// One line per item: its name and what happens to it.
    pub items: Vec<(String, String)>,
    /// The question itself (`Apply 2 CRDs to context prod?`).
    pub prompt: String,
}

impl Question {
    /// The text shown above the prompt.
    pub fn text(&self) -> String {
        let width = self.items.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut text = format!("\n{}\n", self.heading);
        for (name, what) in &self.items {
            text.push_str(&format!("  {name:<width$}  {what}\n"));
        }
        text
    }
}

/// An answer to a [`Question`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Go ahead.
    Yes,
    /// Do not (including no answer at all, e.g. Esc).
    No,
    /// There is nobody to ask (no terminal).
    NoTerminal,
}

/// Asks the user. The binary implements it on the terminal.
pub trait Confirm {
    /// Shows the question and returns the answer, or why it could not be read.
    fn confirm(&mut self, question: &Question) -> Result<Answer, String>;
}

/// Why no decision could be made (exit 2).
#[derive(Debug, Error)]
pub enum ConfirmError {
    /// No terminal and no `--yes`.
    #[error(
        "refusing to {verb} without confirmation: there is no terminal to ask on \
         (pass --yes to {verb} non-interactively)"
    )]
    NoTerminal {
        /// The command.
        verb: &'static str,
    },
    /// The terminal failed while asking.
    #[error("cannot read the answer: {0}")]
    Answer(String),
}

/// A decision and the line to tell the user about it (stderr), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// What happens next.
    pub decision: Decision,
    /// `Nothing to apply: ...`, `error: not applying: ...`, `Nothing applied.`
    pub message: Option<String>,
}

/// Decides whether to go ahead: nothing to do, then a refusal, then `--yes`,
/// then the question (default No), then the conflicts' and the second
/// question unless their own flags answered them (under `--yes` without
/// those flags: refused; without a terminal, unanswered conflicts are a
/// refusal too). [`Decision::Done`] means "go ahead".
pub fn decide(
    proposal: &Proposal,
    yes: bool,
    confirm: &mut dyn Confirm,
) -> Result<Decided, ConfirmError> {
    let decided = |decision, message: Option<String>| Decided { decision, message };
    if let Some(nothing) = &proposal.nothing_to_do {
        return Ok(decided(Decision::NothingToDo, Some(nothing.clone())));
    }
    if let Some(why) = &proposal.refusal {
        return Ok(decided(Decision::Refused, Some(format!("error: {why}"))));
    }
    let conflicts = proposal.conflicts.as_ref().filter(|s| !s.answered);
    let second = proposal.second.as_ref().filter(|s| !s.answered);
    let refused = |s: &Second| decided(Decision::Refused, Some(format!("error: {}", s.refusal)));
    if yes {
        return Ok(match conflicts.or(second) {
            Some(s) => refused(s),
            None => decided(Decision::Done, None),
        });
    }
    let questions = std::iter::once(&proposal.question)
        .chain(conflicts.map(|s| &s.question))
        .chain(second.map(|s| &s.question));
    for question in questions {
        match confirm.confirm(question).map_err(ConfirmError::Answer)? {
            Answer::Yes => {}
            Answer::No => {
                return Ok(decided(
                    Decision::Declined,
                    Some(format!("Nothing {}.", proposal.verb.done)),
                ));
            }
            Answer::NoTerminal => {
                if let Some(c) = conflicts {
                    return Ok(refused(c));
                }
                return Err(ConfirmError::NoTerminal {
                    verb: proposal.verb.verb,
                });
            }
        }
    }
    Ok(decided(Decision::Done, None))
}

/// The decision of a `--dry-run`: what [`decide`] would start from, with
/// nothing asked and nothing done.
pub fn decide_dry_run(proposal: &Proposal) -> Decided {
    if let Some(nothing) = &proposal.nothing_to_do {
        return Decided {
            decision: Decision::NothingToDo,
            message: Some(nothing.clone()),
        };
    }
    if let Some(why) = &proposal.refusal {
        return Decided {
            decision: Decision::Refused,
            message: Some(format!("error: {why}")),
        };
    }
    Decided {
        decision: Decision::DryRun,
        message: Some(format!(
            "Dry run: nothing {}; without --dry-run this would ask, then go ahead.",
            proposal.verb.done
        )),
    }
}

pub use crate::text::plural;

#[cfg(test)]
mod tests {
    use super::*;

    const APPLY: Verb = Verb {
        verb: "apply",
        doing: "applying",
        done: "applied",
    };

    /// Answers from a script and remembers whether it was asked.
    struct Scripted(Answer, bool);

    impl Confirm for Scripted {
        fn confirm(&mut self, _: &Question) -> Result<Answer, String> {
            self.1 = true;
            Ok(self.0)
        }
    }

    /// Answers each question in turn and keeps the prompts it was asked.
    struct Answers(Vec<Answer>, Vec<String>);

    impl Confirm for Answers {
        fn confirm(&mut self, question: &Question) -> Result<Answer, String> {
            self.1.push(question.prompt.clone());
            Ok(self.0.remove(0))
        }
    }

    fn owned(answered: bool) -> Proposal {
        let mut p = proposal(None, None);
        p.second = Some(Second {
            question: Question {
                heading: "Managed by someone else:".into(),
                items: vec![("a.example.com".into(), "Argo CD application x".into())],
                prompt: "Change 1 CRD managed by Argo CD anyway?".into(),
            },
            answered,
            refusal: "not applying without --override-owners: a.example.com".into(),
        });
        p
    }

    #[test]
    fn yes_does_not_answer_the_second_question_its_flag_does() {
        let mut ask = Scripted(Answer::Yes, false);
        let d = decide(&owned(false), true, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Refused);
        assert_eq!(d.decision.exit_code(), 1);
        assert_eq!(
            d.message.as_deref(),
            Some("error: not applying without --override-owners: a.example.com")
        );
        assert!(!ask.1, "nobody is asked under --yes");
        let d = decide(&owned(true), true, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Done);
    }

    #[test]
    fn the_second_question_is_asked_after_a_yes_and_defaults_to_no() {
        let mut ask = Answers(vec![Answer::Yes, Answer::No], Vec::new());
        let d = decide(&owned(false), false, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Declined);
        assert_eq!(
            ask.1,
            [
                "Apply 1 CRD to context c?",
                "Change 1 CRD managed by Argo CD anyway?"
            ]
        );
        let mut ask = Answers(vec![Answer::Yes, Answer::Yes], Vec::new());
        assert_eq!(
            decide(&owned(false), false, &mut ask).unwrap().decision,
            Decision::Done
        );
        let mut ask = Answers(vec![Answer::No], Vec::new());
        let d = decide(&owned(false), false, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Declined);
        assert_eq!(ask.1.len(), 1, "a no to the plan asks nothing more");
        let mut ask = Answers(vec![Answer::Yes], Vec::new());
        decide(&owned(true), false, &mut ask).unwrap();
        assert_eq!(ask.1.len(), 1, "--override-owners answers the second");
    }

    fn proposal(nothing: Option<&str>, refusal: Option<&str>) -> Proposal {
        Proposal {
            verb: APPLY,
            nothing_to_do: nothing.map(str::to_string),
            refusal: refusal.map(str::to_string),
            question: Question {
                heading: "About to apply to context c (s):".into(),
                items: vec![("a.example.com".into(), "update".into())],
                prompt: "Apply 1 CRD to context c?".into(),
            },
            conflicts: None,
            second: None,
        }
    }

    #[test]
    fn a_refusal_wins_over_yes_and_nobody_is_asked() {
        let mut ask = Scripted(Answer::Yes, false);
        let d = decide(&proposal(None, Some("not applying: x")), true, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Refused);
        assert_eq!(d.message.as_deref(), Some("error: not applying: x"));
        assert!(!ask.1);
    }

    #[test]
    fn yes_skips_the_question() {
        let mut ask = Scripted(Answer::No, false);
        let d = decide(&proposal(None, None), true, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Done);
        assert!(!ask.1);
    }

    #[test]
    fn no_is_declined_and_says_nothing_was_done() {
        let mut ask = Scripted(Answer::No, false);
        let d = decide(&proposal(None, None), false, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Declined);
        assert_eq!(d.message.as_deref(), Some("Nothing applied."));
        assert_eq!(d.decision.exit_code(), 4);
    }

    #[test]
    fn without_a_terminal_the_command_refuses_to_guess() {
        let mut ask = Scripted(Answer::NoTerminal, false);
        let e = decide(&proposal(None, None), false, &mut ask).unwrap_err();
        assert_eq!(
            e.to_string(),
            "refusing to apply without confirmation: there is no terminal to ask on \
             (pass --yes to apply non-interactively)"
        );
    }

    #[test]
    fn nothing_to_do_is_said_and_succeeds() {
        let mut ask = Scripted(Answer::Yes, false);
        let d = decide(
            &proposal(Some("Nothing to apply."), Some("x")),
            false,
            &mut ask,
        )
        .unwrap();
        assert_eq!(d.decision, Decision::NothingToDo);
        assert_eq!(d.decision.exit_code(), 0);
        assert!(!ask.1);
    }

    fn conflicting(answered: bool) -> Proposal {
        let mut p = proposal(None, None);
        p.conflicts = Some(Second {
            question: Question {
                heading: "Other field managers own fields this change sets:".into(),
                items: vec![("a.example.com".into(), "kubectl owns .spec.versions".into())],
                prompt: "Take these fields over for 1 CRD (as --force-conflicts does)?".into(),
            },
            answered,
            refusal: "not applying: another field manager owns fields".into(),
        });
        p
    }

    #[test]
    fn conflicts_are_asked_after_the_plan_and_a_yes_takes_them_over() {
        let mut ask = Answers(vec![Answer::Yes, Answer::Yes], Vec::new());
        let d = decide(&conflicting(false), false, &mut ask).unwrap();
        assert_eq!(d.decision, Decision::Done);
        assert_eq!(
            ask.1,
            [
                "Apply 1 CRD to context c?",
                "Take these fields over for 1 CRD (as --force-conflicts does)?"
            ]
        );
        let mut ask = Answers(vec![Answer::Yes, Answer::No], Vec::new());
        let d = decide(&conflicting(false), false, &mut ask).unwrap();
        assert_eq!(
            d.decision,
            Decision::Declined,
            "default No: nothing written"
        );
        assert_eq!(d.message.as_deref(), Some("Nothing applied."));
    }

    #[test]
    fn conflicts_without_a_terminal_or_under_yes_are_refused_naming_the_flag() {
        for yes in [false, true] {
            let mut ask = Scripted(Answer::NoTerminal, false);
            let d = decide(&conflicting(false), yes, &mut ask).unwrap();
            assert_eq!(d.decision, Decision::Refused, "yes: {yes}");
            assert_eq!(
                d.message.as_deref(),
                Some("error: not applying: another field manager owns fields")
            );
        }
        // --force-conflicts answers it: only the plan is asked, or nothing
        // under --yes.
        let mut ask = Answers(vec![Answer::Yes], Vec::new());
        let d = decide(&conflicting(true), false, &mut ask).unwrap();
        assert_eq!((d.decision, ask.1.len()), (Decision::Done, 1));
        let mut ask = Scripted(Answer::No, false);
        let d = decide(&conflicting(true), true, &mut ask).unwrap();
        assert_eq!((d.decision, ask.1), (Decision::Done, false));
    }

    #[test]
    fn the_question_aligns_its_items() {
        let mut q = proposal(None, None).question;
        q.items.push(("b.io".into(), "create".into()));
        assert_eq!(
            q.text(),
            "\nAbout to apply to context c (s):\n  a.example.com  update\n  b.io           create\n"
        );
    }
}
