//! `completion SHELL`: a completion script for the binary run directly (`kubectl-ciliumpool
//! <TAB>`). The bash, zsh and fish scripts ask the plugin itself (`__complete`, the protocol
//! `kubectl_complete-ciliumpool` speaks for kubectl), so they complete what it does: pool names,
//! a pool's ranges and CIDRs, never a stale list. Other shells get clap's static script
//! (commands, flags and enum values).

pub mod protocol;

use crate::cli::Cli;
use clap::CommandFactory;
use clap_complete::Shell;

/// The script for `shell`.
pub fn script(shell: Shell) -> String {
    match shell {
        Shell::Bash => include_str!("kubectl-ciliumpool.bash").to_string(),
        Shell::Zsh => include_str!("kubectl-ciliumpool.zsh").to_string(),
        Shell::Fish => include_str!("kubectl-ciliumpool.fish").to_string(),
        _ => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "kubectl-ciliumpool", &mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        }
    }
}
