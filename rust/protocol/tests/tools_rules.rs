//! Table-driven tests of the tool rules. Expected values
//! were recorded from the reference package (deepseek-recipe 0.2.0) for the same inputs,
//! through a Chat Completions request: names; check order; stored fields; tool_choice with
//! and without thinking; output constraints. The schema outcomes themselves are
//! `deepseek-schema`'s fixtures (`rust/schema/tests/fixtures/`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use deepseek_model::{ModelVersion, ResponseFormat, ToolChoice, ToolDefinition};
use deepseek_protocol::tools::{
    apply_tool_choice, output_constraint, strict_tools_active, validate_tool_name, validate_tools,
    DeclaredTool, RequestedToolChoice,
};
use serde_json::{json, Value};

fn tool(name: &str, parameters: Option<Value>, strict: Option<bool>) -> DeclaredTool {
    DeclaredTool {
        name: name.into(),
        description: None,
        parameters,
        strict,
        defer_loading: false,
    }
}

fn chat_path(i: usize) -> String {
    format!("tools[{i}].function.name")
}

#[test]
fn tool_names() {
    let long = "a".repeat(129);
    let accented = "é".repeat(100);
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("get_weather", "tools[0].function.name", None),
        ("a-B_9", "tools[0].function.name", None),
        (&"a".repeat(128), "tools[0].function.name", None),
        ("", "tools[0].function.name", Some("Invalid 'tools[0].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.")),
        (&long, "tools[0].function.name", Some("Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 128, but got a string with length 129 instead.")),
        // Length counts UTF-8 bytes and comes before the pattern.
        (&accented, "tools[0].function.name", Some("Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 128, but got a string with length 200 instead.")),
        ("a b", "tools[0].function.name", Some("Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")),
        ("ns::a", "tools[3].name", Some("Invalid 'tools[3].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")),
        ("é", "tools[0].name", Some("Invalid 'tools[0].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")),
        ("a\0", "tools[0].name", Some("Invalid 'tools[0].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")),
    ];
    for (name, path, want) in cases {
        let got = validate_tool_name(name, path).err().map(|e| e.message);
        assert_eq!(got.as_deref(), *want, "name {name:?}");
    }
}

#[test]
fn check_order_names_then_uniqueness_and_schema_tool_by_tool() {
    let object = || Some(json!({"type": "object"}));
    let array = || Some(json!({"type": "array"}));
    let not_object = |f: &str| {
        format!("Invalid schema for function '{f}': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.")
    };
    let pattern = |i: usize| {
        format!("Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")
    };
    let cases: Vec<(&str, Vec<DeclaredTool>, String)> = vec![
        ("a bad name after a bad schema wins", vec![tool("f", array(), None), tool("a b", object(), None)], pattern(1)),
        ("an empty name after a duplicate wins", vec![tool("a", object(), None), tool("a", object(), None), tool("", object(), None)],
            "Invalid 'tools[2].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.".into()),
        ("duplicate before its own schema", vec![tool("a", object(), None), tool("a", array(), None)], "Tool names must be unique.".into()),
        ("schema before a later duplicate", vec![tool("a", array(), None), tool("a", object(), None)], not_object("a")),
        ("earlier schema before a later duplicate", vec![tool("a", object(), None), tool("b", object(), None), tool("c", array(), None), tool("a", object(), None)], not_object("c")),
        ("duplicate before a later schema", vec![tool("a", object(), None), tool("b", object(), None), tool("a", object(), None), tool("c", array(), None)], "Tool names must be unique.".into()),
        ("strict schema errors come in tool order", vec![
            tool("a", Some(json!({"type":"object","properties":{"x":{"type":"string"}}})), Some(true)),
            tool("b", array(), Some(true)),
        ], "Invalid tool parameters schema : missing field `items`".into()),
        ("missing input_schema (Messages) is null", vec![tool("f", Some(Value::Null), None)],
            "Invalid schema for function 'f': null is not of types \"boolean\", \"object\"".into()),
    ];
    for (name, tools, want) in cases {
        let got = validate_tools(tools, &chat_path).err().map(|e| e.message);
        assert_eq!(got.as_deref(), Some(want.as_str()), "{name}");
    }
}

#[test]
fn stored_tools_keep_declared_fields() {
    let tools = vec![
        DeclaredTool {
            name: "a".into(),
            description: Some("d".into()),
            parameters: None,
            strict: None,
            defer_loading: true,
        },
        DeclaredTool {
            name: "b".into(),
            description: None,
            parameters: None,
            strict: Some(false),
            defer_loading: false,
        },
        DeclaredTool {
            name: "c".into(),
            description: None,
            parameters: None,
            strict: Some(true),
            defer_loading: false,
        },
    ];
    let got = validate_tools(tools, &chat_path).unwrap();
    assert_eq!(got[0].parameters, Some(json!({})));
    assert_eq!(got[0].description.as_deref(), Some("d"));
    assert!(got[0].defer_loading);
    assert_eq!(got[1].parameters, Some(json!({})));
    assert_eq!(got[1].strict, Some(false));
    assert_eq!(
        got[2].parameters.as_ref().unwrap().to_string(),
        r#"{"type":"object","properties":{},"additionalProperties":false,"required":[]}"#
    );
}

fn def(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: None,
        parameters: Some(json!({"type": "object"})),
        strict: None,
        defer_loading: false,
    }
}

fn def_strict(name: &str, strict: Option<bool>) -> ToolDefinition {
    ToolDefinition {
        strict,
        ..def(name)
    }
}

#[test]
fn strict_tools_and_response_formats() {
    let strict = [def_strict("s", Some(true))];
    assert!(strict_tools_active(&strict, ToolChoice::Auto));
    assert!(strict_tools_active(&strict, ToolChoice::Required));
    assert!(!strict_tools_active(&strict, ToolChoice::None));
    assert!(!strict_tools_active(&[def("b")], ToolChoice::Auto));
    assert!(!strict_tools_active(&[], ToolChoice::Auto));
}

#[test]
fn tool_choice_semantics() {
    use RequestedToolChoice as R;
    let two = || vec![def("a"), def("b")];
    let named = |n: &str| R::Named(n.into());
    const THINKING: &str = "Thinking mode does not support this tool_choice";
    const MIXED: &str = "Cannot use strict tool with non-strict tool in the same request";
    let mixed = || vec![def_strict("s", Some(true)), def("b")];
    let missing = |n: &str| {
        format!("Invalid value for 'tool_call': no function named '{n}' was specified in the 'tools' parameter.")
    };
    // (name, tools, choice, thinking, Ok((remaining tool names, choice)) or Err(message))
    type Case = (
        &'static str,
        Vec<ToolDefinition>,
        RequestedToolChoice,
        bool,
        Result<(Vec<&'static str>, ToolChoice), String>,
    );
    let cases: Vec<Case> = vec![
        (
            "auto keeps tools",
            two(),
            R::Auto,
            true,
            Ok((vec!["a", "b"], ToolChoice::Auto)),
        ),
        (
            "none drops tools",
            two(),
            R::None,
            true,
            Ok((vec![], ToolChoice::None)),
        ),
        (
            "none without tools",
            vec![],
            R::None,
            false,
            Ok((vec![], ToolChoice::None)),
        ),
        (
            "required without tools is auto",
            vec![],
            R::Required,
            true,
            Ok((vec![], ToolChoice::Auto)),
        ),
        (
            "named without tools is auto",
            vec![],
            named("zz"),
            true,
            Ok((vec![], ToolChoice::Auto)),
        ),
        (
            "named without tools is auto, thinking off",
            vec![],
            named("zz"),
            false,
            Ok((vec![], ToolChoice::Auto)),
        ),
        (
            "required in thinking",
            two(),
            R::Required,
            true,
            Err(THINKING.into()),
        ),
        (
            "required without thinking",
            two(),
            R::Required,
            false,
            Ok((vec!["a", "b"], ToolChoice::Required)),
        ),
        (
            "unknown name beats thinking",
            two(),
            named("zz"),
            true,
            Err(missing("zz")),
        ),
        (
            "unknown name without thinking",
            two(),
            named("zz"),
            false,
            Err(missing("zz")),
        ),
        (
            "named in thinking",
            two(),
            named("b"),
            true,
            Err(THINKING.into()),
        ),
        (
            "named filters",
            two(),
            named("b"),
            false,
            Ok((vec!["b"], ToolChoice::Required)),
        ),
        (
            "strict with non-strict",
            mixed(),
            R::Auto,
            false,
            Err(MIXED.into()),
        ),
        (
            "strict with non-strict, required",
            mixed(),
            R::Required,
            false,
            Err(MIXED.into()),
        ),
        (
            "choice errors come first",
            mixed(),
            R::Required,
            true,
            Err(THINKING.into()),
        ),
        (
            "unknown name before mixing",
            mixed(),
            named("zz"),
            false,
            Err(missing("zz")),
        ),
        (
            "filtering leaves only non-strict",
            mixed(),
            named("b"),
            false,
            Ok((vec!["b"], ToolChoice::Required)),
        ),
        (
            "filtering leaves only strict",
            mixed(),
            named("s"),
            false,
            Ok((vec!["s"], ToolChoice::Required)),
        ),
        (
            "none drops the mix",
            mixed(),
            R::None,
            false,
            Ok((vec![], ToolChoice::None)),
        ),
        (
            "strict false counts as non-strict",
            vec![def_strict("s", Some(true)), def_strict("f", Some(false))],
            R::Auto,
            false,
            Err(MIXED.into()),
        ),
        (
            "false and absent mix freely",
            vec![def_strict("f", Some(false)), def("b")],
            R::Auto,
            false,
            Ok((vec!["f", "b"], ToolChoice::Auto)),
        ),
    ];
    for (name, tools, choice, thinking, want) in cases {
        let got = apply_tool_choice(tools, choice, thinking)
            .map(|(tools, choice)| {
                (
                    tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                    choice,
                )
            })
            .map_err(|e| e.message);
        let want = want.map(|(names, choice)| {
            (
                names.into_iter().map(String::from).collect::<Vec<_>>(),
                choice,
            )
        });
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn output_constraints() {
    let deferred = ToolDefinition {
        name: "b".into(),
        description: Some("dé\"".into()),
        parameters: Some(json!({"type": "object"})),
        strict: Some(false),
        defer_loading: true,
    };
    let tools = vec![def("a"), deferred];
    let v4 = ModelVersion::DeepseekV4Pro;
    let v41 = ModelVersion::DeepseekV41Flash;
    let list_v4 = r#"[{"type":"function","function":{"name":"a","description":null,"parameters":{"type":"object"},"strict":null}},{"type":"function","function":{"name":"b","description":"dé\"","parameters":{"type":"object"},"strict":false}}]"#;
    let list_v41 = r#"[{"type":"function","function":{"name":"a","description":null,"parameters":{"type":"object"},"strict":null}},{"type":"function","function":{"name":"b","description":"dé\"","parameters":{"type":"object"},"strict":false},"defer_loading":true}]"#;
    let schema =
        json!({"type":"object","properties":{"a":{"type":"number","minimum":1e20,"maximum":1.0}}});
    let normalized =
        json!({"type":"object","properties":{},"additionalProperties":false,"required":[]});
    type Case<'a> = (
        &'a str,
        &'a [ToolDefinition],
        ToolChoice,
        ResponseFormat,
        Option<&'a Value>,
        ModelVersion,
        Option<(&'a str, &'a str)>,
    );
    let cases: Vec<Case> = vec![
        (
            "tools auto",
            &tools,
            ToolChoice::Auto,
            ResponseFormat::Text,
            None,
            v4,
            Some(("tool_call", list_v4)),
        ),
        (
            "deferred marker on V4.1 only",
            &tools,
            ToolChoice::Auto,
            ResponseFormat::Text,
            None,
            v41,
            Some(("tool_call", list_v41)),
        ),
        (
            "required",
            &tools[..1],
            ToolChoice::Required,
            ResponseFormat::Text,
            None,
            v4,
            Some((
                "tool_call_required",
                r#"[{"type":"function","function":{"name":"a","description":null,"parameters":{"type":"object"},"strict":null}}]"#,
            )),
        ),
        (
            "tools win over json_object",
            &tools,
            ToolChoice::Auto,
            ResponseFormat::JsonObject,
            None,
            v4,
            Some(("tool_call", list_v4)),
        ),
        (
            "no tools, text",
            &[],
            ToolChoice::Auto,
            ResponseFormat::Text,
            None,
            v4,
            None,
        ),
        (
            "choice none: the format decides",
            &[],
            ToolChoice::None,
            ResponseFormat::JsonObject,
            None,
            v4,
            Some(("json", "")),
        ),
        (
            "regex",
            &[],
            ToolChoice::None,
            ResponseFormat::Regex("a+".into()),
            None,
            v4,
            Some(("regex", "a+")),
        ),
        (
            "json_schema as given",
            &[],
            ToolChoice::Auto,
            ResponseFormat::JsonSchema(schema.clone()),
            None,
            v4,
            Some((
                "json",
                r#"{"type":"object","properties":{"a":{"type":"number","minimum":1e+20,"maximum":1.0}}}"#,
            )),
        ),
        (
            "json_schema normalized",
            &[],
            ToolChoice::Auto,
            ResponseFormat::JsonSchema(schema.clone()),
            Some(&normalized),
            v4,
            Some((
                "json",
                r#"{"type":"object","properties":{},"additionalProperties":false,"required":[]}"#,
            )),
        ),
    ];
    // Recorded from the reference: a Messages request on V4.1 with a deferred tool.
    let from_messages = [
        ToolDefinition {
            description: Some("d".into()),
            defer_loading: true,
            ..def("a")
        },
        ToolDefinition {
            parameters: Some(json!({"type":"object","properties":{"x":{"type":"string"}}})),
            ..def("b")
        },
    ];
    let recorded = output_constraint(
        &from_messages,
        ToolChoice::Auto,
        &ResponseFormat::Text,
        None,
        v41,
    )
    .unwrap();
    assert_eq!(recorded.kind, "tool_call");
    assert_eq!(
        recorded.schema,
        r#"[{"type":"function","function":{"name":"a","description":"d","parameters":{"type":"object"},"strict":null},"defer_loading":true},{"type":"function","function":{"name":"b","description":null,"parameters":{"type":"object","properties":{"x":{"type":"string"}}},"strict":null}}]"#
    );
    for (name, tools, choice, format, format_schema, version, want) in cases {
        let got = output_constraint(tools, choice, &format, format_schema, version);
        let got = got.as_ref().map(|c| (c.kind.as_str(), c.schema.as_str()));
        assert_eq!(got, want, "{name}");
    }
}
