//! The manifest splicer behind `--in-place`: with no edit the text comes back byte for byte;
//! with one document replaced, every other document is byte for byte what it was and the
//! replaced one parses to the new object.
#![no_main]

use ciliumpool::manifest::{documents, parse, rewrite};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(same) = rewrite(text, "fuzz.yaml", &mut |_| Ok(None)) else { return };
    assert_eq!(same.text, text);
    assert_eq!(same.changed, 0);
    let json = text.trim_start().starts_with(['{', '[']) && serde_json::from_str::<Value>(text).is_ok();
    if json {
        return;
    }
    // Replace the first document that is one object with a marked copy of itself (one that differs).
    let mut replaced = None;
    let mut index = 0;
    let Ok(out) = rewrite(text, "fuzz.yaml", &mut |doc| {
        index += 1;
        if replaced.is_some() || !doc.is_object() {
            return Ok(None);
        }
        let mut new = doc.clone();
        new["fuzzMark"] = Value::from("kubectl-ciliumpool");
        if &new == doc {
            return Ok(None); // already marked: "replaced" by itself, nothing would change
        }
        replaced = Some((index, new.clone()));
        Ok(Some(new))
    }) else {
        return;
    };
    let Some((_, new)) = replaced else { return };
    let before: Vec<&str> = documents(text).into_iter().map(|d| d.text).collect();
    let after: Vec<&str> = documents(&out.text).into_iter().map(|d| d.text).collect();
    assert_eq!(before.len(), after.len(), "document count kept: {text:?} -> {:?}", out.text);
    let changed: Vec<usize> = (0..before.len()).filter(|&i| before[i] != after[i]).collect();
    assert_eq!(changed.len(), 1, "exactly one document changed: {text:?} -> {:?}", out.text);
    let reparsed = parse(after[changed[0]], "fuzz.yaml").expect("the new document parses");
    assert_eq!(reparsed, vec![new], "{:?}", out.text);
});
