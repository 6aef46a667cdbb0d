//! A fleet's output (docs/fleet.md): each cluster's own result, rendered as alone, joined into one
//! view — tables with a CLUSTER first column, a JSON/YAML document with `clusters[]` of the
//! single-cluster documents, OpenMetrics with a `cluster` label — plus the fleet's own problems.

use super::check::problems_table;
use super::metrics::{self, Encoding, Sample, Type};
use super::{Render, SCHEMA_VERSION, Style, table};
use crate::allocator::fleet::FleetProblem;
use serde::Serialize;

/// What a single-cluster result gives a fleet view besides its `Render` form.
pub trait Member: Render {
    /// The result's table(s) alone, plain, with headers (no footer): re-cut into the fleet table.
    fn table(&self, wide: bool) -> String;
    /// Its metric families (`usage` only).
    fn families(&self) -> Vec<metrics::Family> {
        Vec::new()
    }
    /// Pools shown, and the fullest one's name, family and utilization (`usage` only).
    fn fullest(&self) -> (usize, Option<(String, f64)>) {
        (0, None)
    }
}

/// One cluster of the fleet: its name, and its result or why it could not be read.
pub struct Cluster<'a, R> {
    pub name: &'a str,
    pub result: Result<R, &'a str>,
}

/// A command's result over a fleet.
pub struct Fleet<'a, R> {
    pub clusters: Vec<Cluster<'a, R>>,
    pub problems: Vec<&'a FleetProblem>,
    /// The problems between clusters are a table of the text (`check`), not only counted.
    pub problem_table: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClusterDocument<'a, D> {
    cluster: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(flatten)]
    document: Option<D>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FleetDocument<'a, D> {
    schema_version: u32,
    clusters: Vec<ClusterDocument<'a, D>>,
    fleet_problems: &'a [&'a FleetProblem],
}

impl<R: Member> Render for Fleet<'_, R> {
    fn document(&self) -> impl Serialize {
        let clusters = self
            .clusters
            .iter()
            .map(|c| ClusterDocument {
                cluster: c.name,
                error: c.result.as_ref().err().copied(),
                document: c.result.as_ref().ok().map(R::document),
            })
            .collect();
        FleetDocument { schema_version: SCHEMA_VERSION, clusters, fleet_problems: &self.problems }
    }

    fn names(&self) -> Option<String> {
        let mut seen = std::collections::BTreeSet::new();
        let names = self
            .clusters
            .iter()
            .filter_map(|c| c.result.as_ref().ok()?.names())
            .flat_map(|n| n.lines().map(str::to_string).collect::<Vec<_>>());
        Some(names.filter(|n| seen.insert(n.clone())).map(|n| n + "\n").collect())
    }

    fn text(&self, wide: bool, style: &Style) -> String {
        let cut: Vec<(&str, Vec<Block>)> =
            self.clusters.iter().filter_map(|c| Some((c.name, blocks(&c.result.as_ref().ok()?.table(wide))))).collect();
        let mut out: Vec<String> = joined(&cut)
            .into_iter()
            .map(|(header, rows)| table(&header.iter().map(String::as_str).collect::<Vec<_>>(), rows, style))
            .collect();
        if self.problem_table && !self.problems.is_empty() {
            let problems: Vec<&crate::allocator::Problem> = self.problems.iter().map(|p| &p.problem).collect();
            let (header, rows) = blocks(&problems_table(&problems, wide, &Style::plain())).remove(0);
            let clusters = self.problems.iter().map(|p| p.clusters.join(","));
            let rows = clusters.zip(rows).map(|(c, row)| std::iter::once(c).chain(row).collect()).collect();
            out.push(table(&std::iter::once("CLUSTERS").chain(header.iter().map(String::as_str)).collect::<Vec<_>>(), rows, style));
        }
        out.join("\n")
    }

    fn notes(&self, _wide: bool, _style: &Style) -> String {
        // The clusters not read are said on stderr by the command, whatever the format.
        summary(self)
    }

    fn openmetrics(&self) -> Option<String> {
        Some(openmetrics(self))
    }
}

/// The fleet summary line: pools, clusters (and how many could not be read), the fullest pool.
fn summary<R: Member>(fleet: &Fleet<R>) -> String {
    let read: Vec<(&str, &R)> = fleet.clusters.iter().filter_map(|c| Some((c.name, c.result.as_ref().ok()?))).collect();
    let pools: usize = read.iter().map(|(_, r)| r.fullest().0).sum();
    let unread = fleet.clusters.len() - read.len();
    let mut line = format!("{} clusters", fleet.clusters.len());
    if pools > 0 {
        line = format!("{pools} pools in {line}");
    }
    if unread > 0 {
        line.push_str(&format!(" ({unread} not read)"));
    }
    let fullest = read.iter().filter_map(|(name, r)| Some((*name, r.fullest().1?))).max_by(|a, b| a.1.1.total_cmp(&b.1.1));
    if let Some((cluster, (pool, share))) = fullest {
        line.push_str(&format!("; fullest pool: {pool} in {cluster} at {:.1}%", share * 100.0));
    }
    if !fleet.problems.is_empty() {
        line.push_str(&format!("; {} problem(s) between clusters", fleet.problems.len()));
    }
    line + "\n"
}

/// A table's header and rows, cut from its text.
type Block = (Vec<String>, Vec<Vec<String>>);

/// The tables of a plain text, cut into cells: tables are separated by a blank line, cells by the
/// three spaces `render::table` puts between columns (no cell holds three spaces in a row).
fn blocks(text: &str) -> Vec<Block> {
    let cells = |line: &str| line.trim().split("   ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_string).collect::<Vec<_>>();
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            let mut lines = b.lines().filter(|l| !l.trim().is_empty());
            let header = lines.next().map(cells).unwrap_or_default();
            (header, lines.map(cells).collect())
        })
        .collect()
}

/// The clusters' tables joined: tables with the same header become one, a CLUSTER column first.
fn joined(cut: &[(&str, Vec<Block>)]) -> Vec<(Vec<String>, Vec<Vec<String>>)> {
    let mut out: Vec<(Vec<String>, Vec<Vec<String>>)> = Vec::new();
    for (name, blocks) in cut {
        for (header, rows) in blocks {
            let header: Vec<String> = std::iter::once("CLUSTER".to_string()).chain(header.iter().cloned()).collect();
            let rows = rows.iter().map(|r| std::iter::once(name.to_string()).chain(r.iter().cloned()).collect());
            match out.iter_mut().find(|(h, _)| *h == header) {
                Some((_, all)) => all.extend(rows),
                None => out.push((header, rows.collect())),
            }
        }
    }
    out
}

/// Every cluster's metric families with a `cluster` label, each family once (OpenMetrics wants a
/// family's samples together), and `ciliumpool_cluster_up`: 1 when the cluster was read.
fn openmetrics<R: Member>(fleet: &Fleet<R>) -> String {
    let up = fleet.clusters.iter().map(|c| Sample::new(vec![("cluster", c.name.to_string())], u8::from(c.result.is_ok()))).collect();
    let mut families = vec![metrics::Family::new(
        "ciliumpool_cluster_up",
        Type::Gauge,
        "1 when the cluster of the fleet was read, 0 when it could not be.",
        up,
    )];
    for cluster in &fleet.clusters {
        let Ok(result) = &cluster.result else { continue };
        for mut family in result.families() {
            for sample in &mut family.samples {
                sample.labels.insert(0, ("cluster", cluster.name.to_string()));
            }
            match families.iter_mut().find(|f| f.name == family.name) {
                Some(known) => known.samples.append(&mut family.samples),
                None => families.push(family),
            }
        }
    }
    metrics::encode(&families, Encoding::OpenMetrics) + metrics::EOF
}

impl Member for super::usage::Usage<'_> {
    fn table(&self, wide: bool) -> String {
        self.text(wide, &Style::plain())
    }

    fn families(&self) -> Vec<metrics::Family> {
        metrics::families(self.report, &self.pools(), &self.snapshot.origin, metrics::Options::default())
    }

    fn fullest(&self) -> (usize, Option<(String, f64)>) {
        let pools = self.pools();
        let shares = pools
            .iter()
            .flat_map(|p| p.families.iter().filter_map(move |f| Some((format!("{} ({})", p.name, f.family), f.utilization()?))));
        (pools.len(), shares.max_by(|a, b| a.1.total_cmp(&b.1)))
    }
}

impl Member for super::check::Check<'_> {
    fn table(&self, wide: bool) -> String {
        if self.problems.is_empty() { String::new() } else { problems_table(&self.problems, wide, &Style::plain()) }
    }
}

impl Member for super::ip::Ip<'_> {
    fn table(&self, wide: bool) -> String {
        super::ip::table(self.answers, wide, &Style::plain(), self.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_cut_at_column_gaps_and_joined_by_header() {
        let a = blocks("POOL   FREE BLOCKS\nblue             3\n\nNODE   CIDR\nn1     10.0.0.0/24\n");
        let b = blocks("POOL   FREE BLOCKS\nred       12\n");
        let joined = joined(&[("east", a), ("west", b)]);
        assert_eq!(joined.len(), 2);
        assert_eq!(joined[0].0, ["CLUSTER", "POOL", "FREE BLOCKS"]);
        assert_eq!(joined[0].1, [vec!["east", "blue", "3"], vec!["west", "red", "12"]]);
        assert_eq!(joined[1].1, [vec!["east", "n1", "10.0.0.0/24"]]);
    }
}
