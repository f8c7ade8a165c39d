//! Special-token spellings. The renderer emits them as special ranges; the tokenizer maps
//! each range to an id by exact lookup in the added vocabulary.

/// Every template token the DeepSeek V4 family knows, in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecialToken {
    Bos,
    Eos,
    ThinkingStart,
    ThinkingEnd,
    System,
    User,
    Assistant,
    LatestReminder,
    Dsml,
    Image,
    Ref,
    RefEnd,
    Box,
    BoxEnd,
    Point,
    PointEnd,
    Polygon,
    PolygonEnd,
}

impl SpecialToken {
    pub const ALL: [SpecialToken; 18] = [
        SpecialToken::Bos,
        SpecialToken::Eos,
        SpecialToken::ThinkingStart,
        SpecialToken::ThinkingEnd,
        SpecialToken::System,
        SpecialToken::User,
        SpecialToken::Assistant,
        SpecialToken::LatestReminder,
        SpecialToken::Dsml,
        SpecialToken::Image,
        SpecialToken::Ref,
        SpecialToken::RefEnd,
        SpecialToken::Box,
        SpecialToken::BoxEnd,
        SpecialToken::Point,
        SpecialToken::PointEnd,
        SpecialToken::Polygon,
        SpecialToken::PolygonEnd,
    ];

    /// The Python-side name (`SpecialToken.Bos`).
    pub fn name(self) -> &'static str {
        match self {
            SpecialToken::Bos => "Bos",
            SpecialToken::Eos => "Eos",
            SpecialToken::ThinkingStart => "ThinkingStart",
            SpecialToken::ThinkingEnd => "ThinkingEnd",
            SpecialToken::System => "System",
            SpecialToken::User => "User",
            SpecialToken::Assistant => "Assistant",
            SpecialToken::LatestReminder => "LatestReminder",
            SpecialToken::Dsml => "Dsml",
            SpecialToken::Image => "Image",
            SpecialToken::Ref => "Ref",
            SpecialToken::RefEnd => "RefEnd",
            SpecialToken::Box => "Box",
            SpecialToken::BoxEnd => "BoxEnd",
            SpecialToken::Point => "Point",
            SpecialToken::PointEnd => "PointEnd",
            SpecialToken::Polygon => "Polygon",
            SpecialToken::PolygonEnd => "PolygonEnd",
        }
    }

    /// The keyword accepted by `SpecialTokens(**overrides)`.
    pub fn keyword(self) -> &'static str {
        match self {
            SpecialToken::Bos => "bos",
            SpecialToken::Eos => "eos",
            SpecialToken::ThinkingStart => "thinking_start",
            SpecialToken::ThinkingEnd => "thinking_end",
            SpecialToken::System => "system",
            SpecialToken::User => "user",
            SpecialToken::Assistant => "assistant",
            SpecialToken::LatestReminder => "latest_reminder",
            SpecialToken::Dsml => "dsml",
            SpecialToken::Image => "image",
            SpecialToken::Ref => "ref",
            SpecialToken::RefEnd => "ref_end",
            SpecialToken::Box => "box",
            SpecialToken::BoxEnd => "box_end",
            SpecialToken::Point => "point",
            SpecialToken::PointEnd => "point_end",
            SpecialToken::Polygon => "polygon",
            SpecialToken::PolygonEnd => "polygon_end",
        }
    }

    /// The spelling in the DeepSeek V4 family vocabulary.
    pub fn default_str(self) -> &'static str {
        match self {
            SpecialToken::Bos => "<｜begin▁of▁sentence｜>",
            SpecialToken::Eos => "<｜end▁of▁sentence｜>",
            SpecialToken::ThinkingStart => "<think>",
            SpecialToken::ThinkingEnd => "</think>",
            SpecialToken::System => "<｜System｜>",
            SpecialToken::User => "<｜User｜>",
            SpecialToken::Assistant => "<｜Assistant｜>",
            SpecialToken::LatestReminder => "<｜latest_reminder｜>",
            SpecialToken::Dsml => "｜DSML｜",
            SpecialToken::Image => "<｜image｜>",
            SpecialToken::Ref => "<｜ref｜>",
            SpecialToken::RefEnd => "<｜/ref｜>",
            SpecialToken::Box => "<｜box｜>",
            SpecialToken::BoxEnd => "<｜/box｜>",
            SpecialToken::Point => "<｜point｜>",
            SpecialToken::PointEnd => "<｜/point｜>",
            SpecialToken::Polygon => "<｜polygon｜>",
            SpecialToken::PolygonEnd => "<｜/polygon｜>",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The spelling of every special token; defaults to the V4 family's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecialTokens {
    spellings: [String; 18],
}

impl Default for SpecialTokens {
    fn default() -> Self {
        Self {
            spellings: SpecialToken::ALL.map(|t| t.default_str().to_owned()),
        }
    }
}

impl SpecialTokens {
    pub fn get(&self, token: SpecialToken) -> &str {
        &self.spellings[token.index()]
    }

    pub fn set(&mut self, token: SpecialToken, spelling: String) {
        self.spellings[token.index()] = spelling;
    }

    pub fn with(mut self, token: SpecialToken, spelling: String) -> Self {
        self.set(token, spelling);
        self
    }
}
