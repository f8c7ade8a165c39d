//! Thinking mode, reasoning effort, sampling and token-budget rules shared by all protocols.
