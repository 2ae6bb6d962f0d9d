//! Starting a child the way `posix_spawn` does, with `PR_SET_PDEATHSIG`
//! set before `exec`, and waiting for it on a pidfd.
//!
//! `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)` runs the child on a stack
//! of its own in this process's memory, with this thread suspended until
//! the child calls `execve` or `_exit`. Nothing is copied, so the cost does
//! not grow with this process's memory. The child may then only make system
//! calls on memory prepared beforehand: everything it needs (the `execve`
//! arguments, every candidate path of the program, the working directory,
//! the pipe ends) is built here first, and the child allocates nothing,
//! takes no lock and touches nothing but its own stack and `errno`, which
//! is the suspended thread's.
//!
//! Signals: every signal is blocked on this thread around the `clone`, so
//! no handler of this process runs on the child's stack; the child sets
//! each handled signal back to its default (the handlers are this
//! process's code), `SIGPIPE` too (as the standard library does: Rust
//! programs ignore it, their children should not), then unblocks them all.
//!
//! An `exec` failure is sent back as the `errno` on a close-on-exec pipe:
//! end of file on it means `exec` succeeded.

#![allow(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Mutex;

use libc::{c_char, c_int, c_void, pid_t};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

use super::{Child, Output, Spawned, Spec, Stdin};

/// The child's stack, while it runs before `exec` (it needs a few hundred
/// bytes; the rest is room for the C library's wrappers).
const STACK_BYTES: usize = 64 * 1024;

/// Searched when the child's environment has no `PATH` (`execvp`'s default).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Why the child was not started.
#[derive(Debug)]
pub(super) enum Failure {
    /// The kernel refused this `clone` (too old, or a seccomp filter): fork
    /// instead.
    Refused(io::Error),
    /// The child could not be started (the program was not found…).
    Io(io::Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

/// A started child, before its pipes are registered with the runtime.
pub(super) struct Started {
    pid: pid_t,
    pidfd: OwnedFd,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

impl Started {
    /// Registers the pipes and the pidfd with the current runtime.
    pub(super) fn into_spawned(self) -> io::Result<Spawned> {
        // SAFETY: the `OwnedFd` stays open, and the same descriptor, for as
        // long as the `AsyncFd` that owns it.
        let fd = match unsafe { AsyncFd::register_with_interest(self.pidfd, Interest::READABLE) } {
            Ok(fd) => fd,
            Err(e) => {
                kill_and_orphan(self.pid);
                return Err(e.into());
            }
        };
        // From here a failure drops `child`, which kills it.
        let child = PidfdChild {
            pid: self.pid,
            fd,
            reaped: false,
        };
        Ok(Spawned {
            pid: u32::try_from(self.pid).map_err(|_| io::Error::other("negative child id"))?,
            stdin: Stdin::from_owned_fd(self.stdin)?,
            stdout: Output::from_owned_fd(self.stdout)?,
            stderr: Output::from_owned_fd(self.stderr)?,
            child: Child::Pidfd(child),
        })
    }
}

/// A child started here, waited for on its pidfd.
pub(in crate::stdio) struct PidfdChild {
    pid: pid_t,
    fd: AsyncFd<OwnedFd>,
    reaped: bool,
}

impl PidfdChild {
    /// Waits for the child to exit (its pidfd becomes readable) and reaps it.
    pub(in crate::stdio) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            let mut ready = self.fd.readable().await?;
            // Readable means exited; the next `try_wait` reaps it. A
            // spurious wake is cleared and waited for again.
            ready.clear_ready();
        }
    }

    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.reaped {
            return Err(io::Error::other("the child was already reaped"));
        }
        match reap(self.pid)? {
            Some(status) => {
                self.reaped = true;
                Ok(Some(ExitStatus::from_raw(status)))
            }
            None => Ok(None),
        }
    }
}

/// Children dropped before they were reaped: killed, and reaped on a later
/// spawn or drop (a dropped child is not waited for on the spot).
static ORPHANS: Mutex<Vec<pid_t>> = Mutex::new(Vec::new());

impl Drop for PidfdChild {
    fn drop(&mut self) {
        if !self.reaped {
            kill_and_orphan(self.pid);
        }
    }
}

/// Kills our child `pid`, not reaped yet, and leaves it to be reaped on a
/// later spawn or drop.
fn kill_and_orphan(pid: pid_t) {
    // SAFETY: `kill` with a pid this process has not reaped (so it is
    // still this child's, alive or a zombie) and a valid signal.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let mut orphans = ORPHANS.lock().unwrap_or_else(|p| p.into_inner());
    orphans.push(pid);
    reap_orphans(&mut orphans);
}

/// Reaps the orphans that have exited.
fn reap_orphans(orphans: &mut Vec<pid_t>) {
    orphans.retain(|&pid| matches!(reap(pid), Ok(None)));
}

/// `waitpid(pid, WNOHANG)`: the raw status once it exited.
fn reap(pid: pid_t) -> io::Result<Option<c_int>> {
    loop {
        let mut status: c_int = 0;
        // SAFETY: a plain system call with a pointer to a local.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if got == pid {
            return Ok(Some(status));
        }
        if got == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// What the child reads: pointers into [`Prepared`], which outlives it.
struct ChildArgs {
    /// Null-terminated list of paths to try, in order.
    candidates: *const *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    /// Null when there is none.
    cwd: *const c_char,
    /// The child's ends of stdin, stdout and stderr (all ≥ 3).
    stdio: [RawFd; 3],
    /// Where an `errno` is written when the child cannot `exec`.
    report: RawFd,
    /// This process, to check that the parent did not die before `prctl`.
    parent: pid_t,
}

/// The strings of `ChildArgs`, owned.
struct Prepared {
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: Option<CString>,
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a program, argument, variable or directory contains a NUL byte",
        )
    })
}

/// Null-terminated pointers to `strings`.
fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Where `execvp` would look for `program`: itself when it has a slash,
/// else each folder of the child's `PATH` (or the default).
fn candidates(program: &str, env: &[(OsString, OsString)]) -> io::Result<Vec<CString>> {
    if program.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "empty program name",
        ));
    }
    if program.contains('/') {
        return Ok(vec![c_string(program.as_bytes())?]);
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map_or(OsStr::new(DEFAULT_PATH), |(_, v)| v.as_os_str());
    path.as_bytes()
        .split(|&b| b == b':')
        .map(|dir| {
            // An empty entry is the current directory.
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            let mut full = Vec::with_capacity(dir.len() + 1 + program.len());
            full.extend_from_slice(dir);
            full.push(b'/');
            full.extend_from_slice(program.as_bytes());
            c_string(&full)
        })
        .collect()
}

impl Prepared {
    fn new(spec: &Spec) -> io::Result<Prepared> {
        let mut argv = Vec::with_capacity(spec.args.len() + 1);
        argv.push(c_string(spec.program.as_bytes())?);
        for a in &spec.args {
            argv.push(c_string(a.as_bytes())?);
        }
        let envp = spec
            .env
            .iter()
            .map(|(k, v)| {
                let mut kv = Vec::with_capacity(k.len() + 1 + v.len());
                kv.extend_from_slice(k.as_bytes());
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                c_string(&kv)
            })
            .collect::<io::Result<_>>()?;
        let cwd = match &spec.cwd {
            Some(dir) => Some(c_string(dir.as_os_str().as_bytes())?),
            None => None,
        };
        Ok(Prepared {
            candidates: candidates(&spec.program, &spec.env)?,
            argv,
            envp,
            cwd,
        })
    }
}

/// A pipe, both ends close-on-exec: (read, write).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `pipe2` writes two descriptors into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both were just opened and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `fd` moved to a number ≥ 3 (close-on-exec), so that the child's `dup2`
/// onto 0, 1 and 2 cannot overwrite another of its ends (this process may
/// run with its own stdio closed).
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: `fcntl` on a descriptor we own: the lowest free number from
    // 3 up, close-on-exec, owned by nothing else.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened above.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}

/// Starts `spec` on this thread, which becomes the child's parent.
pub(super) fn spawn(spec: &Spec) -> Result<Started, Failure> {
    {
        let mut orphans = ORPHANS.lock().unwrap_or_else(|p| p.into_inner());
        reap_orphans(&mut orphans);
    }
    let prepared = Prepared::new(spec)?;
    let candidates = pointers(&prepared.candidates);
    let argv = pointers(&prepared.argv);
    let envp = pointers(&prepared.envp);
    let (stdin_child, stdin) = pipe()?;
    let (stdout, stdout_child) = pipe()?;
    let (stderr, stderr_child) = pipe()?;
    let (report_read, report) = pipe()?;
    let stdin_child = above_stdio(stdin_child)?;
    let stdout_child = above_stdio(stdout_child)?;
    let stderr_child = above_stdio(stderr_child)?;
    let parent = pid_t::try_from(std::process::id())
        .map_err(|_| io::Error::other("this process's id does not fit a pid_t"))?;
    let args = ChildArgs {
        candidates: candidates.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: prepared
            .cwd
            .as_ref()
            .map_or(std::ptr::null(), |c| c.as_ptr()),
        stdio: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr_child.as_raw_fd(),
        ],
        report: report.as_raw_fd(),
        parent,
    };
    let mut stack = vec![0u8; STACK_BYTES];
    let (pid, pidfd) = clone_child(&args, &mut stack)?;
    drop(stack);
    // The child's ends are its own now (or it is gone).
    drop((stdin_child, stdout_child, stderr_child, report));
    if let Some(errno) = read_report(&report_read) {
        // The child could not exec and has called `_exit`: reap it.
        wait_blocking(pid);
        return Err(Failure::Io(io::Error::from_raw_os_error(errno)));
    }
    Ok(Started {
        pid,
        pidfd,
        stdin,
        stdout,
        stderr,
    })
}

/// Reaps `pid`, our child that has exited or been killed.
fn wait_blocking(pid: pid_t) {
    let mut status: c_int = 0;
    // SAFETY: a plain system call on our own child, pointer to a local.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

/// The `errno` the child reported, or `None` at end of file (it exec'd).
fn read_report(fd: &OwnedFd) -> Option<c_int> {
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < buf.len() {
        let rest = buf.get_mut(got..)?;
        // SAFETY: reads into the rest of a local buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len()) };
        match n {
            0 => break,
            n if n > 0 => got += usize::try_from(n).ok()?,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => break,
        }
    }
    // A partial report cannot happen (4 bytes are written at once to a
    // pipe); take it as a failure of unknown cause.
    match got {
        0 => None,
        4 => Some(c_int::from_ne_bytes(buf)),
        _ => Some(libc::EIO),
    }
}

/// The `clone` itself, with every signal blocked on this thread around it.
fn clone_child(args: &ChildArgs, stack: &mut [u8]) -> Result<(pid_t, OwnedFd), Failure> {
    // The stack grows down: its top, 16-byte aligned.
    let top = stack.as_mut_ptr_range().end;
    let top = top.wrapping_sub(top as usize % 16);
    let mut all = MaybeUninit::<libc::sigset_t>::uninit();
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    let mut pidfd: c_int = -1;
    // SAFETY: `sigfillset` initializes `all`; `pthread_sigmask` stores the
    // old mask in `old`, restored below whatever `clone` did. `clone` runs
    // `child` on `stack`, which outlives it (this thread is suspended until
    // the child execs or exits: CLONE_VFORK), with `args`, which points
    // into memory this frame keeps alive; `pidfd` receives the child's
    // pidfd (CLONE_PIDFD).
    let (pid, error) = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        let masked = libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr());
        if masked != 0 {
            return Err(Failure::Io(io::Error::from_raw_os_error(masked)));
        }
        let pid = libc::clone(
            child,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
            std::ptr::from_ref(args).cast_mut().cast(),
            &mut pidfd as *mut c_int,
        );
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut());
        (pid, error)
    };
    if pid < 0 {
        return Err(match error.raw_os_error() {
            Some(libc::EINVAL | libc::ENOSYS | libc::EPERM) => Failure::Refused(error),
            _ => Failure::Io(error),
        });
    }
    if pidfd < 0 {
        // Cannot be (CLONE_PIDFD succeeded with the clone); a child that
        // could not be waited for is not left running.
        // SAFETY: signals our own child, not reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        wait_blocking(pid);
        return Err(Failure::Io(io::Error::other("clone gave no pidfd")));
    }
    // SAFETY: the kernel opened it for us (close-on-exec) and nothing else
    // owns it.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// The child, before `exec`: reports the `errno` of what failed and exits.
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the suspended parent keeps alive;
    // everything below is a system call on memory prepared beforehand (see
    // the module's docs).
    unsafe {
        let args = &*arg.cast::<ChildArgs>();
        let errno = prepare_and_exec(args);
        let bytes = errno.to_ne_bytes();
        libc::write(args.report, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127)
    }
}

/// The `errno` of the current failure (the suspended thread's `errno`).
unsafe fn errno() -> c_int {
    // SAFETY: the C library's pointer to this thread's `errno`.
    unsafe { *libc::__errno_location() }
}

/// Signals, process group, stdio, working directory, parent-death signal,
/// then `execve` on each candidate. Returns only on failure, with its
/// `errno`.
unsafe fn prepare_and_exec(args: &ChildArgs) -> c_int {
    // SAFETY: system calls on locals and on the prepared strings.
    unsafe {
        // Handlers are this process's code: back to the defaults.
        for signal in 1..libc::SIGRTMAX() {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut current = MaybeUninit::<libc::sigaction>::zeroed();
            if libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) != 0 {
                continue;
            }
            let handler = current.assume_init_ref().sa_sigaction;
            if signal == libc::SIGPIPE || (handler != libc::SIG_DFL && handler != libc::SIG_IGN) {
                let mut default = MaybeUninit::<libc::sigaction>::zeroed();
                (*default.as_mut_ptr()).sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, default.as_ptr(), std::ptr::null_mut());
            }
        }
        let mut none = MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(none.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut());

        if libc::setpgid(0, 0) != 0 {
            return errno();
        }
        for (target, &fd) in args.stdio.iter().enumerate() {
            let Ok(target) = c_int::try_from(target) else {
                return libc::EBADF;
            };
            if libc::dup2(fd, target) < 0 {
                return errno();
            }
        }
        if !args.cwd.is_null() && libc::chdir(args.cwd) != 0 {
            return errno();
        }
        let unused: libc::c_ulong = 0;
        let term = libc::SIGTERM as libc::c_ulong;
        if libc::prctl(libc::PR_SET_PDEATHSIG, term, unused, unused, unused) != 0 {
            return errno();
        }
        // The parent may have died before the prctl: then no signal comes.
        if libc::getppid() != args.parent {
            return libc::ESRCH;
        }
        // As `execvp`: the next folder on "not found"-like errors, and
        // `EACCES` if any candidate gave it.
        let mut denied = false;
        let mut last = libc::ENOENT;
        let mut at = args.candidates;
        while !(*at).is_null() {
            libc::execve(*at, args.argv, args.envp);
            last = errno();
            match last {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ETIMEDOUT | libc::ENODEV => {}
                _ => return last,
            }
            at = at.add(1);
        }
        if denied { libc::EACCES } else { last }
    }
}
