//! Anthropic Messages requests (behavior.md §6): the wire shape, and its conversion into a
//! canonical [`ConversationRequest`] with the shared thinking, sampling and tool rules.

mod content;
mod images;
mod pairing;
mod wire;

use deepseek_model::{
    Conversation, ConversationRequest, ConversionError, ConversionOptions, InferenceOptions, Message, ModelVersion,
    ParsingOptions, ResponseFormat, ThinkingInitialStage, ToolChoice, ToolDefinition, WebSearchBehavior,
};
use serde_json::Value;

use crate::thinking;
use crate::tools::{self, DeclaredTool, RequestedToolChoice};
use crate::ProtocolError;

use self::content::BlockContext;
use self::pairing::Pairing;
use self::wire::{Content, MessagesMessage, MessagesSystemBlock, MessagesTool, MessagesToolChoice};

/// Server tools that follow `messages_web_search` instead of always being refused.
const WEB_SEARCH_TOOL_TYPES: [&str; 2] = ["web_search_20250305", "web_search_20260209"];

/// The Messages wording of the "reasoning must be passed back" rejection (§7.4).
const REASONING_REQUIRED: &str = "The `content[].thinking` in the thinking mode must be passed back to the API.";

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

    /// Whether the request asked for a streamed response.
    pub fn stream(&self) -> bool {
        self.wire.stream.unwrap_or(false)
    }

    /// Validate and convert into the canonical request (§6, §7).
    pub fn convert(self, options: &ConversionOptions) -> Result<ConversationRequest, ConversionError> {
        // The checks run in the reference's order: model, tools, messages (one pass that
        // converts and pairs), reasoning history, tool_choice, sampling, stop, max_tokens.
        let request = self.wire;
        let version = options.model_version(&request.model)?;
        let (declared, dropped_web_search) = declared_tools(request.tools.unwrap_or_default(), version, options)?;
        if request.messages.is_empty() {
            return Err(ConversionError::new("messages: at least one message is required"));
        }
        let (thinking_mode, effort) = thinking::resolve_thinking(
            request.thinking.as_ref().map(|t| t.thinking_type.into()),
            request.output_config.as_ref().and_then(|c| c.effort),
            options.default_thinking_mode,
        );

        let context = BlockContext {
            version,
            web_search: options.messages_web_search,
            image_token: content::image_token(&options.special_tokens),
            tools: &declared,
        };
        let mut messages: Vec<Message> = Vec::new();
        if let Some(system) = &request.system {
            messages.push(Message::system(system_text(system)));
        }
        let mut pairing = Pairing::default();
        let count = request.messages.len();
        for (i, message) in request.messages.iter().enumerate() {
            if has_empty_block_list(message) {
                return Err(ConversionError::new(format!("messages.{i}: all messages must have non-empty content")));
            }
            pairing.before_message(i, message)?;
            context.convert_message(i, message, &mut messages)?;
            pairing.after_message(i, message, i + 1 == count)?;
        }
        thinking::apply_reasoning_history(&mut messages, thinking_mode, options.reasoning_content_behavior)
            .map_err(|_| ConversionError::new(REASONING_REQUIRED))?;

        let choice = requested_choice(request.tool_choice, &declared, &dropped_web_search);
        let (tools, tool_choice) = tools::apply_tool_choice(declared.clone(), choice, thinking_mode)?;
        let (temperature, top_p) = thinking::sampling(version, thinking_mode, request.temperature, request.top_p)?;
        let stop_sequences = request.stop_sequences.unwrap_or_default();
        thinking::check_stop_sequences(&stop_sequences)?;
        let max_tokens = thinking::check_max_tokens(request.max_tokens, thinking_mode, options, true)?;

        let output_constraint = tools::output_constraint(&tools, tool_choice, &ResponseFormat::Text, None, version);
        let parsing_options = ParsingOptions {
            parse_tool_calls: !tools.is_empty() && tool_choice != ToolChoice::None,
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
            conversation,
            inference_options,
            parsing_options,
            model_version: version,
            stream: request.stream.unwrap_or(false),
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

/// §6.3: validate the declared function tools; typed tools are refused, except web search
/// tools under `WebSearchBehavior::Drop`, which are dropped (their names are returned).
fn declared_tools(
    tools: Vec<MessagesTool>,
    version: ModelVersion,
    options: &ConversionOptions,
) -> Result<(Vec<ToolDefinition>, Vec<String>), ConversionError> {
    let mut functions: Vec<DeclaredTool> = Vec::new();
    let mut indices: Vec<usize> = Vec::new();
    let mut dropped: Vec<String> = Vec::new();
    let mut refused: Option<usize> = None;
    for (i, tool) in tools.into_iter().enumerate() {
        match tool {
            MessagesTool::Function(f) => {
                functions.push(DeclaredTool {
                    name: f.name,
                    description: f.description,
                    // A missing schema is validated as `null` (and fails), unlike Chat.
                    parameters: Some(f.input_schema.unwrap_or(Value::Null)),
                    strict: None,
                    defer_loading: f.defer_loading && version.is_v41(),
                });
                indices.push(i);
            }
            MessagesTool::Typed { tool_type, name } => {
                let web_search = WEB_SEARCH_TOOL_TYPES.contains(&tool_type.as_str());
                if web_search && options.messages_web_search == WebSearchBehavior::Drop {
                    dropped.extend(name);
                    continue;
                }
                refused = Some(i);
                break;
            }
        }
    }
    let name_path = |k: usize| format!("tools[{}].name", indices.get(k).copied().unwrap_or(k));
    let validated = tools::validate_tools(functions, &name_path)?;
    if let Some(i) = refused {
        return Err(ConversionError::new(format!("tools[{i}]: server tools are not supported")));
    }
    Ok((validated, dropped))
}

/// §6.3/§7.5: `any` is auto; a choice naming a dropped web search tool becomes auto.
fn requested_choice(
    choice: Option<MessagesToolChoice>,
    tools: &[ToolDefinition],
    dropped_web_search: &[String],
) -> RequestedToolChoice {
    match choice {
        None | Some(MessagesToolChoice::Auto) | Some(MessagesToolChoice::Any) => RequestedToolChoice::Auto,
        Some(MessagesToolChoice::None) => RequestedToolChoice::None,
        Some(MessagesToolChoice::Tool { name }) => {
            if dropped_web_search.contains(&name) && !tools.iter().any(|t| t.name == name) {
                RequestedToolChoice::Auto
            } else {
                RequestedToolChoice::Named(name)
            }
        }
    }
}
