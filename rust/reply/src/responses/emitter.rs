//! The Responses emitter (`tests/responses_reply.rs`, `rules_beyond_the_examples`): turns the
//! processor's calls into output items and their events. An item stays open until the next item
//! starts or the stream finishes, so a message learns its phase (`commentary` when a tool call
//! follows) when it closes.

use std::sync::Arc;

use deepseek_model::{
    ConversationRequest, NamespaceTools, ReportedSettings, RequestReply, StoredState,
};
use deepseek_stream::emit::{Completion, Emitter, FinishReason, PromptUsage, TokenLogprob, Usage};
use deepseek_stream::Segment;

use super::events::{
    ContentPart, Empty, IncompleteDetails, IncompleteReason, InputTokensDetails, Logprob,
    OutputItem, OutputTokensDetails, Phase, ResponseObject, ResponseUsage,
    ResponsesStreamEvent as Event, Role, Status,
};
use super::patch_input::PatchInput;
use crate::clock;

/// The custom tool whose calls become `custom_tool_call` items.
const APPLY_PATCH: &str = "apply_patch";

/// A configured Responses stream, before it starts: `ResponsesChunkGenerator`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesGenerator {
    pub id: String,
    pub model: String,
    pub settings: Arc<ReportedSettings>,
    pub namespace_tools: NamespaceTools,
    pub custom_apply_patch: bool,
    /// The request's thinking mode (the stream processor needs it for tool-call ids).
    pub thinking: bool,
    /// Report `usage.input_tokens_details.cache_write_tokens` (always 0: prompt caching here
    /// writes nothing billable). Off by default, as the reference, whose usage predates the
    /// field; a server whose clients validate against today's API types turns it on.
    pub cache_write_tokens: bool,
}

impl ResponsesGenerator {
    /// The generator for a converted request: it reports the request's own settings.
    pub fn from_request(request: &ConversationRequest, id: String, model: String) -> Self {
        let reply = RequestReply::from_value(request.reply.echo.as_ref());
        ResponsesGenerator {
            id,
            model,
            settings: Arc::new(reply.settings),
            namespace_tools: reply.namespace_tools,
            custom_apply_patch: reply.custom_apply_patch,
            thinking: request.conversation.thinking_mode,
            cache_write_tokens: false,
        }
    }

    /// Report `cache_write_tokens` (0) in the usage, as today's API does.
    pub fn with_cache_write_tokens(mut self) -> Self {
        self.cache_write_tokens = true;
        self
    }

    /// Report these settings instead.
    pub fn with_settings(mut self, settings: ReportedSettings) -> Self {
        self.settings = Arc::new(settings);
        self
    }

    /// Report this storage state (a stateful server's: `store`, the response continued, the
    /// conversation, `metadata`) instead of the reference's (nothing stored).
    pub fn with_state(mut self, state: StoredState) -> Self {
        Arc::make_mut(&mut self.settings).state = state;
        self
    }

    /// Name tool calls through this map instead.
    pub fn with_namespace_tools(mut self, namespace_tools: NamespaceTools) -> Self {
        self.namespace_tools = namespace_tools;
        self
    }

    pub fn into_emitter(self) -> ResponsesEmitter {
        ResponsesEmitter {
            generator: self,
            started: false,
            created_at: 0,
            sequence: 0,
            output: Vec::new(),
            open: None,
        }
    }
}

/// The kind of the item still open (always the last of `output`).
#[derive(Debug)]
enum Open {
    Reasoning,
    Message,
    FunctionCall,
    CustomToolCall(PatchInput),
}

#[derive(Debug)]
pub struct ResponsesEmitter {
    generator: ResponsesGenerator,
    started: bool,
    created_at: u64,
    sequence: u64,
    output: Vec<OutputItem>,
    open: Option<Open>,
}

impl ResponsesEmitter {
    fn next_sequence(&mut self) -> u64 {
        let n = self.sequence;
        self.sequence += 1;
        n
    }

    fn response(&self, status: Status) -> Box<ResponseObject> {
        let g = &self.generator;
        let mut response = ResponseObject::in_progress(
            g.id.clone(),
            g.model.clone(),
            self.created_at,
            Arc::clone(&g.settings),
        );
        response.status = status;
        Box::new(response)
    }

    fn ensure_started(&mut self, out: &mut Vec<Event>) {
        if !self.started {
            self.start(PromptUsage::default(), None, out);
        }
    }

    fn item_id(&self, prefix: &str) -> String {
        format!("{prefix}_{}_{}", self.generator.id, self.output.len())
    }

    /// Open a reasoning or message item with its one content part.
    fn open_text_item(&mut self, segment: Segment, out: &mut Vec<Event>) {
        let wanted = matches!(
            (segment, &self.open),
            (Segment::Reasoning, Some(Open::Reasoning)) | (Segment::Content, Some(Open::Message))
        );
        if wanted {
            return;
        }
        self.close_open(Status::Completed, Phase::FinalAnswer, out);
        let output_index = self.output.len();
        let (item, part, open) = match segment {
            Segment::Reasoning => (
                OutputItem::Reasoning {
                    id: self.item_id("rs"),
                    status: Status::InProgress,
                    content: Vec::new(),
                    summary: Empty,
                    encrypted_content: format!("{}-{output_index}", self.generator.id),
                },
                ContentPart::ReasoningText {
                    text: String::new(),
                },
                Open::Reasoning,
            ),
            Segment::Content => (
                OutputItem::Message {
                    id: self.item_id("msg"),
                    status: Status::InProgress,
                    role: Role::Assistant,
                    phase: Phase::FinalAnswer,
                    content: Vec::new(),
                },
                ContentPart::OutputText {
                    annotations: Empty,
                    logprobs: Vec::new(),
                    text: String::new(),
                },
                Open::Message,
            ),
        };
        let item_id = item.id().to_owned();
        let sequence_number = self.next_sequence();
        out.push(Event::OutputItemAdded {
            item: item.clone(),
            output_index,
            sequence_number,
        });
        let sequence_number = self.next_sequence();
        out.push(Event::ContentPartAdded {
            content_index: 0,
            item_id,
            output_index,
            part: part.clone(),
            sequence_number,
        });
        let mut item = item;
        if let Some(content) = item.content_mut() {
            content.push(part);
        }
        self.output.push(item);
        self.open = Some(open);
    }

    /// Close the open item, if any, with its done events.
    fn close_open(&mut self, status: Status, phase: Phase, out: &mut Vec<Event>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let output_index = self.output.len().saturating_sub(1);
        let mut sequence = self.sequence;
        let mut next = || {
            let n = sequence;
            sequence += 1;
            n
        };
        let Some(item) = self.output.last_mut() else {
            return;
        };
        let item_id = item.id().to_owned();
        match open {
            Open::Reasoning | Open::Message => {
                if let OutputItem::Message { phase: p, .. } = item {
                    *p = phase;
                }
                let part = item.content_mut().and_then(|c| c.first()).cloned();
                match &part {
                    Some(ContentPart::ReasoningText { text }) => {
                        out.push(Event::ReasoningTextDone {
                            content_index: 0,
                            item_id: item_id.clone(),
                            output_index,
                            sequence_number: next(),
                            text: text.clone(),
                        })
                    }
                    Some(ContentPart::OutputText { logprobs, text, .. }) => {
                        out.push(Event::OutputTextDone {
                            content_index: 0,
                            item_id: item_id.clone(),
                            logprobs: logprobs.clone(),
                            output_index,
                            sequence_number: next(),
                            text: text.clone(),
                        })
                    }
                    None => {}
                }
                if let Some(part) = part {
                    out.push(Event::ContentPartDone {
                        content_index: 0,
                        item_id,
                        output_index,
                        part,
                        sequence_number: next(),
                    });
                }
            }
            Open::FunctionCall => {
                let arguments = item.call_text_mut().map(|a| a.clone()).unwrap_or_default();
                out.push(Event::FunctionCallArgumentsDone {
                    arguments,
                    item_id,
                    output_index,
                    sequence_number: next(),
                });
            }
            Open::CustomToolCall(mut patch) => {
                let mut rest = String::new();
                patch.finish(&mut rest);
                let input = item.call_text_mut();
                let input = match input {
                    Some(input) => {
                        input.push_str(&rest);
                        input.clone()
                    }
                    None => String::new(),
                };
                if !rest.is_empty() {
                    out.push(Event::CustomToolCallInputDelta {
                        delta: rest,
                        item_id: item_id.clone(),
                        output_index,
                        sequence_number: next(),
                    });
                }
                out.push(Event::CustomToolCallInputDone {
                    input,
                    item_id,
                    output_index,
                    sequence_number: next(),
                });
            }
        }
        item.set_status(status);
        out.push(Event::OutputItemDone {
            item: item.clone(),
            output_index,
            sequence_number: next(),
        });
        self.sequence = sequence;
    }
}

impl Emitter for ResponsesEmitter {
    type Event = Event;

    fn start(
        &mut self,
        _prompt: PromptUsage,
        _system_fingerprint: Option<&str>,
        out: &mut Vec<Event>,
    ) {
        if self.started {
            return;
        }
        self.started = true;
        self.created_at = clock::unix_seconds();
        let sequence_number = self.next_sequence();
        out.push(Event::Created {
            response: self.response(Status::InProgress),
            sequence_number,
        });
        let sequence_number = self.next_sequence();
        out.push(Event::InProgress {
            response: self.response(Status::InProgress),
            sequence_number,
        });
    }

    fn text(
        &mut self,
        segment: Segment,
        text: &str,
        logprobs: Option<&[TokenLogprob]>,
        out: &mut Vec<Event>,
    ) {
        if text.is_empty() {
            return;
        }
        self.ensure_started(out);
        self.open_text_item(segment, out);
        let output_index = self.output.len().saturating_sub(1);
        let sequence_number = self.next_sequence();
        let Some(item) = self.output.last_mut() else {
            return;
        };
        let item_id = item.id().to_owned();
        let Some(part) = item.content_mut().and_then(|c| c.first_mut()) else {
            return;
        };
        part.text_mut().push_str(text);
        match part {
            ContentPart::ReasoningText { .. } => out.push(Event::ReasoningTextDelta {
                content_index: 0,
                delta: text.to_owned(),
                item_id,
                output_index,
                sequence_number,
            }),
            ContentPart::OutputText { logprobs: all, .. } => {
                let logprobs: Vec<Logprob> = logprobs
                    .unwrap_or_default()
                    .iter()
                    .map(Logprob::from)
                    .collect();
                all.extend(logprobs.iter().cloned());
                out.push(Event::OutputTextDelta {
                    content_index: 0,
                    delta: text.to_owned(),
                    item_id,
                    logprobs,
                    output_index,
                    sequence_number,
                });
            }
        }
    }

    fn tool_call_start(&mut self, _index: usize, id: &str, name: &str, out: &mut Vec<Event>) {
        self.ensure_started(out);
        self.close_open(Status::Completed, Phase::Commentary, out);
        let g = &self.generator;
        let (item, open) = if g.custom_apply_patch && name == APPLY_PATCH {
            let item = OutputItem::CustomToolCall {
                id: self.item_id("ctc"),
                status: Status::InProgress,
                call_id: id.to_owned(),
                name: name.to_owned(),
                input: String::new(),
            };
            (item, Open::CustomToolCall(PatchInput::default()))
        } else {
            let (namespace, name) = match g.namespace_tools.get(name) {
                Some((ns, inner)) => (Some(ns.clone()), inner.clone()),
                None => (None, name.to_owned()),
            };
            let item = OutputItem::FunctionCall {
                id: self.item_id("fc"),
                status: Status::InProgress,
                call_id: id.to_owned(),
                name,
                namespace,
                arguments: String::new(),
            };
            (item, Open::FunctionCall)
        };
        let output_index = self.output.len();
        let sequence_number = self.next_sequence();
        out.push(Event::OutputItemAdded {
            item: item.clone(),
            output_index,
            sequence_number,
        });
        self.output.push(item);
        self.open = Some(open);
    }

    fn tool_call_arguments(&mut self, _index: usize, fragment: &str, out: &mut Vec<Event>) {
        if fragment.is_empty() {
            return;
        }
        let output_index = self.output.len().saturating_sub(1);
        let delta = match &mut self.open {
            Some(Open::FunctionCall) => fragment.to_owned(),
            Some(Open::CustomToolCall(patch)) => {
                let mut decided = String::new();
                patch.push(fragment, &mut decided);
                decided
            }
            _ => return,
        };
        if delta.is_empty() {
            return;
        }
        let Some(item) = self.output.last_mut() else {
            return;
        };
        let item_id = item.id().to_owned();
        let custom = matches!(item, OutputItem::CustomToolCall { .. });
        if let Some(text) = item.call_text_mut() {
            text.push_str(&delta);
        }
        let sequence_number = self.next_sequence();
        out.push(if custom {
            Event::CustomToolCallInputDelta {
                delta,
                item_id,
                output_index,
                sequence_number,
            }
        } else {
            Event::FunctionCallArgumentsDelta {
                delta,
                item_id,
                output_index,
                sequence_number,
            }
        });
    }

    /// An invoke's end closes nothing: the item closes when the next one starts or at finish.
    fn tool_call_end(&mut self, _index: usize, _out: &mut Vec<Event>) {}

    fn finish(
        &mut self,
        completion: &Completion,
        _tool_calls: bool,
        usage: &Usage,
        out: &mut Vec<Event>,
    ) {
        self.ensure_started(out);
        let incomplete = match completion {
            Completion::Finished(FinishReason::Length) => Some(IncompleteReason::MaxOutputTokens),
            Completion::Finished(FinishReason::ContentFilter) => {
                Some(IncompleteReason::ContentFilter)
            }
            _ => None,
        };
        let status = if incomplete.is_some() {
            Status::Incomplete
        } else {
            Status::Completed
        };
        self.close_open(status, Phase::FinalAnswer, out);
        let mut response = self.response(status);
        response.completed_at = Some(clock::unix_seconds());
        response.incomplete_details = incomplete.map(|reason| IncompleteDetails { reason });
        response.output = self.output.clone();
        let prompt = usage.prompt;
        response.usage = Some(ResponseUsage {
            input_tokens: prompt.prompt_tokens,
            input_tokens_details: InputTokensDetails {
                cached_tokens: prompt.prompt_cache_hit_tokens,
                cache_write_tokens: self.generator.cache_write_tokens.then_some(0),
            },
            output_tokens: usage.completion_tokens,
            output_tokens_details: OutputTokensDetails {
                reasoning_tokens: usage.reasoning_tokens.unwrap_or(0),
            },
            total_tokens: prompt.prompt_tokens.wrapping_add(usage.completion_tokens),
        });
        let sequence_number = self.next_sequence();
        out.push(if incomplete.is_some() {
            Event::Incomplete {
                response,
                sequence_number,
            }
        } else {
            Event::Completed {
                response,
                sequence_number,
            }
        });
    }
}
