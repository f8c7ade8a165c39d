//! OpenAI Responses replies (`tests/responses_reply.rs`): the stream events and response object
//! ([`events`]), the emitter that produces them from the stream processor's calls
//! ([`emitter`]), the accumulated `ResponsesResponse` ([`accumulate`]), the request settings a
//! response reports ([`settings`]), and the `apply_patch` input taken from streamed
//! arguments ([`patch_input`]).

mod accumulate;
mod emitter;
mod events;
mod patch_input;
mod settings;

pub use accumulate::ResponsesResponse;
pub use emitter::{NamespaceTools, RequestReply, ResponsesEmitter, ResponsesGenerator};
pub use events::{
    ContentPart, IncompleteDetails, IncompleteReason, Logprob, OutputItem, Phase, ResponseObject,
    ResponseUsage, ResponsesStreamEvent, Status,
};
pub use settings::{declares_custom_apply_patch, ReportedSettings};
