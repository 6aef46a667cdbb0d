//! Snapshots from a live cluster: the pool CRD (or discovery), CiliumPodIPPools through the right
//! version, CiliumNodes, Pods and CiliumEndpoints — the same objects `-f` reads from files, fed to
//! the same `Snapshot::from_objects`, so live and offline figures cannot diverge.

use super::client::{ConnectOptions, Connection, connect, pools_resource};
use super::endpoint_table::{self, TableRead};
use super::limits::Refused;
use super::list::{ListBounds, Listed, list_all, probe, resource_name, typed_value};
use super::resources::{config_maps_resource, crd_resource, endpoints_resource, nodes_resource, pods_resource};
use crate::error::cluster;
use crate::model::crd::{CrdInfo, CrdVersion, POOL_CRD_NAME};
use crate::model::{Origin, Pool, Snapshot};
use anyhow::Result;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;

/// The namespaced resources a snapshot reads: `-n` narrows these (pools and nodes are cluster-scoped).
const NAMESPACED: [&str; 2] = ["pods", "ciliumendpoints"];

/// Pool versions the plugin can read, preferred first (v2 is the source of truth once served).
const POOL_VERSIONS: [&str; 2] = ["v2", "v2alpha1"];

/// A connected cluster and the namespace pods are read from (`None` = all namespaces).
pub struct Cluster {
    pub connection: Connection,
    namespace: Option<String>,
    /// Where ConfigMap `cilium-config` lives (`--cilium-namespace`).
    cilium_namespace: String,
}

/// What the pool CRD says, or what discovery could tell when the CRD is not readable.
#[derive(Clone)]
enum PoolSchema {
    Crd(Value),
    Discovered(CrdInfo),
}

impl PoolSchema {
    fn info(&self) -> CrdInfo {
        match self {
            PoolSchema::Crd(object) => CrdInfo::decode(object),
            PoolSchema::Discovered(info) => info.clone(),
        }
    }
}

/// The pool schema, the version pools were read through, the pools, and what stays unknown.
struct PoolRead {
    schema: PoolSchema,
    resource: ApiResource,
    objects: Vec<Value>,
    note: Option<String>,
}

/// Why an optional list (pods, endpoints) is missing from a snapshot.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unreadable {
    Forbidden,
    NotServed,
}

/// What the first read settled about the cluster: where pools are read from, which optional
/// sources are readable. `--watch` rebuilds snapshots from watched objects with the same layout.
#[derive(Clone)]
pub struct Layout {
    schema: PoolSchema,
    pub pools: ApiResource,
    pub nodes: ApiResource,
    /// `Err` when pods cannot be read: used addresses come from elsewhere or are unknown.
    pods: Result<ApiResource, Unreadable>,
    endpoints: Result<ApiResource, Unreadable>,
    /// How the CiliumEndpoints were listed (`-v`): as Tables, or in one list and why; `None` when
    /// they were only probed.
    pub endpoints_how: Option<String>,
    /// The running Cilium's image and where it was read, or why it is unknown (`-v`); `None` when
    /// not asked (a probe).
    pub cilium_how: Option<String>,
    schema_note: Option<String>,
    /// ConfigMap `cilium-config`, or why it could not be read (the IPAM mode is unknown then).
    config: Result<Value, String>,
    origin: Origin,
}

/// The objects of one read, typed (`apiVersion`/`kind` set) as `kubectl get -o yaml` prints them.
pub struct Objects {
    pub pools: Vec<Value>,
    pub nodes: Listed,
    /// `None` when they could not be read.
    pub pods: Option<Listed>,
    pub endpoints: Option<Listed>,
}

impl Cluster {
    /// Connects with kubectl's flags; pods are read from `namespace` (all when `None`).
    pub async fn connect(options: &ConnectOptions, namespace: Option<&str>) -> Result<Cluster> {
        Ok(Cluster {
            connection: connect(options).await?,
            namespace: namespace.map(str::to_string),
            cilium_namespace: options.cilium_namespace.clone(),
        })
    }

    /// Reads everything a snapshot needs; independent lists run concurrently.
    pub async fn read(&self) -> Result<(Snapshot, Layout)> {
        self.read_lists(false).await
    }

    /// The layout [`Cluster::read`] settles, without the objects of CiliumNodes, Pods and
    /// CiliumEndpoints: each is only asked for one object, which meets the refusals (403, 404)
    /// that decide the layout. `serve` lists them in its watches; reading them here too doubled
    /// its CPU to ready (docs/performance.md, "Where serve's initial sync spends its CPU"). The
    /// snapshot holds the pools alone: its notes and caveats are those of a whole read.
    pub async fn layout(&self) -> Result<(Snapshot, Layout)> {
        self.read_lists(true).await
    }

    /// [`Cluster::read`], or [`Cluster::layout`] when `probe_only`.
    async fn read_lists(&self, probe_only: bool) -> Result<(Snapshot, Layout)> {
        let (nodes_resource, pods_resource, endpoints_resource) = (nodes_resource(), pods_resource(), endpoints_resource());
        // A list given up on (`cluster::limits`: too large, never ending) ends the read at once,
        // dropping the others and what they hold; other failures are weighed below.
        let refused_ends = |listed: Result<Listed, kube::Error>, resource: &ApiResource| match listed {
            Err(e) if Refused::find(&e).is_some() => Err(self.connection.request_failed(e, "list", &resource_name(resource))),
            other => Ok(other),
        };
        let (pools, nodes, pods, endpoints, config, cilium_version) = tokio::try_join!(
            self.read_pools(),
            async { refused_ends(self.list(&nodes_resource, probe_only).await, &nodes_resource) },
            async { refused_ends(self.list(&pods_resource, probe_only).await, &pods_resource) },
            async {
                let (listed, how) = self.list_endpoints(&endpoints_resource, probe_only).await;
                refused_ends(listed, &endpoints_resource).map(|listed| (listed, how))
            },
            async { Ok(self.cilium_config().await) },
            // Which operator runs decides whether reserved ranges are honoured (check,
            // reserve-range); unreadable, it is unknown and nothing else changes.
            async {
                Ok(if probe_only { None } else { Some(super::cilium::version(&self.connection.client, &self.cilium_namespace).await) })
            },
        )?;
        // Pools first (their failure ended the read already): without the CRD every other Cilium
        // list fails too, and "not installed" is the message that helps.
        let nodes = nodes.map_err(|e| match e {
            kube::Error::Api(status) if status.code == 404 => self.nodes_not_served(),
            e => self.connection.request_failed(e, "list", &resource_name(&nodes_resource)),
        })?;
        let pods = self.optional(pods, &pods_resource)?;
        let (endpoints, endpoints_how) = endpoints;
        let endpoints = self.optional(endpoints, &endpoints_resource)?;
        let cilium_versions = cilium_version.iter().flatten().cloned().collect();
        let cilium_how = cilium_version.map(|read| match read {
            Ok(version) => format!("{} ({} in namespace {})", version.image, version.source, version.namespace),
            Err(why) => why,
        });
        let layout = Layout {
            endpoints_how,
            cilium_how,
            schema: pools.schema,
            pools: pools.resource,
            nodes: nodes_resource,
            pods: readable(&pods, pods_resource),
            endpoints: readable(&endpoints, endpoints_resource),
            schema_note: pools.note,
            config: config?,
            origin: Origin {
                kind: "cluster",
                server: Some(self.connection.server.clone()),
                context: self.connection.context.clone(),
                namespace: self.namespace.clone(),
                cilium_versions,
                ..Default::default()
            },
        };
        let snapshot = layout.snapshot(Objects { pools: pools.objects, nodes, pods: pods.ok(), endpoints: endpoints.ok() });
        Ok((snapshot, layout))
    }

    /// An API handle for a resource, in the `-n` namespace when it is namespaced and one was given.
    pub fn api<K: kube::Resource<Scope = kube::core::DynamicResourceScope>>(&self, resource: &K::DynamicType) -> Api<K> {
        let client = self.connection.client.clone();
        match self.namespace_of(&K::plural(resource)) {
            Some(namespace) => Api::namespaced_with(client, namespace, resource),
            None => Api::all_with(client, resource),
        }
    }

    /// The `-n` namespace, when one was given and the resource (`plural`) is namespaced.
    pub fn namespace_of(&self, plural: &str) -> Option<&str> {
        self.namespace.as_deref().filter(|_| NAMESPACED.contains(&plural))
    }

    /// Every object of a resource in one answer (served from the API server's watch cache,
    /// docs/performance.md "One answer per list"), with Pods and CiliumEndpoints decoded straight
    /// into the model's structs (`model::slim`): an answer of real pods is mostly fields the plugin
    /// never looks at, and decoding them is most of a live read's cost. With `probe_only`, only
    /// whether it can be listed (an empty list when it can).
    async fn list(&self, resource: &ApiResource, probe_only: bool) -> Result<Listed, kube::Error> {
        let namespace = self.namespace_of(&resource.plural);
        if probe_only {
            return probe(&self.connection.client, resource, namespace).await;
        }
        list_all(&self.connection.client, resource, namespace, ListBounds::WHOLE).await
    }

    /// The CiliumEndpoints as Tables where they can be read so (`endpoint_table`), else in one
    /// list; and how, for `-v`.
    async fn list_endpoints(&self, resource: &ApiResource, probe_only: bool) -> (Result<Listed, kube::Error>, Option<String>) {
        if probe_only {
            return (self.list(resource, true).await, None);
        }
        match endpoint_table::list(&self.connection.client, self.namespace_of(&resource.plural)).await {
            Ok(TableRead::Read { listed, namespaces }) => (Ok(listed), Some(format!("as the Tables of {namespaces} namespace(s)"))),
            Ok(TableRead::NotTaken(why)) => (self.list(resource, false).await, Some(format!("in one list: {why}"))),
            Err(e) => (Err(e), None),
        }
    }

    /// A list the snapshot can do without: forbidden or not served degrades, anything else fails.
    fn optional(&self, listed: Result<Listed, kube::Error>, resource: &ApiResource) -> Result<Result<Listed, Unreadable>> {
        match listed {
            Ok(items) => Ok(Ok(items)),
            Err(kube::Error::Api(status)) if status.code == 403 => Ok(Err(Unreadable::Forbidden)),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(Err(Unreadable::NotServed)),
            Err(e) => Err(self.connection.request_failed(e, "list", &resource_name(resource))),
        }
    }

    async fn read_pools(&self) -> Result<PoolRead> {
        let (schema, note) = self.pool_schema().await?;
        let Some(version) = POOL_VERSIONS.into_iter().find(|v| schema.info().serves(v)) else {
            return Err(self.not_installed());
        };
        let resource = pools_resource(version);
        let pools = self.list(&resource, false).await.map_err(|e| self.connection.request_failed(e, "list", &resource_name(&resource)))?;
        let pools = pools.items;
        Ok(PoolRead { schema, resource, objects: pools, note })
    }

    /// All pools, through the version `read` would use, decoded without the CRD (for shell
    /// completion: names, CIDRs and reserved ranges as written).
    pub async fn pools(&self) -> Result<Vec<Pool>> {
        let pools = self.read_pools().await?;
        Ok(pools.objects.iter().map(|pool| Pool::decode(pool, None)).collect())
    }

    /// The API server's version (`gitVersion` of `/version`).
    pub async fn server_version(&self) -> Result<String> {
        let info = self.connection.client.apiserver_version().await.map_err(|e| self.connection.request_failed(e, "get", "/version"))?;
        Ok(info.git_version)
    }

    /// What the pool CRD says (or discovery, when the CRD is forbidden) and what stays unknown.
    pub async fn pool_crd(&self) -> Result<(CrdInfo, Option<String>)> {
        let (schema, note) = self.pool_schema().await?;
        Ok((schema.info(), note))
    }

    /// The CRD when readable; else served versions from discovery (open to every user).
    async fn pool_schema(&self) -> Result<(PoolSchema, Option<String>)> {
        let crds: Api<DynamicObject> = Api::all_with(self.connection.client.clone(), &crd_resource());
        match crds.get(POOL_CRD_NAME).await {
            Ok(object) => Ok((PoolSchema::Crd(typed_value(object, &crd_resource())), None)),
            Err(kube::Error::Api(status)) if status.code == 404 => Err(self.not_installed()),
            Err(kube::Error::Api(status)) if status.code == 403 => {
                let note = format!(
                    "CRD {POOL_CRD_NAME}: forbidden (403) — storage version, storedVersions and the v2 schema are unknown; served versions from API discovery"
                );
                Ok((PoolSchema::Discovered(self.discover_pool_versions().await?), Some(note)))
            }
            Err(e) => Err(self.connection.request_failed(e, "get", &format!("customresourcedefinitions/{POOL_CRD_NAME}"))),
        }
    }

    async fn discover_pool_versions(&self) -> Result<CrdInfo> {
        let mut versions = Vec::new();
        for version in POOL_VERSIONS {
            match self.connection.client.list_api_group_resources(&format!("cilium.io/{version}")).await {
                Ok(list) if list.resources.iter().any(|r| r.name == "ciliumpodippools") => {
                    // Discovery tells served versions only; storage stays unknown (false).
                    versions.push(CrdVersion { name: version.to_string(), served: true, storage: false });
                }
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(e) => return Err(self.connection.request_failed(e, "discover", &format!("cilium.io/{version}"))),
            }
        }
        Ok(CrdInfo { versions, stored_versions: None, v2_dialect: None, resource_version: None })
    }

    /// ConfigMap `cilium-config` (the IPAM mode). Forbidden or missing degrades to "mode unknown".
    async fn cilium_config(&self) -> Result<Result<Value, String>> {
        use crate::model::ipam::CONFIG_MAP_NAME;
        let resource = config_maps_resource();
        let api: Api<DynamicObject> = Api::namespaced_with(self.connection.client.clone(), &self.cilium_namespace, &resource);
        let name = format!("ConfigMap {}/{CONFIG_MAP_NAME}", self.cilium_namespace);
        match api.get(CONFIG_MAP_NAME).await {
            Ok(object) => Ok(Ok(typed_value(object, &resource))),
            Err(kube::Error::Api(status)) if status.code == 403 => Ok(Err(format!("{name}: forbidden (403) — IPAM mode unknown"))),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                Ok(Err(format!("{name}: not found — IPAM mode unknown (pass --cilium-namespace where Cilium is installed)")))
            }
            Err(e) => Err(self.connection.request_failed(e, "get", &format!("configmaps/{CONFIG_MAP_NAME}"))),
        }
    }

    /// CiliumNodes are where the operator records which blocks each node holds: without their
    /// CRD no allocated block can be known, so no figure would be right.
    fn nodes_not_served(&self) -> anyhow::Error {
        cluster(format!(
            "CiliumNode (ciliumnodes.cilium.io, cilium.io/v2) is not served by {}: the CiliumNode CRD is missing, so which blocks the nodes hold cannot be read; \
             the Cilium operator creates it when it starts — check that Cilium is installed and its operator runs (or work offline with -f)",
            self.connection.server
        ))
    }

    fn not_installed(&self) -> anyhow::Error {
        cluster(format!(
            "CiliumPodIPPool ({POOL_CRD_NAME}) is not served by {}: is Cilium installed with multi-pool IPAM?",
            self.connection.server
        ))
    }
}

impl Layout {
    /// The snapshot for a set of objects read with this layout.
    pub fn snapshot(&self, objects: Objects) -> Snapshot {
        let crd = match &self.schema {
            PoolSchema::Crd(object) => Some(object.clone()),
            PoolSchema::Discovered(_) => None,
        };
        let pods_read = objects.pods.is_some();
        let endpoints_read = objects.endpoints.is_some();
        let mut workloads = objects.nodes.workloads;
        let mut lists = vec![objects.nodes.items];
        for listed in [objects.pods, objects.endpoints].into_iter().flatten() {
            workloads.append(listed.workloads);
            lists.push(listed.items);
        }
        let all = crd.into_iter().chain(self.config.as_ref().ok().cloned()).chain(objects.pools).chain(lists.into_iter().flatten());
        let mut snapshot = Snapshot::from_read(all, workloads);
        if let PoolSchema::Discovered(info) = &self.schema {
            snapshot.crd = Some(info.clone());
        }
        if !pods_read {
            snapshot.pods = None;
        }
        if !endpoints_read {
            snapshot.endpoints = None;
        }
        // from_objects notes kinds missing from files; a live read knows what it could not read.
        snapshot.notes = self.notes();
        snapshot.set_origin(self.origin.clone());
        snapshot
    }

    /// Pods, when they could be read (`--watch` watches only what it can read).
    pub fn readable_pods(&self) -> Option<&ApiResource> {
        self.pods.as_ref().ok()
    }

    /// CiliumEndpoints, when they could be read.
    pub fn readable_endpoints(&self) -> Option<&ApiResource> {
        self.endpoints.as_ref().ok()
    }

    fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.schema_note.iter().cloned().collect();
        if let Err(why) = &self.config {
            notes.push(why.clone());
        }
        if let Err(why) = self.pods {
            let consequence = if self.endpoints.is_ok() { "used addresses from CiliumEndpoints only" } else { "used addresses unknown" };
            notes.push(format!("pods: {} — {consequence}", unreadable_text(why)));
        }
        if let Err(why) = self.endpoints {
            notes.push(format!("CiliumEndpoints: {}", unreadable_text(why)));
        }
        notes
    }
}

/// The resource of a list that could be read, else why not.
fn readable<T>(listed: &Result<T, Unreadable>, resource: ApiResource) -> Result<ApiResource, Unreadable> {
    listed.as_ref().map(|_| resource).map_err(|why| *why)
}

fn unreadable_text(why: Unreadable) -> &'static str {
    match why {
        Unreadable::Forbidden => "forbidden (403)",
        Unreadable::NotServed => "not served by this cluster",
    }
}
