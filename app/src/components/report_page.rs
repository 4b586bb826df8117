//! The skeleton of a page that shows a report of its URL's query: the query read from the URL
//! (a bad value is said in a banner and the default view shown instead), the report fetched
//! for it, a line while it is worked out and an error banner when it cannot be.

use crate::resource::fetched;
use std::future::Future;

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    components::error_banner::ErrorBanner,
    model::{
        cost::{consolidate::PlanQuery, CostQuery},
        ServiceError,
    },
};

/// A query a report page reads from its URL.
pub trait PageQuery: Clone + Default + PartialEq + Send + Sync + 'static {
    /// The query parameters it reads.
    const KEYS: &'static [&'static str];

    /// The query of `params`, or what is wrong with them.
    fn parse<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, String>;
}

/// What a report page says around its report.
pub struct ReportPageText {
    /// Shown while the report is worked out.
    pub loading: &'static str,
    /// Before the error, when the report cannot be had.
    pub failed: &'static str,
    /// After a bad query's error: what is shown instead.
    pub instead: &'static str,
    /// The test id of the bad query's banner.
    pub query_error_id: &'static str,
}

/// The URL's query of type `Q`, read again when the URL changes: as parsed (with the error),
/// and the query to show (the default when it did not parse).
pub fn url_query<Q: PageQuery>() -> (Memo<Result<Q, String>>, Memo<Q>) {
    let params = use_query_map();
    let parsed = Memo::new(move |_| {
        params.with(|q| {
            let pairs: Vec<(String, String)> = Q::KEYS
                .iter()
                .filter_map(|k| q.get(k).map(|v| (k.to_string(), v)))
                .collect();
            Q::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        })
    });
    let query = Memo::new(move |_| parsed.get().unwrap_or_default());
    (parsed, query)
}

/// The body of a report page: the bad query's banner, then the report of the URL's query from
/// `fetch`, drawn by `show`.
pub fn report_body<Q, R, F, Fut, S, V>(text: ReportPageText, fetch: F, show: S) -> impl IntoView
where
    Q: PageQuery,
    R: Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static,
    F: Fn(Q) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ServiceError>> + Send + 'static,
    S: Fn(R) -> V + Copy + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let (parsed, query) = url_query::<Q>();
    let report = fetched(move || query.get(), fetch);
    let ReportPageText {
        loading,
        failed,
        instead,
        query_error_id,
    } = text;
    view! {
        {move || parsed.get().err().map(|error| view! {
            <p class="banner error" role="alert" data-testid=query_error_id>{format!("{error}. {instead}")}</p>
        })}
        <Suspense fallback=move || view! { <p class="muted">{loading}</p> }>
            {move || Suspend::new(async move {
                match report.await {
                    Ok(report) => show(report).into_any(),
                    Err(error) => view! { <ErrorBanner error lead=failed /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

impl PageQuery for CostQuery {
    const KEYS: &'static [&'static str] = &CostQuery::KEYS;

    fn parse<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, String> {
        CostQuery::from_params(params)
    }
}

impl PageQuery for PlanQuery {
    const KEYS: &'static [&'static str] = &PlanQuery::KEYS;

    fn parse<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, String> {
        PlanQuery::from_params(params)
    }
}

impl PageQuery for crate::model::cost::ReconciliationQuery {
    const KEYS: &'static [&'static str] = &["month"];

    fn parse<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, String> {
        let months = crate::model::cost::MonthsQuery::from_params(params)?;
        Ok(crate::model::cost::ReconciliationQuery {
            month: months.month,
            format: None,
        })
    }
}

impl PageQuery for crate::model::cost::MonthsQuery {
    const KEYS: &'static [&'static str] = &crate::model::cost::MonthsQuery::KEYS;

    fn parse<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, String> {
        crate::model::cost::MonthsQuery::from_params(params)
    }
}
