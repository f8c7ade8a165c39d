//! The Messages stream events and the `message` object (`tests/messages_reply.rs`), in wire
//! key order; `to_json` is their compact JSON.

use deepseek_stream::emit::{Completion, FinishReason, PromptUsage};
use serde::Serialize;
use serde_json::Value;

use crate::json::{self, FloatSpelling};

/// The `usage` object of `message_start`, `message_delta` and the accumulated message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MessagesUsage {
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub output_tokens: u64,
    pub service_tier: &'static str,
}

impl MessagesUsage {
    /// Input tokens are the prompt minus its cache hits (saturating; `tests/messages_reply.rs`).
    pub fn new(prompt: PromptUsage, output_tokens: u64) -> Self {
        Self {
            input_tokens: prompt
                .prompt_tokens
                .saturating_sub(prompt.prompt_cache_hit_tokens),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: prompt.prompt_cache_hit_tokens,
            output_tokens,
            service_tier: "standard",
        }
    }
}

/// Why the message ended (`tests/messages_reply.rs`, `scenarios_emit_and_accumulate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
    StopSequence,
}

impl StopReason {
    /// The stop reason and matched stop sequence for a completed stream.
    pub fn of(completion: &Completion, tool_calls: bool) -> (Self, Option<String>) {
        match completion {
            Completion::Finished(FinishReason::Stop) if tool_calls => (Self::ToolUse, None),
            Completion::Finished(FinishReason::Stop) | Completion::Ended => (Self::EndTurn, None),
            Completion::Finished(FinishReason::Length) => (Self::MaxTokens, None),
            Completion::Finished(FinishReason::ContentFilter) => (Self::Refusal, None),
            Completion::StopSequence(sequence) => (Self::StopSequence, Some(sequence.clone())),
        }
    }
}

/// A content block, as opened by `content_block_start` and as accumulated.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Thinking {
        thinking: String,
        signature: String,
    },
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

/// The `delta` of a `content_block_delta` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    ThinkingDelta { thinking: String },
    SignatureDelta { signature: String },
    TextDelta { text: String },
    InputJsonDelta { partial_json: String },
}

/// The `delta` of a `message_delta` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageStopInfo {
    pub stop_reason: StopReason,
    pub stop_sequence: Option<String>,
}

/// The `message` object: the snapshot in `message_start` and the accumulated response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    pub model: String,
    pub content: Vec<ContentBlock>,
    pub stop_reason: Option<StopReason>,
    pub stop_sequence: Option<String>,
    pub usage: MessagesUsage,
}

impl Message {
    /// An empty assistant message.
    pub fn new(id: String, model: String, usage: MessagesUsage) -> Self {
        Self {
            id,
            kind: "message",
            role: "assistant",
            model,
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage,
        }
    }
}

/// One Messages stream event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessagesStreamEvent {
    MessageStart {
        message: Message,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    Ping,
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageStopInfo,
        usage: MessagesUsage,
    },
    MessageStop,
}

impl MessagesStreamEvent {
    /// The SSE event name: the event's `type`.
    pub fn event_name(&self) -> &'static str {
        match self {
            Self::MessageStart { .. } => "message_start",
            Self::ContentBlockStart { .. } => "content_block_start",
            Self::Ping => "ping",
            Self::ContentBlockDelta { .. } => "content_block_delta",
            Self::ContentBlockStop { .. } => "content_block_stop",
            Self::MessageDelta { .. } => "message_delta",
            Self::MessageStop => "message_stop",
        }
    }

    /// Compact JSON, keys in wire order; tool input floats spelled as the DSML arguments
    /// spell them.
    pub fn to_json(&self) -> String {
        json::to_json(self, FloatSpelling::PyCompact)
    }
}
