//! The gpushare console: pages, components, server functions and model types.
//!
//! The same crate is compiled twice: with `ssr` into the server, which renders every page,
//! and with `hydrate` into WebAssembly, which takes over the rendered page in the browser.
// Deeply nested view types (the editor inside a suspended page) need more than 128.
#![recursion_limit = "256"]

#[cfg(feature = "hydrate")]
pub mod client;
pub mod components;
pub mod model;
pub mod pages;
pub mod resource;
pub mod server_fns;
pub mod shell;

#[cfg(feature = "ssr")]
pub mod service;

pub use shell::{shell, App};

/// Entry point of the WebAssembly half: attaches the reactive app to the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
