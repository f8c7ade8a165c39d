//! The contract between the stream processor and a protocol's emitter.
//!
//! The processor (lifecycle, detokenization, parsing, usage, tool-call ids) calls these
//! methods in stream order; an emitter turns each call into zero or more protocol events
//! (Chat Completions chunks, Responses events, Messages events), appended to `out`.
//! Emitters live with their wire shapes in `deepseek-reply`.

use crate::Segment;

/// Prompt-side usage reported by the backend's `ready` chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromptUsage {
    pub prompt_tokens: u64,
    pub prompt_cache_hit_tokens: u64,
}

/// Why the backend stopped generating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ContentFilter,
}

/// How the stream completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The backend sent a finish chunk with this reason.
    Finished(FinishReason),
    /// A stop sequence matched in content (the sequence as configured).
    StopSequence(String),
    /// `finish()` was called without a finish chunk (reported as a plain stop).
    Ended,
}

/// Usage at the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub prompt: PromptUsage,
    pub completion_tokens: u64,
    /// Known only when token chunks were used in thinking mode (`tests/processor.rs`,
    /// `lifecycle_table`).
    pub reasoning_tokens: Option<u64>,
}

/// One alternative in a token's top logprobs.
#[derive(Debug, Clone, PartialEq)]
pub struct TopLogprob {
    pub token: String,
    pub logprob: f64,
    pub bytes: Vec<u8>,
}

/// The logprob of one emitted token (`tests/processor.rs`, `logprobs_travel_with_their_text`).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
    pub bytes: Vec<u8>,
    pub top_logprobs: Vec<TopLogprob>,
}

/// A protocol's stream emitter.
pub trait Emitter {
    /// The protocol's event type (one chunk or one SSE event each).
    type Event;

    /// The stream opens: on the first `ready` chunk, or on the first output if none came.
    fn start(
        &mut self,
        prompt: PromptUsage,
        system_fingerprint: Option<&str>,
        out: &mut Vec<Self::Event>,
    );

    /// A piece of reasoning or content text, with the logprobs of the tokens that made it.
    fn text(
        &mut self,
        segment: Segment,
        text: &str,
        logprobs: Option<&[TokenLogprob]>,
        out: &mut Vec<Self::Event>,
    );

    /// A tool call's name is complete. `id` is the generated call id
    /// (`tests/processor.rs`, `tool_call_ids_have_the_reference_shape`).
    fn tool_call_start(&mut self, index: usize, id: &str, name: &str, out: &mut Vec<Self::Event>);

    /// A fragment of a tool call's argument JSON.
    fn tool_call_arguments(&mut self, index: usize, fragment: &str, out: &mut Vec<Self::Event>);

    /// A tool call's invoke closed (or the input ended inside it).
    fn tool_call_end(&mut self, index: usize, out: &mut Vec<Self::Event>);

    /// The stream completed. `tool_calls` is true when at least one call name completed.
    fn finish(
        &mut self,
        completion: &Completion,
        tool_calls: bool,
        usage: &Usage,
        out: &mut Vec<Self::Event>,
    );
}
