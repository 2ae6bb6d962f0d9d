//! What a parser does with a batch (a frame that is a JSON array of messages).
//!
//! A batch is the one frame whose parsed form can cost far more than its
//! bytes: `[0,0,0,…]` spends two bytes per element on the wire and a parsed
//! item (and whatever the layer above makes of it) per element in memory.
//! So a batch is parsed only as far as [`Batches`] allows: refused whole
//! (the parse stops at it; its elements are counted by a scan of its bytes,
//! never built), or at most
//! [`max_elements`](Batches::max_elements) elements whose parsed cost
//! (each [`BATCH_ELEMENT_COST`] plus the text it keeps) stays within a
//! [`budget`](Batches::budget). A batch over either bound is one error
//! ([`MessageError::BatchTooLong`], [`MessageError::BatchOverBudget`]), with
//! the elements counted, not one error per element.
//!
//! The setting is asked for only when the frame turns out to be an array:
//! parsing a single message never reads it. [`BatchSwitch`] shares one
//! setting between a codec and the layer that decides it (a transport that
//! learns, after a handshake, whether its peer's protocol has batches).
//!
//! [`MessageError::BatchTooLong`]: crate::MessageError::BatchTooLong
//! [`MessageError::BatchOverBudget`]: crate::MessageError::BatchOverBudget

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default bound on a batch's elements: 1,024.
pub const DEFAULT_MAX_BATCH_ELEMENTS: usize = 1024;

/// What one batch element is charged against a batch's budget besides the
/// text it keeps (its method, raw members, strings): its slot in the parsed
/// list (a `Result<Message, MessageError>`, 96 bytes on 64-bit targets),
/// room for the slot the layer above moves it into when it hands the
/// element on (a transport's queue item, 112 bytes), and the headers of its
/// allocations. Unbounded, a `[0,0,…]` line cost about 210 bytes per
/// element through a transport.
pub const BATCH_ELEMENT_COST: usize = 256;

/// The default budget of a batch's parsed elements: 16 MiB, the default
/// frame limit. A codec charges batches against its own frame limit.
pub const DEFAULT_BATCH_BUDGET: usize = 16 * 1024 * 1024;

/// How a parser treats a batch: refused, or accepted up to a number of
/// elements and a memory budget.
///
/// ```
/// use mcp_stack_jsonrpc::{Batches, MessageError, Payload, parse_payload_with};
///
/// let line = br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#;
/// let Ok(Payload::Batch(items)) = parse_payload_with(line, || Batches::up_to(2)) else {
///     panic!()
/// };
/// assert_eq!(items.len(), 2);
/// assert_eq!(
///     parse_payload_with(line, || Batches::up_to(1)).unwrap_err(),
///     MessageError::BatchTooLong { elements: 2, limit: 1 }
/// );
/// assert_eq!(
///     parse_payload_with(line, || Batches::REFUSED).unwrap_err(),
///     MessageError::BatchRefused { elements: 2 }
/// );
/// // A single message never asks.
/// let single = br#"{"jsonrpc":"2.0","method":"a"}"#;
/// assert!(parse_payload_with(single, || unreachable!()).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batches {
    max_elements: usize,
    budget: usize,
}

impl Default for Batches {
    /// Up to [`DEFAULT_MAX_BATCH_ELEMENTS`] elements within
    /// [`DEFAULT_BATCH_BUDGET`].
    fn default() -> Self {
        Batches::up_to(DEFAULT_MAX_BATCH_ELEMENTS)
    }
}

impl Batches {
    /// No batches: a batch is one error and its elements are counted,
    /// not built.
    pub const REFUSED: Batches = Batches {
        max_elements: 0,
        budget: DEFAULT_BATCH_BUDGET,
    };

    /// Batches of at most `max_elements` elements (0 refuses them), within
    /// the default budget.
    pub const fn up_to(max_elements: usize) -> Batches {
        Batches {
            max_elements,
            budget: DEFAULT_BATCH_BUDGET,
        }
    }

    /// The same, with another budget in bytes for the parsed elements: each
    /// is charged [`BATCH_ELEMENT_COST`] plus the text it keeps.
    pub const fn within(self, budget: usize) -> Batches {
        Batches {
            max_elements: self.max_elements,
            budget,
        }
    }

    /// The most elements a batch may have; 0 when batches are refused.
    pub const fn max_elements(self) -> usize {
        self.max_elements
    }

    /// The budget of a batch's parsed elements, in bytes.
    pub const fn budget(self) -> usize {
        self.budget
    }

    /// Whether batches are accepted at all.
    pub const fn allowed(self) -> bool {
        self.max_elements > 0
    }
}

/// A batch setting shared between a codec (or any parser) and the layer
/// that decides it, changed while the codec runs: the largest batch
/// accepted, in elements, 0 for none.
///
/// Cloning shares the setting. It is read once per frame that is a batch,
/// and never for a frame that is not.
///
/// ```
/// use mcp_stack_jsonrpc::BatchSwitch;
///
/// let switch = BatchSwitch::refused();
/// let codec_side = switch.clone();
/// assert!(!codec_side.get().allowed());
/// switch.set(16);
/// assert_eq!(codec_side.get().max_elements(), 16);
/// ```
#[derive(Debug, Clone, Default)]
pub struct BatchSwitch(Arc<AtomicUsize>);

impl BatchSwitch {
    /// A switch that accepts batches of at most `max_elements` (0: none).
    pub fn new(max_elements: usize) -> Self {
        BatchSwitch(Arc::new(AtomicUsize::new(max_elements)))
    }

    /// A switch that refuses batches until [`set`](Self::set).
    pub fn refused() -> Self {
        Self::new(0)
    }

    /// Accepts batches of at most `max_elements` from now on (0: none).
    pub fn set(&self, max_elements: usize) {
        self.0.store(max_elements, Ordering::Relaxed);
    }

    /// The largest batch accepted now, in elements (0: none).
    pub fn max_elements(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// The setting now, within the default budget.
    pub fn get(&self) -> Batches {
        Batches::up_to(self.max_elements())
    }
}
