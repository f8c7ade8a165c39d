//! Anthropic Messages on the way back (`tests/messages_reply.rs`): the stream events and the
//! `message` object ([`events`]), the emitter that makes them from the stream processor's
//! calls ([`emitter`]), and the accumulated message ([`accumulate`]).

mod accumulate;
mod emitter;
mod events;

pub use accumulate::MessagesResponse;
pub use emitter::MessagesEmitter;
pub use events::{
    BlockDelta, ContentBlock, Message, MessageStopInfo, MessagesStreamEvent, MessagesUsage,
    StopReason,
};
