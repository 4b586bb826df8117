//! Browser-only plumbing shared by the pages: server-sent events read as JSON.

use leptos::wasm_bindgen::{closure::Closure, JsCast};
use serde::de::DeserializeOwned;

/// Whether to go on listening after a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Listen,
    Stop,
}

/// Listens to the server-sent events of `url`, handing each message that parses as `T` to
/// `on_message` until it answers [`Next::Stop`]; messages that do not parse are skipped.
pub fn listen_json<T: DeserializeOwned + 'static>(
    url: &str,
    mut on_message: impl FnMut(T) -> Next + 'static,
) {
    let Ok(source) = web_sys::EventSource::new(url) else {
        return;
    };
    let closer = source.clone();
    let handler =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            let Some(data) = event.data().as_string() else {
                return;
            };
            // Read as bytes, as the page's data is (`crate::resource`): one JSON reader.
            let Ok(message) = leptos::serde_json::from_slice::<T>(data.as_bytes()) else {
                return;
            };
            if on_message(message) == Next::Stop {
                closer.close();
            }
        });
    source.set_onmessage(Some(handler.as_ref().unchecked_ref()));
    // The handler lives as long as the page's event source.
    handler.forget();
}
