//! loadlab-history's integration tests, in one test binary: series with known truth (flat,
//! steps, drift, a wild run, a new machine), the detector against MongoDB's own E-Divisive
//! and an independent implementation, and the bar: a 60-revision history stored in a real
//! SQLite file, read back, its change points and gate checked against the truth.

mod known;
mod python;
mod support;
