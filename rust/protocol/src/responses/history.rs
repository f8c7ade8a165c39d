//! A stored Responses conversation, ready to continue (`previous_response_id`, `conversation`):
//! every input and output item so far, and the conversion state after them.
//!
//! Continuing converts exactly what the same request would convert with the whole item list
//! as its input: the request's own `instructions` (never the stored ones), then the stored
//! items, then its own items. The stored items are not converted again: the item conversion is
//! a state machine over the items in order (`input.rs`), and the history keeps its state after
//! them, unclosed, so a continuation resumes it with the new items alone. The state depends on
//! the model version and the conversion options it was built under, and (only after a
//! `tool_search_output`) on the names of the declared tools; under others it is built again
//! from the items, with the same result as converting the whole list.
//!
//! Items are kept as parsed; the history is immutable and cheap to clone (its parts are
//! shared), so one stored conversation can be continued by several requests at once.

use std::sync::Arc;

use deepseek_model::{ConversionError, ModelVersion, WebSearchBehavior};
use serde_json::Value;

use super::input::{self, ConvertedInput, InputState};
use super::tool_defs::TakenNames;
use super::wire::{Input, Item, MessageContent, MessageItem, Role};
use crate::{intake, ProtocolError};

/// Every item of a stored conversation and the conversion state after them (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct ResponsesHistory {
    items: Vec<Arc<[Item]>>,
    item_count: usize,
    /// JSON bytes the items were read from (for memory accounting).
    bytes: usize,
    built: Option<Arc<Built>>,
}

/// The conversion state after every item, and what it was built under.
#[derive(Debug)]
struct Built {
    key: BuildKey,
    /// `Err`: an item cannot be converted; every continuation fails with that error, as the
    /// whole item list would.
    state: Result<InputState, ConversionError>,
}

/// What a conversion state depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BuildKey {
    version: ModelVersion,
    image_token: String,
    web_search: WebSearchBehavior,
    /// The declared tools' names the state started from.
    names: TakenNames,
}

impl BuildKey {
    /// Whether a state built under `self` serves a continuation under `other`.
    fn serves(&self, other: &BuildKey, claimed_names: bool) -> bool {
        self.version == other.version
            && self.image_token == other.image_token
            && self.web_search == other.web_search
            && (!claimed_names || self.names == other.names)
    }
}

/// What converting a continuation gives: the request's messages, and the history after its
/// input items (the response's output items are added with [`ResponsesHistory::extend`]).
pub(crate) struct Continued {
    pub(crate) input: ConvertedInput,
    pub(crate) history: ResponsesHistory,
}

impl ResponsesHistory {
    /// An empty history (a conversation with no items yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// A history holding `items` (a JSON array of Responses input or output items, as a
    /// request's `input` holds them). Shape errors are `invalid request body: …`.
    pub fn from_json(json: &[u8]) -> Result<Self, ProtocolError> {
        Self::new().extend_json(json)
    }

    /// This history with `items` (a JSON array of items) after its own: a response's output
    /// items, or items added to a conversation. Converting them waits for the next
    /// continuation when no state is built yet; otherwise the state moves on at once.
    pub fn extend_json(&self, json: &[u8]) -> Result<Self, ProtocolError> {
        let value = intake::parse_json(json)?;
        let items = parse_items(value)?;
        Ok(self.with_items(items, json.len()))
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.item_count
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.item_count == 0
    }

    /// Roughly the bytes this history holds (items and converted messages), for caches.
    pub fn approx_bytes(&self) -> usize {
        2 * self.bytes + 64 * self.item_count
    }

    fn with_items(&self, items: Vec<Item>, bytes: usize) -> Self {
        let first_index = self.item_count;
        let built = self.built.as_ref().map(|built| {
            let state = built.state.clone().and_then(|state| {
                let mut state = state.convert(
                    &items,
                    first_index,
                    built.key.version,
                    &built.key.image_token,
                    built.key.web_search,
                )?;
                state.freeze();
                Ok(state)
            });
            Arc::new(Built {
                key: built.key.clone(),
                state,
            })
        });
        let mut segments = self.items.clone();
        let count = items.len();
        if !items.is_empty() {
            segments.push(items.into());
        }
        Self {
            items: segments,
            item_count: self.item_count + count,
            bytes: self.bytes + bytes,
            built,
        }
    }

    /// The conversion state after every item, under `key`: the kept one when it serves,
    /// otherwise built again from the items.
    fn state_under(&self, key: &BuildKey) -> Result<InputState, ConversionError> {
        if let Some(built) = &self.built {
            let claimed = built.state.as_ref().is_ok_and(InputState::claimed_names);
            if built.key.serves(key, claimed) {
                return built.state.clone();
            }
        }
        let mut state = InputState::new(key.names.clone());
        let mut first_index = 0;
        for segment in &self.items {
            state = state.convert(
                segment,
                first_index,
                key.version,
                &key.image_token,
                key.web_search,
            )?;
            first_index += segment.len();
        }
        state.freeze();
        Ok(state)
    }

    /// Convert a request's `instructions` and `input` after this history (see the module doc).
    /// Errors name the request's own items by their place in its `input`.
    pub(crate) fn continue_with(
        &self,
        instructions: Option<String>,
        input: Option<Input>,
        version: ModelVersion,
        image_token: &str,
        web_search: WebSearchBehavior,
        tool_names: TakenNames,
    ) -> Result<Continued, ConversionError> {
        let key = BuildKey {
            version,
            image_token: image_token.to_owned(),
            web_search,
            names: tool_names,
        };
        let (items, listed) = match input {
            None => (Vec::new(), false),
            Some(Input::Text(text)) => (
                vec![Item::Message(MessageItem {
                    role: Role::User,
                    content: MessageContent::Text(text),
                })],
                false,
            ),
            Some(Input::Items(items)) => (items, true),
        };
        if self.is_empty() && items.is_empty() {
            // Nothing stored, nothing new: the request converts as it would on its own.
            let input = listed.then(|| Input::Items(Vec::new()));
            let converted = input::convert_input(
                instructions,
                input,
                version,
                image_token,
                web_search,
                key.names.clone(),
            )?;
            let history = ResponsesHistory {
                built: None,
                ..self.clone()
            };
            return Ok(Continued {
                input: converted,
                history,
            });
        }
        let mut state =
            self.state_under(&key)?
                .convert(&items, 0, version, image_token, web_search)?;
        state.freeze();
        let input = state
            .clone()
            .finish(instructions.filter(|s| !s.is_empty()))?;
        let mut segments = self.items.clone();
        let count = items.len();
        if !items.is_empty() {
            segments.push(items.into());
        }
        let history = ResponsesHistory {
            items: segments,
            item_count: self.item_count + count,
            bytes: self.bytes,
            built: Some(Arc::new(Built {
                key,
                state: Ok(state),
            })),
        };
        Ok(Continued { input, history })
    }
}

/// A JSON array of items.
fn parse_items(value: Value) -> Result<Vec<Item>, ProtocolError> {
    if !value.is_array() {
        return Err(ProtocolError::InvalidBody(
            "stored items should be a list of input items".to_owned(),
        ));
    }
    match intake::from_value::<Input>(value)? {
        Input::Items(items) => Ok(items),
        Input::Text(_) => Err(ProtocolError::InvalidBody(
            "stored items should be a list of input items".to_owned(),
        )),
    }
}
