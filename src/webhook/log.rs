//! The log of `serve`: one JSON line on stdout per event (a review, a
//! reload, the requirements read), which log collectors take as they are.
//! Its own module because the server and the requirements both write it.
//!
//! Lines are written by a thread of their own: a review's line is built
//! where the review is answered and handed over, so an async worker never
//! waits on stdout (whoever reads it may be slow, or stop). When more than
//! [`QUEUED`] lines wait, the next one waits for room off the async threads
//! ([`super::cpu`]) for at most [`ROOM_WAIT`]; a line that finds none is
//! dropped and counted ([`dropped`], `crd_safety_log_lines_dropped_total`),
//! so a stalled log reader delays a review by a bounded time and never
//! holds one past its deadline. Writing from every review in place under
//! stdout's lock slowed a typical review's p99 with 20 at once (figures:
//! docs/BENCHMARKS.md, "Admission webhook latency and memory").

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::cpu::cpu;

/// Lines that may wait for the writer before a review waits for it.
const QUEUED: usize = 1024;

/// How long a line waits for room in a full queue before it is dropped.
const ROOM_WAIT: Duration = Duration::from_secs(1);

/// Lines dropped because the queue stayed full for [`ROOM_WAIT`].
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Lines dropped so far (stdout did not keep up).
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// What the writer thread is handed.
enum Line {
    /// A line, without its newline.
    Text(String),
    /// Answered once every line before it is written.
    Flush(SyncSender<()>),
}

/// One structured log line on stdout.
pub fn log(event: &str, mut fields: Value) {
    if let Value::Object(m) = &mut fields {
        let mut line = serde_json::Map::new();
        line.insert("time".into(), json!(now_rfc3339()));
        line.insert("event".into(), json!(event));
        line.append(m);
        send(Line::Text(Value::Object(line).to_string()));
    }
}

/// Waits until every line logged so far is written, at most `within`
/// (stdout may be stalled: stopping must not hang on it).
pub fn flush(within: Duration) {
    let (done, written) = mpsc::sync_channel(1);
    send(Line::Flush(done));
    let _ = written.recv_timeout(within);
}

/// Flushes the log when dropped, waiting at most its duration.
pub struct Flushed(pub Duration);

impl Drop for Flushed {
    fn drop(&mut self) {
        flush(self.0);
    }
}

fn send(line: Line) {
    let Some(queue) = writer() else {
        write_one(&mut std::io::stdout(), line);
        return;
    };
    match queue.try_send(line) {
        Ok(()) => {}
        Err(TrySendError::Full(line)) => cpu(|| wait_for_room(queue, line)),
        Err(TrySendError::Disconnected(line)) => write_one(&mut std::io::stdout(), line),
    }
}

/// Retries a full queue until [`ROOM_WAIT`] has passed, then drops the line
/// (a flush is answered at once: nothing before it can be written soon).
fn wait_for_room(queue: &SyncSender<Line>, mut line: Line) {
    let until = Instant::now() + ROOM_WAIT;
    loop {
        std::thread::sleep(Duration::from_millis(1));
        match queue.try_send(line) {
            Err(TrySendError::Full(back)) if Instant::now() < until => line = back,
            Err(TrySendError::Full(Line::Text(_))) => {
                DROPPED.fetch_add(1, Ordering::Relaxed);
                return;
            }
            Err(TrySendError::Full(Line::Flush(done))) => {
                let _ = done.try_send(());
                return;
            }
            Err(TrySendError::Disconnected(back)) => {
                write_one(&mut std::io::stdout(), back);
                return;
            }
            Ok(()) => return,
        }
    }
}

/// The writer thread's queue, started on first use; `None` if no thread
/// can be started (then each line is written where it is logged).
fn writer() -> Option<&'static SyncSender<Line>> {
    static QUEUE: OnceLock<Option<SyncSender<Line>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (queue, lines) = mpsc::sync_channel(QUEUED);
            std::thread::Builder::new()
                .name("crd-safety-log".into())
                .spawn(move || write_all(&lines, std::io::stdout()))
                .ok()
                .map(|_| queue)
        })
        .as_ref()
}

/// Writes lines as they come, the ones already waiting in one go.
fn write_all(lines: &Receiver<Line>, mut out: impl Write) {
    while let Ok(first) = lines.recv() {
        let mut next = Some(first);
        while let Some(line) = next {
            write_one(&mut out, line);
            next = lines.try_recv().ok();
        }
        let _ = out.flush();
    }
}

/// Writes one line, or answers a flush once what came before is out. A
/// write that fails (stdout closed) loses the line rather than stopping
/// `serve`.
fn write_one(out: &mut impl Write, line: Line) {
    match line {
        Line::Text(text) => {
            let _ = writeln!(out, "{text}");
        }
        Line::Flush(done) => {
            let _ = out.flush();
            let _ = done.try_send(());
        }
    }
}

fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    chrono::DateTime::from_timestamp(now.as_secs() as i64, now.subsec_nanos())
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What the writer wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_written_in_order_before_a_flush_is_answered() {
        let sink = Sink::default();
        let (queue, lines) = mpsc::sync_channel(4);
        let out = sink.clone();
        let writer = std::thread::spawn(move || write_all(&lines, out));
        // More than the queue holds: the sender waits for room, nothing is lost.
        for i in 0..100 {
            queue.send(Line::Text(format!("line {i}"))).unwrap();
        }
        let (done, written) = mpsc::sync_channel(1);
        queue.send(Line::Flush(done)).unwrap();
        written.recv_timeout(Duration::from_secs(10)).unwrap();
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let expected: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
        drop(queue);
        writer.join().unwrap();
    }

    #[test]
    fn a_line_that_finds_no_room_waits_its_bound_and_is_dropped() {
        // A queue nobody reads, already full.
        let (queue, _lines) = mpsc::sync_channel(1);
        queue.send(Line::Text("first".into())).unwrap();
        let before = dropped();
        let started = Instant::now();
        wait_for_room(&queue, Line::Text("second".into()));
        let waited = started.elapsed();
        assert!(waited >= ROOM_WAIT && waited < ROOM_WAIT * 5, "{waited:?}");
        assert_eq!(dropped(), before + 1);
    }
}
