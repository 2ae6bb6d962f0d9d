//! The newline codec on a TCP socket: a tiny JSON-RPC echo peer on
//! 127.0.0.1 and a client that sends it a request, a line of noise and a
//! notification, and reads what comes back.
//!
//! ```sh
//! cargo run -p mcp-stack-jsonrpc --example socket
//! ```
//!
//! The noise arrives at the server as a `Frame::Malformed` item: the stream
//! goes on, which is what lets a client survive a server that logs to stdout.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use futures_util::{SinkExt, StreamExt};
use mcp_stack_jsonrpc::{Frame, Message, NewlineCodec, Notification, Request, Response, to_raw};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{FramedRead, FramedWrite};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await?;
        serve(socket).await
    });

    let socket = TcpStream::connect(address).await?;
    let (read, mut write) = socket.into_split();
    let mut frames = FramedRead::new(read, NewlineCodec::new());
    let params = to_raw(&serde_json::json!({"text": "hello"}))?;
    let request = Message::from(Request::new(1, "echo", Some(params)));
    write.write_all(&request.to_vec()?).await?;
    write.write_all(b"\nnot json at all\n").await?;
    let goodbye = Message::from(Notification::new("goodbye", None));
    write.write_all(&goodbye.to_vec()?).await?;
    write.write_all(b"\n").await?;
    write.shutdown().await?;

    while let Some(frame) = frames.next().await {
        match frame? {
            Frame::Message(Message::Response(r)) => println!("answer to {}: {}", r.id, r.result),
            other => println!("other frame: {other:?}"),
        }
    }
    let seen = server.await??;
    println!("the server saw {seen} frames, the noise among them, and went on");
    Ok(())
}

/// Answers each request with its params; counts every frame.
async fn serve(socket: TcpStream) -> Result<usize, std::io::Error> {
    let (read, write) = socket.into_split();
    let mut frames = FramedRead::new(read, NewlineCodec::new());
    let mut out = FramedWrite::new(write, NewlineCodec::new());
    let mut seen = 0;
    while let Some(frame) = frames.next().await {
        seen += 1;
        match frame.map_err(std::io::Error::other)? {
            Frame::Message(Message::Request(r)) => {
                let result = r.params.unwrap_or(to_raw(&serde_json::json!({}))?);
                let answer = Message::from(Response::new(r.id, result));
                out.send(answer).await.map_err(std::io::Error::other)?;
            }
            Frame::Malformed(bad) => eprintln!("server: skipped a bad line ({bad})"),
            other => eprintln!("server: {other:?}"),
        }
    }
    Ok(seen)
}
