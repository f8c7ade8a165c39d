//! The Messages emitter (`tests/messages_reply.rs`): `message_start`, then
//! `content_block_*` events with one `ping` after the first block opens, then `message_delta`
//! and `message_stop`.
//!
//! Blocks are closed lazily: a block stays open until the next block starts or the stream
//! finishes, so a thinking block gets its `signature_delta` right before its stop, and a
//! tool-use block's stop comes with the next block or the end (an invoke's close alone emits
//! nothing).

use deepseek_model::ConversationRequest;
use deepseek_stream::emit::{Completion, Emitter, PromptUsage, TokenLogprob, Usage};
use deepseek_stream::Segment;
use serde_json::{Map, Value};

use super::events::{
    BlockDelta, ContentBlock, Message, MessageStopInfo, MessagesStreamEvent, MessagesUsage,
    StopReason,
};

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
