//! The stream processor (`tests/processor.rs`): one response's lifecycle around
//! the [`Parser`]. It takes the backend's chunks (ready, text, token ids, finish), turns token
//! ids into text through a caller-supplied [`Vocabulary`], counts usage, gives tool calls
//! their ids, carries logprobs to the text they produced, and drives a protocol [`Emitter`].
//!
//! Token input: each id becomes its bytes, a special-token symbol (an added token spelled
//! like one of the options' special tokens: `</think>`, `｜DSML｜`, …), another added token, or
//! nothing (unknown ids). The [`Detokenizer`] releases a chunk's pieces once its end is a
//! complete character, and the parser gets them in one push ([`Parser::push_tokens`]), so a
//! special token is a symbol there and spelled-out markers in ordinary tokens stay text, as in
//! the reference. Logprobs are attributed by origin: the detokenizer says which tokens made
//! each decoded piece (held tokens of an incomplete character go with the piece that
//! completes it; ids that decode to nothing go with the next piece), the parser says which
//! piece each text event came from, and the first event of a piece carries the logprobs of
//! all its tokens. A piece the parser swallows whole (a marker, dropped newlines) drops them.
//!
//! Usage (§10.8): completion tokens are `token_count` of text chunks plus the ids of token
//! chunks once their text came out (wrapping at 2^64, as the reference's counters do); with
//! a vocabulary, reasoning tokens are the reasoning
//! text encoded again (which is how the reference counts them). Tool-call ids (§10.9) take the
//! `ET_` infix when the generator is in thinking mode and no reasoning text came before.
//!
//! [`EngineChecks`] (off by default, so the processor behaves as the reference's does) are for
//! an engine that is not trusted: output past `max_tokens` is cut there and ends the stream
//! with `length`, an id outside the vocabulary fails the stream, and reasoning tokens are the
//! engine's ids that made reasoning text (text chunks: their text encoded again), never more
//! than the completion tokens.

use std::collections::VecDeque;
use std::fmt;

use deepseek_model::{ParsingOptions, SpecialToken};

use crate::emit::{
    Completion, Emitter, FinishReason, PromptUsage, TokenLogprob, TopLogprob, Usage,
};
use crate::{Decoded, Detokenizer, ParseEvent, Parser, Segment, Token};

/// What the caller knows about the model's vocabulary: the bytes of each id, which ids are
/// added-vocabulary tokens, and how many tokens a text encodes to (for reasoning tokens).
pub trait Vocabulary {
    /// The bytes `id` decodes to (special tokens: their spelling); `None` for unknown ids.
    fn token_bytes(&self, id: u32) -> Option<&[u8]>;
    /// Whether `id` is in the added vocabulary (special or not).
    fn is_added(&self, id: u32) -> bool;
    /// The number of tokens `text` encodes to with the full vocabulary.
    fn count_tokens(&self, text: &str) -> u64;
}

/// The logprobs supplied with one token id: its own, and its top alternatives.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkLogprob {
    pub logprob: f64,
    pub top: Vec<(u32, f64)>,
}

/// One chunk from the inference backend.
#[derive(Debug, Clone, PartialEq)]
pub enum InferenceChunk {
    /// The prompt was accepted; opens the stream.
    Ready {
        prompt_usage: PromptUsage,
        system_fingerprint: Option<String>,
    },
    /// Generated text, and how many tokens it stands for.
    Text { content: String, token_count: u64 },
    /// Generated token ids, optionally with one logprob entry per id.
    Tokens {
        token_ids: Vec<u32>,
        logprobs: Option<Vec<ChunkLogprob>>,
    },
    /// The backend stopped.
    Finish(FinishReason),
}

/// Why a call on the processor failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamError {
    /// A chunk was pushed after the stream completed.
    Finished,
    /// The processor was closed (by `close()` or an earlier error).
    Closed,
    /// A token chunk arrived but no vocabulary was given.
    NoTokenizer,
    /// The logprob list does not have one entry per token id.
    LogprobCount { logprobs: usize, token_ids: usize },
    /// With [`EngineChecks`]: a token id the vocabulary does not have.
    UnknownTokenId(u32),
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Finished => f.write_str("stream processor has finished"),
            Self::Closed => f.write_str("stream processor is closed"),
            Self::NoTokenizer => f.write_str("token chunk received without a tokenizer"),
            Self::LogprobCount {
                logprobs,
                token_ids,
            } => write!(
                f,
                "invalid log probabilities: {logprobs} log probabilities for {token_ids} token IDs"
            ),
            Self::UnknownTokenId(id) => write!(f, "token id {id} is not in the vocabulary"),
        }
    }
}

impl std::error::Error for StreamError {}

/// What the processor checks of an engine's output it does not trust (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineChecks {
    /// The output tokens the request allows (`None`: no cap).
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Finished,
    Closed,
}

/// One response's stream processor. Not for sharing across threads: every call mutates it.
pub struct StreamProcessor<E: Emitter, V: Vocabulary> {
    emitter: E,
    parser: Parser,
    vocabulary: Option<V>,
    /// The generator's thinking mode (decides the `ET_` infix of tool-call ids).
    thinking: bool,
    state: State,
    started: bool,
    prompt: PromptUsage,
    completion_tokens: u64,
    detokenizer: Detokenizer,
    /// One entry per token the detokenizer has not assigned to a released piece yet: its
    /// logprob, if the chunk carried logprobs.
    unassigned: VecDeque<Option<TokenLogprob>>,
    /// Logprobs of pieces given to the parser whose first text event has not come yet, by
    /// origin (increasing).
    by_origin: VecDeque<(u64, Vec<TokenLogprob>)>,
    /// The options' special-token spellings (an added token spelled so is a parser symbol).
    specials: Vec<(String, SpecialToken)>,
    /// Reasoning text so far, for the reasoning-token count (kept only with a vocabulary;
    /// with engine checks, only the reasoning of text chunks).
    reasoning: String,
    /// Set by [`StreamProcessor::check_engine`].
    checks: Option<EngineChecks>,
    /// With engine checks: output tokens received (the cap's count).
    received: u64,
    /// With engine checks: reasoning tokens counted from ids.
    reasoning_ids: u64,
    /// With engine checks: the input pieces that may still produce text, by origin
    /// (increasing), each with its token count (`None` for a text chunk).
    piece_tokens: VecDeque<(u64, Option<u64>)>,
    reasoning_emitted: bool,
    tool_calls: usize,
    tool_call_ids: Vec<String>,
    ids: IdSource,
    events: Vec<ParseEvent>,
}

impl<E: Emitter, V: Vocabulary> fmt::Debug for StreamProcessor<E, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamProcessor")
            .field("state", &self.state)
            .field("started", &self.started)
            .field("completion_tokens", &self.completion_tokens)
            .field("tool_calls", &self.tool_calls)
            .finish_non_exhaustive()
    }
}

impl<E: Emitter, V: Vocabulary> StreamProcessor<E, V> {
    /// A processor for one response. `thinking` is the generator's thinking mode.
    pub fn new(
        emitter: E,
        options: &ParsingOptions,
        thinking: bool,
        vocabulary: Option<V>,
    ) -> Self {
        Self {
            emitter,
            parser: Parser::new(options),
            vocabulary,
            thinking,
            state: State::Open,
            started: false,
            prompt: PromptUsage::default(),
            completion_tokens: 0,
            detokenizer: Detokenizer::new(),
            unassigned: VecDeque::new(),
            by_origin: VecDeque::new(),
            specials: SpecialToken::ALL
                .iter()
                .map(|&special| (options.special_tokens.get(special).to_owned(), special))
                .filter(|(text, _)| !text.is_empty())
                .collect(),
            reasoning: String::new(),
            checks: None,
            received: 0,
            reasoning_ids: 0,
            piece_tokens: VecDeque::new(),
            reasoning_emitted: false,
            tool_calls: 0,
            tool_call_ids: Vec::new(),
            ids: IdSource::new(),
            events: Vec::new(),
        }
    }

    /// Replace the source of tool-call ids' random parts (tests use a fixed seed).
    #[must_use]
    pub fn with_id_seed(mut self, seed: u64) -> Self {
        self.ids = IdSource::seeded(seed);
        self
    }

    /// Check the engine's output from now on (see [`EngineChecks`]); call it before the
    /// first chunk.
    pub fn check_engine(&mut self, checks: EngineChecks) {
        self.checks = Some(checks);
    }

    /// What ending the output now would flush, the processor left as it is (see
    /// [`Parser::held`]): the text and tool-call pieces the parser is holding back.
    pub fn held_back(&self) -> Vec<ParseEvent> {
        if self.state != State::Open {
            return Vec::new();
        }
        self.parser.held()
    }

    /// True once the stream completed (finish chunk, stop sequence, or `finish()`).
    pub fn finished(&self) -> bool {
        self.state == State::Finished
    }

    /// The tool-call ids generated so far, by call index.
    pub fn tool_call_ids(&self) -> &[String] {
        &self.tool_call_ids
    }

    /// The emitter (for protocol-specific inspection).
    pub fn emitter(&self) -> &E {
        &self.emitter
    }

    /// Process one chunk, appending the protocol events it produced. An error closes the
    /// processor.
    pub fn push(
        &mut self,
        chunk: InferenceChunk,
        out: &mut Vec<E::Event>,
    ) -> Result<(), StreamError> {
        match self.state {
            State::Closed => return Err(StreamError::Closed),
            State::Finished => return Err(StreamError::Finished),
            State::Open => {}
        }
        match chunk {
            InferenceChunk::Ready {
                prompt_usage,
                system_fingerprint,
            } => {
                if !self.started {
                    self.started = true;
                    self.prompt = prompt_usage;
                    self.emitter
                        .start(prompt_usage, system_fingerprint.as_deref(), out);
                }
            }
            InferenceChunk::Text {
                content,
                token_count,
            } => {
                let (token_count, over) = self.within_cap(token_count);
                self.completion_tokens = self.completion_tokens.wrapping_add(token_count);
                if self.checks.is_some() {
                    self.piece_tokens
                        .push_back((self.parser.next_origin(), None));
                }
                self.parse_text(&content, out);
                self.end_past_cap(over, out);
            }
            InferenceChunk::Tokens {
                mut token_ids,
                mut logprobs,
            } => {
                let Some(vocabulary) = &self.vocabulary else {
                    self.state = State::Closed;
                    return Err(StreamError::NoTokenizer);
                };
                if let Some(list) = &logprobs {
                    if list.len() != token_ids.len() {
                        self.state = State::Closed;
                        return Err(StreamError::LogprobCount {
                            logprobs: list.len(),
                            token_ids: token_ids.len(),
                        });
                    }
                }
                if self.checks.is_some() {
                    let unknown = token_ids
                        .iter()
                        .find(|&&id| vocabulary.token_bytes(id).is_none());
                    if let Some(&id) = unknown {
                        self.state = State::Closed;
                        return Err(StreamError::UnknownTokenId(id));
                    }
                }
                let (kept, over) = self.within_cap(token_ids.len() as u64);
                let kept = usize::try_from(kept).unwrap_or(usize::MAX);
                token_ids.truncate(kept);
                if let Some(list) = &mut logprobs {
                    list.truncate(kept);
                }
                self.tokens(&token_ids, logprobs.as_deref(), out);
                self.end_past_cap(over, out);
            }
            InferenceChunk::Finish(reason) => {
                self.complete(Completion::Finished(reason), out);
            }
        }
        Ok(())
    }

    /// End the stream without a finish chunk (a plain stop). Returns nothing once finished.
    pub fn finish(&mut self, out: &mut Vec<E::Event>) -> Result<(), StreamError> {
        match self.state {
            State::Closed => Err(StreamError::Closed),
            State::Finished => Ok(()),
            State::Open => {
                self.complete(Completion::Ended, out);
                Ok(())
            }
        }
    }

    /// Replace the prompt-side usage the completion reports (an engine that counts cached
    /// prompt tokens only at the end of its output). Opening events keep what `ready` said.
    pub fn update_prompt_usage(&mut self, prompt: PromptUsage) {
        self.prompt = prompt;
    }

    /// Release the processor without finishing: later calls fail with "is closed".
    pub fn close(&mut self) {
        self.state = State::Closed;
    }

    /// Of `count` new output tokens, how many the cap leaves (all without one), and whether
    /// the engine went past it.
    fn within_cap(&mut self, count: u64) -> (u64, bool) {
        let Some(max) = self.checks.and_then(|checks| checks.max_tokens) else {
            return (count, false);
        };
        let kept = count.min(max.saturating_sub(self.received));
        self.received += kept;
        (kept, kept < count)
    }

    /// The engine went past the cap: the output ends there, as if it had stopped for length.
    fn end_past_cap(&mut self, over: bool, out: &mut Vec<E::Event>) {
        if over && self.state == State::Open {
            self.complete(Completion::Finished(FinishReason::Length), out);
        }
    }

    fn ensure_started(&mut self, out: &mut Vec<E::Event>) {
        if !self.started {
            self.started = true;
            self.emitter.start(PromptUsage::default(), None, out);
        }
    }

    /// Decode one token chunk and parse what it released, in one parser push. Each id maps to
    /// its bytes, to a special-token symbol (an added token spelled like one of the options'
    /// special tokens), to another added token, or to nothing (unknown ids). The detokenizer
    /// releases everything up to the chunk's last added token, and the rest unless it ends
    /// in an incomplete character.
    fn tokens(&mut self, ids: &[u32], logprobs: Option<&[ChunkLogprob]>, out: &mut Vec<E::Event>) {
        let Some(vocabulary) = &self.vocabulary else {
            return;
        };
        let mut tokens: Vec<Token<'_>> = Vec::with_capacity(ids.len());
        for (k, &id) in ids.iter().enumerate() {
            self.unassigned.push_back(
                logprobs
                    .and_then(|list| list.get(k))
                    .map(|entry| token_logprob(vocabulary, id, entry)),
            );
            tokens.push(match vocabulary.token_bytes(id) {
                None => Token::Unknown,
                Some(bytes) if !vocabulary.is_added(id) => Token::Bytes(bytes),
                Some(bytes) => {
                    let spelling = std::str::from_utf8(bytes).unwrap_or_default();
                    match self.specials.iter().find(|(text, _)| text == spelling) {
                        Some((_, special)) => Token::Special(*special),
                        None => Token::Added(spelling),
                    }
                }
            });
        }
        let pieces = self.detokenizer.push_chunk_counted(&tokens);
        if pieces.is_empty() {
            return;
        }
        self.ensure_started(out);
        let first = self.parser.next_origin();
        if self.checks.is_some() {
            for ((_, count), origin) in pieces.iter().zip(first..) {
                self.piece_tokens.push_back((origin, Some(*count as u64)));
            }
        }
        for ((_, count), origin) in pieces.iter().zip(first..) {
            let count = (*count).min(self.unassigned.len());
            let logprobs: Vec<TokenLogprob> = self.unassigned.drain(..count).flatten().collect();
            if !logprobs.is_empty() {
                self.by_origin.push_back((origin, logprobs));
            }
        }
        let decoded: Vec<Decoded<'_>> =
            pieces.iter().map(|(piece, _)| piece.as_decoded()).collect();
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        self.parser.push_tokens(&decoded, &mut events);
        // A piece's tokens count once it is parsed; a stop sequence ends the count with the
        // piece it matched in (the tokens after it were never generated, as far as usage goes).
        let last = self.parser.stopped_at().unwrap_or(u64::MAX);
        let released: usize = pieces
            .iter()
            .zip(first..)
            .take_while(|(_, origin)| *origin <= last)
            .map(|((_, count), _)| count)
            .sum();
        self.completion_tokens = self.completion_tokens.wrapping_add(released as u64);
        self.dispatch(&events, out);
        self.events = events;
        self.forget_settled_origins();
    }

    /// The stream opens here if no `ready` came: on the first text that reaches the parser.
    fn parse_text(&mut self, text: &str, out: &mut Vec<E::Event>) {
        self.ensure_started(out);
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        self.parser.push(text, &mut events);
        self.dispatch(&events, out);
        self.events = events;
        self.forget_settled_origins();
    }

    /// Drop the logprobs of pieces that can produce no more events (swallowed by the parser).
    fn forget_settled_origins(&mut self) {
        let oldest = self.parser.oldest_pending_origin();
        while self
            .by_origin
            .front()
            .is_some_and(|(origin, _)| *origin < oldest)
        {
            self.by_origin.pop_front();
        }
        while self
            .piece_tokens
            .front()
            .is_some_and(|(origin, _)| *origin < oldest)
        {
            self.piece_tokens.pop_front();
        }
    }

    /// Count a reasoning text event of piece `origin`: with engine checks, a token piece's
    /// tokens once (its first reasoning event), a text chunk's text to encode again at the
    /// end; without, all the text (the reference's count).
    fn count_reasoning(&mut self, origin: u64, text: &str) {
        if self.vocabulary.is_none() {
            return;
        }
        if self.checks.is_none() {
            self.reasoning.push_str(text);
            return;
        }
        while self.piece_tokens.front().is_some_and(|(o, _)| *o < origin) {
            self.piece_tokens.pop_front();
        }
        match self.piece_tokens.front_mut() {
            Some((o, Some(count))) if *o == origin => {
                self.reasoning_ids += *count;
                *count = 0;
            }
            Some((o, None)) if *o == origin => self.reasoning.push_str(text),
            _ => {}
        }
    }

    /// Turn parser events into emitter calls; a stop sequence completes the stream.
    fn dispatch(&mut self, events: &[ParseEvent], out: &mut Vec<E::Event>) {
        for event in events {
            match event {
                ParseEvent::Text {
                    segment,
                    text,
                    origin,
                } => {
                    if text.is_empty() {
                        continue;
                    }
                    if *segment == Segment::Reasoning {
                        self.reasoning_emitted = true;
                        self.count_reasoning(*origin, text);
                    }
                    let logprobs = self.logprobs_of(*origin);
                    self.emitter.text(*segment, text, logprobs.as_deref(), out);
                }
                ParseEvent::ToolCallStart { index, name } => {
                    let id = self
                        .ids
                        .call_id(*index, self.thinking && !self.reasoning_emitted);
                    self.emitter.tool_call_start(*index, &id, name, out);
                    self.tool_call_ids.push(id);
                    self.tool_calls += 1;
                }
                ParseEvent::ToolCallArguments { index, fragment } => {
                    if !fragment.is_empty() {
                        self.emitter.tool_call_arguments(*index, fragment, out);
                    }
                }
                ParseEvent::ToolCallEnd { index } => self.emitter.tool_call_end(*index, out),
                ParseEvent::StopSequence { sequence } => {
                    self.complete(Completion::StopSequence(sequence.clone()), out);
                    return;
                }
            }
        }
    }

    /// The logprobs of piece `origin`, the first time one of its events asks (pieces before
    /// it produced no text event, so theirs are dropped).
    fn logprobs_of(&mut self, origin: u64) -> Option<Vec<TokenLogprob>> {
        while self.by_origin.front().is_some_and(|(o, _)| *o < origin) {
            self.by_origin.pop_front();
        }
        match self.by_origin.front() {
            Some((o, _)) if *o == origin => self.by_origin.pop_front().map(|(_, l)| l),
            _ => None,
        }
    }

    /// Flush the parser, emit the closing events, and mark the stream finished.
    fn complete(&mut self, completion: Completion, out: &mut Vec<E::Event>) {
        self.ensure_started(out);
        self.state = State::Finished;
        if !matches!(completion, Completion::StopSequence(_)) {
            let mut events = std::mem::take(&mut self.events);
            events.clear();
            self.parser.finish(&mut events);
            // A stop sequence cannot match while flushing; dispatch sees text and call ends.
            self.dispatch(&events, out);
            self.events = events;
        }
        let reasoning_tokens = self.vocabulary.as_ref().map(|vocabulary| {
            let encoded = if self.reasoning.is_empty() {
                0
            } else {
                vocabulary.count_tokens(&self.reasoning)
            };
            match self.checks {
                None => encoded,
                Some(_) => (self.reasoning_ids + encoded).min(self.completion_tokens),
            }
        });
        let usage = Usage {
            prompt: self.prompt,
            completion_tokens: self.completion_tokens,
            reasoning_tokens,
        };
        self.emitter
            .finish(&completion, self.tool_calls > 0, &usage, out);
        self.by_origin.clear();
        self.unassigned.clear();
        self.piece_tokens.clear();
    }
}

/// The logprob entry of one token, with its decoded text and bytes.
fn token_logprob<V: Vocabulary>(vocabulary: &V, id: u32, entry: &ChunkLogprob) -> TokenLogprob {
    let (token, bytes) = describe(vocabulary, id);
    let top_logprobs = entry
        .top
        .iter()
        .map(|&(top_id, logprob)| {
            let (token, bytes) = describe(vocabulary, top_id);
            TopLogprob {
                token,
                logprob,
                bytes,
            }
        })
        .collect();
    TokenLogprob {
        token,
        logprob: entry.logprob,
        bytes,
        top_logprobs,
    }
}

/// A token's text (invalid UTF-8 as `\xNN` escapes) and bytes; empty when unknown.
fn describe<V: Vocabulary>(vocabulary: &V, id: u32) -> (String, Vec<u8>) {
    let bytes = vocabulary
        .token_bytes(id)
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    (escape_invalid_utf8(&bytes), bytes)
}

/// Bytes as text; bytes that are not valid UTF-8 as a whole are written `\xNN` each, the
/// valid ones too (the reference spells the token ` \xd0` as `\x20\xd0`).
pub fn escape_invalid_utf8(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => {
            use std::fmt::Write as _;
            let mut text = String::with_capacity(bytes.len() * 4);
            for byte in bytes {
                let _ = write!(text, "\\x{byte:02x}");
            }
            text
        }
    }
}

/// Tool-call ids: `call_<NN>_[ET_]<20 alphanumerics><4 digits>` (`tests/processor.rs`,
/// `tool_call_ids_have_the_reference_shape`).
#[derive(Debug, Clone)]
struct IdSource {
    state: u64,
}

const ID_ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl IdSource {
    /// Seeded from the process's random hash keys and the clock.
    fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        hasher.write_u128(nanos);
        Self::seeded(hasher.finish())
    }

    fn seeded(seed: u64) -> Self {
        Self {
            state: seed ^ 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn call_id(&mut self, index: usize, empty_thinking: bool) -> String {
        let mut id = format!("call_{index:02}_");
        if empty_thinking {
            id.push_str("ET_");
        }
        for _ in 0..20 {
            let pick = (self.next() % ID_ALPHABET.len() as u64) as usize;
            id.push(char::from(ID_ALPHABET.get(pick).copied().unwrap_or(b'0')));
        }
        for _ in 0..4 {
            id.push(char::from(b'0' + (self.next() % 10) as u8));
        }
        id
    }
}
