//! The output parser (behavior.md §10.2–§10.5).

use deepseek_model::ParsingOptions;

/// Which kind of text a piece is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    Reasoning,
    Content,
}

/// What one push produced, in order. Text pieces of the same segment produced by one push are
/// coalesced into one `Text` event (protocol deltas are per push).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseEvent {
    Text { segment: Segment, text: String },
    /// A tool call's name is complete (emitted the moment its closing quote is parsed).
    ToolCallStart { index: usize, name: String },
    /// A fragment of the call's argument JSON.
    ToolCallArguments { index: usize, fragment: String },
    /// The invoke closed (`</｜DSML｜ invoke>` or the end of input inside it).
    ToolCallEnd { index: usize },
    /// A stop sequence matched in content; the stream is complete.
    StopSequence { sequence: String },
}

/// A streaming parser for one response.
#[derive(Debug)]
pub struct Parser {
    options: ParsingOptions,
    done: bool,
}

impl Parser {
    /// Build the parser (and its matchers, once) for these options.
    pub fn new(options: &ParsingOptions) -> Self {
        Self { options: options.clone(), done: false }
    }

    /// Parse the next piece of output text, appending what it produced to `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<ParseEvent>) {
        let _ = (text, out, &self.options);
    }

    /// End of output: flush held-back text as ordinary text and close an open call.
    pub fn finish(&mut self, out: &mut Vec<ParseEvent>) {
        let _ = out;
        self.done = true;
    }

    /// True once the tool-call block closed or a stop sequence matched: later text is ignored.
    pub fn is_done(&self) -> bool {
        self.done
    }
}
