//! Messages content blocks to canonical messages (conformance cases `msg-basic-*`,
//! `msg-reasoning-*`, `msg-etid-*`): every user block
//! becomes its own message, assistant blocks fold into one message, system-role messages
//! become system messages (V4.1) or `<system-reminder>` user messages (V4).
//!
//! Blocks are walked once, in order, and for each block the reference's checks run in its
//! order: the block's role placement, then tool pairing, then the block's own conversion.

use std::collections::HashMap;
use std::sync::Arc;

use deepseek_model::{
    ConversionError, Message, ModelVersion, SpecialToken, ToolCall, ToolDefinition,
    WebSearchBehavior,
};

use super::images::image_source;
use super::pairing::Pairing;
use super::wire::{
    Content, MessagesContentBlock, MessagesMessage, MessagesToolReference, MessagesToolResultBlock,
};
use crate::images::UNSUPPORTED_IMAGE_TEXT;
use crate::placeholder_text::PlaceholderText;
use crate::tools::DeclaredTool;

const SERVER_TOOLS: &str = "Unsupported content block: server tools are not supported";

/// What block conversion needs from the request and the deployment.
pub(crate) struct BlockContext<'a> {
    version: ModelVersion,
    web_search: WebSearchBehavior,
    /// The spelling of the image placeholder.
    pub(crate) image_token: &'a str,
    /// The declared tools by name, for `tool_addition` and `tool_reference` lookups (the
    /// first declaration of a name wins).
    tools: HashMap<&'a str, &'a DeclaredTool>,
}

/// The converted messages, with the positions of the system messages synthesized for
/// `tool_reference` results (they are dropped if `tool_choice` filters all their tools).
#[derive(Debug, Default)]
pub(crate) struct Converted {
    pub messages: Vec<Arc<Message>>,
    pub synthetic_systems: Vec<usize>,
}

/// Whether a message's conversion depends on the request's tools (a `tool_reference` result or
/// a `tool_addition` names one): such a message is converted every time.
pub(crate) fn depends_on_tools(message: &MessagesMessage) -> bool {
    let (MessagesMessage::User(Content::Blocks(blocks))
    | MessagesMessage::System(Content::Blocks(blocks))) = message
    else {
        return false;
    };
    blocks.iter().any(|block| match block {
        MessagesContentBlock::ToolAddition { .. } => true,
        MessagesContentBlock::ToolResult {
            content: Some(Content::Blocks(parts)),
            ..
        } => parts
            .iter()
            .any(|part| matches!(part, MessagesToolResultBlock::ToolReference { .. })),
        _ => false,
    })
}

/// A server-tool block of an assistant message: refused, or dropped without a trace.
fn is_server_block(block: &MessagesContentBlock) -> bool {
    matches!(
        block,
        MessagesContentBlock::ServerToolUse { .. }
            | MessagesContentBlock::WebSearchToolResult { .. }
    )
}

fn document_text(media_type: Option<&str>) -> String {
    format!(
        "[Unsupported document type: {}]",
        media_type.unwrap_or("unknown")
    )
}

/// The role check for a block of a `user` message.
fn check_user_block(index: usize, block: &MessagesContentBlock) -> Result<(), ConversionError> {
    match block {
        MessagesContentBlock::Thinking { .. } => Err(thinking_outside_assistant(index)),
        MessagesContentBlock::ToolUse { .. } | MessagesContentBlock::ServerToolUse { .. } => {
            Err(tool_use_outside_assistant(index))
        }
        MessagesContentBlock::WebSearchToolResult { .. } => {
            Err(search_result_outside_assistant(index))
        }
        MessagesContentBlock::ToolAddition { .. } => Err(addition_outside_system(index)),
        _ => Ok(()),
    }
}

/// The role check for a block of an `assistant` message.
fn check_assistant_block(
    index: usize,
    block: &MessagesContentBlock,
) -> Result<(), ConversionError> {
    match block {
        MessagesContentBlock::ToolResult { .. } => Err(result_outside_user(index)),
        MessagesContentBlock::ToolAddition { .. } => Err(addition_outside_system(index)),
        _ => Ok(()),
    }
}

/// The role check for a block of a `system` message.
fn check_system_block(index: usize, block: &MessagesContentBlock) -> Result<(), ConversionError> {
    match block {
        MessagesContentBlock::Thinking { .. } => Err(thinking_outside_assistant(index)),
        MessagesContentBlock::ToolUse { .. } | MessagesContentBlock::ServerToolUse { .. } => {
            Err(tool_use_outside_assistant(index))
        }
        MessagesContentBlock::ToolResult { .. } => Err(result_outside_user(index)),
        MessagesContentBlock::WebSearchToolResult { .. } => {
            Err(search_result_outside_assistant(index))
        }
        _ => Ok(()),
    }
}

impl<'a> BlockContext<'a> {
    pub(crate) fn new(
        version: ModelVersion,
        web_search: WebSearchBehavior,
        special_tokens: &'a deepseek_model::SpecialTokens,
        tools: &'a [DeclaredTool],
    ) -> Self {
        let mut by_name = HashMap::with_capacity(tools.len());
        for tool in tools {
            by_name.entry(tool.name.as_str()).or_insert(tool);
        }
        Self {
            version,
            web_search,
            image_token: special_tokens.get(SpecialToken::Image),
            tools: by_name,
        }
    }

    /// The declared tool `name` as `tool_addition` and `tool_reference` blocks see it, before
    /// its schema is validated (announced tools are replaced by their validated definitions
    /// afterwards). Made only for a block that names it.
    fn find_tool(&self, name: &str) -> Option<ToolDefinition> {
        let tool = self.tools.get(name)?;
        Some(ToolDefinition {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
            strict: tool.strict,
            defer_loading: tool.defer_loading,
        })
    }

    /// Convert message `index` into `out`, checking its blocks' roles and tool pairing.
    pub(crate) fn convert_message(
        &self,
        index: usize,
        message: &MessagesMessage,
        last: bool,
        pairing: &mut Pairing,
        out: &mut Converted,
    ) -> Result<(), ConversionError> {
        pairing.start_message(index, message)?;
        match message {
            MessagesMessage::User(content) => self.user(index, content, pairing, out)?,
            MessagesMessage::Assistant(content) => {
                let message = self.assistant(index, content, pairing)?;
                out.messages.push(Arc::new(message));
            }
            MessagesMessage::System(content) => {
                if let Some(message) = self.system(index, content)? {
                    out.messages.push(Arc::new(message));
                }
            }
        }
        pairing.end_message(index, last)
    }

    /// Feed `pairing` message `index` as [`Self::convert_message`] does, for a message converted
    /// before under the same key after the same messages (so every check of its blocks passed
    /// there, and only whether it is the last message can differ).
    pub(crate) fn pair_message(
        &self,
        index: usize,
        message: &MessagesMessage,
        last: bool,
        pairing: &mut Pairing,
    ) -> Result<(), ConversionError> {
        pairing.start_message(index, message)?;
        match message {
            MessagesMessage::User(Content::Blocks(blocks)) => {
                for (j, block) in blocks.iter().enumerate() {
                    pairing.user_block(index, j, block)?;
                }
            }
            MessagesMessage::Assistant(Content::Blocks(blocks)) => {
                for (j, block) in blocks.iter().enumerate() {
                    if !is_server_block(block) {
                        pairing.assistant_block(index, j, block)?;
                    }
                }
            }
            _ => {}
        }
        pairing.end_message(index, last)
    }

    fn user(
        &self,
        index: usize,
        content: &Content<MessagesContentBlock>,
        pairing: &mut Pairing,
        out: &mut Converted,
    ) -> Result<(), ConversionError> {
        let blocks = match content {
            Content::Text(text) => {
                out.messages.push(Arc::new(Message::user(text.clone())));
                return Ok(());
            }
            Content::Blocks(blocks) => blocks,
        };
        let mut referenced: Vec<ToolDefinition> = Vec::new();
        for (j, block) in blocks.iter().enumerate() {
            check_user_block(index, block)?;
            pairing.user_block(index, j, block)?;
            let message = match block {
                MessagesContentBlock::Text { text } => Message::user(text.clone()),
                MessagesContentBlock::Image { source } => {
                    if self.version.is_v41() {
                        let path = format!("messages.{index}.content[{j}]");
                        let source = image_source(source, &path, path.clone())?;
                        let mut text = PlaceholderText::default();
                        text.push_image(source, self.image_token);
                        text.into_message(Message::user(""))
                    } else {
                        Message::user(UNSUPPORTED_IMAGE_TEXT)
                    }
                }
                MessagesContentBlock::Document { source } => {
                    Message::user(document_text(source.media_type.as_deref()))
                }
                MessagesContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => self.tool_result(index, j, tool_use_id, content.as_ref(), &mut referenced)?,
                // Refused by the role check above.
                _ => continue,
            };
            out.messages.push(Arc::new(message));
        }
        if !referenced.is_empty() && self.version.is_v41() {
            let mut system = Message::system("");
            system.tools = Some(referenced);
            out.synthetic_systems.push(out.messages.len());
            out.messages.push(Arc::new(system));
        }
        Ok(())
    }

    fn tool_result(
        &self,
        index: usize,
        block: usize,
        tool_use_id: &str,
        content: Option<&Content<MessagesToolResultBlock>>,
        referenced: &mut Vec<ToolDefinition>,
    ) -> Result<Message, ConversionError> {
        let mut text = PlaceholderText::default();
        match content {
            None => {}
            Some(Content::Text(t)) => text.push_text(t),
            Some(Content::Blocks(parts)) => {
                for (k, part) in parts.iter().enumerate() {
                    match part {
                        MessagesToolResultBlock::Text { text: t } => text.push_text(t),
                        MessagesToolResultBlock::Image { source } => {
                            if self.version.is_v41() {
                                let base = format!("messages.{index}.content.{block}.tool_result");
                                let source =
                                    image_source(source, &format!("{base}.content[{k}]"), base)?;
                                text.push_image(source, self.image_token);
                            } else {
                                text.push_text(UNSUPPORTED_IMAGE_TEXT);
                            }
                        }
                        MessagesToolResultBlock::Document { source } => {
                            text.push_text(&document_text(source.media_type.as_deref()))
                        }
                        MessagesToolResultBlock::ToolReference { tool_name } => {
                            let tool = self.find_tool(tool_name).ok_or_else(|| {
                                ConversionError::new(format!(
                                    "messages.{index}.content.{block}: tool reference '{tool_name}' not found in available tools"
                                ))
                            })?;
                            referenced.push(tool);
                            text.push_text(tool_name);
                        }
                    }
                }
            }
        }
        Ok(text.into_message(Message::tool("", Some(tool_use_id.to_owned()))))
    }

    fn assistant(
        &self,
        index: usize,
        content: &Content<MessagesContentBlock>,
        pairing: &mut Pairing,
    ) -> Result<Message, ConversionError> {
        let blocks = match content {
            Content::Text(text) => return Ok(Message::assistant(text.clone(), None, None, false)),
            Content::Blocks(blocks) => blocks,
        };
        // Content parts are separated only once some content exists; reasoning parts are
        // plainly joined (both as the reference does).
        let mut text = String::new();
        let mut push_text = |t: &str| {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(t);
        };
        let mut reasoning: Option<String> = None;
        let mut calls: Vec<ToolCall> = Vec::new();
        for (j, block) in blocks.iter().enumerate() {
            check_assistant_block(index, block)?;
            if is_server_block(block) {
                // Refused, or dropped without a trace (not even for the pairing check).
                self.server_block()?;
                continue;
            }
            pairing.assistant_block(index, j, block)?;
            match block {
                MessagesContentBlock::Text { text: t } => push_text(t),
                MessagesContentBlock::Thinking { thinking, .. } => match reasoning.as_mut() {
                    Some(r) => {
                        r.push_str("\n\n");
                        r.push_str(thinking);
                    }
                    None => reasoning = Some(thinking.clone()),
                },
                MessagesContentBlock::Image { source } => {
                    if self.version.is_v41() {
                        let path = format!("messages.{index}.content[{j}]");
                        image_source(source, &path, path.clone())?;
                        return Err(ConversionError::new(
                            "Image in assistant message is unsupported",
                        ));
                    }
                    push_text(UNSUPPORTED_IMAGE_TEXT);
                }
                MessagesContentBlock::Document { source } => {
                    push_text(&document_text(source.media_type.as_deref()))
                }
                MessagesContentBlock::ToolUse { id, name, input } => calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: deepseek_model::pyjson::pyjson(&input.0),
                }),
                // Handled above.
                MessagesContentBlock::ServerToolUse { .. }
                | MessagesContentBlock::WebSearchToolResult { .. }
                | MessagesContentBlock::ToolResult { .. }
                | MessagesContentBlock::ToolAddition { .. } => {}
            }
        }
        if reasoning.is_none() && calls.iter().any(|c| is_empty_thinking_id(&c.id)) {
            // A call id minted for an empty reasoning (`call_NN_ET_…`) stands for reasoning "".
            reasoning = Some(String::new());
        }
        let calls = (!calls.is_empty()).then_some(calls);
        Ok(Message::assistant(text, reasoning, calls, false))
    }

    fn system(
        &self,
        index: usize,
        content: &Content<MessagesContentBlock>,
    ) -> Result<Option<Message>, ConversionError> {
        let mut text = PlaceholderText::default();
        let mut tools: Vec<ToolDefinition> = Vec::new();
        match content {
            Content::Text(t) => text.push_text(t),
            Content::Blocks(blocks) => {
                for (j, block) in blocks.iter().enumerate() {
                    check_system_block(index, block)?;
                    match block {
                        MessagesContentBlock::Text { text: t } => text.push_text(t),
                        MessagesContentBlock::Image { source } => {
                            if self.version.is_v41() {
                                let source = image_source(
                                    source,
                                    &format!("messages.{index}.content[{j}]"),
                                    format!("messages.{index}"),
                                )?;
                                text.push_image(source, self.image_token);
                            } else {
                                text.push_text(UNSUPPORTED_IMAGE_TEXT);
                            }
                        }
                        MessagesContentBlock::Document { source } => {
                            text.push_text(&document_text(source.media_type.as_deref()))
                        }
                        MessagesContentBlock::ToolAddition {
                            tool: MessagesToolReference::ToolReference { name },
                        } => {
                            let tool = self.find_tool(name).ok_or_else(|| {
                                ConversionError::new(format!(
                                    "messages.{index}.content.{j}: `tool_addition` references unknown tool '{name}'"
                                ))
                            })?;
                            tools.push(tool);
                        }
                        // Refused by the role check above.
                        _ => {}
                    }
                }
            }
        }
        if self.version.is_v41() {
            let mut message = text.into_message(Message::system(""));
            message.tools = (!tools.is_empty()).then_some(tools);
            return Ok(Some(message));
        }
        if text.text().is_empty() {
            return Ok(None);
        }
        Ok(Some(Message::user(format!(
            "<system-reminder>\n{}\n</system-reminder>",
            text.text()
        ))))
    }

    /// A server-tool block: rejected, or dropped under `WebSearchBehavior::Drop`.
    fn server_block(&self) -> Result<(), ConversionError> {
        match self.web_search {
            WebSearchBehavior::Reject => Err(ConversionError::new(SERVER_TOOLS)),
            WebSearchBehavior::Drop => Ok(()),
        }
    }
}

/// After `tool_choice`: announced tools become the remaining validated definitions, those
/// filtered out are removed, and a system message synthesized for `tool_reference` results
/// disappears when none of its tools remain.
pub(crate) fn retain_remaining_tools(
    messages: &mut Vec<Arc<Message>>,
    synthetic: &[usize],
    remaining: &[ToolDefinition],
) {
    let remaining: HashMap<&str, &ToolDefinition> =
        remaining.iter().map(|t| (t.name.as_str(), t)).collect();
    // Synthetic positions were recorded in increasing order.
    let mut position = 0;
    messages.retain_mut(|message| {
        let index = position;
        position += 1;
        if message.tools.is_none() {
            return true;
        }
        let Some(tools) = Arc::make_mut(message).tools.as_mut() else {
            return true;
        };
        *tools = tools
            .iter()
            .filter_map(|t| remaining.get(t.name.as_str()).map(|r| (*r).clone()))
            .collect();
        !(tools.is_empty() && synthetic.binary_search(&index).is_ok())
    });
}

/// `call_<2 chars>_ET_…`: the id the stream emitter gives a call made with empty reasoning
/// (`rust/stream/tests/processor.rs`, `tool_call_ids_have_the_reference_shape`).
fn is_empty_thinking_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.starts_with(b"call_") && bytes.get(7..11) == Some(b"_ET_".as_slice())
}

fn thinking_outside_assistant(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "messages.{index}.content: thinking blocks may only be in `assistant` messages"
    ))
}

fn tool_use_outside_assistant(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "messages.{index}: `tool_use` blocks can only be in `assistant` messages"
    ))
}

fn search_result_outside_assistant(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "messages.{index}: `web_search_tool_result` blocks can only be in `assistant` messages"
    ))
}

fn result_outside_user(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "messages.{index}: `tool_result` blocks can only be in `user` messages"
    ))
}

fn addition_outside_system(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "messages.{index}: `tool_addition` blocks can only be in `system` messages"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_thinking_ids() {
        for (id, want) in [
            ("call_00_ET_aNDvwmaxocc6Ure2Xzmg1452", true),
            ("call_aa_ET_x", true),
            ("call_00_ET_", true),
            ("call_00_et_aNDvwmaxocc6Ure2Xzmg1452", false),
            ("call_000_ET_x", false),
            ("call_ET_", false),
            ("zcall_00_ET_x", false),
            ("", false),
        ] {
            assert_eq!(is_empty_thinking_id(id), want, "{id:?}");
        }
    }
}
