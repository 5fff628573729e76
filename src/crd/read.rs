//! Reading a CRD's JSON with the version schemas going straight into the
//! model (see [`crate::schema::read`]); the rest of the document, small,
//! is read into a `Value` as usual.

use serde::de::{DeserializeSeed, MapAccess, SeqAccess};
use serde_json::{Map, Value};

use crate::json::written_len;
use crate::schema::path::Trail;
use crate::schema::read::{ByShape, Node, Read, Shaped};

/// A document read by [`document`].
pub(super) struct Document {
    /// The document without any `spec.versions[*].schema.openAPIV3Schema`.
    pub manifest: Value,
    /// The schema of each entry of `spec.versions` (by position), for an
    /// entry that has one.
    pub schemas: Vec<Option<Read>>,
}

/// Reads `json`: one JSON value, nothing after it but whitespace.
pub(super) fn document(json: &[u8]) -> Result<Document, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let (manifest, schemas) = ByShape(Keyed(Level::Document)).deserialize(&mut de)?;
    de.end()?;
    Ok(Document { manifest, schemas })
}

/// The compact JSON length of the whole document: `manifest` as read, plus
/// the `"openAPIV3Schema":…` entry taken out of each version, whose schema
/// was `lens[i]` bytes long.
pub(super) fn document_len(manifest: &Value, lens: &[Option<usize>]) -> usize {
    let versions = manifest.pointer("/spec/versions").and_then(Value::as_array);
    let taken: usize = lens
        .iter()
        .enumerate()
        .filter_map(|(i, len)| {
            let len = (*len)?;
            // The schema object's other entries, if any, need a comma.
            let others = versions
                .and_then(|v| v.get(i))
                .and_then(|v| v.get("schema"))
                .and_then(Value::as_object)
                .map_or(0, Map::len);
            Some(written_len(SCHEMA_KEY) + 1 + len + usize::from(others > 0))
        })
        .sum();
    written_len(manifest) + taken
}

const SCHEMA_KEY: &str = "openAPIV3Schema";

/// Where in the document an object is: the levels on the way to a schema.
#[derive(Clone, Copy)]
enum Level {
    Document,
    Spec,
    Version,
    SchemaHolder,
}

impl Level {
    /// The level below `key`, if it is on the way to a schema.
    fn below(self, key: &str) -> Option<Level> {
        match (self, key) {
            (Level::Document, "spec") => Some(Level::Spec),
            (Level::Version, "schema") => Some(Level::SchemaHolder),
            _ => None,
        }
    }
}

/// The schemas found below one value: by version position.
type Found = Vec<Option<Read>>;

/// An object on the way to a schema: its entries read as `Value`s but for
/// the one key that leads further down.
struct Keyed(Level);

impl<'de> Shaped<'de> for Keyed {
    type Out = (Value, Found);

    fn map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut out = Map::new();
        let mut found = Found::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match (self.0, key.as_str()) {
                (Level::Spec, "versions") => {
                    let (value, schemas) = map.next_value_seed(ByShape(Versions))?;
                    found = schemas;
                    value
                }
                (Level::SchemaHolder, SCHEMA_KEY) => {
                    let root = Trail::ROOT;
                    let schema = map.next_value_seed(ByShape(Node {
                        at: &root,
                        depth: 0,
                    }))?;
                    // A later repetition replaces an earlier one.
                    found = vec![Some(schema)];
                    continue;
                }
                (level, key) => match level.below(key) {
                    Some(below) => {
                        let (value, schemas) = map.next_value_seed(ByShape(Keyed(below)))?;
                        found = schemas;
                        value
                    }
                    None => map.next_value::<Value>()?,
                },
            };
            // As a `serde_json::Map` does, a repeated key replaces the
            // value and keeps its first place; what a replaced value held
            // below was replaced above too.
            out.insert(key, value);
        }
        Ok((Value::Object(out), found))
    }

    fn other(self, value: Value) -> Self::Out {
        (value, Found::new())
    }
}

/// `spec.versions`: a list of versions.
struct Versions;

impl<'de> Shaped<'de> for Versions {
    type Out = (Value, Found);

    fn seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Out, A::Error> {
        let mut out = Vec::new();
        let mut found = Found::new();
        while let Some((value, mut schemas)) =
            seq.next_element_seed(ByShape(Keyed(Level::Version)))?
        {
            out.push(value);
            found.push(schemas.pop().flatten());
        }
        Ok((Value::Array(out), found))
    }

    fn other(self, value: Value) -> Self::Out {
        (value, Found::new())
    }
}

#[cfg(test)]
mod tests {
    use crate::crd::{Crd, CrdError};
    use serde_json::Value;

    /// The webhook's reading of `json` and the CLI's (parse, model, drop
    /// the schemas' JSON) give the same CRD, or errors saying the same.
    fn same_both_ways(json: &str) -> Result<Crd, String> {
        let streamed = Crd::from_json(json.as_bytes());
        let via_value = serde_json::from_str::<Value>(json)
            .map_err(CrdError::Unreadable)
            .and_then(Crd::from_manifest)
            .map(Crd::without_schema_json);
        match (streamed, via_value) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.name, b.name);
                assert_eq!(a.spec, b.spec);
                assert_eq!(a.versions.len(), b.versions.len());
                for (x, y) in a.versions.iter().zip(&b.versions) {
                    assert_eq!(x.spec, y.spec);
                    assert_eq!(x.schema, y.schema, "version {}", x.name());
                }
                assert_eq!(a.stored_versions, b.stored_versions);
                assert_eq!(a.manifest, b.manifest);
                assert_eq!(a.json_len(), b.json_len(), "the document's length");
                Ok(a)
            }
            (Err(CrdError::Unreadable(_)), Err(CrdError::Unreadable(_))) => {
                Err("unreadable".into())
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string());
                Err(a.to_string())
            }
            (a, b) => panic!(
                "the two readings disagree: {:?} against {:?}",
                a.map(|c| c.name),
                b.map(|c| c.name)
            ),
        }
    }

    fn crd_with(schema: &str) -> String {
        format!(
            r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{{"name":"widgets.example.com"}},
            "spec":{{"group":"example.com","scope":"Namespaced",
              "names":{{"kind":"Widget","plural":"widgets"}},
              "versions":[{{"name":"v1","served":true,"storage":true,
                "schema":{{"openAPIV3Schema":{schema}}}}}]}}}}"#
        )
    }

    #[test]
    fn real_crds_read_the_same_from_json_as_from_their_value() {
        let Some(dir) = crate::manifest::test_corpus() else {
            return;
        };
        // The bench's large CRD, and projects whose schemas use most of
        // what a schema can say (CEL, formats, int-or-string, maps).
        let files = [
            "eck/v3.5.0",
            "cert-manager/v1.21.1",
            "gateway-api-experimental/v1.6.1",
            "keda/v2.20.2",
        ];
        let mut crds = 0;
        for release in files {
            let mut paths: Vec<_> = std::fs::read_dir(dir.join(release))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            paths.sort();
            for path in paths {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let label = path.display().to_string();
                let Ok(docs) = crate::manifest::read_values(&text, &label) else {
                    continue;
                };
                for (doc, _) in docs {
                    if doc["kind"] != "CustomResourceDefinition" {
                        continue;
                    }
                    for json in [
                        serde_json::to_string(&doc).unwrap_or_default(),
                        serde_json::to_string_pretty(&doc).unwrap_or_default(),
                    ] {
                        let crd = same_both_ways(&json).unwrap_or_else(|e| panic!("{label}: {e}"));
                        assert_eq!(crd.json_len(), crate::json::written_len(&doc));
                    }
                    crds += 1;
                }
            }
        }
        assert!(crds > 20, "only {crds} CRDs read");
    }

    #[test]
    fn spellings_and_repeated_keys_read_the_same_both_ways() {
        for schema in [
            // Escapes in keys and values, written back unescaped or not.
            r#"{"type":"object","description":"caf\u00e9 \"q\" \/ \n \u0001 \t","properties":{"a\u0062\n":{"type":"string","pattern":"^\\d+$"}}}"#,
            // Numbers spelled otherwise than serde_json writes them.
            r#"{"type":"object","properties":{"n":{"type":"number","minimum":1e5,"maximum":1.50,"default":-0,"multipleOf":1E-3}}}"#,
            // `items` as a list stays a keyword; empty `properties` is kept.
            r#"{"type":"object","properties":{},"items":[{"type":"string"}]}"#,
            r#"{"type":"array","items":{"type":"string"},"items":5}"#,
            r#"{"type":"array","items":5,"items":{"type":"string","items":{}}}"#,
            r#"{"type":"object","additionalProperties":false}"#,
            r#"{"type":"object","additionalProperties":{"type":"integer"},"additionalProperties":true}"#,
            r#"{"type":"object","additionalProperties":true,"additionalProperties":{"type":"integer"}}"#,
            // Repeated keywords, properties and property names: the last counts.
            r#"{"type":"object","type":"string","description":"a","description":"bb"}"#,
            r#"{"type":"object","properties":{"a":{"type":"string"}},"properties":{"b":{},"a":{"type":"integer"},"b":{"x-kubernetes-int-or-string":true}}}"#,
            r#"{"properties":{"z":{},"y":{},"x":{"properties":{"w":{"enum":["a","b",{"c":[1,2.5]}]}}}}}"#,
            r#"{}"#,
        ] {
            same_both_ways(&crd_with(schema)).unwrap_or_else(|e| panic!("{schema}: {e}"));
        }
    }

    #[test]
    fn repeated_keys_around_the_schema_read_the_same_both_ways() {
        let versions = |v: &str| {
            format!(
                r#"{{"metadata":{{"name":"widgets.example.com"}},"kind":"CustomResourceDefinition",
                "spec":{{"group":"example.com","scope":"Namespaced",
                  "names":{{"kind":"Widget","plural":"widgets"}},"versions":{v}}}}}"#
            )
        };
        let one = r#"{"type":"object","properties":{"a":{"type":"string"}}}"#;
        let two = r#"{"type":"object","properties":{"b":{"type":"integer"}}}"#;
        for doc in [
            // The schema object with other entries (a comma to count).
            versions(&format!(
                r#"[{{"name":"v1","served":true,"storage":true,"schema":{{"x":1,"openAPIV3Schema":{one},"y":[2]}}}}]"#
            )),
            // `openAPIV3Schema`, `schema`, `versions` and `spec` repeated.
            versions(&format!(
                r#"[{{"name":"v1","served":true,"storage":true,"schema":{{"openAPIV3Schema":{one},"openAPIV3Schema":{two}}}}}]"#
            )),
            versions(&format!(
                r#"[{{"name":"v1","served":true,"storage":true,"schema":{{"openAPIV3Schema":{one}}},"schema":{{"openAPIV3Schema":{two}}}}}]"#
            )),
            versions(&format!(
                r#"[{{"name":"v1","served":true,"storage":true,"schema":{{"openAPIV3Schema":{one}}}}}],"versions":[{{"name":"v2","served":true,"storage":true,"schema":{{"openAPIV3Schema":{two}}}}}]"#
            )),
            format!(
                r#"{{"spec":{{"versions":[{{"name":"v0","schema":{{"openAPIV3Schema":{one}}}}}]}},{}"#,
                &versions(&format!(
                    r#"[{{"name":"v1","served":true,"storage":true,"schema":{{"openAPIV3Schema":{two}}}}},{{"name":"v2","served":true,"storage":false,"schema":{{"openAPIV3Schema":{one}}}}}]"#
                ))[1..]
            ),
        ] {
            let crd = same_both_ways(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert!(!crd.versions.is_empty());
        }
        // The last repetition is the one read.
        let doc = versions(&format!(
            r#"[{{"name":"v1","served":true,"storage":true,"schema":{{"openAPIV3Schema":{one},"openAPIV3Schema":{two}}}}}]"#
        ));
        let crd = same_both_ways(&doc).unwrap_or_else(|e| panic!("{e}"));
        assert!(crd.versions[0].schema.properties.contains_key("b"));
        assert!(!crd.versions[0].schema.properties.contains_key("a"));
    }

    #[test]
    fn what_is_not_a_crd_is_refused_the_same_both_ways() {
        for (doc, says) in [
            (
                crd_with(r#"{"properties":{"a":"text"}}"#),
                ".a: a schema must be an object, found a string",
            ),
            (
                crd_with(r#"{"properties":[1]}"#),
                "`properties` must be a map of schemas",
            ),
            (
                crd_with(r#"{"properties":{"m":{"additionalProperties":"x"}}}"#),
                "a schema must be an object",
            ),
            (
                crd_with(r#"[{"type":"object"}]"#),
                "a schema must be an object, found a list",
            ),
            (
                crd_with(r#"{"items":{"properties":{"a":null}}}"#),
                "found null",
            ),
            (
                crd_with(r#"{}"#).replace(r#""schema":{"openAPIV3Schema":{}}"#, r#""schema":{}"#),
                "has no schema.openAPIV3Schema",
            ),
            (
                crd_with(r#"{}"#).replace("widgets.example.com", ""),
                "no metadata.name",
            ),
            (
                crd_with(r#"{}"#).replace(r#""served":true"#, r#""served":"yes""#),
                "invalid type",
            ),
            ("[1, 2]".to_string(), "no metadata.name"),
        ] {
            let err = same_both_ways(&doc).map(|c| c.name).expect_err(&doc);
            assert!(err.contains(says), "{err} (expected: {says})");
        }
        for doc in [
            crd_with("{}") + " trailing",
            crd_with(r#"{"type":"object""#),
            "{\"a\":1e400}".to_string(),
        ] {
            assert_eq!(
                same_both_ways(&doc).map(|c| c.name),
                Err("unreadable".into()),
                "{doc}"
            );
        }
        // Not UTF-8.
        let bytes = crd_with(r#"{"description":"\xff"}"#).into_bytes();
        let at = bytes
            .windows(4)
            .position(|w| w == b"\\xff")
            .expect("the placeholder is in the document");
        let mut bytes = bytes;
        bytes.splice(at..at + 4, [0xff]);
        assert!(matches!(
            Crd::from_json(&bytes),
            Err(CrdError::Unreadable(_))
        ));
    }

    /// Schema text as a hand or a generator may write it: keys repeated,
    /// escapes, numbers in any spelling, every form of the typed
    /// children. Only readable values, so the two readings must agree.
    fn schema_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = proptest::sample::select(vec![
            "true",
            "false",
            "null",
            "0",
            "-0",
            "7",
            "1e5",
            "1.50",
            "1E-3",
            "2.5e-300",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            r#""""#,
            r#""a""#,
            r#""caf\u00e9 \"q\" \/ \n \u0001""#,
            r#""\ud83d\ude00""#,
            "[]",
            r#"[1,"x",{"k":[null]}]"#,
            r#"{"k":1,"k":2}"#,
        ])
        .prop_map(str::to_string);
        let key = proptest::sample::select(vec![
            "type",
            "description",
            "enum",
            "default",
            "x-kubernetes-preserve-unknown-fields",
            r#"a\u0062"#,
            r#"\"q"#,
            "é",
            "items",
            "properties",
            "additionalProperties",
        ]);
        let name = proptest::sample::select(vec!["a", "b", "a", r#"c\n"#, "é", "spec"]);
        let leaf = Just("{}".to_string());
        leaf.prop_recursive(4, 48, 6, move |inner| {
            let properties = proptest::collection::vec((name.clone(), inner.clone()), 0..4)
                .prop_map(|entries| {
                    let body: Vec<String> = entries
                        .iter()
                        .map(|(n, s)| format!(r#""{n}":{s}"#))
                        .collect();
                    format!("{{{}}}", body.join(","))
                });
            let value = prop_oneof![
                scalar.clone(),
                inner.clone(),
                inner.clone().prop_map(|s| format!("[{s}]")),
            ];
            let entry = (key.clone(), value, properties, inner.clone(), any::<bool>()).prop_map(
                |(key, value, properties, schema, flag)| {
                    let value = match key {
                        "properties" => properties,
                        "additionalProperties" if flag => flag.to_string(),
                        "additionalProperties" => schema,
                        _ => value,
                    };
                    format!(r#""{key}":{value}"#)
                },
            );
            proptest::collection::vec(entry, 0..6)
                .prop_map(|entries| format!("{{{}}}", entries.join(",")))
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn any_readable_schema_reads_the_same_both_ways(a in schema_text(), b in schema_text()) {
            let doc = crd_with(&a).replace(
                r#""schema":{"openAPIV3Schema":"#,
                &format!(r#""schema":{{"openAPIV3Schema":{b},"openAPIV3Schema":"#),
            );
            same_both_ways(&doc).map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("{doc}: {e}"))
            })?;
        }
    }

    #[test]
    fn nesting_as_deep_as_the_parser_allows_reads_on_a_small_stack() {
        // The document's own levels and two per property level: 126 of
        // serde_json's 128, read on a thread with the stack the blocking
        // pool's threads get (2 MiB), in a debug build.
        let deep = "{\"properties\":{\"a\":".repeat(60) + "{}" + &"}}".repeat(60);
        let read = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                same_both_ways(&crd_with(&deep)).map(|c| c.versions[0].schema.node_count())
            })
            .expect("a thread")
            .join()
            .expect("the read does not panic");
        assert_eq!(read, Ok(61));
        // Two levels more are past the limit.
        let deeper = "{\"properties\":{\"a\":".repeat(61) + "{}" + &"}}".repeat(61);
        assert!(matches!(
            Crd::from_json(crd_with(&deeper).as_bytes()),
            Err(CrdError::Unreadable(_))
        ));
    }

    #[test]
    fn nesting_deeper_than_the_parser_allows_is_refused_not_a_crash() {
        let deep = "{\"properties\":{\"a\":".repeat(300) + "{}" + &"}}".repeat(300);
        assert!(matches!(
            Crd::from_json(crd_with(&deep).as_bytes()),
            Err(CrdError::Unreadable(_))
        ));
    }
}
