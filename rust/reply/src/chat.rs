//! Chat Completions on the way back (`tests/chat_reply.rs`): the chunk emitter and the
//! accumulated `chat.completion` object.
//!
//! A [`ChatCompletionChunk`] keeps its parts as values and writes its JSON by hand, so the
//! key order and the float spelling are exactly the reference's; [`ChatCompletionResponse`]
//! folds chunks into one response with the same writer.

use std::fmt::Write as _;
use std::sync::Arc;

use deepseek_model::{ConversationRequest, ThinkingInitialStage};
use deepseek_stream::emit::{Completion, Emitter, FinishReason, PromptUsage, TokenLogprob, Usage};
use deepseek_stream::Segment;

/// Whether non-final chunks carry `"usage": null` or omit the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageKey {
    /// Streaming without `stream_options.include_usage`: the key is left out.
    Omitted,
    /// Non-streaming, or `include_usage: true`: `"usage": null`.
    Null,
}

/// What a Chat stream needs to know about its request: made by
/// `ChatCompletionRequest.chunk_generator(request, id, model)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatCompletionChunkGenerator {
    pub id: Arc<str>,
    pub model: Arc<str>,
    /// Unix seconds, the same for every chunk of the stream.
    pub created: u64,
    pub thinking: bool,
    /// What the first chunk announces: reasoning when the stream is in thinking mode and
    /// the parser starts in reasoning, content otherwise (an assistant prefix continued as
    /// content, or a request whose parsing options start in content).
    pub opens: Segment,
    pub usage_key: UsageKey,
}

impl ChatCompletionChunkGenerator {
    /// The generator for a converted request, stamped with the current time.
    pub fn new(request: &ConversationRequest, id: &str, model: &str) -> Self {
        let usage_key = if request.stream && !request.reply.include_usage {
            UsageKey::Omitted
        } else {
            UsageKey::Null
        };
        let thinking = request.conversation.thinking_mode;
        let starts_in_reasoning = request
            .parsing_options
            .thinking_initial_stage
            .is_some_and(ThinkingInitialStage::starts_in_reasoning);
        Self {
            id: id.into(),
            model: model.into(),
            created: unix_now(),
            thinking,
            opens: if thinking && starts_in_reasoning {
                Segment::Reasoning
            } else {
                Segment::Content
            },
            usage_key,
        }
    }

    /// The emitter that writes this stream's chunks.
    pub fn emitter(self) -> ChatEmitter {
        ChatEmitter {
            generator: self,
            system_fingerprint: None,
        }
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
        out.push_str(",\"choices\":[{\"index\":0,\"delta\":");
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
        match (&self.usage, self.usage_key) {
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

/// The Chat emitter: one chunk per processor call.
#[derive(Debug, Clone)]
pub struct ChatEmitter {
    generator: ChatCompletionChunkGenerator,
    system_fingerprint: Option<Arc<str>>,
}

impl ChatEmitter {
    /// The generator's thinking mode.
    pub fn thinking(&self) -> bool {
        self.generator.thinking
    }

    fn chunk(&self, delta: Delta) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.generator.id.clone(),
            created: self.generator.created,
            model: self.generator.model.clone(),
            system_fingerprint: self.system_fingerprint.clone(),
            thinking: self.generator.thinking,
            delta,
            logprobs: None,
            finish_reason: None,
            usage: None,
            usage_key: self.generator.usage_key,
        }
    }
}

impl Emitter for ChatEmitter {
    type Event = ChatCompletionChunk;

    fn start(
        &mut self,
        _prompt: PromptUsage,
        system_fingerprint: Option<&str>,
        out: &mut Vec<ChatCompletionChunk>,
    ) {
        self.system_fingerprint = system_fingerprint.map(Arc::from);
        out.push(self.chunk(Delta::Role(self.generator.opens)));
    }

    fn text(
        &mut self,
        segment: Segment,
        text: &str,
        logprobs: Option<&[TokenLogprob]>,
        out: &mut Vec<ChatCompletionChunk>,
    ) {
        let delta = match segment {
            Segment::Reasoning => Delta::Reasoning(text.to_owned()),
            Segment::Content => Delta::Content(text.to_owned()),
        };
        let mut chunk = self.chunk(delta);
        chunk.logprobs = logprobs
            .filter(|l| !l.is_empty())
            .map(|l| (segment, l.to_vec()));
        out.push(chunk);
    }

    fn tool_call_start(
        &mut self,
        index: usize,
        id: &str,
        name: &str,
        out: &mut Vec<ChatCompletionChunk>,
    ) {
        out.push(self.chunk(Delta::ToolCallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
        }));
    }

    fn tool_call_arguments(
        &mut self,
        index: usize,
        fragment: &str,
        out: &mut Vec<ChatCompletionChunk>,
    ) {
        out.push(self.chunk(Delta::ToolCallArguments {
            index,
            fragment: fragment.to_owned(),
        }));
    }

    fn tool_call_end(&mut self, _index: usize, _out: &mut Vec<ChatCompletionChunk>) {}

    fn finish(
        &mut self,
        completion: &Completion,
        tool_calls: bool,
        usage: &Usage,
        out: &mut Vec<ChatCompletionChunk>,
    ) {
        let reason = match completion {
            Completion::Finished(FinishReason::Stop) if tool_calls => "tool_calls",
            Completion::Finished(FinishReason::Stop)
            | Completion::StopSequence(_)
            | Completion::Ended => "stop",
            Completion::Finished(FinishReason::Length) => "length",
            Completion::Finished(FinishReason::ContentFilter) => "content_filter",
        };
        let mut chunk = self.chunk(Delta::Final);
        chunk.finish_reason = Some(reason);
        chunk.usage = Some(ChatUsage {
            prompt_tokens: usage.prompt.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage.prompt.prompt_cache_hit_tokens,
            reasoning_tokens: usage.reasoning_tokens.filter(|_| self.generator.thinking),
        });
        out.push(chunk);
    }
}

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
    choice: Option<Choice>,
    usage: Option<ChatUsage>,
    system_fingerprint: Option<Arc<str>>,
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
            choice: None,
            usage: None,
            system_fingerprint: None,
        }
    }

    /// Fold one chunk in.
    pub fn accumulate(&mut self, chunk: ChatCompletionChunk) {
        if chunk.system_fingerprint.is_some() {
            self.system_fingerprint = chunk.system_fingerprint.clone();
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        let choice = self.choice.get_or_insert_with(Choice::default);
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
        if let Some(choice) = &self.choice {
            write_choice(&mut out, choice);
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

    /// Chat SSE events are unnamed `data:` lines.
    pub fn sse_event_name(_chunk: &ChatCompletionChunk) -> Option<&'static str> {
        None
    }

    /// The data of the terminal SSE message.
    pub fn sse_done_data() -> Option<&'static str> {
        Some("[DONE]")
    }
}

fn write_choice(out: &mut String, choice: &Choice) {
    out.push_str("{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":");
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

fn push_usage(out: &mut String, usage: &ChatUsage) {
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
    push_logprob(out, logprob);
    out.push_str(",\"bytes\":");
    push_bytes(out, bytes);
}

fn push_logprobs(out: &mut String, entries: &[TokenLogprob]) {
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

/// Logprobs are single precision in the reference: `-0.30000001192092896` prints `-0.3`;
/// a non-finite value prints `null`.
pub fn push_logprob(out: &mut String, value: f64) {
    let value = value as f32;
    out.push_str(&serde_json::to_string(&value).unwrap_or_else(|_| "null".to_owned()));
}

fn push_bytes(out: &mut String, bytes: &[u8]) {
    out.push('[');
    for (n, byte) in bytes.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        let _ = write!(out, "{byte}");
    }
    out.push(']');
}

/// A JSON string literal (serde_json's escaping).
pub fn push_str(out: &mut String, text: &str) {
    out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned()));
}

fn push_opt_str(out: &mut String, text: Option<&str>) {
    match text {
        Some(text) => push_str(out, text),
        None => out.push_str("null"),
    }
}
