//! The agent's integration tests as one test binary (one link, not two): the agent in-process
//! (`agent.rs`) and the generator's client against it (`client.rs`, whose idle-connection test
//! waits 11 s of real time while the others run; `load.rs`, a generator's load read as a
//! coordinator reads it). A file added here must not use a fixed port, a fixed name in /tmp
//! or a global setting.

#[path = "../support/mod.rs"]
mod support;

mod agent;
mod audit;
mod bounds;
mod client;
mod load;
mod path;
mod safety;
