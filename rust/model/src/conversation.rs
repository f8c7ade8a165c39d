//! The conversation and the request built around it: what conversion produces and what the
//! renderer and the stream parser consume.

use std::sync::Arc;

use serde_json::Value;

use crate::{ConversionError, Message, ModelVersion, SpecialTokens, ToolDefinition};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolChoice {
    #[default]
    Auto,
    None,
    Required,
}

impl ToolChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "required",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    Low,
    High,
    Xhigh,
    Max,
}

impl ReasoningEffort {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
            ReasoningEffort::Max => "max",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "low" => ReasoningEffort::Low,
            "high" => ReasoningEffort::High,
            "xhigh" => ReasoningEffort::Xhigh,
            "max" => ReasoningEffort::Max,
            _ => return None,
        })
    }
}

/// The requested output format. `JsonSchema` holds the schema as the client sent it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ResponseFormat {
    #[default]
    Text,
    JsonObject,
    JsonSchema(Value),
    Regex(String),
}

impl ResponseFormat {
    pub fn name(&self) -> &'static str {
        match self {
            ResponseFormat::Text => "text",
            ResponseFormat::JsonObject => "json_object",
            ResponseFormat::JsonSchema(_) => "json_schema",
            ResponseFormat::Regex(_) => "regex",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Shared, not copied: the next turn of a conversation (a stored Responses conversation,
    /// a Chat body that repeats the last one) reuses the earlier turn's messages, and the
    /// renderer knows a message it has seen by its address before comparing values.
    pub messages: Vec<Arc<Message>>,
    pub thinking_mode: bool,
    pub tools: Vec<ToolDefinition>,
    pub tool_choice: ToolChoice,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub response_format: ResponseFormat,
}

impl Default for Conversation {
    fn default() -> Self {
        Self {
            messages: Vec::new(),
            thinking_mode: true,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            reasoning_effort: None,
            response_format: ResponseFormat::Text,
        }
    }
}

impl Conversation {
    /// Tools are rendered and parsed only when some exist and the choice is not `none`.
    pub fn tools_active(&self) -> bool {
        !self.tools.is_empty() && self.tool_choice != ToolChoice::None
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputConstraint {
    /// `json`, `regex`, `tool_call` or `tool_call_required`.
    pub kind: String,
    pub schema: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct InferenceOptions {
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub logprobs: bool,
    pub top_logprobs: Option<u8>,
    pub seed: Option<u64>,
    pub output_constraint: Option<OutputConstraint>,
    /// Chat's `n`, when asked for and allowed (`ConversionOptions::max_choices`): how many
    /// choices to sample. `None`: one.
    pub n: Option<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingInitialStage {
    ReasoningStart,
    ReasoningContinuation,
    ContentContinuation,
}

impl ThinkingInitialStage {
    pub fn starts_in_reasoning(self) -> bool {
        !matches!(self, ThinkingInitialStage::ContentContinuation)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsingOptions {
    pub parse_tool_calls: bool,
    pub starts_in_tool_calls: bool,
    pub parse_json_output: bool,
    pub thinking_initial_stage: Option<ThinkingInitialStage>,
    pub stop_sequences: Vec<String>,
    pub special_tokens: SpecialTokens,
}

impl Default for ParsingOptions {
    fn default() -> Self {
        Self {
            parse_tool_calls: true,
            starts_in_tool_calls: false,
            parse_json_output: false,
            thinking_initial_stage: None,
            stop_sequences: Vec::new(),
            special_tokens: SpecialTokens::default(),
        }
    }
}

/// What a protocol's stream generator needs from the request beyond the conversation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplySettings {
    /// Chat Completions `stream_options.include_usage`.
    pub include_usage: bool,
    /// Responses: the request's own settings as written, reported back in every response
    /// object (a JSON object; `None` for the other protocols).
    pub echo: Option<Value>,
}

/// The result of converting a protocol request.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationRequest {
    /// Shared, not copied: a converted conversation is a megabyte for a long agent
    /// session, and the Python binding hands it out (`ConversationRequest.conversation`)
    /// as an immutable object.
    pub conversation: Arc<Conversation>,
    pub inference_options: InferenceOptions,
    pub parsing_options: ParsingOptions,
    pub model_version: ModelVersion,
    pub stream: bool,
    pub reply: ReplySettings,
}

impl ConversationRequest {
    /// A request with defaults that are not derived from the conversation.
    pub fn new(conversation: impl Into<Arc<Conversation>>, model_version: ModelVersion) -> Self {
        Self {
            conversation: conversation.into(),
            inference_options: InferenceOptions::default(),
            parsing_options: ParsingOptions::default(),
            model_version,
            stream: false,
            reply: ReplySettings::default(),
        }
    }

    /// The completion budget for a prompt of `prompt_tokens` in a context of `context_limit`.
    /// Counts are `u32` as in the reference (larger values are refused where Python calls
    /// in), and the prompt plus the requested budget saturates at `u32::MAX` before it is
    /// compared with the context (pinned by `tests/test_resolve_max_tokens.py`).
    pub fn resolve_max_tokens(
        &self,
        prompt_tokens: u32,
        context_limit: u32,
    ) -> Result<u32, ConversionError> {
        let too_long = |requested: u32| {
            ConversionError::new(format!(
                "This model's maximum context length is {context_limit} tokens. However, you requested {total} tokens ({prompt_tokens} in the messages, {requested} in the completion). Please reduce the length of the messages or completion.",
                total = prompt_tokens.saturating_add(requested)
            ))
        };
        let room = context_limit.saturating_sub(prompt_tokens);
        if let Some(requested) = self.inference_options.max_tokens {
            if prompt_tokens.saturating_add(requested) > context_limit {
                return Err(too_long(requested));
            }
            return Ok(requested.min(room).max(1));
        }
        let conversation = &self.conversation;
        let default = if !conversation.thinking_mode {
            8192
        } else if conversation.reasoning_effort == Some(crate::ReasoningEffort::Max) {
            131072
        } else {
            65536
        };
        if prompt_tokens > context_limit {
            return Err(too_long(0));
        }
        Ok(default.min(room).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_max_tokens_table() {
        const MAX: u32 = u32::MAX;
        // (name, max_tokens, prompt, context, Ok(budget) or Err(total the message reports))
        type Case = (&'static str, Option<u32>, u32, u32, Result<u32, u32>);
        let cases: [Case; 10] = [
            ("the requested budget fits", Some(5), 100, 105, Ok(5)),
            ("one token too many", Some(5), 100, 104, Err(105)),
            ("the sum saturates and fits", Some(5), MAX, MAX, Ok(1)),
            (
                "a saturated sum is reported saturated",
                Some(5),
                MAX,
                0,
                Err(MAX),
            ),
            (
                "the budget is cut to the room left",
                Some(MAX),
                MAX - 5,
                MAX,
                Ok(5),
            ),
            ("no room left still gives one", None, 7, 7, Ok(1)),
            ("the default budget", None, 0, MAX, Ok(65536)),
            (
                "the default is cut to the room left",
                None,
                100,
                150,
                Ok(50),
            ),
            ("a prompt over the context", None, 100, 50, Err(100)),
            ("an empty context", Some(5), 0, 0, Err(5)),
        ];
        for (name, max_tokens, prompt, context, want) in cases {
            let mut request =
                ConversationRequest::new(Conversation::default(), ModelVersion::DeepseekV4Pro);
            request.inference_options.max_tokens = max_tokens;
            let got = request
                .resolve_max_tokens(prompt, context)
                .map_err(|e| e.message);
            let want = want.map_err(|total| {
                let requested = max_tokens.unwrap_or(0);
                format!("This model's maximum context length is {context} tokens. However, you requested {total} tokens ({prompt} in the messages, {requested} in the completion). Please reduce the length of the messages or completion.")
            });
            assert_eq!(got, want, "{name}");
        }
    }
}
