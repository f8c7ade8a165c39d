//! Tool-use / tool-result pairing (behavior.md §6.2): every `tool_use` of an assistant
//! message must be answered by `tool_result` blocks at the very start of the next message,
//! and every `tool_result` must answer a `tool_use` of the message right before it.
//!
//! The error texts keep the reference's quirks: the index names the next message (with a
//! space after the colon) when something else arrives first, but the assistant's own index
//! (and no space) when the next message is missing or runs out of blocks; a block that
//! follows a `tool_use` inside the assistant message is named `messages.<i>.<j>`.

use deepseek_model::ConversionError;

use super::wire::{Content, MessagesContentBlock, MessagesMessage};

fn missing_results(location: &str, separator: &str, ids: &[&str]) -> ConversionError {
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

fn blocks_of(message: &MessagesMessage) -> &[MessagesContentBlock] {
    let content = match message {
        MessagesMessage::User(c) | MessagesMessage::Assistant(c) | MessagesMessage::System(c) => c,
    };
    match content {
        Content::Text(_) => &[],
        Content::Blocks(blocks) => blocks,
    }
}

/// The `tool_use` ids of an assistant message, checked for uniqueness and for coming last
/// (only thinking blocks may follow them).
fn tool_use_ids(index: usize, blocks: &[MessagesContentBlock]) -> Result<Vec<&str>, ConversionError> {
    let mut ids: Vec<&str> = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        match block {
            MessagesContentBlock::ToolUse { id, .. } => {
                if ids.contains(&id.as_str()) {
                    return Err(ConversionError::new(format!(
                        "messages.{index}.content.{j}: `tool_use` ids must be unique"
                    )));
                }
                ids.push(id);
            }
            MessagesContentBlock::Thinking { .. } => {}
            _ if !ids.is_empty() => return Err(missing_results(&format!("messages.{index}.{j}"), " ", &ids)),
            _ => {}
        }
    }
    Ok(ids)
}

/// Pairing state carried through one pass over the messages, interleaved with their
/// conversion the way the reference orders its errors: a message's results are checked
/// before the message is converted, an assistant's calls after it is converted.
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    /// The previous assistant message and its unanswered `tool_use` ids.
    pending: Option<(usize, Vec<String>)>,
}

impl Pairing {
    /// Check message `i` against the calls of the message before it.
    pub(crate) fn before_message(&mut self, i: usize, message: &MessagesMessage) -> Result<(), ConversionError> {
        match (self.pending.take(), message) {
            (Some((assistant, ids)), MessagesMessage::User(Content::Blocks(blocks))) => {
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                check_results(assistant, i, &ids, blocks)
            }
            (Some((_, ids)), _) => {
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                Err(missing_results(&format!("messages.{i}"), " ", &ids))
            }
            (None, MessagesMessage::User(Content::Blocks(blocks))) => {
                for (j, block) in blocks.iter().enumerate() {
                    if let MessagesContentBlock::ToolResult { tool_use_id, .. } = block {
                        return Err(orphan_result(i, j, tool_use_id));
                    }
                }
                Ok(())
            }
            (None, _) => Ok(()),
        }
    }

    /// Record the calls of message `i` (once converted); `last` when nothing follows it.
    pub(crate) fn after_message(&mut self, i: usize, message: &MessagesMessage, last: bool) -> Result<(), ConversionError> {
        if !matches!(message, MessagesMessage::Assistant(_)) {
            return Ok(());
        }
        let ids = tool_use_ids(i, blocks_of(message))?;
        if ids.is_empty() {
            return Ok(());
        }
        if last {
            return Err(missing_results(&format!("messages.{i}"), "", &ids));
        }
        self.pending = Some((i, ids.into_iter().map(str::to_owned).collect()));
        Ok(())
    }
}

/// Check the pairing over the whole conversation, in message order (no conversion).
#[cfg(test)]
pub(crate) fn check_pairing(messages: &[MessagesMessage]) -> Result<(), ConversionError> {
    let mut pairing = Pairing::default();
    for (i, message) in messages.iter().enumerate() {
        pairing.before_message(i, message)?;
        pairing.after_message(i, message, i + 1 == messages.len())?;
    }
    Ok(())
}

/// The user message `next` must open with results for every id of assistant `assistant`.
fn check_results(
    assistant: usize,
    next: usize,
    ids: &[&str],
    blocks: &[MessagesContentBlock],
) -> Result<(), ConversionError> {
    let mut pending: Vec<&str> = ids.to_vec();
    let mut answered: Vec<&str> = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        match block {
            MessagesContentBlock::ToolResult { tool_use_id, .. } => {
                let id = tool_use_id.as_str();
                if let Some(pos) = pending.iter().position(|p| *p == id) {
                    pending.remove(pos);
                    answered.push(id);
                } else if answered.contains(&id) {
                    return Err(duplicate_result(next, j, id));
                } else {
                    return Err(orphan_result(next, j, id));
                }
            }
            _ if !pending.is_empty() => return Err(missing_results(&format!("messages.{next}"), " ", &pending)),
            _ => {}
        }
    }
    if !pending.is_empty() {
        return Err(missing_results(&format!("messages.{assistant}"), "", &pending));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(messages: serde_json::Value) -> Result<(), String> {
        let messages: Vec<MessagesMessage> = serde_json::from_value(messages).map_err(|e| e.to_string())?;
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
                Some(prefix) => {
                    let err = got.expect_err(name);
                    assert!(err.starts_with(&prefix), "{name}: {err}");
                }
            }
        }
    }
}
