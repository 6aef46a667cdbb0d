//! The metric families of `usage -o openmetrics` and `serve` (one definition for both), and their
//! two text encodings: OpenMetrics 1.0 and the Prometheus text format 0.0.4. Names and labels are
//! a contract (docs/metrics.md): add metrics freely, never rename one.

mod encode;
mod exporter;
mod families;
mod model;

pub use encode::{encode, label};
pub use exporter::{ExporterFigures, SourceFigures, exporter_families};
pub use families::{CLUSTER_PROBLEMS, FLEET_PROBLEMS, ProblemFamilies, families, problem_families};

use crate::allocator::{PoolReport, Report};
use crate::model::Origin;
pub use model::{Encoding, Family, Options, Sample, Type};

/// The OpenMetrics exposition of a usage report, ending in `# EOF` (`usage -o openmetrics`).
pub fn openmetrics(report: &Report, pools: &[&PoolReport], origin: &Origin, options: Options) -> String {
    let mut out = encode(&families(report, pools, origin, options), Encoding::OpenMetrics);
    out.push_str(EOF);
    out
}

/// The end of an OpenMetrics exposition.
pub const EOF: &str = "# EOF\n";

/// Adds `more` to `families`, each sample labelled `cluster` first when one is given (a fleet:
/// `usage -o openmetrics` and `serve` label the same way); a family already there takes the samples,
/// since OpenMetrics wants a family's samples together. The cluster is named as tables show it
/// (`escape::field`): a context name holding a character a terminal would act on is labelled with
/// its visible escape (`\u{202e}`, a backslash doubled) instead of leaving out every series of that
/// cluster, and two names never share a label.
pub fn add_labelled(families: &mut Vec<Family>, cluster: Option<&str>, more: Vec<Family>) {
    let cluster = cluster.map(crate::escape::field);
    for mut family in more {
        if let Some(cluster) = &cluster {
            family.samples.iter_mut().for_each(|s| s.labels.insert(0, ("cluster", cluster.to_string())));
        }
        match families.iter_mut().find(|f| f.name == family.name) {
            Some(known) => known.samples.append(&mut family.samples),
            None => families.push(family),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_escapes() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn openmetrics_is_asked_for_by_name_in_accept() {
        let scraper = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Encoding::negotiate(Some(scraper)), Encoding::OpenMetrics);
        assert_eq!(Encoding::negotiate(Some("text/plain;version=0.0.4")), Encoding::Prometheus);
        assert_eq!(Encoding::negotiate(Some("*/*")), Encoding::Prometheus);
        assert_eq!(Encoding::negotiate(None), Encoding::Prometheus);
    }

    #[test]
    fn info_and_counter_families_are_named_per_encoding() {
        let families = [
            Family::new("x_build", Type::Info, "b", vec![Sample::new(vec![("v", "1\"\n".into())], 1)]),
            Family::new("x_restarts", Type::Counter, "r\\", vec![Sample::new(vec![], 3)]),
            Family::new("x_empty", Type::Gauge, "e", vec![]),
        ];
        assert_eq!(
            encode(&families, Encoding::OpenMetrics),
            "# TYPE x_build info\n# HELP x_build b\nx_build_info{v=\"1\\\"\\n\"} 1\n# TYPE x_restarts counter\n# HELP x_restarts r\\\\\nx_restarts_total 3\n"
        );
        assert_eq!(
            encode(&families, Encoding::Prometheus),
            "# TYPE x_build_info gauge\n# HELP x_build_info b\nx_build_info{v=\"1\\\"\\n\"} 1\n# TYPE x_restarts_total counter\n# HELP x_restarts_total r\\\\\nx_restarts_total 3\n"
        );
    }
}
