//! Request fields that hold a string or a list (message content, `stop`, tool output),
//! read straight from the deserializer.
//!
//! Reading such a field into a `Value` first and then typing that value rebuilt every
//! object of the list once more (a map, its keys hashed again): ~13% of reading an
//! Anthropic Messages request with many content blocks. Items of a list read from a JSON
//! value (the usual case) are now typed where they stand.
//!
//! Items of a field that serde buffered first (inside an enum tagged by one of its fields,
//! such as a Chat message tagged by `role`) are still typed through a JSON value: serde's
//! buffer takes an integer as a variant index where a JSON value refuses it (`{"type": 5}`
//! gives `invalid type: integer `5`, expected variant identifier`), and the reference's
//! errors are a JSON value's. Anything else than a string or a list is refused with the
//! field's own message.

use std::any::type_name;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

pub(crate) enum TextOrList<T> {
    Text(String),
    List(Vec<T>),
}

impl<'de, T: Deserialize<'de>> TextOrList<T> {
    /// Read a string or a list of `T`; anything else fails with `expected` as the message.
    pub(crate) fn deserialize<D: Deserializer<'de>>(
        deserializer: D,
        expected: &'static str,
    ) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextOrListVisitor {
            expected,
            items: PhantomData,
        })
    }
}

struct TextOrListVisitor<T> {
    expected: &'static str,
    items: PhantomData<T>,
}

impl<T> TextOrListVisitor<T> {
    fn refuse<E: de::Error>(&self) -> Result<TextOrList<T>, E> {
        Err(E::custom(self.expected))
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for TextOrListVisitor<T> {
    type Value = TextOrList<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.expected)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(TextOrList::Text(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(TextOrList::Text(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // The hint is the length of an array already in memory; capped all the same.
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        if type_name::<A>() == value_array_access() {
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
        } else {
            while let Some(item) = seq.next_element::<Value>()? {
                items.push(T::deserialize(item).map_err(de::Error::custom)?);
            }
        }
        Ok(TextOrList::List(items))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.refuse()
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        self.refuse()
    }
}

/// The type serde_json reads an owned JSON value's array through (private to serde_json,
/// so learnt by reading one).
fn value_array_access() -> &'static str {
    struct Probe;
    impl<'de> Visitor<'de> for Probe {
        type Value = &'static str;
        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Ok(type_name::<A>())
        }
    }
    static NAME: OnceLock<&'static str> = OnceLock::new();
    NAME.get_or_init(|| {
        Value::Array(Vec::new())
            .deserialize_any(Probe)
            .unwrap_or_default()
    })
}
