//! TOOLCALLS: an assistant's tool calls as DSML markup (`tests/rules.rs`, the `*_tool_call*`
//! and `*_float_spelling` cases; the conformance prompts), and the
//! required-tool opener.

use deepseek_model::pyjson::pyjson_with;
use deepseek_model::{SpecialToken, ToolCall};
use serde_json::Value;

use crate::dialect::Dialect;
use crate::writer::Writer;

/// One DSML parameter: its name, whether the value is a raw string, and the value text.
struct Param {
    name: String,
    is_string: bool,
    value: String,
}

/// `arguments` parsed as a JSON object gives one parameter per key (duplicate keys keep the
/// last value at the first key's position, which is what serde_json's ordered map does);
/// anything else is a single raw `arguments` string parameter.
fn params(arguments: &str, dialect: &Dialect) -> Vec<Param> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => map
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(text) => Param {
                    name,
                    is_string: true,
                    value: text,
                },
                other => Param {
                    name,
                    is_string: false,
                    value: pyjson_with(&other, dialect.float_style),
                },
            })
            .collect(),
        _ => vec![Param {
            name: "arguments".to_owned(),
            is_string: true,
            value: arguments.to_owned(),
        }],
    }
}

/// TOOLCALLS: `"\n\n<DSML calls>\n"` + each invoke followed by `"\n"` + `"</DSML calls>"`.
/// V4.1 writes nothing without calls; V4 writes an empty block for an empty (but present)
/// call list.
pub(crate) fn write_tool_calls(w: &mut Writer<'_>, dialect: &Dialect, calls: Option<&[ToolCall]>) {
    let Some(calls) = calls else { return };
    if calls.is_empty() && dialect.v41 {
        return;
    }
    // V4 lists the calls ordered by id (stable for equal ids); V4.1 keeps the given order.
    let mut ordered: Vec<&ToolCall> = calls.iter().collect();
    if !dialect.v41 {
        ordered.sort_by(|a, b| a.id.cmp(&b.id));
    }
    w.text("\n\n");
    open_tag(w, dialect.calls_tag);
    w.text("\n");
    for call in ordered {
        write_invoke(w, dialect, call);
        w.text("\n");
    }
    close_tag(w, dialect.calls_tag);
}

/// The opener appended when a tool call is required: `"\n\n<DSML calls>\n"`.
pub(crate) fn write_required_opener(w: &mut Writer<'_>, dialect: &Dialect) {
    w.text("\n\n");
    open_tag(w, dialect.calls_tag);
    w.text("\n");
}

fn write_invoke(w: &mut Writer<'_>, dialect: &Dialect, call: &ToolCall) {
    w.text("<");
    w.special(SpecialToken::Dsml);
    w.text(dialect.invoke_tag);
    w.text(" name=\"");
    w.text(&call.name);
    w.text("\">\n");
    let params = params(&call.arguments, dialect);
    if dialect.v41 {
        // Parameters joined by "\n", then "\n" before the closing tag (even with none).
        for (index, param) in params.iter().enumerate() {
            if index > 0 {
                w.text("\n");
            }
            write_param(w, dialect, param);
        }
        w.text("\n");
    } else {
        // Each parameter followed by "\n".
        for param in &params {
            write_param(w, dialect, param);
            w.text("\n");
        }
    }
    close_tag(w, dialect.invoke_tag);
}

fn write_param(w: &mut Writer<'_>, dialect: &Dialect, param: &Param) {
    w.text("<");
    w.special(SpecialToken::Dsml);
    w.text(dialect.parameter_tag);
    w.text(" name=\"");
    w.text(&param.name);
    w.text(if param.is_string {
        "\" string=\"true\">"
    } else {
        "\" string=\"false\">"
    });
    w.text(&param.value);
    close_tag(w, dialect.parameter_tag);
}

fn open_tag(w: &mut Writer<'_>, tag: &str) {
    w.text("<");
    w.special(SpecialToken::Dsml);
    w.text(tag);
    w.text(">");
}

fn close_tag(w: &mut Writer<'_>, tag: &str) {
    w.text("</");
    w.special(SpecialToken::Dsml);
    w.text(tag);
    w.text(">");
}
