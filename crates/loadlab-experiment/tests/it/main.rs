//! The experiment crate's integration tests as one test binary (one link, not two): running
//! an experiment against stand-in servers, over HTTP/3, launching servers over TLS, and
//! experiment files. A file added here must not write to a fixed path or depend on a global
//! setting.

mod experiment;
mod file;
mod h3;
mod launched_tls;
mod stand_in;
