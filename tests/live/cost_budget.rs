//! `celCostBudget` on the real API server: rules added on `spec` that each
//! match `spec.s`, a string of at most 100,000 characters, against a
//! 391-character pattern. One evaluation costs 980,100 (the server's
//! estimate, strings in characters): under the per-call limit of 1,000,000,
//! and eleven of them pass the runtime budget of 10,000,000 per object,
//! ten do not. The server accepts both CRDs, keeps an object stored under
//! the old one, and refuses the same object (and an update of it) once the
//! eleventh rule is in, with its "running out of cost budget" message, as
//! `diff` says; where the old schema keeps `s` to 90,000 characters, `diff`
//! reports nothing and the server accepts the longest object. Matching is
//! linear, so each request takes milliseconds. Plurals `costlys` and
//! `cheaps` are this module's.

use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::support;
use support::envtest::control_plane;
use support::fixtures::{kind_of, single};
use support::live::{admin, ensure_namespace, install, objects_api, write_manifest};
use support::run::run;

const NS: &str = "cost-budget";
const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// `rules` rules on `spec`, each matching `spec.s` (at most `max_length`
/// characters) against its own 391-character pattern.
fn with_rules(plural: &str, max_length: u64, rules: usize) -> Value {
    let rules: Vec<Value> = (0..rules)
        .map(|i| {
            let tail = "b".repeat(384) + &char::from(b'c' + i as u8).to_string();
            json!({"rule": format!("self.s.matches('^a*({tail})?$')")})
        })
        .collect();
    single(
        plural,
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"s": {"type": "string", "maxLength": max_length}},
            "x-kubernetes-validations": rules}}}),
    )
}

/// The `celCostBudget` findings of `diff old new`.
fn budget_findings(old: &Value, new: &Value) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("temp dir");
    let old = write_manifest(dir.path(), "old.json", old);
    let new = write_manifest(dir.path(), "new.json", new);
    let out = run(&["diff", &old, &new, "-o", "json", "--show-info"], None);
    out.json()["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "celCostBudget")
        .cloned()
        .collect()
}

fn object(plural: &str, name: &str, length: usize) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": kind_of(plural),
        "metadata": {"name": name, "namespace": NS},
        "spec": {"s": "a".repeat(length)}
    }))
    .expect("object")
}

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..PostParams::default()
    }
}

/// Stores an object whose `s` has `length` characters under `old`, applies
/// `new`, and returns the server's answers to a dry-run create of the same
/// object and to a dry-run update of the stored one that shortens `s` by
/// one character.
async fn after_update(
    plural: &str,
    old: &Value,
    new: &Value,
    length: usize,
) -> (Result<(), String>, Result<(), String>) {
    let plane = control_plane().expect("control plane");
    let client = admin(plane).await;
    ensure_namespace(&client, NS).await;
    install(&client, old).await;
    let api = objects_api(&client, plural, "v1", NS);
    let stored = api
        .create(&PostParams::default(), &object(plural, "stored", length))
        .await
        .unwrap_or_else(|e| panic!("the old CRD accepts {length} characters: {e}"));
    install(&client, new).await;
    let answer = |r: Result<DynamicObject, kube::Error>| r.map(|_| ()).map_err(|e| e.to_string());
    let created = answer(
        api.create(&dry_run(), &object(plural, "again", length))
            .await,
    );
    let mut changed = stored.clone();
    changed.data["spec"]["s"] = json!("a".repeat(length - 1));
    let updated = answer(api.replace("stored", &dry_run(), &changed).await);
    (created, updated)
}

#[tokio::test]
async fn rules_added_past_the_runtime_budget_make_the_server_refuse_an_object_it_stored() {
    if control_plane().is_none() {
        return;
    }
    let (old, new) = (
        with_rules("costlys", 100_000, 10),
        with_rules("costlys", 100_000, 11),
    );
    let found = budget_findings(&old, &new);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["severity"], "warning");
    assert_eq!(found[0]["path"], "^.spec");
    assert_eq!(found[0]["old"], 9_801_000);
    assert_eq!(found[0]["new"], 10_781_100);
    let message = found[0]["message"].as_str().expect("message");
    assert!(
        message.contains("(^.spec.s: 100,000 characters)") && message.contains(OUT_OF_BUDGET),
        "{message}"
    );

    let (created, updated) = after_update("costlys", &old, &new, 100_000).await;
    for (what, answer) in [("create", created), ("update", updated)] {
        let refusal = answer.expect_err(what);
        assert!(refusal.contains(OUT_OF_BUDGET), "{what}: {refusal}");
    }
}

/// The new schema allows 100,000 characters, but every stored object has
/// at most 90,000, and eleven rules over those cost 9,703,100.
#[tokio::test]
async fn the_same_rules_over_a_string_the_old_schema_keeps_shorter_are_not_reported_and_pass() {
    if control_plane().is_none() {
        return;
    }
    let (old, new) = (
        with_rules("cheaps", 90_000, 10),
        with_rules("cheaps", 100_000, 11),
    );
    assert_eq!(budget_findings(&old, &new), Vec::<Value>::new());
    let (created, updated) = after_update("cheaps", &old, &new, 90_000).await;
    assert_eq!(created, Ok(()));
    assert_eq!(updated, Ok(()));
}
