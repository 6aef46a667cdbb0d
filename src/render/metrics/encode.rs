//! The two text encodings of metric families: OpenMetrics 1.0 and the Prometheus text format 0.0.4.

use super::{Encoding, Family, Sample, Type};
use std::fmt::Write;

/// The families as text, without the OpenMetrics `# EOF` (so that expositions can be joined).
pub fn encode(families: &[Family], encoding: Encoding) -> String {
    let mut out = String::new();
    for family in families {
        // A label value can only escape `\\`, `"` and a newline: a sample whose labels hold a
        // character a terminal would act on is left out (check names it: `unprintable-name`).
        let samples: Vec<&Sample> =
            family.samples.iter().filter(|s| s.labels.iter().all(|(_, v)| !crate::escape::has_unsafe(&label(v)))).collect();
        if samples.is_empty() {
            continue;
        }
        let (typed, sample_name) = match (family.kind, encoding) {
            (Type::Gauge, _) => (family.name.clone(), family.name.clone()),
            (Type::Info, Encoding::OpenMetrics) => (family.name.clone(), format!("{}_info", family.name)),
            (Type::Counter, Encoding::OpenMetrics) => (family.name.clone(), format!("{}_total", family.name)),
            // The 0.0.4 format has no info type and names a counter by its sample.
            (Type::Info, Encoding::Prometheus) => (format!("{}_info", family.name), format!("{}_info", family.name)),
            (Type::Counter, Encoding::Prometheus) => (format!("{}_total", family.name), format!("{}_total", family.name)),
        };
        let kind = match (family.kind, encoding) {
            (Type::Gauge, _) | (Type::Info, Encoding::Prometheus) => "gauge",
            (Type::Info, Encoding::OpenMetrics) => "info",
            (Type::Counter, _) => "counter",
        };
        let _ = writeln!(out, "# TYPE {typed} {kind}");
        let _ = writeln!(out, "# HELP {typed} {}", help(family.help, encoding));
        for sample in samples {
            out.push_str(&sample_name);
            if !sample.labels.is_empty() {
                out.push('{');
                for (i, (name, value)) in sample.labels.iter().enumerate() {
                    let _ = write!(out, "{}{name}=\"{}\"", if i == 0 { "" } else { "," }, label(value));
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", sample.value);
        }
    }
    out
}

/// A label value as OpenMetrics (and the 0.0.4 format) escapes it: backslash, double quote and
/// line feed; pool names come from the cluster.
pub fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// HELP text: OpenMetrics escapes as a label value; the 0.0.4 format backslash and line feed only.
fn help(text: &str, encoding: Encoding) -> String {
    match encoding {
        Encoding::OpenMetrics => label(text),
        Encoding::Prometheus => text.replace('\\', "\\\\").replace('\n', "\\n"),
    }
}
