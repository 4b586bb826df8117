//! Who the console thinks you are, in the header: your name, role and teams, or that the console
//! runs without sign-in — in red when that is on a network address.

use crate::resource::fetched;
use leptos::prelude::*;

use crate::server_fns::console::console_status;

/// "ana@example.com (deployer: search)" or "no sign-in (local)".
#[component]
pub fn IdentityBadge() -> impl IntoView {
    let status = fetched(|| (), |_| console_status());
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                status.await.ok().and_then(|status| status.actor).map(|actor| {
                    let title = if actor.insecure {
                        "This console serves a network address without sign-in: everyone who reaches it is an admin. Start it with --auth proxy, --auth alb or --auth oidc."
                    } else {
                        "Who the console's sign-in says you are, your role and your teams."
                    };
                    let signs_out = actor.auth == crate::model::identity::AuthMode::Oidc;
                    view! {
                        <span class="identity-badge" class:insecure=actor.insecure data-testid="identity" data-role=actor.role.as_str() title=title>
                            {if actor.insecure { format!("{} · not signed in, open to the network", actor.label()) } else { actor.label() }}
                        </span>
                        {signs_out.then(|| view! {
                            // A plain form: signing out works without JavaScript, and the origin
                            // guard knows the post comes from the console's own page.
                            <form class="sign-out" method="post" action="/auth/logout">
                                <button type="submit" data-testid="sign-out">"Sign out"</button>
                            </form>
                        })}
                    }
                })
            })}
        </Suspense>
    }
}
