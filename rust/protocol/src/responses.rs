//! OpenAI Responses requests (conformance cases `resp-*`, read by
//! `tests/responses_conformance.rs`): the wire shape ([`wire`]), the input items
//! ([`input`]), the declared tools ([`tool_defs`]), what a reply reports back ([`reported`]),
//! and the conversion that ties them to the shared thinking, sampling and tool rules.

mod apply_patch;
mod history;
mod images;
mod input;
mod reported;
mod state;
mod tool_defs;
mod wire;

pub use history::ResponsesHistory;
pub use state::StateFields;

use std::collections::BTreeMap;
use std::sync::Arc;

/// The echoed scalar settings (`deepseek-model`'s, shared with the reply).
pub use deepseek_model::ResponsesEcho;
use deepseek_model::{
    Conversation, ConversationRequest, ConversionError, ConversionOptions, InferenceOptions,
    Message, ParsingOptions, ReasoningContentBehavior, ReportedSettings, RequestReply,
    ResponseFormat, Role, SpecialToken, ThinkingInitialStage, ToolChoice, ToolDefinition,
};
use deepseek_schema::{self as schema, SchemaUse};
use serde_json::Value;

use crate::tools::RequestedToolChoice;
use crate::{intake, thinking, tools, ProtocolError};

/// A parsed OpenAI Responses request (shape-checked, not yet converted).
#[derive(Debug, Clone)]
pub struct ResponsesRequest {
    body: wire::ResponsesRequest,
    /// What a reply reports, read from the body as sent (conversion completes it).
    reply: RequestReply,
    /// The fields of a stateful server (`store`, `previous_response_id`, …), as sent.
    state: state::StateSource,
}

const STRICT_MIX: &str = "Cannot use strict tool with non-strict tool in the same request";
const REASONING_MISSING: &str =
    "The `reasoning_text` in the thinking mode must be passed back to the API.";
const JSON_WORD_MISSING: &str =
    "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.";

impl ResponsesRequest {
    /// Check the shape of a request body; shape errors are `invalid request body: …`.
    pub fn from_value(value: Value) -> Result<Self, ProtocolError> {
        let reply = reported::request_reply(&value);
        let state = state::StateSource::read(&value);
        Ok(Self {
            body: intake::from_value(value)?,
            reply,
            state,
        })
    }

    pub fn model(&self) -> &str {
        &self.body.model
    }

    /// The echoed request fields.
    pub fn echo(&self) -> ResponsesEcho {
        let body = &self.body;
        ResponsesEcho {
            instructions: body.instructions.clone(),
            max_output_tokens: body.max_output_tokens,
            temperature: body.temperature.unwrap_or(1.0),
            top_p: body.top_p.unwrap_or(1.0),
            top_logprobs: body.top_logprobs.unwrap_or(0),
            user: body.user.clone(),
        }
    }

    /// Every setting a reply reports (Python's `ResponsesRequest.echo()`).
    pub fn reported_settings(&self) -> ReportedSettings {
        self.reply.settings.clone().with_scalars(&self.echo())
    }

    /// Flattened namespaced tool name → (namespace, inner name), named as the request's model
    /// version names them.
    pub fn namespace_tool_map(
        &self,
        options: &ConversionOptions,
    ) -> Result<BTreeMap<String, (String, String)>, ConversionError> {
        let version = options.model_version(&self.body.model)?;
        tool_defs::namespace_map(self.body.tools.as_deref().unwrap_or_default(), version)
    }

    /// What a stateful server reads from the request: `store`, `previous_response_id`,
    /// `conversation` and `metadata`, checked (the reference ignores them).
    pub fn state_fields(&self) -> Result<StateFields, ConversionError> {
        self.state.fields()
    }

    /// Convert under `options`. Checks run in the reference's order: model, the first tool
    /// checks, input items, returned reasoning, tool schemas, tool_choice, `text.format`, the
    /// strict-tool rules, sampling, `top_logprobs`, `max_output_tokens`.
    pub fn convert(
        self,
        options: &ConversionOptions,
    ) -> Result<ConversationRequest, ConversionError> {
        self.convert_after(options, None)
            .map(|(request, _)| request)
    }

    /// Convert as [`ResponsesRequest::convert`] would with `history`'s items before the
    /// request's own (and its own `instructions`, never stored ones); also the history after
    /// the request's input items. Errors name the request's items by their place in its input.
    pub fn convert_continuing(
        self,
        options: &ConversionOptions,
        history: &ResponsesHistory,
    ) -> Result<(ConversationRequest, ResponsesHistory), ConversionError> {
        let (request, after) = self.convert_after(options, Some(history))?;
        Ok((request, after.unwrap_or_default()))
    }

    fn convert_after(
        self,
        options: &ConversionOptions,
        history: Option<&ResponsesHistory>,
    ) -> Result<(ConversationRequest, Option<ResponsesHistory>), ConversionError> {
        let (echo, namespace_tools) = (self.echo(), self.namespace_tool_map(options));
        let reply = self
            .reply
            .complete(&echo, namespace_tools.unwrap_or_default());
        let body = self.body;
        let version = options.model_version(&body.model)?;
        let effort = body.reasoning.as_ref().and_then(|r| r.effort);
        let (thinking_mode, reasoning_effort) =
            thinking::resolve_thinking(None, effort, options.default_thinking_mode);

        let declared = body.tools.unwrap_or_default();
        let pending =
            tool_defs::check_declared(declared, version, options.responses_web_search, "")?;
        let image_token = options.special_tokens.get(SpecialToken::Image);
        let names = tool_defs::pending_names(&pending);
        let web_search = options.responses_web_search;
        let (converted, history) = match history {
            None => {
                let converted = input::convert_input(
                    body.instructions,
                    body.input,
                    version,
                    image_token,
                    web_search,
                    names,
                )?;
                (converted, None)
            }
            Some(history) => {
                let continued = history.continue_with(
                    body.instructions,
                    body.input,
                    version,
                    image_token,
                    web_search,
                    names,
                )?;
                (continued.input, Some(continued.history))
            }
        };
        let mut messages = converted.messages;
        let behavior = options.reasoning_content_behavior;
        let has_tools = !pending.is_empty() || !converted.loaded_tools.is_empty();
        check_reasoning_returned(&messages, thinking_mode, behavior, has_tools)?;
        thinking::apply_reasoning_history(
            &mut messages,
            thinking_mode,
            ReasoningContentBehavior::FillEmpty,
        )?;

        let choice = tool_defs::requested_choice(body.tool_choice, options.responses_web_search)?;
        // With tool_choice "none" the tools are dropped before their schemas are checked.
        let tools = if choice == RequestedToolChoice::None {
            messages.retain(|m| !(m.role == Role::System && m.tools.is_some()));
            Vec::new()
        } else {
            let declared_count = pending.len();
            let all = pending.into_iter().chain(converted.loaded_tools).collect();
            let tools = tool_defs::validate_declared(all)?;
            announce_checked_tools(
                &mut messages,
                tools.get(declared_count..).unwrap_or_default(),
            );
            tools
        };
        // The reference checks the mix of strict and other tools after text.format.
        let chosen = match tools::apply_tool_choice(tools, choice, thinking_mode) {
            Err(e) if e.message != STRICT_MIX => return Err(e),
            chosen => chosen,
        };

        let format = body.text.map(|t| t.format).unwrap_or_default();
        let (response_format, format_schema) = text_format(format, &messages)?;
        let (tools, tool_choice) = chosen?;
        let strict = tools.iter().filter(|t| t.strict == Some(true)).count();
        if strict > 0 && strict < tools.len() {
            return Err(ConversionError::new(STRICT_MIX));
        }
        let strict_tools =
            tool_choice != ToolChoice::None && tools.iter().any(|t| t.strict == Some(true));
        if strict_tools && response_format != ResponseFormat::Text {
            return Err(ConversionError::new(
                "response_format should not be used with tools",
            ));
        }

        let (temperature, top_p) =
            thinking::sampling(version, thinking_mode, body.temperature, body.top_p)?;
        // V4 samples a thinking turn that may call tools with top_p 0.95, whatever was asked
        // (observed whenever tools remain after tool_choice).
        let top_p = if !version.is_v41() && thinking_mode && !tools.is_empty() {
            Some(0.95)
        } else {
            top_p
        };
        thinking::check_top_logprobs(body.top_logprobs)?;
        let max_tokens =
            thinking::check_max_tokens(body.max_output_tokens, thinking_mode, options, false)?;

        let output_constraint = tools::output_constraint(
            &tools,
            tool_choice,
            &response_format,
            format_schema.as_ref(),
            version,
        );
        let conversation = Conversation {
            messages,
            thinking_mode,
            tools,
            tool_choice,
            reasoning_effort,
            response_format,
        };
        let parsing_options = ParsingOptions {
            parse_tool_calls: conversation.tools_active(),
            starts_in_tool_calls: conversation.tool_choice == ToolChoice::Required,
            parse_json_output: conversation.response_format == ResponseFormat::JsonObject,
            thinking_initial_stage: thinking_mode.then_some(ThinkingInitialStage::ReasoningStart),
            stop_sequences: Vec::new(),
            special_tokens: options.special_tokens.clone(),
        };
        let inference_options = InferenceOptions {
            max_tokens,
            temperature,
            top_p,
            logprobs: body.top_logprobs.is_some(),
            top_logprobs: body.top_logprobs,
            seed: None,
            output_constraint,
            n: None,
        };
        let request = ConversationRequest {
            conversation: conversation.into(),
            inference_options,
            parsing_options,
            model_version: version,
            stream: body.stream.unwrap_or(false),
            reply: reply.reply_settings(),
        };
        Ok((request, history))
    }
}

/// `text.format` (§5.4): the response format, and the schema to constrain output with (the
/// normalized one when strict).
fn text_format(
    format: wire::TextFormat,
    messages: &[Arc<Message>],
) -> Result<(ResponseFormat, Option<Value>), ConversionError> {
    Ok(match format {
        wire::TextFormat::Text => (ResponseFormat::Text, None),
        wire::TextFormat::JsonObject => {
            if !messages
                .iter()
                .any(|m| m.content.to_ascii_lowercase().contains("json"))
            {
                return Err(ConversionError::new(JSON_WORD_MISSING));
            }
            (ResponseFormat::JsonObject, None)
        }
        wire::TextFormat::JsonSchema {
            schema: requested,
            strict,
            ..
        } => {
            let constrained = if strict == Some(true) {
                schema::normalize_strict(&requested, SchemaUse::ResponseFormat)?
            } else {
                schema::check_response_schema(&requested)?;
                requested.clone()
            };
            (ResponseFormat::JsonSchema(requested), Some(constrained))
        }
    })
}

/// Replace the provisional tools of the system messages that announce tools loaded by tool
/// search with their checked versions (`loaded`, in the same order).
fn announce_checked_tools(messages: &mut [Arc<Message>], loaded: &[ToolDefinition]) {
    let mut checked = loaded.iter();
    for message in messages.iter_mut() {
        if message.role != Role::System || message.tools.is_none() {
            continue;
        }
        if let Some(tools) = Arc::make_mut(message).tools.as_mut() {
            for tool in tools.iter_mut() {
                if let Some(definition) = checked.next() {
                    *tool = definition.clone();
                }
            }
        }
    }
}

/// `ReasoningContentBehavior::Reject` for Responses: with thinking on, an assistant message after
/// the last user message that carries no reasoning is refused when it made tool calls or when the
/// request has tools, declared or loaded (the whole conversation counts when no user message
/// exists). Earlier ones are filled with `""` like everywhere else. A message with a call whose id
/// carries the generated `ET` marker counts as having its reasoning.
fn check_reasoning_returned(
    messages: &[Arc<Message>],
    thinking_mode: bool,
    behavior: ReasoningContentBehavior,
    has_tools: bool,
) -> Result<(), ConversionError> {
    if !thinking_mode || behavior != ReasoningContentBehavior::Reject {
        return Ok(());
    }
    let start = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .map_or(0, |i| i + 1);
    let missing = messages
        .iter()
        .skip(start)
        .filter(|m| m.role == Role::Assistant && m.reasoning_content.is_none())
        .filter(|m| !m.calls().iter().any(|c| is_reasoning_marked_id(&c.id)))
        .any(|m| has_tools || !m.calls().is_empty());
    if missing {
        return Err(ConversionError::new(REASONING_MISSING));
    }
    Ok(())
}

/// Whether a tool-call id carries the marker of ids generated for calls made while thinking
/// (`call_NN_ET_…`). The reference's test, as observed: an ASCII id with `ET` at bytes 6..8
/// or `ET_` at bytes 8..11.
fn is_reasoning_marked_id(id: &str) -> bool {
    id.is_ascii() && (id.get(6..8) == Some("ET") || id.get(8..11) == Some("ET_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_marked_ids() {
        let marked = [
            "call_00_ET_x",
            "call_00_ET_",
            "call__ET",
            "call_xET_x",
            "CALL_00_ET_x",
            "call_0__ET_x",
            "call_00_ET_x y",
        ];
        let unmarked = [
            "call_0_ET_x",
            "call_00_ET",
            "call_00_et_x",
            "call_123_ET_x",
            "xcall_00_ET_x",
            "call_ab_ET_é",
            "ET",
            "",
        ];
        for id in marked {
            assert!(is_reasoning_marked_id(id), "{id}");
        }
        for id in unmarked {
            assert!(!is_reasoning_marked_id(id), "{id}");
        }
    }
}
