//! `json PATH`: the value at a dotted path of one JSON object on standard
//! input, for test scripts that check figures of `rprof dump
//! --summary-json`.
//!
//! A path is keys and array indices separated by dots:
//! `stats.total.samples`, `samples_per_cpu.1`, `lost_by_stage.buffer`.  The
//! empty path is the whole document.  Numbers, booleans and null print as
//! JSON does, strings without quotes, objects and arrays as compact JSON.

use serde_json::Value;
use std::io::Read;
use std::process::ExitCode;

/// Parses `text` as one JSON value (surrounding whitespace allowed).
pub fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("the input is not one JSON value: {e}"))
}

/// The value at `path` in `root`, or a message naming the first component
/// that is missing.
pub fn lookup<'a>(root: &'a Value, path: &str) -> Result<&'a Value, String> {
    if path.is_empty() {
        return Ok(root);
    }
    let mut v = root;
    let mut seen = String::new();
    for key in path.split('.') {
        let next = match v {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            let at = if seen.is_empty() {
                "the top level".to_string()
            } else {
                format!("'{seen}'")
            };
            let what = match v {
                Value::Object(_) => "an object without that key".to_string(),
                Value::Array(items) => format!("an array of {} entries", items.len()),
                other => format!("{other}, not an object or array"),
            };
            return Err(format!("no '{key}' at {at} ({what}) of path '{path}'"));
        };
        if !seen.is_empty() {
            seen.push('.');
        }
        seen.push_str(key);
        v = next;
    }
    Ok(v)
}

/// How `json` prints a value.
pub fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Reads standard input and prints the value at `path`.
pub fn run(path: &str) -> ExitCode {
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        eprintln!("FAIL: cannot read standard input: {e}");
        return ExitCode::FAILURE;
    }
    match parse(&text).and_then(|root| lookup(&root, path).map(display)) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = r#"{"records":5,"samples":3,"lost":0,
        "types":{"sample":3,"lost":0,"start":1,"stop":1},
        "samples_per_cpu":[1,2],"ratio":0.5,"name":"cpu-clock","flag":true,"none":null,
        "lost_by_stage":{"ring":0,"buffer":7,"other":0},
        "stats":{"nr_cpus":2,"total":{"samples":18446744073709551615},
                 "per_cpu":[{"samples":1},{"samples":2}]}}
    "#;

    fn get(path: &str) -> Result<String, String> {
        let root = parse(SUMMARY)?;
        lookup(&root, path).map(display)
    }

    #[test]
    fn finds_values() {
        assert_eq!(get("records").unwrap(), "5");
        assert_eq!(get("stats.total.samples").unwrap(), "18446744073709551615");
        assert_eq!(get("samples_per_cpu.1").unwrap(), "2");
        assert_eq!(get("lost_by_stage.buffer").unwrap(), "7");
        assert_eq!(get("stats.per_cpu.1.samples").unwrap(), "2");
        assert_eq!(get("ratio").unwrap(), "0.5");
        assert_eq!(get("name").unwrap(), "cpu-clock");
        assert_eq!(get("flag").unwrap(), "true");
        assert_eq!(get("none").unwrap(), "null");
        assert_eq!(get("samples_per_cpu").unwrap(), "[1,2]");
        assert_eq!(
            get("lost_by_stage").unwrap(),
            r#"{"buffer":7,"other":0,"ring":0}"#
        );
        assert!(get("").unwrap().starts_with('{'));
    }

    #[test]
    fn missing_paths_are_errors() {
        for (path, says) in [
            ("nope", "no 'nope' at the top level"),
            ("stats.total.nope", "no 'nope' at 'stats.total'"),
            ("samples_per_cpu.2", "an array of 2 entries"),
            ("samples_per_cpu.x", "an array of 2 entries"),
            ("samples_per_cpu.-1", "an array of 2 entries"),
            ("records.x", "5, not an object or array"),
            ("stats..nr_cpus", "no '' at 'stats'"),
            ("stats.", "no '' at 'stats'"),
        ] {
            match get(path) {
                Err(e) => assert!(e.contains(says), "{path}: {e}"),
                Ok(v) => panic!("{path}: expected an error, got {v}"),
            }
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        for text in ["", "{", "{} {}", "records: 1", "{\"a\":1} x"] {
            assert!(parse(text).is_err(), "{text:?}");
        }
        assert!(parse(" {\"a\":1}\n").is_ok());
    }
}
