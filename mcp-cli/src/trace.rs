//! A transport wrapper that shows every message (`--trace`) and remembers
//! what was not a message, for the diagnosis when a step fails.

use std::sync::{Arc, Mutex};

use mcp_stack_jsonrpc::Message;
use mcp_stack_transport::{
    BoxFuture, InvalidFrame, Received, SendContext, ServerProcess, Transport, TransportError,
    TransportKind,
};

use crate::output::{Style, printable, summarize};
use crate::term::{self, Stream};

/// Where traced lines go and how long they may be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TraceOptions {
    pub(crate) enabled: bool,
    /// To stderr (when stdout carries a JSON report) instead of stdout.
    pub(crate) to_stderr: bool,
    pub(crate) full: bool,
    pub(crate) style: Style,
}

impl TraceOptions {
    /// Prints a trace line (through the output stage, like every line).
    pub(crate) fn line(&self, text: &str) {
        if !self.enabled {
            return;
        }
        let stream = if self.to_stderr {
            Stream::Err
        } else {
            Stream::Out
        };
        term::line(stream, format_args!("{text}"));
    }
}

/// Non-messages seen on the wire.
#[derive(Debug, Default, Clone)]
pub(crate) struct Noise {
    pub(crate) count: u64,
    pub(crate) examples: Vec<String>,
}

/// Wraps a transport: traces what passes, records noise.
#[derive(Debug)]
pub(crate) struct Traced {
    inner: Arc<dyn Transport>,
    options: TraceOptions,
    pub(crate) noise: Arc<Mutex<Noise>>,
}

impl Traced {
    pub(crate) fn new(inner: Arc<dyn Transport>, options: TraceOptions) -> Self {
        Traced {
            inner,
            options,
            noise: Arc::default(),
        }
    }

    fn show(&self, arrow: &str, message: &Message) {
        if !self.options.enabled {
            return;
        }
        // JSON text whose controls are `\u` escapes, so a traced line
        // stays the JSON that was on the wire.
        let text = serde_json::to_string(message).unwrap_or_else(|e| format!("<{e}>"));
        let text = mcp_stack_protocol::printable::escape_json_text(&text);
        let text = summarize(&text, 64 * 1024, self.options.full);
        let arrow = self.options.style.dim(arrow);
        self.options.line(&format!("{arrow} {text}"));
    }
}

impl Transport for Traced {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.show("→", message);
        self.inner.send_with(message, context)
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            let item = self.inner.recv().await?;
            match &item {
                Received::Message(m) => self.show("←", m),
                Received::Invalid(frame) => {
                    let text = printable(&frame.to_string());
                    // An answer too large for the limit is no log line on
                    // stdout: the request's own error says what happened.
                    let answer = matches!(frame, InvalidFrame::Oversized(o) if o.id.is_some());
                    if let (false, Ok(mut noise)) = (answer, self.noise.lock()) {
                        noise.count += 1;
                        if noise.examples.len() < 3 {
                            noise.examples.push(text.clone());
                        }
                    }
                    let mark = self.options.style.warn("!");
                    self.options
                        .line(&format!("{mark} not a JSON-RPC message: {text}"));
                }
                Received::Failed(failure) => {
                    let mark = self.options.style.warn("!");
                    let text = printable(&failure.error.to_string());
                    self.options
                        .line(&format!("{mark} request {} failed: {text}", failure.id));
                }
                _ => {}
            }
            Ok(item)
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn kind(&self) -> TransportKind {
        self.inner.kind()
    }

    fn process(&self) -> Option<&dyn ServerProcess> {
        self.inner.process()
    }
}
