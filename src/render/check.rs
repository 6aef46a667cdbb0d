//! `check` output: one row per problem, and a summary line.

use super::{Grid, Render, Sourced, Style, Tone};
use crate::allocator::{Problem, Severity};
use crate::model::Origin;
use serde::Serialize;

/// `check`'s result: the problems at or above the severity asked for.
pub struct Check<'a> {
    pub origin: &'a Origin,
    pub problems: Vec<&'a Problem>,
    /// Problems below `--severity`, counted so the summary can say they were left out.
    pub hidden: usize,
    pub ipam: &'a crate::allocator::IpamReport,
}

impl Render for Check<'_> {
    fn document(&self) -> impl Serialize {
        Sourced { source: self.origin, key: "problems", value: &self.problems }
    }

    fn rows(&self) -> Option<&'static str> {
        Some("problems")
    }

    fn names(&self) -> Option<String> {
        // Only Kubernetes objects: an `Input/<kind>` caveat is no object `kubectl get` could name.
        let objects: Vec<(&str, &str)> = self.problems.iter().filter_map(|p| kubectl_object(&p.object)).collect();
        Some(super::name_records(objects))
    }

    fn text(&self, wide: bool, style: &Style) -> String {
        if self.ipam.nothing_to_show {
            return super::usage::nothing_to_show(self.ipam);
        }
        if self.problems.is_empty() { String::new() } else { problems_table(&self.problems, wide, style).render(style) }
    }

    fn notes(&self, wide: bool, _style: &Style) -> String {
        if self.ipam.nothing_to_show {
            return String::new();
        }
        format!("{} — IPAM mode {}\n", summary(&self.problems, self.hidden, wide), crate::escape::Field(&self.ipam.mode))
    }
}

pub fn tone(severity: Severity) -> Tone {
    match severity {
        Severity::Error => Tone::Bad,
        Severity::Warning => Tone::Warn,
        Severity::Info => Tone::Dim,
    }
}

pub fn problems_table(problems: &[&Problem], wide: bool, style: &Style) -> Grid {
    let mut header = vec!["SEVERITY", "KIND", "OBJECT", "MESSAGE"];
    if wide {
        header.push("ACTION");
    }
    let rows = problems
        .iter()
        .map(|p| {
            let mut row = vec![style.paint(p.severity.name(), tone(p.severity)), p.kind.name(), p.object.clone(), p.message.clone()];
            if wide {
                row.push(p.action.clone());
            }
            row
        })
        .collect();
    Grid::new(&header, rows)
}

/// An object as `kubectl get -o name` prints it: `ciliumnode.cilium.io/NAME`, `pod/NAME`; `None`
/// for what is no Kubernetes object (an input caveat's `Input/<kind>`).
pub fn kubectl_name(object: &str) -> Option<String> {
    kubectl_object(object).map(|(resource, name)| format!("{resource}/{name}"))
}

/// The resource and name of a problem's object (`Kind/name`, `Kind/namespace/name`) in kubectl's
/// form (`ciliumnode.cilium.io`, `pod`); `None` for what is no Kubernetes object (`Input/<kind>`).
fn kubectl_object(object: &str) -> Option<(&'static str, &str)> {
    let (kind, name) = object.split_once('/')?;
    let resource = match kind {
        "CiliumNode" => "ciliumnode.cilium.io",
        "CiliumPodIPPool" => super::POOL_RESOURCE,
        "CiliumEndpoint" => "ciliumendpoint.cilium.io",
        "CustomResourceDefinition" => "customresourcedefinition.apiextensions.k8s.io",
        "ConfigMap" => "configmap",
        "Pod" => "pod",
        _ => return None,
    };
    // Namespaced objects are written NAMESPACE/NAME in problems; kubectl's names omit the namespace.
    let name = if matches!(kind, "Pod" | "ConfigMap" | "CiliumEndpoint") { name.rsplit('/').next().unwrap_or(name) } else { name };
    Some((resource, name))
}

/// "2 errors, 1 warning, 0 info" — or a clean bill of health; and how many problems below
/// `--severity` were left out.
pub fn summary(problems: &[&Problem], hidden: usize, wide: bool) -> String {
    let hidden_text = if hidden == 0 { String::new() } else { format!(" ({hidden} below --severity not shown)") };
    if problems.is_empty() {
        return format!("No problems found{hidden_text}.");
    }
    let count = |s: Severity| problems.iter().filter(|p| p.severity == s).count();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}, {}, {} info{hidden_text}{}",
        plural(count(Severity::Error), "error"),
        plural(count(Severity::Warning), "warning"),
        count(Severity::Info),
        if wide { "" } else { "; -o wide shows the suggested actions" }
    )
}
