//! OpenAI Chat Completions requests: the typed shape ([`ChatCompletionRequest::from_value`])
//! and its conversion into a [`ConversationRequest`] (pinned by the `cc-*` cases of
//! the conformance corpus, `tests/conformance/`, read by `tests/chat_conformance.rs`).
//!
//! `convert` runs the semantic checks in the order the reference reports them: the model,
//! tool names, empty messages, the message list (one ordered pass), reasoning history,
//! prefix placement, the json word, tool schemas (skipped with `tool_choice: "none"`) and
//! tool_choice, prefix against json_object and tools, stop, stream options, the
//! response-format schema, strict tools mixed with non-strict ones or with a
//! response_format, then n, penalties, sampling, logprobs, max_tokens and seed.

mod content;
mod image_url;
mod messages;
#[cfg(test)]
mod tests;
pub(crate) mod wire;

use std::sync::Arc;

use deepseek_model::{
    Conversation, ConversationRequest, ConversionError, ConversionOptions, InferenceOptions,
    Message, ParsingOptions, ReplySettings, ResponseFormat, Role, SpecialToken,
    ThinkingInitialStage, ToolChoice,
};
use deepseek_schema::{self as schema, SchemaUse};
use serde_json::Value;

use crate::resume;
use crate::thinking::{self, resolve_thinking};
use crate::tools::{self, DeclaredTool, RequestedToolChoice};
use crate::{intake, ProtocolError};
use content::ContentContext;
use wire::{ChatCompletionResponseFormat as WireResponseFormat, ChatCompletionToolChoice, Stop};

/// A parsed Chat Completions request (shape-checked, not yet converted).
#[derive(Debug, Clone)]
pub struct ChatCompletionRequest {
    wire: wire::ChatCompletionRequest,
}

impl ChatCompletionRequest {
    /// Shape-check a JSON body. Errors carry serde's message (`missing field \`messages\``).
    pub fn from_value(value: Value) -> Result<Self, ProtocolError> {
        intake::from_value(value).map(|wire| Self { wire })
    }

    pub fn model(&self) -> &str {
        &self.wire.model
    }

    pub fn convert(
        self,
        options: &ConversionOptions,
    ) -> Result<ConversationRequest, ConversionError> {
        let w = self.wire;
        let version = options.model_version(&w.model)?;

        let declared_tools = w.tools.unwrap_or_default();
        for (i, tool) in declared_tools.iter().enumerate() {
            tools::validate_tool_name(&tool.function.name, &tool_name_path(i))?;
        }
        if w.messages.is_empty() {
            return Err(ConversionError::new("Empty input messages"));
        }

        let (thinking_mode, reasoning_effort) = resolve_thinking(
            w.thinking.map(|t| t.kind),
            w.reasoning_effort,
            options.default_thinking_mode,
        );
        let ctx = ContentContext {
            version,
            image_token: options.special_tokens.get(SpecialToken::Image),
        };
        let converted = messages::convert_messages(w.messages, &ctx, thinking_mode)?;
        let mut messages = converted.messages;
        thinking::apply_reasoning_history_with_tools(
            &mut messages,
            thinking_mode,
            options.reasoning_content_behavior,
            !declared_tools.is_empty(),
        )?;
        // Nothing changes the messages after the reasoning history: a message an earlier body
        // shares converts to this from now on.
        resume::remember(converted.first_converted, &messages, |index| {
            messages::key(index, &ctx, thinking_mode)
        });

        let prefix = check_prefix(&messages)?;
        let json_object = matches!(w.response_format, Some(WireResponseFormat::JsonObject));
        if json_object {
            check_json_word(&messages)?;
        }

        let has_declared_tools = !declared_tools.is_empty();
        let requested_choice = requested_tool_choice(w.tool_choice);
        // Schemas and uniqueness are only checked when the tools can be used at all.
        let tool_defs = if requested_choice == RequestedToolChoice::None {
            Vec::new()
        } else {
            tools::validate_tool_schemas(declared_tools.into_iter().map(declared_tool).collect())?
        };
        let (tool_defs, tool_choice) =
            tools::apply_tool_choice(tool_defs, requested_choice, thinking_mode)?;
        if prefix.is_some() {
            if json_object {
                return Err(ConversionError::new(
                    "response_format json_object should not be used with prefix",
                ));
            }
            if has_declared_tools || messages.iter().any(|m| !m.calls().is_empty()) {
                return Err(ConversionError::new(
                    "Function call should not be used with prefix",
                ));
            }
        }

        let stop_sequences = stop_sequences(w.stop)?;
        if w.stream_options.is_some() && w.stream != Some(true) {
            return Err(ConversionError::new(
                "stream_options should be set along with stream = true",
            ));
        }
        let include_usage = w
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let has_response_format = w.response_format.is_some();
        let (response_format, format_schema) = response_format(w.response_format)?;
        let tools_active = !tool_defs.is_empty() && tool_choice != ToolChoice::None;
        let strict_tools = if tools_active {
            tool_defs.iter().filter(|t| t.strict == Some(true)).count()
        } else {
            0
        };
        if strict_tools > 0 && strict_tools < tool_defs.len() {
            return Err(ConversionError::new(
                "Cannot use strict tool with non-strict tool in the same request",
            ));
        }
        if has_response_format && strict_tools > 0 {
            return Err(ConversionError::new(
                "response_format should not be used with tools",
            ));
        }
        let max_choices = options.max_choices.max(1);
        if w.n.is_some_and(|n| n == 0 || n > max_choices) {
            return Err(ConversionError::new(if max_choices == 1 {
                "Invalid n value (currently only n = 1 is supported)".to_owned()
            } else {
                format!("Invalid n value (n must be between 1 and {max_choices})")
            }));
        }
        check_penalty("presence_penalty", w.presence_penalty)?;
        check_penalty("frequency_penalty", w.frequency_penalty)?;
        let (temperature, top_p) = thinking::sampling_with_tools(
            version,
            thinking_mode,
            tools_active,
            w.temperature,
            w.top_p,
        )?;
        let logprobs = w.logprobs.unwrap_or(false);
        if w.top_logprobs.is_some() && !logprobs {
            return Err(ConversionError::new(
                "Invalid top_logprobs and logprobs value, logprobs must be set to true if top_logprobs is used.",
            ));
        }
        thinking::check_top_logprobs(w.top_logprobs)?;
        let max_tokens = thinking::check_max_tokens(w.max_tokens, thinking_mode, options, false)?;
        if w.seed.is_some_and(|s| s >= 1 << 63) {
            return Err(ConversionError::new(
                "Invalid seed value, the valid range of seed is [0, 2^63)",
            ));
        }

        let output_constraint = tools::output_constraint(
            &tool_defs,
            tool_choice,
            &response_format,
            format_schema.as_ref(),
            version,
        );
        let parsing_options = ParsingOptions {
            parse_tool_calls: tools_active,
            starts_in_tool_calls: tools_active && tool_choice == ToolChoice::Required,
            parse_json_output: json_object,
            thinking_initial_stage: thinking_mode
                .then(|| prefix.unwrap_or(ThinkingInitialStage::ReasoningStart)),
            stop_sequences,
            special_tokens: options.special_tokens.clone(),
        };
        let inference_options = InferenceOptions {
            max_tokens,
            temperature,
            top_p,
            logprobs,
            top_logprobs: w.top_logprobs,
            seed: w.seed,
            output_constraint,
            n: w.n,
        };
        let conversation = Conversation {
            messages,
            thinking_mode,
            tools: tool_defs,
            tool_choice,
            reasoning_effort,
            response_format,
        };
        Ok(ConversationRequest {
            conversation: conversation.into(),
            inference_options,
            parsing_options,
            model_version: version,
            stream: w.stream.unwrap_or(false),
            reply: ReplySettings {
                include_usage,
                echo: None,
            },
        })
    }
}

resume::resumable!(
    ChatCompletionRequest,
    wire::ChatCompletionRequest,
    wire::ChatCompletionRequestMessage,
    Chat
);

fn declared_tool(tool: wire::ChatCompletionTool) -> DeclaredTool {
    let f = tool.function;
    // A `defer_loading` key inside `function` is ignored (§4.5).
    DeclaredTool {
        name: f.name,
        description: f.description,
        parameters: f.parameters,
        strict: f.strict,
        defer_loading: false,
    }
}

fn requested_tool_choice(choice: Option<ChatCompletionToolChoice>) -> RequestedToolChoice {
    match choice {
        None | Some(ChatCompletionToolChoice::Auto) => RequestedToolChoice::Auto,
        Some(ChatCompletionToolChoice::None) => RequestedToolChoice::None,
        Some(ChatCompletionToolChoice::Required) => RequestedToolChoice::Required,
        Some(ChatCompletionToolChoice::Function(name)) => RequestedToolChoice::Named(name),
    }
}

/// §4.6: `json_object` needs the word somewhere in the converted message contents.
fn check_json_word(messages: &[Arc<Message>]) -> Result<(), ConversionError> {
    if messages
        .iter()
        .any(|m| m.content.to_ascii_lowercase().contains("json"))
    {
        return Ok(());
    }
    Err(ConversionError::new(
        "Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'.",
    ))
}

/// §7.3: `stop` as a list; a single string is checked under the name `stop`.
fn stop_sequences(stop: Option<Stop>) -> Result<Vec<String>, ConversionError> {
    let stops = match stop {
        None => Vec::new(),
        Some(Stop::One(stop)) if stop.is_empty() => {
            return Err(ConversionError::new(
                "Invalid 'stop': empty string. Expected a string with minimum length 1, but got an empty string instead.",
            ));
        }
        Some(Stop::One(stop)) => vec![stop],
        Some(Stop::List(stops)) => stops,
    };
    thinking::check_stop_sequences(&stops)?;
    Ok(stops)
}

/// §4.6: the canonical format and the schema to constrain with (a `json_schema` is
/// meta-checked, or normalized when strict; the conversation keeps the original).
fn response_format(
    format: Option<WireResponseFormat>,
) -> Result<(ResponseFormat, Option<Value>), ConversionError> {
    Ok(match format {
        None | Some(WireResponseFormat::Text) => (ResponseFormat::Text, None),
        Some(WireResponseFormat::JsonObject) => (ResponseFormat::JsonObject, None),
        Some(WireResponseFormat::Regex { regex }) => (ResponseFormat::Regex(regex), None),
        Some(WireResponseFormat::JsonSchema { json_schema }) => {
            let constrained = if json_schema.strict == Some(true) {
                schema::normalize_strict(&json_schema.schema, SchemaUse::ResponseFormat)?
            } else {
                schema::check_response_schema(&json_schema.schema)?;
                json_schema.schema.clone()
            };
            (
                ResponseFormat::JsonSchema(json_schema.schema),
                Some(constrained),
            )
        }
    })
}

fn tool_name_path(i: usize) -> String {
    format!("tools[{i}].function.name")
}

/// §4.4: `prefix` only on a final assistant message. Returns the thinking stage the prefix
/// message implies, or `None` without a prefix message.
fn check_prefix(
    messages: &[Arc<Message>],
) -> Result<Option<ThinkingInitialStage>, ConversionError> {
    let misplaced = messages.iter().rev().skip(1).any(|m| m.prefix);
    if misplaced {
        return Err(ConversionError::new(
            "Invalid completion message: prefix set true with message which is not final message or message role is not assistant",
        ));
    }
    Ok(messages
        .last()
        .filter(|m| m.prefix && m.role == Role::Assistant)
        .map(|m| {
            if !m.content.is_empty() {
                ThinkingInitialStage::ContentContinuation
            } else if m
                .reasoning_content
                .as_deref()
                .is_some_and(|r| !r.is_empty())
            {
                ThinkingInitialStage::ReasoningContinuation
            } else {
                ThinkingInitialStage::ReasoningStart
            }
        }))
}

fn check_penalty(name: &str, value: Option<f32>) -> Result<(), ConversionError> {
    match value {
        Some(v) if !(-2.0..=2.0).contains(&v) => Err(ConversionError::new(format!(
            "Invalid {name} value, the valid range of {name} is [-2, 2]"
        ))),
        _ => Ok(()),
    }
}
