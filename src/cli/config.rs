//! `--config FILE`: one TOML file with the defaults of every command's flags.
//!
//! A key sets what the flag of the same long name sets: top-level keys are the global
//! flags (`lake = "s3://bucket/prefix"`), and a table named for a command holds that
//! command's flags (`[serve]` with `addr = "0.0.0.0:8080"`, `[jobs.run]` for a
//! subcommand's). Keys are written as the flag is (`flush-secs`) or with underscores
//! (`flush_secs`). A flag given on the command line wins over its environment variable,
//! which wins over the file, which wins over the built-in default: the file's values are
//! installed as the flags' defaults before the command line is parsed, so clap applies
//! that order and validates a file's value exactly as it validates the flag's.
//!
//! Why not deserialize the file into a struct of its own: the flags are the one list of
//! settings. A second list would drift from them; here a new flag is configurable the
//! moment it exists, and a key that names no flag is refused with the list of those that
//! do. The one exception is a table of settings that are no flag ([`SETTINGS_TABLES`]:
//! the feeds' `[sources]`), which its owner reads from the same file.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Arg, ArgAction, Command};

/// The command with its flags' defaults taken from the `--config` file named in `args`
/// (or `WXLAKE_CONFIG`), when there is one.
pub fn command_with_config(base: Command, args: &[OsString]) -> anyhow::Result<Command> {
    match config_path(&base, args) {
        Some(path) => {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading config {}", path.display()))?;
            apply_text(base, &text).with_context(|| format!("config {}", path.display()))
        }
        None => Ok(base),
    }
}

/// The `--config` value, found by a first lenient parse (so the position of `--config`
/// and the `=`/space forms follow clap's rules, and an otherwise wrong command line is
/// reported by the real parse that follows, not here).
fn config_path(base: &Command, args: &[OsString]) -> Option<PathBuf> {
    let matches = base.clone().ignore_errors(true).try_get_matches_from(args).ok()?;
    matches.get_one::<PathBuf>("config").cloned()
}

/// Installs the settings of a config file's text as the flags' defaults.
pub fn apply_text(cmd: Command, text: &str) -> anyhow::Result<Command> {
    let table: toml::Table = toml::from_str(text)?;
    apply_table(cmd, &table, &[])
}

/// Top-level tables that are settings of their own, not flags: each is read by the module
/// that owns it (`[sources]`: the live feeds, `wxlake::feeds::FeedsConfig`).
pub const SETTINGS_TABLES: [&str; 1] = ["sources"];

fn apply_table(mut cmd: Command, table: &toml::Table, section: &[&str]) -> anyhow::Result<Command> {
    for (key, value) in table {
        if section.is_empty() && SETTINGS_TABLES.contains(&key.as_str()) {
            continue;
        }
        let name = key.replace('_', "-");
        let here = || section.iter().chain([&key.as_str()]).copied().collect::<Vec<_>>().join(".");
        if let toml::Value::Table(sub) = value {
            let Some(sub_name) = cmd.find_subcommand(&name).map(|s| s.get_name().to_string()) else {
                bail!("[{}] names no command; known: {}", here(), subcommand_names(&cmd));
            };
            let path: Vec<&str> = section.iter().copied().chain([sub_name.as_str()]).collect();
            let sub_cmd = cmd.find_subcommand(&sub_name).cloned().expect("found above");
            let sub_cmd = apply_table(sub_cmd, sub, &path)?;
            cmd = cmd.mut_subcommand(&sub_name, |_| sub_cmd);
            continue;
        }
        let Some(arg) = settable(&cmd, &name) else {
            bail!("`{}` names no flag of `{}`; known: {}", here(), command_path(&cmd, section), flag_names(&cmd));
        };
        let id = arg.get_id().to_string();
        let values = defaults_of(arg, value).with_context(|| format!("`{}`", here()))?;
        cmd = cmd.mut_arg(id, |a| a.default_values(values));
    }
    Ok(cmd)
}

/// A flag a file may set: one with a long name, other than `--config` itself and clap's
/// own `--help`/`--version`.
fn settable<'a>(cmd: &'a Command, name: &str) -> Option<&'a Arg> {
    cmd.get_arguments().find(|a| {
        a.get_long() == Some(name)
            && a.get_id() != "config"
            && !matches!(a.get_action(), ArgAction::Help | ArgAction::HelpLong | ArgAction::Version)
    })
}

/// The default values (as the command line would spell them) for `value`.
fn defaults_of(arg: &Arg, value: &toml::Value) -> anyhow::Result<Vec<String>> {
    let many = matches!(arg.get_action(), ArgAction::Append);
    let scalar = |v: &toml::Value| -> anyhow::Result<String> {
        Ok(match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => bail!("expected a string, number or boolean, found {}", other.type_str()),
        })
    };
    match value {
        toml::Value::Array(items) if many => items.iter().map(scalar).collect(),
        toml::Value::Array(_) => bail!("takes one value, not a list"),
        v => Ok(vec![scalar(v)?]),
    }
}

fn command_path(cmd: &Command, section: &[&str]) -> String {
    if section.is_empty() {
        cmd.get_name().to_string()
    } else {
        section.join(" ")
    }
}

fn flag_names(cmd: &Command) -> String {
    let names: Vec<&str> =
        cmd.get_arguments().filter_map(|a| a.get_long()).filter(|n| settable(cmd, n).is_some()).collect();
    names.join(", ")
}

fn subcommand_names(cmd: &Command) -> String {
    let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The example configuration shipped with the repository, checked by the tests below.
#[cfg(test)]
const EXAMPLE: &str = include_str!("../../data/wxlake.example.toml");

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches};

    use std::path::Path;

    use super::*;
    use crate::cli::{Cli, Command as Cmd};

    fn parse(config: &str, args: &[&str]) -> anyhow::Result<Cli> {
        let cmd = apply_text(Cli::command(), config)?;
        let argv: Vec<OsString> = std::iter::once("wxlake").chain(args.iter().copied()).map(OsString::from).collect();
        Ok(Cli::from_arg_matches(&cmd.try_get_matches_from(argv)?)?)
    }

    fn serve(cli: &Cli) -> &crate::cli::serve::ServeArgs {
        match &cli.command {
            Cmd::Serve(a) => a,
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn file_sets_defaults_and_the_command_line_wins() {
        let file = "lake = \"s3://bucket/prefix\"\nkeep-replaced-secs = 30\n[serve]\naddr = \"0.0.0.0:9000\"\nflush_secs = 3\ndemo = true\n";
        let cli = parse(file, &["serve"]).unwrap();
        assert_eq!((cli.lake.as_str(), cli.keep_replaced_secs), ("s3://bucket/prefix", 30));
        let s = serve(&cli);
        assert_eq!((s.addr.as_str(), s.flush_secs, s.demo), ("0.0.0.0:9000", 3, true));

        let cli = parse(file, &["--lake", "file:///tmp/x", "serve", "--flush-secs", "7"]).unwrap();
        assert_eq!(cli.lake, "file:///tmp/x");
        let s = serve(&cli);
        assert_eq!((s.addr.as_str(), s.flush_secs), ("0.0.0.0:9000", 7));
    }

    /// The REST listener's limits are `[serve]` keys like any flag, and the flag wins.
    #[test]
    fn http_limits_come_from_the_file_and_the_flags() {
        let file = "[serve]\nhttp-header-timeout-secs = 3\nhttp_max_connections = 10\n";
        let limits = serve(&parse(file, &["serve", "--http-body-timeout-secs", "7"]).unwrap()).http_limits();
        assert_eq!(limits.header_timeout, std::time::Duration::from_secs(3));
        assert_eq!(limits.body_timeout, std::time::Duration::from_secs(7));
        assert_eq!(limits.idle_timeout, std::time::Duration::from_secs(60));
        assert_eq!(limits.max_connections, 10);
        let limits = serve(&parse("", &["serve"]).unwrap()).http_limits();
        assert_eq!(limits.max_connections, wxlake::api::listener::default_max_connections());
        assert!(parse("[serve]\nhttp-max-connections = \"many\"\n", &["serve"]).is_err());
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_refused_by_name() {
        let e = parse("[serve]\nflush = 3\n", &["serve"]).unwrap_err().to_string();
        assert!(e.contains("`serve.flush` names no flag of `serve`") && e.contains("flush-secs"), "{e}");
        let e = parse("[serv]\naddr = \"x\"\n", &["serve"]).unwrap_err().to_string();
        assert!(e.contains("[serv] names no command") && e.contains("serve"), "{e}");
        let e = parse("[serve]\naddr = [\"a\", \"b\"]\n", &["serve"]).unwrap_err();
        assert!(format!("{e:#}").contains("takes one value"), "{e:#}");
        // A value of the wrong kind is refused as the flag's would be.
        let e = parse("[serve]\nflush-secs = \"soon\"\n", &["serve"]).unwrap_err().to_string();
        assert!(e.contains("soon") && e.contains("flush-secs"), "{e}");
        assert!(parse("lake = ", &["serve"]).is_err());
    }

    #[test]
    fn config_path_comes_from_the_flag_or_the_environment_variable() {
        let argv = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let p = config_path(&Cli::command(), &argv(&["wxlake", "serve", "--config", "/etc/wx.toml"]));
        assert_eq!(p, Some(PathBuf::from("/etc/wx.toml")));
        let p = config_path(&Cli::command(), &argv(&["wxlake", "--config=/a.toml", "sql", "SELECT 1"]));
        assert_eq!(p, Some(PathBuf::from("/a.toml")));
        assert_eq!(
            config_path(&Cli::command(), &argv(&["wxlake", "serve"]))
                .filter(|_| std::env::var_os("WXLAKE_CONFIG").is_none()),
            None
        );
    }

    #[test]
    fn the_shipped_example_is_valid() {
        let cli = parse(EXAMPLE, &["serve"]).unwrap();
        let s = serve(&cli);
        assert_eq!(s.flush_secs, 10);
        let feeds = wxlake::feeds::FeedsConfig::from_file_text(EXAMPLE).unwrap();
        assert!(feeds.awc_metar.is_some_and(|a| a.enabled));
        parse(EXAMPLE, &["sql", "SELECT 1"]).unwrap();
        assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/wxlake.example.toml").exists());
    }
}
