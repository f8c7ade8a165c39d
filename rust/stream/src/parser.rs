//! The output parser (`tests/parser_cases.rs`, `tests/conformance.rs`): a byte-level state machine
//! over the text the model writes. See `DESIGN.md` in this crate for the stage diagram and a worked
//! example.

use std::collections::VecDeque;

use deepseek_model::pyjson::escape_string_into;
use deepseek_model::{ParsingOptions, SpecialToken, SpecialTokens, ThinkingInitialStage};

use crate::matcher::Pattern;

/// Which kind of text a piece is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    Reasoning,
    Content,
}

/// One piece of a decoded token chunk (`tests/parser_cases.rs`, `token_input`): the caller
/// detokenizes ordinary token ids into text and passes special tokens as themselves. A special
/// token is one symbol to the parser: the `</think>` token ends reasoning where the same characters
/// made of ordinary tokens are only text, and a special token that is no marker (an EOS, a
/// `<｜User｜>`) comes out as its spelling, in a delta of its own, invisible to stop sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// Text decoded from ordinary tokens.
    Text(&'a str),
    /// One of the model's special tokens; it is written with its spelling from the options.
    Special(SpecialToken),
    /// Any other added token, by its text.
    Added(&'a str),
}

/// What one push produced, in order.
///
/// Text is emitted with the reference's granularity, which is what a protocol delta carries:
/// within one push, one `Text` event per run of text between two markers; text that was held
/// back (it could have been the start of a marker) is released later as the pieces it arrived
/// in, one event per earlier push. Argument JSON is emitted as the parser's fragments (`{`,
/// `"name"`, `: `, `"`, value text, `"`, `, `, `}`), one event per fragment per push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseEvent {
    Text {
        segment: Segment,
        text: String,
        /// The input piece the text came from (see [`Parser::next_origin`]): a caller that
        /// knows which tokens made each piece attributes their logprobs by it.
        origin: u64,
    },
    /// A tool call's name is complete (emitted the moment its closing quote is parsed).
    ToolCallStart { index: usize, name: String },
    /// A fragment of the call's argument JSON.
    ToolCallArguments { index: usize, fragment: String },
    /// The invoke closed (`</｜DSML｜ invoke>` or the end of input inside it).
    ToolCallEnd { index: usize },
    /// A stop sequence matched in content; the stream is complete.
    StopSequence { sequence: String },
}

/// The markers, in the order of [`Parser::patterns`]; stop sequence `i` is `FIRST_STOP + i`.
const THINK_END: usize = 0; // ThinkingEnd spelling
const DSML_START: usize = 1; // "<" + Dsml
const DSML_CLOSE: usize = 2; // "</" + Dsml
const BLOCK_END_V4: usize = 3; // "</" + Dsml + "tool_calls>"
const BLOCK_END_V41: usize = 4; // "</" + Dsml + " calls>"
const INVOKE: usize = 5; // `invoke name="`
const PARAMETER: usize = 6; // `parameter name=` (the name's opening quote is copied)
const STRING_TRUE: usize = 7; // `true">`
const STRING_FALSE: usize = 8; // `false">`
const FENCE_JSON: usize = 9; // "```json\n"
const FENCE_PLAIN: usize = 10; // "```\n"
const BRACE: usize = 11; // "{"
const BRACKET: usize = 12; // "["
const JSON_END: usize = 13; // "\n```"
const QUOTE: usize = 14; // `"`, the end of an invoke name
const SPACE: usize = 15; // " ", the end of a parameter name
/// The same five markers written with special-token symbols, for token input: `SYMBOLIC + m`.
const SYMBOLIC: usize = 16;
const FIRST_STOP: usize = 21;

/// Symbols standing for special tokens in the byte stream; no UTF-8 text contains them.
const SYM_THINK_END: u8 = 0xF8;
const SYM_DSML: u8 = 0xF9;
const SYM_OTHER: u8 = 0xFA;

fn is_symbol(byte: u8) -> bool {
    matches!(byte, SYM_THINK_END | SYM_DSML | SYM_OTHER)
}

/// One marker watched in a stage. `eats_newlines`: a run of `\n` right before the marker is
/// part of the match (and dropped with it).
#[derive(Debug, Clone, Copy)]
struct Rule {
    marker: usize,
    eats_newlines: bool,
    input: Input,
}

/// Which input a rule watches: a special-token marker is spelled out for text input and has
/// a symbolic twin for token input (see [`Decoded`]); other markers watch both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Any,
    Text,
    Tokens,
}

impl Rule {
    fn watches(self, token_mode: bool) -> bool {
        match self.input {
            Input::Any => true,
            Input::Text => !token_mode,
            Input::Tokens => token_mode,
        }
    }
}

/// Where the JSON-output mode (§10.4) is within content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Json {
    /// JSON mode off: ordinary content.
    Off,
    /// Before the JSON start: text becomes one space per piece.
    Prefix,
    /// Inside the JSON: copied raw until "\n```".
    Inside,
    /// After the closing fence: spaces again; only a tool-call block can still start.
    After,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Reasoning,
    Content(Json),
    /// Inside the tool-call block, between invokes.
    Block,
    /// Reading an invoke's name up to `"`.
    InvokeName,
    /// Inside an invoke, between parameters.
    Invoke,
    /// Reading a parameter's name: the raw bytes up to the next space (normally `name"`).
    ParamName,
    /// Skipping to `true">` or `false">`.
    ParamMode,
    /// A parameter value, up to the next `</｜DSML｜`.
    Value {
        string: bool,
    },
    /// The block closed or a stop sequence matched: everything else is ignored.
    Done,
}

/// The rule lists of every stage, built once.
#[derive(Debug, Clone)]
struct Rules {
    reasoning: Vec<Rule>,
    content: Vec<Rule>,
    json_prefix: Vec<Rule>,
    json_inside: Vec<Rule>,
    json_after: Vec<Rule>,
    block: Vec<Rule>,
    invoke: Vec<Rule>,
    invoke_name: Vec<Rule>,
    param_name: Vec<Rule>,
    param_mode: Vec<Rule>,
    value: Vec<Rule>,
}

/// A marker's partial spelling cut by a switch to token input: its length, the newlines
/// before it, and whether the special token itself would complete the marker (the rest of
/// the marker is a prefix of the token's spelling: `<｜DSML` then the `｜DSML｜` token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cut {
    partial: usize,
    newlines: u64,
    completed_by_token: bool,
}

/// What held or running text turns into when it is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    Reasoning,
    Content,
    /// JSON-mode prefix or trailer: each released piece becomes a single space.
    Space,
    /// A `string="true"` value: JSON-string-escaped argument text.
    StringValue,
    /// A raw value or a parameter name: argument text copied as is.
    RawArgument,
}

/// Output waiting in the pending queue.
#[derive(Debug, Clone)]
enum Body {
    /// Stream text `[start, start + bytes.len())`; or, for a special-token `symbol`, the one
    /// position `start` written as `bytes`.
    Text {
        out: Out,
        bytes: Vec<u8>,
        symbol: bool,
    },
    /// An output the parser produced at a marker (a quote, `}`, a call start, the JSON `{`).
    /// `sticky`: the marker lay wholly inside the push that completed it and was not
    /// completed by a special token; such an output waits while a partial marker begins right
    /// where it was produced. (One completed by a marker that began in an earlier push, or by
    /// a special token, is released at the end of the push.)
    Event { event: ParseEvent, sticky: bool },
}

/// One pending output, the stream position where it starts, and the input piece it came
/// from (non-decreasing along the queue).
#[derive(Debug, Clone)]
struct Piece {
    start: u64,
    origin: u64,
    body: Body,
}

impl Piece {
    /// Whether the piece can be released when every marker's possible start is at or after
    /// `hold`. Text must end at or before it; an event produced at position `p` goes when
    /// `p < hold`, i.e. it stays while a partial marker begins right where it was produced.
    fn releasable(&self, hold: u64) -> bool {
        match &self.body {
            Body::Text { bytes, symbol, .. } => {
                let width = if *symbol { 1 } else { bytes.len() as u64 };
                self.start + width <= hold
            }
            Body::Event { sticky, .. } => !sticky || self.start < hold,
        }
    }
}

/// A streaming parser for one response.
#[derive(Debug, Clone)]
pub struct Parser {
    patterns: Vec<Pattern>,
    stops: Vec<String>,
    rules: Rules,
    /// KMP state per pattern; zero outside the current stage's rules.
    states: Vec<usize>,
    /// Per pattern: the `\n` bytes right before its partial match (or trailing, at state 0)
    /// that a newline-eating marker takes with it. A `\n` that breaks the pattern's own
    /// partial match does not count (`r<⏎</think>` keeps that newline).
    newlines: Vec<u64>,
    stage: Stage,
    /// Leading-`\n` removal is active (reasoning or content).
    strip_leading: bool,
    /// `parse_json_output`: content starts in [`Json::Prefix`].
    json_mode: bool,
    /// Bytes consumed so far (dropped leading newlines do not count).
    pos: u64,
    /// Output not yet released, in order. Its last piece may be this push's open text run.
    pending: VecDeque<Piece>,
    /// The last pending piece is this push's text run of the current stage and grows.
    run_open: bool,
    /// Position where the current push began.
    push_start: u64,
    /// The marker being acted on began in this push.
    marker_in_push: bool,
    /// The current push is token input (see [`Decoded`]): spelled special markers are off.
    token_mode: bool,
    /// The input piece being parsed, and the number the next one gets.
    origin: u64,
    next_origin: u64,
    /// The input piece in which a stop sequence matched.
    stopped_at: Option<u64>,
    /// The spelling of the special-token symbol being fed.
    symbol_text: Vec<u8>,
    special_tokens: SpecialTokens,
    /// Per special-token marker (`THINK_END..=BLOCK_END_V41`): the length of its plain
    /// prefix (`<`, `</`) and of the special token's spelling in it.
    twin_shapes: [(usize, usize); 5],
    /// Per special-token marker: the partial spelling that the switch to token input just
    /// cut (see [`Parser::set_token_mode`]); cleared by the next byte.
    cut: [Option<Cut>; 5],
    /// The invoke name being read.
    name: Vec<u8>,
    /// Index of the open call, or of the next one.
    call_index: usize,
    in_call: bool,
    params: usize,
    done: bool,
    work: u64,
}

impl Parser {
    /// Build the parser (and its matchers, once) for these options.
    pub fn new(options: &ParsingOptions) -> Self {
        let dsml = options.special_tokens.get(SpecialToken::Dsml);
        let think_end = options.special_tokens.get(SpecialToken::ThinkingEnd);
        let stops: Vec<String> = options
            .stop_sequences
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        let mut patterns: Vec<Pattern> = [
            think_end.to_owned(),
            format!("<{dsml}"),
            format!("</{dsml}"),
            format!("</{dsml}tool_calls>"),
            format!("</{dsml} calls>"),
            "invoke name=\"".to_owned(),
            "parameter name=".to_owned(),
            "true\">".to_owned(),
            "false\">".to_owned(),
            "```json\n".to_owned(),
            "```\n".to_owned(),
            "{".to_owned(),
            "[".to_owned(),
            "\n```".to_owned(),
            "\"".to_owned(),
            " ".to_owned(),
        ]
        .iter()
        .map(|s| Pattern::new(s))
        .collect();
        patterns.extend(
            [
                vec![SYM_THINK_END],
                vec![b'<', SYM_DSML],
                vec![b'<', b'/', SYM_DSML],
                [&b"</"[..], &[SYM_DSML], b"tool_calls>"].concat(),
                [&b"</"[..], &[SYM_DSML], b" calls>"].concat(),
            ]
            .iter()
            .map(|b| Pattern::from_bytes(b)),
        );
        patterns.extend(stops.iter().map(|s| Pattern::new(s)));

        let rule = |marker, eats_newlines| {
            vec![Rule {
                marker,
                eats_newlines,
                input: Input::Any,
            }]
        };
        // A special-token marker: its spelling (text input) and its symbolic twin (tokens).
        let special = |marker, eats_newlines| {
            vec![
                Rule {
                    marker,
                    eats_newlines,
                    input: Input::Text,
                },
                Rule {
                    marker: SYMBOLIC + marker,
                    eats_newlines,
                    input: Input::Tokens,
                },
            ]
        };
        let stop_rules: Vec<Rule> = (0..stops.len())
            .flat_map(|i| rule(FIRST_STOP + i, false))
            .collect();
        let dsml_rule: Vec<Rule> = if options.parse_tool_calls {
            special(DSML_START, true)
        } else {
            Vec::new()
        };
        let rules = Rules {
            reasoning: [special(THINK_END, true), dsml_rule.clone()].concat(),
            content: [
                stop_rules.clone(),
                dsml_rule.clone(),
                special(THINK_END, false),
            ]
            .concat(),
            json_prefix: [
                dsml_rule.clone(),
                special(THINK_END, false),
                rule(FENCE_JSON, false),
                rule(FENCE_PLAIN, false),
                rule(BRACE, false),
                rule(BRACKET, false),
            ]
            .concat(),
            json_inside: [stop_rules, rule(JSON_END, false)].concat(),
            json_after: dsml_rule,
            block: [
                rule(INVOKE, false),
                special(BLOCK_END_V4, false),
                special(BLOCK_END_V41, false),
            ]
            .concat(),
            invoke_name: rule(QUOTE, false),
            invoke: [rule(PARAMETER, false), special(DSML_CLOSE, false)].concat(),
            param_name: rule(SPACE, false),
            param_mode: [rule(STRING_TRUE, false), rule(STRING_FALSE, false)].concat(),
            value: special(DSML_CLOSE, false),
        };

        let json = if options.parse_json_output {
            Json::Prefix
        } else {
            Json::Off
        };
        let (stage, strip_leading) = if options.starts_in_tool_calls {
            (Stage::Block, false)
        } else {
            match options.thinking_initial_stage {
                Some(ThinkingInitialStage::ReasoningStart) => (Stage::Reasoning, true),
                Some(ThinkingInitialStage::ReasoningContinuation) => (Stage::Reasoning, false),
                Some(ThinkingInitialStage::ContentContinuation) => (Stage::Content(json), false),
                None => (Stage::Content(json), true),
            }
        };
        Self {
            states: vec![0; patterns.len()],
            newlines: vec![0; patterns.len()],
            patterns,
            stops,
            rules,
            stage,
            strip_leading,
            json_mode: options.parse_json_output,
            pos: 0,
            pending: VecDeque::new(),
            run_open: false,
            push_start: 0,
            marker_in_push: false,
            token_mode: false,
            origin: 0,
            next_origin: 0,
            stopped_at: None,
            symbol_text: Vec::new(),
            special_tokens: options.special_tokens.clone(),
            cut: [None; 5],
            twin_shapes: [
                (0, think_end.len()),
                (1, dsml.len()),
                (2, dsml.len()),
                (2, dsml.len()),
                (2, dsml.len()),
            ],
            name: Vec::new(),
            call_index: 0,
            in_call: false,
            params: 0,
            done: false,
            work: 0,
        }
    }

    /// Parse the next piece of output text, appending what it produced to `out`.
    pub fn push(&mut self, text: &str, out: &mut Vec<ParseEvent>) {
        self.set_token_mode(false);
        self.push_decoded(&[Decoded::Text(text)], out);
    }

    /// Parse one decoded token chunk (one push), appending what it produced to `out`.
    pub fn push_tokens(&mut self, pieces: &[Decoded<'_>], out: &mut Vec<ParseEvent>) {
        self.set_token_mode(true);
        self.push_decoded(pieces, out);
    }

    /// Switch between text and token input. Each special-token marker hands its partial
    /// match to its twin, as the reference, which matches on special tokens in both kinds of
    /// input (spelled ones it recognises inside text), does: a plain prefix (`<`, `</`) and
    /// the newlines before it carry over, and so does a completed special token with the
    /// plain text after it; a spelling cut by the switch is only text and is forgotten
    /// (`a</th` as text then `ink>` as tokens is no marker), though it still keeps a newline
    /// that follows it, as a partial match that a newline breaks does (`<` as text, then
    /// `⏎⏎</think>` as tokens eats one newline), and the special token can still finish it
    /// right away when the rest of the marker is a prefix of its spelling (`<｜DSML` as text,
    /// then the `｜DSML｜` token, starts a tool-call block).
    fn set_token_mode(&mut self, token_mode: bool) {
        if self.token_mode == token_mode {
            return;
        }
        for (marker, (plain, spelling)) in self.twin_shapes.into_iter().enumerate() {
            let (from, to) = if token_mode {
                (marker, SYMBOLIC + marker)
            } else {
                (SYMBOLIC + marker, marker)
            };
            let state = self.states.get(from).copied().unwrap_or(0);
            let newlines = self.newlines.get(from).copied().unwrap_or(0);
            let carried = if state <= plain {
                state
            } else if !token_mode {
                state - 1 + spelling // past the symbol: past the whole spelling
            } else if state >= plain + spelling {
                state + 1 - spelling
            } else {
                0 // inside the spelling: only text
            };
            let newlines = if state > 0 && carried == 0 {
                let rest = self.patterns.get(marker).map_or(&[][..], |p| p.tail(state));
                let spelled = self
                    .patterns
                    .get(marker)
                    .map_or(&[][..], |p| p.tail(plain))
                    .get(..spelling)
                    .unwrap_or_default();
                if let Some(slot) = self.cut.get_mut(marker) {
                    *slot = Some(Cut {
                        partial: state,
                        newlines,
                        completed_by_token: !rest.is_empty() && spelled.starts_with(rest),
                    });
                }
                0
            } else {
                newlines
            };
            for (index, value, count) in [(from, 0, 0), (to, carried, newlines)] {
                if let Some(slot) = self.states.get_mut(index) {
                    *slot = value;
                }
                if let Some(slot) = self.newlines.get_mut(index) {
                    *slot = count;
                }
            }
        }
        self.token_mode = token_mode;
    }

    fn push_decoded(&mut self, pieces: &[Decoded<'_>], out: &mut Vec<ParseEvent>) {
        let first = self.next_origin;
        self.next_origin += pieces.len() as u64;
        if self.done {
            return;
        }
        self.push_start = self.pos;
        for (origin, piece) in (first..).zip(pieces) {
            // Each input piece is an origin of its own: its text starts a new run.
            self.run_open = false;
            self.origin = origin;
            match *piece {
                Decoded::Text(text) => {
                    for &byte in text.as_bytes() {
                        self.byte(byte, out);
                        if self.done {
                            return;
                        }
                    }
                }
                Decoded::Special(token) => {
                    let symbol = match token {
                        SpecialToken::ThinkingEnd => SYM_THINK_END,
                        SpecialToken::Dsml => SYM_DSML,
                        _ => SYM_OTHER,
                    };
                    self.symbol_text.clear();
                    self.symbol_text
                        .extend_from_slice(self.special_tokens.get(token).as_bytes());
                    self.byte(symbol, out);
                }
                Decoded::Added(text) => {
                    self.symbol_text.clear();
                    self.symbol_text.extend_from_slice(text.as_bytes());
                    self.byte(SYM_OTHER, out);
                }
            }
            if self.done {
                return;
            }
        }
        self.settle(out);
    }

    /// End of output: flush held-back text as ordinary text and close an open call. The
    /// arguments of an unterminated call are not repaired.
    pub fn finish(&mut self, out: &mut Vec<ParseEvent>) {
        if self.done {
            return;
        }
        self.release(u64::MAX, out);
        if self.in_call {
            out.push(ParseEvent::ToolCallEnd {
                index: self.call_index,
            });
            self.in_call = false;
        }
        self.done = true;
    }

    /// What [`Parser::finish`] would produce now, the parser left as it is: the output held
    /// back (a possible marker or stop sequence, a parameter value not yet closed) and the
    /// end of an open call. Costs a copy of the parser: its matchers and what it holds.
    pub fn held(&self) -> Vec<ParseEvent> {
        let mut out = Vec::new();
        self.clone().finish(&mut out);
        out
    }

    /// The origin the next input piece gets. Pieces are numbered from 0 in the order they
    /// are pushed: one per [`Parser::push`], one per element of [`Parser::push_tokens`]
    /// (also when the parser is done and ignores them).
    pub fn next_origin(&self) -> u64 {
        self.next_origin
    }

    /// The oldest origin whose text may still be released; every origin before it has
    /// produced all its events.
    pub fn oldest_pending_origin(&self) -> u64 {
        self.pending
            .front()
            .map_or(self.next_origin, |piece| piece.origin)
    }

    /// The origin of the input piece in which a stop sequence matched, if one did: pieces
    /// after it were not looked at (the reference stops counting their tokens there too).
    pub fn stopped_at(&self) -> Option<u64> {
        self.stopped_at
    }

    /// True once the tool-call block closed, a stop sequence matched, or [`Parser::finish`]
    /// ran: later text is ignored.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Work done so far, in elementary steps (bytes examined, matcher fallbacks, bytes
    /// released). Linear in the output length; exposed for the complexity tests.
    #[doc(hidden)]
    pub fn work(&self) -> u64 {
        self.work
    }

    fn rules(&self) -> &[Rule] {
        match self.stage {
            Stage::Reasoning => &self.rules.reasoning,
            Stage::Content(Json::Off) => &self.rules.content,
            Stage::Content(Json::Prefix) => &self.rules.json_prefix,
            Stage::Content(Json::Inside) => &self.rules.json_inside,
            Stage::Content(Json::After) => &self.rules.json_after,
            Stage::Block => &self.rules.block,
            Stage::InvokeName => &self.rules.invoke_name,
            Stage::Invoke => &self.rules.invoke,
            Stage::ParamName => &self.rules.param_name,
            Stage::ParamMode => &self.rules.param_mode,
            Stage::Value { .. } => &self.rules.value,
            Stage::Done => &[],
        }
    }

    /// What the current stage's text becomes; `None` for discarded markup.
    fn out_kind(&self) -> Option<Out> {
        match self.stage {
            Stage::Reasoning => Some(Out::Reasoning),
            Stage::Content(Json::Off | Json::Inside) => Some(Out::Content),
            Stage::Content(Json::Prefix | Json::After) => Some(Out::Space),
            Stage::Value { string: true } => Some(Out::StringValue),
            Stage::Value { string: false } | Stage::ParamName => Some(Out::RawArgument),
            _ => None,
        }
    }

    fn byte(&mut self, byte: u8, out: &mut Vec<ParseEvent>) {
        self.work += 1;
        if self.stage == Stage::Done {
            return;
        }
        if self.strip_leading {
            if byte == b'\n' {
                self.leading_newline(out);
                return;
            }
            self.strip_leading = false;
        }
        self.pos += 1;
        if is_symbol(byte) {
            // A special token is one position whose text is its spelling, in a piece of its own.
            if let Some(kind) = self.out_kind() {
                let bytes = self.symbol_text.clone();
                self.pending.push_back(Piece {
                    start: self.pos - 1,
                    origin: self.origin,
                    body: Body::Text {
                        out: kind,
                        bytes,
                        symbol: true,
                    },
                });
                self.run_open = false;
            } else if self.stage == Stage::InvokeName {
                self.name.extend_from_slice(&self.symbol_text);
            }
        } else if let Some(kind) = self.out_kind() {
            self.append(kind, byte);
        } else if self.stage == Stage::InvokeName && byte != b'"' {
            self.name.push(byte);
        }
        let cut = std::mem::take(&mut self.cut);
        let cut_any = cut.iter().any(Option::is_some);
        let mut hit = None;
        for index in 0..self.rules().len() {
            let Some(rule) = self.rules().get(index).copied() else {
                break;
            };
            if !rule.watches(self.token_mode) {
                continue;
            }
            let (Some(pattern), Some(state)) = (
                self.patterns.get(rule.marker),
                self.states.get(rule.marker).copied(),
            ) else {
                continue;
            };
            let (next, work) = pattern.step(state, byte);
            // The special token finishes a spelling the switch cut (see `set_token_mode`):
            // the marker is the cut text plus the token.
            let cut_here = if cut_any && (SYMBOLIC..FIRST_STOP).contains(&rule.marker) {
                cut.get(rule.marker - SYMBOLIC).copied().flatten()
            } else {
                None
            };
            let symbol = if rule.marker == SYMBOLIC + THINK_END {
                SYM_THINK_END
            } else {
                SYM_DSML
            };
            let finishes_cut = cut_here.filter(|cut| cut.completed_by_token && byte == symbol);
            // An empty spelling: the reference ends reasoning after the first byte when the
            // thinking-end spelling is empty, and never matches it elsewhere.
            let complete = pattern.is_complete(next)
                || (pattern.is_empty() && rule.eats_newlines)
                || finishes_cut.is_some();
            self.work += work;
            if let Some(slot) = self.states.get_mut(rule.marker) {
                *slot = next;
            }
            if rule.eats_newlines {
                // A spelling cut by a switch to token input was a partial match the byte
                // after it breaks: like any breaking newline, that byte is not eaten.
                if let Some(count) = self.newlines.get_mut(rule.marker) {
                    if let Some(cut) = finishes_cut {
                        *count = cut.newlines;
                    } else if byte == b'\n' && state == 0 && next == 0 && cut_here.is_none() {
                        *count += 1;
                    } else if next != state + 1 {
                        *count = 0;
                    }
                }
            }
            if complete {
                let len = match finishes_cut {
                    Some(cut) => cut.partial + 1,
                    None => pattern.len(),
                };
                hit = Some((rule, len as u64));
                break;
            }
        }
        if let Some((rule, len)) = hit {
            let start = self.pos.saturating_sub(len + self.eaten_newlines(rule));
            self.fire(rule, start, is_symbol(byte), out);
        }
    }

    /// Append one byte of stage text to this push's run.
    fn append(&mut self, kind: Out, byte: u8) {
        if self.run_open {
            if let Some(Piece {
                body: Body::Text { bytes, .. },
                ..
            }) = self.pending.back_mut()
            {
                bytes.push(byte);
                return;
            }
        }
        self.pending.push_back(Piece {
            start: self.pos - 1,
            origin: self.origin,
            body: Body::Text {
                out: kind,
                bytes: vec![byte],
                symbol: false,
            },
        });
        self.run_open = true;
    }

    /// Queue an output produced at a marker, at the current position.
    fn produce(&mut self, event: ParseEvent) {
        let sticky = self.marker_in_push;
        self.pending.push_back(Piece {
            start: self.pos,
            origin: self.origin,
            body: Body::Event { event, sticky },
        });
        self.run_open = false;
    }

    fn produce_fragment(&mut self, fragment: &str) {
        let index = self.call_index;
        self.produce(ParseEvent::ToolCallArguments {
            index,
            fragment: fragment.to_owned(),
        });
    }

    /// A `\n` while leading-newline removal is active: a stop sequence gets the first look
    /// (a stop of `"\n"` matches it), otherwise the byte is dropped and every partial match
    /// forgotten, since the byte is not content.
    fn leading_newline(&mut self, out: &mut Vec<ParseEvent>) {
        let mut hit = None;
        for index in 0..self.rules().len() {
            let Some(rule) = self.rules().get(index).copied() else {
                break;
            };
            if rule.marker < FIRST_STOP {
                continue;
            }
            if let (Some(pattern), Some(state)) = (
                self.patterns.get(rule.marker),
                self.states.get(rule.marker).copied(),
            ) {
                let (next, work) = pattern.step(state, b'\n');
                self.work += work;
                if pattern.is_complete(next) {
                    hit = Some(rule);
                    break;
                }
            }
        }
        match hit {
            Some(rule) => self.fire(rule, self.pos, false, out),
            None => self.reset_states(),
        }
    }

    /// How many `\n` right before the partial match of `rule` it would take with it.
    fn eaten_newlines(&self, rule: Rule) -> u64 {
        if rule.eats_newlines {
            self.newlines.get(rule.marker).copied().unwrap_or(0)
        } else {
            0
        }
    }

    /// The earliest position where a marker may have begun, or `u64::MAX` when none has.
    fn hold_start(&self) -> u64 {
        let mut hold = u64::MAX;
        for rule in self.rules() {
            if !rule.watches(self.token_mode) {
                continue;
            }
            let partial = self.states.get(rule.marker).copied().unwrap_or(0) as u64
                + self.eaten_newlines(*rule);
            if partial > 0 {
                hold = hold.min(self.pos.saturating_sub(partial));
            }
        }
        hold
    }

    /// End of a push: release what can no longer be part of a marker; the rest (whole
    /// pieces) waits for the next push.
    fn settle(&mut self, out: &mut Vec<ParseEvent>) {
        self.run_open = false;
        self.work += self.rules().len() as u64;
        let hold = self.hold_start();
        while self
            .pending
            .front()
            .is_some_and(|piece| piece.releasable(hold))
        {
            if let Some(piece) = self.pending.pop_front() {
                self.emit(piece, u64::MAX, out);
            }
        }
    }

    /// Release every pending piece, cutting text at stream position `cut`.
    fn release(&mut self, cut: u64, out: &mut Vec<ParseEvent>) {
        while let Some(piece) = self.pending.pop_front() {
            self.emit(piece, cut, out);
        }
        self.run_open = false;
    }

    /// A marker completed: release the output before `start`, drop the marker, act on it.
    /// `by_token`: a special token's symbol completed it (token input).
    fn fire(&mut self, rule: Rule, start: u64, by_token: bool, out: &mut Vec<ParseEvent>) {
        self.release(start, out);
        self.reset_states();
        // What a marker completed by a special token makes goes out with the push, as in the
        // reference, even when a marker may begin right after it (`tests/parser_cases.rs`).
        self.marker_in_push = start >= self.push_start && !by_token;
        let marker = if (SYMBOLIC..FIRST_STOP).contains(&rule.marker) {
            rule.marker - SYMBOLIC
        } else {
            rule.marker
        };
        match (marker, self.stage) {
            (THINK_END, Stage::Reasoning) => {
                let json = if self.json_mode {
                    Json::Prefix
                } else {
                    Json::Off
                };
                self.stage = Stage::Content(json);
                self.strip_leading = true;
            }
            (THINK_END, _) => self.strip_leading = false,
            (DSML_START, _) => self.stage = Stage::Block,
            (FENCE_JSON | FENCE_PLAIN, _) => self.stage = Stage::Content(Json::Inside),
            (BRACE | BRACKET, _) => {
                let text = if marker == BRACE { "{" } else { "[" };
                self.produce(ParseEvent::Text {
                    segment: Segment::Content,
                    text: text.to_owned(),
                    origin: self.origin,
                });
                self.stage = Stage::Content(Json::Inside);
            }
            (JSON_END, _) => self.stage = Stage::Content(Json::After),
            (INVOKE, _) => {
                self.name.clear();
                self.stage = Stage::InvokeName;
            }
            (QUOTE, _) => {
                let name = String::from_utf8_lossy(&self.name).into_owned();
                self.name.clear();
                self.produce(ParseEvent::ToolCallStart {
                    index: self.call_index,
                    name,
                });
                self.in_call = true;
                self.params = 0;
                self.stage = Stage::Invoke;
            }
            (PARAMETER, _) => {
                self.produce_fragment(if self.params == 0 { "{" } else { ", " });
                self.params += 1;
                self.stage = Stage::ParamName;
            }
            (SPACE, _) => {
                self.produce_fragment(": ");
                self.stage = Stage::ParamMode;
            }
            (STRING_TRUE, _) => {
                self.produce_fragment("\"");
                self.stage = Stage::Value { string: true };
            }
            (STRING_FALSE, _) => self.stage = Stage::Value { string: false },
            (DSML_CLOSE, Stage::Value { string }) => {
                if string {
                    self.produce_fragment("\"");
                }
                self.stage = Stage::Invoke;
            }
            (DSML_CLOSE, _) => {
                self.produce_fragment(if self.params == 0 { "{}" } else { "}" });
                self.produce(ParseEvent::ToolCallEnd {
                    index: self.call_index,
                });
                self.in_call = false;
                self.call_index += 1;
                self.stage = Stage::Block;
            }
            (BLOCK_END_V4 | BLOCK_END_V41, _) => {
                self.stage = Stage::Done;
                self.done = true;
            }
            (marker, _) => {
                let sequence = self
                    .stops
                    .get(marker - FIRST_STOP)
                    .cloned()
                    .unwrap_or_default();
                out.push(ParseEvent::StopSequence { sequence });
                self.stopped_at = Some(self.origin);
                self.stage = Stage::Done;
                self.done = true;
            }
        }
        if self.done {
            self.release(u64::MAX, out);
        }
    }

    fn reset_states(&mut self) {
        self.work += self.states.len() as u64;
        self.states.iter_mut().for_each(|s| *s = 0);
        self.newlines.iter_mut().for_each(|n| *n = 0);
        self.cut = [None; 5];
    }

    /// Turn one pending piece into its event, text cut at stream position `cut`.
    fn emit(&mut self, piece: Piece, cut: u64, out: &mut Vec<ParseEvent>) {
        let (kind, mut bytes, symbol) = match piece.body {
            Body::Event { event, .. } => {
                out.push(event);
                return;
            }
            Body::Text {
                out: kind,
                bytes,
                symbol,
            } => (kind, bytes, symbol),
        };
        let keep = if symbol {
            if cut > piece.start {
                bytes.len()
            } else {
                0
            }
        } else {
            cut.saturating_sub(piece.start).min(bytes.len() as u64) as usize
        };
        bytes.truncate(keep);
        if bytes.is_empty() {
            return;
        }
        self.work += bytes.len() as u64;
        let text = String::from_utf8_lossy(&bytes);
        let index = self.call_index;
        let origin = piece.origin;
        out.push(match kind {
            Out::Reasoning => ParseEvent::Text {
                segment: Segment::Reasoning,
                text: text.into_owned(),
                origin,
            },
            Out::Content => ParseEvent::Text {
                segment: Segment::Content,
                text: text.into_owned(),
                origin,
            },
            Out::Space => ParseEvent::Text {
                segment: Segment::Content,
                text: " ".to_owned(),
                origin,
            },
            Out::StringValue => {
                let mut fragment = String::with_capacity(text.len() + 2);
                escape_string_into(&text, &mut fragment);
                ParseEvent::ToolCallArguments { index, fragment }
            }
            Out::RawArgument => ParseEvent::ToolCallArguments {
                index,
                fragment: text.into_owned(),
            },
        });
    }
}
