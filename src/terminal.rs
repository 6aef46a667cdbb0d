//! Talking to a person at a terminal. Commands ask through the `Prompter` trait so that tests can
//! script the answers; `Dialoguer` is the real implementation (prompts go to stderr).

use anyhow::Result;
use std::cell::RefCell;

pub trait Prompter {
    /// Lets the user pick one of `items`; `None` when they cancel (Esc / q).
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>>;
    /// A yes/no question; `default` is the answer to a bare Enter.
    fn confirm(&self, prompt: &str, default: bool) -> Result<bool>;
    /// A line of text, asked again (with the reason shown) until `validate` accepts it.
    fn text(&self, prompt: &str, validate: &dyn Fn(&str) -> Result<(), String>) -> Result<String>;
}

/// The real terminal, via dialoguer. Prompts, items and refusals quote pool names and CIDRs
/// from the data: they are escaped (`render::escape`).
pub struct Dialoguer;

fn safe(text: &str) -> String {
    crate::render::escape::escape_line(text).into_owned()
}

impl Prompter for Dialoguer {
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>> {
        let items: Vec<String> = items.iter().map(|i| safe(i)).collect();
        Ok(dialoguer::Select::new().with_prompt(safe(prompt)).items(&items).default(0).interact_opt()?)
    }

    fn confirm(&self, prompt: &str, default: bool) -> Result<bool> {
        Ok(dialoguer::Confirm::new().with_prompt(safe(prompt)).default(default).interact()?)
    }

    fn text(&self, prompt: &str, validate: &dyn Fn(&str) -> Result<(), String>) -> Result<String> {
        Ok(dialoguer::Input::<String>::new().with_prompt(safe(prompt)).validate_with(|text: &String| validate(text).map_err(|e| safe(&e))).interact_text()?)
    }
}

/// Answers given in advance, for tests; records what was asked and which texts were refused.
#[derive(Default)]
pub struct Scripted {
    pub selections: RefCell<Vec<Option<usize>>>,
    pub confirmations: RefCell<Vec<bool>>,
    pub texts: RefCell<Vec<String>>,
    /// `prompt: item | item ...` for every question, in order.
    pub asked: RefCell<Vec<String>>,
    /// Why `validate` refused each refused text.
    pub refused: RefCell<Vec<String>>,
}

impl Prompter for Scripted {
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>> {
        self.asked.borrow_mut().push(format!("{prompt}: {}", items.join(" | ")));
        let choice = self.selections.borrow_mut().remove(0);
        assert!(choice.is_none_or(|i| i < items.len()), "scripted choice out of range");
        Ok(choice)
    }

    fn confirm(&self, prompt: &str, _default: bool) -> Result<bool> {
        self.asked.borrow_mut().push(prompt.to_string());
        Ok(self.confirmations.borrow_mut().remove(0))
    }

    fn text(&self, prompt: &str, validate: &dyn Fn(&str) -> Result<(), String>) -> Result<String> {
        self.asked.borrow_mut().push(prompt.to_string());
        loop {
            let answer = self.texts.borrow_mut().remove(0);
            match validate(&answer) {
                Ok(()) => return Ok(answer),
                Err(why) => self.refused.borrow_mut().push(why),
            }
        }
    }
}
