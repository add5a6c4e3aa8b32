//! The comparison statistics' integration tests as one test binary (one link, not five):
//! known values from R and SciPy, edge cases, Holm's correction, descriptions, and synthetic
//! runs. Pure computation; a file added here must not depend on a global setting.

#[path = "../common/mod.rs"]
mod common;

mod describe;
mod edge_cases;
mod holm;
mod known_values;
mod synthetic;
