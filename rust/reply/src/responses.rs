//! OpenAI Responses replies (`tests/responses_reply.rs`): the stream events and response object
//! ([`events`]), the emitter that produces them from the stream processor's calls
//! ([`emitter`]), the accumulated `ResponsesResponse` ([`accumulate`]), and the `apply_patch`
//! input taken from streamed arguments ([`patch_input`]). The request settings a response
//! reports are `deepseek_model::ReportedSettings`.

mod accumulate;
mod emitter;
mod events;
mod patch_input;

pub use accumulate::ResponsesResponse;
pub use emitter::{ResponsesEmitter, ResponsesGenerator};
pub use events::{
    ContentPart, IncompleteDetails, IncompleteReason, Logprob, OutputItem, Phase, ResponseObject,
    ResponseUsage, ResponsesStreamEvent, Status,
};
