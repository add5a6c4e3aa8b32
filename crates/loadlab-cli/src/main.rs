//! `loadlab`: the command line. Thin glue: it parses flags (clap lives only here), turns them
//! into the libraries' validated configs, and prints errors once. The work is in the library
//! crates.

mod cli;
mod cmd;
mod output;
mod progress;
mod signals;
mod spill;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cmd::dispatch(cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
