//! The fault paths of `migrate` that a real API server does not produce on
//! demand (429, 503 with `Retry-After`, a write that keeps failing), against
//! a loopback fake that speaks just enough of the API: one CRD, its LIST,
//! the object PUTs (answered from a script) and the status PATCH. Everything
//! else is covered against the real server in `live/migrate.rs`.

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::fixtures::{self, version};
use support::run::{Run, run};

/// What the fake saw.
#[derive(Default)]
struct Seen {
    /// Per object, the instant of every PUT.
    puts: BTreeMap<String, Vec<Instant>>,
    /// Bodies of PATCHes to the CRD's status.
    status_patches: Vec<Value>,
}

/// How the fake answers the `n`th PUT (from 1) of an object: status code
/// and extra headers.
type Script = fn(&str, usize) -> (u16, Vec<(&'static str, &'static str)>);

struct Fake {
    server: String,
    seen: Arc<Mutex<Seen>>,
}

fn crd() -> Value {
    let root = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}});
    let mut crd = fixtures::crd(
        "faults",
        vec![
            version("v1alpha1", true, false, root.clone()),
            version("v1", true, true, root),
        ],
    );
    crd["metadata"]["resourceVersion"] = json!("7");
    crd["status"] = json!({"storedVersions": ["v1alpha1", "v1"]});
    crd
}

fn list(version: &str, names: &[&str]) -> Value {
    let items: Vec<Value> = names
        .iter()
        .map(|n| {
            json!({"apiVersion": format!("example.com/{version}"), "kind": "Fault",
                   "metadata": {"name": n, "namespace": "default", "resourceVersion": "5"},
                   "spec": {"size": 1}})
        })
        .collect();
    json!({"apiVersion": format!("example.com/{version}"), "kind": "FaultList",
           "metadata": {"resourceVersion": "10"}, "items": items})
}

impl Fake {
    fn start(objects: &'static [&'static str], script: Script) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let server = format!("http://{}", listener.local_addr().expect("address"));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let shared = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, objects, script, &seen));
            }
        });
        Fake { server, seen }
    }

    fn kubeconfig(&self, dir: &std::path::Path) -> String {
        let path = dir.join("fake.kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n\
                 users:\n- name: fake\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    \
                 cluster: fake\n    user: fake\ncurrent-context: fake\n",
                self.server
            ),
        )
        .expect("kubeconfig written");
        path.display().to_string()
    }

    fn migrate(&self, extra: &[&str]) -> Run {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = self.kubeconfig(dir.path());
        let mut args = vec![
            "migrate",
            "faults.example.com",
            "--yes",
            "-o",
            "json",
            "--kubeconfig",
            &kubeconfig,
        ];
        args.extend_from_slice(extra);
        run(&args, None)
    }
}

/// Answers requests on one keep-alive connection.
fn serve(stream: TcpStream, objects: &[&str], script: Script, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(stream.try_clone().expect("stream"));
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (
            parts.next().unwrap_or_default().to_string(),
            parts.next().unwrap_or_default().to_string(),
        );
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = target.split('?').next().unwrap_or_default();
        let (code, headers, answer) = answer(&method, path, &body, objects, script, seen);
        let text = answer.to_string();
        let mut head = format!(
            "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            text.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(text.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

fn status(code: u16, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
           "message": message})
}

fn answer(
    method: &str,
    path: &str,
    body: &[u8],
    objects: &[&str],
    script: Script,
    seen: &Mutex<Seen>,
) -> (u16, Vec<(&'static str, &'static str)>, Value) {
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/faults.example.com";
    match (method, path) {
        ("GET", "/version") => (200, vec![], json!({"major": "1", "minor": "34"})),
        ("GET", p) if p == crd_path => (200, vec![], crd()),
        ("GET", "/apis/example.com/v1/faults") => (200, vec![], list("v1", objects)),
        ("GET", "/apis/example.com/v1alpha1/faults") => (200, vec![], list("v1alpha1", objects)),
        ("PATCH", p) if p == format!("{crd_path}/status") => {
            let patch: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            seen.lock().expect("lock").status_patches.push(patch);
            let mut crd = crd();
            crd["status"]["storedVersions"] = json!(["v1"]);
            (200, vec![], crd)
        }
        ("PUT", p) if p.starts_with("/apis/example.com/v1/namespaces/default/faults/") => {
            let name = p.rsplit('/').next().unwrap_or_default().to_string();
            let n = {
                let mut seen = seen.lock().expect("lock");
                let puts = seen.puts.entry(name.clone()).or_default();
                puts.push(Instant::now());
                puts.len()
            };
            let (code, headers) = script(&name, n);
            let answer = if code == 200 {
                list("v1", &[&name])["items"][0].clone()
            } else {
                status(code, &format!("scripted {code} for {name}"))
            };
            (code, headers, answer)
        }
        _ => (
            404,
            vec![],
            status(404, &format!("{method} {path} is not faked")),
        ),
    }
}

#[test]
fn transient_failures_are_retried_honoring_retry_after_and_then_migrated() {
    // a: 503 with Retry-After: 1, then fine; b: 429 twice, then fine;
    // c: someone else wrote it (409); d: deleted meanwhile (404).
    let fake = Fake::start(&["a", "b", "c", "d"], |name, n| match (name, n) {
        ("a", 1) => (503, vec![("Retry-After", "1")]),
        ("b", 1 | 2) => (429, vec![]),
        ("c", _) => (409, vec![]),
        ("d", _) => (404, vec![]),
        _ => (200, vec![]),
    });
    let r = fake.migrate(&["-v", "6"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Each retry is shown, and with -v each PUT and its answer.
    let shown = |needle: &str| r.stderr.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(shown("warning: PUT default/"), 3, "{}", r.stderr);
    let put_b_429 = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("request: PUT /apis/example.com/v1/namespaces/default/faults/b?"))
        .filter(|l| l.contains(" 429 Too Many Requests in "))
        .count();
    assert_eq!(put_b_429, 2, "{}", r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let result = &report["migrate"]["results"][0];
    assert_eq!(
        (
            &result["result"],
            &result["rewritten"],
            &result["writtenByOthers"],
            &result["deleted"],
            &result["retries"]
        ),
        (
            &json!("migrated"),
            &json!(2),
            &json!(1),
            &json!(1),
            &json!(3)
        ),
        "{result}"
    );
    let seen = fake.seen.lock().expect("lock");
    let a = &seen.puts["a"];
    assert_eq!(a.len(), 2);
    assert!(
        a[1] - a[0] >= Duration::from_millis(900),
        "the second try waited for Retry-After: {:?}",
        a[1] - a[0]
    );
    assert_eq!(seen.puts["b"].len(), 3);
    assert_eq!(
        seen.status_patches,
        [json!({"metadata": {"resourceVersion": "7"}, "status": {"storedVersions": ["v1"]}})],
        "storedVersions is set once, on the CRD as planned"
    );
}

#[test]
fn an_object_that_keeps_failing_leaves_stored_versions_untouched() {
    let fake = Fake::start(&["ok", "stuck"], |name, _| match name {
        "stuck" => (503, vec![("Retry-After", "0")]),
        _ => (200, vec![]),
    });
    let r = fake.migrate(&[]);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let result = &report["migrate"]["results"][0];
    assert_eq!(result["result"], "failed", "{result}");
    assert_eq!(result["rewritten"], 1);
    assert_eq!(
        result["failed"],
        json!([{"object": "default/stuck",
                "message": "503: scripted 503 for stuck (gave up after 8 tries)"}])
    );
    assert!(
        result["message"]
            .as_str()
            .is_some_and(|m| m.contains("storedVersions untouched [v1alpha1, v1]")),
        "{result}"
    );
    let seen = fake.seen.lock().expect("lock");
    assert_eq!(seen.puts["stuck"].len(), 8, "at most 8 tries");
    assert!(
        seen.status_patches.is_empty(),
        "storedVersions never patched"
    );
}
