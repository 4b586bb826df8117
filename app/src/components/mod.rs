//! Components shared by several pages.

pub mod app_header;
pub mod budget_bars;
pub mod cluster_table;
pub mod coming_soon;
pub mod console_status;
pub mod error_banner;
pub mod fleet_source_badge;
pub mod gpu_editor;
pub mod gpu_panel;
pub mod heatmap;
pub mod identity_badge;
pub mod report_page;
pub mod stale_reads;
pub mod td_views;
pub mod text_field;
