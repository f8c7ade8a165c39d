//! Message normalization before rendering (behavior.md §8.6): system hoisting (V4), reminder
//! runs (V4.1), the created head system, tool-result reordering and user/tool merging. The
//! result is the list of blocks the prompt is written from, in order.

use deepseek_model::{Conversation, Message, ResponseFormat, Role};

use crate::dialect::Dialect;

/// One unit of the prompt after normalization.
#[derive(Debug)]
pub(crate) enum Block<'a> {
    /// A system message rendered in place (V4.1). `head` marks the first message, which
    /// carries the preamble, tools and format sections.
    System { message: &'a Message, head: bool },
    /// Consecutive user/tool messages rendered under one user token.
    UserRun(Vec<&'a Message>),
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
    let (hoisted_systems, mut messages): (Vec<&Message>, Vec<&Message>) =
        conversation.messages.iter().partition(|m| m.role == Role::System);
    sort_result_windows_v4(&mut messages);
    Normalized { hoisted_systems, blocks: into_blocks(&messages, false) }
}

fn normalize_v41<'a>(conversation: &'a Conversation, empty_head: &'a Message) -> Normalized<'a> {
    let mut messages: Vec<&Message> = Vec::with_capacity(conversation.messages.len() + 1);
    let mut previous: Option<Role> = None;
    for message in &conversation.messages {
        let repeated_reminder = message.role == Role::LatestReminder && previous == Some(Role::LatestReminder);
        previous = Some(message.role);
        if !repeated_reminder {
            messages.push(message);
        }
    }
    let needs_head = conversation.tools_active()
        || matches!(conversation.response_format, ResponseFormat::JsonObject | ResponseFormat::JsonSchema(_));
    if needs_head && messages.first().map(|m| m.role) != Some(Role::System) {
        messages.insert(0, empty_head);
    }
    let mut blocks = into_blocks(&messages, true);
    sort_results_in_runs_v41(&mut blocks);
    if let Some(Block::System { head, .. }) = blocks.first_mut() {
        *head = true;
    }
    Normalized { hoisted_systems: Vec::new(), blocks }
}

/// Group messages into blocks. User and tool messages merge into one run; on V4 a tool
/// message directly after a user message starts a new run.
fn into_blocks<'a>(messages: &[&'a Message], v41: bool) -> Vec<Block<'a>> {
    let mut blocks: Vec<Block<'a>> = Vec::new();
    for &message in messages {
        match message.role {
            Role::System => blocks.push(Block::System { message, head: false }),
            Role::LatestReminder => blocks.push(Block::LatestReminder(message)),
            Role::Assistant => blocks.push(Block::Assistant(message)),
            Role::User | Role::Tool => {
                if let Some(Block::UserRun(run)) = blocks.last_mut() {
                    let after_user = run.last().is_some_and(|m| m.role == Role::User);
                    let v4_breaks = !v41 && after_user && message.role == Role::Tool;
                    if !v4_breaks {
                        run.push(message);
                        continue;
                    }
                }
                blocks.push(Block::UserRun(vec![message]));
            }
        }
    }
    blocks
}

/// V4.1: the position of `message`'s tool_call_id among `calls`' ids.
fn call_position(calls: &Message, message: &Message) -> Option<usize> {
    let id = message.tool_call_id.as_deref()?;
    if message.role != Role::Tool {
        return None;
    }
    calls.calls().iter().position(|call| call.id == id)
}

/// V4: the N messages right after an assistant with N calls (systems already hoisted away)
/// are stably sorted: tool messages by `tool_call_id` (absent first), then everything else.
/// This matches the call order V4 renders (calls sorted by id). No sort happens when fewer
/// than N messages follow.
fn sort_result_windows_v4(messages: &mut [&Message]) {
    for index in 0..messages.len() {
        let Some(&assistant) = messages.get(index) else { continue };
        let count = assistant.calls().len();
        if assistant.role != Role::Assistant || count == 0 {
            continue;
        }
        if let Some(window) = messages.get_mut(index + 1..index + 1 + count) {
            window.sort_by(|a, b| v4_result_key(a).cmp(&v4_result_key(b)));
        }
    }
}

fn v4_result_key(message: &Message) -> (bool, Option<&str>) {
    (message.role != Role::Tool, message.tool_call_id.as_deref())
}

/// V4.1: inside each user/tool run, the tool messages are stably sorted (among the positions
/// tool messages hold) by the call order of the most recent assistant with calls; an unknown
/// id sorts as position 0.
fn sort_results_in_runs_v41(blocks: &mut [Block<'_>]) {
    let mut latest_calls: Option<&Message> = None;
    for block in blocks.iter_mut() {
        match block {
            Block::Assistant(message) if !message.calls().is_empty() => latest_calls = Some(message),
            Block::UserRun(run) => {
                let Some(assistant) = latest_calls else { continue };
                let slots: Vec<usize> =
                    run.iter().enumerate().filter(|(_, m)| m.role == Role::Tool).map(|(i, _)| i).collect();
                let mut tools: Vec<&Message> = slots.iter().filter_map(|&i| run.get(i).copied()).collect();
                tools.sort_by_key(|m| call_position(assistant, m).unwrap_or(0));
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
