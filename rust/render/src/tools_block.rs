//! The TOOLS_BLOCK of the head system (`tests/conformance.rs`, `tests/rules.rs`), the schema lines
//! it lists, and the V4.1 "Updated Tool Schemas" section of a system message.

use deepseek_model::pyjson::pyjson_with;
use deepseek_model::{SpecialToken, ToolDefinition};
use serde_json::{Map, Value};

use crate::dialect::Dialect;
use crate::writer::Writer;

/// The fixed instructions before the schema list. `{dsml}`, `{think}` and `{/think}` are
/// special tokens; `{calls}`, `{invoke}` and `{parameter}` are the dialect's tag names.
const INSTRUCTIONS: &str = "## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a \"<{dsml}{calls}>\" block like the following:

<{dsml}{calls}>
<{dsml}{invoke} name=\"$TOOL_NAME\">
<{dsml}{parameter} name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</{dsml}{parameter}>
...
</{dsml}{invoke}>
<{dsml}{invoke} name=\"$TOOL_NAME2\">
...
</{dsml}{invoke}>
</{dsml}{calls}>

String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.

If thinking_mode is enabled (triggered by {think}), you MUST output your complete reasoning inside {think}...{/think} BEFORE any tool calls or final response.

Otherwise, output directly after {/think} with tool calls or final response.

### Available Tool Schemas

";

const CLOSING: &str = "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n";

/// Write the tools block for `tools`. Deferred tools are left out on both versions (the
/// reference does so on V4 too, although its description says V4 lists them;
/// `tests/rules.rs`, `v4_all_tools_deferred`).
pub(crate) fn write_tools_block(w: &mut Writer<'_>, dialect: &Dialect, tools: &[ToolDefinition]) {
    write_template(w, dialect, INSTRUCTIONS);
    let listed: Vec<&ToolDefinition> = tools.iter().filter(|tool| !tool.defer_loading).collect();
    w.text(&schema_lines(listed.iter().copied(), dialect));
    if listed.is_empty() && !dialect.v41 {
        // V4 writes one newline fewer around an empty list ("Schemas\n\n\nYou MUST").
        w.text(CLOSING.get(1..).unwrap_or_default());
    } else {
        w.text(CLOSING);
    }
}

/// V4.1: `"\n\n### Updated Tool Schemas\n\n"` + every tool's schema line (deferred included).
pub(crate) fn write_updated_tool_schemas(
    w: &mut Writer<'_>,
    dialect: &Dialect,
    tools: &[ToolDefinition],
) {
    w.text("\n\n### Updated Tool Schemas\n\n");
    w.text(&schema_lines(tools.iter(), dialect));
}

fn schema_lines<'t>(tools: impl Iterator<Item = &'t ToolDefinition>, dialect: &Dialect) -> String {
    tools
        .map(|tool| schema_line(tool, dialect))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `PYJSON({"name": …, "description": … or "", "parameters": … as stored})`.
fn schema_line(tool: &ToolDefinition, dialect: &Dialect) -> String {
    let mut map = Map::new();
    map.insert("name".to_owned(), Value::String(tool.name.clone()));
    map.insert(
        "description".to_owned(),
        Value::String(tool.description.clone().unwrap_or_default()),
    );
    map.insert(
        "parameters".to_owned(),
        tool.parameters.clone().unwrap_or(Value::Null),
    );
    pyjson_with(&Value::Object(map), dialect.float_style)
}

fn write_template(w: &mut Writer<'_>, dialect: &Dialect, template: &str) {
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        w.text(rest.get(..open).unwrap_or_default());
        let after = rest.get(open..).unwrap_or_default();
        let Some(close) = after.find('}') else {
            w.text(after);
            return;
        };
        match after.get(1..close).unwrap_or_default() {
            "dsml" => w.special(SpecialToken::Dsml),
            "think" => w.special(SpecialToken::ThinkingStart),
            "/think" => w.special(SpecialToken::ThinkingEnd),
            "calls" => w.text(dialect.calls_tag),
            "invoke" => w.text(dialect.invoke_tag),
            "parameter" => w.text(dialect.parameter_tag),
            _ => w.text(after.get(..=close).unwrap_or_default()),
        }
        rest = after.get(close + 1..).unwrap_or_default();
    }
    w.text(rest);
}
