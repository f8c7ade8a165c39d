//! `ResponsesResponse`: the final response object rebuilt from the events. The response
//! events replace it whole; item events keep its output current in between.

use std::sync::Arc;

use deepseek_model::ReportedSettings;

use super::events::{ContentPart, ResponseObject, ResponsesStreamEvent as Event};
use crate::json::{self, FloatSpelling};

#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesResponse {
    response: ResponseObject,
}

impl ResponsesResponse {
    /// The in-progress response reported before any event. The prompt usage is accepted for
    /// symmetry with the other protocols; the usage comes from the events.
    pub fn new(id: String, model: String, created_at: u64) -> Self {
        ResponsesResponse {
            response: ResponseObject::in_progress(
                id,
                model,
                created_at,
                Arc::new(ReportedSettings::default()),
            ),
        }
    }

    pub fn accumulate(&mut self, event: Event) {
        let output = &mut self.response.output;
        match event {
            Event::Created { response, .. }
            | Event::InProgress { response, .. }
            | Event::Completed { response, .. }
            | Event::Incomplete { response, .. } => self.response = *response,
            Event::OutputItemAdded {
                item, output_index, ..
            }
            | Event::OutputItemDone {
                item, output_index, ..
            } => match output.get_mut(output_index) {
                Some(slot) => *slot = item,
                None => output.push(item),
            },
            Event::ContentPartAdded {
                output_index, part, ..
            } => {
                if let Some(content) = output.get_mut(output_index).and_then(|i| i.content_mut()) {
                    content.push(part);
                }
            }
            Event::ContentPartDone {
                output_index,
                content_index,
                part,
                ..
            } => {
                if let Some(slot) = output
                    .get_mut(output_index)
                    .and_then(|i| i.content_mut())
                    .and_then(|c| c.get_mut(content_index))
                {
                    *slot = part;
                }
            }
            Event::ReasoningTextDelta {
                output_index,
                content_index,
                delta,
                ..
            } => {
                if let Some(part) = part_mut(output, output_index, content_index) {
                    part.text_mut().push_str(&delta);
                }
            }
            Event::OutputTextDelta {
                output_index,
                content_index,
                delta,
                logprobs,
                ..
            } => {
                if let Some(part) = part_mut(output, output_index, content_index) {
                    part.text_mut().push_str(&delta);
                    if let ContentPart::OutputText { logprobs: all, .. } = part {
                        all.extend(logprobs);
                    }
                }
            }
            Event::ReasoningTextDone {
                output_index,
                content_index,
                text,
                ..
            } => {
                if let Some(part) = part_mut(output, output_index, content_index) {
                    *part.text_mut() = text;
                }
            }
            Event::OutputTextDone {
                output_index,
                content_index,
                text,
                logprobs,
                ..
            } => {
                if let Some(part) = part_mut(output, output_index, content_index) {
                    *part.text_mut() = text;
                    if let ContentPart::OutputText { logprobs: all, .. } = part {
                        *all = logprobs;
                    }
                }
            }
            Event::FunctionCallArgumentsDelta {
                output_index,
                delta,
                ..
            }
            | Event::CustomToolCallInputDelta {
                output_index,
                delta,
                ..
            } => {
                if let Some(text) = output.get_mut(output_index).and_then(|i| i.call_text_mut()) {
                    text.push_str(&delta);
                }
            }
            Event::FunctionCallArgumentsDone {
                output_index,
                arguments: text,
                ..
            }
            | Event::CustomToolCallInputDone {
                output_index,
                input: text,
                ..
            } => {
                if let Some(slot) = output.get_mut(output_index).and_then(|i| i.call_text_mut()) {
                    *slot = text;
                }
            }
        }
    }

    pub fn to_json(&self) -> String {
        json::to_json(&self.response, FloatSpelling::Double)
    }
}

fn part_mut(
    output: &mut [super::events::OutputItem],
    output_index: usize,
    content_index: usize,
) -> Option<&mut ContentPart> {
    output
        .get_mut(output_index)?
        .content_mut()?
        .get_mut(content_index)
}
