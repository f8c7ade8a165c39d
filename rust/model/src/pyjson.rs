//! PYJSON: the Python-style JSON spelling (`", "`, `": "`, raw non-ASCII, Python-like float
//! spelling) used in tool schema lines, format blocks, DSML parameter values and Messages
//! tool-call arguments (behavior.md §8.5a).
//!
//! STUB written by the lead; owned by the render helper.

use serde_json::Value;

/// Serialize `value` as PYJSON.
pub fn pyjson(value: &Value) -> String {
    value.to_string()
}
