//! Anthropic Messages requests (conformance cases `msg-*`, read by
//! `tests/messages_conformance.rs`): the wire shape, and its conversion into a
//! canonical [`ConversationRequest`] with the shared thinking, sampling and tool rules.

mod content;
mod images;
mod pairing;
#[cfg(test)]
mod tests;
pub(crate) mod wire;

use std::sync::Arc;

use deepseek_model::{
    Conversation, ConversationRequest, ConversionError, ConversionOptions, InferenceOptions,
    Message, ModelVersion, ParsingOptions, ResponseFormat, ThinkingInitialStage, ToolChoice,
    WebSearchBehavior,
};
use serde_json::Value;

use crate::resume::{self, ConversionKey, FirstConverted};
use crate::thinking;
use crate::tools::{self, DeclaredTool, RequestedToolChoice};
use crate::ProtocolError;

use self::content::{BlockContext, Converted};
use self::pairing::Pairing;
use self::wire::{Content, MessagesMessage, MessagesSystemBlock, MessagesTool, MessagesToolChoice};

/// Server tools that follow `messages_web_search` instead of always being refused.
const WEB_SEARCH_TOOL_TYPES: [&str; 2] = ["web_search_20250305", "web_search_20260209"];

/// The Messages wording of the "reasoning must be passed back" rejection (§7.4).
const REASONING_REQUIRED: &str =
    "The `content[].thinking` in the thinking mode must be passed back to the API.";

/// A parsed Anthropic Messages request (shape-checked, not yet converted).
#[derive(Debug, Clone)]
pub struct MessagesRequest {
    wire: wire::MessagesRequest,
}

impl MessagesRequest {
    /// Shape-check a JSON body. Errors are `invalid request body: …` with serde's message.
    pub fn from_value(value: Value) -> Result<Self, ProtocolError> {
        let wire = crate::intake::from_value(value)?;
        Ok(Self { wire })
    }

    pub fn model(&self) -> &str {
        &self.wire.model
    }

    /// Validate and convert into the canonical request (§6, §7).
    pub fn convert(
        self,
        options: &ConversionOptions,
    ) -> Result<ConversationRequest, ConversionError> {
        // The checks run in the reference's order: model, tool names and types, messages
        // (one pass that converts and pairs), reasoning history, tool schemas and
        // tool_choice, stop sequences, sampling, max_tokens.
        let request = self.wire;
        let version = options.model_version(&request.model)?;
        // Under `Reject`, declaring any tool (even a dropped one) makes every assistant turn
        // after the last user message need its reasoning.
        let declares_tools = request.tools.as_ref().is_some_and(|t| !t.is_empty());
        let declared = declared_tools(request.tools.unwrap_or_default(), version, options)?;
        if request.messages.is_empty() {
            return Err(ConversionError::new(
                "messages: at least one message is required",
            ));
        }
        let (thinking_mode, effort) = thinking::resolve_thinking(
            request.thinking.as_ref().map(|t| t.thinking_type.into()),
            request.output_config.as_ref().and_then(|c| c.effort),
            options.default_thinking_mode,
        );

        let context = BlockContext::new(
            version,
            options.messages_web_search,
            &options.special_tokens,
            &declared.functions,
        );
        let mut converted = Converted::default();
        if let Some(system) = &request.system {
            converted
                .messages
                .push(Arc::new(Message::system(system_text(system))));
        }
        let mut pairing = Pairing::default();
        let count = request.messages.len();
        // A message an earlier body of the conversation shares, converted under the same key,
        // is its earlier conversion; one converted for the first time is remembered below.
        let key = |index| ConversionKey {
            index,
            version,
            image_token: context.image_token,
            thinking_mode,
            web_search: Some(options.messages_web_search),
        };
        let mut first_converted = Vec::new();
        for (i, message) in request.messages.iter().enumerate() {
            if has_empty_block_list(message) {
                return Err(ConversionError::new(format!(
                    "messages.{i}: all messages must have non-empty content"
                )));
            }
            let last = i + 1 == count;
            if message.recall(&key(i), &mut converted.messages) {
                context.pair_message(i, message, last, &mut pairing)?;
                continue;
            }
            let start = converted.messages.len();
            context.convert_message(i, message, last, &mut pairing, &mut converted)?;
            if Arc::strong_count(message) > 1 && !content::depends_on_tools(message) {
                first_converted.push(FirstConverted {
                    message: Arc::clone(message),
                    index: i,
                    places: start..converted.messages.len(),
                });
            }
        }
        let mut messages = converted.messages;
        thinking::apply_reasoning_history_with_tools(
            &mut messages,
            thinking_mode,
            options.reasoning_content_behavior,
            declares_tools,
        )
        .map_err(|_| ConversionError::new(REASONING_REQUIRED))?;
        // The tool pass below changes only messages that depend on the tools (never remembered).
        resume::remember(first_converted, &messages, key);

        // `none` drops the tools before their schemas are ever looked at.
        let (tools, tool_choice) = match requested_choice(request.tool_choice, &declared) {
            RequestedToolChoice::None => {
                tools::apply_tool_choice(Vec::new(), RequestedToolChoice::None, thinking_mode)?
            }
            choice => {
                let validated = tools::validate_tool_schemas(declared.functions)?;
                tools::apply_tool_choice(validated, choice, thinking_mode)?
            }
        };
        content::retain_remaining_tools(&mut messages, &converted.synthetic_systems, &tools);
        let stop_sequences = request.stop_sequences.unwrap_or_default();
        thinking::check_stop_sequences(&stop_sequences)?;
        let tools_active = !tools.is_empty() && tool_choice != ToolChoice::None;
        let (temperature, top_p) = thinking::sampling_with_tools(
            version,
            thinking_mode,
            tools_active,
            request.temperature,
            request.top_p,
        )?;
        let max_tokens =
            thinking::check_max_tokens(request.max_tokens, thinking_mode, options, true)?;

        let output_constraint =
            tools::output_constraint(&tools, tool_choice, &ResponseFormat::Text, None, version);
        let parsing_options = ParsingOptions {
            parse_tool_calls: tools_active,
            starts_in_tool_calls: !tools.is_empty() && tool_choice == ToolChoice::Required,
            parse_json_output: false,
            thinking_initial_stage: thinking_mode.then_some(ThinkingInitialStage::ReasoningStart),
            stop_sequences,
            special_tokens: options.special_tokens.clone(),
        };
        let inference_options = InferenceOptions {
            max_tokens,
            temperature,
            top_p,
            logprobs: false,
            top_logprobs: None,
            seed: None,
            output_constraint,
            n: None,
        };
        let conversation = Conversation {
            messages,
            thinking_mode,
            tools,
            tool_choice,
            reasoning_effort: effort,
            response_format: ResponseFormat::Text,
        };
        Ok(ConversationRequest {
            conversation: conversation.into(),
            inference_options,
            parsing_options,
            model_version: version,
            stream: request.stream.unwrap_or(false),
            reply: Default::default(),
        })
    }
}

fn has_empty_block_list(message: &MessagesMessage) -> bool {
    match message {
        MessagesMessage::User(c) | MessagesMessage::Assistant(c) | MessagesMessage::System(c) => {
            matches!(c, Content::Blocks(blocks) if blocks.is_empty())
        }
    }
}

/// Top-level `system`: text blocks joined by `"\n\n"` (an empty system is kept).
fn system_text(system: &Content<MessagesSystemBlock>) -> String {
    match system {
        Content::Text(text) => text.clone(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|MessagesSystemBlock::Text { text }| text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
    }
}

resume::resumable!(
    MessagesRequest,
    wire::MessagesRequest,
    MessagesMessage,
    Messages
);

/// The tools a request declared, after the first checks.
struct DeclaredTools {
    functions: Vec<DeclaredTool>,
    /// Names of web search tools dropped under `WebSearchBehavior::Drop`.
    dropped_web_search: Vec<String>,
}

/// §6.3, first pass (before the messages): in declaration order, a typed tool is refused
/// (web search tools are dropped instead under `WebSearchBehavior::Drop`) and a function
/// tool's name is validated. Schemas and uniqueness are checked after the messages.
fn declared_tools(
    tools: Vec<MessagesTool>,
    version: ModelVersion,
    options: &ConversionOptions,
) -> Result<DeclaredTools, ConversionError> {
    let mut declared = DeclaredTools {
        functions: Vec::new(),
        dropped_web_search: Vec::new(),
    };
    for (i, tool) in tools.into_iter().enumerate() {
        match tool {
            MessagesTool::Function(f) => {
                tools::validate_tool_name(&f.name, &format!("tools[{i}].name"))?;
                declared.functions.push(DeclaredTool {
                    name: f.name,
                    description: f.description,
                    // A missing schema is validated as `null` (and fails), unlike Chat.
                    parameters: Some(f.input_schema.unwrap_or(Value::Null)),
                    // `strict` is ignored: Messages schemas are never normalized.
                    strict: None,
                    // Deferred loading survives only where the renderer knows it (V4.1).
                    defer_loading: f.defer_loading && version.is_v41(),
                });
            }
            MessagesTool::Typed { tool_type, name } => {
                let web_search = WEB_SEARCH_TOOL_TYPES.contains(&tool_type.as_str());
                if !(web_search && options.messages_web_search == WebSearchBehavior::Drop) {
                    return Err(ConversionError::new(format!(
                        "tools[{i}]: server tools are not supported"
                    )));
                }
                // An unnamed web search tool answers to its usual name.
                declared
                    .dropped_web_search
                    .push(name.unwrap_or_else(|| "web_search".to_owned()));
            }
        }
    }
    Ok(declared)
}

/// §6.3/§7.5: `any` is auto; a choice naming a dropped web search tool becomes auto.
fn requested_choice(
    choice: Option<MessagesToolChoice>,
    declared: &DeclaredTools,
) -> RequestedToolChoice {
    match choice {
        None | Some(MessagesToolChoice::Auto { .. }) | Some(MessagesToolChoice::Any { .. }) => {
            RequestedToolChoice::Auto
        }
        Some(MessagesToolChoice::None) => RequestedToolChoice::None,
        Some(MessagesToolChoice::Tool { name, .. }) => {
            if declared.dropped_web_search.contains(&name)
                && !declared.functions.iter().any(|t| t.name == name)
            {
                RequestedToolChoice::Auto
            } else {
                RequestedToolChoice::Named(name)
            }
        }
    }
}
