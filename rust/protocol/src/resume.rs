//! Parsing a body that repeats an earlier one up to some message: the next turn of an agent
//! conversation, which a stateless client (Chat Completions, Messages) sends whole every time.
//! Only what follows the shared messages is parsed.
//!
//! A parsed body is [`Kept`]: where its top-level `messages` array opens, where each message
//! ends, and each message's typed value. The next body of the conversation is compared with
//! the earlier one byte by byte; every message that ends inside the shared bytes is reused as
//! it was parsed, and the rest is parsed in pieces, each by the parser a cold parse uses: every
//! new message alone, and the other fields as the body with its messages array written `[]`.
//! The result equals a cold parse of the body, or resuming gives up and the caller parses the
//! body cold, which also reports any error exactly as it always does:
//! - a JSON value means the same wherever it stands, so equal bytes give equal messages;
//! - every byte after the shared messages is checked: the punctuation between messages and
//!   fields by the scan here, each piece by the parser;
//! - a message alone nests two levels less than inside the body (the object and the array), so
//!   one nested deeper than the limit less two is left to the cold parse;
//! - a body whose top-level keys repeat `messages` or are written with escapes is neither kept
//!   nor resumed (a cold parse keeps the last of repeated keys);
//! - anything else the scan does not expect (a body that is not an object, an error in a
//!   piece) is left to the cold parse;
//! - so is a body that would reuse less than half of itself (an early message edited): parsing
//!   it whole is as fast.
//!
//! Worked example: `{"messages":[A,B],"model":"m"}` was parsed and kept (ends after `A` and
//! `B`). The next body is `{"messages":[A,B,C,D],"model":"m"}`: it shares every byte through
//! `B`, so `A` and `B` are reused; `C` and `D` are parsed alone, and `{"messages":[],"model":
//! "m"}` gives the other fields.
//!
//! A reused message is the earlier body's own ([`Shared`]), not a copy, and it remembers what
//! it was converted to: the next turn's conversation then holds the earlier turn's messages
//! themselves, so converting and rendering it copy nothing of what both share.

use std::ops::{Deref, Range};
use std::sync::{Arc, Mutex, PoisonError};

use deepseek_model::{Message, ModelVersion, WebSearchBehavior};
use serde::de::{Deserialize, DeserializeOwned, Deserializer};

use crate::intake::{self, closing_quote, nesting_exceeds};
use crate::{chat, messages};

/// A request's messages, each shared by the later bodies of its conversation that repeat it.
pub(crate) type SharedMessages<M> = Vec<Arc<Shared<M>>>;

/// A request message as parsed (`M`, its wire shape), and what it last converted to while
/// shared. Parsing is `M`'s own: the same value, the same errors (and it prints as `M`).
pub(crate) struct Shared<M> {
    message: M,
    converted: Mutex<Option<Conversion>>,
}

/// A message's conversion and everything besides the message that it depended on.
#[derive(Debug)]
struct Conversion {
    index: usize,
    version: ModelVersion,
    image_token: String,
    thinking_mode: bool,
    web_search: Option<WebSearchBehavior>,
    /// What it converts to, in order (nothing: a system message without text).
    messages: Vec<Arc<Message>>,
}

/// What a message's conversion depends on besides the message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConversionKey<'a> {
    /// Its place in the request (errors and image sources name it).
    pub index: usize,
    pub version: ModelVersion,
    pub image_token: &'a str,
    /// The reasoning-history rule applied to it.
    pub thinking_mode: bool,
    /// Messages: what becomes of server-tool blocks (`None` for Chat).
    pub web_search: Option<WebSearchBehavior>,
}

impl Conversion {
    fn is_for(&self, key: &ConversionKey<'_>) -> bool {
        self.index == key.index
            && self.version == key.version
            && self.image_token == key.image_token
            && self.thinking_mode == key.thinking_mode
            && self.web_search == key.web_search
    }
}

/// A shared message converted for the first time (under its key): its index in the request,
/// and where its conversion stands among the request's converted messages.
pub(crate) struct FirstConverted<M> {
    pub message: Arc<Shared<M>>,
    pub index: usize,
    pub places: Range<usize>,
}

/// Remember the conversion of messages converted for the first time, as `messages` holds it
/// once the request's rules that change messages have run (the reasoning history); `key` gives
/// each index's key.
pub(crate) fn remember<'a, M>(
    first: Vec<FirstConverted<M>>,
    messages: &[Arc<Message>],
    key: impl Fn(usize) -> ConversionKey<'a>,
) {
    for converted in first {
        if let Some(conversion) = messages.get(converted.places) {
            converted
                .message
                .remember(&key(converted.index), conversion.to_vec());
        }
    }
}

impl<M> Shared<M> {
    pub(crate) fn new(message: M) -> Self {
        Self {
            message,
            converted: Mutex::new(None),
        }
    }

    /// Append what this message converted to under `key` to `out`, if that is its last
    /// conversion remembered; whether it was.
    pub(crate) fn recall(&self, key: &ConversionKey<'_>, out: &mut Vec<Arc<Message>>) -> bool {
        let conversion = self
            .converted
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match conversion.as_ref() {
            Some(conversion) if conversion.is_for(key) => {
                out.extend(conversion.messages.iter().cloned());
                true
            }
            _ => false,
        }
    }

    /// Remember that this message converts to `messages` under `key` (a message converts the
    /// same every time under its key; under another, it is converted again).
    fn remember(&self, key: &ConversionKey<'_>, messages: Vec<Arc<Message>>) {
        *self
            .converted
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Conversion {
            index: key.index,
            version: key.version,
            image_token: key.image_token.to_owned(),
            thinking_mode: key.thinking_mode,
            web_search: key.web_search,
            messages,
        });
    }
}

impl<M: Clone> Shared<M> {
    /// The message itself when nothing else holds it, a copy otherwise (`Err`: shared, with
    /// the copy, so that its conversion can be remembered).
    pub(crate) fn take(this: Arc<Self>) -> Result<M, (Arc<Self>, M)> {
        Arc::try_unwrap(this)
            .map(|shared| shared.message)
            .map_err(|this| {
                let copy = this.message.clone();
                (this, copy)
            })
    }
}

impl<M: std::fmt::Debug> std::fmt::Debug for Shared<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.message.fmt(f)
    }
}

impl<M> Deref for Shared<M> {
    type Target = M;

    fn deref(&self) -> &M {
        &self.message
    }
}

impl<'de, M: Deserialize<'de>> Deserialize<'de> for Shared<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        M::deserialize(deserializer).map(Self::new)
    }
}

/// The deepest nesting a cold parse accepts (serde_json's recursion limit).
pub const PARSER_DEPTH: usize = 127;

/// A protocol's typed request whose messages are parsed apart from the rest.
pub(crate) trait Wire: DeserializeOwned {
    type Message: DeserializeOwned;
    fn messages(&self) -> &[Arc<Shared<Self::Message>>];
    fn messages_mut(&mut self) -> &mut SharedMessages<Self::Message>;
    fn wrap(messages: SharedMessages<Self::Message>) -> KeptMessages;
    fn unwrap(kept: &KeptMessages) -> Option<&[Arc<Shared<Self::Message>>]>;
}

/// A protocol's request type `$request` resumes: its typed shape `$wire` keeps its messages
/// (`$message`s) as `KeptMessages::$variant`, and `$request` gets `keep` and `resume`.
macro_rules! resumable {
    ($request:ident, $wire:ty, $message:ty, $variant:ident) => {
        impl $crate::resume::Wire for $wire {
            type Message = $message;

            fn messages(&self) -> &[std::sync::Arc<$crate::resume::Shared<Self::Message>>] {
                &self.messages
            }

            fn messages_mut(&mut self) -> &mut $crate::resume::SharedMessages<Self::Message> {
                &mut self.messages
            }

            fn wrap(
                messages: $crate::resume::SharedMessages<Self::Message>,
            ) -> $crate::resume::KeptMessages {
                $crate::resume::KeptMessages::$variant(messages)
            }

            fn unwrap(
                kept: &$crate::resume::KeptMessages,
            ) -> Option<&[std::sync::Arc<$crate::resume::Shared<Self::Message>>]> {
                match kept {
                    $crate::resume::KeptMessages::$variant(messages) => Some(messages),
                    _ => None,
                }
            }
        }

        impl $request {
            /// What to keep of this request, parsed cold from `body`, for the next body of its
            /// conversation (`None` when `body` is not laid out as resuming needs).
            pub fn keep(&self, body: &[u8]) -> Option<$crate::resume::Kept> {
                $crate::resume::keep(&self.wire, body)
            }

            /// Parse `body` reusing the messages it shares with `earlier_body`, which was
            /// parsed into `earlier`; nesting at most `limit` deep. Equal to a cold parse;
            /// `None` when `body` is to be parsed cold (see [`crate::resume`]).
            pub fn resume(
                body: &[u8],
                earlier_body: &[u8],
                earlier: &$crate::resume::Kept,
                limit: usize,
            ) -> Option<(Self, $crate::resume::Kept)> {
                $crate::resume::resume(body, earlier_body, earlier, limit)
                    .map(|(wire, kept)| (Self { wire }, kept))
            }
        }
    };
}
pub(crate) use resumable;

/// Each protocol's kept messages.
#[derive(Debug, Clone)]
pub(crate) enum KeptMessages {
    Chat(SharedMessages<chat::wire::ChatCompletionRequestMessage>),
    Messages(SharedMessages<messages::wire::MessagesMessage>),
}

/// What a parsed body leaves for the next body of its conversation: where its messages are,
/// and their parse.
#[derive(Debug, Clone)]
pub struct Kept {
    layout: Layout,
    messages: KeptMessages,
    reused: usize,
}

impl Kept {
    /// How many leading messages were reused from the earlier body (0 for a cold parse).
    pub fn reused_messages(&self) -> usize {
        self.reused
    }

    /// How many messages the body has.
    pub fn messages(&self) -> usize {
        self.layout.ends.len()
    }

    /// Roughly the bytes held: the messages' JSON size stands for their parse.
    pub fn approx_bytes(&self) -> usize {
        let text = self
            .layout
            .ends
            .last()
            .map_or(0, |end| end.saturating_sub(self.layout.open));
        text + self.layout.ends.len() * (std::mem::size_of::<usize>() + 64)
    }
}

/// Where a body's top-level `messages` array is: the offset of its `[`, and the offset just
/// past each message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    open: usize,
    ends: Vec<usize>,
}

/// How many leading bytes of `body` name its conversation: the top-level fields before
/// `messages` and the first two messages. `None` when the body has fewer, or is not laid out
/// as [`keep`] needs.
pub fn conversation_lead(body: &[u8]) -> Option<usize> {
    scan(body, Some(2))
        .filter(|layout| layout.ends.len() == 2)
        .and_then(|layout| layout.ends.last().copied())
}

/// What to keep of `request`, parsed cold from `body`.
pub(crate) fn keep<W: Wire>(request: &W, body: &[u8]) -> Option<Kept> {
    let layout = scan(body, None)?;
    let messages = request.messages();
    if layout.ends.len() != messages.len() || messages.is_empty() {
        return None;
    }
    Some(Kept {
        layout,
        messages: W::wrap(messages.to_vec()),
        reused: 0,
    })
}

/// Parse `body` reusing the messages it shares with `earlier_body` (parsed into `earlier`),
/// with nesting at most `limit` deep; `None` when the body is to be parsed cold.
pub(crate) fn resume<W: Wire>(
    body: &[u8],
    earlier_body: &[u8],
    earlier: &Kept,
    limit: usize,
) -> Option<(W, Kept)> {
    let kept = W::unwrap(&earlier.messages)?;
    let shared = shared_prefix(body, earlier_body);
    let reused = earlier.layout.ends.partition_point(|&end| end <= shared);
    let open = earlier.layout.open;
    // Reusing less than half of the body is no faster than parsing it whole (each new message
    // is parsed alone and copied for keeping): an early message edited is parsed cold.
    let reused_end = *earlier.layout.ends.get(reused.checked_sub(1)?)?;
    if reused_end - open < body.len() / 2 {
        return None;
    }
    let mut ends = earlier.layout.ends.get(..reused)?.to_vec();
    let mut cursor = Cursor {
        text: body,
        at: *ends.last()?,
        deepest: 0,
    };
    let mut messages = Vec::with_capacity(ends.len() + 4);
    messages.extend_from_slice(kept.get(..reused)?);
    while !cursor.eat(b']') {
        if !cursor.eat(b',') {
            return None;
        }
        let (start, end) = cursor.value()?;
        let piece = body.get(start..end)?;
        if cursor.deepest > limit.checked_sub(2)? {
            return None;
        }
        let message: W::Message = intake::from_value(intake::parse_json(piece).ok()?).ok()?;
        messages.push(Arc::new(Shared::new(message)));
        ends.push(end);
    }
    let close = cursor.at;
    cursor.rest_of_object()?;
    // The other fields: the body with its messages array written `[]`.
    let (head, tail) = (body.get(..open)?, body.get(close..)?);
    let mut rest = Vec::with_capacity(head.len() + 2 + tail.len());
    rest.extend_from_slice(head);
    rest.extend_from_slice(b"[]");
    rest.extend_from_slice(tail);
    if nesting_exceeds(&rest, limit) {
        return None;
    }
    let mut request: W = intake::from_value(intake::parse_json(&rest).ok()?).ok()?;
    *request.messages_mut() = messages.clone();
    let kept = Kept {
        layout: Layout { open, ends },
        messages: W::wrap(messages),
        reused,
    };
    Some((request, kept))
}

/// How many leading bytes `a` and `b` share.
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096; // compared whole (memcmp), then the differing block byte by byte
    let mut at = 0;
    while let (Some(x), Some(y)) = (a.get(at..at + BLOCK), b.get(at..at + BLOCK)) {
        if x != y {
            break;
        }
        at += BLOCK;
    }
    let (x, y) = (
        a.get(at..).unwrap_or_default(),
        b.get(at..).unwrap_or_default(),
    );
    at + x.iter().zip(y).take_while(|(x, y)| x == y).count()
}

/// The layout of a body that is one JSON object with one `messages` array, every top-level key
/// written without escapes: through the first `count` messages (then nothing after them is
/// looked at), or the whole body.
fn scan(body: &[u8], count: Option<usize>) -> Option<Layout> {
    let mut cursor = Cursor {
        text: body,
        at: 0,
        deepest: 0,
    };
    if !cursor.eat(b'{') {
        return None;
    }
    loop {
        let key = cursor.plain_key()?;
        if !cursor.eat(b':') {
            return None;
        }
        if key == b"messages" {
            break;
        }
        cursor.value()?;
        if !cursor.eat(b',') {
            return None;
        }
    }
    cursor.space();
    let open = cursor.at;
    if !cursor.eat(b'[') {
        return None;
    }
    let mut ends = Vec::new();
    if !cursor.eat(b']') {
        loop {
            ends.push(cursor.value()?.1);
            if count == Some(ends.len()) {
                return Some(Layout { open, ends });
            }
            if cursor.eat(b']') {
                break;
            }
            if !cursor.eat(b',') {
                return None;
            }
        }
    }
    if count.is_some() {
        return None;
    }
    cursor.rest_of_object()?;
    Some(Layout { open, ends })
}

/// JSON text crossed value by value without checking the values (the parser does): strings
/// are jumped by [`closing_quote`], containers by counting brackets outside strings.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
    /// How deep the last value crossed nests (as [`nesting_exceeds`] counts).
    deepest: usize,
}

impl<'a> Cursor<'a> {
    fn space(&mut self) {
        while matches!(self.text.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Whether `byte` comes next (after whitespace); if so, it is crossed.
    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let found = self.text.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    /// A string without backslashes: its contents.
    fn plain_key(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let close = closing_quote(self.text, self.at)?;
        let key = self.text.get(self.at..close)?;
        if key.contains(&b'\\') {
            return None;
        }
        self.at = close + 1;
        Some(key)
    }

    /// Cross one value; where it starts and ends.
    fn value(&mut self) -> Option<(usize, usize)> {
        self.space();
        let start = self.at;
        self.deepest = 0;
        match *self.text.get(self.at)? {
            b'"' => self.at = closing_quote(self.text, self.at + 1)? + 1,
            b'[' | b'{' => {
                let mut depth = 0usize;
                loop {
                    let byte = *self.text.get(self.at)?;
                    self.at += 1;
                    match byte {
                        b'"' => self.at = closing_quote(self.text, self.at)? + 1,
                        b'[' | b'{' => {
                            depth += 1;
                            self.deepest = self.deepest.max(depth);
                        }
                        b']' | b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {
                // A number or a literal: up to the next delimiter.
                while !matches!(
                    self.text.get(self.at),
                    None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.at += 1;
                }
                if self.at == start {
                    return None;
                }
            }
        }
        Some((start, self.at))
    }

    /// The fields after the messages array, none of them `messages`, to the end of the text.
    fn rest_of_object(&mut self) -> Option<()> {
        while !self.eat(b'}') {
            if !self.eat(b',') {
                return None;
            }
            if self.plain_key()? == b"messages" || !self.eat(b':') {
                return None;
            }
            self.value()?;
        }
        self.space();
        (self.at == self.text.len()).then_some(())
    }
}

#[cfg(test)]
mod tests;
