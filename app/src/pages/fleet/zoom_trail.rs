//! Where the heatmap is: the whole fleet, or a part of it with a way back.

use super::*;

/// Where the heatmap is: the whole fleet, or a part of it with a way back.
#[component]
pub(super) fn ZoomTrail(view: Memo<FleetQuery>) -> impl IntoView {
    move || {
        let query = view.get();
        let whole = format!(
            "/{}",
            FleetQuery {
                zoom: None,
                ..query.clone()
            }
            .to_query_string()
        );
        match &query.zoom {
            None => view! {
                <p class="zoom-trail" data-testid="zoom-trail" title="Open a group or an instance (click, or the arrow keys and Enter) for its GPUs row by row; Shift+click two instances (or Shift+Enter) to open the range between them.">
                    <strong>"Whole fleet"</strong>
                    {format!(
                        " · by {} · sorted by {}",
                        query.group.label().to_lowercase(),
                        query.sort.phrase(),
                    )}
                </p>
            }
            .into_any(),
            Some(zoom) => view! {
                <nav class="zoom-trail" aria-label="Zoom" data-testid="zoom-trail">
                    <a href=whole data-testid="zoom-out">"Whole fleet"</a>
                    " › "
                    <span aria-current="page">{zoom.label()}</span>
                </nav>
            }
            .into_any(),
        }
    }
}
