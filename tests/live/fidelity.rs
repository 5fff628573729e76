//! Differential test of our validator against the real API server: many
//! objects, valid and invalid for every keyword, format, list type and a set
//! of CEL rules, are created with `dryRun=All` and also validated locally;
//! the verdicts must agree. The agreement per category is printed (run with
//! `--nocapture`); a disagreement fails the test unless it is listed in
//! `KNOWN_LIMITATIONS` with the reason.

use crate::support;

use std::collections::BTreeMap;

use crd_safety::object_validation::Validator;
use crd_safety::schema::Schema;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use support::envtest::{ControlPlane, assert_agrees_on_matrix, control_plane};
use support::fixtures;
use support::live::{admin, install};

/// Disagreements we accept, by case label, with the reason.
const KNOWN_LIMITATIONS: &[(&str, &str)] = &[];

fn field_schemas() -> Value {
    json!({
        "int": {"type": "integer", "minimum": 1, "maximum": 10},
        "intx": {"type": "integer", "minimum": 1, "exclusiveMinimum": true,
                  "maximum": 10, "exclusiveMaximum": true},
        "int32": {"type": "integer", "format": "int32"},
        "int32max": {"type": "integer", "format": "int32", "maximum": 3000000000i64, "multipleOf": 0.5},
        "mult": {"type": "integer", "multipleOf": 3},
        // Numbers as kube-openapi compares them (issue 42): an enum after
        // converting the data to the enum value's type, factors and
        // bounds truncated for integers (and, from 1.36, a bound that is
        // not an integer on an integer field failing every value).
        "numenum": {"type": "number", "enum": [1, 2]},
        "fracenum": {"type": "number", "enum": [1.5]},
        "intmul": {"type": "integer", "multipleOf": 2.5},
        "nummul": {"type": "number", "multipleOf": 2.5},
        "tenth": {"type": "number", "multipleOf": 0.1},
        "negmax": {"type": "integer", "maximum": -2.5},
        "bigmax": {"type": "integer", "maximum": 9007199254740992i64},
        "iosenum": {"x-kubernetes-int-or-string": true, "enum": ["A", 7]},
        "num": {"type": "number", "minimum": 0.5, "multipleOf": 0.5},
        "str": {"type": "string", "minLength": 2, "maxLength": 5},
        "pat": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "unpat": {"type": "string", "pattern": "[0-9]"},
        "en": {"type": "string", "enum": ["a", "b"]},
        "flag": {"type": "boolean"},
        "nul": {"type": "string", "nullable": true},
        // `nullable` lets a null past the type, not past an enum without
        // null (found by the soundness run's witnesses, seed 42).
        "nulenum": {"type": "number", "enum": [2], "nullable": true},
        "ios": {"x-kubernetes-int-or-string": true},
        "iosp": {"x-kubernetes-int-or-string": true, "pattern": "^[0-9]+%$", "maximum": 5},
        "list": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "lmap": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "v": {"type": "integer"}}}},
        "lmap2": {"type": "array", "x-kubernetes-list-type": "map",
                   "x-kubernetes-list-map-keys": ["name", "port"],
                   "items": {"type": "object", "required": ["name", "port"], "properties": {
                       "name": {"type": "string"}, "port": {"type": "integer"}}}},
        "props": {"type": "object", "minProperties": 1, "maxProperties": 2,
                   "additionalProperties": {"type": "string"}},
        "req": {"type": "object", "required": ["a"], "properties": {
                 "a": {"type": "string"}, "b": {"type": "string"}}},
        "reqd": {"type": "object", "required": ["a"], "properties": {
                  "a": {"type": "string", "default": "x"}}},
        "all": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 4}]},
        "any": {"type": "string", "anyOf": [{"maxLength": 2}, {"pattern": "^x"}]},
        "one": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 7}]},
        "not": {"type": "string", "not": {"enum": ["forbidden"]}},
        "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                 "x-kubernetes-preserve-unknown-fields": true},
        "cel": {"type": "object", "properties": {
                  "lo": {"type": "integer"}, "hi": {"type": "integer"},
                  "name": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}},
                 "x-kubernetes-validations": [
                     {"rule": "!has(self.lo) || !has(self.hi) || self.lo <= self.hi", "message": "lo <= hi"},
                     {"rule": "!has(self.name) || self.name.startsWith('n-')", "message": "prefix"},
                     {"rule": "!has(self.items) || self.items.all(i, i.size() < 4)", "message": "short items"},
                     {"rule": "!has(self.name) || self.name.matches('^n-[a-z]+$')", "message": "letters"}
                 ]},
        "re_digit": {"type": "string", "pattern": r"^\d{3}$"},
        "re_word": {"type": "string", "pattern": r"^\w+$"},
        "re_space": {"type": "string", "pattern": r"^a\sb$"},
        "re_bound": {"type": "string", "pattern": r"\bllo"},
        "re_fold": {"type": "string", "pattern": "(?i)^(straße|k)$"},
        "re_foldw": {"type": "string", "pattern": r"(?i)^\w$"},
        "re_dot": {"type": "string", "pattern": "^.{3}$"},
        "re_class": {"type": "string", "pattern": "^[a&&b-]+$"},
        "re_brace": {"type": "string", "pattern": "^a{,2}$"},
        "celre": {"type": "object", "properties": {
                    "d": {"type": "string"}, "w": {"type": "string"}, "s": {"type": "string"},
                    "i": {"type": "string"}, "dot": {"type": "string"}, "f": {"type": "string"},
                    "short": {"type": "string", "x-kubernetes-validations": [
                        {"rule": "self.size() <= 3", "message": "three code points"}]}},
                  "x-kubernetes-validations": [
                      {"rule": r"!has(self.d) || self.d.matches('^\\d+$')", "message": "digits"},
                      {"rule": r"!has(self.w) || self.w.matches('^\\w+$')", "message": "word"},
                      {"rule": r"!has(self.s) || self.s.matches('^a\\sb$')", "message": "space"},
                      {"rule": "!has(self.i) || self.i.matches('(?i)^(straße|k)$')", "message": "fold"},
                      {"rule": "!has(self.dot) || self.dot.matches('^.{3}$')", "message": "dot"},
                      {"rule": r"!has(self.f) || self.f.find('\\d+') == '' || size(self.f) <= 4", "message": "find"}
                  ]},
        "fmt_date_time": {"type": "string", "format": "date-time"},
        "fmt_date": {"type": "string", "format": "date"},
        "fmt_duration": {"type": "string", "format": "duration"},
        "fmt_uuid": {"type": "string", "format": "uuid"},
        "fmt_ipv4": {"type": "string", "format": "ipv4"},
        "fmt_ipv6": {"type": "string", "format": "ipv6"},
        "fmt_cidr": {"type": "string", "format": "cidr"},
        "fmt_mac": {"type": "string", "format": "mac"},
        "fmt_hostname": {"type": "string", "format": "hostname"},
        "fmt_email": {"type": "string", "format": "email"},
        "fmt_uri": {"type": "string", "format": "uri"},
        "fmt_byte": {"type": "string", "format": "byte"},
        "fmt_hexcolor": {"type": "string", "format": "hexcolor"},
        "fmt_bson": {"type": "string", "format": "bsonobjectid"},
        "fmt_short": {"type": "string", "format": "k8s-short-name"},
        "fmt_unknown": {"type": "string", "format": "no-such-format"}
    })
}

/// `(category, label, spec)` for every case.
fn cases() -> Vec<(&'static str, String, Value)> {
    let mut out: Vec<(&'static str, String, Value)> = Vec::new();
    let mut add = |cat: &'static str, field: &str, v: Value| {
        let label = format!("{field}={v}");
        out.push((cat, label, json!({ field: v })));
    };
    for v in [0, 1, 5, 10, 11, -3] {
        add("bounds", "int", json!(v));
        add("bounds", "intx", json!(v));
    }
    for v in [2147483647, 2147483648i64, -2147483649i64] {
        add("types", "int32", json!(v));
        add("types", "int32max", json!(v));
    }
    for v in [0, 3, 4, 9, -6] {
        add("bounds", "mult", json!(v));
    }
    for v in [
        json!(2.5),
        json!(1.5),
        json!(3.5),
        json!(2),
        json!(-0.5),
        json!(0.99),
    ] {
        add("numbers", "numenum", v);
    }
    for v in [json!(1.5), json!(1), json!(2)] {
        add("numbers", "fracenum", v);
    }
    for v in [json!(5), json!(4), json!(10), json!(0)] {
        add("numbers", "intmul", v);
    }
    for v in [json!(5), json!(5.0), json!(4), json!(7.5)] {
        add("numbers", "nummul", v);
    }
    for v in [json!(0.3), json!(0.7), json!(0.35), json!(3), json!(-0.3)] {
        add("numbers", "tenth", v);
    }
    for v in [-2, -3, 0] {
        add("numbers", "negmax", json!(v));
    }
    for v in [9007199254740992i64, 9007199254740993i64] {
        add("numbers", "bigmax", json!(v));
    }
    for v in [
        json!("A"),
        json!(65),
        json!(7),
        json!(7.5),
        json!("B"),
        json!(66),
    ] {
        add("numbers", "iosenum", v);
    }
    for v in [
        json!(0.5),
        json!(1.0),
        json!(0.25),
        json!(0.75),
        json!(2),
        json!(0),
    ] {
        add("bounds", "num", v);
    }
    for v in ["a", "ab", "abcde", "abcdef", "ééé", "日本語日本語"] {
        add("strings", "str", json!(v));
    }
    for v in ["abc", "a-1", "1abc", "Abc", "", "a b"] {
        add("strings", "pat", json!(v));
    }
    for v in ["abc", "a1b", "9"] {
        add("strings", "unpat", json!(v));
    }
    for v in [json!("a"), json!("b"), json!("c"), json!("A"), json!(1)] {
        add("enum", "en", v);
    }
    for (field, v) in [
        ("int", json!("5")),
        ("int", json!(5.5)),
        ("int", json!(5.0)),
        ("int", json!(true)),
        ("num", json!("1")),
        ("num", json!(3)),
        ("str", json!(12)),
        ("flag", json!("true")),
        ("flag", json!(false)),
        ("list", json!("x")),
        ("props", json!(["a"])),
        ("nul", json!(null)),
        ("nulenum", json!(null)),
        ("nulenum", json!(2)),
        ("str", json!(null)),
        ("ios", json!(3)),
        ("ios", json!("50%")),
        ("ios", json!(1.5)),
        ("ios", json!(true)),
        ("iosp", json!(3)),
        ("iosp", json!("50%")),
        ("iosp", json!("fifty")),
        ("iosp", json!(9)),
    ] {
        add("types", field, v);
    }
    for v in [
        json!([]),
        json!(["a"]),
        json!(["a", "b", "c"]),
        json!(["a", "b", "c", "d"]),
    ] {
        add("arrays", "list", v);
    }
    for v in [json!(["a", "b"]), json!(["a", "a"]), json!([])] {
        add("listType", "set", v);
    }
    for v in [
        json!([{"name": "a"}, {"name": "b"}]),
        json!([{"name": "a", "v": 1}, {"name": "a", "v": 2}]),
        json!([{"v": 1}]),
    ] {
        add("listType", "lmap", v);
    }
    for v in [
        json!([{"name": "a", "port": 1}, {"name": "a", "port": 2}]),
        json!([{"name": "a", "port": 1}, {"name": "a", "port": 1}]),
    ] {
        add("listType", "lmap2", v);
    }
    for v in [
        json!({}),
        json!({"x": "1"}),
        json!({"x": "1", "y": "2"}),
        json!({"x": "1", "y": "2", "z": "3"}),
        json!({"x": 1}),
    ] {
        add("objects", "props", v);
    }
    for v in [json!({"a": "1"}), json!({"b": "1"}), json!({})] {
        add("objects", "req", v);
    }
    for v in [json!({}), json!({"a": "y"})] {
        add("objects", "reqd", v);
    }
    for v in ["a", "ab", "abcd", "abcde"] {
        add("combinators", "all", json!(v));
    }
    for v in ["ab", "xlong", "long"] {
        add("combinators", "any", json!(v));
    }
    for v in [json!(4), json!(6), json!(8)] {
        add("combinators", "one", v);
    }
    for v in ["ok", "forbidden"] {
        add("combinators", "not", json!(v));
    }
    for v in [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        json!({"kind": "ConfigMap"}),
        json!({"apiVersion": "v1"}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_Valid"}}),
    ] {
        add("embedded", "emb", v);
    }
    for v in [
        json!({"lo": 1, "hi": 2}),
        json!({"lo": 3, "hi": 2}),
        json!({"name": "n-abc"}),
        json!({"name": "abc"}),
        json!({"name": "n-ab1"}),
        json!({"items": ["a", "bcd"]}),
        json!({"items": ["a", "bcde"]}),
    ] {
        add("cel", "cel", v);
    }
    // Go's regexp: ASCII \d \w \s \b, Unicode `.` and case folding.
    let regexes: &[(&str, &[&str])] = &[
        ("re_digit", &["123", "١٢٣", "１２３", "12a"]),
        ("re_word", &["hello_1", "héllo", "日本"]),
        (
            "re_space",
            &["a b", "a\tb", "a\u{00A0}b", "a\u{000B}b", "a\u{2003}b"],
        ),
        ("re_bound", &["héllo", "hello", "llo"]),
        (
            "re_fold",
            &["STRASSE", "STRAẞE", "Straße", "K", "\u{212A}", "x"],
        ),
        ("re_foldw", &["K", "\u{212A}", "\u{017F}", "é"]),
        ("re_dot", &["abc", "日本語", "éab", "ab", "e\u{0301}ab"]),
        ("re_class", &["a&b", "ab-", "abc"]),
        ("re_brace", &["a{,2}", "aa", "a"]),
    ];
    for (field, values) in regexes {
        for v in *values {
            add("regex", field, json!(v));
        }
    }
    for v in [
        json!({"d": "123"}),
        json!({"d": "١٢٣"}),
        json!({"w": "hello"}),
        json!({"w": "héllo"}),
        json!({"s": "a b"}),
        json!({"s": "a\u{00A0}b"}),
        json!({"i": "STRAẞE"}),
        json!({"i": "\u{212A}"}),
        json!({"i": "STRASSE"}),
        json!({"dot": "日本語"}),
        json!({"dot": "ab"}),
        json!({"f": "ab12"}),
        json!({"f": "éé12"}),
        json!({"f": "ééé123"}),
        json!({"f": "١٢٣٤٥"}),
        json!({"short": "ééé"}),
        json!({"short": "日本語x"}),
        json!({"short": "abc"}),
    ] {
        add("cel", "celre", v);
    }
    let formats: &[(&str, &[&str])] = &[
        (
            "fmt_date_time",
            &[
                "2024-01-02T03:04:05Z",
                "2024-01-02T03:04:05.123+02:00",
                "2024-01-02",
                "2024-13-02T03:04:05Z",
                "yesterday",
            ],
        ),
        ("fmt_date", &["2024-01-02", "2024-02-30", "2024-1-2", "x"]),
        (
            "fmt_duration",
            &["1h", "1h30m", "500ms", "1d", "3 days", "x"],
        ),
        (
            "fmt_uuid",
            &[
                "123e4567-e89b-12d3-a456-426614174000",
                "123E4567-E89B-12D3-A456-426614174000",
                "123e4567e89b12d3a456426614174000",
                "not-a-uuid",
            ],
        ),
        ("fmt_ipv4", &["10.0.0.1", "256.0.0.1", "10.0.0", "::1"]),
        ("fmt_ipv6", &["::1", "fe80::1", "10.0.0.1", "gggg::1"]),
        (
            "fmt_cidr",
            &["10.0.0.0/8", "10.0.0.0/33", "fe80::/10", "10.0.0.0"],
        ),
        (
            "fmt_mac",
            &[
                "00:11:22:33:44:55",
                "00-11-22-33-44-55",
                "0011.2233.4455",
                "zz:11:22:33:44:55",
            ],
        ),
        (
            "fmt_hostname",
            &[
                "example.com",
                "a",
                "-bad.com",
                "under_score.com",
                "UPPER.com",
            ],
        ),
        (
            "fmt_email",
            &["a@example.com", "a@b", "not-an-email", "a b@c.com"],
        ),
        (
            "fmt_uri",
            &[
                "https://example.com/x",
                "relative/path",
                "://bad",
                "mailto:a@b.c",
            ],
        ),
        ("fmt_byte", &["aGVsbG8=", "aGVsbG8", "!!!", ""]),
        ("fmt_hexcolor", &["#fff", "#ffffff", "fff", "#ggg"]),
        (
            "fmt_bson",
            &["507f1f77bcf86cd799439011", "507f1f77bcf86cd79943901", "zz"],
        ),
        ("fmt_short", &["abc", "a-b", "ABC", "a.b"]),
        ("fmt_unknown", &["anything"]),
    ];
    for (field, values) in formats {
        for v in *values {
            add("formats", field, json!(v));
        }
    }
    out
}

/// The `example.com/v1` objects of `kind` in `default`, where both tests
/// that create objects put them.
fn example_objects(client: Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", kind);
    let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
    Api::namespaced_with(client, "default", &ar)
}

/// An `example.com/v1` object of `kind` named `name` in `default`.
fn example_object(kind: &str, name: &str, spec: &Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": kind,
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// `Ok(None)`: accepted; `Ok(Some(message))`: rejected.
async fn server_verdict(api: &Api<DynamicObject>, obj: &Value) -> Result<Option<String>, String> {
    let dynamic: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match api.create(&params, &dynamic).await {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(s)) if matches!(s.code, 400 | 422) => Ok(Some(s.message)),
        Err(e) => Err(e.to_string()),
    }
}

/// Waits until the schema just installed decides `probe` as `accepted`
/// says: the API server switches a CRD's validation shortly after the
/// update is stored, and on a loaded machine a request may still meet the
/// previous schema. Panics after 30 s.
async fn until_in_effect(api: &Api<DynamicObject>, probe: &Value, accepted: bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let verdict = server_verdict(api, probe).await;
        if matches!(&verdict, Ok(v) if v.is_none() == accepted) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "after 30 s the server still does not decide {probe} as the new schema would: {verdict:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// On every API server of the matrix (1.30, 1.34 and 1.37 in CI), whose
/// formats and ratcheting differ, judged by the validator of its version.
#[tokio::test]
async fn the_validator_agrees_with_the_api_server() {
    assert_agrees_on_matrix(validator_agrees_on).await;
}

/// Creates every case on `plane` (dry run) and validates it here: the
/// disagreements.
async fn validator_agrees_on(plane: &ControlPlane) -> Vec<String> {
    let client: Client = admin(plane).await;
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": field_schemas()}}});
    let mut manifest = fixtures::single("fidelities", schema.clone());
    // An irregular plural: the kind is not the plural minus its `s`.
    manifest["spec"]["names"]["kind"] = json!("Fidelity");
    install(&client, &manifest).await;
    let validator = Validator::new(
        &Schema::from_value(&schema).expect("schema"),
        plane.kube_minor,
    )
    .expect("the schema compiles");
    let api = example_objects(client, "Fidelity", "fidelities");

    let mut per_category: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut unexpected = Vec::new();
    let cases = cases();
    for (i, (category, label, spec)) in cases.iter().enumerate() {
        let obj = example_object("Fidelity", &format!("case-{i}"), spec);
        let verdict = server_verdict(&api, &obj)
            .await
            .unwrap_or_else(|e| panic!("{label}: the server did not answer: {e}"));
        let server = verdict.is_none();
        let outcome = validator.validate(&obj);
        let ours = outcome.violations.is_empty() && outcome.not_evaluated.is_empty();
        let entry = per_category.entry(category).or_default();
        entry.1 += 1;
        if ours == server {
            entry.0 += 1;
        } else if !KNOWN_LIMITATIONS.iter().any(|(l, _)| l == label) {
            unexpected.push(format!(
                "{category} {label}: server {}, ours {} {:?}",
                verdict.as_deref().unwrap_or("accepts"),
                if ours { "accepts" } else { "rejects" },
                outcome
                    .violations
                    .iter()
                    .map(|v| format!("{} {}", v.rule.id(), v.message))
                    .chain(outcome.not_evaluated.iter().map(|n| n.reason.clone()))
                    .collect::<Vec<_>>()
            ));
        }
    }
    eprintln!(
        "validator vs kube-apiserver {}, agreement per category:",
        plane.kube_version
    );
    for (category, (agree, total)) in &per_category {
        eprintln!("  {category:<12} {agree}/{total}");
    }
    assert!(cases.len() > 150, "a large set of cases");
    unexpected
}

/// Patterns Go's `regexp` accepts, reads differently from Rust, or rejects.
const PATTERNS: &[&str] = &[
    r"^[a&&b]$",
    r"a{,2}",
    r"x{01}",
    r"\Qa.b\E",
    r"\012",
    r"(?)a",
    r"(?<n>a)(?P<m>b)",
    r"a{1000}",
    r"(a{10}){100}",
    r"((a{10}b)c{10}){11}",
    r"\pL{1000}",
    r"[[:alpha:]]",
    r"\p{Greek}",
    r"(?i)k",
    r"a*?b+?",
    r"\<\>",
    r"[]a]",
    r"[\d\W]",
    r"a**",
    r"a{2}{3}",
    r"a+*",
    r"a{1001}",
    r"(a{100}){11}",
    r"\Z",
    r"\e",
    r"\1",
    r"(?=a)",
    r"(?<=a)b",
    r"(?x)a",
    r"(?-)a",
    r"[a--b]",
    r"[z-a]",
    r"[[:foo:]]",
    r"\C",
    r"*a",
    r"[\b]",
    r"\p{greek}",
    r"\p{Letter}",
    r"\p{Latn}",
    r"\p{Any}",
    r"\p{Lu}",
    r"\p{Cased_Letter}",
    r"\p{uppercase-letter}",
    r"\p{Ascii}",
    r"\p{Assigned}",
    r"\p{SignWriting}",
    r"\p{Nko}",
    r"\p{Old_Italic}",
    r"(a",
    r"a)",
];

/// Patterns where our check knowingly differs from the API server's Go.
const KNOWN_PATTERN_LIMITATIONS: &[(&str, &str)] = &[];

#[tokio::test]
async fn pattern_syntax_is_accepted_and_rejected_as_the_api_server_does() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let crds: Api<DynamicObject> = Api::all_with(
        client,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let mut disagreements = Vec::new();
    for pattern in PATTERNS {
        let manifest = fixtures::single(
            "patterns",
            json!({"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}),
        );
        let verdict = server_verdict(&crds, &manifest)
            .await
            .unwrap_or_else(|e| panic!("{pattern}: the server did not answer: {e}"));
        let ours = crd_safety::re2::compile_go(pattern);
        if verdict.is_none() != ours.is_ok()
            && !KNOWN_PATTERN_LIMITATIONS.iter().any(|(p, _)| p == pattern)
        {
            disagreements.push(format!(
                "{pattern}: server {}, ours {}",
                verdict.as_deref().unwrap_or("accepts"),
                ours.map(|_| "accepts".to_string())
                    .unwrap_or_else(|e| e.to_string())
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

/// The rules a release adds on `spec` (or its list), by message: the
/// `diff` verdict on each (`info`: cannot fail on an object valid under the
/// old schema; `error`: can) is checked against the server, which
/// validates copies of objects created under the old schema after the
/// update.
const NEW_RULES: &[(&str, &str, &str)] = &[
    (
        "rule-either",
        "has(self.configMapRef) || has(self.secretRef)",
        "info",
    ),
    (
        "rule-not-both",
        "!has(self.configMapRef) || !has(self.secretRef)",
        "info",
    ),
    ("rule-new-kind", "self.kind != 'C'", "info"),
    (
        "rule-cors-only-for-c",
        "!has(self.cors) || self.kind == 'C'",
        "info",
    ),
    ("rule-old-kind", "self.kind == 'A'", "error"),
    (
        "rule-short-note",
        "!has(self.note) || self.note.size() < 3",
        "error",
    ),
];

/// The rule on the list of `spec.items`.
const LIST_RULE: (&str, &str, &str) = (
    "rule-one-z",
    "self.filter(f, f.type == 'Z').size() <= 1",
    "info",
);

/// `spec` before and after the release: `kind` and `items[].type` gain an
/// enum value, `configMapRef` and `cors` are new, and the rules above are
/// added.
fn rules_release(new: bool) -> Value {
    let mut kinds = json!(["A", "B"]);
    let mut types = json!(["X", "Y"]);
    let mut props = json!({
        "kind": {"type": "string"},
        "secretRef": {"type": "object", "properties": {"name": {"type": "string"}}},
        "note": {"type": "string", "maxLength": 64},
        "items": {"type": "array", "maxItems": 10, "items": {"type": "object", "required": ["type"],
            "properties": {"type": {"type": "string"}}}}
    });
    let mut spec = json!({"type": "object", "required": ["kind", "secretRef"]});
    if new {
        kinds = json!(["A", "B", "C"]);
        types = json!(["X", "Y", "Z"]);
        props["configMapRef"] =
            json!({"type": "object", "properties": {"name": {"type": "string"}}});
        props["cors"] = json!({"type": "object", "properties": {"origin": {"type": "string"}}});
        spec["x-kubernetes-validations"] = NEW_RULES
            .iter()
            .map(|(message, rule, _)| json!({"rule": rule, "message": message}))
            .collect();
        props["items"]["x-kubernetes-validations"] =
            json!([{"rule": LIST_RULE.1, "message": LIST_RULE.0}]);
    }
    props["kind"]["enum"] = kinds;
    props["items"]["items"]["properties"]["type"]["enum"] = types;
    spec["properties"] = props;
    let root = json!({"type": "object", "properties": {"spec": spec}});
    fixtures::single("rulereleases", root)
}

#[tokio::test]
async fn a_rule_called_harmless_never_fails_on_the_server_and_one_called_an_error_does() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(dir.path(), "old.json", &rules_release(false));
    let new = support::live::write_manifest(dir.path(), "new.json", &rules_release(true));

    // Offline: the verdict on each added rule.
    let r = support::run::run(&["diff", &old, &new, "-o", "json", "--show-info"], None);
    let report = r.json();
    let mut offline = BTreeMap::new();
    for f in report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if f["check"] == "xValidations" {
            let message = f["new"]["message"].as_str().unwrap_or_default().to_string();
            offline.insert(
                message,
                f["severity"].as_str().unwrap_or_default().to_string(),
            );
        }
    }
    let expected: BTreeMap<String, String> = NEW_RULES
        .iter()
        .chain(std::iter::once(&LIST_RULE))
        .map(|(m, _, s)| (m.to_string(), s.to_string()))
        .collect();
    assert_eq!(offline, expected, "{}", r.stdout);

    // Objects valid under the old schema, covering its enum values, the
    // optional fields present and absent.
    install(&client, &rules_release(false)).await;
    let api = example_objects(client.clone(), "Rulerelease", "rulereleases");
    let specs = [
        json!({"kind": "A", "secretRef": {}, "items": [{"type": "X"}, {"type": "Y"}]}),
        json!({"kind": "B", "secretRef": {"name": "s"}, "note": "a long note", "items": []}),
        json!({"kind": "A", "secretRef": {"name": "t"}, "note": "ok",
               "items": [{"type": "Y"}, {"type": "Y"}, {"type": "X"}]}),
        json!({"kind": "B", "secretRef": {}}),
    ];
    let object = |name: String, spec: &Value| example_object("Rulerelease", &name, spec);
    for (i, spec) in specs.iter().enumerate() {
        let obj: DynamicObject =
            serde_json::from_value(object(format!("old-{i}"), spec)).expect("object");
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("object {i} valid under the old schema: {e}"));
    }

    // After the update, copies of the stored objects are created again (a
    // GitOps re-sync, a restore): which rules does the server apply? Once
    // the new schema is in effect (a long note is refused only by it).
    install(&client, &rules_release(true)).await;
    let probe = json!({"kind": "A", "secretRef": {}, "note": "a long probe"});
    until_in_effect(&api, &object("probe".to_string(), &probe), false).await;
    let mut failed = std::collections::BTreeSet::new();
    for (i, spec) in specs.iter().enumerate() {
        if let Some(message) = server_verdict(&api, &object(format!("copy-{i}"), spec))
            .await
            .unwrap_or_else(|e| panic!("copy {i}: the server did not answer: {e}"))
        {
            for (rule, _) in expected.iter() {
                if message.contains(rule.as_str()) {
                    failed.insert(rule.clone());
                }
            }
        }
    }
    let errors: std::collections::BTreeSet<String> = expected
        .iter()
        .filter(|(_, s)| *s == "error")
        .map(|(m, _)| m.clone())
        .collect();
    assert_eq!(
        failed, errors,
        "the rules the server fails on old objects are exactly those reported as errors"
    );
}

/// `spec` of the release that opened issue 42's three holes: an integer
/// `multipleOf: 5` becomes 2.5 (the server truncates it to 2 for
/// integers), a `{type: number, enum: [1, 2]}` gains `maximum: 2` (the
/// server's enum check stored 2.5), and an optional `level` gains `0` in
/// its enum and `default: 0` while the same release adds `self.level > 0`.
fn holes_release(new: bool) -> Value {
    let mut spec = json!({"type": "object", "properties": {
        "m": {"type": "integer", "multipleOf": 5},
        "n": {"type": "number", "enum": [1, 2]},
        "level": {"type": "integer", "enum": [1, 3, 5]}}});
    if new {
        spec["properties"]["m"]["multipleOf"] = json!(2.5);
        spec["properties"]["n"]["maximum"] = json!(2);
        spec["properties"]["level"] =
            json!({"type": "integer", "enum": [0, 1, 3, 5], "default": 0});
        spec["x-kubernetes-validations"] =
            json!([{"rule": "self.level > 0", "message": "level-positive"}]);
    }
    fixtures::single(
        "numholes",
        json!({"type": "object", "properties": {"spec": spec}}),
    )
}

#[tokio::test]
async fn issue_42s_three_holes_are_errors_and_the_server_refuses_what_they_hid() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(dir.path(), "old.json", &holes_release(false));
    let new = support::live::write_manifest(dir.path(), "new.json", &holes_release(true));

    // Offline, each is an error at its field.
    let r = support::run::run(&["diff", &old, &new, "-o", "json"], None);
    let errors: Vec<(String, String)> = r.json()["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            (
                f["check"].as_str().unwrap_or_default().to_string(),
                f["path"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for (check, path) in [
        ("multipleOf", "^.spec.m"),
        ("maximum", "^.spec.n"),
        ("xValidations", "^.spec"),
    ] {
        assert!(
            errors.iter().any(|(c, p)| c == check && p == path),
            "{check} at {path} is an error: {errors:?}\n{}",
            r.stdout
        );
    }

    // On the server: each stored object the old schema accepted...
    install(&client, &holes_release(false)).await;
    let api = example_objects(client.clone(), "Numhole", "numholes");
    let specs = [
        ("m-5", json!({"m": 5, "level": 1})),
        ("n-2-5", json!({"n": 2.5, "level": 3})),
        ("n-1-5", json!({"n": 1.5, "level": 5})),
        ("no-level", json!({})),
    ];
    for (name, spec) in &specs {
        let obj: DynamicObject =
            serde_json::from_value(example_object("Numhole", name, spec)).expect("object");
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{name} is valid under the old schema: {e}"));
    }
    // ...is kept by an unrelated change: --objects finds nothing invalid
    // (the enum check converts 2.5 to the enum value's type, as the
    // server's does).
    let mut unrelated = holes_release(false);
    unrelated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["color"] = json!({"type": "string"});
    let unrelated_path = support::live::write_manifest(dir.path(), "unrelated.json", &unrelated);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let check =
        support::live::apply_check(&unrelated_path, &kubeconfig, &["--objects", "-o", "json"]);
    let invalid: Vec<Value> = check.json()["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "invalidObjects")
        .cloned()
        .collect();
    assert!(
        invalid.is_empty(),
        "no stored object is invalid: {invalid:?}"
    );

    // ...and after the update the server refuses a copy of each.
    install(&client, &holes_release(true)).await;
    // An object without `level` now reads level 0, which the new rule
    // refuses: once it does, the new schema is in effect.
    until_in_effect(&api, &example_object("Numhole", "probe", &json!({})), false).await;
    for (name, spec) in &specs {
        let verdict = server_verdict(
            &api,
            &example_object("Numhole", &format!("{name}-copy"), spec),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: the server did not answer: {e}"));
        let refused_for = match *name {
            "m-5" => "multiple of",
            "n-2-5" => "less than or equal to 2",
            "n-1-5" => "",
            _ => "level-positive",
        };
        match (refused_for, verdict) {
            ("", None) => {}
            ("", Some(m)) => panic!("{name} still passes after the update, but: {m}"),
            (why, Some(m)) => assert!(m.contains(why), "{name}: refused for {why}: {m}"),
            (why, None) => panic!("{name}: the server accepts it, but {why} should refuse it"),
        }
    }
}

/// `^.spec` with `tpp` and `cloud` and the rule "exactly one of them"; the
/// new release adds `ngts` and extends the rule to it, or (`weaker`)
/// relaxes it to "not both".
fn rewritten_rule_release(new: Option<&str>) -> Value {
    let mut spec = json!({"type": "object", "properties": {
        "tpp": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "cloud": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "x-kubernetes-validations": [{"rule": "(has(self.tpp) ? 1 : 0) + (has(self.cloud) ? 1 : 0) == 1",
            "message": "exactly one"}]});
    if let Some(rule) = new {
        spec["properties"]["ngts"] =
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        spec["x-kubernetes-validations"] = json!([{"rule": rule, "message": "rewritten"}]);
    }
    fixtures::single(
        "rewrites",
        json!({"type": "object", "properties": {"spec": spec}}),
    )
}

#[tokio::test]
async fn a_rule_the_old_rule_implies_is_info_and_the_server_keeps_accepting_stored_objects() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(dir.path(), "old.json", &rewritten_rule_release(None));
    let implied = [
        "(has(self.tpp) ? 1 : 0) + (has(self.cloud) ? 1 : 0) + (has(self.ngts) ? 1 : 0) == 1",
        "!(has(self.tpp) && has(self.cloud))",
    ];
    for rule in implied {
        let new = support::live::write_manifest(
            dir.path(),
            "new.json",
            &rewritten_rule_release(Some(rule)),
        );
        let r = support::run::run(&["diff", &old, &new, "-o", "json", "--show-info"], None);
        let rules: Vec<Value> = r.json()["crds"][0]["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["check"] == "xValidations")
            .cloned()
            .collect();
        assert!(
            !rules.is_empty() && rules.iter().all(|f| f["severity"] == "info"),
            "`{rule}` follows from the old rule: {rules:?}"
        );
    }
    // On the server: every object the old rule accepts passes both new
    // rules; the one it refuses would have failed them too.
    install(&client, &rewritten_rule_release(None)).await;
    let api = example_objects(client.clone(), "Rewrite", "rewrites");
    let stored = [
        ("tpp-only", json!({"tpp": {}})),
        ("cloud-only", json!({"cloud": {"zone": "a"}})),
    ];
    for (name, spec) in &stored {
        let obj: DynamicObject =
            serde_json::from_value(example_object("Rewrite", name, spec)).expect("object");
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{name} is valid under the old schema: {e}"));
    }
    // What only the new rule accepts tells that it is in effect.
    let probes = [json!({"ngts": {}}), json!({})];
    for (rule, probe) in implied.iter().zip(&probes) {
        install(&client, &rewritten_rule_release(Some(rule))).await;
        until_in_effect(&api, &example_object("Rewrite", "probe", probe), true).await;
        for (name, spec) in &stored {
            let verdict = server_verdict(
                &api,
                &example_object("Rewrite", &format!("{name}-copy"), spec),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: the server did not answer: {e}"));
            assert_eq!(verdict, None, "{name} under `{rule}`");
        }
    }
}

/// Strimzi's shape (0.23 -> 0.45): trusted certificates whose old schema
/// required `certificate` gain `pattern` and "exactly one of them"; env
/// entries whose `value` was optional gain `valueFrom` and the same
/// choice.
fn one_of_release(new: bool) -> Value {
    let mut cert = json!({"type": "object", "required": ["certificate", "secretName"],
        "properties": {"certificate": {"type": "string"}, "secretName": {"type": "string"}}});
    let mut env = json!({"type": "object",
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}}});
    if new {
        cert["required"] = json!(["secretName"]);
        cert["properties"]["pattern"] = json!({"type": "string"});
        cert["oneOf"] = json!([{"properties": {"certificate": {}}, "required": ["certificate"]},
                              {"properties": {"pattern": {}}, "required": ["pattern"]}]);
        env["properties"]["valueFrom"] =
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        env["oneOf"] = json!([{"properties": {"value": {}}, "required": ["value"]},
                             {"properties": {"valueFrom": {}}, "required": ["valueFrom"]}]);
    }
    fixtures::single(
        "choices",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "certs": {"type": "array", "items": cert},
            "env": {"type": "array", "items": env}}}}}),
    )
}

#[tokio::test]
async fn a_one_of_an_old_required_field_selects_is_info_and_the_server_keeps_accepting_it() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(dir.path(), "old.json", &one_of_release(false));
    let new = support::live::write_manifest(dir.path(), "new.json", &one_of_release(true));
    let r = support::run::run(&["diff", &old, &new, "-o", "json", "--show-info"], None);
    let one_of = |path: &str| -> Value {
        r.json()["crds"][0]["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["check"] == "oneOf" && f["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("a oneOf finding at {path}: {}", r.stdout))
    };
    let certs = one_of("^.spec.certs[*]");
    assert_eq!(certs["severity"], "info", "{certs}");
    support::runs::assert_has(
        certs["message"].as_str().unwrap_or_default(),
        "the old schema requires certificate",
    );
    assert_eq!(one_of("^.spec.env[*]")["severity"], "error");
    // On the server: what the old schema stored still passes; an env entry
    // with a name only, valid before, fits no branch now.
    install(&client, &one_of_release(false)).await;
    let api = example_objects(client.clone(), "Choice", "choices");
    let stored = json!({"certs": [{"certificate": "ca.crt", "secretName": "s"}],
                        "env": [{"name": "A", "value": "1"}]});
    let name_only = json!({"env": [{"name": "A"}]});
    for (name, spec) in [("stored", &stored), ("name-only", &name_only)] {
        let obj: DynamicObject =
            serde_json::from_value(example_object("Choice", name, spec)).expect("object");
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{name} is valid under the old schema: {e}"));
    }
    install(&client, &one_of_release(true)).await;
    // A certificate entry with neither field fits no branch once it is in effect.
    until_in_effect(
        &api,
        &example_object("Choice", "probe", &json!({"certs": [{"secretName": "s"}]})),
        false,
    )
    .await;
    let verdict = server_verdict(&api, &example_object("Choice", "stored-copy", &stored)).await;
    assert_eq!(verdict, Ok(None), "the stored object still passes");
    let verdict = server_verdict(
        &api,
        &example_object("Choice", "name-only-copy", &name_only),
    )
    .await;
    assert!(
        matches!(&verdict, Ok(Some(m)) if m.contains("oneOf")),
        "the env entry without value fails: {verdict:?}"
    );
}

/// ECK's shape (1.4 -> 1.9): `v1beta1` and `v1` served with conversion
/// None, both requiring `spec.version`; the new release stops requiring it
/// in `v1beta1`.
fn required_between_versions_release(new: bool) -> Value {
    let spec = |required: bool| {
        let mut s = json!({"type": "object", "properties": {
            "version": {"type": "string"}, "count": {"type": "integer"}}});
        if required {
            s["required"] = json!(["version"]);
        }
        json!({"type": "object", "properties": {"spec": s}})
    };
    fixtures::crd(
        "stacks",
        vec![
            fixtures::version("v1beta1", true, false, spec(!new)),
            fixtures::version("v1", true, true, spec(true)),
        ],
    )
}

#[tokio::test]
async fn a_field_the_old_crd_required_in_every_version_is_only_a_warning_between_new_versions() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(
        dir.path(),
        "old.json",
        &required_between_versions_release(false),
    );
    let new = support::live::write_manifest(
        dir.path(),
        "new.json",
        &required_between_versions_release(true),
    );
    let r = support::run::run(&["diff", &old, &new, "-o", "json", "--show-info"], None);
    let required: Vec<Value> = r.json()["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "required")
        .cloned()
        .collect();
    assert!(
        !required.is_empty() && required.iter().all(|f| f["severity"] == "warning"),
        "{required:?}"
    );
    support::runs::assert_has(
        required[0]["message"].as_str().unwrap_or_default(),
        "Every stored object has it",
    );
    // On the server: an object written through v1beta1 before the update
    // has `version`, so changing it through v1 afterwards passes; one
    // created through v1beta1 afterwards without it is what the warning
    // is about.
    install(&client, &required_between_versions_release(false)).await;
    let ar = |v: &str| {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", v, "Stack"),
            "stacks",
        )
    };
    let beta: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar("v1beta1"));
    let v1: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar("v1"));
    let object = |name: &str, spec: Value| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1beta1", "kind": "Stack",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}))
        .expect("object")
    };
    beta.create(
        &PostParams::default(),
        &object("before", json!({"version": "8.0.0"})),
    )
    .await
    .expect("valid under the old schema");
    install(&client, &required_between_versions_release(true)).await;
    // In effect once v1beta1 takes an object without `version`.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match beta
            .create(
                &PostParams::default(),
                &object("after", json!({"count": 1})),
            )
            .await
        {
            Ok(_) => break,
            Err(e) => assert!(
                std::time::Instant::now() < deadline,
                "v1beta1 still requires version after 30 s: {e}"
            ),
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let patch = kube::api::Patch::Merge(json!({"spec": {"count": 3}}));
    v1.patch("before", &kube::api::PatchParams::default(), &patch)
        .await
        .expect("the stored object has version: its update through v1 passes");
    let refused = v1
        .patch("after", &kube::api::PatchParams::default(), &patch)
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 422),
        "the object created through v1beta1 without version cannot be changed through v1: {refused:?}"
    );
}

/// opentelemetry-operator's shape (v0.97 -> v0.100): `spec.selector` is a
/// map of strings in `v1alpha1` and a label selector in `v1beta1`, which
/// the new release adds as the storage version, with conversion None.
fn selector_release(new: bool) -> Value {
    let root = |selector: Value| {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"selector": selector}}}})
    };
    let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let label_selector = json!({"type": "object", "properties": {"matchLabels": map.clone()}});
    let mut versions = vec![fixtures::version("v1alpha1", true, !new, root(map))];
    if new {
        versions.push(fixtures::version(
            "v1beta1",
            true,
            true,
            root(label_selector),
        ));
    }
    fixtures::crd("selectors", versions)
}

#[tokio::test]
async fn a_map_the_storage_version_does_not_describe_loses_its_entries_on_the_server() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(dir.path(), "old.json", &selector_release(false));
    let new = support::live::write_manifest(dir.path(), "new.json", &selector_release(true));
    let r = support::run::run(&["diff", &old, &new, "-o", "json"], None);
    let losses: Vec<(String, String)> = r.json()["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "conversionDataLoss")
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (s("path"), s("severity"))
        })
        .collect();
    assert!(
        losses.contains(&("^.spec.selector{*}".to_string(), "error".to_string())),
        "{losses:?}\n{}",
        r.stdout
    );
    // On the server: an entry written through v1alpha1 is gone once stored
    // as v1beta1, read back through either version.
    install(&client, &selector_release(true)).await;
    let ar = |v: &str| {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", v, "Selector"),
            "selectors",
        )
    };
    let alpha: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("v1alpha1"));
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Selector",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}}}))
    .expect("object");
    // The new storage version is in effect once an object written through
    // v1alpha1 comes back without the entry; until then it is stored as
    // v1alpha1 and keeps it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut attempt = 0;
    loop {
        let name = format!("web-{attempt}");
        let mut o = object.clone();
        o.metadata.name = Some(name.clone());
        alpha
            .create(&PostParams::default(), &o)
            .await
            .expect("valid through v1alpha1");
        let read = alpha.get(&name).await.expect("readable");
        let beta: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "default", &ar("v1beta1"));
        let stored = beta.get(&name).await.expect("readable through v1beta1");
        if read.data["spec"]["selector"].get("app").is_none() {
            assert!(
                stored.data["spec"]["selector"].get("app").is_none(),
                "{:?}",
                stored.data
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the entry is still stored after 30 s: {:?}",
            read.data
        );
        attempt += 1;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Gateway API's TLSRoute `hostnames` item pattern before v1.5.
const TLS_HOSTNAME: &str =
    "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// The rules v1.5.1 added on `hostnames`: (message, rule, verdict).
const HOSTNAME_RULES: [(&str, &str, &str); 3] = [
    ("no IP", "self.all(h, !isIP(h))", "error"),
    (
        "plain RFC 1123",
        "self.all(h, !h.contains('*') ? h.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$') : true)",
        "info",
    ),
    (
        "wildcard first",
        "self.all(h, h.contains('*') ? (h.startsWith('*.') && h.substring(2).matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$')) : true)",
        "info",
    ),
];

/// `^.spec.hostnames` as Gateway API's TLSRoute has it, with the rules
/// v1.5.1 added when `new`.
fn hostnames_release(new: bool) -> Value {
    let mut hostnames = json!({"type": "array", "maxItems": 16, "items": {
        "type": "string", "minLength": 1, "maxLength": 253, "pattern": TLS_HOSTNAME}});
    if new {
        hostnames["x-kubernetes-validations"] = HOSTNAME_RULES
            .iter()
            .map(|(message, rule, _)| json!({"rule": rule, "message": message}))
            .collect();
    }
    fixtures::single(
        "tlshosts",
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"hostnames": hostnames}}}}),
    )
}

#[tokio::test]
async fn rules_the_old_pattern_implies_keep_accepting_stored_hostnames_and_is_ip_refuses_its_witness()
 {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(dir.path(), "old.json", &hostnames_release(false));
    let new = support::live::write_manifest(dir.path(), "new.json", &hostnames_release(true));
    let r = support::run::run(&["diff", &old, &new, "-o", "json", "--show-info"], None);
    let findings: Vec<Value> = r.json()["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "xValidations")
        .cloned()
        .collect();
    let verdict = |message: &str| {
        findings
            .iter()
            .find(|f| f["new"]["message"] == message)
            .unwrap_or_else(|| panic!("a finding for `{message}`: {}", r.stdout))
    };
    for (message, _, severity) in HOSTNAME_RULES {
        assert_eq!(
            verdict(message)["severity"],
            severity,
            "{message}: {}",
            r.stdout
        );
    }
    assert!(
        verdict("plain RFC 1123")["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("the old pattern `{TLS_HOSTNAME}` implies it"))),
        "{}",
        r.stdout
    );
    let witness = verdict("no IP")["witness"].clone();
    assert!(
        witness.is_array(),
        "the isIP error names a witness: {}",
        r.stdout
    );

    // On the server: hostnames the old pattern allows, wildcards and
    // dotted digits among them, stored under the old schema.
    install(&client, &hostnames_release(false)).await;
    let api = example_objects(client.clone(), "Tlshost", "tlshosts");
    let stored = [
        ("plain", json!(["example.com", "a", "x-1.y-2.z"])),
        ("wildcard", json!(["*.example.com", "*.a"])),
        ("digits", json!(["0.example", "1-2.3"])),
        ("witness", witness.clone()),
    ];
    for (name, hostnames) in &stored {
        let obj: DynamicObject = serde_json::from_value(example_object(
            "Tlshost",
            name,
            &json!({"hostnames": hostnames}),
        ))
        .expect("object");
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{name} is valid under the old pattern: {e}"));
    }
    install(&client, &hostnames_release(true)).await;
    let probe = example_object("Tlshost", "probe", &json!({"hostnames": ["10.0.0.1"]}));
    until_in_effect(&api, &probe, false).await;
    for (name, hostnames) in &stored {
        let copy = example_object(
            "Tlshost",
            &format!("{name}-copy"),
            &json!({"hostnames": hostnames}),
        );
        let verdict = server_verdict(&api, &copy)
            .await
            .unwrap_or_else(|e| panic!("{name}: the server did not answer: {e}"));
        if *name == "witness" {
            // The rule reported as an error refuses the value it names.
            assert!(
                verdict.as_deref().is_some_and(|m| m.contains("no IP")),
                "{witness} under the new rules: {verdict:?}"
            );
        } else {
            // Neither implied rule refuses a stored hostname.
            assert_eq!(verdict, None, "{name} under the new rules");
        }
    }
}

/// The findings `diff OLD NEW --show-info` gives the first CRD, those
/// `keep` selects.
fn diff_findings(old: &Value, new: &Value, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = support::live::write_manifest(dir.path(), "old.json", old);
    let new = support::live::write_manifest(dir.path(), "new.json", new);
    let r = support::run::run(&["diff", &old, &new, "-o", "json", "--show-info"], None);
    r.json()["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| keep(f))
        .cloned()
        .collect()
}

/// Creates `stored` (each valid under the CRD installed now, OLD), then
/// installs `new` and waits until it judges: NEW's `probe` enum refuses
/// `"old"`.
async fn store_then_switch(
    client: &Client,
    api: &Api<DynamicObject>,
    kind: &str,
    stored: &[(&str, Value)],
    new: &Value,
) {
    for (name, spec) in stored {
        let obj: DynamicObject =
            serde_json::from_value(example_object(kind, name, spec)).expect("object");
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{name} is valid under OLD: {e}"));
    }
    install(client, new).await;
    let probe = example_object(kind, "probe", &json!({"probe": "old"}));
    until_in_effect(api, &probe, false).await;
}

/// Copies of `stored` are created under the schema in effect.
async fn copies_accepted(api: &Api<DynamicObject>, kind: &str, stored: &[(&str, Value)]) {
    for (name, spec) in stored {
        let copy = example_object(kind, &format!("{name}-copy"), spec);
        assert_eq!(
            server_verdict(api, &copy)
                .await
                .expect("the server answers"),
            None,
            "{name} under NEW"
        );
    }
}

/// Karpenter v0.33 -> v0.37's `kubeReserved`: int-or-string map values
/// become strings, under a map rule that is an error on an integer value.
fn reserved_release(new: bool) -> Value {
    let value = if new {
        json!({"type": "string"})
    } else {
        json!({"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]})
    };
    fixtures::single(
        "reserveds",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "probe": {"type": "string", "enum": if new { json!(["new"]) } else { json!(["old", "new"]) }},
            "reserved": {"type": "object", "additionalProperties": value,
                "x-kubernetes-validations": [{"rule": "self.all(x, !self[x].startsWith('-'))"}]}}}}}),
    )
}

#[tokio::test]
async fn int_or_string_values_the_old_rule_refused_as_integers_become_strings_safely() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let at_values = diff_findings(&reserved_release(false), &reserved_release(true), |f| {
        f["path"] == "^.spec.reserved{*}"
    });
    assert!(
        !at_values.is_empty()
            && at_values.iter().all(|f| f["severity"] == "info")
            && at_values.iter().any(|f| f["check"] == "intOrString"),
        "{at_values:?}"
    );
    // On the server, OLD refuses every integer value: the rule cannot
    // evaluate `startsWith` on one. A string is stored.
    install(&client, &reserved_release(false)).await;
    let api = example_objects(client.clone(), "Reserved", "reserveds");
    let int = example_object("Reserved", "int", &json!({"reserved": {"cpu": 1}}));
    let refused = server_verdict(&api, &int)
        .await
        .expect("the server answers");
    assert!(refused.is_some(), "OLD stored an integer value");
    let stored = [("stored", json!({"reserved": {"cpu": "100m"}}))];
    store_then_switch(&client, &api, "Reserved", &stored, &reserved_release(true)).await;
    // Under NEW, the stored object is re-created and updated as it is.
    copies_accepted(&api, "Reserved", &stored).await;
    let mut current = api.get("stored").await.expect("stored object");
    current.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
    api.replace("stored", &PostParams::default(), &current)
        .await
        .expect("an update of the stored object is accepted under NEW");
}

/// Gateway API v1.3.0 -> v1.4.1's address uniqueness: the same rule with
/// `has(value)` guards, which the old rule needed (it could not evaluate
/// an IPAddress entry without a value).
fn guarded_release(new: bool) -> Value {
    let rule = if new {
        "self.all(a1, a1.type == 'IPAddress' && has(a1.value) ? self.exists_one(a2, a2.type == a1.type \
&& has(a2.value) && a2.value == a1.value) : true)"
    } else {
        "self.all(a1, a1.type == 'IPAddress' ? self.exists_one(a2, a2.type == a1.type && a2.value == \
a1.value) : true)"
    };
    fixtures::single(
        "guardeds",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "probe": {"type": "string", "enum": if new { json!(["new"]) } else { json!(["old", "new"]) }},
            "addresses": {"type": "array", "maxItems": 16, "items": {"type": "object",
                "required": ["type"], "properties": {
                    "type": {"type": "string", "maxLength": 253},
                    "value": {"type": "string", "maxLength": 253}}},
                "x-kubernetes-validations": [{"rule": rule, "message": "IPAddress values must be unique"}]}}}}}),
    )
}

#[tokio::test]
async fn a_rule_rewritten_with_guards_the_old_rule_needed_keeps_accepting_stored_objects() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let rules = diff_findings(&guarded_release(false), &guarded_release(true), |f| {
        f["check"] == "xValidations"
    });
    assert!(
        !rules.is_empty() && rules.iter().all(|f| f["severity"] == "info"),
        "{rules:?}"
    );
    install(&client, &guarded_release(false)).await;
    let api = example_objects(client.clone(), "Guarded", "guardeds");
    // The premise: OLD cannot evaluate an IPAddress entry without a value,
    // so it stores none.
    let bare = json!({"addresses": [{"type": "IPAddress"}]});
    let refused = server_verdict(&api, &example_object("Guarded", "bare", &bare))
        .await
        .expect("the server answers");
    assert!(refused.is_some(), "OLD stored an IPAddress without a value");
    let stored = [
        (
            "ips",
            json!({"addresses": [{"type": "IPAddress", "value": "192.0.2.1"},
            {"type": "IPAddress", "value": "192.0.2.2"}]}),
        ),
        (
            "mixed",
            json!({"addresses": [{"type": "Hostname"}, {"type": "IPAddress", "value": "192.0.2.1"},
            {"type": "Hostname", "value": "a.example.com"}]}),
        ),
        ("none", json!({"addresses": []})),
    ];
    store_then_switch(&client, &api, "Guarded", &stored, &guarded_release(true)).await;
    copies_accepted(&api, "Guarded", &stored).await;
    // A duplicate is still refused: the rule kept its meaning.
    let dup = json!({"addresses": [{"type": "IPAddress", "value": "192.0.2.1"},
        {"type": "IPAddress", "value": "192.0.2.1"}]});
    let refused = server_verdict(&api, &example_object("Guarded", "dup", &dup))
        .await
        .expect("the server answers");
    assert!(refused.is_some(), "NEW took a duplicate address");
}

/// Knative v1.12 -> v1.23's shape: a `type: string` field loses
/// `x-kubernetes-preserve-unknown-fields`, which kept nothing on a string.
fn scalar_preserve_release(new: bool) -> Value {
    let mut name = json!({"type": "string"});
    if !new {
        name["x-kubernetes-preserve-unknown-fields"] = json!(true);
    }
    fixtures::single(
        "scalarkeeps",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "probe": {"type": "string", "enum": if new { json!(["new"]) } else { json!(["old", "new"]) }},
            "name": name}}}}),
    )
}

#[tokio::test]
async fn a_preserve_marker_removed_from_a_string_prunes_nothing_on_the_server() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let findings = diff_findings(
        &scalar_preserve_release(false),
        &scalar_preserve_release(true),
        |f| f["path"] == "^.spec.name",
    );
    assert!(
        findings
            .iter()
            .any(|f| f["check"] == "preserveUnknownFields" && f["severity"] == "info")
            && findings.iter().all(|f| f["severity"] == "info"),
        "{findings:?}"
    );
    install(&client, &scalar_preserve_release(false)).await;
    let api = example_objects(client.clone(), "Scalarkeep", "scalarkeeps");
    let stored = [("stored", json!({"name": "abc"}))];
    store_then_switch(
        &client,
        &api,
        "Scalarkeep",
        &stored,
        &scalar_preserve_release(true),
    )
    .await;
    // Read and written again under NEW, the value is what was stored.
    let mut current = api.get("stored").await.expect("stored object");
    assert_eq!(current.data["spec"]["name"], "abc");
    current.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
    let written = api
        .replace("stored", &PostParams::default(), &current)
        .await
        .expect("an update under NEW");
    assert_eq!(written.data["spec"], json!({"name": "abc"}));
}

/// Istio 1.24 -> 1.28's ServiceEntry rules, rewritten with `has(x) ? x : d`.
fn istio_rewrite_release(new: bool) -> Value {
    let rules = if new {
        json!([
            {"rule": "(has(self.address) ? self.address : \"\").startsWith(\"unix://\") ? !has(self.ports) : true",
             "message": "UDS may not include ports"},
            {"rule": "((has(self.resolution) ? self.resolution : \"\") == \"DNS_ROUND_ROBIN\") ? ((has(self.endpoints) ? self.endpoints : []).size() <= 1) : true",
             "message": "DNS_ROUND_ROBIN mode cannot have multiple endpoints"}])
    } else {
        json!([
            {"rule": "(has(self.address) && self.address.startsWith('unix://')) ? !has(self.ports) : true",
             "message": "UDS may not include ports"},
            {"rule": "(has(self.resolution) && self.resolution == 'DNS_ROUND_ROBIN') ? (!has(self.endpoints) || size(self.endpoints) == 1) : true",
             "message": "DNS_ROUND_ROBIN mode cannot have multiple endpoints"}])
    };
    fixtures::single(
        "istiorewrites",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "probe": {"type": "string", "enum": if new { json!(["new"]) } else { json!(["old", "new"]) }},
            "address": {"type": "string", "maxLength": 256},
            "ports": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "resolution": {"type": "string", "enum": ["NONE", "STATIC", "DNS", "DNS_ROUND_ROBIN"]},
            "endpoints": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 64}}},
            "x-kubernetes-validations": rules}}}),
    )
}

#[tokio::test]
async fn rules_rewritten_with_defaults_for_absent_fields_keep_accepting_stored_objects() {
    let Some(plane) = control_plane() else { return };
    let client: Client = admin(plane).await;
    let rules = diff_findings(
        &istio_rewrite_release(false),
        &istio_rewrite_release(true),
        |f| f["check"] == "xValidations",
    );
    assert!(
        rules.len() == 2 && rules.iter().all(|f| f["severity"] == "info"),
        "{rules:?}"
    );
    install(&client, &istio_rewrite_release(false)).await;
    let api = example_objects(client.clone(), "Istiorewrite", "istiorewrites");
    let stored = [
        ("uds", json!({"address": "unix:///sock"})),
        ("tcp", json!({"address": "10.0.0.1", "ports": {"http": 80}})),
        ("bare", json!({"ports": {"http": 80}})),
        (
            "rr-one",
            json!({"resolution": "DNS_ROUND_ROBIN", "endpoints": ["a"]}),
        ),
        ("rr-none", json!({"resolution": "DNS_ROUND_ROBIN"})),
        (
            "dns-many",
            json!({"resolution": "DNS", "endpoints": ["a", "b"]}),
        ),
    ];
    store_then_switch(
        &client,
        &api,
        "Istiorewrite",
        &stored,
        &istio_rewrite_release(true),
    )
    .await;
    copies_accepted(&api, "Istiorewrite", &stored).await;
    // The rules kept their meaning.
    for refused in [
        json!({"address": "unix:///sock", "ports": {"http": 80}}),
        json!({"resolution": "DNS_ROUND_ROBIN", "endpoints": ["a", "b"]}),
    ] {
        let verdict = server_verdict(&api, &example_object("Istiorewrite", "refused", &refused))
            .await
            .expect("the server answers");
        assert!(verdict.is_some(), "NEW took {refused}");
    }
}
