//! The MPS placement rules, from the shared `placement` crate: the emulator places tasks with
//! the same code the console uses for its fit checks.

pub use placement::*;
