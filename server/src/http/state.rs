//! What every request handler can reach: the use cases' context, and what the HTTP edge itself
//! keeps (the site, metrics, readiness, limits, the fleet API's serialized answers). It is built
//! by [`crate::startup`].

use std::sync::Arc;

use axum::extract::FromRef;
use leptos::prelude::*;

use app::service::ServiceContext;

use super::{
    admission::Admission,
    fleet_cache::FleetJsonCache,
    metrics::{Costs, HttpMetrics, MetricsPage},
    origin::OriginGuard,
    streams::StreamLimits,
};
use crate::{
    auth::{self, Authenticator},
    readiness::Readiness,
};

/// The server's shared state, cloned into every handler.
#[derive(Clone)]
pub struct AppState {
    /// Where the built site is and what its files are called.
    pub leptos_options: LeptosOptions,
    /// The use cases' context: the server's facts and its ports to ECS and the audit log.
    pub services: ServiceContext,
    /// Request counts and latencies for `/metrics`.
    pub metrics: Arc<HttpMetrics>,
    /// `/api/v1/fleet` answers, serialized once per snapshot and filter.
    pub fleet_json: Arc<FleetJsonCache>,
    /// The checks behind `/readyz`.
    pub readiness: Readiness,
    /// Largest request body, in bytes.
    pub body_limit: usize,
    /// How long a request may take.
    pub request_timeout: std::time::Duration,
    /// Who is asking, worked out for every request.
    pub authenticator: Arc<Authenticator>,
    /// The console's own origin and hosts.
    pub origin: Arc<OriginGuard>,
    /// The live-update streams open, by client.
    pub streams: Arc<StreamLimits>,
    /// The reads in flight and waiting, and their bounds.
    pub admission: Arc<Admission>,
    /// What reading the fleet costs, for `/metrics`: the AWS calls, the budget, the refresher
    /// and the full reads' checks.
    pub costs: Arc<Costs>,
    /// The allocation history the cost review reads and the recorder writes.
    pub history: Arc<crate::cost_history::SqlCostHistory>,
}

impl AppState {
    /// Provides the use cases' context to a page render or server function call.
    pub fn render_context(&self) -> impl Fn() + Clone + Send + Sync + 'static {
        let services = self.services.clone();
        move || provide_context(services.clone())
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl FromRef<AppState> for auth::SignIn {
    fn from_ref(state: &AppState) -> Self {
        auth::SignIn {
            authenticator: state.authenticator.clone(),
            services: state.services.clone(),
        }
    }
}

impl FromRef<AppState> for Arc<OriginGuard> {
    fn from_ref(state: &AppState) -> Self {
        state.origin.clone()
    }
}

impl FromRef<AppState> for Arc<Admission> {
    fn from_ref(state: &AppState) -> Self {
        state.admission.clone()
    }
}

impl FromRef<AppState> for Arc<HttpMetrics> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}

impl FromRef<AppState> for MetricsPage {
    fn from_ref(state: &AppState) -> Self {
        MetricsPage {
            metrics: state.metrics.clone(),
            costs: state.costs.clone(),
            admission: state.admission.clone(),
            version: state.services.version,
            started: state.services.started,
        }
    }
}
