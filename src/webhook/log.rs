//! The log of `serve`: one JSON line on stdout per event (a review, a
//! reload, the requirements read), which log collectors take as they are.
//! Its own module because the server and the requirements both write it.

use serde_json::{Value, json};

/// One structured log line on stdout.
pub fn log(event: &str, mut fields: Value) {
    if let Value::Object(m) = &mut fields {
        let mut line = serde_json::Map::new();
        line.insert("time".into(), json!(now_rfc3339()));
        line.insert("event".into(), json!(event));
        line.append(m);
        println!("{}", Value::Object(line));
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
