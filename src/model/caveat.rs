//! Input caveats: what an input cannot show, computed once from what it holds (docs/inputs.md,
//! "What an input cannot show"). Every command says each one the same way: a `warning:` line on
//! stderr, `source.caveats` in its document, an `input-incomplete` problem in `check`.

use serde::Serialize;

/// One thing the input cannot show, with what it means for the figures and how to add it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Caveat {
    pub kind: CaveatKind,
    pub message: String,
}

/// The kinds are stable identifiers of the JSON contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaveatKind {
    /// Every pool read through v2alpha1 (a sysdump lists them so) and no CRD says v2 is not served:
    /// v2-only reserved ranges, and so draining CIDRs, are not in the input.
    PoolsThroughV2alpha1,
    /// Files without CiliumNodes: which blocks are allocated is unknown.
    NoCiliumNodes,
    /// Files without Pods (and perhaps without CiliumEndpoints): used addresses are partial or unknown.
    NoPods,
    /// `-n`: only one namespace's Pods and CiliumEndpoints count as used.
    NamespaceFilter,
}

impl CaveatKind {
    pub fn name(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    }
}

/// Said when pools were read through v2alpha1 and nothing shows the cluster lacks v2.
pub const V2ALPHA1_VIEW: &str = "pools were read through cilium.io/v2alpha1 and the input holds no CRD: reserved ranges of a cilium.io/v2 cluster are not visible in this input (nor whether a CIDR is draining); dump them with `kubectl get ciliumpodippools.v2.cilium.io -o yaml`";

/// What an input holds, as far as caveats go ([`caveats`]).
pub struct Contents<'a> {
    /// Read from files (offline), not from a live cluster.
    pub files: bool,
    /// Pools were in the input, and every one was read through v2alpha1.
    pub only_v2alpha1_pools: bool,
    pub crd: bool,
    pub nodes: bool,
    pub pods: bool,
    pub endpoints: bool,
    /// `-n`.
    pub namespace: Option<&'a str>,
    /// The input names the Cilium version and it is before 1.21: no release before serves
    /// `cilium.io/v2` pools, so v2alpha1 pools are all there is (no reserved ranges hidden).
    pub cilium_without_v2_pools: bool,
}

/// The caveats of an input. Pods are counted before `-n` filters them: an empty namespace is not
/// a missing kind. A live read's empty list is the cluster's own (nothing missing); one it could
/// not read is in its notes.
pub fn caveats(input: &Contents) -> Vec<Caveat> {
    let mut out = Vec::new();
    let mut add = |kind, message: String| out.push(Caveat { kind, message });
    // Every pool read through v2alpha1 is a listing through it (a sysdump's). One pool of a v2
    // dialect shows the input holds v2 objects, reservations included; the CRD's versions say
    // whether v2 exists (and live reads use v2 when it is served).
    if !input.crd && input.only_v2alpha1_pools && !input.cilium_without_v2_pools {
        add(CaveatKind::PoolsThroughV2alpha1, V2ALPHA1_VIEW.to_string());
    }
    let (files, namespace) = (input.files, input.namespace);
    if files {
        // Pods without CiliumEndpoints are no caveat: a pod-network pod's address is in its Pod.
        let (no_pods, no_endpoints) = (!input.pods, !input.endpoints);
        if !input.nodes {
            add(
                CaveatKind::NoCiliumNodes,
                "the input holds no CiliumNodes: which blocks are allocated is unknown (ALLOCATED, USED, FREE and UTIL show ?); add `kubectl get ciliumnodes -o yaml`".into(),
            );
        }
        match (no_pods, no_endpoints) {
            (true, true) => add(
                CaveatKind::NoPods,
                "the input holds no Pods and no CiliumEndpoints: used addresses are unknown (USED shows ?); add `kubectl get pods,ciliumendpoints -A -o yaml`".into(),
            ),
            (true, false) => add(
                CaveatKind::NoPods,
                "the input holds no Pods: USED counts CiliumEndpoints and node addresses only; add `kubectl get pods -A -o yaml`".into(),
            ),
            (false, _) => {}
        }
    }
    if let Some(ns) = namespace {
        add(
            CaveatKind::NamespaceFilter,
            format!(
                "-n {ns}: only Pods and CiliumEndpoints of namespace {ns} count as used; USED leaves out every other namespace's addresses"
            ),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &Contents) -> Vec<CaveatKind> {
        caveats(input).into_iter().map(|c| c.kind).collect()
    }

    #[test]
    fn a_caveat_only_for_what_the_input_lacks() {
        let full = Contents {
            files: true,
            only_v2alpha1_pools: false,
            crd: false,
            nodes: true,
            pods: true,
            endpoints: true,
            namespace: None,
            cilium_without_v2_pools: false,
        };
        assert_eq!(kinds(&full), []);
        assert_eq!(kinds(&Contents { only_v2alpha1_pools: true, ..full }), [CaveatKind::PoolsThroughV2alpha1]);
        assert_eq!(kinds(&Contents { only_v2alpha1_pools: true, crd: true, ..full }), [], "the CRD says whether v2 exists");
        let before_v2 = Contents { only_v2alpha1_pools: true, cilium_without_v2_pools: true, ..full };
        assert_eq!(kinds(&before_v2), [], "Cilium before 1.21 serves no v2 pools: nothing is hidden");
        assert_eq!(kinds(&Contents { nodes: false, pods: false, ..full }), [CaveatKind::NoCiliumNodes, CaveatKind::NoPods]);
        assert_eq!(kinds(&Contents { endpoints: false, ..full }), [], "a pod's address is in its Pod");
        assert_eq!(kinds(&Contents { namespace: Some("a"), ..full }), [CaveatKind::NamespaceFilter]);
        // A live read's empty lists are the cluster's own.
        assert_eq!(kinds(&Contents { files: false, nodes: false, pods: false, endpoints: false, ..full }), []);
    }
}
