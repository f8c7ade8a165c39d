//! The non-streamed `message` (`tests/messages_reply.rs`): stream events folded into one
//! message; a tool-use block's input is its streamed JSON, parsed when the block stops.

use deepseek_stream::emit::PromptUsage;
use serde_json::{Map, Value};

use super::events::{BlockDelta, ContentBlock, Message, MessagesStreamEvent, MessagesUsage};
use crate::json::{self, FloatSpelling};

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
        json::to_json(&self.message(), FloatSpelling::PyCompact)
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
