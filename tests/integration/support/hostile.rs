//! The output matrix and hostile snapshots: every command of the CLI definition × every `-o` ×
//! `--no-headers`, run offline on a snapshot written to a directory. Generated from
//! `Cli::command()`, so that a new command or format cannot skip it (a command without a case
//! here fails [`invocations`]). The output contract (issue 31) extends [`Invocation`] and its
//! checks; `tests/integration/cli_hostile.rs` runs it on hostile data.

use ciliumpool::cli::Cli;
use clap::CommandFactory;
use serde_json::{Value, json};
use std::path::Path;

/// One run of the matrix: the command's words, then `-o FORMAT`, maybe `--no-headers`, `-f DIR`.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// The subcommand and its arguments, e.g. `["usage", "--by", "node"]`.
    pub args: Vec<String>,
    /// The value of `-o`, as the CLI spells it.
    pub format: String,
    pub no_headers: bool,
}

impl Invocation {
    /// The whole command line for the snapshot in `dir`.
    pub fn command_line(&self, dir: &Path) -> Vec<String> {
        let mut line = self.args.clone();
        line.extend(["-o".to_string(), self.format.clone()]);
        if self.no_headers {
            line.push("--no-headers".to_string());
        }
        line.extend(["-f".to_string(), dir.display().to_string()]);
        line
    }

    /// stdout is an edited manifest (`reserve-range POOL RANGE -f`: the pool object, not a report).
    pub fn prints_manifest(&self) -> bool {
        self.subcommand() == "reserve-range" && !self.args.iter().any(|a| a == "--list")
    }

    pub fn subcommand(&self) -> &str {
        &self.args[0]
    }

    /// stdout is a manifest copied from the input files (`migrate -f` printing its conversion;
    /// docs/design/escaping.md: into a pipe, the files' own bytes).
    pub fn prints_input_bytes(&self) -> bool {
        self.subcommand() == "migrate" && !self.args.iter().any(|a| a == "--check")
    }
}

/// The names a snapshot gives its objects, for the arguments of commands that need one.
pub struct Names<'a> {
    /// A pool of the v2 dialect that `reserve-range` can edit (its first CIDR 10.0.0.0/16).
    pub v2_pool: &'a str,
}

/// The views of each subcommand run offline. Every subcommand of the CLI definition must be here:
/// a new one fails the matrix until it is given its views.
fn views(subcommand: &str, names: &Names) -> Vec<Vec<String>> {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match subcommand {
        "usage" => vec![words(&["usage"]), words(&["usage", "--by", "node"]), words(&["usage", "--show-blocks"])],
        "inspect" => vec![words(&["inspect"])],
        "check" => vec![words(&["check"])],
        "ip" => vec![words(&["ip", "10.0.0.7", "10.0.1.9", "10.1.0.1", "192.0.2.1"])],
        "reserve-range" => {
            vec![words(&["reserve-range", "--list"]), vec!["reserve-range".into(), names.v2_pool.into(), "10.0.255.1".into()]]
        }
        "migrate" => vec![words(&["migrate"]), words(&["migrate", "--check"])],
        "completion" => vec![words(&["completion", "bash"])],
        "version" => vec![words(&["version"])],
        // Live only (refused with -f); its exposition is the same encoder as `usage -o
        // openmetrics`, run here, and tests/integration/deploy.rs puts a hostile pool name through it.
        "serve" => Vec::new(),
        other => {
            panic!("the output matrix has no case for the command `{other}`: add its offline views to tests/integration/support/hostile.rs")
        }
    }
}

/// Every `-o` value the CLI accepts; kubectl's script formats with a script that prints every
/// name (hostile ones too) and the pool and object of each row.
pub fn formats() -> Vec<String> {
    let command = Cli::command();
    let output = command.get_arguments().find(|a| a.get_id() == "output").expect("the -o flag");
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scripts");
    let with_script = |name: &str| match name {
        "jsonpath" | "jsonpath-as-json" => format!("{name}={{..name}}"),
        "jsonpath-file" => format!("{name}={}", scripts.join("names.jsonpath").display()),
        "custom-columns" => format!("{name}=NAME:.name,POOL:.pool,OBJECT:.object"),
        "custom-columns-file" => format!("{name}={}", scripts.join("columns.txt").display()),
        other => other.to_string(),
    };
    output.get_possible_values().iter().map(|v| with_script(v.get_name())).collect()
}

/// The format of a `-o` value: its name, without the script after `=`.
pub fn format_name(value: &str) -> &str {
    value.split_once('=').map_or(value, |(name, _)| name)
}

/// The matrix: every subcommand of the CLI × its views × every `-o` × with and without headers.
pub fn invocations(names: &Names) -> Vec<Invocation> {
    let command = Cli::command();
    let mut out = Vec::new();
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        for args in views(sub.get_name(), names) {
            for format in formats() {
                for no_headers in [false, true] {
                    out.push(Invocation { args: args.clone(), format: format.clone(), no_headers });
                }
            }
        }
    }
    out
}

/// The strings a snapshot is made of: every printed field of every object.
#[derive(Clone, Debug)]
pub struct Hostile {
    /// Three distinct pool names: two of the v2 dialect, one of v2alpha1.
    pub pools: [String; 3],
    /// Two distinct node names.
    pub nodes: [String; 2],
    /// A pool name no CiliumPodIPPool has (blocks listed under it are orphans).
    pub missing_pool: String,
    pub pod_namespace: String,
    pub pod_name: String,
    pub owner: String,
    pub label: (String, String),
    pub annotation: (String, String),
    pub cluster_name: String,
}

impl Hostile {
    /// A snapshot of plain names, for tests that make only some of them hostile.
    pub fn plain() -> Hostile {
        let s = |t: &str| t.to_string();
        Hostile {
            pools: [s("blue"), s("green"), s("legacy")],
            nodes: [s("node-1"), s("node-2")],
            missing_pool: s("gone"),
            pod_namespace: s("default"),
            pod_name: s("web-1"),
            owner: s("web"),
            label: (s("team"), s("net")),
            annotation: (s("note"), s("plain")),
            cluster_name: s("prod"),
        }
    }

    /// The objects: pools with labels, annotations and a reserved range, nodes holding blocks of
    /// them (and of a pool that does not exist), a pod with an owner, the cilium-config ConfigMap.
    pub fn objects(&self) -> Vec<Value> {
        let meta = |name: &str| json!({"name": name, "labels": {self.label.0.clone(): self.label.1.clone()}, "annotations": {self.annotation.0.clone(): self.annotation.1.clone()}});
        let [a, b, old] = &self.pools;
        let [n1, n2] = &self.nodes;
        vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": meta(a),
                   "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24, "pool": [{"cidr": "10.0.0.0/16", "reservedRanges": [{"start": "10.0.200.1", "end": "10.0.200.9"}]}]}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": meta(b), "spec": {"ipv4": {"cidrs": ["10.1.0.0/16"], "maskSize": 24}}}),
            json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": meta(old), "spec": {"ipv4": {"cidrs": ["10.2.0.0/16"], "maskSize": 24}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": meta(n1),
                   "spec": {"ipam": {"pools": {"allocated": [{"pool": a, "cidrs": ["10.0.0.0/24"]}, {"pool": self.missing_pool, "cidrs": ["10.9.0.0/24"]}]}}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": meta(n2),
                   "spec": {"ipam": {"pools": {"allocated": [{"pool": a, "cidrs": ["10.0.1.0/24", "10.0.200.0/24"]}, {"pool": b, "cidrs": ["10.1.0.0/24"]}]}}}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"namespace": self.pod_namespace, "name": self.pod_name, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": self.owner, "uid": "1"}]},
                   "spec": {"nodeName": n2, "containers": [{"name": "c", "image": "i"}]},
                   "status": {"phase": "Running", "podIP": "10.0.1.9", "podIPs": [{"ip": "10.0.1.9"}]}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "kube-system", "name": "cilium-config"},
                   "data": {"ipam": "multi-pool", "cluster-name": self.cluster_name}}),
        ]
    }

    /// Writes the snapshot into `dir`: pools, nodes and the rest in JSON files (exact strings),
    /// plus one file whose name is hostile too (and not UTF-8), which `-v` and sources lines name.
    pub fn write(&self, dir: &Path) {
        let objects = self.objects();
        let list = |items: &[Value]| serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap();
        std::fs::write(dir.join("pools.json"), list(&objects[0..3])).unwrap();
        std::fs::write(dir.join("nodes.json"), list(&objects[3..5])).unwrap();
        #[cfg(unix)]
        let rest = {
            use std::os::unix::ffi::OsStrExt;
            dir.join(std::ffi::OsStr::from_bytes(b"rest\n\x1b[2J\xff.json"))
        };
        #[cfg(not(unix))]
        let rest = dir.join("rest.json");
        std::fs::write(rest, list(&objects[5..])).unwrap();
    }
}

/// Whether `c` must never reach stdout or stderr raw (independent of the plugin's own rule): C0
/// controls but the newline, DEL, C1 controls, bidirectional marks, overrides and isolates, and
/// the invisible format characters (zero-width space and joiners, word joiner, BOM, soft hyphen,
/// tag characters).
pub fn is_raw_control(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{e0001}' | '\u{e0020}'..='\u{e007f}')
}
