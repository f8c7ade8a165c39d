//! The Chat emitter (`tests/chat_reply.rs`): one chunk per processor call, the first one
//! announcing the segment the stream opens with, the last one carrying the finish reason and
//! the usage.

use std::sync::Arc;

use deepseek_model::{ConversationRequest, ThinkingInitialStage};
use deepseek_stream::emit::{Completion, Emitter, FinishReason, PromptUsage, TokenLogprob, Usage};
use deepseek_stream::Segment;

use super::events::{ChatCompletionChunk, ChatUsage, Delta, UsageKey};
use crate::clock;

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
    /// The choice this stream is (0 unless the request asked for several).
    pub choice: usize,
    /// One choice of several: its usage is held back for the usage chunk of them all.
    pub one_of_several: bool,
}

impl ChatCompletionChunkGenerator {
    /// This generator as choice `index` of several (a request's `n`): every chunk names
    /// the choice, and the final chunk's usage is held for the chunk reporting the usage of
    /// all choices (`ChatCompletionResponse::usage_chunk_json`).
    pub fn with_choice(mut self, index: usize) -> Self {
        self.choice = index;
        self.one_of_several = true;
        self
    }

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
            created: clock::unix_seconds(),
            thinking,
            opens: if thinking && starts_in_reasoning {
                Segment::Reasoning
            } else {
                Segment::Content
            },
            usage_key,
            choice: 0,
            one_of_several: false,
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

/// The Chat emitter: one chunk per processor call.
#[derive(Debug, Clone)]
pub struct ChatEmitter {
    generator: ChatCompletionChunkGenerator,
    system_fingerprint: Option<Arc<str>>,
}

impl ChatEmitter {
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
            choice: self.generator.choice,
            usage_held: self.generator.one_of_several,
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
