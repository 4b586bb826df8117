//! Components shared by several pages.

pub mod app_header;
pub mod coming_soon;
pub mod console_status;
