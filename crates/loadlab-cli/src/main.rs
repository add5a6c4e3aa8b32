//! `loadlab`: the command line. Thin glue: it parses flags (clap lives only here), turns them
//! into the libraries' validated configs, and prints errors once. The work is in the library
//! crates.

mod ansible;
mod cli;
mod cmd;
mod errors;
mod live;
mod output;
mod progress;
mod signals;
mod spill;
mod tui;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cmd::dispatch(cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            if signals::received() {
                // A handler may be cleaning up before it leaves: let it finish (it exits the
                // process itself), and report the interruption, not what the cleanup caused.
                let _leaving = signals::LEAVING.lock();
                eprintln!("interrupted");
                return signals::interrupted();
            }
            eprintln!("error: {}", errors::shown(&err));
            ExitCode::from(2)
        }
    }
}
