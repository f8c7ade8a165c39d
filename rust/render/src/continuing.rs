//! Rendering a conversation that extends one rendered before: the next turn of a stored
//! conversation, whose prompt repeats the previous turn's up to where the new messages start.
//!
//! A block renders from its own messages, the conversation's settings (version, special
//! tokens, thinking mode, tools, reasoning effort, response format) and, for a prefix
//! assistant, its place; the head before the first block renders from the settings and (V4)
//! the hoisted system messages. So when both conversations have the same settings, the same
//! hoisted messages and the same leading messages (compared, not assumed), every leading block
//! normalized from the same messages into the same shape renders to the same text, and is
//! copied from the earlier prompt instead of written again. Normalization itself (V4 user
//! merging and result sorting, V4.1 runs) is done on the whole new conversation, so a block the
//! new messages change (a user message merged into the last one, results sorted once all have
//! come) has another shape and is written anew. Prefix assistants are always written.
//!
//! Worked example (V4, tools on): the earlier conversation `user, assistant(calls a, b),
//! tool(a), tool(b)` normalizes to blocks `[user] [assistant] [tool a, tool b]`; the next turn
//! adds `assistant(call c), tool(c)`, giving `[user] [assistant] [tool a, tool b] [assistant]
//! [tool c]`. The first three blocks have the same shapes over equal messages: the prompt up to
//! the end of `[tool a, tool b]` is copied, and only the last two blocks and the generation
//! suffix are written.

use std::collections::HashMap;
use std::sync::Arc;

use deepseek_model::{Conversation, Message, ModelVersion, SpecialTokens};

use crate::dialect::Dialect;
use crate::normalize::{normalize, Block};
use crate::writer::{Mark, Writer};
use crate::{write_prompt, RenderedPrompt, Resume};

/// The index standing for V4.1's created head system message (not one of the conversation's).
const CREATED_HEAD: usize = usize::MAX;
/// The index of a message that stands at several places of the conversation (one value shared
/// twice): its block is never reused.
const REPEATED: usize = usize::MAX - 1;

/// A rendered conversation, kept to render a later conversation that extends it.
#[derive(Debug, Clone)]
pub struct RenderedConversation {
    conversation: Arc<Conversation>,
    version: ModelVersion,
    special_tokens: SpecialTokens,
    prompt: RenderedPrompt,
    /// Every normalized block's shape, and where each starts (one more mark where they end).
    shapes: Vec<Shape>,
    marks: Vec<Mark>,
    /// V4: the hoisted system messages.
    hoisted: Vec<usize>,
    /// Bytes copied from the earlier prompt.
    reused: usize,
}

impl RenderedConversation {
    /// The prompt.
    pub fn prompt(&self) -> &RenderedPrompt {
        &self.prompt
    }

    /// The conversation rendered.
    pub fn conversation(&self) -> &Arc<Conversation> {
        &self.conversation
    }

    /// How many leading bytes of the prompt were copied from the conversation it continued.
    pub fn reused_bytes(&self) -> usize {
        self.reused
    }

    /// Roughly the bytes held (prompt and layout; the conversation is shared).
    pub fn approx_bytes(&self) -> usize {
        self.prompt.prompt.len()
            + self.prompt.special_ranges.len() * 16
            + self.shapes.len() * 64
            + self.marks.len() * 24
    }
}

/// What a block is made of: its kind and the indices of its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    System { message: usize, head: bool },
    UserRun(Vec<Vec<usize>>),
    Reminder(usize),
    Assistant { message: usize, prefix: bool },
}

impl Shape {
    fn of(block: &Block<'_>, places: &Places) -> Self {
        let at = |message: &Message| places.index_of(message);
        match block {
            Block::System { message, head } => Shape::System {
                message: at(message),
                head: *head,
            },
            Block::UserRun(run) => Shape::UserRun(
                run.iter()
                    .map(|unit| unit.iter().map(|m| at(m)).collect())
                    .collect(),
            ),
            Block::LatestReminder(message) => Shape::Reminder(at(message)),
            Block::Assistant(message) => Shape::Assistant {
                message: at(message),
                prefix: message.prefix,
            },
        }
    }

    /// Whether the block renders the same wherever it sits, from messages before `same`.
    fn reusable_within(&self, same: usize) -> bool {
        let inside = |index: &usize| *index == CREATED_HEAD || *index < same;
        match self {
            Shape::System { message, .. } | Shape::Reminder(message) => inside(message),
            Shape::UserRun(units) => units.iter().flatten().all(inside),
            Shape::Assistant { message, prefix } => !prefix && inside(message),
        }
    }
}

/// Where each of a conversation's messages stands, by its address (normalization hands out
/// references to the messages themselves).
struct Places(HashMap<*const Message, usize>);

impl Places {
    fn of(messages: &[Arc<Message>]) -> Self {
        let mut places = HashMap::with_capacity(messages.len());
        for (index, message) in messages.iter().enumerate() {
            places
                .entry(Arc::as_ptr(message))
                .and_modify(|place| *place = REPEATED)
                .or_insert(index);
        }
        Self(places)
    }

    /// The index of `message` (one of the conversation's, or the created head).
    fn index_of(&self, message: &Message) -> usize {
        self.0
            .get(&(message as *const Message))
            .copied()
            .unwrap_or(CREATED_HEAD)
    }
}

/// Render `conversation`, copying from `previous` the blocks both render alike (see the
/// module doc). The prompt equals [`crate::render`]'s for the same conversation.
pub fn render_continuing(
    conversation: Arc<Conversation>,
    version: ModelVersion,
    special_tokens: &SpecialTokens,
    previous: Option<&RenderedConversation>,
) -> RenderedConversation {
    let dialect = Dialect::of(version);
    let empty_head = Message::system("");
    let places = Places::of(&conversation.messages);
    let normalized = normalize(&conversation, &dialect, &empty_head);
    let shapes: Vec<Shape> = normalized
        .blocks
        .iter()
        .map(|block| Shape::of(block, &places))
        .collect();
    let hoisted: Vec<usize> = normalized
        .hoisted_systems
        .iter()
        .map(|m| places.index_of(m))
        .collect();
    let reuse = previous.and_then(|previous| {
        let blocks = reusable_blocks(
            previous,
            &conversation,
            version,
            special_tokens,
            &shapes,
            &hoisted,
        );
        (blocks > 0).then_some((previous, blocks))
    });
    let mut marks = Vec::with_capacity(shapes.len() + 1);
    let (mut w, resume, reused) = match reuse {
        Some((previous, blocks)) => {
            let mark = previous.marks.get(blocks).copied().unwrap_or_default();
            let capacity = mark.bytes + mark.bytes / 8 + 4096;
            let w = Writer::resume(special_tokens, &previous.prompt, mark, capacity);
            marks.extend_from_slice(previous.marks.get(..blocks).unwrap_or_default());
            (w, Some(Resume { block: blocks }), mark.bytes)
        }
        None => (Writer::new(special_tokens), None, 0),
    };
    write_prompt(
        &mut w,
        &conversation,
        dialect,
        &normalized,
        resume,
        &mut |_, writer| marks.push(writer.position()),
    );
    drop(normalized);
    RenderedConversation {
        version,
        special_tokens: special_tokens.clone(),
        prompt: w.finish(),
        shapes,
        marks,
        hoisted,
        reused,
        conversation,
    }
}

/// How many leading blocks of `conversation` render as `previous`'s did.
fn reusable_blocks(
    previous: &RenderedConversation,
    conversation: &Conversation,
    version: ModelVersion,
    special_tokens: &SpecialTokens,
    shapes: &[Shape],
    hoisted: &[usize],
) -> usize {
    let before = previous.conversation.as_ref();
    let same_settings = previous.version == version
        && previous.special_tokens == *special_tokens
        && before.thinking_mode == conversation.thinking_mode
        && before.tools_active() == conversation.tools_active()
        && before.reasoning_effort == conversation.reasoning_effort
        && before.response_format == conversation.response_format
        && before.tools == conversation.tools;
    if !same_settings {
        return 0;
    }
    let same = before
        .messages
        .iter()
        .zip(&conversation.messages)
        .take_while(|(a, b)| Arc::ptr_eq(a, b) || a == b)
        .count();
    // V4 writes every system message into the head, before the first block.
    if previous.hoisted != hoisted || hoisted.iter().any(|&index| index >= same) {
        return 0;
    }
    previous
        .shapes
        .iter()
        .zip(shapes)
        .take_while(|(before, now)| before == now && now.reusable_within(same))
        .count()
}
