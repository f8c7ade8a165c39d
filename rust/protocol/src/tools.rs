//! Tool definitions: names, schema validation, strict normalization, tool_choice and constraints.
