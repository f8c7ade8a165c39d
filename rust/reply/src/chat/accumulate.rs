//! The non-streamed `chat.completion` (`tests/chat_reply.rs`): chunks folded into one choice,
//! written with the chunks' writer.

use std::fmt::Write as _;
use std::sync::Arc;

use deepseek_stream::emit::TokenLogprob;
use deepseek_stream::Segment;

use super::events::{
    push_logprobs, push_usage, usage_chunk_json, ChatCompletionChunk, ChatUsage, Delta, UsageKey,
};
use crate::json::{push_opt_str, push_str};

/// One accumulated tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AccumulatedCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

/// The accumulated choice (present once any chunk arrived).
#[derive(Debug, Clone, Default, PartialEq)]
struct Choice {
    content: String,
    reasoning: Option<String>,
    calls: Vec<AccumulatedCall>,
    content_logprobs: Option<Vec<TokenLogprob>>,
    reasoning_logprobs: Option<Vec<TokenLogprob>>,
    finish_reason: Option<&'static str>,
}

/// The non-streaming `chat.completion` object built from chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatCompletionResponse {
    id: String,
    model: String,
    created: u64,
    /// The choices by index (one unless the request asked for several).
    choices: Vec<(usize, Choice)>,
    usage: Option<ChatUsage>,
    system_fingerprint: Option<Arc<str>>,
    /// The stream leaves usage out (streamed without `stream_options.include_usage`).
    usage_omitted: bool,
}

impl ChatCompletionResponse {
    /// An empty response; `id`, `model` and `created` are reported as given. The prompt
    /// counts are accepted for symmetry with the other protocols; usage comes from chunks.
    pub fn new(
        id: &str,
        model: &str,
        created: u64,
        _prompt_tokens: u64,
        _prompt_cache_hit_tokens: u64,
    ) -> Self {
        Self {
            id: id.to_owned(),
            model: model.to_owned(),
            created,
            choices: Vec::new(),
            usage: None,
            system_fingerprint: None,
            usage_omitted: false,
        }
    }

    /// Fold one chunk in.
    pub fn accumulate(&mut self, chunk: ChatCompletionChunk) {
        self.usage_omitted = chunk.usage_key == UsageKey::Omitted;
        if chunk.system_fingerprint.is_some() {
            self.system_fingerprint = chunk.system_fingerprint.clone();
        }
        match (chunk.usage, &mut self.usage) {
            // One choice of several: the completions add up, the prompt is counted once.
            (Some(usage), Some(total)) if chunk.usage_held => {
                total.completion_tokens += usage.completion_tokens;
                total.reasoning_tokens = match (total.reasoning_tokens, usage.reasoning_tokens) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                };
            }
            (Some(usage), _) => self.usage = Some(usage),
            (None, _) => {}
        }
        let at = match self
            .choices
            .iter()
            .position(|(index, _)| *index == chunk.choice)
        {
            Some(at) => at,
            None => {
                let at = self
                    .choices
                    .partition_point(|(index, _)| *index < chunk.choice);
                self.choices.insert(at, (chunk.choice, Choice::default()));
                at
            }
        };
        let Some((_, choice)) = self.choices.get_mut(at) else {
            return;
        };
        match chunk.delta {
            Delta::Role(opens) => {
                if opens == Segment::Reasoning && choice.reasoning.is_none() {
                    choice.reasoning = Some(String::new());
                }
            }
            Delta::Reasoning(text) => choice
                .reasoning
                .get_or_insert_with(String::new)
                .push_str(&text),
            Delta::Content(text) => choice.content.push_str(&text),
            Delta::ToolCallStart { index, id, name } => {
                choice.calls.push(AccumulatedCall {
                    index,
                    id,
                    name,
                    arguments: String::new(),
                });
            }
            Delta::ToolCallArguments { index, fragment } => {
                if let Some(call) = choice
                    .calls
                    .iter_mut()
                    .rev()
                    .find(|call| call.index == index)
                {
                    call.arguments.push_str(&fragment);
                }
            }
            Delta::Final => {}
        }
        if let Some((segment, entries)) = chunk.logprobs {
            let list = match segment {
                Segment::Content => &mut choice.content_logprobs,
                Segment::Reasoning => &mut choice.reasoning_logprobs,
            };
            list.get_or_insert_with(Vec::new).extend(entries);
        }
        if chunk.finish_reason.is_some() {
            choice.finish_reason = chunk.finish_reason;
        }
    }

    /// The response as compact JSON.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256);
        out.push_str("{\"id\":");
        push_str(&mut out, &self.id);
        out.push_str(",\"object\":\"chat.completion\",\"created\":");
        let _ = write!(out, "{}", self.created);
        out.push_str(",\"model\":");
        push_str(&mut out, &self.model);
        out.push_str(",\"choices\":[");
        for (n, (index, choice)) in self.choices.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            write_choice(&mut out, *index, choice);
        }
        out.push(']');
        if let Some(usage) = &self.usage {
            out.push_str(",\"usage\":");
            push_usage(&mut out, usage);
        }
        out.push_str(",\"system_fingerprint\":");
        push_opt_str(&mut out, self.system_fingerprint.as_deref());
        out.push('}');
        out
    }

    /// The chunk that ends a stream of several choices: no choices, the usage of them all
    /// (`None` before any usage was accumulated, or for a stream that leaves usage out).
    pub fn usage_chunk_json(&self) -> Option<String> {
        let usage = self.usage.as_ref().filter(|_| !self.usage_omitted)?;
        Some(usage_chunk_json(
            &self.id,
            &self.model,
            self.created,
            self.system_fingerprint.as_deref(),
            usage,
        ))
    }

    /// Chat SSE events are unnamed `data:` lines.
    pub fn sse_event_name(_chunk: &ChatCompletionChunk) -> Option<&'static str> {
        None
    }

    /// The data of the terminal SSE message.
    pub fn sse_done_data() -> Option<&'static str> {
        Some("[DONE]")
    }
}

fn write_choice(out: &mut String, index: usize, choice: &Choice) {
    let _ = write!(
        out,
        "{{\"index\":{index},\"message\":{{\"role\":\"assistant\",\"content\":"
    );
    push_str(out, &choice.content);
    if let Some(reasoning) = &choice.reasoning {
        out.push_str(",\"reasoning_content\":");
        push_str(out, reasoning);
    }
    if !choice.calls.is_empty() {
        out.push_str(",\"tool_calls\":[");
        for (n, call) in choice.calls.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            let _ = write!(out, "{{\"index\":{},\"id\":", call.index);
            push_str(out, &call.id);
            out.push_str(",\"type\":\"function\",\"function\":{\"name\":");
            push_str(out, &call.name);
            out.push_str(",\"arguments\":");
            push_str(out, &call.arguments);
            out.push_str("}}");
        }
        out.push(']');
    }
    out.push_str("},\"logprobs\":");
    if choice.content_logprobs.is_none() && choice.reasoning_logprobs.is_none() {
        out.push_str("null");
    } else {
        out.push('{');
        let mut first = true;
        for (key, list) in [
            ("content", &choice.content_logprobs),
            ("reasoning_content", &choice.reasoning_logprobs),
        ] {
            if let Some(entries) = list {
                if !first {
                    out.push(',');
                }
                first = false;
                let _ = write!(out, "\"{key}\":");
                push_logprobs(out, entries);
            }
        }
        out.push('}');
    }
    out.push_str(",\"finish_reason\":");
    push_opt_str(out, choice.finish_reason);
    out.push('}');
}
