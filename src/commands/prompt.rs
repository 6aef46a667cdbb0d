//! Questions to the user behind a small trait, so that flows built on them can be tested with
//! scripted answers; the terminal implementation uses dialoguer on stderr.

use anyhow::Result;
use dialoguer::theme::ColorfulTheme;
use dialoguer::{Confirm, Input, Select};

pub trait Prompter {
    /// Index of the chosen item.
    fn select(&mut self, prompt: &str, items: &[String]) -> Result<usize>;
    /// Text accepted by `validate` (which explains what is wrong otherwise).
    fn text(&mut self, prompt: &str, validate: &mut dyn FnMut(&str) -> Result<(), String>) -> Result<String>;
    fn confirm(&mut self, prompt: &str) -> Result<bool>;
}

/// Prompts on the terminal (stderr), for `ctx.interactive` runs.
pub struct Terminal;

impl Prompter for Terminal {
    fn select(&mut self, prompt: &str, items: &[String]) -> Result<usize> {
        Ok(Select::with_theme(&ColorfulTheme::default()).with_prompt(prompt).items(items).default(0).interact()?)
    }

    fn text(&mut self, prompt: &str, validate: &mut dyn FnMut(&str) -> Result<(), String>) -> Result<String> {
        Ok(Input::<String>::with_theme(&ColorfulTheme::default())
            .with_prompt(prompt)
            .validate_with(|text: &String| validate(text))
            .interact_text()?)
    }

    fn confirm(&mut self, prompt: &str) -> Result<bool> {
        Ok(Confirm::with_theme(&ColorfulTheme::default()).with_prompt(prompt).default(false).interact()?)
    }
}
