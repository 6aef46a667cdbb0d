//! One cluster, one set of series: contexts of a fleet that reach the same cluster by different
//! server URLs (two URLs of one API server, a load balancer and a node) are followed once, under
//! the first of them (docs/fleet.md). Contexts of one server URL are told apart before any request
//! (`source::fleet::plan`); a cluster's Cluster Mesh identity (`cluster-id`, `cluster-name` of its
//! `cilium-config`) is known only once its first read succeeded, so each follow claims it then and
//! asks [`decide`] whether an earlier context has it. `serve` reads `cilium-config` once, at that
//! first read: the identity, and so the decision, holds for the life of the process.

use super::state::Followed;
use crate::allocator::fleet::{FleetProblem, same_cluster, same_cluster_identity};

/// A cluster's Cluster Mesh identity: a non-zero `cluster-id` and a `cluster-name` other than
/// `default` (`source::fleet::mesh_identity`).
pub type Identity = (u32, String);

/// What the first read of one context has told so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Its first attempt has not ended.
    Reading,
    /// It failed at least once and is retried (it may never answer).
    Retrying,
    /// It succeeded: the identity its `cilium-config` gives, if any.
    Read(Option<Identity>),
}

/// What a context whose first read succeeded does.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// An earlier context's first attempt has not ended: it may be the same cluster.
    Wait,
    /// Follow it: no earlier context is known to reach the same cluster.
    Follow,
    /// The earlier context with this index reaches the same cluster: stop (or never start)
    /// following this one; that one's series stand for both.
    SameAs(usize),
}

/// The decision for context `index`, from every context's claim. A context with an identity
/// waits for the first attempt of every earlier one (each ends within its request deadlines), so
/// when the clusters answer the first context always wins, and never are two watches opened on
/// one cluster. An earlier context whose first read failed is not waited for; when it succeeds
/// later with the same identity it takes the cluster over: the later context then stops.
pub fn decide(claims: &[Claim], index: usize) -> Decision {
    let Claim::Read(Some(own)) = &claims[index] else { return Decision::Follow };
    let earlier = &claims[..index];
    if let Some(first) = earlier.iter().position(|c| matches!(c, Claim::Read(Some(other)) if other == own)) {
        return Decision::SameAs(first);
    }
    if earlier.contains(&Claim::Reading) { Decision::Wait } else { Decision::Follow }
}

/// The `fleet-same-cluster` problems of the clusters served: contexts of one API server (read
/// once, as the first) and contexts whose cluster has the identity of an earlier one.
pub(super) fn problems(clusters: &[Followed]) -> Vec<FleetProblem> {
    let mut out = Vec::new();
    for (index, cluster) in clusters.iter().enumerate() {
        let name = cluster.name.as_deref().unwrap_or_default();
        if !cluster.aliases.is_empty() {
            let names: Vec<&str> = std::iter::once(name).chain(cluster.aliases.iter().map(String::as_str)).collect();
            out.push(same_cluster(&crate::secrets::safe_url(cluster.server.as_deref().unwrap_or_default()), &names));
        }
        let twins: Vec<&str> = others(clusters, index);
        if let (false, Some((id, cluster_name))) = (twins.is_empty(), &cluster.identity) {
            let names: Vec<&str> = std::iter::once(name).chain(twins).collect();
            out.push(same_cluster_identity((&id.to_string(), cluster_name), &names));
        }
    }
    out
}

/// The contexts followed as cluster `index` because their cluster has its identity (each with
/// the contexts of its own API server).
pub(super) fn others(clusters: &[Followed], index: usize) -> Vec<&str> {
    let twins = clusters.iter().filter(|c| c.same_as == Some(index));
    twins.flat_map(|c| c.name.as_deref().into_iter().chain(c.aliases.iter().map(String::as_str))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Claim::{Read, Reading, Retrying};

    fn id(id: u32, name: &str) -> Option<Identity> {
        Some((id, name.to_string()))
    }

    #[test]
    fn a_context_of_the_identity_of_an_earlier_one_is_followed_once_as_the_first() {
        let east = || Read(id(1, "east"));
        // The first context has it: the third is the same cluster, the second is another.
        let claims = [east(), Read(id(2, "west")), east()];
        assert_eq!(decide(&claims, 0), Decision::Follow);
        assert_eq!(decide(&claims, 1), Decision::Follow);
        assert_eq!(decide(&claims, 2), Decision::SameAs(0));
        // Same id, other name, or no identity at all: other clusters.
        let claims = [east(), Read(id(1, "west")), Read(None), Read(None)];
        assert!((0..4).all(|i| decide(&claims, i) == Decision::Follow));
        // Read first, the later context waits for the earlier one's first attempt...
        assert_eq!(decide(&[Reading, east()], 1), Decision::Wait);
        // ...but not for one that failed (it may never answer), nor when it has no identity.
        assert_eq!(decide(&[Retrying, east()], 1), Decision::Follow);
        assert_eq!(decide(&[Reading, Read(None)], 1), Decision::Follow);
        // The earlier one read at last, with the same identity: it takes the cluster over.
        assert_eq!(decide(&[east(), east()], 1), Decision::SameAs(0));
        assert_eq!(decide(&[east(), east()], 0), Decision::Follow);
        // Three of one cluster: both later ones are the first, not each other.
        assert_eq!(decide(&[east(), Reading, east(), east()], 3), Decision::SameAs(0));
    }
}
