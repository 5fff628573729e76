//! What `/metrics` shows, in the Prometheus text format: reviews by
//! operation and verdict, their latency, object scans, break-glass uses,
//! refused bodies and connections, and reloads. A mutex over a few counters: a review takes
//! milliseconds, so the lock is never contended long enough to matter.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Latency bucket bounds, in seconds: the goals are 5 ms on a typical CRD
/// and 50 ms on the largest, and the API server gives up at 10 s.
const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Default)]
struct State {
    reviews: BTreeMap<(String, String), u64>,
    bucket_counts: Vec<u64>,
    latency_sum: f64,
    latency_count: u64,
    scans: BTreeMap<String, u64>,
    unfinished: BTreeMap<String, u64>,
    break_glass: u64,
    bad_requests: u64,
    connections_refused: u64,
    connections_evicted: u64,
    bodies_waited_out: u64,
    reloads: BTreeMap<(String, String), u64>,
}

/// The server's counters.
#[derive(Default)]
pub struct Metrics {
    state: Mutex<State>,
}

impl Metrics {
    fn with(&self, f: impl FnOnce(&mut State)) {
        let mut state = match self.state.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.bucket_counts.is_empty() {
            state.bucket_counts = vec![0; BUCKETS.len()];
        }
        f(&mut state);
    }

    /// Counts one review.
    pub fn review(&self, operation: &str, verdict: &str, took: Duration, break_glass: bool) {
        let secs = took.as_secs_f64();
        self.with(|s| {
            *s.reviews
                .entry((operation.to_string(), verdict.to_string()))
                .or_default() += 1;
            for (count, bound) in s.bucket_counts.iter_mut().zip(BUCKETS) {
                if secs <= *bound {
                    *count += 1;
                }
            }
            s.latency_sum += secs;
            s.latency_count += 1;
            s.break_glass += u64::from(break_glass);
        });
    }

    /// Counts an object scan: `completed` or `unfinished`.
    pub fn scan(&self, outcome: &str) {
        self.with(|s| *s.scans.entry(outcome.to_string()).or_default() += 1);
    }

    /// Counts a review a check of which could not finish, by what kept it
    /// (`Kind::label`).
    pub fn unfinished(&self, kind: &str) {
        self.with(|s| *s.unfinished.entry(kind.to_string()).or_default() += 1);
    }

    /// Counts a body that was not an AdmissionReview.
    pub fn bad_request(&self) {
        self.with(|s| s.bad_requests += 1);
    }

    /// Counts a connection closed at once: the server had as many open as
    /// `--max-connections` allows.
    pub fn connection_refused(&self) {
        self.with(|s| s.connections_refused += 1);
    }

    /// Counts an idle connection closed to make room for a new one.
    pub fn connection_evicted(&self) {
        self.with(|s| s.connections_evicted += 1);
    }

    /// Counts a review answered 503 unread: its body found no room in
    /// `--body-memory` within its deadline.
    pub fn body_waited_out(&self) {
        self.with(|s| s.bodies_waited_out += 1);
    }

    /// Counts a reload of `what` (`config`, `certificate`): `ok` or `error`.
    pub fn reload(&self, what: &str, result: &str) {
        self.with(|s| {
            *s.reloads
                .entry((what.to_string(), result.to_string()))
                .or_default() += 1;
        });
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.with(|s| {
            let _ = writeln!(
                out,
                "# HELP crd_safety_reviews_total Admission reviews of CRDs, by operation and verdict.\n\
                 # TYPE crd_safety_reviews_total counter"
            );
            for ((op, verdict), n) in &s.reviews {
                let _ = writeln!(
                    out,
                    "crd_safety_reviews_total{{operation=\"{op}\",verdict=\"{verdict}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "# HELP crd_safety_review_duration_seconds Time to answer a review.\n\
                 # TYPE crd_safety_review_duration_seconds histogram"
            );
            for (count, bound) in s.bucket_counts.iter().zip(BUCKETS) {
                let _ = writeln!(
                    out,
                    "crd_safety_review_duration_seconds_bucket{{le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "crd_safety_review_duration_seconds_bucket{{le=\"+Inf\"}} {c}\n\
                 crd_safety_review_duration_seconds_sum {sum}\n\
                 crd_safety_review_duration_seconds_count {c}",
                c = s.latency_count,
                sum = s.latency_sum
            );
            let _ = writeln!(
                out,
                "# HELP crd_safety_scans_total Object scans on UPDATE, by outcome.\n\
                 # TYPE crd_safety_scans_total counter"
            );
            for (outcome, n) in &s.scans {
                let _ = writeln!(out, "crd_safety_scans_total{{outcome=\"{outcome}\"}} {n}");
            }
            let _ = writeln!(
                out,
                "# HELP crd_safety_reviews_unfinished_total Reviews a check of which could not finish, by what kept it.\n\
                 # TYPE crd_safety_reviews_unfinished_total counter"
            );
            for (reason, n) in &s.unfinished {
                let _ = writeln!(
                    out,
                    "crd_safety_reviews_unfinished_total{{reason=\"{reason}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "# HELP crd_safety_break_glass_total Reviews allowed by the break-glass annotation.\n\
                 # TYPE crd_safety_break_glass_total counter\n\
                 crd_safety_break_glass_total {}",
                s.break_glass
            );
            let _ = writeln!(
                out,
                "# HELP crd_safety_bad_requests_total Bodies refused with 400 (not an AdmissionReview).\n\
                 # TYPE crd_safety_bad_requests_total counter\n\
                 crd_safety_bad_requests_total {}",
                s.bad_requests
            );
            let _ = writeln!(
                out,
                "# HELP crd_safety_connections_refused_total Connections closed unanswered: --max-connections were open.\n\
                 # TYPE crd_safety_connections_refused_total counter\n\
                 crd_safety_connections_refused_total {}",
                s.connections_refused
            );
            let _ = writeln!(
                out,
                "# HELP crd_safety_connections_evicted_total Idle connections closed to make room for a new one at --max-connections.\n\
                 # TYPE crd_safety_connections_evicted_total counter\n\
                 crd_safety_connections_evicted_total {}",
                s.connections_evicted
            );
            let _ = writeln!(
                out,
                "# HELP crd_safety_bodies_waited_out_total Reviews answered 503 unread: no room in --body-memory within their deadline.\n\
                 # TYPE crd_safety_bodies_waited_out_total counter\n\
                 crd_safety_bodies_waited_out_total {}",
                s.bodies_waited_out
            );
            let _ = writeln!(
                out,
                "# HELP crd_safety_log_lines_dropped_total Log lines dropped: stdout took none for a second.\n\
                 # TYPE crd_safety_log_lines_dropped_total counter\n\
                 crd_safety_log_lines_dropped_total {}",
                super::log::dropped()
            );
            let _ = writeln!(
                out,
                "# HELP crd_safety_reloads_total Reloads of the configuration and the serving certificate.\n\
                 # TYPE crd_safety_reloads_total counter"
            );
            for ((what, result), n) in &s.reloads {
                let _ = writeln!(
                    out,
                    "crd_safety_reloads_total{{what=\"{what}\",result=\"{result}\"}} {n}"
                );
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviews_are_counted_by_operation_and_verdict_with_cumulative_buckets() {
        let m = Metrics::default();
        m.review("UPDATE", "deny", Duration::from_millis(3), false);
        m.review("UPDATE", "deny", Duration::from_millis(30), true);
        m.review("DELETE", "allow", Duration::from_micros(500), false);
        let text = m.render();
        assert!(text.contains("crd_safety_reviews_total{operation=\"UPDATE\",verdict=\"deny\"} 2"));
        assert!(
            text.contains("crd_safety_reviews_total{operation=\"DELETE\",verdict=\"allow\"} 1")
        );
        assert!(text.contains("crd_safety_review_duration_seconds_bucket{le=\"0.001\"} 1\n"));
        assert!(text.contains("crd_safety_review_duration_seconds_bucket{le=\"0.005\"} 2\n"));
        assert!(text.contains("crd_safety_review_duration_seconds_bucket{le=\"0.05\"} 3\n"));
        assert!(text.contains("crd_safety_review_duration_seconds_count 3\n"));
        assert!(text.contains("crd_safety_break_glass_total 1\n"));
    }

    #[test]
    fn unfinished_reviews_are_counted_by_what_kept_them() {
        let m = Metrics::default();
        m.unfinished("cluster");
        m.unfinished("cluster");
        m.unfinished("tooLarge");
        let text = m.render();
        assert!(text.contains("crd_safety_reviews_unfinished_total{reason=\"cluster\"} 2\n"));
        assert!(text.contains("crd_safety_reviews_unfinished_total{reason=\"tooLarge\"} 1\n"));
    }
}
