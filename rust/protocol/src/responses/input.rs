//! `instructions` and `input` items to canonical messages (conformance cases `resp-basic-*`,
//! `resp-toolargs-*`, `resp-reasoning-*`, `mutation-resp-*`): message
//! items, reasoning, function / custom tool calls and their outputs, tool search items, and
//! the grouping and pairing rules that tie calls to outputs.
//!
//! Errors come in item order. Within one item the reference's order is kept: a message
//! first ends or joins the open turn (pairing errors), then its content is converted; a
//! `function_call_output` converts its output before looking up its call, a
//! `custom_tool_call_output` the other way round.
//!
//! Grouping: reasoning and consecutive assistant outputs (texts, calls) form one turn, i.e.
//! one assistant message followed by the outputs answering its calls. Outputs do not end a
//! turn; a text after calls, a call once every call so far is answered, reasoning after a
//! text or a call, or any other message does. A turn that ends with an unanswered call is
//! an error. Calls come out sorted by id (the reference keys them by id), their outputs in
//! the same order. Unknown items are ignored.
//!
//! The conversion is a state machine over the items in order ([`InputState`]): a stored
//! conversation keeps the state after its items, unclosed, and a later request resumes it with
//! its own items (`history.rs`), which converts exactly as the whole item list would.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use deepseek_model::{ConversionError, Message, ModelVersion, ToolCall, WebSearchBehavior};
use serde_json::{Map, Value};

use super::images::{self, PartLocation, UNSUPPORTED_DOCUMENT};
use super::tool_defs::{self, Pending, TakenNames};
use super::wire::{
    self, ContentBlock, Input, Item, MessageContent, OutputPart, Role, ToolOutput, TypedItem,
};
use crate::images::UNSUPPORTED_IMAGE_TEXT;
use crate::placeholder_text::PlaceholderText;

/// The messages of a request and the tools `tool_search_output` items loaded on the way.
#[derive(Debug, Default)]
pub struct ConvertedInput {
    pub messages: Vec<Arc<Message>>,
    /// In order, named as announced; their schemas are checked later.
    pub loaded_tools: Vec<Pending>,
}

/// Convert `instructions` and `input` into messages.
pub fn convert_input(
    instructions: Option<String>,
    input: Option<Input>,
    version: ModelVersion,
    image_token: &str,
    web_search: WebSearchBehavior,
    tool_names: TakenNames,
) -> Result<ConvertedInput, ConversionError> {
    let instructions = instructions.filter(|s| !s.is_empty());
    let Some(input) = input else {
        return match instructions {
            Some(text) => Ok(ConvertedInput {
                messages: vec![Arc::new(Message::system(text))],
                loaded_tools: Vec::new(),
            }),
            None => Err(ConversionError::new(
                "Either input or instructions must be provided",
            )),
        };
    };
    let items = match input {
        Input::Text(text) => {
            let mut messages: Vec<Arc<Message>> = instructions
                .into_iter()
                .map(|text| Arc::new(Message::system(text)))
                .collect();
            messages.push(Arc::new(Message::user(text)));
            return Ok(ConvertedInput {
                messages,
                loaded_tools: Vec::new(),
            });
        }
        Input::Items(items) if items.is_empty() => {
            return Err(ConversionError::new("Input items array must not be empty"));
        }
        Input::Items(items) => items,
    };
    let state = InputState {
        tool_names,
        ..InputState::default()
    };
    let mut builder = Builder::resume(version, image_token, web_search, state);
    for (index, item) in items.iter().enumerate() {
        builder.item(index, item)?;
    }
    builder.state.finish(instructions)
}

/// Where the conversion of an item list stands after some items: the messages so far, the open
/// turn (not yet closed: later items may answer its calls), the call ids seen, the tool names
/// taken. Cloned cheaply: the messages of earlier conversions are shared, not copied.
#[derive(Debug, Clone, Default)]
pub struct InputState {
    messages: Messages,
    loaded_tools: Vec<Pending>,
    turn: Option<Turn>,
    call_ids: HashSet<String>,
    answered_ids: HashSet<String>,
    /// Names of the declared and loaded tools so far.
    tool_names: TakenNames,
    /// A `tool_search_output` claimed names among `tool_names`: the state then depends on
    /// the declared tools it started from.
    claimed_names: bool,
}

impl InputState {
    /// An empty conversion that starts with the declared tools' names taken.
    pub fn new(tool_names: TakenNames) -> Self {
        Self {
            tool_names,
            ..Self::default()
        }
    }

    /// Whether a `tool_search_output` took names (so the declared tools matter).
    pub fn claimed_names(&self) -> bool {
        self.claimed_names
    }

    /// Share the messages so far with every clone, so cloning this state stays cheap.
    pub fn freeze(&mut self) {
        self.messages.freeze();
    }

    /// Resume with `items`, numbered in errors from `first_index`.
    pub fn convert(
        self,
        items: &[Item],
        first_index: usize,
        version: ModelVersion,
        image_token: &str,
        web_search: WebSearchBehavior,
    ) -> Result<Self, ConversionError> {
        let mut builder = Builder::resume(version, image_token, web_search, self);
        for (index, item) in items.iter().enumerate() {
            builder.item(first_index + index, item)?;
        }
        Ok(builder.state)
    }

    /// Close the open turn and gather the messages, after the `instructions` system message.
    pub fn finish(
        mut self,
        instructions: Option<String>,
    ) -> Result<ConvertedInput, ConversionError> {
        close_turn(&mut self)?;
        let mut messages = Vec::with_capacity(self.messages.len() + 1);
        messages.extend(instructions.map(|text| Arc::new(Message::system(text))));
        self.messages.move_into(&mut messages);
        Ok(ConvertedInput {
            messages,
            loaded_tools: self.loaded_tools,
        })
    }
}

/// Messages in order: segments shared with stored conversations, then this conversion's own.
#[derive(Debug, Clone, Default)]
struct Messages {
    frozen: Vec<Arc<[Arc<Message>]>>,
    fresh: Vec<Message>,
}

impl Messages {
    fn push(&mut self, message: Message) {
        self.fresh.push(message);
    }

    fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        self.fresh.extend(messages);
    }

    fn len(&self) -> usize {
        self.frozen
            .iter()
            .map(|segment| segment.len())
            .sum::<usize>()
            + self.fresh.len()
    }

    fn freeze(&mut self) {
        if !self.fresh.is_empty() {
            let fresh = std::mem::take(&mut self.fresh);
            self.frozen.push(fresh.into_iter().map(Arc::new).collect());
        }
    }

    /// Append every message to `out` (the shared ones shared, this conversion's moved).
    fn move_into(self, out: &mut Vec<Arc<Message>>) {
        for segment in &self.frozen {
            out.extend(segment.iter().cloned());
        }
        out.extend(self.fresh.into_iter().map(Arc::new));
    }
}

/// Consecutive assistant outputs merged into one message, with the outputs answering it.
#[derive(Debug, Clone, Default)]
struct Turn {
    /// An assistant message or call was seen (not only reasoning).
    has_output: bool,
    texts: Vec<String>,
    reasoning: Option<Vec<String>>,
    calls: Vec<ToolCall>,
    answered: Vec<bool>,
    /// Call id → index in `calls`.
    positions: HashMap<String, usize>,
    unanswered: usize,
    /// Outputs with the index of the call they answer, in arrival order.
    outputs: Vec<(usize, Vec<Message>)>,
}

impl Turn {
    fn all_answered(&self) -> bool {
        self.unanswered == 0
    }
}

struct Builder<'a> {
    version: ModelVersion,
    image_token: &'a str,
    web_search: WebSearchBehavior,
    state: InputState,
}

fn empty_call_id(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "Invalid 'input[{index}].call_id': empty string. Expected a string with minimum length 1, but got an empty string instead."
    ))
}

fn assistant_image(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "input[{index}]: Image in assistant message is unsupported"
    ))
}

impl<'a> Builder<'a> {
    fn resume(
        version: ModelVersion,
        image_token: &'a str,
        web_search: WebSearchBehavior,
        state: InputState,
    ) -> Self {
        Self {
            version,
            image_token,
            web_search,
            state,
        }
    }

    fn item(&mut self, index: usize, item: &Item) -> Result<(), ConversionError> {
        let typed = match item {
            Item::Message(message) => return self.message(index, message),
            Item::Typed(typed) => typed,
        };
        match typed {
            TypedItem::Message(message) => self.message(index, message),
            TypedItem::Reasoning(reasoning) => {
                let texts = reasoning.content.as_deref().unwrap_or_default();
                let joined = texts
                    .iter()
                    .map(|t| t.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                // Reasoning with text starts a new turn after a text or a call; without text
                // it only ends a turn that made calls, like an empty assistant text.
                if self.state.turn.as_ref().is_some_and(|t| {
                    !t.calls.is_empty() || (!joined.is_empty() && !t.texts.is_empty())
                }) {
                    self.close_turn()?;
                }
                // Reasoning without text counts as none.
                if !joined.is_empty() {
                    let turn = self.state.turn.get_or_insert_with(Turn::default);
                    turn.reasoning.get_or_insert_with(Vec::new).push(joined);
                }
                Ok(())
            }
            TypedItem::FunctionCall(call) => {
                let name = match &call.namespace {
                    Some(namespace) => {
                        tool_defs::namespaced_name(namespace, &call.name, self.version)
                    }
                    None => call.name.clone(),
                };
                self.call(
                    index,
                    ToolCall {
                        id: call.call_id.clone(),
                        name,
                        arguments: call.arguments.clone(),
                    },
                )
            }
            TypedItem::CustomToolCall(call) => {
                let mut object = Map::new();
                object.insert("input".to_owned(), Value::String(call.input.clone()));
                let arguments = Value::Object(object).to_string();
                self.call(
                    index,
                    ToolCall {
                        id: call.call_id.clone(),
                        name: call.name.clone(),
                        arguments,
                    },
                )
            }
            TypedItem::FunctionCallOutput(output) => {
                let message = self.output_message(index, &output.output)?;
                self.tool_output(index, output.call_id.as_deref(), message)
            }
            TypedItem::CustomToolCallOutput(output) => {
                let position = self.answer(index, &output.call_id)?;
                let empty = ToolOutput::Text(String::new());
                let mut message =
                    self.output_message(index, output.output.as_ref().unwrap_or(&empty))?;
                message.tool_call_id = Some(output.call_id.clone());
                self.record_output(position, vec![message]);
                Ok(())
            }
            TypedItem::ToolSearchCall(call) if self.version.is_v41() => {
                let arguments = Value::Object(call.arguments.clone()).to_string();
                self.call(
                    index,
                    ToolCall {
                        id: call.call_id.clone(),
                        name: "tool_search".to_owned(),
                        arguments,
                    },
                )
            }
            TypedItem::ToolSearchOutput(output) if self.version.is_v41() => {
                self.tool_search_output(index, output)
            }
            // A server-side search ends a turn that made calls, like an assistant text would.
            TypedItem::WebSearchCall {} => {
                if self
                    .state
                    .turn
                    .as_ref()
                    .is_some_and(|t| !t.calls.is_empty())
                {
                    self.close_turn()?;
                }
                Ok(())
            }
            // V4 drops tool search items, and unknown items are ignored: neither ends a turn.
            TypedItem::ToolSearchCall(_) | TypedItem::ToolSearchOutput(_) | TypedItem::Other => {
                Ok(())
            }
        }
    }

    fn message(
        &mut self,
        index: usize,
        message: &wire::MessageItem,
    ) -> Result<(), ConversionError> {
        if message.role == Role::Assistant {
            self.open_text_turn()?;
            let text = self.assistant_text(index, &message.content)?;
            if let (Some(turn), false) = (self.state.turn.as_mut(), text.is_empty()) {
                turn.texts.push(text);
            }
            return Ok(());
        }
        self.close_turn()?;
        let base = match (message.role, self.version.is_v41()) {
            (Role::User, _) | (Role::Developer, false) => Message::user(""),
            _ => Message::system(""),
        };
        let content = self.content(index, &message.content)?;
        self.state.messages.push(content.into_message(base));
        Ok(())
    }

    fn content(
        &self,
        index: usize,
        content: &MessageContent,
    ) -> Result<PlaceholderText, ConversionError> {
        let mut out = PlaceholderText::default();
        match content {
            MessageContent::Text(text) => out.push_text(text),
            MessageContent::Blocks(blocks) => {
                if self.version.is_v41() {
                    for (part, block) in blocks.iter().enumerate() {
                        if let ContentBlock::InputImage(image) = block {
                            images::check_present(
                                image,
                                &PartLocation {
                                    item: index,
                                    container: "content",
                                    part,
                                },
                            )?;
                        }
                    }
                }
                for (part, block) in blocks.iter().enumerate() {
                    match block {
                        ContentBlock::InputText { text } | ContentBlock::OutputText { text } => {
                            out.push_text(text)
                        }
                        ContentBlock::InputFile {} => out.push_text(UNSUPPORTED_DOCUMENT),
                        ContentBlock::InputImage(image) => {
                            let at = PartLocation {
                                item: index,
                                container: "content",
                                part,
                            };
                            self.push_image(&mut out, image, &at)?;
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    fn push_image(
        &self,
        out: &mut PlaceholderText,
        image: &wire::ResponsesInputImage,
        at: &PartLocation<'_>,
    ) -> Result<(), ConversionError> {
        if self.version.is_v41() {
            out.push_image(images::image_source(image, at)?, self.image_token);
        } else {
            out.push_text(UNSUPPORTED_IMAGE_TEXT);
        }
        Ok(())
    }

    fn assistant_text(
        &self,
        index: usize,
        content: &MessageContent,
    ) -> Result<String, ConversionError> {
        match content {
            MessageContent::Text(text) => Ok(text.clone()),
            MessageContent::Blocks(blocks) => {
                // V4.1 refuses images here, after checking every image part names a source
                // (the URL itself is not looked at).
                let mut has_image = false;
                let mut parts = Vec::with_capacity(blocks.len());
                for (part, block) in blocks.iter().enumerate() {
                    parts.push(match block {
                        ContentBlock::InputText { text } | ContentBlock::OutputText { text } => {
                            text.clone()
                        }
                        ContentBlock::InputFile {} => UNSUPPORTED_DOCUMENT.to_owned(),
                        ContentBlock::InputImage(_) if !self.version.is_v41() => {
                            UNSUPPORTED_IMAGE_TEXT.to_owned()
                        }
                        ContentBlock::InputImage(image) => {
                            images::check_present(
                                image,
                                &PartLocation {
                                    item: index,
                                    container: "content",
                                    part,
                                },
                            )?;
                            has_image = true;
                            String::new()
                        }
                    });
                }
                if has_image {
                    return Err(assistant_image(index));
                }
                Ok(parts.join("\n\n"))
            }
        }
    }

    fn output_message(
        &self,
        index: usize,
        output: &ToolOutput,
    ) -> Result<Message, ConversionError> {
        let mut out = PlaceholderText::default();
        match output {
            ToolOutput::Text(text) => out.push_text(text),
            ToolOutput::Parts(parts) => {
                if self.version.is_v41() {
                    for (part, block) in parts.iter().enumerate() {
                        if let OutputPart::InputImage(image) = block {
                            images::check_present(
                                image,
                                &PartLocation {
                                    item: index,
                                    container: "output",
                                    part,
                                },
                            )?;
                        }
                    }
                }
                for (part, block) in parts.iter().enumerate() {
                    match block {
                        OutputPart::InputText { text } => out.push_text(text),
                        OutputPart::InputFile {} => out.push_text(UNSUPPORTED_DOCUMENT),
                        OutputPart::InputImage(image) => {
                            let at = PartLocation {
                                item: index,
                                container: "output",
                                part,
                            };
                            self.push_image(&mut out, image, &at)?;
                        }
                    }
                }
            }
        }
        Ok(out.into_message(Message::tool("", None)))
    }

    fn tool_output(
        &mut self,
        index: usize,
        call_id: Option<&str>,
        mut message: Message,
    ) -> Result<(), ConversionError> {
        let Some(id) = call_id else {
            // An output naming no call stands alone: it ends the turn.
            self.close_turn()?;
            self.state.messages.push(message);
            return Ok(());
        };
        let position = self.answer(index, id)?;
        message.tool_call_id = Some(id.to_owned());
        self.record_output(position, vec![message]);
        Ok(())
    }

    fn tool_search_output(
        &mut self,
        index: usize,
        output: &wire::ToolSearchOutputItem,
    ) -> Result<(), ConversionError> {
        let position = self.answer(index, &output.call_id)?;
        let path = format!("input[{index}].");
        let pending =
            tool_defs::check_declared(output.tools.clone(), self.version, self.web_search, &path)?;
        let content = tool_defs::loaded_listing(&output.tools, index)?;
        let mut tools: Vec<Pending> = pending.into_iter().map(Pending::deferred).collect();
        for tool in &mut tools {
            tool.claim_name(&mut self.state.tool_names);
            self.state.claimed_names = true;
        }
        let mut messages = vec![Message::tool(content, Some(output.call_id.clone()))];
        if !tools.is_empty() {
            let mut system = Message::system("");
            system.tools = Some(tools.iter().map(Pending::provisional).collect());
            messages.push(system);
        }
        self.record_output(position, messages);
        self.state.loaded_tools.extend(tools);
        Ok(())
    }

    /// Make the open turn ready for an assistant text: a text after calls starts a new one.
    fn open_text_turn(&mut self) -> Result<(), ConversionError> {
        if self
            .state
            .turn
            .as_ref()
            .is_some_and(|t| !t.calls.is_empty())
        {
            self.close_turn()?;
        }
        self.state.turn.get_or_insert_with(Turn::default).has_output = true;
        Ok(())
    }

    fn call(&mut self, index: usize, call: ToolCall) -> Result<(), ConversionError> {
        if call.id.is_empty() {
            return Err(empty_call_id(index));
        }
        if !self.state.call_ids.insert(call.id.clone()) {
            return Err(ConversionError::new(format!(
                "Duplicate 'call_id': {}.",
                call.id
            )));
        }
        if self
            .state
            .turn
            .as_ref()
            .is_some_and(|t| !t.calls.is_empty() && t.all_answered())
        {
            self.close_turn()?;
        }
        let turn = self.state.turn.get_or_insert_with(Turn::default);
        turn.has_output = true;
        turn.positions.insert(call.id.clone(), turn.calls.len());
        turn.calls.push(call);
        turn.answered.push(false);
        turn.unanswered += 1;
        Ok(())
    }

    /// Mark the call `id` answered by the output at `input[index]`; the call's position.
    fn answer(&mut self, index: usize, id: &str) -> Result<usize, ConversionError> {
        if id.is_empty() {
            return Err(empty_call_id(index));
        }
        if self.state.answered_ids.contains(id) {
            return Err(ConversionError::new(format!(
                "Duplicate tool output for call_id: {id}."
            )));
        }
        let found = self.state.turn.as_mut().and_then(|t| {
            let position = *t.positions.get(id)?;
            Some((t, position))
        });
        let Some((turn, position)) = found else {
            return Err(ConversionError::new(format!(
                "No tool call found for tool output with call_id {id}."
            )));
        };
        if let Some(answered) = turn.answered.get_mut(position).filter(|a| !**a) {
            *answered = true;
            turn.unanswered = turn.unanswered.saturating_sub(1);
        }
        self.state.answered_ids.insert(id.to_owned());
        Ok(position)
    }

    fn record_output(&mut self, position: usize, messages: Vec<Message>) {
        if let Some(turn) = self.state.turn.as_mut() {
            turn.outputs.push((position, messages));
        }
    }

    fn close_turn(&mut self) -> Result<(), ConversionError> {
        close_turn(&mut self.state)
    }
}

/// Emit the open assistant message and its outputs, checking every call was answered.
fn close_turn(state: &mut InputState) -> Result<(), ConversionError> {
    let Some(mut turn) = state.turn.take() else {
        return Ok(());
    };
    let reasoning = turn.reasoning.take().map(|texts| texts.join("\n"));
    if !turn.has_output && reasoning.is_none() {
        return Ok(());
    }
    // The reference names one unanswered call, picked from a hash set; the last one is
    // what it names most often.
    if let Some((call, _)) = turn
        .calls
        .iter()
        .zip(&turn.answered)
        .rev()
        .find(|(_, answered)| !**answered)
    {
        return Err(ConversionError::new(format!(
            "No tool output found for tool call {}.",
            call.id
        )));
    }
    let calls = &turn.calls;
    turn.outputs.sort_by(|(a, _), (b, _)| {
        calls
            .get(*a)
            .map(|c| &c.id)
            .cmp(&calls.get(*b).map(|c| &c.id))
    });
    turn.calls.sort_by(|a, b| a.id.cmp(&b.id));
    let calls = if turn.calls.is_empty() {
        None
    } else {
        Some(turn.calls)
    };
    state.messages.push(Message::assistant(
        turn.texts.join("\n\n"),
        reasoning,
        calls,
        false,
    ));
    state
        .messages
        .extend(turn.outputs.into_iter().flat_map(|(_, messages)| messages));
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    const V4: ModelVersion = ModelVersion::DeepseekV4Pro;
    const V41: ModelVersion = ModelVersion::DeepseekV41Flash;

    /// `role:content` plus `|rc=…`, `|calls=…`, `|id=…` where set.
    fn describe(m: &Message) -> String {
        let mut s = format!("{}:{}", m.role.as_str(), m.content);
        if let Some(rc) = &m.reasoning_content {
            s.push_str(&format!("|rc={rc}"));
        }
        if let Some(calls) = &m.tool_calls {
            let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
            s.push_str(&format!("|calls={}", ids.join(",")));
        }
        if let Some(id) = &m.tool_call_id {
            s.push_str(&format!("|id={id}"));
        }
        s
    }

    fn run(version: ModelVersion, items: Value) -> Result<Vec<String>, String> {
        let input: Input = serde_json::from_value(items).unwrap();
        convert_input(
            None,
            Some(input),
            version,
            "<｜image｜>",
            WebSearchBehavior::Drop,
            TakenNames::default(),
        )
        .map(|c| c.messages.iter().map(|m| describe(m)).collect())
        .map_err(|e| e.message)
    }

    fn fc(id: &str) -> Value {
        json!({"type": "function_call", "call_id": id, "name": "f", "arguments": "{}"})
    }

    fn out(id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": id, "output": format!("o-{id}")})
    }

    fn user() -> Value {
        json!({"role": "user", "content": "u"})
    }

    fn said(text: &str) -> Value {
        json!({"role": "assistant", "content": text})
    }

    fn thought(texts: &[&str]) -> Value {
        let content: Vec<Value> = texts
            .iter()
            .map(|t| json!({"type": "reasoning_text", "text": t}))
            .collect();
        json!({"type": "reasoning", "summary": [], "content": content})
    }

    type Outcome = Result<Vec<String>, String>;

    /// Behaviors observed on the reference wheel; each case is (name, items, expected).
    #[test]
    fn grouping_and_pairing() {
        let ok = |v: &[&str]| -> Outcome { Ok(v.iter().map(|s| (*s).to_owned()).collect()) };
        let err = |m: &str| -> Outcome { Err(m.to_owned()) };
        let cases: Vec<(&str, Value, Outcome)> = vec![
            (
                "outputs follow their calls in id order",
                json!([user(), fc("c2"), fc("call_1"), out("call_1"), out("c2")]),
                ok(&["user:u", "assistant:|calls=c2,call_1", "tool:o-c2|id=c2", "tool:o-call_1|id=call_1"]),
            ),
            (
                "a call after every call is answered starts a new turn",
                json!([user(), fc("c1"), out("c1"), fc("c2"), out("c2")]),
                ok(&["user:u", "assistant:|calls=c1", "tool:o-c1|id=c1", "assistant:|calls=c2", "tool:o-c2|id=c2"]),
            ),
            (
                "a call while calls are pending joins the turn",
                json!([user(), fc("c1"), fc("c2"), out("c1"), fc("c3"), out("c2"), out("c3")]),
                ok(&["user:u", "assistant:|calls=c1,c2,c3", "tool:o-c1|id=c1", "tool:o-c2|id=c2", "tool:o-c3|id=c3"]),
            ),
            ("a text after calls ends the turn", json!([user(), fc("c1"), said("t"), out("c1")]), err("No tool output found for tool call c1.")),
            ("a text then a call share a turn", json!([user(), said("a"), fc("c1"), out("c1")]), ok(&["user:u", "assistant:a|calls=c1", "tool:o-c1|id=c1"])),
            ("texts merge, empty ones skipped", json!([user(), said("a"), said(""), said("b")]), ok(&["user:u", "assistant:a\n\nb"])),
            ("reasoning goes to the next output", json!([user(), thought(&["r", "s"]), said("a")]), ok(&["user:u", "assistant:a|rc=r\ns"])),
            ("reasoning after a text starts a turn", json!([user(), said("a"), thought(&["r"]), said("b")]), ok(&["user:u", "assistant:a", "assistant:b|rc=r"])),
            ("empty reasoning does not split texts", json!([user(), said("a"), thought(&[]), said("b")]), ok(&["user:u", "assistant:a\n\nb"])),
            ("empty reasoning ends a turn with calls", json!([user(), fc("c"), thought(&[]), out("c")]), err("No tool output found for tool call c.")),
            ("trailing reasoning is a message", json!([user(), thought(&["r"])]), ok(&["user:u", "assistant:|rc=r"])),
            ("trailing empty reasoning is dropped", json!([user(), thought(&[""])]), ok(&["user:u"])),
            ("a web search call ends a turn with calls", json!([user(), fc("c"), {"type": "web_search_call"}, out("c")]), err("No tool output found for tool call c.")),
            ("a web search call keeps texts together", json!([user(), said("a"), {"type": "web_search_call"}, said("b")]), ok(&["user:u", "assistant:a\n\nb"])),
            ("unknown items are ignored", json!([user(), fc("c"), {"type": "item_reference", "id": "x"}, out("c")]), ok(&["user:u", "assistant:|calls=c", "tool:o-c|id=c"])),
            (
                "an output without call id stands alone",
                json!([{"type": "function_call_output", "output": "o"}, user()]),
                ok(&["tool:o", "user:u"]),
            ),
            ("a second output for a call", json!([user(), fc("c1"), out("c1"), out("c1")]), err("Duplicate tool output for call_id: c1.")),
            ("a reused call id", json!([user(), fc("c1"), out("c1"), fc("c1")]), err("Duplicate 'call_id': c1.")),
            ("an output before its call", json!([user(), out("c1"), fc("c1")]), err("No tool call found for tool output with call_id c1.")),
            (
                "an empty call id",
                json!([user(), fc(""), out("")]),
                err("Invalid 'input[1].call_id': empty string. Expected a string with minimum length 1, but got an empty string instead."),
            ),
            (
                "custom tool call arguments are compact JSON",
                json!([user(), {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": "é\"\n"}, {"type": "custom_tool_call_output", "call_id": "c"}]),
                ok(&["user:u", "assistant:|calls=c", "tool:|id=c"]),
            ),
        ];
        for (name, items, expected) in cases {
            assert_eq!(run(V4, items), expected, "{name}");
        }
    }

    #[test]
    fn version_rules() {
        let namespaced = json!([{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "namespace": "ns"}, out("c")]);
        let names = |version| {
            let input: Input = serde_json::from_value(namespaced.clone()).unwrap();
            let converted = convert_input(
                None,
                Some(input),
                version,
                "<｜image｜>",
                WebSearchBehavior::Drop,
                TakenNames::default(),
            )
            .unwrap();
            converted.messages[0].calls()[0].name.clone()
        };
        assert_eq!(names(V4), "ns__f");
        assert_eq!(names(V41), "ns::f");

        let developer = json!([{"role": "developer", "content": "d"}]);
        assert_eq!(run(V4, developer.clone()), Ok(vec!["user:d".to_owned()]));
        assert_eq!(run(V41, developer), Ok(vec!["system:d".to_owned()]));

        let image = json!([{"role": "user", "content": [{"type": "input_text", "text": "<｜image｜> typed"}, {"type": "input_image", "image_url": "http://x/a.png"}]}]);
        assert_eq!(
            run(V4, image.clone()),
            Ok(vec![
                "user:<｜image｜> typed\n\n[Unsupported Image]".to_owned()
            ])
        );
        let input: Input = serde_json::from_value(image).unwrap();
        let converted = convert_input(
            None,
            Some(input),
            V41,
            "<｜image｜>",
            WebSearchBehavior::Drop,
            TakenNames::default(),
        )
        .unwrap();
        let message = &converted.messages[0];
        let start = "<｜image｜> typed\n\n".len();
        assert_eq!(
            message.image_placeholders,
            vec![start..start + "<｜image｜>".len()],
            "only the inserted token is a placeholder"
        );
        assert_eq!(message.image_sources[0].path, "input[0]");
    }

    #[test]
    fn output_conversion_order() {
        let bad_image = json!([{"type": "input_image", "image_url": "ftp://x"}]);
        let function =
            json!([user(), {"type": "function_call_output", "call_id": "a", "output": bad_image}]);
        assert_eq!(
            run(V41, function),
            Err("input[1]: Unsupported image_url format".to_owned()),
            "function output: content first"
        );
        let custom = json!([user(), {"type": "custom_tool_call_output", "call_id": "a", "output": bad_image}]);
        assert_eq!(
            run(V41, custom),
            Err("No tool call found for tool output with call_id a.".to_owned()),
            "custom output: pairing first"
        );
        let assistant = json!([user(), {"role": "assistant", "content": [{"type": "input_image", "image_url": "ftp://x"}]}]);
        assert_eq!(
            run(V41, assistant),
            Err("input[1]: Image in assistant message is unsupported".to_owned())
        );
    }
}
