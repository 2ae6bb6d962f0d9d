//! `cargo xtask bench resources`: listing many resources across pages and
//! reading a large blob, over stdio from `mcp-testkit`, this stack beside
//! the `rmcp` SDK's client in one run (interleaved rounds, best and median).

use std::process::Stdio;
use std::time::{Duration, Instant};

use mcp_stack_session::{Session, SessionConfig};
use mcp_stack_transport::stdio::{StdioConfig, StdioTransport};

use super::stdio::build_testkit;
use crate::args::ResourcesArgs;
use crate::bench::median;

pub(crate) fn run(args: ResourcesArgs) -> Result<(), String> {
    let ResourcesArgs {
        resources,
        page_size,
        blob_bytes,
        rounds,
    } = args;
    if resources == 0 || page_size == 0 || rounds == 0 {
        return Err("--resources, --page-size and --rounds must be at least 1".into());
    }
    let program = build_testkit()?;
    let server_args = vec![
        "--resource-count".to_owned(),
        resources.to_string(),
        "--page-size".to_owned(),
        page_size.to_string(),
        "--blob-bytes".to_owned(),
        blob_bytes.to_string(),
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    let ours = rt.block_on(connect_ours(&program, &server_args))?;
    let rmcp = rt.block_on(connect_rmcp(&program, &server_args))?;
    // Both see the same catalogue first (and warm up).
    let (n_ours, n_rmcp) = (
        rt.block_on(list_ours(&ours))?,
        rt.block_on(list_rmcp(&rmcp))?,
    );
    if n_ours != n_rmcp {
        return Err(format!("ours listed {n_ours} resources, rmcp {n_rmcp}"));
    }
    let (b_ours, b_rmcp) = (
        rt.block_on(read_ours(&ours))?,
        rt.block_on(read_rmcp(&rmcp))?,
    );
    if b_ours != b_rmcp || b_ours != blob_bytes {
        return Err(format!(
            "the blob decoded to {b_ours} bytes (ours) and {b_rmcp} (rmcp), not {blob_bytes}"
        ));
    }
    let mut times: [[Vec<Duration>; 2]; 2] = Default::default();
    for round in 0..rounds {
        // A different client first each round.
        for c in [round % 2, 1 - round % 2] {
            let t0 = Instant::now();
            match c {
                0 => rt.block_on(list_ours(&ours)).map(drop)?,
                _ => rt.block_on(list_rmcp(&rmcp)).map(drop)?,
            }
            push(&mut times, 0, c, t0.elapsed());
            let t0 = Instant::now();
            match c {
                0 => rt.block_on(read_ours(&ours)).map(drop)?,
                _ => rt.block_on(read_rmcp(&rmcp)).map(drop)?,
            }
            push(&mut times, 1, c, t0.elapsed());
        }
    }
    rt.block_on(ours.close());
    rt.block_on(async {
        let _ = rmcp.cancel().await;
    });
    println!(
        "bench resources: mcp-testkit over stdio with {resources} resources in pages of {page_size}, \
         and a {blob_bytes}-byte blob; best and median of {rounds} interleaved rounds"
    );
    println!(
        "{:<34} {:<20} {:>10} {:>10} {:>9}",
        "what", "client", "best ms", "median ms", "vs rmcp"
    );
    let what = [
        format!(
            "list {resources} resources ({} pages)",
            resources.div_ceil(page_size)
        ),
        format!("read a {} KiB blob and decode", blob_bytes / 1024),
    ];
    for (label, [ours_t, rmcp_t]) in what.iter().zip(&times) {
        for (c, (client, t)) in [("ours (mcp-stack-session)", ours_t), ("rmcp 3", rmcp_t)]
            .into_iter()
            .enumerate()
        {
            let mut t = t.clone();
            t.sort();
            let best = t.first().copied().unwrap_or_default();
            let ratio = if c == 0 {
                format!("{:.2}x", best_ratio(rmcp_t, ours_t))
            } else {
                "-".to_owned()
            };
            println!(
                "{:<34} {:<20} {:>10.2} {:>10.2} {:>9}",
                if c == 0 { label.as_str() } else { "" },
                client,
                best.as_secs_f64() * 1e3,
                median(&t).as_secs_f64() * 1e3,
                ratio
            );
        }
    }
    println!();
    println!("  ours: Session::list_resources (every page, through the cache-refreshing path: the");
    println!(
        "    cache is cleared before each timed listing) and read_resource + BlobResourceContents::bytes."
    );
    println!("  rmcp: Peer::list_all_resources and read_resource, decoding the blob with base64.");
    println!("  vs rmcp: rmcp's best time over ours (above 1: ours is faster).");
    Ok(())
}

/// Records a time for `what` (0: list, 1: read) and `client` (0: ours, 1: rmcp).
fn push(times: &mut [[Vec<Duration>; 2]; 2], what: usize, client: usize, d: Duration) {
    if let Some(v) = times.get_mut(what).and_then(|t| t.get_mut(client)) {
        v.push(d);
    }
}

/// rmcp's best time over ours.
fn best_ratio(theirs: &[Duration], ours: &[Duration]) -> f64 {
    let best = |t: &[Duration]| t.iter().min().copied().unwrap_or_default().as_secs_f64();
    best(theirs) / best(ours).max(1e-12)
}

async fn connect_ours(program: &str, args: &[String]) -> Result<Session, String> {
    let transport = StdioTransport::spawn(
        StdioConfig::new(program)
            .args(args.iter().cloned())
            .server_name("bench"),
    )
    .map_err(|e| format!("ours: {e}"))?;
    Session::connect(transport, SessionConfig::new().server_name("bench"))
        .await
        .map_err(|e| format!("ours: {e}"))
}

async fn list_ours(s: &Session) -> Result<usize, String> {
    // Force a fetch: the session would otherwise answer from its cache.
    s.mark_lists_stale();
    s.list_resources()
        .await
        .map(|r| r.len())
        .map_err(|e| format!("ours: {e}"))
}

async fn read_ours(s: &Session) -> Result<usize, String> {
    use mcp_stack_session::types::ResourceContents;
    let r = s
        .read_resource("test://blob/large")
        .await
        .map_err(|e| format!("ours: {e}"))?;
    match r.contents.first() {
        Some(ResourceContents::Blob(b)) => b.bytes().map(|b| b.len()).map_err(|e| e.to_string()),
        other => Err(format!("ours: not a blob: {other:?}")),
    }
}

type RmcpClient = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn connect_rmcp(program: &str, args: &[String]) -> Result<RmcpClient, String> {
    use rmcp::ServiceExt;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("rmcp: cannot start the server: {e}"))?;
    ().serve(transport).await.map_err(|e| format!("rmcp: {e}"))
}

async fn list_rmcp(c: &RmcpClient) -> Result<usize, String> {
    c.peer()
        .list_all_resources()
        .await
        .map(|r| r.len())
        .map_err(|e| format!("rmcp: {e}"))
}

async fn read_rmcp(c: &RmcpClient) -> Result<usize, String> {
    use base64::Engine as _;
    let r = c
        .peer()
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "test://blob/large",
        ))
        .await
        .map_err(|e| format!("rmcp: {e}"))?;
    match r.contents.first() {
        Some(rmcp::model::ResourceContents::BlobResourceContents { blob, .. }) => {
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map(|b| b.len())
                .map_err(|e| e.to_string())
        }
        other => Err(format!("rmcp: not a blob: {other:?}")),
    }
}
