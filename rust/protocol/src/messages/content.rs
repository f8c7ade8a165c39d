//! Messages content blocks to canonical messages (behavior.md §6.2): every user block
//! becomes its own message, assistant blocks fold into one message, system-role messages
//! become system messages (V4.1) or `<system-reminder>` user messages (V4).

use deepseek_model::{
    ConversionError, ImageSource, Message, ModelVersion, SpecialToken, ToolCall, ToolDefinition, WebSearchBehavior,
};

use super::images::image_source;
use super::wire::{Content, MessagesContentBlock, MessagesMessage, MessagesToolReference, MessagesToolResultBlock};

const UNSUPPORTED_IMAGE: &str = "[Unsupported Image]";
const SERVER_TOOLS: &str = "Unsupported content block: server tools are not supported";

/// What block conversion needs from the request and the deployment.
pub(crate) struct BlockContext<'a> {
    pub version: ModelVersion,
    pub web_search: WebSearchBehavior,
    /// The spelling of the image placeholder.
    pub image_token: &'a str,
    /// The declared tools, for `tool_addition` and `tool_reference` lookups.
    pub tools: &'a [ToolDefinition],
}

fn document_text(media_type: Option<&str>) -> String {
    format!("[Unsupported document type: {}]", media_type.unwrap_or("unknown"))
}

/// Text with image placeholders at recorded byte ranges, joined from parts by `"\n\n"`.
#[derive(Default)]
struct PlaceholderText {
    text: String,
    parts: usize,
    sources: Vec<ImageSource>,
    placeholders: Vec<std::ops::Range<usize>>,
}

impl PlaceholderText {
    fn separate(&mut self) {
        if self.parts > 0 {
            self.text.push_str("\n\n");
        }
        self.parts += 1;
    }

    fn push_text(&mut self, text: &str) {
        self.separate();
        self.text.push_str(text);
    }

    fn push_image(&mut self, token: &str, source: ImageSource) {
        self.separate();
        let start = self.text.len();
        self.text.push_str(token);
        self.placeholders.push(start..self.text.len());
        self.sources.push(source);
    }

    fn into_message(self, mut message: Message) -> Message {
        message.content = self.text;
        message.image_sources = self.sources;
        message.image_placeholders = self.placeholders;
        message
    }
}

impl BlockContext<'_> {
    fn find_tool(&self, name: &str) -> Option<&ToolDefinition> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Convert message `index` and append the result to `out`.
    pub(crate) fn convert_message(
        &self,
        index: usize,
        message: &MessagesMessage,
        out: &mut Vec<Message>,
    ) -> Result<(), ConversionError> {
        match message {
            MessagesMessage::User(content) => self.user(index, content, out),
            MessagesMessage::Assistant(content) => {
                out.push(self.assistant(index, content)?);
                Ok(())
            }
            MessagesMessage::System(content) => {
                if let Some(m) = self.system(index, content)? {
                    out.push(m);
                }
                Ok(())
            }
        }
    }

    fn user(&self, index: usize, content: &Content<MessagesContentBlock>, out: &mut Vec<Message>) -> Result<(), ConversionError> {
        let blocks = match content {
            Content::Text(text) => {
                out.push(Message::user(text.clone()));
                return Ok(());
            }
            Content::Blocks(blocks) => blocks,
        };
        let mut referenced: Vec<ToolDefinition> = Vec::new();
        for (j, block) in blocks.iter().enumerate() {
            match block {
                MessagesContentBlock::Text { text } => out.push(Message::user(text.clone())),
                MessagesContentBlock::Image { source } => {
                    if self.version.is_v41() {
                        let path = format!("messages.{index}.content[{j}]");
                        let source = image_source(source, &path, path.clone())?;
                        let mut text = PlaceholderText::default();
                        text.push_image(self.image_token, source);
                        out.push(text.into_message(Message::user("")));
                    } else {
                        out.push(Message::user(UNSUPPORTED_IMAGE));
                    }
                }
                MessagesContentBlock::Document { source } => {
                    out.push(Message::user(document_text(source.media_type.as_deref())))
                }
                MessagesContentBlock::ToolResult { tool_use_id, content, .. } => {
                    out.push(self.tool_result(index, j, tool_use_id, content.as_ref(), &mut referenced)?);
                }
                MessagesContentBlock::Thinking { .. } => return Err(thinking_outside_assistant(index)),
                MessagesContentBlock::ToolUse { .. } | MessagesContentBlock::ServerToolUse { .. } => {
                    return Err(tool_use_outside_assistant(index))
                }
                MessagesContentBlock::WebSearchToolResult { .. } => return Err(search_result_outside_assistant(index)),
                MessagesContentBlock::ToolAddition { .. } => return Err(addition_outside_system(index)),
            }
        }
        if !referenced.is_empty() && self.version.is_v41() {
            let mut system = Message::system("");
            system.tools = Some(referenced);
            out.push(system);
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
                                let source = image_source(source, &format!("{base}.content[{k}]"), base)?;
                                text.push_image(self.image_token, source);
                            } else {
                                text.push_text(UNSUPPORTED_IMAGE);
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
                            referenced.push(tool.clone());
                            text.push_text(tool_name);
                        }
                    }
                }
            }
        }
        Ok(text.into_message(Message::tool("", Some(tool_use_id.to_owned()))))
    }

    fn assistant(&self, index: usize, content: &Content<MessagesContentBlock>) -> Result<Message, ConversionError> {
        let blocks = match content {
            Content::Text(text) => return Ok(Message::assistant(text.clone(), None, None, false)),
            Content::Blocks(blocks) => blocks,
        };
        let mut text: Vec<String> = Vec::new();
        let mut reasoning: Vec<&str> = Vec::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        for block in blocks {
            match block {
                MessagesContentBlock::Text { text: t } => text.push(t.clone()),
                MessagesContentBlock::Thinking { thinking } => reasoning.push(thinking),
                MessagesContentBlock::Image { .. } => {
                    if self.version.is_v41() {
                        return Err(ConversionError::new("Image in assistant message is unsupported"));
                    }
                    text.push(UNSUPPORTED_IMAGE.to_owned());
                }
                MessagesContentBlock::Document { source } => text.push(document_text(source.media_type.as_deref())),
                MessagesContentBlock::ToolUse { id, name, input } => calls.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: deepseek_model::pyjson::pyjson(input),
                }),
                MessagesContentBlock::ServerToolUse { .. } | MessagesContentBlock::WebSearchToolResult { .. } => {
                    self.server_block()?
                }
                MessagesContentBlock::ToolResult { .. } => return Err(result_outside_user(index)),
                MessagesContentBlock::ToolAddition { .. } => return Err(addition_outside_system(index)),
            }
        }
        let reasoning = if !reasoning.is_empty() {
            Some(reasoning.join("\n\n"))
        } else if calls.iter().any(|c| is_empty_thinking_id(&c.id)) {
            // A call id minted for an empty reasoning (`call_NN_ET_…`) stands for reasoning "".
            Some(String::new())
        } else {
            None
        };
        let calls = (!calls.is_empty()).then_some(calls);
        Ok(Message::assistant(text.join("\n\n"), reasoning, calls, false))
    }

    fn system(&self, index: usize, content: &Content<MessagesContentBlock>) -> Result<Option<Message>, ConversionError> {
        let mut text = PlaceholderText::default();
        let mut tools: Vec<ToolDefinition> = Vec::new();
        match content {
            Content::Text(t) => text.push_text(t),
            Content::Blocks(blocks) => {
                for (j, block) in blocks.iter().enumerate() {
                    match block {
                        MessagesContentBlock::Text { text: t } => text.push_text(t),
                        MessagesContentBlock::Image { source } => {
                            if self.version.is_v41() {
                                let source =
                                    image_source(source, &format!("messages.{index}.content[{j}]"), format!("messages.{index}"))?;
                                text.push_image(self.image_token, source);
                            } else {
                                text.push_text(UNSUPPORTED_IMAGE);
                            }
                        }
                        MessagesContentBlock::Document { source } => {
                            text.push_text(&document_text(source.media_type.as_deref()))
                        }
                        MessagesContentBlock::ToolAddition { tool: MessagesToolReference::ToolReference { name } } => {
                            let tool = self.find_tool(name).ok_or_else(|| {
                                ConversionError::new(format!(
                                    "messages.{index}.content.{j}: `tool_addition` references unknown tool '{name}'"
                                ))
                            })?;
                            tools.push(tool.clone());
                        }
                        MessagesContentBlock::Thinking { .. } => return Err(thinking_outside_assistant(index)),
                        MessagesContentBlock::ToolUse { .. } | MessagesContentBlock::ServerToolUse { .. } => {
                            return Err(tool_use_outside_assistant(index))
                        }
                        MessagesContentBlock::ToolResult { .. } => return Err(result_outside_user(index)),
                        MessagesContentBlock::WebSearchToolResult { .. } => {
                            return Err(search_result_outside_assistant(index))
                        }
                    }
                }
            }
        }
        if self.version.is_v41() {
            let mut message = text.into_message(Message::system(""));
            message.tools = (!tools.is_empty()).then_some(tools);
            return Ok(Some(message));
        }
        if text.text.is_empty() {
            return Ok(None);
        }
        Ok(Some(Message::user(format!("<system-reminder>\n{}\n</system-reminder>", text.text))))
    }

    /// A server-tool block: rejected, or dropped under `WebSearchBehavior::Drop`.
    fn server_block(&self) -> Result<(), ConversionError> {
        match self.web_search {
            WebSearchBehavior::Reject => Err(ConversionError::new(SERVER_TOOLS)),
            WebSearchBehavior::Drop => Ok(()),
        }
    }
}

/// The image placeholder spelling configured for conversion.
pub(crate) fn image_token(tokens: &deepseek_model::SpecialTokens) -> &str {
    tokens.get(SpecialToken::Image)
}

/// `call_<2 chars>_ET_…`: the id the stream emitter gives a call made with empty reasoning
/// (behavior.md §10.9).
fn is_empty_thinking_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.starts_with(b"call_") && bytes.get(7..11) == Some(b"_ET_".as_slice())
}

fn thinking_outside_assistant(index: usize) -> ConversionError {
    ConversionError::new(format!("messages.{index}.content: thinking blocks may only be in `assistant` messages"))
}

fn tool_use_outside_assistant(index: usize) -> ConversionError {
    ConversionError::new(format!("messages.{index}: `tool_use` blocks can only be in `assistant` messages"))
}

fn search_result_outside_assistant(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "messages.{index}: `web_search_tool_result` blocks can only be in `assistant` messages"
    ))
}

fn result_outside_user(index: usize) -> ConversionError {
    ConversionError::new(format!("messages.{index}: `tool_result` blocks can only be in `user` messages"))
}

fn addition_outside_system(index: usize) -> ConversionError {
    ConversionError::new(format!("messages.{index}: `tool_addition` blocks can only be in `system` messages"))
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
