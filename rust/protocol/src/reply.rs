//! The way back, per protocol: each module turns the stream processor's calls (the
//! [`deepseek_stream::emit::Emitter`] trait) into that protocol's stream events, and
//! accumulates those events into the protocol's non-streaming response object. Events keep
//! their JSON text exactly as sent (key order, float spelling), so serializing an event and
//! accumulating it agree.

pub mod chat;
pub mod messages;
pub mod responses;
