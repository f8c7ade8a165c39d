//! Helpers shared by the stream tests: option builders, feeding pieces, accumulating events.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod vectors;
pub mod vocab;

use deepseek_model::{ParsingOptions, ThinkingInitialStage};
use deepseek_stream::{ParseEvent, Parser, Segment};

/// Options: `thinking` starts in reasoning (`ReasoningStart`), else in content.
pub fn options(thinking: bool) -> ParsingOptions {
    ParsingOptions {
        thinking_initial_stage: thinking.then_some(ThinkingInitialStage::ReasoningStart),
        ..ParsingOptions::default()
    }
}

pub fn with_stops(mut options: ParsingOptions, stops: &[&str]) -> ParsingOptions {
    options.stop_sequences = stops.iter().map(|s| (*s).to_owned()).collect();
    options
}

pub fn json(mut options: ParsingOptions) -> ParsingOptions {
    options.parse_json_output = true;
    options
}

/// Everything one stream produced, accumulated the way a response accumulator would.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub reasoning: String,
    pub content: String,
    /// (name, argument text, closed by an invoke end or the end of input)
    pub calls: Vec<(String, String, bool)>,
    pub stop: Option<String>,
}

impl Outcome {
    pub fn add(&mut self, events: &[ParseEvent]) {
        for event in events {
            match event {
                ParseEvent::Text {
                    segment: Segment::Reasoning,
                    text,
                    ..
                } => self.reasoning.push_str(text),
                ParseEvent::Text {
                    segment: Segment::Content,
                    text,
                    ..
                } => self.content.push_str(text),
                ParseEvent::ToolCallStart { index, name } => {
                    assert_eq!(*index, self.calls.len(), "dense call indices");
                    self.calls.push((name.clone(), String::new(), false));
                }
                ParseEvent::ToolCallArguments { index, fragment } => {
                    let call = self
                        .calls
                        .get_mut(*index)
                        .expect("arguments after the start");
                    assert!(!call.2, "arguments after the end");
                    call.1.push_str(fragment);
                }
                ParseEvent::ToolCallEnd { index } => {
                    let call = self.calls.get_mut(*index).expect("end after the start");
                    assert!(!call.2, "one end per call");
                    call.2 = true;
                }
                ParseEvent::StopSequence { sequence } => {
                    assert!(self.stop.is_none(), "one stop");
                    self.stop = Some(sequence.clone());
                }
            }
        }
    }

    pub fn arguments(&self) -> Vec<&str> {
        self.calls.iter().map(|c| c.1.as_str()).collect()
    }
}

/// Feed `pieces` then finish; returns the events of every push (the last entry is `finish`).
pub fn run_pushes<S: AsRef<str>>(options: &ParsingOptions, pieces: &[S]) -> Vec<Vec<ParseEvent>> {
    let mut parser = Parser::new(options);
    let mut pushes = Vec::new();
    for piece in pieces {
        let mut events = Vec::new();
        parser.push(piece.as_ref(), &mut events);
        pushes.push(events);
    }
    let mut events = Vec::new();
    parser.finish(&mut events);
    pushes.push(events);
    pushes
}

pub fn run<S: AsRef<str>>(options: &ParsingOptions, pieces: &[S]) -> Outcome {
    let mut outcome = Outcome::default();
    for events in run_pushes(options, pieces) {
        outcome.add(&events);
    }
    outcome
}

/// The text split into one piece per character.
pub fn chars(text: &str) -> Vec<String> {
    text.chars().map(String::from).collect()
}

/// A compact spelling of one push's events: `r:…`, `c:…`, `call0:name`, `arg0:…`, `end0`,
/// `stop:…`.
pub fn spell(events: &[ParseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            ParseEvent::Text {
                segment: Segment::Reasoning,
                text,
                ..
            } => format!("r:{text}"),
            ParseEvent::Text {
                segment: Segment::Content,
                text,
                ..
            } => format!("c:{text}"),
            ParseEvent::ToolCallStart { index, name } => format!("call{index}:{name}"),
            ParseEvent::ToolCallArguments { index, fragment } => format!("arg{index}:{fragment}"),
            ParseEvent::ToolCallEnd { index } => format!("end{index}"),
            ParseEvent::StopSequence { sequence } => format!("stop:{sequence}"),
        })
        .collect()
}
