//! Reading etcd directly, through its JSON gateway on loopback
//! (`POST /v3/kv/range` with base64 keys), to see how objects are really
//! stored: the API server keeps custom resources as JSON that names the
//! version they were written in.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// Every object stored under `/registry/<group>/<plural>/`, as
/// `namespace/name` -> stored JSON.
pub fn stored_objects(etcd: &str, group: &str, plural: &str) -> BTreeMap<String, Value> {
    let prefix = format!("/registry/{group}/{plural}/");
    let mut end = prefix.clone().into_bytes();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    let body = json!({
        "key": STANDARD.encode(prefix.as_bytes()),
        "range_end": STANDARD.encode(&end),
    })
    .to_string();
    let answer = post(etcd, "/v3/kv/range", &body);
    let reply: Value = serde_json::from_str(&answer)
        .unwrap_or_else(|e| panic!("etcd answered no JSON ({e}): {answer}"));
    let mut objects = BTreeMap::new();
    for kv in reply["kvs"].as_array().into_iter().flatten() {
        let decode = |field: &str| {
            STANDARD
                .decode(kv[field].as_str().expect("base64 field"))
                .expect("base64")
        };
        let key = String::from_utf8(decode("key")).expect("utf-8 key");
        let value: Value = serde_json::from_slice(&decode("value")).expect("a JSON object");
        objects.insert(key[prefix.len()..].to_string(), value);
    }
    objects
}

/// How many stored objects name each `apiVersion`.
pub fn stored_version_counts(etcd: &str, group: &str, plural: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for object in stored_objects(etcd, group, plural).values() {
        let version = object["apiVersion"].as_str().unwrap_or("?").to_string();
        *counts.entry(version).or_default() += 1;
    }
    counts
}

/// A plain HTTP/1.0 POST (the gateway closes the connection after the
/// answer, so the body is everything after the headers).
fn post(base: &str, path: &str, body: &str) -> String {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("etcd is reachable on loopback");
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("request sent");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("answer read");
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.contains(" 200 "), "etcd answered {head}");
    body.to_string()
}
