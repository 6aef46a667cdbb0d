//! Talking to a person at a terminal. Commands ask through the `Prompter` trait so that tests can
//! script the answers; `Dialoguer` is the real implementation (prompts go to stderr).

use anyhow::Result;

pub trait Prompter {
    /// Lets the user pick one of `items`; `None` when they cancel (Esc / q).
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>>;
    /// A yes/no question; `default` is the answer to a bare Enter.
    fn confirm(&self, prompt: &str, default: bool) -> Result<bool>;
}

/// The real terminal, via dialoguer.
pub struct Dialoguer;

impl Prompter for Dialoguer {
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>> {
        Ok(dialoguer::Select::new().with_prompt(prompt).items(items).default(0).interact_opt()?)
    }

    fn confirm(&self, prompt: &str, default: bool) -> Result<bool> {
        Ok(dialoguer::Confirm::new().with_prompt(prompt).default(default).interact()?)
    }
}

/// Answers given in advance, for tests.
pub struct Scripted {
    pub selections: std::cell::RefCell<Vec<Option<usize>>>,
    pub confirmations: std::cell::RefCell<Vec<bool>>,
}

impl Prompter for Scripted {
    fn select(&self, _prompt: &str, items: &[String]) -> Result<Option<usize>> {
        let choice = self.selections.borrow_mut().remove(0);
        assert!(choice.is_none_or(|i| i < items.len()), "scripted choice out of range");
        Ok(choice)
    }

    fn confirm(&self, _prompt: &str, _default: bool) -> Result<bool> {
        Ok(self.confirmations.borrow_mut().remove(0))
    }
}
