//! What the API server does with a stored object a new schema refuses, on
//! each server of the matrix, held against what the finding's message says
//! it does. Per construct: the CRD is installed under OLD, an object valid
//! under OLD that NEW refuses is stored, the CRD is switched to NEW, and
//! then the writes a user makes are tried: a copy under another name (a
//! GitOps re-sync, a restore), a label-only update, an update of another
//! field, an update of the construct itself, of another item of its list,
//! and a status write. The message's phrases say which of these are
//! refused; every write tried must be one the message speaks of.
//!
//! The plurals `ratchet*` are this module's.

use std::collections::BTreeMap;

use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::support;
use support::envtest::{ControlPlane, control_plane_of, matrix};
use support::fixtures;
use support::live::{admin, ensure_namespace, install, objects_api, write_manifest};
use support::run::run;

const NS: &str = "ratchet";

/// A write tried after the switch to NEW.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Write {
    /// The stored object created again under another name (its status
    /// written after it, where the construct is in the status).
    Create,
    /// An update that only adds a label.
    Label,
    /// An update of a spec field outside the construct.
    Other,
    /// An update that changes the construct (the field, the list).
    Touch,
    /// An update that changes another item of the list holding it.
    Sibling,
}

struct Construct {
    plural: &'static str,
    /// The check whose finding speaks for it.
    check: &'static str,
    /// `spec` properties under OLD and NEW (each also gets `other`).
    old: Value,
    new: Value,
    /// `status` properties (both sides), when the construct is there.
    status: Option<(Value, Value)>,
    /// The stored object's `spec` and `status`.
    stored: Value,
    stored_status: Option<Value>,
    /// What `Touch` and `Sibling` do to the spec (or the status, for a
    /// construct there; `Touch` is then a status write).
    touch: fn(&mut Value),
    sibling: Option<fn(&mut Value)>,
    /// The stored value is one the new rule cannot evaluate.
    evaluation_error: bool,
}

fn constructs() -> Vec<Construct> {
    let s = |v: Value| json!({"type": "string", "maxLength": v});
    let lb = |extra: Value| {
        let mut o = json!({"type": "object", "properties": {
            "simple": {"type": "string"}, "consistent": {"type": "string"}, "mode": {"type": "string"}}});
        if let (Some(o), Some(e)) = (o.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        o
    };
    let one_of = json!({"oneOf": [{"required": ["simple"]}, {"required": ["consistent"]}]});
    let entry = |value: Value| {
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"}, "value": value}})
    };
    let condition = json!({"type": "object", "required": ["type"], "properties": {
        "type": {"type": "string"}, "status": {"type": "string"}}});
    let port = json!({"type": "object", "required": ["name", "port"], "properties": {
        "name": {"type": "string"}, "port": {"type": "integer"}}});
    vec![
        Construct {
            plural: "ratchetsets",
            check: "listType",
            old: json!({"tags": {"type": "array", "items": {"type": "string"}}}),
            new: json!({"tags": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-list-type": "set"}}),
            status: None,
            stored: json!({"tags": ["a", "a"]}),
            stored_status: None,
            touch: |spec| spec["tags"] = json!(["a", "a", "b", "b"]),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetmaps",
            check: "listType",
            old: json!({}),
            new: json!({}),
            status: Some((
                json!({"conditions": {"type": "array", "items": condition}}),
                json!({"conditions": {"type": "array", "items": condition,
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}}),
            )),
            stored: json!({}),
            stored_status: Some(json!({"conditions": [
                {"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}]})),
            touch: |status| status["conditions"][1]["status"] = json!("Unknown"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetkeys",
            check: "listType",
            old: json!({"ports": {"type": "array", "items": port,
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}}),
            new: json!({"ports": {"type": "array", "items": port,
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"]}}),
            status: None,
            stored: json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 1}]}),
            stored_status: None,
            touch: |spec| spec["ports"][1]["name"] = json!("c"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetoneofs",
            check: "oneOf",
            old: json!({"lb": lb(json!({}))}),
            new: json!({"lb": lb(one_of.clone())}),
            status: None,
            stored: json!({"lb": {"simple": "a", "consistent": "b"}}),
            stored_status: None,
            touch: |spec| spec["lb"]["simple"] = json!("c"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetanyofs",
            check: "anyOf",
            old: json!({"lb": lb(json!({}))}),
            new: json!({"lb": lb(json!({"anyOf": [{"required": ["simple"]}, {"required": ["consistent"]}]}))}),
            status: None,
            stored: json!({"lb": {"mode": "x"}}),
            stored_status: None,
            touch: |spec| spec["lb"]["mode"] = json!("y"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetallofs",
            check: "allOf",
            old: json!({"lb": lb(json!({}))}),
            new: json!({"lb": lb(json!({"allOf": [{"required": ["simple"]}]}))}),
            status: None,
            stored: json!({"lb": {"mode": "x"}}),
            stored_status: None,
            touch: |spec| spec["lb"]["mode"] = json!("y"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetnots",
            check: "not",
            old: json!({"lb": lb(json!({}))}),
            new: json!({"lb": lb(json!({"not": {"required": ["mode"]}}))}),
            status: None,
            stored: json!({"lb": {"mode": "x"}}),
            stored_status: None,
            touch: |spec| spec["lb"]["mode"] = json!("y"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetitemoneofs",
            check: "oneOf",
            old: json!({"lbs": {"type": "array", "items": lb(json!({}))}}),
            new: json!({"lbs": {"type": "array", "items": lb(one_of)}}),
            status: None,
            stored: json!({"lbs": [{"simple": "a", "consistent": "b"}, {"simple": "d"}]}),
            stored_status: None,
            touch: |spec| spec["lbs"][0]["simple"] = json!("c"),
            sibling: Some(|spec| spec["lbs"][1]["simple"] = json!("e")),
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetrequireds",
            check: "required",
            old: json!({"lb": lb(json!({}))}),
            new: json!({"lb": lb(json!({"required": ["mode"]}))}),
            status: None,
            stored: json!({"lb": {"simple": "a"}}),
            stored_status: None,
            touch: |spec| spec["lb"]["simple"] = json!("b"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetdurations",
            check: "xValidations",
            old: json!({"timeout": {"type": "string"}}),
            new: json!({"timeout": {"type": "string", "x-kubernetes-validations": [
                {"rule": "duration(self) >= duration('0s')"}]}}),
            status: None,
            stored: json!({"timeout": "abc"}),
            stored_status: None,
            touch: |spec| spec["timeout"] = json!("abcd"),
            sibling: None,
            evaluation_error: true,
        },
        Construct {
            plural: "ratchetrules",
            check: "xValidations",
            old: json!({"title": {"type": "string"}}),
            new: json!({"title": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self.size() <= 3"}]}}),
            status: None,
            stored: json!({"title": "toolong"}),
            stored_status: None,
            touch: |spec| spec["title"] = json!("toolonger"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetplains",
            check: "maxLength",
            old: json!({"title": s(json!(10))}),
            new: json!({"title": s(json!(3))}),
            status: None,
            stored: json!({"title": "toolong"}),
            stored_status: None,
            touch: |spec| spec["title"] = json!("toolonger"),
            sibling: None,
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetatomics",
            check: "maxLength",
            old: json!({"names": {"type": "array", "items": s(json!(10))}}),
            new: json!({"names": {"type": "array", "items": s(json!(3))}}),
            status: None,
            stored: json!({"names": ["toolong", "ok"]}),
            stored_status: None,
            touch: |spec| spec["names"][0] = json!("toolonger"),
            sibling: Some(|spec| spec["names"][1] = json!("ok2")),
            evaluation_error: false,
        },
        Construct {
            plural: "ratchetmaplists",
            check: "maxLength",
            old: json!({"entries": {"type": "array", "items": entry(s(json!(10))),
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}}),
            new: json!({"entries": {"type": "array", "items": entry(s(json!(3))),
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}}),
            status: None,
            stored: json!({"entries": [{"name": "a", "value": "toolong"}, {"name": "b", "value": "ok"}]}),
            stored_status: None,
            touch: |spec| spec["entries"][0]["value"] = json!("toolonger"),
            sibling: Some(|spec| spec["entries"][1]["value"] = json!("ok2")),
            evaluation_error: false,
        },
    ]
}

impl Construct {
    fn crd(&self, new: bool) -> Value {
        let mut spec = if new { &self.new } else { &self.old }.clone();
        spec["other"] = json!({"type": "string"});
        // What shows that the server validates with NEW (see `switched`).
        spec["probe"] = if new {
            json!({"type": "string", "enum": ["new"]})
        } else {
            json!({"type": "string"})
        };
        let mut root = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": spec}}});
        if let Some((old, new_status)) = &self.status {
            root["properties"]["status"] =
                json!({"type": "object", "properties": if new { new_status } else { old }});
        }
        let mut version = fixtures::version("v1", true, true, root);
        version["subresources"] = json!({"status": {}});
        fixtures::crd(self.plural, vec![version])
    }

    /// The writes this construct is tried with.
    fn writes(&self) -> Vec<Write> {
        let mut w = vec![Write::Create, Write::Label, Write::Other, Write::Touch];
        w.extend(self.sibling.map(|_| Write::Sibling));
        w
    }
}

/// What the finding's message says the server does with each write; a
/// write it says nothing about is missing, which the test reports.
fn claims(message: &str, c: &Construct) -> BTreeMap<Write, bool> {
    let mut out = BTreeMap::new();
    if message.contains("cannot be created again")
        || message.contains("creating an object without it is rejected")
    {
        out.insert(Write::Create, false);
    }
    // listType: the server skips the uniqueness check on an update of an
    // object that already failed it.
    if message.contains("already holds them still succeed, even those that change the list") {
        for w in [Write::Label, Write::Other, Write::Touch] {
            out.insert(w, true);
        }
    }
    if message.contains("rejected by updates that touch the field") {
        out.insert(Write::Touch, false);
    }
    if message.contains("updates that leave it unchanged still succeed") {
        out.insert(Write::Label, true);
        out.insert(Write::Other, true);
        if c.sibling.is_some() {
            out.insert(Write::Sibling, true);
        }
    }
    // `required`: the error is the holder's, so only its changes count.
    if message.contains("every update that changes") {
        out.insert(Write::Touch, false);
    }
    if message.contains("lets through only updates that leave") {
        out.insert(Write::Label, true);
        out.insert(Write::Other, true);
    }
    if message.contains("is rejected too") {
        out.insert(Write::Sibling, false);
    }
    if c.evaluation_error && message.contains("every write fails, unchanged updates included") {
        out.insert(Write::Label, false);
        out.insert(Write::Other, false);
    }
    out
}

#[tokio::test]
async fn every_write_the_message_names_does_what_it_says_on_each_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The messages, read once: the checks judge the same on every matrix
    // version for these constructs (1.30+).
    let mut messages = Vec::new();
    for c in constructs() {
        let old = write_manifest(dir.path(), &format!("{}-old.json", c.plural), &c.crd(false));
        let new = write_manifest(dir.path(), &format!("{}-new.json", c.plural), &c.crd(true));
        let out = run(&["diff", &old, &new, "-o", "json"], None).json();
        let found: Vec<String> = out["crds"][0]["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["check"] == c.check && f["severity"] == "error")
            .filter(|f| f["path"] != "^.spec.probe")
            .filter_map(|f| f["message"].as_str().map(str::to_string))
            .collect();
        assert_eq!(found.len(), 1, "{}: one {} error: {out}", c.plural, c.check);
        messages.push(found[0].clone());
    }
    let mut wrong = Vec::new();
    let mut table = Vec::new();
    for version in matrix() {
        let Some(plane) = control_plane_of(&version) else {
            return;
        };
        for (c, message) in constructs().iter().zip(&messages) {
            let done = outcomes(plane, c).await;
            let said = claims(message, c);
            let row: Vec<String> = done
                .iter()
                .map(|(w, ok)| format!("{w:?} {}", if *ok { "ok" } else { "refused" }))
                .collect();
            table.push(format!(
                "[{}] {}: {}",
                plane.kube_version,
                c.plural,
                row.join(", ")
            ));
            for (w, ok) in &done {
                match said.get(w) {
                    Some(s) if s == ok => {}
                    Some(s) => wrong.push(format!(
                        "[{}] {}: {w:?} {} but the message says {}: {message}",
                        plane.kube_version,
                        c.plural,
                        if *ok { "succeeds" } else { "is refused" },
                        if *s { "it succeeds" } else { "it is refused" }
                    )),
                    None => wrong.push(format!(
                        "[{}] {}: the message says nothing of {w:?} ({}): {message}",
                        plane.kube_version,
                        c.plural,
                        if *ok { "succeeds" } else { "is refused" }
                    )),
                }
            }
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(wrong.is_empty(), "{}\n{}", wrong.len(), wrong.join("\n"));
}

/// Stores the construct's object under OLD, switches to NEW and tries each
/// write on a fresh copy of the stored object: whether the server took it.
async fn outcomes(plane: &ControlPlane, c: &Construct) -> Vec<(Write, bool)> {
    let client = admin(plane).await;
    ensure_namespace(&client, NS).await;
    let api = objects_api(&client, c.plural, "v1", NS);
    install(&client, &c.crd(false)).await;
    let writes = c.writes();
    let name = |w: Write| format!("{}-{}", c.plural, format!("{w:?}").to_lowercase());
    for w in &writes {
        // A copy per write, so that one write's success does not change
        // what the next starts from; `Create` is created after the switch.
        if *w != Write::Create {
            store(&api, c, &name(*w)).await.expect("stored under OLD");
        }
    }
    install(&client, &c.crd(true)).await;
    switched(&api, c).await;
    let mut out = Vec::new();
    for w in writes {
        let ok = match w {
            Write::Create => taken(store(&api, c, &name(w)).await, c, w),
            _ => update(&api, c, &name(w), w).await,
        };
        out.push((w, ok));
    }
    out
}

/// Waits until the server validates with NEW: a CRD update reaches the
/// handler of its resource a moment after it is stored, and a write in
/// between is judged by OLD. NEW refuses `probe: old`, OLD took it.
async fn switched(api: &kube::Api<DynamicObject>, c: &Construct) {
    let mut probe = object(c, &format!("{}-probe", c.plural));
    probe.data["spec"] = json!({"probe": "old"});
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match api.create(&dry, &probe).await {
            Err(kube::Error::Api(s)) if s.code == 422 => return,
            _ => {}
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{}: the server still validates with OLD after 30s",
            c.plural
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn object(c: &Construct, name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": fixtures::kind_of(c.plural),
        "metadata": {"name": name, "namespace": NS}, "spec": c.stored
    }))
    .expect("object")
}

/// Whether the server took a write: a refusal is a validation error
/// (422); any other failure fails the test.
fn taken(r: Result<(), kube::Error>, c: &Construct, w: Write) -> bool {
    match r {
        Ok(()) => true,
        Err(kube::Error::Api(s)) if s.code == 422 => false,
        Err(e) => panic!("{} {w:?}: {e}", c.plural),
    }
}

/// Creates the stored object (and writes its status) as `name`.
async fn store(
    api: &kube::Api<DynamicObject>,
    c: &Construct,
    name: &str,
) -> Result<(), kube::Error> {
    let pp = PostParams::default();
    let mut created = api.create(&pp, &object(c, name)).await?;
    if let Some(status) = &c.stored_status {
        created.data["status"] = status.clone();
        api.replace_status(name, &pp, &created).await?;
    }
    Ok(())
}

/// Reads `name` and writes it back with write `w` applied.
async fn update(api: &kube::Api<DynamicObject>, c: &Construct, name: &str, w: Write) -> bool {
    let mut live = api.get(name).await.expect("stored object readable");
    let in_status = c.stored_status.is_some();
    match w {
        Write::Label => {
            live.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
        }
        Write::Other => live.data["spec"]["other"] = json!("changed"),
        Write::Touch if in_status => (c.touch)(&mut live.data["status"]),
        Write::Touch => (c.touch)(&mut live.data["spec"]),
        Write::Sibling => (c.sibling.expect("a sibling write"))(&mut live.data["spec"]),
        Write::Create => unreachable!("not an update"),
    }
    let pp = PostParams::default();
    let r = if w == Write::Touch && in_status {
        api.replace_status(name, &pp, &live).await.map(drop)
    } else {
        api.replace(name, &pp, &live).await.map(drop)
    };
    taken(r, c, w)
}
