//! The pages' resources: data a page reads through a server function, rendered on the server and
//! handed to the browser with the page.
//!
//! Leptos's default codec reads that hand-over with `serde_json::from_str`, while a server
//! function's answer is read with `serde_json::from_slice`. Both are generic over every type the
//! pages read, so the WebAssembly carried two JSON readers of each (9 % of the file).
//! [`JsonCodec`] reads the hand-over as bytes, the way server functions read their answers, so
//! that one reader of each type serves both.
//!
//! The answers are handed over by number, in the order the resources are created, and the
//! browser reads them back in the order it creates them. So a page creates its resources where
//! it is built once: in the page's component or the shell, never in a view inside a `Suspend`.
//! The server may run a `Suspend`'s closure again when the resource it awaits resolves, creating
//! the resources inside it a second time under new numbers; the browser, creating them once,
//! then reads another resource's answer and cannot hydrate the page. A view inside a `Suspend`
//! takes the resource it shows from the page (as `StaleReadsBanner` and `RecentEvents` do), or
//! reads on request with an action. `server/tests/integration/http/handover.rs` holds every
//! page to it.

use leptos::prelude::Resource;
use leptos::server::codee::{Decoder, Encoder};
use serde::{de::DeserializeOwned, Serialize};
use std::future::Future;

/// JSON, written as text and read as bytes (see the module's documentation).
pub struct JsonCodec;

impl<T: Serialize> Encoder<T> for JsonCodec {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(value: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(value)
    }
}

impl<T: DeserializeOwned> Decoder<T> for JsonCodec {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(text: &str) -> Result<T, serde_json::Error> {
        serde_json::from_slice(text.as_bytes())
    }
}

/// A resource as `Resource::new` makes it (fetched on the server, its answer handed to the
/// browser with the page, fetched again when `source` changes), read back with [`JsonCodec`].
#[track_caller]
pub fn fetched<S, T, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T, JsonCodec>
where
    S: Send + Sync + Clone + PartialEq + 'static,
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_the_same() {
        let value = vec![
            (String::from("gpu-0 \"a\" é"), 7u32),
            (String::new(), u32::MAX),
        ];
        let text = <JsonCodec as Encoder<_>>::encode(&value).expect("encodes");
        let back: Vec<(String, u32)> = <JsonCodec as Decoder<_>>::decode(&text).expect("decodes");
        assert_eq!(back, value);
    }

    #[test]
    fn text_that_is_not_the_type_is_refused() {
        let refused = <JsonCodec as Decoder<Vec<u32>>>::decode("{\"not\": \"a list\"}");
        assert!(refused.is_err());
    }
}
