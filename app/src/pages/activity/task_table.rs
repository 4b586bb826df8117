//! Tasks with their containers and GPUs; with stop codes and reasons when `stopped`.

use super::*;

/// Tasks with their containers and GPUs; with stop codes and reasons when `stopped`.
#[component]
pub fn TaskTable(tasks: Vec<TaskInfo>, stopped: bool) -> impl IntoView {
    if tasks.is_empty() {
        return view! { <p data-testid="tasks-empty">{if stopped { "No stopped task matches." } else { "No task yet." }}</p> }.into_any();
    }
    view! {
        <table class="data-table compact" data-testid="task-table">
            <thead><tr>
                <th scope="col">"Task"</th>
                <th scope="col">"Service"</th>
                <th scope="col">"Revision"</th>
                <th scope="col">"Status"</th>
                <th scope="col">"Instance"</th>
                <th scope="col">"GPUs"</th>
                {stopped.then(|| view! {
                    <th scope="col">"Stopped (UTC)"</th>
                    <th scope="col">"Stop code"</th>
                    <th scope="col">"Why"</th>
                })}
            </tr></thead>
            <tbody>
                {tasks.into_iter().map(|t| {
                    let instance = t.instance.clone();
                    let gpus = t.containers.iter().flat_map(|c| c.gpus.iter().map(move |g| (c.name.clone(), g.clone()))).map(|(container, g)| {
                        let place = match g.index {
                            Some(index) => (format!("{instance} GPU {index}"), format!("/?gpu={}", encode(&format!("{instance}:{index}")))),
                            None => (g.uuid.clone(), format!("/?gpu={}", encode(&g.uuid))),
                        };
                        view! { <div><a class="mono" href=place.1 title=g.uuid.clone()>{place.0}</a>{format!(" ({container})")}</div> }
                    }).collect_view();
                    let why = t.containers.iter().filter(|c| c.exit_code.is_some() || c.reason.is_some()).map(|c| {
                        view! { <div class="muted">{format!("{}: {}{}", c.name, c.exit_code.map(|e| format!("exit {e}")).unwrap_or_default(), c.reason.as_ref().map(|r| format!(" {r}")).unwrap_or_default())}</div> }
                    }).collect_view();
                    view! {
                        <tr data-task=t.id.clone() data-stop-code=t.stop_code.as_ref().map(StopCode::to_string).unwrap_or_default()>
                            <td class="mono" title=t.arn.clone()>{t.id.clone()}</td>
                            <td>{t.service.clone().unwrap_or_else(|| "—".into())}</td>
                            <td class="mono">{t.task_definition.clone()}</td>
                            <td>{t.last_status.clone()}</td>
                            <td class="mono">{t.instance.clone()}</td>
                            <td data-testid="task-gpus">{gpus}</td>
                            {stopped.then(|| view! {
                                <td class="mono when" title=t.stopped_at.clone()>{t.stopped_at.as_deref().map_or_else(|| "—".into(), when)}</td>
                                <td>{t.stop_code.as_ref().map_or_else(|| "—".into(), StopCode::to_string)}</td>
                                <td>{t.stopped_reason.clone().unwrap_or_default()}{why}</td>
                            })}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
