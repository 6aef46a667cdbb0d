//! Files are read two ways: streamed with Pods and CiliumEndpoints slimmed (`model::slim`), or
//! as one whole text (standard input, and whatever the stream does not read plainly). Both must
//! give the same figures, problems and node rows for the same objects: here on generated
//! clusters with realistic objects (managedFields, containers, volumes), as JSON and as YAML.

#[path = "../../benches/support/scale.rs"]
#[allow(dead_code)]
mod scale;

use assert_cmd::cargo::cargo_bin_cmd;
use scale::{Kind, Scale};
use serde_json::{Value, json};

fn usage_json(args: &[&str], stdin: Option<Vec<u8>>) -> Value {
    let mut command = cargo_bin_cmd!("kubectl-ciliumpool");
    command.args(["usage", "-o", "json"]).args(args);
    if let Some(bytes) = stdin {
        command.write_stdin(bytes);
    }
    let output = command.output().expect("runs");
    assert!(output.status.success(), "usage failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut document: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    document.as_object_mut().unwrap().remove("source");
    document
}

fn args(strings: &[String]) -> Vec<&str> {
    strings.iter().map(String::as_str).collect()
}

fn yaml_list(items: &[Value]) -> String {
    let mut text = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for item in items {
        for (i, line) in serde_saphyr::to_string(item).unwrap().lines().enumerate() {
            text.push_str(if i == 0 { "- " } else { "  " });
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// Compares the readings of `by_kind` written as files (streamed) and as one text on stdin (whole).
fn assert_paths_agree(by_kind: &[(Kind, Vec<Value>)]) {
    let all: Vec<Value> = by_kind.iter().flat_map(|(_, items)| items.clone()).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut json_args = Vec::new();
    let mut yaml_args = Vec::new();
    for (kind, items) in by_kind {
        let (json_file, yaml_file) = (dir.path().join(format!("{kind:?}.json")), dir.path().join(format!("{kind:?}.yaml")));
        std::fs::write(&json_file, serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap()).unwrap();
        std::fs::write(&yaml_file, yaml_list(items)).unwrap();
        json_args.extend(["-f".to_string(), json_file.display().to_string()]);
        yaml_args.extend(["-f".to_string(), yaml_file.display().to_string()]);
    }
    let whole = usage_json(&["-f", "-"], Some(serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "items": all})).unwrap()));

    // Sanity: the figures are about the generated cluster, not empty.
    let default = whole["pools"].as_array().unwrap().iter().find(|p| p["name"] == "default").expect("pool default");
    let used: u64 = default["families"].as_array().unwrap().iter().map(|f| f["usedAddresses"].as_u64().unwrap()).sum();
    assert!(used > 200, "pods counted as used: {used}");
    assert!(!whole["nodes"].as_array().unwrap().is_empty());
    assert!(!whole["problems"].as_array().unwrap().is_empty(), "the generated orphans are reported");

    assert_eq!(usage_json(&args(&json_args), None), whole, "streamed JSON files vs one whole JSON text");
    assert_eq!(usage_json(&args(&yaml_args), None), whole, "streamed YAML files vs one whole JSON text");
    assert_eq!(usage_json(&["-f", "-"], Some(yaml_list(&all).into_bytes())), whole, "one whole YAML text vs one whole JSON text");
}

#[test]
fn streamed_and_whole_text_reads_agree_on_realistic_dumps() {
    let scale = Scale { nodes: 40, pods_per_node: 12, pools: 7, seed: 11, realistic: true, cfp: true };
    let mut by_kind: Vec<(Kind, Vec<Value>)> = Vec::new();
    scale::generate(&scale, &mut |kind, object| match by_kind.iter_mut().find(|(k, _)| *k == kind) {
        Some((_, items)) => items.push(object),
        None => by_kind.push((kind, vec![object])),
    });
    assert!(by_kind.iter().map(|(_, items)| items.len()).sum::<usize>() > 900, "a cluster large enough to mean something");
    assert_paths_agree(&by_kind);
    // Endpoints repeat the pods' addresses: without them, every pod field the figures need counts.
    let (pods_only, endpoints): (Vec<_>, Vec<_>) = by_kind.into_iter().partition(|(kind, _)| *kind != Kind::Endpoint);
    assert_paths_agree(&pods_only);
    // And the endpoints alone, for theirs.
    let endpoints_only: Vec<_> = pods_only.into_iter().filter(|(kind, _)| *kind != Kind::Pod).chain(endpoints).collect();
    assert_paths_agree(&endpoints_only);
}

#[test]
fn what_the_stream_does_not_read_plainly_is_read_whole() {
    // Flow-style YAML that starts like JSON, and a number JSON cannot hold: the stream gives up,
    // the whole-text reading decides, as kubectl would.
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("pools.yaml");
    std::fs::write(&flow, "{apiVersion: cilium.io/v2alpha1, kind: CiliumPodIPPool, metadata: {name: flow, labels: {size: 1e400}}, spec: {ipv4: {cidrs: [10.9.0.0/16], maskSize: 24}}}\n").unwrap();
    let document = usage_json(&["-f", flow.to_str().unwrap()], None);
    assert_eq!(document["pools"][0]["name"], "flow");
    assert_eq!(document["pools"][0]["families"][0]["capacityBlocks"], 256);
}
