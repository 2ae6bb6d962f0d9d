//! A tiny argument reader: positionals, `--name value` and `--name=value`.

use std::str::FromStr;

/// The arguments not consumed yet.
#[derive(Debug)]
pub(crate) struct Args {
    rest: Vec<String>,
}

impl Args {
    /// The process arguments, program name excluded.
    pub(crate) fn from_env() -> Self {
        Args {
            rest: std::env::args().skip(1).collect(),
        }
    }

    /// Everything not consumed yet, in order (to pass on to a child process).
    pub(crate) fn remaining(&self) -> &[String] {
        &self.rest
    }

    /// Takes the first argument that is not an option.
    pub(crate) fn next_positional(&mut self) -> Option<String> {
        // An option's value is not a positional: skip `--name value` pairs.
        let mut j = 0;
        while let Some(arg) = self.rest.get(j) {
            if arg.starts_with("--") {
                j += if arg.contains('=') { 1 } else { 2 };
            } else {
                return Some(self.rest.remove(j));
            }
        }
        None
    }

    /// Takes `--name value` or `--name=value`, parsed; `default` when absent.
    pub(crate) fn option<T: FromStr>(&mut self, name: &str, default: T) -> Result<T, String> {
        let flag = format!("--{name}");
        let prefix = format!("--{name}=");
        let mut i = 0;
        while i < self.rest.len() {
            let arg = self.rest.get(i).cloned().unwrap_or_default();
            let value = if let Some(v) = arg.strip_prefix(&prefix) {
                self.rest.remove(i);
                v.to_owned()
            } else if arg == flag {
                self.rest.remove(i);
                if i < self.rest.len() {
                    self.rest.remove(i)
                } else {
                    return Err(format!("{flag} needs a value"));
                }
            } else {
                i += 1;
                continue;
            };
            return value
                .parse()
                .map_err(|_| format!("{flag}: cannot read `{value}`"));
        }
        Ok(default)
    }

    /// Fails when arguments are left that nothing consumed.
    pub(crate) fn finish(self) -> Result<(), String> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(format!("unexpected arguments: {}", self.rest.join(" ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Args {
        Args {
            rest: list.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn positionals_and_options() {
        let mut a = args(&["bench", "--mb", "4", "codec", "--iters=3"]);
        assert_eq!(a.next_positional().as_deref(), Some("bench"));
        assert_eq!(a.next_positional().as_deref(), Some("codec"));
        assert_eq!(a.option("mb", 8.0).unwrap(), 4.0);
        assert_eq!(a.option("iters", 5usize).unwrap(), 3);
        assert_eq!(a.option("seed", 1u64).unwrap(), 1);
        a.finish().unwrap();
    }

    #[test]
    fn bad_and_left_over_options() {
        assert!(args(&["--mb", "x"]).option("mb", 1.0).is_err());
        assert!(args(&["--mb"]).option("mb", 1.0).is_err());
        assert!(args(&["--what", "1"]).finish().is_err());
    }
}
