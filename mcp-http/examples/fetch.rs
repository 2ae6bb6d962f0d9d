//! A `WebClient` fetching a metadata document from a server of its own on
//! 127.0.0.1 (a few lines of HTTP/1.1 over a socket), the way `mcp-stack-auth`
//! fetches an authorization server's metadata. Run with
//! `cargo run -p mcp-stack-http --example fetch`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use mcp_stack_http::{ClientOptions, HttpTrace, Proxy, WebClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const DOCUMENT: &str = r#"{"issuer":"http://127.0.0.1","token_endpoint":"http://127.0.0.1/token"}"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    // The server: one connection, one answer.
    tokio::spawn(async move {
        if let Ok((mut socket, _)) = listener.accept().await {
            let mut head = [0u8; 4096];
            let _ = socket.read(&mut head).await;
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{DOCUMENT}",
                DOCUMENT.len()
            );
            let _ = socket.write_all(answer.as_bytes()).await;
        }
    });

    let options = ClientOptions::new().proxy(Proxy::none()).observer(|trace| {
        if let HttpTrace::Request { method, url, .. } = trace {
            eprintln!("→ {method} {url}");
        }
    });
    let web = WebClient::new(&options)?;
    let url = format!("http://127.0.0.1:{port}/.well-known/oauth-authorization-server?probe=1");
    let answer = web.get(&url, Default::default()).await?;
    println!(
        "{} {}",
        answer.status,
        String::from_utf8_lossy(&answer.body)
    );
    if !answer.is_success() || answer.body != DOCUMENT.as_bytes() {
        return Err("the document did not come back".into());
    }
    Ok(())
}
