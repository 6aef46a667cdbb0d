//! A fleet's output (docs/fleet.md): each cluster's own result, rendered as alone, joined into one
//! view — tables with a CLUSTER first column, a JSON/YAML document with `clusters[]` of the
//! single-cluster documents, OpenMetrics with a `cluster` label — plus the fleet's own problems.

use super::check::problems_table;
use super::metrics::{self, Encoding, Sample, Type};
use super::{Grid, Render, SCHEMA_VERSION, Style};
use crate::allocator::fleet::FleetProblem;
use serde::Serialize;

/// What a single-cluster result gives a fleet view besides its `Render` form.
pub trait Member: Render {
    /// The result's tables, before layout: the fleet puts every cluster's rows into one table.
    fn grids(&self, wide: bool, style: &Style) -> Vec<Grid>;
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

    fn rows(&self) -> Option<&'static str> {
        Some("clusters")
    }

    /// `CLUSTER RESOURCE.GROUP/NAME`, one record per line (docs/fleet.md): the same pool name in two
    /// clusters is two objects, and `while read cluster name` gets both fields (the cluster name
    /// escaped as one word, as the object's is).
    fn names(&self) -> Option<String> {
        let mut out = String::new();
        for cluster in &self.clusters {
            let Some(names) = cluster.result.as_ref().ok().and_then(|r| r.names()) else { continue };
            let prefix = crate::escape::word(cluster.name);
            for name in names.lines() {
                out.push_str(&format!("{prefix} {name}\n"));
            }
        }
        Some(out)
    }

    fn text(&self, wide: bool, style: &Style) -> String {
        let mut grids = joined(self.clusters.iter().filter_map(|c| Some((c.name, c.result.as_ref().ok()?.grids(wide, style)))));
        if self.problem_table && !self.problems.is_empty() {
            let problems: Vec<&crate::allocator::Problem> = self.problems.iter().map(|p| &p.problem).collect();
            let mut between = problems_table(&problems, wide, style);
            between.header.insert(0, "CLUSTERS".to_string());
            for (row, problem) in between.rows.iter_mut().zip(&self.problems) {
                row.insert(0, problem.clusters.join(","));
            }
            grids.push(between);
        }
        grids.into_iter().map(|g| g.render(style)).collect::<Vec<_>>().join("\n")
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
        // The notation of the tables' UTIL (`100%`, `<1%`), not a second one.
        line.push_str(&format!("; fullest pool: {pool} in {cluster} at {}", super::percent(Some(share))));
    }
    if !fleet.problems.is_empty() {
        line.push_str(&format!("; {} problem(s) between clusters", fleet.problems.len()));
    }
    line + "\n"
}

/// The clusters' tables joined: tables with the same header become one, a CLUSTER column first.
fn joined<'a>(clusters: impl Iterator<Item = (&'a str, Vec<Grid>)>) -> Vec<Grid> {
    let mut out: Vec<Grid> = Vec::new();
    for (name, grids) in clusters {
        for grid in grids {
            let grid = grid.with_first_column("CLUSTER", name);
            match out.iter_mut().find(|known| known.header == grid.header) {
                Some(known) => known.rows.extend(grid.rows),
                None => out.push(grid),
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
        if let Ok(result) = &cluster.result {
            metrics::add_labelled(&mut families, Some(cluster.name), result.families());
        }
    }
    // The problems between clusters belong to no cluster: no `cluster` label.
    families.extend(metrics::problem_families(fleet.problems.iter().map(|p| &p.problem), &metrics::FLEET_PROBLEMS));
    metrics::encode(&families, Encoding::OpenMetrics) + metrics::EOF
}

impl Member for super::usage::Usage<'_> {
    fn grids(&self, wide: bool, style: &Style) -> Vec<Grid> {
        super::usage::Usage::grids(self, wide, style)
    }

    fn families(&self) -> Vec<metrics::Family> {
        metrics::families(self.report, &self.pools(), &self.snapshot.origin, self.metric_options())
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
    fn grids(&self, wide: bool, style: &Style) -> Vec<Grid> {
        if self.problems.is_empty() { Vec::new() } else { vec![problems_table(&self.problems, wide, style)] }
    }
}

impl Member for super::ip::Ip<'_> {
    fn grids(&self, wide: bool, style: &Style) -> Vec<Grid> {
        vec![super::ip::table(self.answers, wide, style, self.mode, super::ip::reservations_unknown(self.origin))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_with_the_same_header_are_joined_behind_a_cluster_column() {
        let pools = |rows: &[&str]| Grid::new(&["POOL", "FREE"], rows.iter().map(|r| vec![r.to_string(), "3".into()]).collect());
        let nodes = Grid::new(&["NODE"], vec![vec!["n1".into()]]);
        let grids = joined([("east", vec![pools(&["blue   sky"]), nodes]), ("west", vec![pools(&["red"])])].into_iter());
        assert_eq!(grids.len(), 2);
        assert_eq!(grids[0].header, ["CLUSTER", "POOL", "FREE"]);
        assert_eq!(grids[0].rows, [["east", "blue   sky", "3"], ["west", "red", "3"]]);
        assert_eq!(grids[1].rows, [["east", "n1"]]);
    }
}
