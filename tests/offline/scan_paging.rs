//! The object scan's paging when a continue token expires (410 Gone). A
//! real API server only does that after etcd compacts past the token, which
//! a test cannot trigger on demand, so this error path is served by a small
//! in-process fake of the LIST endpoint; everything else about the scan is
//! tested against the real server in `live/scan.rs`.

use crate::support::fixtures;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crd_safety::cluster::Connection;
use crd_safety::crd::Crd;
use crd_safety::scan::{ScanError, ScanOptions, scan_crd};
use http::{Request, Response};
use kube::client::Body;
use serde_json::{Value, json};

fn crd(minimum: Option<i64>) -> Crd {
    let mut size = json!({"type": "integer"});
    if let Some(m) = minimum {
        size["minimum"] = json!(m);
    }
    Crd::from_manifest(fixtures::single(
        "pages",
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": size}}}}),
    ))
    .expect("a valid CRD")
}

fn object(name: &str, size: i64) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Page",
           "metadata": {"name": name, "namespace": "ns"}, "spec": {"size": size}})
}

/// A fake LIST endpoint with two pages (`p1`, `p2`); the request for the
/// second page answers 410 the first `expire` times.
fn connection(expire: usize) -> (Connection, Arc<AtomicUsize>) {
    let lists = Arc::new(AtomicUsize::new(0));
    let expired = Arc::new(AtomicUsize::new(0));
    let counter = lists.clone();
    let service = tower::service_fn(move |req: Request<Body>| {
        let lists = counter.clone();
        let expired = expired.clone();
        async move {
            lists.fetch_add(1, Ordering::SeqCst);
            let query = req.uri().query().unwrap_or_default().to_string();
            assert!(
                req.uri().path() == "/apis/example.com/v1/pages",
                "{}",
                req.uri()
            );
            let (status, body) = if !query.contains("continue=") {
                (
                    200,
                    json!({"kind": "PageList", "apiVersion": "example.com/v1",
                       "metadata": {"continue": "next", "remainingItemCount": 1},
                       "items": [object("a", 1), object("b", 5)]}),
                )
            } else if expired.fetch_add(1, Ordering::SeqCst) < expire {
                (
                    410,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "reason": "Expired", "code": 410,
                       "message": "The provided continue parameter is too old"}),
                )
            } else {
                (
                    200,
                    json!({"kind": "PageList", "apiVersion": "example.com/v1",
                       "metadata": {}, "items": [object("c", 0)]}),
                )
            };
            let response = Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string().into_bytes()))
                .map_err(|e| e.to_string());
            Ok::<_, Infallible>(response.unwrap_or_else(|e| panic!("response: {e}")))
        }
    });
    let client = kube::Client::new(service, "default");
    (
        Connection::from_client(client, "fake", "http://fake"),
        lists,
    )
}

/// Scans `pages` (size 0 -> 2 on the minimum) with pages of two objects.
async fn scan_pages(conn: &Connection) -> Result<crd_safety::scan::CrdScan, ScanError> {
    let opts = ScanOptions {
        chunk_size: 2,
        ..ScanOptions::default()
    };
    scan_crd(conn, &crd(None), &crd(Some(2)), 34, &opts, &mut |_| {}).await
}

#[tokio::test]
async fn an_expired_continue_token_restarts_the_listing_without_counting_twice() {
    let (conn, lists) = connection(1);
    let scan = scan_pages(&conn)
        .await
        .expect("the scan finishes after one restart");
    assert_eq!(lists.load(Ordering::SeqCst), 4, "p1, expired p2, p1, p2");
    assert_eq!(scan.summary.restarts, 1);
    assert_eq!(scan.summary.scanned, 3);
    assert_eq!(scan.summary.invalid, 2, "a (1) and c (0); b (5) is valid");
    let detail = scan.findings[0].objects.as_ref().expect("scan detail");
    assert_eq!(detail.count, 2);
    assert_eq!(detail.examples, ["ns/a", "ns/c"]);
}

#[tokio::test]
async fn a_listing_that_keeps_expiring_is_an_error_not_a_short_count() {
    let (conn, _) = connection(usize::MAX);
    let err = scan_pages(&conn)
        .await
        .expect_err("an incomplete scan is refused");
    assert!(
        matches!(err, ScanError::Expired { scanned: 2, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("listing pages.example.com in v1 expired twice (410 Gone) after 2 objects"),
        "{err}"
    );
}

#[tokio::test]
async fn progress_is_reported_per_page_with_the_servers_estimate() {
    let (conn, _) = connection(0);
    let mut seen = Vec::new();
    scan_crd(
        &conn,
        &crd(None),
        &crd(Some(2)),
        34,
        &ScanOptions::default(),
        &mut |p| seen.push((p.version.to_string(), p.scanned, p.total)),
    )
    .await
    .expect("scan");
    assert_eq!(
        seen,
        [("v1".to_string(), 2, Some(3)), ("v1".to_string(), 3, None)]
    );
}
