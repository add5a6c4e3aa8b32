//! `loadlab completions SHELL`: prints the shell's completion script, generated at run time
//! from the same clap definitions as `--help`, so a new subcommand or flag is completed the
//! moment it exists. It writes only to standard output and never installs anything itself
//! (`scripts/install.sh` puts the scripts where each shell looks).

use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::io::Write as _;
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    loadlab completions bash > ~/.local/share/bash-completion/completions/loadlab\n  \
    loadlab completions zsh > \"${fpath[1]}/_loadlab\"\n  \
    loadlab completions fish > ~/.config/fish/completions/loadlab.fish")]
pub struct CompletionsArgs {
    /// The shell to write a completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = crate::cli::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "loadlab", &mut script);
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`loadlab completions bash | head`) is not an error worth a message.
    match stdout.write_all(&script).and_then(|()| stdout.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(anyhow::anyhow!(
            "could not write the completion script: {err}"
        )),
        _ => Ok(ExitCode::SUCCESS),
    }
}
