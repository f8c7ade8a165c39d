//! Tool-use / tool-result pairing (conformance cases `msg-toolargs-*`, `mutation-msg-*`):
//! every `tool_use` of an assistant
//! message must be answered by `tool_result` blocks at the very start of the next message,
//! and every `tool_result` must answer a `tool_use` of the message right before it.
//!
//! The error texts keep the reference's quirks: the index names the next message (with a
//! space after the colon) when something else arrives first, but the assistant's own index
//! (and no space) when the next message is missing or runs out of blocks; a block that
//! follows a `tool_use` inside the assistant message is named `messages.<i>.<j>`.

use std::collections::BTreeSet;

use deepseek_model::ConversionError;

use super::wire::{Content, MessagesContentBlock, MessagesMessage};

/// The unanswered ids are listed in ascending order, whatever order the calls came in.
fn missing_results(location: &str, separator: &str, ids: &BTreeSet<String>) -> ConversionError {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    ConversionError::new(format!(
        "{location}:{separator}`tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ids.join(", ")
    ))
}

fn orphan_result(message: usize, block: usize, id: &str) -> ConversionError {
    ConversionError::new(format!(
        "unexpected `messages.{message}.content.{block}: tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    ))
}

fn duplicate_result(message: usize, block: usize, id: &str) -> ConversionError {
    ConversionError::new(format!(
        "messages.{message}.content.{block}: each tool_use must have a single result. Found multiple `tool_result` blocks with id: {id}"
    ))
}

/// Pairing state carried through one pass over the messages. The caller feeds it every
/// block in order, after the block's role check and before its conversion, which is the
/// order in which the reference raises its errors.
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    /// The previous assistant message and its unanswered `tool_use` ids.
    pending: Option<(usize, BTreeSet<String>)>,
    /// While in a user message that answers an assistant: that assistant's index, the ids
    /// still unanswered and those answered.
    answering: Option<Answering>,
    /// While in an assistant message: its `tool_use` ids so far.
    calls: BTreeSet<String>,
}

#[derive(Debug)]
struct Answering {
    assistant: usize,
    pending: BTreeSet<String>,
    answered: BTreeSet<String>,
}

impl Pairing {
    /// Message `i` starts. A message other than a user block list cannot answer calls.
    pub(crate) fn start_message(
        &mut self,
        i: usize,
        message: &MessagesMessage,
    ) -> Result<(), ConversionError> {
        self.calls.clear();
        self.answering = None;
        let Some((assistant, ids)) = self.pending.take() else {
            return Ok(());
        };
        match message {
            MessagesMessage::User(Content::Blocks(_)) => {
                self.answering = Some(Answering {
                    assistant,
                    pending: ids,
                    answered: BTreeSet::new(),
                });
                Ok(())
            }
            _ => Err(missing_results(&format!("messages.{i}"), " ", &ids)),
        }
    }

    /// Block `j` of user message `i`.
    pub(crate) fn user_block(
        &mut self,
        i: usize,
        j: usize,
        block: &MessagesContentBlock,
    ) -> Result<(), ConversionError> {
        let result_id = match block {
            MessagesContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        };
        let Some(answering) = self.answering.as_mut() else {
            return match result_id {
                Some(id) => Err(orphan_result(i, j, id)),
                None => Ok(()),
            };
        };
        match result_id {
            Some(id) => {
                if answering.pending.remove(id) {
                    answering.answered.insert(id.to_owned());
                    Ok(())
                } else if answering.answered.contains(id) {
                    Err(duplicate_result(i, j, id))
                } else {
                    Err(orphan_result(i, j, id))
                }
            }
            None if !answering.pending.is_empty() => Err(missing_results(
                &format!("messages.{i}"),
                " ",
                &answering.pending,
            )),
            None => Ok(()),
        }
    }

    /// Block `j` of assistant message `i`: ids must be unique, and only thinking blocks may
    /// follow a `tool_use`.
    pub(crate) fn assistant_block(
        &mut self,
        i: usize,
        j: usize,
        block: &MessagesContentBlock,
    ) -> Result<(), ConversionError> {
        match block {
            MessagesContentBlock::ToolUse { id, .. } => {
                if !self.calls.insert(id.clone()) {
                    return Err(ConversionError::new(format!(
                        "messages.{i}.content.{j}: `tool_use` ids must be unique"
                    )));
                }
                Ok(())
            }
            MessagesContentBlock::Thinking { .. } => Ok(()),
            _ if !self.calls.is_empty() => Err(missing_results(
                &format!("messages.{i}.{j}"),
                " ",
                &self.calls,
            )),
            _ => Ok(()),
        }
    }

    /// Message `i` ends; `last` when no message follows it.
    pub(crate) fn end_message(&mut self, i: usize, last: bool) -> Result<(), ConversionError> {
        if let Some(answering) = self.answering.take() {
            if !answering.pending.is_empty() {
                let location = format!("messages.{}", answering.assistant);
                return Err(missing_results(&location, "", &answering.pending));
            }
        }
        let calls = std::mem::take(&mut self.calls);
        if calls.is_empty() {
            return Ok(());
        }
        if last {
            return Err(missing_results(&format!("messages.{i}"), "", &calls));
        }
        self.pending = Some((i, calls));
        Ok(())
    }
}

/// Check the pairing over the whole conversation, in message order (no conversion).
#[cfg(test)]
pub(crate) fn check_pairing(messages: &[MessagesMessage]) -> Result<(), ConversionError> {
    let mut pairing = Pairing::default();
    for (i, message) in messages.iter().enumerate() {
        pairing.start_message(i, message)?;
        if let MessagesMessage::User(Content::Blocks(blocks))
        | MessagesMessage::Assistant(Content::Blocks(blocks)) = message
        {
            for (j, block) in blocks.iter().enumerate() {
                match message {
                    MessagesMessage::User(_) => pairing.user_block(i, j, block)?,
                    _ => pairing.assistant_block(i, j, block)?,
                }
            }
        }
        pairing.end_message(i, i + 1 == messages.len())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(messages: serde_json::Value) -> Result<(), String> {
        let messages: Vec<MessagesMessage> =
            serde_json::from_value(messages).map_err(|e| e.to_string())?;
        check_pairing(&messages).map_err(|e| e.message)
    }

    fn tu(id: &str) -> serde_json::Value {
        json!({"type": "tool_use", "id": id, "name": "f", "input": {}})
    }

    fn tr(id: &str) -> serde_json::Value {
        json!({"type": "tool_result", "tool_use_id": id})
    }

    const TAIL: &str = "`tool_use` ids were found without `tool_result` blocks immediately after";

    #[test]
    fn pairing_table() {
        let text = json!({"type": "text", "text": "x"});
        let thinking = json!({"type": "thinking", "thinking": "r"});
        let user = |c: serde_json::Value| json!({"role": "user", "content": c});
        let assistant = |c: serde_json::Value| json!({"role": "assistant", "content": c});
        let q = user(json!("q"));
        let cases: Vec<(&str, serde_json::Value, Option<String>)> = vec![
            ("answered", json!([q, assistant(json!([tu("t1")])), user(json!([tr("t1"), text]))]), None),
            ("results in any order", json!([q, assistant(json!([tu("a"), tu("b")])), user(json!([tr("b"), tr("a")]))]), None),
            ("thinking may follow a call", json!([q, assistant(json!([tu("t1"), thinking])), user(json!([tr("t1")]))]), None),
            (
                "assistant last: own index, no space",
                json!([q, assistant(json!([tu("t1")]))]),
                Some(format!("messages.1:{TAIL}: t1")),
            ),
            (
                "results run out: assistant index, no space",
                json!([q, assistant(json!([tu("a"), tu("b")])), user(json!([tr("a")]))]),
                Some(format!("messages.1:{TAIL}: b")),
            ),
            (
                "text first: next index, with space",
                json!([q, assistant(json!([tu("a")])), user(json!([text, tr("a")]))]),
                Some(format!("messages.2: {TAIL}: a")),
            ),
            (
                "plain next message",
                json!([q, assistant(json!([tu("a")])), user(json!("plain"))]),
                Some(format!("messages.2: {TAIL}: a")),
            ),
            (
                "text after a call in the same message",
                json!([q, assistant(json!([tu("a"), text])), user(json!([tr("a")]))]),
                Some(format!("messages.1.1: {TAIL}: a")),
            ),
            (
                "duplicate call ids",
                json!([q, assistant(json!([tu("a"), tu("a")])), user(json!([tr("a")]))]),
                Some("messages.1.content.1: `tool_use` ids must be unique".to_owned()),
            ),
            (
                "duplicate result",
                json!([q, assistant(json!([tu("a")])), user(json!([tr("a"), tr("a")]))]),
                Some("messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with id: a".to_owned()),
            ),
            (
                "orphan result",
                json!([q, user(json!([tr("zz")]))]),
                Some("unexpected `messages.1.content.0: tool_use_id` found in `tool_result` blocks: zz. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.".to_owned()),
            ),
        ];
        for (name, messages, want) in cases {
            let got = check(messages);
            match want {
                None => assert_eq!(got, Ok(()), "{name}"),
                Some(prefix) => match got {
                    Err(err) => assert!(err.starts_with(&prefix), "{name}: {err}"),
                    Ok(()) => unreachable!("{name}: expected an error"),
                },
            }
        }
    }
}
