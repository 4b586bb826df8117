//! The recently stopped tasks of one cluster.

use super::*;
use crate::resource::fetched;

/// The recently stopped tasks of one cluster.
#[component]
pub fn StoppedTasksPage() -> impl IntoView {
    let (cluster, text) = cluster_and_query();
    let filter = Memo::new(move |_| {
        limit_of(text("limit")).map(|limit| StoppedFilter {
            service: text("service"),
            stop_code: text("stop_code"),
            q: text("q"),
            limit,
        })
    });
    let stopped = fetched(
        move || (cluster.get(), filter.get()),
        |(cluster, filter)| async move {
            match filter {
                Ok(filter) => cluster_stopped_tasks(cluster, filter).await,
                Err(problem) => Err(problem),
            }
        },
    );
    let stale = stale_reads_after(stopped);
    // Inside the suspense, so that the server and the browser render the same options. Its one
    // button reads ECS again with what the form holds, so nothing typed is lost.
    let form = move |services: Vec<String>| {
        view! {
            <form class="compare-picker card" method="get" data-testid="stopped-filter">
                <label><span>"Service"</span>
                    <ServiceSelect services selected=text("service") testid="stopped-service" />
                </label>
                <label><span>"Stop code"</span>
                    <select name="stop_code" data-testid="stopped-code">
                        <option value="">"any"</option>
                        {StopCode::KNOWN.map(|code| {
                            let (name, value, chosen) = (code.to_string(), code.to_string(), code.to_string());
                            view! {
                                <option value=value selected=move || text("stop_code").as_deref() == Some(chosen.as_str())>{name}</option>
                            }
                        }).collect_view()}
                    </select>
                </label>
                <label><span>"Reason or task contains"</span>
                    <input type="search" name="q" maxlength="200" data-testid="stopped-q" prop:value=move || text("q").unwrap_or_default() value=move || text("q").unwrap_or_default() />
                </label>
                <label><span>"Rows"</span>
                    <input type="text" name="limit" size="4" inputmode="numeric" placeholder="200" prop:value=move || text("limit").unwrap_or_default() value=move || text("limit").unwrap_or_default() />
                </label>
                <button type="submit" data-testid="stopped-apply">"Filter and refresh"</button>
            </form>
        }
    };
    view! {
        <Title text={ let cluster = crate::pages::title_part(cluster); move || format!("Stopped tasks · {}", cluster()) } />
        <ClusterTabs cluster current="stopped" />
        <p class="muted">"Tasks that stopped recently, most recent first, with ECS's stop code and reason, each container's exit code and reason, and the GPUs the task held. ECS keeps stopped tasks for about an hour."</p>
        <Suspense fallback=|| view! { <p class="muted">"Reading the stopped tasks…"</p> }>
            {move || Suspend::new(async move {
                match stopped.await {
                    Ok(found) => view! {
                        <StaleReadsBanner status=stale />
                        {form(found.services.clone())}
                        <p class="muted" data-testid="stopped-count">{format!("{} of {} stopped tasks · read at {}", found.tasks.len(), found.total, found.read_at)}</p>
                        <TaskTable tasks=found.tasks stopped=true />
                    }.into_any(),
                    Err(problem) => view! {
                        {form(text("service").into_iter().collect())}
                        <ErrorBanner error=problem testid="stopped-error" />
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
