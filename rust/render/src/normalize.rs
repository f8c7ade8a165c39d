//! Message normalization before rendering (`tests/rules.rs`): system hoisting (V4), reminder
//! runs (V4.1), the created head system, user merging (V4), tool-result reordering and
//! user/tool runs. The result is the list of blocks the prompt is written from, in order.

use deepseek_model::{Conversation, Message, ResponseFormat, Role};

use crate::dialect::Dialect;

/// One message, or (V4 only) several consecutive user messages merged into one part.
/// Never empty.
pub(crate) type Unit<'a> = Vec<&'a Message>;

/// One unit of the prompt after normalization.
#[derive(Debug)]
pub(crate) enum Block<'a> {
    /// A system message rendered in place (V4.1). `head` marks the first message, which
    /// carries the preamble, tools and format sections.
    System {
        message: &'a Message,
        head: bool,
    },
    /// Consecutive user/tool units rendered under one user token.
    UserRun(Vec<Unit<'a>>),
    LatestReminder(&'a Message),
    Assistant(&'a Message),
}

/// The normalized conversation.
#[derive(Debug)]
pub(crate) struct Normalized<'a> {
    /// V4 only: every system message, in order, to be hoisted into the head.
    pub(crate) hoisted_systems: Vec<&'a Message>,
    pub(crate) blocks: Vec<Block<'a>>,
}

impl Normalized<'_> {
    /// True when the last block is a prefix assistant (no generation suffix follows it).
    pub(crate) fn ends_with_prefix(&self) -> bool {
        matches!(self.blocks.last(), Some(Block::Assistant(message)) if message.prefix)
    }
}

/// `empty_head` is the message used as the created head system on V4.1.
pub(crate) fn normalize<'a>(
    conversation: &'a Conversation,
    dialect: &Dialect,
    empty_head: &'a Message,
) -> Normalized<'a> {
    if dialect.v41 {
        normalize_v41(conversation, empty_head)
    } else {
        normalize_v4(conversation)
    }
}

fn normalize_v4(conversation: &Conversation) -> Normalized<'_> {
    let (hoisted_systems, messages): (Vec<&Message>, Vec<&Message>) = conversation
        .messages
        .iter()
        .map(|m| &**m)
        .partition(|m| m.role == Role::System);
    // Consecutive user messages become one unit before tool results are sorted.
    let mut units: Vec<Unit<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        match units.last_mut() {
            Some(unit) if message.role == Role::User && role(unit) == Some(Role::User) => {
                unit.push(message)
            }
            _ => units.push(vec![message]),
        }
    }
    sort_result_windows_v4(&mut units);
    Normalized {
        hoisted_systems,
        blocks: into_blocks(units, false),
    }
}

fn normalize_v41<'a>(conversation: &'a Conversation, empty_head: &'a Message) -> Normalized<'a> {
    let mut messages: Vec<&Message> = Vec::with_capacity(conversation.messages.len() + 1);
    let mut previous: Option<Role> = None;
    for message in &conversation.messages {
        let repeated_reminder =
            message.role == Role::LatestReminder && previous == Some(Role::LatestReminder);
        previous = Some(message.role);
        if !repeated_reminder {
            messages.push(message);
        }
    }
    let needs_head = conversation.tools_active()
        || matches!(
            conversation.response_format,
            ResponseFormat::JsonObject | ResponseFormat::JsonSchema(_)
        );
    if needs_head && messages.first().map(|m| m.role) != Some(Role::System) {
        messages.insert(0, empty_head);
    }
    let mut blocks = into_blocks(messages.into_iter().map(|m| vec![m]).collect(), true);
    sort_results_in_runs_v41(&mut blocks);
    if let Some(Block::System { head, .. }) = blocks.first_mut() {
        *head = true;
    }
    Normalized {
        hoisted_systems: Vec::new(),
        blocks,
    }
}

fn role(unit: &Unit<'_>) -> Option<Role> {
    unit.first().map(|m| m.role)
}

/// Group units into blocks. User and tool units merge into one run; on V4 a tool message
/// directly after a user message starts a new run.
fn into_blocks(units: Vec<Unit<'_>>, v41: bool) -> Vec<Block<'_>> {
    let mut blocks: Vec<Block<'_>> = Vec::new();
    for unit in units {
        let (Some(unit_role), Some(&message)) = (role(&unit), unit.first()) else {
            continue;
        };
        match unit_role {
            Role::System => blocks.push(Block::System {
                message,
                head: false,
            }),
            Role::LatestReminder => blocks.push(Block::LatestReminder(message)),
            Role::Assistant => blocks.push(Block::Assistant(message)),
            Role::User | Role::Tool => {
                if let Some(Block::UserRun(run)) = blocks.last_mut() {
                    let after_user = run.last().and_then(role) == Some(Role::User);
                    let v4_breaks = !v41 && after_user && unit_role == Role::Tool;
                    if !v4_breaks {
                        run.push(unit);
                        continue;
                    }
                }
                blocks.push(Block::UserRun(vec![unit]));
            }
        }
    }
    blocks
}

/// V4: the N units right after an assistant with N calls (systems already hoisted away,
/// users merged) are stably sorted: tool messages by `tool_call_id` (absent first), then
/// everything else. This matches the call order V4 renders (calls sorted by id). No sort
/// happens when fewer than N units follow.
fn sort_result_windows_v4(units: &mut [Unit<'_>]) {
    // Windows are taken from the order before any sorting: an assistant that an earlier
    // window moved still sorts the units at its original position + 1.
    let windows: Vec<(usize, usize)> = units
        .iter()
        .enumerate()
        .filter_map(|(index, unit)| match unit.first() {
            Some(message) if message.role == Role::Assistant && !message.calls().is_empty() => {
                Some((index + 1, message.calls().len()))
            }
            _ => None,
        })
        .collect();
    for (start, count) in windows {
        if let Some(window) = units.get_mut(start..start + count) {
            window.sort_by(|a, b| v4_result_key(a).cmp(&v4_result_key(b)));
        }
    }
}

fn v4_result_key<'m>(unit: &Unit<'m>) -> (bool, Option<&'m str>) {
    match unit.first() {
        Some(message) if message.role == Role::Tool => (false, message.tool_call_id.as_deref()),
        _ => (true, None),
    }
}

/// V4.1: the position of `message`'s tool_call_id among `calls`' ids.
fn call_position(calls: &Message, message: &Message) -> Option<usize> {
    let id = message.tool_call_id.as_deref()?;
    calls.calls().iter().position(|call| call.id == id)
}

/// V4.1: inside each user/tool run, the tool messages that carry a `tool_call_id` are stably
/// sorted (among the positions they hold) by the call order of the most recent assistant
/// with calls; an unknown id sorts as position 0. Tool messages without an id, and user
/// messages, keep their positions.
fn sort_results_in_runs_v41(blocks: &mut [Block<'_>]) {
    let mut latest_calls: Option<&Message> = None;
    for block in blocks.iter_mut() {
        match block {
            Block::Assistant(message) if !message.calls().is_empty() => {
                latest_calls = Some(*message)
            }
            Block::UserRun(run) => {
                let Some(assistant) = latest_calls else {
                    continue;
                };
                let slots: Vec<usize> = run
                    .iter()
                    .enumerate()
                    .filter(|(_, unit)| {
                        unit.first()
                            .is_some_and(|m| m.role == Role::Tool && m.tool_call_id.is_some())
                    })
                    .map(|(i, _)| i)
                    .collect();
                let mut tools: Vec<Unit<'_>> =
                    slots.iter().filter_map(|&i| run.get(i).cloned()).collect();
                tools.sort_by_key(|unit| {
                    unit.first()
                        .and_then(|m| call_position(assistant, m))
                        .unwrap_or(0)
                });
                for (slot, tool) in slots.into_iter().zip(tools) {
                    if let Some(place) = run.get_mut(slot) {
                        *place = tool;
                    }
                }
            }
            _ => {}
        }
    }
}
