//! Conversion options: the deployment's policy for turning requests into conversations.

use std::collections::BTreeMap;

use crate::SpecialTokens;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ModelVersion {
    DeepseekV4Pro,
    DeepseekV41Flash,
}

impl ModelVersion {
    pub fn name(self) -> &'static str {
        match self {
            ModelVersion::DeepseekV4Pro => "DeepseekV4Pro",
            ModelVersion::DeepseekV41Flash => "DeepseekV41Flash",
        }
    }

    pub fn is_v41(self) -> bool {
        matches!(self, ModelVersion::DeepseekV41Flash)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningContentBehavior {
    #[default]
    FillEmpty,
    Reject,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebSearchBehavior {
    Drop,
    Reject,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionOptions {
    pub default_thinking_mode: bool,
    pub reasoning_content_behavior: ReasoningContentBehavior,
    pub responses_web_search: WebSearchBehavior,
    pub messages_web_search: WebSearchBehavior,
    pub thinking_max_tokens_upper_bound: u32,
    pub non_thinking_max_tokens_upper_bound: u32,
    pub special_tokens: SpecialTokens,
    /// Exact, case-sensitive model name to version; sorted so error messages list names in order.
    pub model_versions_by_name: BTreeMap<String, ModelVersion>,
    /// The most choices a Chat request may ask for (`n`). The reference serves one, and
    /// refuses any other `n`; a server whose engine samples several may allow more.
    pub max_choices: u8,
}

impl Default for ConversionOptions {
    fn default() -> Self {
        let mut model_versions_by_name = BTreeMap::new();
        model_versions_by_name.insert("DeepSeek-V4-Pro".to_owned(), ModelVersion::DeepseekV4Pro);
        model_versions_by_name.insert(
            "DeepSeek-V4.1-Flash".to_owned(),
            ModelVersion::DeepseekV41Flash,
        );
        Self {
            default_thinking_mode: true,
            reasoning_content_behavior: ReasoningContentBehavior::FillEmpty,
            responses_web_search: WebSearchBehavior::Drop,
            messages_web_search: WebSearchBehavior::Reject,
            thinking_max_tokens_upper_bound: 393_216,
            non_thinking_max_tokens_upper_bound: 393_216,
            special_tokens: SpecialTokens::default(),
            model_versions_by_name,
            max_choices: 1,
        }
    }
}

impl ConversionOptions {
    /// The model version for a request's `model` name, or the reference's error.
    pub fn model_version(&self, model: &str) -> Result<ModelVersion, crate::ConversionError> {
        self.model_versions_by_name
            .get(model)
            .copied()
            .ok_or_else(|| {
                let names: Vec<&str> = self
                    .model_versions_by_name
                    .keys()
                    .map(String::as_str)
                    .collect();
                crate::ConversionError::new(format!(
                    "The supported API model names are {}, but you passed {model}.",
                    names.join(", ")
                ))
            })
    }
}
