//! The `chat.completion.chunk` (`tests/chat_reply.rs`): its parts kept as values, its JSON
//! written key by key with the crate's JSON writer (keys come and go with the stream's
//! state), in the reference's key order; logprobs are spelled `FloatSpelling::Single`.

use std::fmt::Write as _;
use std::sync::Arc;

use deepseek_stream::emit::TokenLogprob;
use deepseek_stream::Segment;

use crate::json::{push_byte_list, push_float, push_opt_str, push_str, FloatSpelling};

/// Whether non-final chunks carry `"usage": null` or omit the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageKey {
    /// Streaming without `stream_options.include_usage`: the key is left out.
    Omitted,
    /// Non-streaming, or `include_usage: true`: `"usage": null`.
    Null,
}

/// The `delta` of one chunk.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// The first chunk: `{"role":"assistant",…}`, announcing the segment the stream opens
    /// with (its empty string; in thinking mode the other segment is `null`).
    Role(Segment),
    Reasoning(String),
    Content(String),
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: usize,
        fragment: String,
    },
    /// The final chunk's empty content.
    Final,
}

/// Usage as Chat reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// `completion_tokens_details.reasoning_tokens`, when known in thinking mode.
    pub reasoning_tokens: Option<u64>,
}

/// One `chat.completion.chunk`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatCompletionChunk {
    pub id: Arc<str>,
    pub created: u64,
    pub model: Arc<str>,
    pub system_fingerprint: Option<Arc<str>>,
    pub thinking: bool,
    pub delta: Delta,
    /// Chunk-level logprobs: the segment they belong to and the entries.
    pub logprobs: Option<(Segment, Vec<TokenLogprob>)>,
    pub finish_reason: Option<&'static str>,
    /// `None`: no usage yet; whether the key appears is `usage_key`.
    pub usage: Option<ChatUsage>,
    pub usage_key: UsageKey,
    /// The choice this chunk belongs to (0 unless the request asked for several).
    pub choice: usize,
    /// One choice of several: `usage` is this choice's, kept for the accumulated usage and
    /// written as if absent (the usage of all choices comes in a chunk of its own).
    pub usage_held: bool,
}

impl ChatCompletionChunk {
    /// The chunk as compact JSON, keys in the reference's order.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256);
        out.push_str("{\"id\":");
        push_str(&mut out, &self.id);
        out.push_str(",\"object\":\"chat.completion.chunk\",\"created\":");
        let _ = write!(out, "{}", self.created);
        out.push_str(",\"model\":");
        push_str(&mut out, &self.model);
        out.push_str(",\"system_fingerprint\":");
        push_opt_str(&mut out, self.system_fingerprint.as_deref());
        let _ = write!(out, ",\"choices\":[{{\"index\":{},\"delta\":", self.choice);
        self.write_delta(&mut out);
        out.push_str(",\"logprobs\":");
        match &self.logprobs {
            None => out.push_str("null"),
            Some((segment, entries)) => {
                out.push_str(match segment {
                    Segment::Content => "{\"content\":",
                    Segment::Reasoning => "{\"reasoning_content\":",
                });
                push_logprobs(&mut out, entries);
                out.push('}');
            }
        }
        out.push_str(",\"finish_reason\":");
        push_opt_str(&mut out, self.finish_reason);
        out.push_str("}]");
        match (
            self.usage.as_ref().filter(|_| !self.usage_held),
            self.usage_key,
        ) {
            (Some(usage), _) => {
                out.push_str(",\"usage\":");
                push_usage(&mut out, usage);
            }
            (None, UsageKey::Null) => out.push_str(",\"usage\":null"),
            (None, UsageKey::Omitted) => {}
        }
        out.push('}');
        out
    }

    fn write_delta(&self, out: &mut String) {
        match &self.delta {
            Delta::Role(Segment::Reasoning) => {
                out.push_str(
                    "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"\"}",
                );
            }
            Delta::Role(Segment::Content) if self.thinking => {
                out.push_str(
                    "{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":null}",
                );
            }
            Delta::Role(Segment::Content) => {
                out.push_str("{\"role\":\"assistant\",\"content\":\"\"}");
            }
            Delta::Reasoning(text) => {
                out.push_str("{\"content\":null,\"reasoning_content\":");
                push_str(out, text);
                out.push('}');
            }
            Delta::Content(text) => {
                out.push_str("{\"content\":");
                push_str(out, text);
                if self.thinking {
                    out.push_str(",\"reasoning_content\":null");
                }
                out.push('}');
            }
            Delta::ToolCallStart { index, id, name } => {
                let _ = write!(out, "{{\"tool_calls\":[{{\"index\":{index},\"id\":");
                push_str(out, id);
                out.push_str(",\"type\":\"function\",\"function\":{\"name\":");
                push_str(out, name);
                out.push_str(",\"arguments\":\"\"}}]}");
            }
            Delta::ToolCallArguments { index, fragment } => {
                let _ = write!(
                    out,
                    "{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":"
                );
                push_str(out, fragment);
                out.push_str("}}]}");
            }
            Delta::Final if self.thinking => {
                out.push_str("{\"content\":\"\",\"reasoning_content\":null}");
            }
            Delta::Final => out.push_str("{\"content\":\"\"}"),
        }
    }
}

/// The chunk that ends a stream of several choices with their usage: no choices, the
/// prompt counted once, the completions added up.
pub fn usage_chunk_json(
    id: &str,
    model: &str,
    created: u64,
    system_fingerprint: Option<&str>,
    usage: &ChatUsage,
) -> String {
    let mut out = String::with_capacity(256);
    out.push_str("{\"id\":");
    push_str(&mut out, id);
    out.push_str(",\"object\":\"chat.completion.chunk\",\"created\":");
    let _ = write!(out, "{created}");
    out.push_str(",\"model\":");
    push_str(&mut out, model);
    out.push_str(",\"system_fingerprint\":");
    push_opt_str(&mut out, system_fingerprint);
    out.push_str(",\"choices\":[],\"usage\":");
    push_usage(&mut out, usage);
    out.push('}');
    out
}

pub(super) fn push_usage(out: &mut String, usage: &ChatUsage) {
    let total = usage.prompt_tokens.wrapping_add(usage.completion_tokens);
    let miss = usage.prompt_tokens.saturating_sub(usage.cached_tokens);
    let _ = write!(
        out,
        "{{\"prompt_tokens\":{},\"completion_tokens\":{},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{}}}",
        usage.prompt_tokens, usage.completion_tokens, total, usage.cached_tokens
    );
    if let Some(reasoning) = usage.reasoning_tokens {
        let _ = write!(
            out,
            ",\"completion_tokens_details\":{{\"reasoning_tokens\":{reasoning}}}"
        );
    }
    let _ = write!(
        out,
        ",\"prompt_cache_hit_tokens\":{},\"prompt_cache_miss_tokens\":{}}}",
        usage.cached_tokens, miss
    );
}

/// `{"token":…,"logprob":…,"bytes":[…]` (the object left open for more fields).
fn push_token_fields(out: &mut String, token: &str, logprob: f64, bytes: &[u8]) {
    out.push_str("{\"token\":");
    push_str(out, token);
    out.push_str(",\"logprob\":");
    push_float(out, logprob, FloatSpelling::Single);
    out.push_str(",\"bytes\":");
    push_byte_list(out, bytes);
}

pub(super) fn push_logprobs(out: &mut String, entries: &[TokenLogprob]) {
    out.push('[');
    for (n, entry) in entries.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        push_token_fields(out, &entry.token, entry.logprob, &entry.bytes);
        out.push_str(",\"top_logprobs\":[");
        for (k, top) in entry.top_logprobs.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            push_token_fields(out, &top.token, top.logprob, &top.bytes);
            out.push('}');
        }
        out.push_str("]}");
    }
    out.push(']');
}
