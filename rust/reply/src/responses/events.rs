//! The Responses stream events and the response object, in the reference's key order
//! (`tests/responses_reply.rs`, `examples_replay_exactly`). `to_json` is compact JSON of these
//! types.

use std::sync::Arc;

use deepseek_model::ReportedSettings;
use deepseek_stream::emit::TokenLogprob;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::json::{self, FloatSpelling};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    InProgress,
    Completed,
    Incomplete,
}

/// A message's phase: `final_answer`, or `commentary` when tool calls follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    FinalAnswer,
    Commentary,
}

/// One alternative of a token's top logprobs. Logprobs are single-precision, as the
/// reference prints them (`-0.1234567890123` → `-0.12345679`, out of range → `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopLogprob {
    pub token: String,
    pub logprob: f32,
    pub bytes: Vec<u8>,
}

/// The logprob of one output-text token (`tests/responses_reply.rs`, `logprob_spelling_table`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Logprob {
    pub token: String,
    pub logprob: f32,
    pub bytes: Vec<u8>,
    pub top_logprobs: Vec<TopLogprob>,
}

impl From<&TokenLogprob> for Logprob {
    fn from(lp: &TokenLogprob) -> Self {
        Logprob {
            token: lp.token.clone(),
            logprob: lp.logprob as f32,
            bytes: lp.bytes.clone(),
            top_logprobs: lp
                .top_logprobs
                .iter()
                .map(|t| TopLogprob {
                    token: t.token.clone(),
                    logprob: t.logprob as f32,
                    bytes: t.bytes.clone(),
                })
                .collect(),
        }
    }
}

/// An always-empty list (`annotations`, `summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(std::iter::empty::<()>())
    }
}

/// The role of a message item (always the assistant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    ReasoningText {
        text: String,
    },
    OutputText {
        annotations: Empty,
        logprobs: Vec<Logprob>,
        text: String,
    },
}

impl ContentPart {
    pub fn text_mut(&mut self) -> &mut String {
        match self {
            ContentPart::ReasoningText { text } | ContentPart::OutputText { text, .. } => text,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    Reasoning {
        id: String,
        status: Status,
        content: Vec<ContentPart>,
        summary: Empty,
        encrypted_content: String,
    },
    Message {
        id: String,
        status: Status,
        role: Role,
        phase: Phase,
        content: Vec<ContentPart>,
    },
    FunctionCall {
        id: String,
        status: Status,
        call_id: String,
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        arguments: String,
    },
    CustomToolCall {
        id: String,
        status: Status,
        call_id: String,
        name: String,
        input: String,
    },
}

impl OutputItem {
    pub fn id(&self) -> &str {
        match self {
            OutputItem::Reasoning { id, .. }
            | OutputItem::Message { id, .. }
            | OutputItem::FunctionCall { id, .. }
            | OutputItem::CustomToolCall { id, .. } => id,
        }
    }

    pub fn set_status(&mut self, new: Status) {
        match self {
            OutputItem::Reasoning { status, .. }
            | OutputItem::Message { status, .. }
            | OutputItem::FunctionCall { status, .. }
            | OutputItem::CustomToolCall { status, .. } => *status = new,
        }
    }

    /// The content parts of a reasoning or message item.
    pub fn content_mut(&mut self) -> Option<&mut Vec<ContentPart>> {
        match self {
            OutputItem::Reasoning { content, .. } | OutputItem::Message { content, .. } => {
                Some(content)
            }
            _ => None,
        }
    }

    /// The streamed text of a call: function arguments or custom input.
    pub fn call_text_mut(&mut self) -> Option<&mut String> {
        match self {
            OutputItem::FunctionCall { arguments, .. } => Some(arguments),
            OutputItem::CustomToolCall { input, .. } => Some(input),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IncompleteReason {
    MaxOutputTokens,
    ContentFilter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IncompleteDetails {
    pub reason: IncompleteReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct InputTokensDetails {
    pub cached_tokens: u64,
    /// Today's API reports prompt-cache writes too; the reference's usage predates the field
    /// and leaves it out (`None`). See `ResponsesGenerator::with_cache_write_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResponseUsage {
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
}

/// The `response` object of `response.created` / `in_progress` / `completed` /
/// `incomplete`, and the accumulated response.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseObject {
    pub id: String,
    pub created_at: u64,
    pub status: Status,
    pub completed_at: Option<u64>,
    pub incomplete_details: Option<IncompleteDetails>,
    pub model: String,
    pub output: Vec<OutputItem>,
    pub settings: Arc<ReportedSettings>,
    pub usage: Option<ResponseUsage>,
}

impl ResponseObject {
    /// An in-progress response with no output.
    pub fn in_progress(
        id: String,
        model: String,
        created_at: u64,
        settings: Arc<ReportedSettings>,
    ) -> Self {
        ResponseObject {
            id,
            created_at,
            status: Status::InProgress,
            completed_at: None,
            incomplete_details: None,
            model,
            output: Vec::new(),
            settings,
            usage: None,
        }
    }
}

/// An `f32` setting, spelled `FloatSpelling::Single` (`0.3`, `1.0`).
struct F32(f32);

impl Serialize for F32 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f32(self.0)
    }
}

impl Serialize for ResponseObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = &*self.settings;
        let null = ();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("object", "response")?;
        map.serialize_entry("created_at", &self.created_at)?;
        map.serialize_entry("status", &self.status)?;
        map.serialize_entry("background", &s.state.background)?;
        map.serialize_entry("completed_at", &self.completed_at)?;
        map.serialize_entry("content_filters", &null)?;
        if let Some(conversation) = &s.state.conversation {
            map.serialize_entry("conversation", &serde_json::json!({"id": conversation}))?;
        }
        map.serialize_entry("error", &null)?;
        map.serialize_entry("frequency_penalty", &0.0f64)?;
        map.serialize_entry("incomplete_details", &self.incomplete_details)?;
        map.serialize_entry("instructions", &s.scalars.instructions)?;
        map.serialize_entry("max_output_tokens", &s.scalars.max_output_tokens)?;
        map.serialize_entry("max_tool_calls", &null)?;
        map.serialize_entry("model", &self.model)?;
        map.serialize_entry("moderation", &null)?;
        map.serialize_entry("output", &self.output)?;
        map.serialize_entry("parallel_tool_calls", &true)?;
        map.serialize_entry("presence_penalty", &0.0f64)?;
        map.serialize_entry("previous_response_id", &s.state.previous_response_id)?;
        map.serialize_entry("prompt_cache_key", &null)?;
        map.serialize_entry("prompt_cache_retention", &null)?;
        map.serialize_entry("reasoning", &s.reasoning)?;
        map.serialize_entry("safety_identifier", &null)?;
        map.serialize_entry("service_tier", "default")?;
        map.serialize_entry("store", &s.state.store)?;
        map.serialize_entry("temperature", &F32(s.scalars.temperature))?;
        map.serialize_entry("text", &s.text)?;
        map.serialize_entry("tool_choice", &s.tool_choice)?;
        map.serialize_entry("tools", &s.tools)?;
        map.serialize_entry("top_logprobs", &s.scalars.top_logprobs)?;
        map.serialize_entry("top_p", &F32(s.scalars.top_p))?;
        map.serialize_entry("truncation", "disabled")?;
        map.serialize_entry("usage", &self.usage)?;
        map.serialize_entry("user", &s.scalars.user)?;
        map.serialize_entry("metadata", &s.state.metadata)?;
        map.end()
    }
}

/// One Responses stream event. After `type`, keys are in the reference's (alphabetical) order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ResponsesStreamEvent {
    #[serde(rename = "response.created")]
    Created {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.in_progress")]
    InProgress {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.completed")]
    Completed {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.incomplete")]
    Incomplete {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        item: OutputItem,
        output_index: usize,
        sequence_number: u64,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        item: OutputItem,
        output_index: usize,
        sequence_number: u64,
    },
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        content_index: usize,
        item_id: String,
        output_index: usize,
        part: ContentPart,
        sequence_number: u64,
    },
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        content_index: usize,
        item_id: String,
        output_index: usize,
        part: ContentPart,
        sequence_number: u64,
    },
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta {
        content_index: usize,
        delta: String,
        item_id: String,
        output_index: usize,
        sequence_number: u64,
    },
    #[serde(rename = "response.reasoning_text.done")]
    ReasoningTextDone {
        content_index: usize,
        item_id: String,
        output_index: usize,
        sequence_number: u64,
        text: String,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        content_index: usize,
        delta: String,
        item_id: String,
        logprobs: Vec<Logprob>,
        output_index: usize,
        sequence_number: u64,
    },
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        content_index: usize,
        item_id: String,
        logprobs: Vec<Logprob>,
        output_index: usize,
        sequence_number: u64,
        text: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        delta: String,
        item_id: String,
        output_index: usize,
        sequence_number: u64,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        arguments: String,
        item_id: String,
        output_index: usize,
        sequence_number: u64,
    },
    #[serde(rename = "response.custom_tool_call_input.delta")]
    CustomToolCallInputDelta {
        delta: String,
        item_id: String,
        output_index: usize,
        sequence_number: u64,
    },
    #[serde(rename = "response.custom_tool_call_input.done")]
    CustomToolCallInputDone {
        input: String,
        item_id: String,
        output_index: usize,
        sequence_number: u64,
    },
}

impl ResponsesStreamEvent {
    /// The event's `type`, which is also its SSE event name.
    pub fn event_type(&self) -> &'static str {
        use ResponsesStreamEvent as E;
        match self {
            E::Created { .. } => "response.created",
            E::InProgress { .. } => "response.in_progress",
            E::Completed { .. } => "response.completed",
            E::Incomplete { .. } => "response.incomplete",
            E::OutputItemAdded { .. } => "response.output_item.added",
            E::OutputItemDone { .. } => "response.output_item.done",
            E::ContentPartAdded { .. } => "response.content_part.added",
            E::ContentPartDone { .. } => "response.content_part.done",
            E::ReasoningTextDelta { .. } => "response.reasoning_text.delta",
            E::ReasoningTextDone { .. } => "response.reasoning_text.done",
            E::OutputTextDelta { .. } => "response.output_text.delta",
            E::OutputTextDone { .. } => "response.output_text.done",
            E::FunctionCallArgumentsDelta { .. } => "response.function_call_arguments.delta",
            E::FunctionCallArgumentsDone { .. } => "response.function_call_arguments.done",
            E::CustomToolCallInputDelta { .. } => "response.custom_tool_call_input.delta",
            E::CustomToolCallInputDone { .. } => "response.custom_tool_call_input.done",
        }
    }

    /// Compact JSON, keys in the reference's order.
    pub fn to_json(&self) -> String {
        json::to_json(self, FloatSpelling::Double)
    }
}
