//! `instructions` and `input` items to canonical messages (behavior.md §5.2): message
//! items, reasoning, function / custom tool calls and their outputs, tool search items, and
//! the grouping and pairing rules that tie calls to outputs.

use std::collections::HashSet;
use std::ops::Range;

use deepseek_model::{ConversionError, ImageSource, Message, ModelVersion, ToolCall, ToolDefinition};
use serde_json::{Map, Value};

use super::images::{self, PartLocation, UNSUPPORTED_DOCUMENT, UNSUPPORTED_IMAGE};
use super::tool_defs::{self, LoadedTool};
use super::wire::{self, ContentBlock, Input, Item, MessageContent, OutputPart, Role, ToolOutput, TypedItem};

/// The messages of a request and the tools a `tool_search_output` loaded on the way.
#[derive(Debug, Default)]
pub struct ConvertedInput {
    pub messages: Vec<Message>,
    pub loaded_tools: Vec<ToolDefinition>,
}

/// Convert `instructions` and `input` into messages.
pub fn convert_input(
    instructions: Option<String>,
    input: Option<Input>,
    version: ModelVersion,
    image_token: &str,
) -> Result<ConvertedInput, ConversionError> {
    let instructions = instructions.filter(|s| !s.is_empty());
    let Some(input) = input else {
        return match instructions {
            Some(text) => Ok(ConvertedInput { messages: vec![Message::system(text)], loaded_tools: Vec::new() }),
            None => Err(ConversionError::new("Either input or instructions must be provided")),
        };
    };
    let mut builder = Builder::new(version, image_token);
    if let Some(text) = instructions {
        builder.out.messages.push(Message::system(text));
    }
    match input {
        Input::Text(text) => builder.out.messages.push(Message::user(text)),
        Input::Items(items) => {
            if items.is_empty() {
                return Err(ConversionError::new("Input items array must not be empty"));
            }
            for (index, item) in items.into_iter().enumerate() {
                builder.item(index, item)?;
            }
            builder.close_turn()?;
        }
    }
    Ok(builder.out)
}

/// Text with image placeholders, built part by part and joined with blank lines.
struct Content {
    text: String,
    parts: usize,
    sources: Vec<ImageSource>,
    placeholders: Vec<Range<usize>>,
}

impl Content {
    fn new() -> Self {
        Self { text: String::new(), parts: 0, sources: Vec::new(), placeholders: Vec::new() }
    }

    fn separate(&mut self) {
        if self.parts > 0 {
            self.text.push_str("\n\n");
        }
        self.parts += 1;
    }

    fn push_text(&mut self, text: &str) {
        self.separate();
        self.text.push_str(text);
    }

    fn push_image(&mut self, source: ImageSource, token: &str) {
        self.separate();
        let start = self.text.len();
        self.text.push_str(token);
        self.placeholders.push(start..self.text.len());
        self.sources.push(source);
    }

    fn into_message(self, mut message: Message) -> Message {
        message.content = self.text;
        message.image_sources = self.sources;
        message.image_placeholders = self.placeholders;
        message
    }
}

/// An image part in some position, converted by the version's rules.
enum ImagePolicy {
    /// V4: the literal `[Unsupported Image]`, nothing validated.
    Text,
    /// V4.1: a placeholder and a validated source.
    Placeholder,
}

/// Consecutive assistant outputs merged into one message, with the outputs answering it.
struct Turn {
    texts: Vec<String>,
    reasoning: Option<String>,
    calls: Vec<ToolCall>,
    answered: Vec<bool>,
    /// Outputs with the index of the call they answer (`None`: no call id), in arrival order.
    outputs: Vec<(Option<usize>, Vec<Message>)>,
}

impl Turn {
    fn new(reasoning: Option<String>) -> Self {
        Self { texts: Vec::new(), reasoning, calls: Vec::new(), answered: Vec::new(), outputs: Vec::new() }
    }

    fn all_answered(&self) -> bool {
        self.answered.iter().all(|a| *a)
    }
}

struct Builder<'a> {
    version: ModelVersion,
    image_token: &'a str,
    out: ConvertedInput,
    turn: Option<Turn>,
    /// Reasoning texts waiting for the next assistant output.
    reasoning: Option<Vec<String>>,
    call_ids: HashSet<String>,
    answered_ids: HashSet<String>,
}

fn empty_call_id(index: usize) -> ConversionError {
    ConversionError::new(format!(
        "Invalid 'input[{index}].call_id': empty string. Expected a string with minimum length 1, but got an empty string instead."
    ))
}

impl<'a> Builder<'a> {
    fn new(version: ModelVersion, image_token: &'a str) -> Self {
        Self {
            version,
            image_token,
            out: ConvertedInput::default(),
            turn: None,
            reasoning: None,
            call_ids: HashSet::new(),
            answered_ids: HashSet::new(),
        }
    }

    fn image_policy(&self) -> ImagePolicy {
        if self.version.is_v41() {
            ImagePolicy::Placeholder
        } else {
            ImagePolicy::Text
        }
    }

    fn item(&mut self, index: usize, item: Item) -> Result<(), ConversionError> {
        let typed = match item {
            Item::Message(message) => TypedItem::Message(message),
            Item::Typed(typed) => typed,
        };
        match typed {
            TypedItem::Message(message) => self.message(index, message),
            TypedItem::Reasoning(reasoning) => {
                self.close_assistant()?;
                let texts = reasoning.content.unwrap_or_default();
                if !texts.is_empty() {
                    self.reasoning.get_or_insert_with(Vec::new).extend(texts.into_iter().map(|t| t.text));
                }
                Ok(())
            }
            TypedItem::FunctionCall(call) => {
                let name = match call.namespace {
                    Some(namespace) => tool_defs::namespaced_name(&namespace, &call.name, self.version),
                    None => call.name,
                };
                self.call(index, ToolCall { id: call.call_id, name, arguments: call.arguments })
            }
            TypedItem::CustomToolCall(call) => {
                let mut object = Map::new();
                object.insert("input".to_owned(), Value::String(call.input));
                let arguments = Value::Object(object).to_string();
                self.call(index, ToolCall { id: call.call_id, name: call.name, arguments })
            }
            TypedItem::FunctionCallOutput(output) => {
                let message = self.tool_output(index, output.output)?;
                self.output(index, output.call_id, vec![message])
            }
            TypedItem::CustomToolCallOutput(output) => {
                let message = self.tool_output(index, output.output)?;
                self.output(index, Some(output.call_id), vec![message])
            }
            TypedItem::ToolSearchCall(call) if self.version.is_v41() => {
                let arguments = Value::Object(call.arguments).to_string();
                self.call(index, ToolCall { id: call.call_id, name: "tool_search".to_owned(), arguments })
            }
            TypedItem::ToolSearchOutput(output) if self.version.is_v41() => {
                let loaded = tool_defs::loaded_tools(output.tools, index)?;
                let content = LoadedTool::listing(&loaded);
                let tools: Vec<ToolDefinition> = loaded.into_iter().map(|t| t.definition).collect();
                let mut messages = vec![Message::tool(content, Some(output.call_id.clone()))];
                if !tools.is_empty() {
                    let mut system = Message::system("");
                    system.tools = Some(tools.clone());
                    messages.push(system);
                }
                self.output(index, Some(output.call_id), messages)?;
                self.out.loaded_tools.extend(tools.into_iter().map(|t| ToolDefinition { defer_loading: true, ..t }));
                Ok(())
            }
            TypedItem::ToolSearchCall(_) | TypedItem::ToolSearchOutput(_) | TypedItem::Other => self.close_turn(),
        }
    }

    fn message(&mut self, index: usize, message: wire::MessageItem) -> Result<(), ConversionError> {
        if message.role == Role::Assistant {
            let text = self.assistant_text(index, message.content)?;
            return self.assistant_text_output(text);
        }
        self.close_turn()?;
        let base = match (message.role, self.version.is_v41()) {
            (Role::User, _) | (Role::Developer, false) => Message::user(""),
            _ => Message::system(""),
        };
        let content = self.content(index, message.content)?;
        self.out.messages.push(content.into_message(base));
        Ok(())
    }

    fn content(&self, index: usize, content: MessageContent) -> Result<Content, ConversionError> {
        let mut out = Content::new();
        match content {
            MessageContent::Text(text) => out.push_text(&text),
            MessageContent::Blocks(blocks) => {
                for (part, block) in blocks.into_iter().enumerate() {
                    match block {
                        ContentBlock::InputText { text } | ContentBlock::OutputText { text } => out.push_text(&text),
                        ContentBlock::InputFile {} => out.push_text(UNSUPPORTED_DOCUMENT),
                        ContentBlock::InputImage(image) => {
                            let at = PartLocation { item: index, container: "content", part };
                            self.push_image(&mut out, &image, &at)?;
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    fn push_image(&self, out: &mut Content, image: &wire::ImagePart, at: &PartLocation<'_>) -> Result<(), ConversionError> {
        match self.image_policy() {
            ImagePolicy::Text => out.push_text(UNSUPPORTED_IMAGE),
            ImagePolicy::Placeholder => out.push_image(images::image_source(image, at)?, self.image_token),
        }
        Ok(())
    }

    fn assistant_text(&self, index: usize, content: MessageContent) -> Result<String, ConversionError> {
        match content {
            MessageContent::Text(text) => Ok(text),
            MessageContent::Blocks(blocks) => {
                let mut parts = Vec::with_capacity(blocks.len());
                for block in blocks {
                    parts.push(match block {
                        ContentBlock::InputText { text } | ContentBlock::OutputText { text } => text,
                        ContentBlock::InputFile {} => UNSUPPORTED_DOCUMENT.to_owned(),
                        ContentBlock::InputImage(_) => match self.image_policy() {
                            ImagePolicy::Text => UNSUPPORTED_IMAGE.to_owned(),
                            ImagePolicy::Placeholder => {
                                return Err(ConversionError::new(format!(
                                    "input[{index}]: Image in assistant message is unsupported"
                                )))
                            }
                        },
                    });
                }
                Ok(parts.join("\n\n"))
            }
        }
    }

    fn tool_output(&self, index: usize, output: ToolOutput) -> Result<Message, ConversionError> {
        let mut out = Content::new();
        match output {
            ToolOutput::Text(text) => out.push_text(&text),
            ToolOutput::Parts(parts) => {
                for (part, block) in parts.into_iter().enumerate() {
                    match block {
                        OutputPart::InputText { text } => out.push_text(&text),
                        OutputPart::InputFile {} => out.push_text(UNSUPPORTED_DOCUMENT),
                        OutputPart::InputImage(image) => {
                            let at = PartLocation { item: index, container: "output", part };
                            self.push_image(&mut out, &image, &at)?;
                        }
                    }
                }
            }
        }
        Ok(out.into_message(Message::tool("", None)))
    }

    /// The turn that the next assistant output joins: a new one after reasoning.
    fn open_turn(&mut self) -> Result<&mut Turn, ConversionError> {
        if let Some(texts) = self.reasoning.take() {
            self.close_assistant()?;
            self.turn = Some(Turn::new(Some(texts.join("\n"))));
        }
        Ok(self.turn.get_or_insert_with(|| Turn::new(None)))
    }

    fn assistant_text_output(&mut self, text: String) -> Result<(), ConversionError> {
        if self.reasoning.is_none() && self.turn.as_ref().is_some_and(|t| !t.calls.is_empty()) {
            self.close_assistant()?;
        }
        let turn = self.open_turn()?;
        if !text.is_empty() {
            turn.texts.push(text);
        }
        Ok(())
    }

    fn call(&mut self, index: usize, call: ToolCall) -> Result<(), ConversionError> {
        if call.id.is_empty() {
            return Err(empty_call_id(index));
        }
        if !self.call_ids.insert(call.id.clone()) {
            return Err(ConversionError::new(format!("Duplicate 'call_id': {}.", call.id)));
        }
        if self.reasoning.is_none() && self.turn.as_ref().is_some_and(|t| !t.calls.is_empty() && t.all_answered()) {
            self.close_assistant()?;
        }
        let turn = self.open_turn()?;
        turn.calls.push(call);
        turn.answered.push(false);
        Ok(())
    }

    fn output(&mut self, index: usize, call_id: Option<String>, messages: Vec<Message>) -> Result<(), ConversionError> {
        let Some(id) = call_id else {
            match self.turn.as_mut() {
                Some(turn) => turn.outputs.push((None, messages)),
                None => {
                    self.flush_reasoning();
                    self.out.messages.extend(messages);
                }
            }
            return Ok(());
        };
        if id.is_empty() {
            return Err(empty_call_id(index));
        }
        if self.answered_ids.contains(&id) {
            return Err(ConversionError::new(format!("Duplicate tool output for call_id: {id}.")));
        }
        let position = self.turn.as_ref().and_then(|t| t.calls.iter().position(|c| c.id == id));
        let (Some(turn), Some(position)) = (self.turn.as_mut(), position) else {
            return Err(ConversionError::new(format!("No tool call found for tool output with call_id {id}.")));
        };
        if let Some(answered) = turn.answered.get_mut(position) {
            *answered = true;
        }
        turn.outputs.push((Some(position), messages));
        self.answered_ids.insert(id);
        Ok(())
    }

    /// Emit the open assistant message and its outputs, checking every call was answered.
    fn close_assistant(&mut self) -> Result<(), ConversionError> {
        let Some(mut turn) = self.turn.take() else {
            return Ok(());
        };
        if let Some(missing) = turn.calls.iter().zip(&turn.answered).find(|(_, answered)| !**answered) {
            return Err(ConversionError::new(format!("No tool output found for tool call {}.", missing.0.id)));
        }
        let calls = if turn.calls.is_empty() { None } else { Some(turn.calls) };
        self.out.messages.push(Message::assistant(turn.texts.join("\n\n"), turn.reasoning, calls, false));
        turn.outputs.sort_by_key(|(position, _)| position.unwrap_or(usize::MAX));
        self.out.messages.extend(turn.outputs.into_iter().flat_map(|(_, messages)| messages));
        Ok(())
    }

    /// Reasoning with no assistant output after it becomes an assistant message of its own.
    fn flush_reasoning(&mut self) {
        if let Some(texts) = self.reasoning.take() {
            self.out.messages.push(Message::assistant("", Some(texts.join("\n")), None, false));
        }
    }

    /// Something other than an assistant output: close the turn and any pending reasoning.
    fn close_turn(&mut self) -> Result<(), ConversionError> {
        self.close_assistant()?;
        self.flush_reasoning();
        Ok(())
    }
}
