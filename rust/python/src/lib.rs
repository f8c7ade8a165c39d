//! The `deepseek_recipe._native` extension module: an export list, no logic. Each file wraps
//! one stage: `protocol` (requests), `conversation` and `message` (the canonical model),
//! `options`, `special`, `encoding` (render + encode), `tokenizer`, `blocks` (KV block
//! hashes), `images`, `cancel` (stopping a conversion); `pyvalue` converts Python values to JSON, `errors` maps every error kind
//! to its exception, `slot` holds what a call consumes.

mod blocks;
mod cancel;
mod conversation;
mod encoding;
mod errors;
mod ids;
mod images;
mod intake_cache;
mod message;
mod options;
mod protocol;
mod pyvalue;
mod reply_chat;
mod reply_messages;
mod reply_responses;
mod slot;
mod special;
mod stored;
mod stream;
mod tokenizer;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("IMAGE_SPECIAL_TOKEN_ID", 129_264)?;

    m.add("ConversionError", py.get_type::<errors::ConversionError>())?;
    m.add("ImageError", py.get_type::<errors::ImageError>())?;
    m.add("CalcResizeError", py.get_type::<errors::CalcResizeError>())?;
    m.add("TokenizerError", py.get_type::<errors::TokenizerError>())?;
    m.add("StreamError", py.get_type::<errors::StreamError>())?;
    m.add("ConsumedError", py.get_type::<errors::ConsumedError>())?;

    m.add_class::<special::PySpecialToken>()?;
    m.add_class::<special::PySpecialTokens>()?;

    m.add_class::<message::PyToolCall>()?;
    m.add_class::<message::PyToolDefinition>()?;
    m.add_class::<message::PyImageSource>()?;
    m.add_class::<message::PyDataUrlImageSource>()?;
    m.add_class::<message::PyUrlImageSource>()?;
    m.add_class::<message::PyBytesImageSource>()?;
    m.add_class::<message::PyMessage>()?;
    m.add_class::<message::PySystemMessage>()?;
    m.add_class::<message::PyUserMessage>()?;
    m.add_class::<message::PyAssistantMessage>()?;
    m.add_class::<message::PyToolMessage>()?;
    m.add_class::<message::PyLatestReminderMessage>()?;

    m.add_class::<conversation::PyConversation>()?;
    m.add_class::<conversation::PyConversationRequest>()?;
    m.add_class::<conversation::PyInferenceOptions>()?;
    m.add_class::<conversation::PyOutputConstraint>()?;
    m.add_class::<conversation::PyParsingOptions>()?;
    m.add_class::<conversation::PyThinkingInitialStage>()?;

    m.add_class::<options::PyModelVersion>()?;
    m.add_class::<options::PyReasoningContentBehavior>()?;
    m.add_class::<options::PyWebSearchBehavior>()?;
    m.add_class::<options::PyConversionOptions>()?;

    m.add_class::<protocol::PyChatCompletionRequest>()?;
    m.add_class::<protocol::PyResponsesRequest>()?;
    m.add_class::<protocol::PyMessagesRequest>()?;
    m.add_class::<intake_cache::PyIntakeCache>()?;
    m.add_class::<intake_cache::PyIntakeTurn>()?;
    m.add_function(wrap_pyfunction!(protocol::json_nesting_exceeds, m)?)?;
    m.add_class::<cancel::PyCancelToken>()?;

    m.add_class::<reply_messages::PyMessagesChunkGenerator>()?;
    m.add_class::<reply_messages::PyMessagesStreamEvent>()?;
    m.add_class::<reply_messages::PyMessagesResponse>()?;

    m.add_class::<reply_responses::PyResponsesChunkGenerator>()?;
    m.add_class::<reply_responses::PyResponsesEcho>()?;
    m.add_class::<reply_responses::PyResponsesStreamEvent>()?;
    m.add_class::<reply_responses::PyResponsesResponse>()?;

    m.add_class::<encoding::PyRenderedPrompt>()?;
    m.add_class::<encoding::PyDeepseekV4Encoding>()?;
    m.add_class::<encoding::PyDeepseekV41Encoding>()?;
    m.add_class::<tokenizer::PyTokenizer>()?;
    m.add_class::<ids::PyTokenIds>()?;
    m.add_class::<stored::PyResponsesHistory>()?;
    m.add_class::<stored::PyResponsesStateFields>()?;
    m.add_class::<stored::PyEncodedPrompt>()?;
    m.add_function(wrap_pyfunction!(blocks::block_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(blocks::prefix_hash, m)?)?;

    m.add_class::<images::PyImageInfo>()?;
    m.add_class::<images::PyMultiModalData>()?;
    m.add_class::<images::PyImageQuota>()?;
    m.add_class::<images::PyPreprocessOptions>()?;
    m.add_class::<images::PyOpenCvImagePreprocessor>()?;
    m.add_class::<images::PyReqwestImageFetcher>()?;
    m.add_class::<images::PyImageResolver>()?;

    m.add_class::<stream::PyPromptUsage>()?;
    m.add_class::<stream::PyInferenceFinishReason>()?;
    m.add_class::<stream::PyInferenceChunk>()?;
    m.add_class::<stream::PyStreamProcessor>()?;
    m.add_class::<reply_chat::PyChatCompletionChunkGenerator>()?;
    m.add_class::<reply_chat::PyChatCompletionChunk>()?;
    m.add_class::<reply_chat::PyChatCompletionResponse>()?;
    Ok(())
}
