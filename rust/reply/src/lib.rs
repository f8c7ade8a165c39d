//! The way back, per protocol. This crate owns each protocol's reply: the emitter that turns
//! the stream processor's calls (the [`deepseek_stream::emit::Emitter`] trait) into that
//! protocol's stream events, the events with their exact JSON text, and the accumulator that
//! folds the events into the protocol's non-streamed response, so streaming and not streaming
//! agree. It refuses to parse requests (`deepseek-protocol` does; what a Responses reply
//! reports about its request arrives typed in `deepseek_model::ReportedSettings`) and never
//! sees bytes or token ids (`deepseek-stream` does).

pub mod chat;
mod clock;
pub mod json;
pub mod messages;
pub mod responses;
