//! The gateway's incremental intake: the last body of recent Chat Completions and Messages
//! conversations with its parse and its encoded prompt, so that the next body parses only what
//! follows the messages both share (`deepseek_protocol::resume`) and renders from the earlier
//! prompt (`encode_continuing`).

use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread;

use deepseek_protocol::resume::{conversation_lead, PARSER_DEPTH};
use deepseek_protocol::{BodyCache, ChatCompletionRequest, Kept, MessagesRequest};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;

use crate::protocol::{PyChatCompletionRequest, PyMessagesRequest};
use crate::stored::PyEncodedPrompt;

/// One conversation's last body, with its parse and its prompt from the conversation's second
/// turn on. A conversation's first body is kept alone (a marker): keeping its parse costs a
/// copy that only pays off once the conversation comes back, so a one-off request, or a body
/// that did not resume (an early message edited), costs what it would without the cache.
struct Entry {
    body: PyBackedBytes,
    parsed: Option<(Kept, Py<PyEncodedPrompt>)>,
}

type Cache = BodyCache<Entry>;

/// Bodies smaller than this are parsed cold: parsing them costs less than keeping them.
const MIN_BODY_BYTES: usize = 16 * 1024;

/// The protocols whose bodies resume.
#[derive(Clone, Copy)]
enum Protocol {
    Chat,
    Messages,
}

impl Protocol {
    fn of(name: &str) -> PyResult<Self> {
        match name {
            "chat" => Ok(Self::Chat),
            "messages" => Ok(Self::Messages),
            _ => Err(PyValueError::new_err(
                "only chat and messages bodies are resumed",
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Messages => "messages",
        }
    }
}

/// A request parsed by resuming.
enum Parsed {
    Chat(ChatCompletionRequest),
    Messages(MessagesRequest),
}

/// The last body of recent conversations (Chat Completions and Messages), within a budget of
/// `max_bytes`; bodies nest at most `max_depth` deep (the gateway's limit).
#[pyclass(name = "IntakeCache", frozen, module = "deepseek_recipe._native")]
pub struct PyIntakeCache {
    cache: Arc<Cache>,
    limit: usize,
}

#[pymethods]
impl PyIntakeCache {
    #[new]
    #[pyo3(signature = (max_bytes, max_depth = PARSER_DEPTH))]
    fn new(max_bytes: usize, max_depth: usize) -> Self {
        Self {
            cache: Arc::new(BodyCache::new(max_bytes)),
            limit: max_depth.min(PARSER_DEPTH),
        }
    }

    /// Parse `body` (a `protocol` request sent by `owner`) from where it differs from the last
    /// body of its conversation: the request, equal to a cold parse, and the turn to keep once
    /// encoded. `None` when it is to be parsed cold (no earlier body, or anything it cannot
    /// vouch for: the cold parse then reports errors as always).
    fn resume(
        &self,
        py: Python<'_>,
        protocol: &str,
        body: PyBackedBytes,
        owner: &str,
    ) -> PyResult<Option<(Py<PyAny>, PyIntakeTurn)>> {
        let kind = Protocol::of(protocol)?;
        let limit = self.limit;
        let found = py.detach(|| {
            let key = self.key(&body, owner, kind)?;
            let entry = self.cache.get(key)?;
            let (earlier, _) = entry.parsed.as_ref()?;
            let parsed = match kind {
                Protocol::Chat => ChatCompletionRequest::resume(&body, &entry.body, earlier, limit)
                    .map(|(request, kept)| (Parsed::Chat(request), kept)),
                Protocol::Messages => MessagesRequest::resume(&body, &entry.body, earlier, limit)
                    .map(|(request, kept)| (Parsed::Messages(request), kept)),
            };
            Some((key, entry, parsed))
        });
        // The entry is dropped here, with the GIL held (it holds Python objects).
        let Some((key, entry, Some((parsed, kept)))) = found else {
            return Ok(None);
        };
        let request = match parsed {
            Parsed::Chat(r) => Py::new(py, PyChatCompletionRequest::from_request(r))?.into_any(),
            Parsed::Messages(r) => Py::new(py, PyMessagesRequest::from_request(r))?.into_any(),
        };
        let previous = entry
            .parsed
            .as_ref()
            .map(|(_, prompt)| prompt.clone_ref(py));
        Ok(Some((request, self.turn(key, body, Some(kept), previous))))
    }

    /// The turn to keep for `request`, parsed cold from `body`: `None` when the body is not
    /// one that resumes (fewer than two messages, not laid out as resuming needs). The first
    /// body of a conversation (or one after a body that did not resume) is kept alone; the next
    /// is kept with its parse.
    fn start(
        &self,
        py: Python<'_>,
        protocol: &str,
        body: PyBackedBytes,
        owner: &str,
        request: &Bound<'_, PyAny>,
    ) -> PyResult<Option<PyIntakeTurn>> {
        let kind = Protocol::of(protocol)?;
        let Some(key) = py.detach(|| self.key(&body, owner, kind)) else {
            return Ok(None);
        };
        let seen = self
            .cache
            .get(key)
            .is_some_and(|entry| entry.parsed.is_none());
        if !seen {
            return Ok(Some(self.turn(key, body, None, None)));
        }
        let kept = match kind {
            Protocol::Chat => request
                .cast::<PyChatCompletionRequest>()?
                .get()
                .read(|r| py.detach(|| r.keep(&body)))?,
            Protocol::Messages => request
                .cast::<PyMessagesRequest>()?
                .get()
                .read(|r| py.detach(|| r.keep(&body)))?,
        };
        Ok(kept.map(|kept| self.turn(key, body, Some(kept), None)))
    }

    /// The bytes the kept conversations cost (estimated: body, parse, conversation, prompt).
    #[getter]
    fn bytes(&self) -> usize {
        self.cache.bytes()
    }

    /// The smallest body worth resuming; smaller ones are parsed cold, not kept.
    #[getter]
    fn min_body_bytes(&self) -> usize {
        MIN_BODY_BYTES
    }

    /// The byte budget.
    #[getter]
    fn max_bytes(&self) -> usize {
        self.cache.budget()
    }

    /// How many conversations are kept.
    fn __len__(&self) -> usize {
        self.cache.len()
    }
}

impl PyIntakeCache {
    /// The turn that keeps `body` under `key` (with `kept`, its parse, unless kept alone).
    fn turn(
        &self,
        key: u64,
        body: PyBackedBytes,
        kept: Option<Kept>,
        previous: Option<Py<PyEncodedPrompt>>,
    ) -> PyIntakeTurn {
        PyIntakeTurn {
            cache: Arc::clone(&self.cache),
            key,
            previous,
            reused: kept.as_ref().map_or(0, Kept::reused_messages),
            pending: Mutex::new(Some((body, kept))),
        }
    }

    fn key(&self, body: &[u8], owner: &str, kind: Protocol) -> Option<u64> {
        if body.len() < MIN_BODY_BYTES || self.cache.budget() == 0 {
            return None;
        }
        let lead = body.get(..conversation_lead(body)?)?;
        Some(self.cache.key(owner.as_bytes(), kind.name(), lead))
    }
}

/// One request's body on its way through intake: kept as its conversation's last body once its
/// prompt is encoded (`keep`).
#[pyclass(name = "IntakeTurn", frozen, module = "deepseek_recipe._native")]
pub struct PyIntakeTurn {
    cache: Arc<Cache>,
    key: u64,
    previous: Option<Py<PyEncodedPrompt>>,
    reused: usize,
    pending: Mutex<Option<(PyBackedBytes, Option<Kept>)>>,
}

#[pymethods]
impl PyIntakeTurn {
    /// The earlier body's encoded prompt, to render this one from (`None` for a cold parse).
    #[getter]
    fn previous(&self, py: Python<'_>) -> Option<Py<PyEncodedPrompt>> {
        self.previous.as_ref().map(|p| p.clone_ref(py))
    }

    /// How many leading messages were reused from the earlier body.
    #[getter]
    fn reused_messages(&self) -> usize {
        self.reused
    }

    /// Keep the body, its parse and its encoded `prompt` as the conversation's last (once;
    /// later calls do nothing). Returns whether the cache kept it (not when it would cost over
    /// half the budget).
    fn keep(&self, prompt: Bound<'_, PyEncodedPrompt>) -> bool {
        let taken = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some((body, kept)) = taken else {
            return false;
        };
        // The conversation the prompt holds is about as large as the messages' text.
        let cost = body.len()
            + kept.as_ref().map_or(0, |kept| {
                2 * kept.approx_bytes() + prompt.get().approx_bytes()
            });
        // A body that resumed shares the earlier body's messages: freeing the rest of that
        // entry is cheap, cheaper than handing it to another thread.
        let resumed = kept.as_ref().is_some_and(|kept| kept.reused_messages() > 0);
        let entry = Entry {
            body,
            parsed: kept.map(|kept| (kept, prompt.unbind())),
        };
        let (kept_it, displaced) = self.cache.put(self.key, entry, cost);
        for old in displaced {
            // (one another thread still reads is freed there, when it is done with it)
            let Ok(Entry { body, parsed }) = Arc::try_unwrap(old) else {
                continue;
            };
            match parsed {
                Some((kept, prompt)) if !resumed => {
                    retire(kept);
                    drop(prompt);
                }
                parsed => drop(parsed),
            }
            drop(body);
        }
        kept_it
    }
}

/// Free `parse` on a thread of its own. A body that did not resume (an early message edited)
/// replaces its conversation's entry, and freeing the earlier body's parse (thousands of
/// allocations: about 0.3 ms for a ~300k-token conversation) would otherwise fall on the
/// request's way to the engine, where a gateway without the cache frees nothing. The thread
/// starts on first use in each process (a forked child starts its own); if it cannot, the
/// parse is freed here as before.
fn retire(parse: Kept) {
    static RETIRING: Mutex<Option<(u32, mpsc::Sender<Kept>)>> = Mutex::new(None);
    let process = std::process::id();
    let mut slot = RETIRING.lock().unwrap_or_else(PoisonError::into_inner);
    if slot
        .as_ref()
        .is_none_or(|(started_in, _)| *started_in != process)
    {
        let (sender, receiver) = mpsc::channel::<Kept>();
        let started = thread::Builder::new()
            .name("deepseek-retire".into())
            .spawn(move || receiver.into_iter().for_each(drop));
        if started.is_err() {
            return;
        }
        *slot = Some((process, sender));
    }
    if let Some((_, sender)) = slot.as_ref() {
        // A thread that is gone hands the parse back, and it is freed here.
        let _ = sender.send(parse);
    }
}
