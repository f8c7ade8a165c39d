//! Anthropic Messages on the way back (`tests/messages_reply.rs`): the stream emitter that turns
//! the processor's calls into `message_start` / `content_block_*` / `ping` / `message_delta` /
//! `message_stop` events, and the accumulator that folds those events into one `message`.
//!
//! Blocks are closed lazily: a block stays open until the next block starts or the stream
//! finishes, so a thinking block gets its `signature_delta` right before its stop, and a
//! tool-use block's stop comes with the next block or the end (an invoke's close alone emits
//! nothing).

use std::io;

use deepseek_model::pyjson::{format_float, FloatStyle};
use deepseek_model::ConversationRequest;
use deepseek_stream::emit::{Completion, Emitter, FinishReason, PromptUsage, TokenLogprob, Usage};
use deepseek_stream::Segment;
use serde::Serialize;
use serde_json::{Map, Value};

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

    /// Compact JSON, keys in wire order.
    pub fn to_json(&self) -> String {
        to_compact_json(self)
    }
}

/// What the open block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenKind {
    Thinking,
    Text,
    /// A tool-use block for the call with this parser index.
    ToolUse(usize),
}

/// The emitter of one Messages stream.
#[derive(Debug, Clone)]
pub struct MessagesEmitter {
    id: String,
    model: String,
    thinking_mode: bool,
    signature: Option<String>,
    /// The block index the next `content_block_start` gets.
    next_index: usize,
    /// The open block and its index.
    open: Option<(OpenKind, usize)>,
    /// Whether the single `ping` was sent.
    pinged: bool,
}

impl MessagesEmitter {
    /// An emitter for response `id` reporting `model`; in thinking mode the thinking block
    /// opens with the stream.
    pub fn new(id: impl Into<String>, model: impl Into<String>, thinking_mode: bool) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            thinking_mode,
            signature: None,
            next_index: 0,
            open: None,
            pinged: false,
        }
    }

    /// An emitter for a converted Messages request (its resolved thinking mode).
    pub fn for_request(
        request: &ConversationRequest,
        id: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self::new(id, model, request.conversation.thinking_mode)
    }

    /// The thinking mode this stream was opened with.
    pub fn thinking_mode(&self) -> bool {
        self.thinking_mode
    }

    /// Thinking blocks end with `signature` instead of the response ID.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    fn open_block(
        &mut self,
        kind: OpenKind,
        content_block: ContentBlock,
        out: &mut Vec<MessagesStreamEvent>,
    ) -> usize {
        self.close_block(out);
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((kind, index));
        out.push(MessagesStreamEvent::ContentBlockStart {
            index,
            content_block,
        });
        if !self.pinged {
            self.pinged = true;
            out.push(MessagesStreamEvent::Ping);
        }
        index
    }

    fn close_block(&mut self, out: &mut Vec<MessagesStreamEvent>) {
        let Some((kind, index)) = self.open.take() else {
            return;
        };
        if kind == OpenKind::Thinking {
            let signature = self.signature.as_ref().unwrap_or(&self.id).clone();
            out.push(MessagesStreamEvent::ContentBlockDelta {
                index,
                delta: BlockDelta::SignatureDelta { signature },
            });
        }
        out.push(MessagesStreamEvent::ContentBlockStop { index });
    }

    /// The index of the block that takes `segment`'s text, opening a fresh one (and closing
    /// the open block) unless a block of that kind is open.
    fn text_block(&mut self, segment: Segment, out: &mut Vec<MessagesStreamEvent>) -> usize {
        let (kind, block) = match segment {
            Segment::Reasoning => (
                OpenKind::Thinking,
                ContentBlock::Thinking {
                    thinking: String::new(),
                    signature: String::new(),
                },
            ),
            Segment::Content => (
                OpenKind::Text,
                ContentBlock::Text {
                    text: String::new(),
                },
            ),
        };
        match self.open {
            Some((open, index)) if open == kind => index,
            _ => self.open_block(kind, block, out),
        }
    }
}

impl Emitter for MessagesEmitter {
    type Event = MessagesStreamEvent;

    fn start(
        &mut self,
        prompt: PromptUsage,
        _system_fingerprint: Option<&str>,
        out: &mut Vec<MessagesStreamEvent>,
    ) {
        let message = Message::new(
            self.id.clone(),
            self.model.clone(),
            MessagesUsage::new(prompt, 0),
        );
        out.push(MessagesStreamEvent::MessageStart { message });
        if self.thinking_mode {
            self.text_block(Segment::Reasoning, out);
        }
    }

    fn text(
        &mut self,
        segment: Segment,
        text: &str,
        _logprobs: Option<&[TokenLogprob]>,
        out: &mut Vec<MessagesStreamEvent>,
    ) {
        if text.is_empty() {
            return;
        }
        let index = self.text_block(segment, out);
        let delta = match segment {
            Segment::Reasoning => BlockDelta::ThinkingDelta {
                thinking: text.to_owned(),
            },
            Segment::Content => BlockDelta::TextDelta {
                text: text.to_owned(),
            },
        };
        out.push(MessagesStreamEvent::ContentBlockDelta { index, delta });
    }

    fn tool_call_start(
        &mut self,
        index: usize,
        id: &str,
        name: &str,
        out: &mut Vec<MessagesStreamEvent>,
    ) {
        let block = ContentBlock::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            input: Value::Object(Map::new()),
        };
        self.open_block(OpenKind::ToolUse(index), block, out);
    }

    fn tool_call_arguments(
        &mut self,
        index: usize,
        fragment: &str,
        out: &mut Vec<MessagesStreamEvent>,
    ) {
        if fragment.is_empty() {
            return;
        }
        if let Some((OpenKind::ToolUse(call), block)) = self.open {
            if call == index {
                let delta = BlockDelta::InputJsonDelta {
                    partial_json: fragment.to_owned(),
                };
                out.push(MessagesStreamEvent::ContentBlockDelta {
                    index: block,
                    delta,
                });
            }
        }
    }

    fn tool_call_end(&mut self, _index: usize, _out: &mut Vec<MessagesStreamEvent>) {
        // Closed lazily, with the next block or at the end.
    }

    fn finish(
        &mut self,
        completion: &Completion,
        tool_calls: bool,
        usage: &Usage,
        out: &mut Vec<MessagesStreamEvent>,
    ) {
        self.close_block(out);
        let (stop_reason, stop_sequence) = StopReason::of(completion, tool_calls);
        out.push(MessagesStreamEvent::MessageDelta {
            delta: MessageStopInfo {
                stop_reason,
                stop_sequence,
            },
            usage: MessagesUsage::new(usage.prompt, usage.completion_tokens),
        });
        out.push(MessagesStreamEvent::MessageStop);
    }
}

/// One accumulated block: its stream index, the block, and a tool call's argument text.
#[derive(Debug, Clone, PartialEq)]
struct Accumulated {
    index: usize,
    block: ContentBlock,
    partial_json: String,
}

/// The non-streaming `message`, accumulated from stream events.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagesResponse {
    message: Message,
    blocks: Vec<Accumulated>,
}

impl MessagesResponse {
    /// The message before any event: the constructor's ID, model and prompt usage.
    pub fn new(id: impl Into<String>, model: impl Into<String>, prompt: PromptUsage) -> Self {
        Self {
            message: Message::new(id.into(), model.into(), MessagesUsage::new(prompt, 0)),
            blocks: Vec::new(),
        }
    }

    /// Apply one event. Events for blocks that never started are ignored.
    pub fn accumulate(&mut self, event: MessagesStreamEvent) {
        match event {
            MessagesStreamEvent::MessageStart { message } => {
                self.message.id = message.id;
                self.message.model = message.model;
                self.message.usage = message.usage;
            }
            MessagesStreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                self.blocks.push(Accumulated {
                    index,
                    block: content_block,
                    partial_json: String::new(),
                });
            }
            MessagesStreamEvent::ContentBlockDelta { index, delta } => {
                if let Some(block) = self.block_mut(index) {
                    apply_delta(block, delta);
                }
            }
            MessagesStreamEvent::ContentBlockStop { index } => {
                if let Some(Accumulated {
                    block: ContentBlock::ToolUse { input, .. },
                    partial_json,
                    ..
                }) = self.block_mut(index)
                {
                    *input = serde_json::from_str(partial_json)
                        .unwrap_or_else(|_| Value::Object(Map::new()));
                }
            }
            MessagesStreamEvent::MessageDelta { delta, usage } => {
                self.message.stop_reason = Some(delta.stop_reason);
                self.message.stop_sequence = delta.stop_sequence;
                self.message.usage = usage;
            }
            MessagesStreamEvent::Ping | MessagesStreamEvent::MessageStop => {}
        }
    }

    /// The message as accumulated so far.
    pub fn message(&self) -> Message {
        let mut message = self.message.clone();
        message.content = self.blocks.iter().map(|b| b.block.clone()).collect();
        message
    }

    /// Compact JSON of the message as accumulated so far.
    pub fn to_json(&self) -> String {
        to_compact_json(&self.message())
    }

    fn block_mut(&mut self, index: usize) -> Option<&mut Accumulated> {
        self.blocks.iter_mut().rev().find(|b| b.index == index)
    }
}

fn apply_delta(acc: &mut Accumulated, delta: BlockDelta) {
    match (&mut acc.block, delta) {
        (
            ContentBlock::Thinking { thinking, .. },
            BlockDelta::ThinkingDelta { thinking: piece },
        ) => thinking.push_str(&piece),
        (
            ContentBlock::Thinking { signature, .. },
            BlockDelta::SignatureDelta { signature: piece },
        ) => signature.push_str(&piece),
        (ContentBlock::Text { text }, BlockDelta::TextDelta { text: piece }) => {
            text.push_str(&piece)
        }
        (ContentBlock::ToolUse { .. }, BlockDelta::InputJsonDelta { partial_json }) => {
            acc.partial_json.push_str(&partial_json)
        }
        _ => {}
    }
}

/// serde_json's compact output, with floats spelled as in the tool-call arguments the model
/// wrote them from (PYJSON's compact style: `0.00001`, `1e-6`, `1e+16`).
struct CompactPyFloats;

impl serde_json::ser::Formatter for CompactPyFloats {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(format_float(value, FloatStyle::Compact).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }
}

fn to_compact_json<T: Serialize>(value: &T) -> String {
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, CompactPyFloats);
    // Serializing these plain data types into memory cannot fail; an empty object is the
    // harmless fallback.
    if value.serialize(&mut serializer).is_err() {
        return "{}".to_owned();
    }
    String::from_utf8(bytes).unwrap_or_else(|_| "{}".to_owned())
}
