//! Inputs as users have them, offline: `cilium sysdump` directories and archives, `ip`, the
//! OpenMetrics output and IPAM modes. Expected values come from the example's raw objects
//! (scanned here) or from the cilium sysdump layout, never from the plugin's own output.

use crate::support;

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

const TS: &str = "20251120-093000";

pub(crate) fn example(file: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let docs = ciliumpool::manifest::parse(&text, file).unwrap();
    docs.into_iter().flat_map(|d| if d.get("items").is_some() { d["items"].as_array().unwrap().clone() } else { vec![d] }).collect()
}

pub(crate) fn run(args: &[&str]) -> (i32, String, String) {
    let out = cargo_bin_cmd!("kubectl-ciliumpool").args(args).arg("--color=never").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

pub(crate) fn json_of(args: &[&str], code: i32) -> Value {
    let (got, stdout, stderr) = run(args);
    assert_eq!(got, code, "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A pool as `cilium sysdump` collects it: listed through v2alpha1, so v2-only fields
/// (`pool[]`, object-shaped `cidrs`) are not there.
fn v2alpha1_view(mut pool: Value) -> Value {
    pool["apiVersion"] = json!("cilium.io/v2alpha1");
    for family in ["ipv4", "ipv6"] {
        let Some(fam) = pool["spec"].get_mut(family).and_then(Value::as_object_mut) else { continue };
        fam.remove("pool");
        if let Some(cidrs) = fam.get_mut("cidrs").and_then(Value::as_array_mut) {
            for cidr in cidrs.iter_mut() {
                if let Some(text) = cidr.get("cidr").cloned() {
                    *cidr = text;
                }
            }
        }
    }
    pool
}

fn untyped(mut object: Value) -> Value {
    let map = object.as_object_mut().unwrap();
    map.remove("apiVersion");
    map.remove("kind");
    object
}

fn yaml(value: &Value) -> String {
    serde_saphyr::to_string(value).unwrap()
}

pub(crate) struct Dumps {
    _dir: tempfile::TempDir,
    pub plain: PathBuf,
    pub sysdump: PathBuf,
    pub zip: PathBuf,
    pub tar_gz: PathBuf,
}

/// The example's objects twice: as a plain `kubectl get -o yaml` dump, and laid out as
/// `cilium sysdump` writes them (typed lists named `<kind>-<ts>.yaml`, pods and the ConfigMap
/// without apiVersion/kind, pools through v2alpha1) among files that are no Kubernetes objects;
/// then the sysdump zipped and tarred as users pass it around.
pub(crate) fn dumps() -> Dumps {
    let dir = tempfile::tempdir().unwrap();
    let pools: Vec<Value> = example("pools.yaml").into_iter().map(v2alpha1_view).collect();
    let (nodes, pods, endpoints, config) =
        (example("ciliumnodes.yaml"), example("pods.yaml"), example("ciliumendpoints.json"), example("cilium-config.yaml"));
    let list = |items: &[Value]| json!({"apiVersion": "v1", "kind": "List", "items": items});

    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    for (name, items) in [
        ("pools.yaml", &pools),
        ("nodes.yaml", &nodes),
        ("pods.yaml", &pods),
        ("endpoints.yaml", &endpoints),
        ("config.yaml", &vec![config[0].clone()]),
    ] {
        std::fs::write(plain.join(name), yaml(&list(items))).unwrap();
    }

    let sysdump = dir.path().join(format!("cilium-sysdump-{TS}"));
    std::fs::create_dir(&sysdump).unwrap();
    let write = |name: &str, bytes: &[u8]| std::fs::write(sysdump.join(name), bytes).unwrap();
    let typed_list = |items: &[Value]| json!({"metadata": {"resourceVersion": "41877300"}, "items": items});
    write(&format!("ciliumpodippools-{TS}.yaml"), yaml(&typed_list(&pools)).as_bytes());
    write(&format!("ciliumnodes-{TS}.yaml"), yaml(&typed_list(&nodes)).as_bytes());
    write(&format!("ciliumendpoints-{TS}.yaml"), yaml(&typed_list(&endpoints)).as_bytes());
    let bare_pods: Vec<Value> = pods.iter().cloned().map(untyped).collect();
    write(&format!("k8s-pods-{TS}.yaml"), yaml(&typed_list(&bare_pods)).as_bytes());
    write(&format!("cilium-configmap-{TS}.yaml"), yaml(&untyped(config[0].clone())).as_bytes());
    // Files that are no Kubernetes objects.
    write(
        &format!("hubble-flows-cilium-x2k9p-{TS}.json"),
        b"{\"flow\":{\"verdict\":\"FORWARDED\"},\"node_name\":\"a\"}\n{\"flow\":{\"verdict\":\"DROPPED\"},\"node_name\":\"b\"}\n",
    );
    write(&format!("logs-cilium-x2k9p-cilium-agent-{TS}.log"), b"level=info msg=\"Starting agent\"\n");
    write(&format!("pprof-cilium-operator-7d9f-heap-{TS}.pprof"), &[0x1f, 0x8b, 0x08, 0x00, 0xff, 0x00, 0x13]);
    write(&format!("gops-memstats-cilium-x2k9p-{TS}.json"), &[0x7b, 0x00, 0xfe, 0xff, 0x00]);
    write(&format!("cilium-helm-values-{TS}.yaml"), b"ipam:\n  mode: multi-pool\n");
    write(&format!("k8s-version-{TS}.txt"), b"v1.33.1\n");

    let zip = dir.path().join(format!("cilium-sysdump-{TS}.zip"));
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&zip).unwrap());
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut names: Vec<PathBuf> = std::fs::read_dir(&sysdump).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    writer.add_directory(format!("cilium-sysdump-{TS}/"), options).unwrap();
    for path in &names {
        writer.start_file(format!("cilium-sysdump-{TS}/{}", path.file_name().unwrap().to_str().unwrap()), options).unwrap();
        writer.write_all(&std::fs::read(path).unwrap()).unwrap();
    }
    writer.finish().unwrap();

    let tar_gz = dir.path().join(format!("cilium-sysdump-{TS}.tar.gz"));
    let encoder = flate2::write::GzEncoder::new(std::fs::File::create(&tar_gz).unwrap(), flate2::Compression::default());
    let mut tar = tar::Builder::new(encoder);
    tar.append_dir_all(format!("cilium-sysdump-{TS}"), &sysdump).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    Dumps { _dir: dir, plain, sysdump, zip, tar_gz }
}

fn figures(mut doc: Value) -> Value {
    doc.as_object_mut().unwrap().remove("source");
    doc
}

pub(crate) fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn sysdump_directory_zip_and_tarball_equal_the_plain_dump() {
    let d = dumps();
    let plain = json_of(&["usage", "-o", "json", "-f", path(&d.plain)], 0);
    assert_eq!(plain["pools"].as_array().unwrap().len(), 4, "the example's four pools");
    assert_eq!(plain["source"]["ipamMode"], "multi-pool");
    assert!(plain["pools"][0]["families"][0]["usedAddresses"].as_u64().unwrap() > 0, "pods were read");
    for input in [&d.sysdump, &d.zip, &d.tar_gz] {
        let doc = json_of(&["usage", "-o", "json", "-f", path(input)], 0);
        assert_eq!(doc["source"]["ipamMode"], "multi-pool", "{input:?}: cilium-configmap-<ts>.yaml read");
        assert_eq!(figures(doc.clone()), figures(plain.clone()), "{input:?} differs from the plain dump");
        let warnings = doc["source"]["warnings"].as_array().unwrap_or_else(|| panic!("{input:?}: no warnings: {doc}"));
        assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("kubectl get ciliumpodippools.v2.cilium.io -o yaml")), "{warnings:?}");
        let check = figures(json_of(&["check", "-o", "json", "-f", path(input)], 1));
        assert_eq!(check, figures(json_of(&["check", "-o", "json", "-f", path(&d.plain)], 1)));
    }
}

#[test]
fn sysdump_skips_what_is_no_kubernetes_object_and_says_so() {
    let d = dumps();
    let (code, _stdout, stderr) = run(&["usage", "-v", "-f", path(&d.zip)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("skipped 6 file(s) that hold no Kubernetes objects"), "{stderr}");
    for (file, why) in [
        ("hubble-flows-cilium-x2k9p", "JSON Lines"),
        ("logs-cilium-x2k9p-cilium-agent", "not YAML or JSON (.log)"),
        ("pprof-cilium-operator-7d9f-heap", "not YAML or JSON (.pprof)"),
        ("gops-memstats-cilium-x2k9p", "binary data"),
        ("cilium-helm-values", "no Kubernetes objects"),
        ("k8s-version", "not YAML or JSON (.txt)"),
    ] {
        assert!(stderr.lines().any(|l| l.contains(file) && l.contains(why)), "{file}: {why} not in\n{stderr}");
    }
    assert!(stderr.contains("reserved ranges of a cilium.io/v2 cluster are not visible in this input"), "the notes warn:\n{stderr}");
    assert!(stderr.contains("IPAM mode multi-pool"), "{stderr}");

    // Named explicitly, a file that does not parse is still an error.
    let flows = d.sysdump.join(format!("hubble-flows-cilium-x2k9p-{TS}.json"));
    let (code, _, stderr) = run(&["usage", "-f", path(&flows)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("hubble-flows"), "{stderr}");
    let broken = d.plain.join("broken.zip");
    std::fs::write(&broken, b"PK\x03\x04 not really a zip").unwrap();
    let (code, _, stderr) = run(&["usage", "-f", path(&broken)]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not a readable zip archive"), "{stderr}");
}

#[test]
fn the_crd_in_the_input_lifts_the_v2alpha1_view_warning() {
    let d = dumps();
    let crd = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot/crd-ciliumpodippools.yaml");
    let doc = json_of(&["usage", "-o", "json", "-f", path(&d.sysdump), "-f", path(&crd)], 0);
    assert!(doc["source"].get("warnings").is_none(), "{}", doc["source"]);
}

// --- ip -------------------------------------------------------------------------------------

/// (node, pool, block) for every block the example's CiliumNodes list.
fn listed_blocks() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for node in example("ciliumnodes.yaml") {
        let name = node["metadata"]["name"].as_str().unwrap().to_string();
        for alloc in node.pointer("/spec/ipam/pools/allocated").and_then(Value::as_array).into_iter().flatten() {
            for cidr in alloc["cidrs"].as_array().unwrap() {
                out.push((name.clone(), alloc["pool"].as_str().unwrap().to_string(), cidr.as_str().unwrap().to_string()));
            }
        }
    }
    out
}

fn ip_answer(address: &str, code: i32) -> Value {
    let doc = json_of(&["ip", address, "-o", "json", "-f", "examples/snapshot"], code);
    doc["addresses"][0].clone()
}

#[test]
fn ip_answers_each_block_state() {
    let listed = listed_blocks();
    // Allocated: a running pod of pool blue, its /24 (blue's maskSize) and the node listing it.
    let pods = example("pods.yaml");
    let pod = pods
        .iter()
        .find(|p| p["status"]["phase"] == "Running" && p["status"]["podIP"].as_str().is_some_and(|ip| ip.starts_with("10.40.")))
        .expect("a running pod in 10.40.0.0/16");
    let ip = pod["status"]["podIP"].as_str().unwrap();
    let octets: Vec<&str> = ip.split('.').collect();
    let block = format!("10.40.{}.0/24", octets[2]);
    let holder = listed.iter().find(|(_, pool, b)| pool == "blue" && *b == block).expect("the pod's block is listed").0.clone();
    let a = ip_answer(ip, 0);
    assert_eq!(
        (a["pool"].as_str(), a["cidr"].as_str(), a["block"].as_str(), a["state"].as_str()),
        (Some("blue"), Some("10.40.0.0/16"), Some(block.as_str()), Some("allocated"))
    );
    assert_eq!(a["nodes"], json!([holder]));
    let pod_name = format!("{}/{}", pod["metadata"]["namespace"].as_str().unwrap(), pod["metadata"]["name"].as_str().unwrap());
    assert!(a["heldBy"].as_array().unwrap().iter().any(|h| h["kind"] == "pod" && h["name"] == pod_name.as_str()), "{a}");
    assert_eq!(a["reservedBy"], Value::Null);

    // Free: the first /24 of default's 10.10.0.0/16 no node lists.
    let free = (0..=255).map(|i| format!("10.10.{i}.0/24")).find(|b| !listed.iter().any(|(_, p, l)| p == "default" && l == b)).unwrap();
    let a = ip_answer(&free.replace(".0/24", ".9"), 0);
    assert_eq!((a["pool"].as_str(), a["block"].as_str(), a["state"].as_str()), (Some("default"), Some(free.as_str()), Some("free")));
    assert_eq!(a["nodes"], json!([]));

    // Withheld by a range: blue's gateway 10.40.255.254 (examples/README.md), reserved as a
    // single address; no node lists 10.40.255.0/24.
    assert!(!listed.iter().any(|(_, _, b)| b == "10.40.255.0/24"));
    let a = ip_answer("10.40.255.254", 0);
    assert_eq!((a["block"].as_str(), a["state"].as_str()), (Some("10.40.255.0/24"), Some("withheld")));
    assert_eq!(a["withheldBy"], json!([{"start": "10.40.255.254", "end": "10.40.255.254"}]));
    assert_eq!(a["reservedBy"], json!({"start": "10.40.255.254", "end": "10.40.255.254"}));
    assert_eq!(a["unusable"], false);
    let a = ip_answer("10.10.0.0", 0);
    assert_eq!(a["unusable"], true, "default does not allow its blocks' first address");

    // Orphan: 10.99.7.0/24 under pool legacy, which does not exist (examples/README.md).
    let orphan_holder = listed.iter().find(|(_, p, b)| p == "legacy" && b == "10.99.7.0/24").unwrap().0.clone();
    let a = ip_answer("10.99.7.20", 0);
    assert_eq!(
        (a["pool"].as_str(), a["cidr"].as_str(), a["block"].as_str(), a["state"].as_str()),
        (Some("legacy"), None, Some("10.99.7.0/24"), Some("orphan"))
    );
    assert_eq!(a["nodes"], json!([orphan_holder]));

    // A node infrastructure address (CiliumInternalIP).
    let node = example("ciliumnodes.yaml").into_iter().next().unwrap();
    let internal = node["spec"]["addresses"].as_array().unwrap().iter().find(|a| a["type"] == "CiliumInternalIP").unwrap()["ip"]
        .as_str()
        .unwrap()
        .to_string();
    let a = ip_answer(&internal, 0);
    assert_eq!(a["heldBy"], json!([{"kind": "node", "name": node["metadata"]["name"], "detail": "CiliumInternalIP"}]));

    // In no pool: exit 1; the node network 10.0.0.0/16 is outside every pool.
    let a = ip_answer("10.0.1.206", 1);
    assert_eq!((a["pool"].clone(), a["state"].clone()), (Value::Null, Value::Null));
}

#[test]
fn ip_table_and_bad_addresses() {
    let (code, stdout, stderr) = run(&["ip", "10.40.255.254", "192.168.7.7", "-f", "examples/snapshot"]);
    assert_eq!(code, 1, "one address is in no pool");
    let rows: Vec<&str> = stdout.lines().collect();
    assert!(rows[0].starts_with("ADDRESS") && rows[0].contains("STATE") && rows[0].contains("HELD-BY"), "{stdout}");
    // The range once (issue 42): STATE names it, RESERVED says yes.
    assert!(
        rows[1].contains("withheld by 10.40.255.254 ") && rows[1].contains(" yes ") && rows[1].matches("10.40.255.254").count() == 2,
        "{stdout}"
    );
    assert!(rows[2].contains("in no pool"), "{stdout}");
    assert!(stderr.contains("IPAM mode multi-pool") && !stdout.contains("IPAM mode"), "{stdout}{stderr}");
    for bad in ["10.1.2", "nope", "10.0.0.0/24", "10.0.0.1/24", "10.40.0.1/33"] {
        let (code, stdout, stderr) = run(&["ip", "10.40.0.1", bad, "-f", "examples/snapshot"]);
        assert_eq!(code, 2, "{bad}: {stderr}");
        assert!(stdout.is_empty() && stderr.contains("is not an IP address"), "{bad}: {stderr}");
    }
}

#[test]
fn ip_names_block_edges_and_node_addresses_and_takes_full_length_prefixes() {
    // A /24 block a node lists: its .0 and .255 are not handed out (the pool allows neither end),
    // its .1 is; the table says so in STATE, not only under -o wide.
    let (node, _, block) = listed_blocks().into_iter().find(|(_, pool, _)| pool == "blue").unwrap();
    let net = block.strip_suffix(".0/24").unwrap();
    let (first, second, last) = (format!("{net}.0"), format!("{net}.1"), format!("{net}.255"));
    let (code, stdout, stderr) = run(&["ip", &first, &second, &last, "-f", "examples/snapshot"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<&str> = stdout.lines().skip(1).take(3).collect();
    for (row, edge) in rows.iter().zip([true, false, true]) {
        assert!(row.contains(&format!("allocated to {node}")), "{stdout}");
        assert_eq!(row.contains("not handed out (block edge)"), edge, "{row}");
        assert_eq!(ip_answer(row.split_whitespace().next().unwrap(), 0)["unusable"], json!(edge), "{row}");
    }
    // ADDR/32 is the address ADDR.
    assert_eq!(ip_answer(&format!("{first}/32"), 0), ip_answer(&first, 0));
    // A node's own InternalIP is named, with its role.
    let nodes = example("ciliumnodes.yaml");
    let with_internal = nodes.iter().find_map(|n| {
        let ip = n["spec"]["addresses"].as_array()?.iter().find(|a| a["type"] == "InternalIP")?["ip"].as_str()?.to_string();
        Some((n["metadata"]["name"].clone(), ip))
    });
    let (name, internal) = with_internal.expect("the example's nodes have InternalIPs");
    let a = ip_answer(&internal, 1);
    assert_eq!(a["heldBy"], json!([{"kind": "node", "name": name, "detail": "InternalIP"}]));
}

// --- openmetrics ----------------------------------------------------------------------------

#[test]
fn openmetrics_parses_and_equals_the_json_figures() {
    let (code, text, stderr) = run(&["usage", "-o", "openmetrics", "-f", "examples/snapshot"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.ends_with("# EOF\n"));
    let exposition = openmetrics_parser::openmetrics::parse_openmetrics(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let doc = json_of(&["usage", "-o", "json", "-f", "examples/snapshot"], 0);
    let value_of = |metric: &str, pool: &str, family: &str| -> Option<f64> {
        let fam = exposition.families.get(metric).unwrap_or_else(|| panic!("{metric} missing"));
        fam.iter_samples().find_map(|s| {
            let labels = s.get_labelset().unwrap();
            (labels.get_label_value("pool") == Some(pool) && labels.get_label_value("family") == Some(family)).then(|| match &s.value {
                openmetrics_parser::OpenMetricsValue::Gauge(n) => n.as_f64(),
                other => panic!("{metric} is not a gauge: {other:?}"),
            })
        })
    };
    let mut checked = 0;
    for pool in doc["pools"].as_array().unwrap() {
        let name = pool["name"].as_str().unwrap();
        for fam in pool["families"].as_array().unwrap() {
            let family = fam["family"].as_str().unwrap();
            for (metric, field) in support::cli::METRIC_FIELDS {
                assert_eq!(value_of(metric, name, family), Some(fam[field].as_f64().unwrap()), "{metric}{{pool={name},family={family}}}");
                checked += 1;
            }
            let (alloc, free) = (fam["allocatedBlocks"].as_f64().unwrap(), fam["freeBlocks"].as_f64().unwrap());
            assert_eq!(value_of("ciliumpool_utilization_ratio", name, family), Some(alloc / (alloc + free)));
        }
    }
    assert_eq!(checked, 6 * 12, "six pool/family rows in the example");
    let problems = exposition.families.get("ciliumpool_problems").unwrap();
    let warnings = doc["problems"].as_array().unwrap().iter().filter(|p| p["severity"] == "warning").count() as f64;
    assert!(problems.iter_samples().any(|s| s.get_labelset().unwrap().get_label_value("severity") == Some("warning")
        && matches!(&s.value, openmetrics_parser::OpenMetricsValue::Gauge(n) if n.as_f64() == warnings)));
    let (code, _, stderr) = run(&["check", "-o", "openmetrics", "-f", "examples/snapshot"]);
    assert_eq!(code, 2, "{stderr}");
}

/// Blocks under a deleted pool's name are orphans in OpenMetrics too (issue 31 §4): one
/// `ciliumpool_orphan_blocks` series per name and family, counting a block two nodes list once;
/// a view restricted to named pools leaves them out, as its table does.
#[test]
fn openmetrics_counts_the_blocks_of_a_deleted_pool_as_its_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let pool = json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "kept"},
        "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}});
    let objects = [
        pool,
        support::cilium_node("n1", &[("kept", &["10.0.1.0/24"]), ("gone", &["10.9.0.0/24", "fd00:9::/120"])], 1),
        support::cilium_node("n2", &[("gone", &["10.9.0.0/24", "10.9.1.0/24"])], 1),
    ];
    let file = write_objects(dir.path(), "deleted.yaml", &objects);
    let series = |args: &[&str]| -> Vec<String> {
        let (code, text, stderr) = run(args);
        assert_eq!(code, 0, "{stderr}");
        openmetrics_parser::openmetrics::parse_openmetrics(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        text.lines().filter(|l| l.starts_with("ciliumpool_orphan_blocks{")).map(str::to_string).collect()
    };
    assert_eq!(
        series(&["usage", "-o", "openmetrics", "-f", &file]),
        [
            r#"ciliumpool_orphan_blocks{pool="kept",family="ipv4"} 0"#,
            r#"ciliumpool_orphan_blocks{pool="gone",family="ipv4"} 2"#,
            r#"ciliumpool_orphan_blocks{pool="gone",family="ipv6"} 1"#,
        ]
    );
    assert_eq!(series(&["usage", "kept", "-o", "openmetrics", "-f", &file]), [r#"ciliumpool_orphan_blocks{pool="kept",family="ipv4"} 0"#]);
}

// --- IPAM modes -----------------------------------------------------------------------------

fn write_objects(dir: &Path, name: &str, objects: &[Value]) -> String {
    let file = dir.join(name);
    std::fs::write(&file, yaml(&json!({"apiVersion": "v1", "kind": "List", "items": objects}))).unwrap();
    file.display().to_string()
}

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": data})
}

/// A CiliumNode as the ENI-mode agent writes it: secondary IPs as /32 and a /28 prefix under
/// pool `default`, allowFirstIP/allowLastIP true, no CiliumPodIPPool anywhere.
fn eni_node(name: &str, cidrs: &[&str], needed: u64) -> Value {
    json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name},
        "spec": {"ipam": {"pools": {
            "requested": [{"pool": "default", "needed": {"ipv4-addrs": needed}}],
            "allocated": [{"pool": "default", "allowFirstIP": true, "allowLastIP": true, "cidrs": cidrs}]}}}})
}

#[test]
fn eni_mode_blocks_are_the_modes_pool_not_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let nodes =
        [eni_node("ip-10-1-0-5", &["10.1.0.17/32", "10.1.0.18/32", "10.1.0.32/28"], 12), eni_node("ip-10-1-0-6", &["10.1.1.48/28"], 10)];
    let pods = [
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "x"}, "spec": {"nodeName": "ip-10-1-0-5"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.17"}]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "x"}, "spec": {"nodeName": "ip-10-1-0-5"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.33"}]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c", "namespace": "x"}, "spec": {"nodeName": "ip-10-1-0-6"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.1.1.48"}]}}),
    ];
    let mut objects: Vec<Value> = nodes.to_vec();
    objects.extend(pods);
    objects.push(config_map(json!({"ipam": "eni"})));
    let file = write_objects(dir.path(), "eni.yaml", &objects);

    let (code, stdout, stderr) = run(&["check", "-f", &file]);
    assert_eq!(code, 0, "no orphan or unknown-pool problems in ENI mode: {stdout}{stderr}");
    assert!(
        stdout.is_empty() && stderr.contains("No problems found") && stderr.contains("IPAM mode eni"),
        "the summary is a note on stderr: {stdout}{stderr}"
    );

    let doc = json_of(&["usage", "-o", "json", "-f", &file], 0);
    assert_eq!(doc["source"]["ipamMode"], "eni");
    let pool = &doc["ipam"]["modePools"][0];
    assert_eq!(pool["name"], "default");
    // 2 + 16 + 16 usable addresses (first and last allowed), 4 blocks, 3 pods inside.
    assert_eq!(
        pool["families"],
        json!([{"family": "ipv4", "allocatedBlocks": 4, "allocatedAddresses": 34, "usedAddresses": 3, "idleAddresses": 31, "nodes": 2}])
    );
    assert!(pool["capacityUnknown"].as_str().unwrap().contains("AWS"));
    let (_, table, notes) = run(&["usage", "-f", &file]);
    assert!(table.starts_with("POOL      IPAM-MODE   FAMILY"), "{table}");
    assert!(notes.contains("capacity lives in AWS"), "{notes}");
    // The legend defines the ENI table's columns, not the pool table's it does not print.
    let labels: Vec<&str> = notes.lines().take_while(|l| !l.starts_with("Sources:")).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(labels, ["BLOCKS", "ALLOCATED", "USED", "IDLE", "NODES", "CAPACITY"], "{notes}");
    let (_, _, notes) = run(&["usage", "--by", "node", "-f", &file]);
    assert!(notes.contains("NOTE       eni-pool: IPAM mode eni's own pool"), "the note the rows carry is defined: {notes}");
    // inspect shows CiliumPodIPPools: with none, it says so and where the mode's pool is shown.
    let (code, stdout, stderr) = run(&["inspect", "-f", &file]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert!(stderr.contains("No CiliumPodIPPools in the input") && stderr.contains("`usage` shows them"), "{stderr}");
    let (code, _, stderr) = run(&["inspect", "default", "-f", &file]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("IPAM mode eni's pool") && !stderr.contains("known pools: none"), "{stderr}");

    // Without cilium-config, the same blocks are orphans under a pool that does not exist.
    let file = write_objects(dir.path(), "unknown.yaml", &nodes);
    let doc = json_of(&["check", "-o", "json", "-f", &file], 1);
    assert!(doc["problems"].as_array().unwrap().iter().any(|p| p["kind"] == "orphan-block"), "{doc}");
}

#[test]
fn cluster_pool_podcidrs_and_migration_prerequisites() {
    let dir = tempfile::tempdir().unwrap();
    let node = |name: &str, cidr: &str| json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name}, "spec": {"ipam": {"podCIDRs": [cidr]}}});
    let pool = |cidr: &str, mask: u8| json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "default"}, "spec": {"ipv4": {"cidrs": [cidr], "maskSize": mask}}});
    let nodes = [node("n1", "10.0.1.0/24"), node("n2", "10.0.2.0/24")];
    let with = |extra: &[Value], data: Value| {
        let mut objects = nodes.to_vec();
        objects.extend_from_slice(extra);
        objects.push(config_map(data));
        write_objects(dir.path(), "cp.yaml", &objects)
    };
    // cluster-pool, no default pool yet: podCIDRs shown, nothing to check.
    let file = with(&[], json!({"ipam": "cluster-pool"}));
    let (code, stdout, stderr) = run(&["usage", "-f", &file]);
    assert_eq!(code, 0);
    assert!(stdout.contains("NODE   PODCIDRS") && stdout.contains("n1     10.0.1.0/24"), "{stdout}");
    assert!(stderr.contains("IPAM mode cluster-pool"), "{stderr}");
    assert_eq!(run(&["check", "-f", &file]).0, 0);
    // Prepared: a default pool that covers both podCIDRs at /24.
    let file = with(&[pool("10.0.0.0/16", 24)], json!({"ipam": "cluster-pool"}));
    assert_eq!(run(&["check", "-f", &file]).0, 0);
    // Wrong mask size and a podCIDR outside the pool.
    let file = with(&[pool("10.0.0.0/23", 26)], json!({"ipam": "multi-pool", "enable-cluster-pool-to-multi-pool-migration": "true"}));
    let doc = json_of(&["check", "-o", "json", "-f", &file], 1);
    let messages: Vec<&str> = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "cluster-pool-migration")
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert!(messages.iter().any(|m| m.contains("10.0.1.0/24 is a /24 but pool default hands out /26 blocks")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("10.0.2.0/24 is not inside any ipv4 CIDR of pool default")), "{messages:?}");
    // Multi-pool mode without the pool, migration off.
    let file = with(&[], json!({"ipam": "multi-pool"}));
    let doc = json_of(&["check", "-o", "json", "-f", &file], 1);
    let kinds: Vec<(&str, &str)> =
        doc["problems"].as_array().unwrap().iter().map(|p| (p["severity"].as_str().unwrap(), p["kind"].as_str().unwrap())).collect();
    assert!(kinds.contains(&("error", "cluster-pool-migration")) && kinds.contains(&("warning", "cluster-pool-migration")), "{kinds:?}");
}

#[test]
fn other_modes_say_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let node = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"}, "spec": {}});
    let file = write_objects(dir.path(), "azure.yaml", &[node, config_map(json!({"ipam": "azure"}))]);
    for command in ["usage", "check"] {
        let (code, stdout, stderr) = run(&[command, "-f", &file]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(stdout.starts_with("IPAM mode azure: "), "{stdout}");
    }
}

// --- input caveats (docs/inputs.md, "What an input cannot show") --------------------------------

/// The example file `name` (examples/snapshot).
pub(crate) fn example_file(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot").join(name).display().to_string()
}

/// Each read command on `inputs`: the kinds its document's `source.caveats` names, and the
/// `warning:` lines its stderr holds, checked against `expected` (kind, a word of the message).
fn assert_caveats(inputs: &[&str], expected: &[(&str, &str)], label: &str) {
    let kinds: Vec<&str> = expected.iter().map(|(kind, _)| *kind).collect();
    let commands: [&[&str]; 5] = [&["usage"], &["inspect"], &["check"], &["ip", "10.40.0.1"], &["reserve-range", "--list"]];
    for command in commands {
        let mut args: Vec<&str> = command.to_vec();
        args.extend(inputs);
        let with = |output: &[&'static str]| -> Vec<&str> { args.iter().chain(output).copied().collect() };
        let (code, stdout, stderr) = run(&with(&["-o", "json"]));
        assert!(code == 0 || code == 1, "{label} {command:?}: {stderr}");
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        let caveats = doc["source"]["caveats"].as_array().cloned().unwrap_or_default();
        let got: Vec<&str> = caveats.iter().map(|c| c["kind"].as_str().unwrap()).collect();
        assert_eq!(got, kinds, "{label} {command:?}: {}", doc["source"]);
        // One channel: one `warning:` line per caveat (whatever -o says), the same text; never in
        // the Sources line (usage's table prints it).
        let text_stderr = if command == ["usage"] { run(&with(&[])).2 } else { stderr };
        for (caveat, (_, word)) in caveats.iter().zip(expected) {
            let message = caveat["message"].as_str().unwrap();
            assert!(message.contains(word), "{label}: {message}");
            let line = format!("warning: {message}");
            assert_eq!(text_stderr.lines().filter(|l| *l == line).count(), 1, "{label} {command:?}: {line}\n{text_stderr}");
            assert!(!text_stderr.lines().any(|l| l.starts_with("Sources:") && l.contains(message)), "{text_stderr}");
        }
        let warned = text_stderr.lines().filter(|l| l.starts_with("warning:")).count();
        assert_eq!(warned, expected.len(), "{label} {command:?}: no other warning line\n{text_stderr}");
        if command == ["check"] {
            let problems: Vec<(&str, &str)> = doc["problems"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["kind"] == "input-incomplete")
                .map(|p| (p["severity"].as_str().unwrap(), p["object"].as_str().unwrap()))
                .collect();
            let objects: Vec<String> = kinds.iter().map(|k| format!("Input/{k}")).collect();
            let mut wanted: Vec<(&str, &str)> = objects.iter().map(|o| ("info", o.as_str())).collect();
            wanted.sort();
            assert_eq!(problems, wanted, "{label}: one input-incomplete problem (info) per caveat");
        }
    }
}

#[test]
fn each_caveat_is_said_when_the_input_lacks_it_and_only_then() {
    let d = dumps();
    let (pools, nodes, pods, endpoints) =
        (example_file("pools.yaml"), example_file("ciliumnodes.yaml"), example_file("pods.yaml"), example_file("ciliumendpoints.json"));
    let (crd, example_dir) = (example_file("crd-ciliumpodippools.yaml"), example_file(""));
    // Everything: nothing to say.
    assert_caveats(&["-f", &example_dir], &[], "the example");
    // Pools of both dialects: v2 reservations are in the input (blue's), so no v2alpha1 caveat.
    assert_caveats(&["-f", &pools], &[("no-cilium-nodes", "CiliumNodes"), ("no-pods", "no Pods and no CiliumEndpoints")], "pools");
    assert_caveats(&["-f", &pools, "-f", &nodes], &[("no-pods", "no Pods and no CiliumEndpoints")], "pools and nodes");
    assert_caveats(&["-f", &pools, "-f", &nodes, "-f", &endpoints], &[("no-pods", "CiliumEndpoints and node addresses only")], "no pods");
    assert_caveats(&["-f", &pools, "-f", &nodes, "-f", &pods], &[], "pods without CiliumEndpoints");
    // A sysdump lists pools through v2alpha1; its CRD (or a v2 listing) lifts the caveat.
    assert_caveats(&["-f", path(&d.zip)], &[("pools-through-v2alpha1", "kubectl get ciliumpodippools.v2.cilium.io")], "sysdump");
    assert_caveats(&["-f", path(&d.sysdump), "-f", &crd], &[], "sysdump and CRD");
    assert_caveats(&["-f", path(&d.sysdump), "-f", &pools], &[], "sysdump and the v2 pools");
    assert_caveats(&["-n", "kube-system", "-f", &example_dir], &[("namespace-filter", "kube-system")], "-n");
}

#[test]
fn unknown_is_not_zero() {
    let (pools, nodes) = (example_file("pools.yaml"), example_file("ciliumnodes.yaml"));
    // No Pods and no CiliumEndpoints: USED is `?` (one word: --no-headers rows keep their fields),
    // null in JSON and no series in OpenMetrics; UTIL is known (the nodes are there).
    for (inputs, util_known) in [(vec!["-f", &pools, "-f", &nodes], true), (vec!["-f", &pools], false)] {
        let args =
            |more: &[&'static str]| ["usage"].iter().copied().chain(inputs.iter().copied()).chain(more.iter().copied()).collect::<Vec<_>>();
        let (code, table, stderr) = run(&args(&["--no-headers"]));
        assert_eq!(code, 0, "{stderr}");
        let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(rows.len(), 6, "{table}");
        for row in &rows {
            assert_eq!(row.len(), 10, "POOL ... UTIL, one word each: {row:?}");
            assert_eq!(row[7], "?", "USED: {row:?}");
            assert_eq!(row[9] == "?", !util_known, "UTIL: {row:?}");
            // No CiliumNodes: which blocks are allocated is unknown, not none (issue 42): BLOCKS
            // `?/16`, ALLOCATED and FREE `?`.
            assert_eq!(row[6] == "?" && row[8] == "?" && row[3].starts_with("?/"), !util_known, "ALLOCATED, FREE, BLOCKS: {row:?}");
        }
        let doc = json_of(&args(&["-o", "json"]), 0);
        for fam in doc["pools"].as_array().unwrap().iter().flat_map(|p| p["families"].as_array().unwrap()) {
            assert_eq!((&fam["usedAddresses"], &fam["idleAddresses"]), (&Value::Null, &Value::Null), "{fam}");
        }
        let (_, metrics, _) = run(&args(&["-o", "openmetrics"]));
        assert!(!metrics.contains("ciliumpool_used_addresses{"), "unknown: no sample\n{metrics}");
        assert_eq!(metrics.contains("ciliumpool_utilization_ratio{"), util_known, "{metrics}");
        assert!(metrics.trim_end().ends_with("# EOF"), "{metrics}");
    }
}

#[test]
fn inspect_on_a_sysdump_says_a_cidr_state_is_unknown() {
    let d = dumps();
    let (code, stdout, stderr) = run(&["inspect", "-f", path(&d.zip)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("warning: pools were read through cilium.io/v2alpha1"), "{stderr}");
    let states: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains('/'))
        .filter_map(|l| l.split_whitespace().nth(5))
        .collect();
    assert!(!states.is_empty(), "{stdout}");
    assert!(states.iter().all(|s| *s == "unknown"), "without reserved ranges no CIDR is known to be active: {states:?}\n{stdout}");
    // With the v2 pools the states are known again (blue has reservations).
    let (_, stdout, _) = run(&["inspect", "-f", path(&d.sysdump), "-f", &example_file("pools.yaml")]);
    assert!(stdout.contains("active") && !stdout.contains("unknown"), "{stdout}");
}

/// `ip` on the same sysdump: whether an address is reserved is unknown (`?`), not `no`; with the
/// v2 pools the gateway is `yes (…)` and another address `no`.
#[test]
fn ip_on_a_sysdump_says_reserved_is_unknown() {
    let d = dumps();
    let reserved = |inputs: &[&str]| -> Vec<String> {
        let mut args = vec!["ip", "10.40.255.254", "10.40.1.9", "--no-headers"];
        for input in inputs {
            args.extend(["-f", input]);
        }
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        stdout.lines().map(|l| l.split_whitespace().nth(5).unwrap_or_default().to_string()).collect()
    };
    assert_eq!(reserved(&[path(&d.zip)]), ["?", "?"]);
    assert_eq!(reserved(&[path(&d.sysdump), &example_file("pools.yaml")]), ["yes", "no"]);
}

#[test]
fn input_incomplete_does_not_fail_check() {
    // A clean pool and the node holding its block, no pods: the caveat is a problem scripts see,
    // info, and check still exits 0 (a CI check of manifests must not fail for it).
    let dir = tempfile::tempdir().unwrap();
    let objects = [
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a"}, "spec": {"ipv4": {"cidrs": ["10.1.0.0/24"], "maskSize": 26}}}),
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"}, "spec": {"ipam": {"pools": {"allocated": [{"pool": "a", "cidrs": ["10.1.0.0/26"]}]}}}}),
    ];
    let file = write_objects(dir.path(), "clean.yaml", &objects);
    let doc = json_of(&["check", "-o", "json", "-f", &file], 0);
    let kinds: Vec<(&str, &str)> =
        doc["problems"].as_array().unwrap().iter().map(|p| (p["severity"].as_str().unwrap(), p["kind"].as_str().unwrap())).collect();
    assert_eq!(kinds, [("info", "input-incomplete")], "{doc}");
    let doc = json_of(&["check", "--severity", "warning", "-o", "json", "-f", &file], 0);
    assert_eq!(doc["problems"], json!([]));
    let (code, names, _) = run(&["check", "-o", "name", "-f", &file]);
    // -o name lists objects only: the caveat is none (it used to print `input/no-pods`).
    assert_eq!((code, names.as_str()), (0, ""));
}

/// On a sysdump (pools through v2alpha1, reserved ranges invisible) the figures reservations
/// change are unknown: `?` in tables, null in JSON, no series; `inspect` claims no "<none>"
/// problems. With the v2 pools they are known again: blue reserves 10.40.255.254 and 10.41.0.0/16
/// (1 + 65536 addresses, from examples/snapshot/pools.yaml).
#[test]
fn a_sysdump_shows_reservation_figures_as_unknown() {
    let d = dumps();
    let pools = example_file("pools.yaml");
    let (code, table, stderr) = run(&["usage", "blue", "-o", "wide", "--no-headers", "-f", path(&d.zip)]);
    assert_eq!(code, 0, "{stderr}");
    let row: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    // POOL FAMILY MASK BLOCKS TOTAL RESERVED ALLOCATED USED FREE UTIL CAPACITY WITHHELD FREE-BLOCKS IDLE ORPHANS NODES RUNWAY CIDRS
    assert_eq!(
        (row[3].ends_with("/?"), row[5], row[8], row[9], row[11], row[12], row[16]),
        (true, "?", "?", "≥3%", "?", "?", "?"),
        "UTIL is a lower bound (14 of at most 512 allocatable blocks, issue 42): {row:?}"
    );
    let doc = json_of(&["usage", "blue", "-o", "json", "-f", path(&d.zip)], 0);
    let fam = &doc["pools"][0]["families"][0];
    for key in ["withheldBlocks", "freeBlocks", "reservedAddresses", "freeAddresses", "nextBlock"] {
        assert_eq!(fam[key], Value::Null, "{key}: {fam}");
    }
    for cidr in fam["cidrs"].as_array().unwrap() {
        assert_eq!((&cidr["withheldBlocks"], &cidr["freeBlocks"], &cidr["reservedRanges"]), (&Value::Null, &Value::Null, &Value::Null));
    }
    assert!(fam["allocatedBlocks"].is_u64() && fam["capacityBlocks"] == 512, "what the input shows stays: {fam}");
    let (_, metrics, _) = run(&["usage", "-o", "openmetrics", "-f", path(&d.zip)]);
    for family in ["free_blocks{", "withheld_blocks{", "reserved_addresses{", "free_addresses{", "utilization_ratio{"] {
        assert!(!metrics.contains(&format!("ciliumpool_{family}")), "{family}: unknown, no sample");
    }
    let (_, text, _) = run(&["inspect", "blue", "-f", path(&d.zip)]);
    assert!(!text.contains("Problems:\n  <none>"), "{text}");
    assert!(text.contains("Problems:\n  unknown:") && text.contains("Reserved ranges: unknown"), "{text}");
    assert!(text.contains("Next block: unknown"), "{text}");
    let doc = json_of(&["inspect", "blue", "-o", "json", "-f", path(&d.zip)], 0);
    let fam = &doc["pools"][0]["families"][0];
    assert_eq!((&fam["reservations"], &fam["draining"], &fam["runwayNodes"]), (&Value::Null, &Value::Null, &Value::Null), "{fam}");

    // The same sysdump with the v2 pools: known again, from the pool's own ranges.
    let doc = json_of(&["usage", "blue", "-o", "json", "-f", path(&d.sysdump), "-f", &pools], 0);
    let fam = &doc["pools"][0]["families"][0];
    assert_eq!((fam["reservedAddresses"].as_u64(), fam["withheldBlocks"].as_u64()), (Some(65537), Some(256)), "{fam}");
    let (_, text, _) = run(&["inspect", "blue", "-f", path(&d.sysdump), "-f", &pools]);
    assert!(!text.contains("unknown"), "{text}");
}

/// `ip` on a sysdump: a block no node holds is free or withheld, and the input cannot tell which.
#[test]
fn ip_on_a_sysdump_says_a_free_looking_block_is_unknown() {
    let d = dumps();
    let states = |inputs: &[&str]| -> Vec<String> {
        let mut args = vec!["ip", "10.40.255.254", "10.40.200.3", "-o", "json"];
        for input in inputs {
            args.extend(["-f", input]);
        }
        let doc = json_of(&args, 0);
        doc["addresses"].as_array().unwrap().iter().map(|a| a["state"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(states(&[path(&d.zip)]), ["unknown", "unknown"]);
    assert_eq!(states(&[path(&d.sysdump), &example_file("pools.yaml")]), ["withheld", "free"]);
    let (_, table, _) = run(&["ip", "10.40.200.3", "-f", path(&d.zip)]);
    assert!(table.contains("unknown: not allocated"), "{table}");
}

/// `-o name` lists only objects that exist: not the orphan pool `legacy` of `ip` (no
/// CiliumPodIPPool has that name in examples/snapshot/pools.yaml), nor `check`'s input caveats.
#[test]
fn o_name_lists_only_real_objects() {
    let example_dir = example_file("");
    let (code, names, stderr) = run(&["ip", "10.99.7.20", "10.40.3.17", "-o", "name", "-f", &example_dir]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(names, "ciliumpodippool.cilium.io/blue\n");
    let (_, names, _) = run(&["check", "--severity", "info", "-o", "name", "-f", &example_file("pools.yaml")]);
    assert!(names.lines().all(|l| !l.starts_with("input/")) && names.contains("ciliumpodippool.cilium.io/blue"), "{names}");
}

/// Each caveat once per run on stderr, on every command that reads (the `warning:` channel), and
/// the usage legend once; `check`'s table also has it as its `input-incomplete` row.
#[test]
fn each_caveat_is_said_once_per_run() {
    let d = dumps();
    let pools = example_file("pools.yaml");
    let commands: [&[&str]; 7] = [
        &["usage"],
        &["usage", "-o", "wide"],
        &["inspect", "blue"],
        &["check", "-o", "wide"],
        &["ip", "10.40.1.9"],
        &["reserve-range", "--list"],
        &["usage", "--by", "node"],
    ];
    for command in commands {
        let args: Vec<&str> = command.iter().copied().chain(["-f", path(&d.zip)]).collect();
        let (_, _, stderr) = run(&args);
        assert_eq!(stderr.matches("warning: pools were read through cilium.io/v2alpha1").count(), 1, "{command:?}: {stderr}");
        assert!(stderr.matches("UTIL       allocated blocks").count() <= 1, "{command:?}: {stderr}");
    }
    let (_, _, stderr) = run(&["reserve-range", "blue", "10.40.100.0-10.40.100.10", "-f", &pools]);
    for caveat in ["warning: the input holds no CiliumNodes", "warning: the input holds no Pods"] {
        assert_eq!(stderr.matches(caveat).count(), 1, "{stderr}");
    }
}

/// docs/usage.md defines NEEDED with the legend's own words (`usage --by node` on stderr), and
/// the figure is per family: in the example, each node's row equals its `needed.ipv4-addrs`.
#[test]
fn needed_in_the_docs_is_the_legend() {
    let (code, rows, legend) = run(&["usage", "batch", "--by", "node", "-f", &example_file("")]);
    assert_eq!(code, 0, "{legend}");
    let needed = legend.lines().find(|l| l.starts_with("NEEDED ")).expect("NEEDED in the legend");
    let doc = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/usage.md")).unwrap();
    assert!(doc.lines().any(|l| l == needed), "docs/usage.md must say {needed:?}");
    for node in example("ciliumnodes.yaml") {
        let requested = node.pointer("/spec/ipam/pools/requested").and_then(Value::as_array).cloned().unwrap_or_default();
        let Some(batch) = requested.iter().find(|r| r["pool"] == "batch") else { continue };
        let name = node["metadata"]["name"].as_str().unwrap();
        let row = rows.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}: {rows}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[6], batch["needed"]["ipv4-addrs"].to_string(), "{row}");
    }
}
