//! Every write the plugin makes to a cluster, and the reads and permission checks that prepare
//! them. Commands decide what to write (pure functions of the objects) and report; this module
//! reads, checks and writes.
//!
//! Writes are replaces with the resourceVersion they were read at (optimistic concurrency):
//! a concurrent writer makes the API server answer 409 Conflict, and [`replace_retrying`]
//! re-reads and asks the caller's edit again — kube does not retry 409s itself.

use super::client::{Connection, pools_api, pools_resource};
use super::list::{ListBounds, list_all};
use super::resources::crd_resource;
use crate::error::{cluster, input};
use crate::model::CrdInfo;
use crate::model::crd::POOL_CRD_NAME;
use crate::secrets;
use anyhow::Result;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::Value;

/// The field manager our writes appear under in `managedFields`.
pub const FIELD_MANAGER: &str = "kubectl-ciliumpool";

/// Where [`replace_retrying`] reads and writes objects: one resource, the object itself or its
/// `/status` subresource, for real or as a server-side dry run.
pub struct Target {
    api: Api<DynamicObject>,
    params: PostParams,
    status: bool,
}

impl Target {
    /// The object as stored now.
    pub async fn read(&self, name: &str) -> Result<Value, kube::Error> {
        let current = self.api.get(name).await?;
        Ok(serde_json::to_value(current).expect("a Kubernetes object serializes to JSON"))
    }

    /// CiliumPodIPPools through cilium.io/v2.
    pub fn pools(client: &kube::Client, dry_run: bool) -> Target {
        Target { api: pools_api(client, "v2"), params: params(dry_run), status: false }
    }

    /// The status of a CustomResourceDefinition (`status.storedVersions`).
    pub fn crd_status(client: &kube::Client) -> Target {
        Target { api: Api::all_with(client.clone(), &crd_resource()), params: params(false), status: true }
    }

    async fn replace(&self, name: &str, object: &DynamicObject) -> Result<DynamicObject, kube::Error> {
        if self.status {
            self.api.replace_status(name, &self.params, object).await
        } else {
            self.api.replace(name, &self.params, object).await
        }
    }
}

fn params(dry_run: bool) -> PostParams {
    PostParams { dry_run, field_manager: Some(FIELD_MANAGER.into()) }
}

/// A finished [`replace_retrying`].
#[derive(Debug)]
pub enum Replaced {
    /// The object as the API server stored it (or would have, in a dry run), and the attempt
    /// that succeeded (1 without conflicts).
    Written { object: Value, attempts: usize },
    /// The edit asked for no write.
    Unchanged,
}

/// Why a [`replace_retrying`] wrote nothing. Callers word the error: what failed is theirs.
#[derive(Debug)]
pub enum RetryError {
    /// Reading the object failed (404 included).
    Read(kube::Error),
    /// The edit refused the object it was given.
    Edit(anyhow::Error),
    /// The replace failed other than by a conflict.
    Write(kube::Error),
    /// Every one of this many attempts conflicted with another writer.
    Conflicts(usize),
}

/// How the messages of a failed [`replace_retrying`] name the object and what to check.
pub struct Wording<'a> {
    /// The object read, as kubectl names it (`ciliumpodippools.cilium.io/blue`).
    pub read: &'a str,
    /// What the write went to (a status subresource differs from `read`).
    pub write: &'a str,
    /// How to see whether a write without an answer landed, e.g. "check with `kubectl …`".
    pub check: &'a str,
}

impl RetryError {
    /// The one wording of a failed write for every command that writes with [`replace_retrying`]:
    /// a refusal by the API server's validation is bad input; a write that got no answer may
    /// still be applied; every other failure wrote nothing.
    pub fn into_error(self, conn: &Connection, wording: &Wording) -> anyhow::Error {
        let Wording { read, write, check } = wording;
        match self {
            RetryError::Read(e) => conn.request_failed(e, "get", read),
            RetryError::Edit(e) => e,
            RetryError::Write(kube::Error::Api(status)) if status.code == 422 => {
                input(format!("the API server refused {write}: {}; nothing was written", secrets::redact(&status.message)))
            }
            RetryError::Write(e @ kube::Error::Api(_)) => conn.request_failed(e, "update", write),
            RetryError::Write(e) => {
                cluster(format!("{}; the write may still be applied: {check} before retrying", conn.request_failed(e, "update", write)))
            }
            RetryError::Conflicts(attempts) => {
                cluster(format!("{read} kept changing: {attempts} conflicting writes in a row; nothing was written — retry later"))
            }
        }
    }
}

/// Reads `name`, lets `edit` turn it into the object to write (`None`: write nothing), and
/// replaces it with the resourceVersion it was read at. On 409 Conflict the object is read
/// again and `edit` asked again, up to `attempts` times in all. One replace per object, so an
/// interruption never leaves an object half-written.
pub async fn replace_retrying(
    target: &Target,
    name: &str,
    attempts: usize,
    mut edit: impl FnMut(Value) -> Result<Option<Value>>,
) -> Result<Replaced, RetryError> {
    for attempt in 1..=attempts {
        let current = target.read(name).await.map_err(RetryError::Read)?;
        let Some(new) = edit(current).map_err(RetryError::Edit)? else { return Ok(Replaced::Unchanged) };
        let body: DynamicObject =
            serde_json::from_value(new).map_err(|e| RetryError::Edit(anyhow::anyhow!("cannot encode the edited object: {e}")))?;
        match target.replace(name, &body).await {
            Ok(written) => {
                return Ok(Replaced::Written {
                    object: serde_json::to_value(written).expect("a Kubernetes object serializes to JSON"),
                    attempts: attempt,
                });
            }
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(e) => return Err(RetryError::Write(e)),
        }
    }
    Err(RetryError::Conflicts(attempts))
}

/// One permission a write needs, checked with a SelfSubjectAccessReview before anything is
/// written.
pub struct Permission {
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: Option<&'static str>,
    /// One object (a ClusterRole may grant a verb on that name only).
    name: Option<&'static str>,
}

impl Permission {
    /// A verb on CiliumPodIPPools.
    pub fn pools(verb: &'static str) -> Permission {
        Permission { verb, group: "cilium.io", resource: "ciliumpodippools", subresource: None, name: None }
    }

    /// Updating the pool CRD's status (`status.storedVersions`); a role limited to that CRD
    /// by `resourceNames` suffices (docs/rbac.md).
    pub fn crd_status_update() -> Permission {
        Permission {
            verb: "update",
            group: "apiextensions.k8s.io",
            resource: "customresourcedefinitions",
            subresource: Some("status"),
            name: Some(POOL_CRD_NAME),
        }
    }

    fn describe(&self) -> String {
        let sub = self.subresource.map(|s| format!("/{s}")).unwrap_or_default();
        format!("{} {}{sub}.{}", self.verb, self.resource, self.group)
    }
}

/// Fails with exit 3 naming the first permission the user lacks; nothing has been written.
pub async fn require(conn: &Connection, needed: &[Permission]) -> Result<()> {
    let api: Api<SelfSubjectAccessReview> = Api::all(conn.client.clone());
    for permission in needed {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(permission.verb.into()),
                    group: Some(permission.group.into()),
                    resource: Some(permission.resource.into()),
                    subresource: permission.subresource.map(str::to_string),
                    name: permission.name.map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| conn.request_failed(e, "create", "selfsubjectaccessreviews.authorization.k8s.io"))?;
        if !answer.status.is_some_and(|s| s.allowed) {
            return Err(cluster(format!(
                "missing permission: {} may not {} (cluster-scoped); nothing was written — ask for a ClusterRole granting it",
                conn.user,
                permission.describe()
            )));
        }
    }
    Ok(())
}

/// What `migrate` plans from: the pool CRD and every pool as read through each version.
pub struct PoolViews {
    pub crd: CrdInfo,
    /// The CRD as read (its managedFields tell who set `status.storedVersions`, and when).
    pub crd_object: Value,
    pub via_alpha: Vec<Value>,
    pub via_v2: Vec<Value>,
}

impl PoolViews {
    /// Reads the CRD, then the pools through every version it serves, in pages of `page_size`.
    pub async fn read(conn: &Connection, page_size: u32) -> Result<PoolViews> {
        let crds: Api<DynamicObject> = Api::all_with(conn.client.clone(), &crd_resource());
        let crd = crds
            .get(POOL_CRD_NAME)
            .await
            .map_err(|e| conn.request_failed(e, "get", &format!("customresourcedefinitions {POOL_CRD_NAME}")))?;
        let crd_object = serde_json::to_value(&crd)?;
        let crd = CrdInfo::decode(&crd_object);
        let via = |version: &'static str| {
            let served = crd.serves(version);
            async move { if served { list_pools(conn, version, page_size).await } else { Ok(Vec::new()) } }
        };
        let via_alpha = via("v2alpha1").await?;
        let via_v2 = via("v2").await?;
        Ok(PoolViews { crd, crd_object, via_alpha, via_v2 })
    }
}

/// Every pool through one version, page by page, as plain JSON with apiVersion and kind set.
async fn list_pools(conn: &Connection, version: &str, page_size: u32) -> Result<Vec<Value>> {
    list_all(&conn.client, &pools_resource(version), None, ListBounds { page_size: Some(page_size), ..ListBounds::WHOLE })
        .await
        .map(|listed| listed.items)
        .map_err(|e| conn.request_failed(e, "list", &format!("ciliumpodippools.{version}.cilium.io")))
}
