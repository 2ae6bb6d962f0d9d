//! The cache folder: Node 22 (when the machine's Node is older), the pinned
//! npm packages, an authorization server from npm for the interop rows, and
//! a Python virtualenv with the pinned `mcp` package.
//! Nothing is installed globally; what is already there at the pinned
//! version is reused without touching the network.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::process;

/// The Node release installed (from the `node` npm package) when the
/// machine's Node is older than 22.
pub(crate) const NODE_VERSION: &str = "22.23.3";

/// The npm packages, pinned.
pub(crate) const NPM_PACKAGES: &[(&str, &str)] = &[
    // 0.1.16: the 2025-11-25 client scenarios (the 2026-07-28 ones come
    // from `DRAFT_SUITE`).
    ("@modelcontextprotocol/conformance", "0.1.16"),
    ("@modelcontextprotocol/server-everything", "2026.8.31"),
    ("@modelcontextprotocol/server-filesystem", "2026.8.31"),
    ("@modelcontextprotocol/server-memory", "2026.8.31"),
];

/// The conformance suite's alpha line, for its draft client scenarios
/// (protocol revision 2026-07-28). Installed in a folder of its own beside
/// the packages above, so the two suites never share a `node_modules`.
pub(crate) const DRAFT_SUITE: (&str, &str) =
    ("@modelcontextprotocol/conformance", "0.2.0-alpha.12");

/// The authorization server of the interop rows (`interop/oauth/…`): an
/// OAuth 2 / OpenID Connect server this project did not write. Installed in
/// a folder of its own, so that a failed install costs only those rows.
pub(crate) const INTEROP_AS: (&str, &str) = ("oauth2-mock-server", "9.3.0");

/// The `mcp` package from PyPI (the official Python SDK), pinned.
pub(crate) const PYPI_MCP: &str = "2.3.0";

/// How long one install step may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(420);

/// Our test server on the Python SDK (written into the cache at run time).
const PYTHON_SERVER: &str = include_str!("../../conformance/python_server.py");

/// Starts [`INTEROP_AS`] on 127.0.0.1 (written into the cache at run time).
const OAUTH_AS_SCRIPT: &str = include_str!("../../conformance/oauth_as.mjs");

/// A preload for Node servers that listen on all interfaces: binds them to
/// 127.0.0.1 instead.
const LOOPBACK_PRELOAD: &str = include_str!("../../conformance/loopback.mjs");

/// What the run uses from the cache.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    /// A Node of version 22 or later.
    pub(crate) node: PathBuf,
    /// `node_modules` with the pinned packages.
    pub(crate) node_modules: PathBuf,
    /// `node_modules` with the draft suite ([`DRAFT_SUITE`]), or why there
    /// is none (the rest of the run goes on without it).
    pub(crate) draft_node_modules: Result<PathBuf, String>,
    /// `node_modules` with [`INTEROP_AS`], or why there is none.
    pub(crate) interop_node_modules: Result<PathBuf, String>,
    /// The script that starts it.
    pub(crate) oauth_as_script: PathBuf,
    /// `--import` this into Node servers to keep them on 127.0.0.1.
    pub(crate) loopback: PathBuf,
    /// The virtualenv's Python with `mcp`, or why there is none.
    pub(crate) python: Result<PathBuf, String>,
    /// Our Python server script.
    pub(crate) python_server: PathBuf,
}

impl Tools {
    /// The main script of an installed npm package.
    pub(crate) fn package_file(&self, package: &str, file: &str) -> PathBuf {
        self.node_modules.join(package).join(file)
    }
}

/// Fills the cache (or checks it is filled) and says what is where.
pub(crate) async fn prepare(cache: &Path) -> Result<Tools, String> {
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let loopback = cache.join("loopback.mjs");
    write_if_changed(&loopback, LOOPBACK_PRELOAD)?;
    let python_server = cache.join("python_server.py");
    write_if_changed(&python_server, PYTHON_SERVER)?;
    let oauth_as_script = cache.join("oauth_as.mjs");
    write_if_changed(&oauth_as_script, OAUTH_AS_SCRIPT)?;

    let node = node(cache).await?;
    let node_modules = npm_packages(&cache.join("npm"), "npm packages", NPM_PACKAGES).await?;
    let draft_node_modules =
        npm_packages(&cache.join("npm-draft"), "draft suite", &[DRAFT_SUITE]).await;
    if let Err(e) = &draft_node_modules {
        println!("   draft suite: {e}");
    }
    let interop_node_modules = npm_packages(
        &cache.join("npm-interop"),
        "interop authorization server",
        &[INTEROP_AS],
    )
    .await;
    if let Err(e) = &interop_node_modules {
        println!("   interop authorization server: {e}");
    }
    let python = python(cache).await;
    if let Err(e) = &python {
        println!("   python: {e}");
    }
    Ok(Tools {
        node,
        node_modules,
        draft_node_modules,
        interop_node_modules,
        oauth_as_script,
        loopback,
        python,
        python_server,
    })
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

async fn version_of(program: &Path, arg: &str) -> Option<String> {
    let mut cmd = process::command(program);
    cmd.arg(arg);
    let out = process::run(cmd, Duration::from_secs(30)).await.ok()?;
    out.success().then(|| out.stdout.trim().to_string())
}

/// `v20.1.0` → 20.
fn node_major(version: &str) -> Option<u32> {
    version
        .trim()
        .strip_prefix('v')?
        .split('.')
        .next()?
        .parse()
        .ok()
}

async fn node(cache: &Path) -> Result<PathBuf, String> {
    let system = PathBuf::from("node");
    let system_version = version_of(&system, "--version").await;
    if let Some(v) = &system_version
        && node_major(v).is_some_and(|m| m >= 22)
    {
        println!("   node: the machine's {v}");
        return Ok(system);
    }
    let prefix = cache.join("node22");
    let local = prefix.join("node_modules/node/bin/node");
    let wanted = format!("v{NODE_VERSION}");
    if version_of(&local, "--version").await.as_deref() == Some(wanted.as_str()) {
        println!("   node: {wanted} from the cache");
        return Ok(local);
    }
    println!(
        "   node: the machine has {}; installing node@{NODE_VERSION} into the cache",
        system_version.as_deref().unwrap_or("none")
    );
    let mut cmd = npm();
    cmd.arg("install")
        .arg("--prefix")
        .arg(&prefix)
        .args(["--no-audit", "--no-fund", "--no-save"])
        .arg(format!("node@{NODE_VERSION}"));
    let out = process::run(cmd, INSTALL_TIMEOUT).await?;
    if !out.success() {
        return Err(format!(
            "npm install node@{NODE_VERSION}: {}",
            out.describe()
        ));
    }
    match version_of(&local, "--version").await {
        Some(v) if v == wanted => Ok(local),
        other => Err(format!(
            "npm installed node@{NODE_VERSION}, but {} answers {other:?} (did npm skip the package's install script?)",
            local.display()
        )),
    }
}

/// Node (22 or later: the machine's, else the cache's) and the
/// `node_modules` holding `@modelcontextprotocol/sdk`, as [`prepare`] left
/// them; `None` when either is missing. Installs nothing, touches no network.
#[cfg(feature = "peers")]
pub(crate) fn installed(cache: &Path) -> Option<(PathBuf, PathBuf)> {
    let version = |program: &Path| {
        let out = std::process::Command::new(program)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let new_enough = |program: &Path| {
        version(program)
            .and_then(|v| node_major(&v))
            .is_some_and(|m| m >= 22)
    };
    let system = PathBuf::from("node");
    let local = cache.join("node22/node_modules/node/bin/node");
    let node = [system, local].into_iter().find(|p| new_enough(p))?;
    let node_modules = cache.join("npm/node_modules");
    installed_version(&node_modules, "@modelcontextprotocol/sdk")?;
    Some((node, node_modules))
}

fn npm() -> tokio::process::Command {
    let mut cmd = process::command("npm");
    cmd.env("NPM_CONFIG_UPDATE_NOTIFIER", "false");
    cmd
}

fn npm_manifest(packages: &[(&str, &str)]) -> String {
    let deps: Vec<String> = packages
        .iter()
        .map(|(name, version)| format!("    \"{name}\": \"{version}\""))
        .collect();
    format!(
        "{{\n  \"name\": \"xtask-conformance-cache\",\n  \"private\": true,\n  \"dependencies\": {{\n{}\n  }}\n}}\n",
        deps.join(",\n")
    )
}

fn installed_version(node_modules: &Path, package: &str) -> Option<String> {
    let text = std::fs::read_to_string(node_modules.join(package).join("package.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("version")?.as_str().map(str::to_string)
}

/// Installs `packages` (exact versions) into `dir` with its own
/// `package.json`, or finds them there already (then offline).
async fn npm_packages(
    dir: &Path,
    label: &str,
    packages: &[(&str, &str)],
) -> Result<PathBuf, String> {
    let node_modules = dir.join("node_modules");
    let all_there = packages
        .iter()
        .all(|(p, v)| installed_version(&node_modules, p).as_deref() == Some(*v));
    if all_there {
        println!("   {label}: pinned versions in the cache");
        return Ok(node_modules);
    }
    println!("   {label}: installing the pinned versions into the cache");
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    write_if_changed(&dir.join("package.json"), &npm_manifest(packages))?;
    let mut cmd = npm();
    cmd.current_dir(dir)
        .args(["install", "--no-audit", "--no-fund"]);
    let out = process::run(cmd, INSTALL_TIMEOUT).await?;
    if !out.success() {
        return Err(format!("npm install: {}", out.describe()));
    }
    for (p, v) in packages {
        let got = installed_version(&node_modules, p);
        if got.as_deref() != Some(*v) {
            return Err(format!("npm install left {p} at {got:?}, not {v}"));
        }
    }
    Ok(node_modules)
}

async fn python(cache: &Path) -> Result<PathBuf, String> {
    let venv = cache.join("python");
    let python = if cfg!(windows) {
        venv.join("Scripts/python.exe")
    } else {
        venv.join("bin/python")
    };
    let stamp = venv.join("xtask-pins.txt");
    let pins = format!("mcp=={PYPI_MCP}\n");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(pins.as_str()) {
        println!("   python: mcp {PYPI_MCP} in the cache's virtualenv");
        return Ok(python);
    }
    println!("   python: creating a virtualenv with mcp=={PYPI_MCP} in the cache");
    let mut made = false;
    let mut why = String::new();
    for base in ["python3", "python"] {
        let mut cmd = process::command(base);
        cmd.args(["-m", "venv", "--clear"]).arg(&venv);
        match process::run(cmd, Duration::from_secs(120)).await {
            Ok(out) if out.success() => {
                made = true;
                break;
            }
            Ok(out) => why = format!("{base} -m venv: {}", out.describe()),
            Err(e) => why = e,
        }
    }
    if !made {
        return Err(format!("no virtualenv: {why}"));
    }
    let mut cmd = process::command(&python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        &format!("mcp=={PYPI_MCP}"),
    ]);
    let out = process::run(cmd, INSTALL_TIMEOUT).await?;
    if !out.success() {
        return Err(format!("pip install mcp=={PYPI_MCP}: {}", out.describe()));
    }
    std::fs::write(&stamp, pins).map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(python)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_versions() {
        assert_eq!(node_major("v20.20.2\n"), Some(20));
        assert_eq!(node_major("v22.23.3"), Some(22));
        assert_eq!(node_major("22"), None);
    }

    #[test]
    fn manifest_is_json_with_every_pin() {
        let v: serde_json::Value = serde_json::from_str(&npm_manifest(NPM_PACKAGES)).unwrap();
        for (p, version) in NPM_PACKAGES {
            assert_eq!(v["dependencies"][p], *version);
        }
        let v: serde_json::Value = serde_json::from_str(&npm_manifest(&[DRAFT_SUITE])).unwrap();
        assert_eq!(v["dependencies"][DRAFT_SUITE.0], DRAFT_SUITE.1);
        let v: serde_json::Value = serde_json::from_str(&npm_manifest(&[INTEROP_AS])).unwrap();
        assert_eq!(v["dependencies"][INTEROP_AS.0], INTEROP_AS.1);
    }
}
