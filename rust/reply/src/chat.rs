//! Chat Completions on the way back (`tests/chat_reply.rs`): the chunk and its JSON
//! ([`events`]), the emitter that makes chunks from the stream processor's calls
//! ([`emitter`]), and the accumulated `chat.completion` object ([`accumulate`]).

mod accumulate;
mod emitter;
mod events;

pub use accumulate::ChatCompletionResponse;
pub use emitter::{ChatCompletionChunkGenerator, ChatEmitter};
pub use events::{ChatCompletionChunk, ChatUsage, Delta, UsageKey};
