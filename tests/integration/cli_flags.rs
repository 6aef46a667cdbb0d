//! Global and `check` flags on files: `check --severity` filters and sets the exit code, `-v`
//! says on stderr what was read (and only there), `--color=always|never` switches ANSI colour
//! regardless of the terminal.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::{Value, json};

/// One problem of each severity: two nodes list the same block (error), a pod address in the
/// pool's CIDR but in no block (warning), a one-address reservation withholding a whole /26 (info).
fn cluster_file(dir: &std::path::Path) -> std::path::PathBuf {
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a"}, "spec": {"ipv4": {
            "cidrs": ["10.1.0.0/24"], "maskSize": 26,
            "pool": [{"cidr": "10.1.0.0/24", "reservedRanges": [{"start": "10.1.0.200", "end": "10.1.0.200"}]}]}}},
        {"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"}, "spec": {"ipam": {"pools": {"allocated": [{"pool": "a", "cidrs": ["10.1.0.0/26"]}]}}}},
        {"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n2"}, "spec": {"ipam": {"pools": {"allocated": [{"pool": "a", "cidrs": ["10.1.0.0/26"]}]}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n1"},
         "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.100"}]}},
    ]});
    let file = dir.join("cluster.json");
    std::fs::write(&file, objects.to_string()).unwrap();
    file
}

fn run(args: &[&str], file: &std::path::Path) -> (i32, String, String) {
    let out = cargo_bin_cmd!("kubectl-ciliumpool").args(args).arg("-f").arg(file).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn severities(stdout: &str) -> Vec<String> {
    let doc: Value = serde_json::from_str(stdout).unwrap();
    doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{}:{}", p["severity"].as_str().unwrap(), p["kind"].as_str().unwrap()))
        .collect()
}

#[test]
fn check_severity_is_a_floor() {
    let dir = tempfile::tempdir().unwrap();
    let file = cluster_file(dir.path());
    let all = ["error:block-multiple-owners", "warning:pod-ip-unallocated", "info:reservation-withholds-more"];
    for (flag, want) in [(None, &all[..]), (Some("info"), &all[..]), (Some("warning"), &all[..2]), (Some("error"), &all[..1])] {
        let mut args = vec!["check", "-o", "json"];
        args.extend(flag.map(|f| ["--severity", f]).into_iter().flatten());
        let (code, stdout, stderr) = run(&args, &file);
        assert_eq!((code, severities(&stdout)), (1, want.iter().map(|s| s.to_string()).collect()), "{flag:?}: {stderr}");
    }
    // Only an info left: below the floor, so nothing is found and the exit code is 0.
    let text: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut items = text["items"].as_array().unwrap().clone();
    items.retain(|o| o["metadata"]["name"] != "n2" && o["kind"] != "Pod");
    std::fs::write(&file, json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()).unwrap();
    let (code, stdout, _) = run(&["check", "-o", "json", "--severity", "warning"], &file);
    assert_eq!((code, severities(&stdout)), (0, Vec::new()));
    // The input now lacks Pods: that caveat is an info too (it alone would not make check exit 1).
    let (code, stdout, _) = run(&["check", "-o", "json"], &file);
    assert_eq!((code, severities(&stdout)), (1, vec!["info:reservation-withholds-more".to_string(), "info:input-incomplete".to_string()]));
    let (code, _, stderr) = run(&["check", "--severity", "fatal"], &file);
    assert_eq!(code, 2, "an unknown severity is bad input: {stderr}");
}

#[test]
fn verbose_reports_what_was_read_on_stderr_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = cluster_file(dir.path());
    std::fs::write(dir.path().join("notes.yaml"), "just: text\n").unwrap();
    let (quiet_code, quiet_out, quiet_err) = run(&["usage", "-o", "json"], dir.path());
    let (code, stdout, stderr) = run(&["usage", "-o", "json", "-v"], dir.path());
    assert_eq!((code, &stdout), (quiet_code, &quiet_out), "-v changes nothing on stdout");
    assert!(!quiet_err.contains("read "), "{quiet_err}");
    assert!(stderr.contains(&format!("read 1 file(s): {}", file.display())), "{stderr}");
    assert!(stderr.contains("skipped 1 file(s) that hold no Kubernetes objects"), "{stderr}");
}

#[test]
fn color_always_and_never_override_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let file = cluster_file(dir.path());
    for args in [&["usage"][..], &["check"][..]] {
        let with = |color: &str| run(&[args, &["--color", color]].concat(), &file).1;
        let (always, never, auto) = (with("always"), with("never"), run(args, &file).1);
        assert!(always.contains("\x1b["), "{args:?} --color=always has ANSI colour:\n{always}");
        assert!(!never.contains('\x1b'), "{args:?} --color=never:\n{never}");
        assert_eq!(auto, never, "{args:?}: not a terminal, so auto is never");
        let stripped = strip_ansi(&always);
        assert_eq!(stripped, never, "{args:?}: colour adds nothing but escapes");
    }
    // JSON is never coloured.
    assert!(!run(&["usage", "-o", "json", "--color", "always"], &file).1.contains('\x1b'));
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn the_size_flags_default_to_the_documented_bounds() {
    use clap::Parser;
    let cli = ciliumpool::cli::Cli::try_parse_from(["kubectl-ciliumpool", "usage"]).unwrap();
    assert_eq!(cli.global.max_input_size, ciliumpool::files::inputs::DEFAULT_MAX_INPUT_BYTES);
    assert_eq!(cli.global.max_response_size, ciliumpool::cluster::limits::MAX_RESPONSE_BYTES);
    let serve = ciliumpool::cli::Cli::try_parse_from(["kubectl-ciliumpool", "serve"]).unwrap();
    let ciliumpool::cli::Command::Serve(serve) = serve.command else { panic!("serve") };
    assert_eq!(serve.max_event_size, ciliumpool::cluster::limits::MAX_EVENT_BYTES);
    assert_eq!(serve.max_watch_objects, ciliumpool::cluster::watch::MAX_WATCH_OBJECTS);
    let sized = |size: &str| {
        ciliumpool::cli::Cli::try_parse_from(["kubectl-ciliumpool", "usage", "--max-input-size", size]).map(|c| c.global.max_input_size)
    };
    assert_eq!(sized("4Gi").unwrap(), 4 << 30);
    assert_eq!(sized("1536Ki").unwrap(), 1536 << 10);
    assert_eq!(sized("2048").unwrap(), 2048);
    for bad in ["1G", "-1Mi", "Mi", "99999999999Ti", "100"] {
        assert!(sized(bad).is_err(), "{bad} is refused");
    }
}
