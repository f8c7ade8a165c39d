//! OpenAI Responses requests (behavior.md §5): the wire shape ([`wire`]), the input items
//! ([`input`]), the declared tools ([`tool_defs`]), and the conversion that ties them to the
//! shared thinking, sampling and tool rules.

mod apply_patch;
mod images;
mod input;
mod tool_defs;
mod wire;

use std::collections::BTreeMap;

use deepseek_model::{
    Conversation, ConversationRequest, ConversionError, ConversionOptions, InferenceOptions, ParsingOptions,
    ResponseFormat, SpecialToken, ThinkingInitialStage, ToolChoice,
};
use serde_json::Value;

use crate::{intake, thinking, tools, ProtocolError};

/// The request fields a Responses reply echoes back (reference defaults filled in).
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesEcho {
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub temperature: f32,
    pub top_p: f32,
    pub top_logprobs: u8,
    pub user: Option<String>,
}

/// A parsed OpenAI Responses request (shape-checked, not yet converted).
#[derive(Debug, Clone)]
pub struct ResponsesRequest {
    body: wire::Body,
}

const CHAT_REASONING_MISSING: &str = "The `reasoning_content` in the thinking mode must be passed back to the API.";
const REASONING_MISSING: &str = "The `reasoning_text` in the thinking mode must be passed back to the API.";
const JSON_WORD_MISSING: &str =
    "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.";
const STRICT_SCHEMA_PREFIX: &str = "Invalid tool parameters schema : ";

impl ResponsesRequest {
    /// Check the shape of a request body; shape errors are `invalid request body: …`.
    pub fn from_value(value: Value) -> Result<Self, ProtocolError> {
        Ok(Self { body: intake::from_value(value)? })
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

    /// Flattened namespaced tool name → (namespace, inner name), named as the request's model
    /// version names them.
    pub fn namespace_tool_map(
        &self,
        options: &ConversionOptions,
    ) -> Result<BTreeMap<String, (String, String)>, ConversionError> {
        let version = options.model_version(&self.body.model)?;
        tool_defs::namespace_map(self.body.tools.as_deref().unwrap_or_default(), version)
    }

    pub fn convert(self, options: &ConversionOptions) -> Result<ConversationRequest, ConversionError> {
        let body = self.body;
        let version = options.model_version(&body.model)?;
        let effort = body.reasoning.as_ref().and_then(|r| r.effort);
        let (thinking_mode, reasoning_effort) = thinking::resolve_thinking(None, effort, options.default_thinking_mode);

        let declared = tool_defs::declared_tools(body.tools.unwrap_or_default(), version, options.responses_web_search)?;
        let image_token = options.special_tokens.get(SpecialToken::Image);
        let converted = input::convert_input(body.instructions, body.input, version, image_token)?;
        let mut messages = converted.messages;
        thinking::apply_reasoning_history(&mut messages, thinking_mode, options.reasoning_content_behavior).map_err(
            |e| {
                if e.message == CHAT_REASONING_MISSING {
                    ConversionError::new(REASONING_MISSING)
                } else {
                    e
                }
            },
        )?;
        let mut all_tools = declared;
        all_tools.extend(converted.loaded_tools);

        let choice = tool_defs::requested_choice(body.tool_choice, options.responses_web_search)?;
        let (tools, tool_choice) = tools::apply_tool_choice(all_tools, choice, thinking_mode)?;

        let format = body.text.and_then(|t| t.format);
        let (response_format, format_schema) = match format {
            None | Some(wire::TextFormat::Text) => (ResponseFormat::Text, None),
            Some(wire::TextFormat::JsonObject) => {
                if !messages.iter().any(|m| m.content.to_ascii_lowercase().contains("json")) {
                    return Err(ConversionError::new(JSON_WORD_MISSING));
                }
                (ResponseFormat::JsonObject, None)
            }
            Some(wire::TextFormat::JsonSchema(f)) => {
                let constrained = if f.strict == Some(true) {
                    tools::normalize_strict_schema(&f.schema).map_err(|e| match e.message.strip_prefix(STRICT_SCHEMA_PREFIX) {
                        Some(detail) => ConversionError::new(format!("Invalid json schema: {detail}")),
                        None => e,
                    })?
                } else {
                    f.schema.clone()
                };
                (ResponseFormat::JsonSchema(f.schema), Some(constrained))
            }
        };
        let strict_tools = tool_choice != ToolChoice::None && tools.iter().any(|t| t.strict == Some(true));
        if strict_tools && response_format != ResponseFormat::Text {
            return Err(ConversionError::new("response_format should not be used with tools"));
        }

        let (temperature, top_p) = thinking::sampling(version, thinking_mode, body.temperature, body.top_p)?;
        thinking::check_top_logprobs(body.top_logprobs)?;
        let max_tokens = thinking::check_max_tokens(body.max_output_tokens, thinking_mode, options, false)?;

        let output_constraint = tools::output_constraint(&tools, tool_choice, &response_format, format_schema.as_ref(), version);
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
        };
        Ok(ConversationRequest {
            conversation,
            inference_options,
            parsing_options,
            model_version: version,
            stream: body.stream.unwrap_or(false),
        })
    }
}
