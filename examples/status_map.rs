//! Prints the status map aci's parser reads from each log, as JSON: `status_map <parser> <log>...`.
use std::io::Write;

use aci::eval::logs::{AnyReading, read_any_log};
use aci::eval::parse::{LogReading, parser_by_name};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(parser) = args.next().and_then(|name| parser_by_name(&name)) else {
        eprintln!("usage: status_map <parser> <log>...");
        std::process::exit(2);
    };
    let mut out = serde_json::Map::new();
    for path in args {
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!("cannot read {path}");
            std::process::exit(1);
        };
        let log = String::from_utf8_lossy(&bytes);
        let value = match read_any_log(&log, parser) {
            AnyReading::Reading(LogReading::Ran(run)) => serde_json::json!(run.status),
            _ => serde_json::Value::Null,
        };
        out.insert(path, value);
    }
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{}", serde_json::Value::Object(out)).is_err() {
        std::process::exit(1);
    }
}
