//! The configuration file's text: TOML to core's `SystemConfig`, or the first mistake as a
//! one-line `ConfigError` naming the key (or `<line>:<column>` for a syntax error).
//!
//! It reads no file and plans no memory: image sizes come back as 0 for the host tool to
//! fill, and `partita_core::config::{plan_memory, validate}` judge the system. It is a
//! library of its own so the fuzz targets reach it without the host tool's dependencies.
//! Nothing here may panic on what the text says.

mod fields;
mod schema;

use partita_core::config::{ConfigError, SystemConfig};

/// TOML text to a configuration whose image sizes are still 0.
pub fn parse(text: &str) -> Result<SystemConfig, ConfigError> {
    let table = text
        .parse::<toml::Table>()
        .map_err(|e| syntax_error(text, &e))?;
    schema::system(&table)
}

fn syntax_error(text: &str, e: &toml::de::Error) -> ConfigError {
    let start = e.span().map_or(0, |s| s.start).min(text.len());
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let message: Vec<&str> = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    ConfigError::new(
        format!("{line}:{column}"),
        format!("TOML syntax error: {}", message.join("; ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let err = parse("[board]\nplatform = \"qemu-virt\ncpus = 1\n").unwrap_err();
        assert_eq!(err.key, "2:22");
        assert!(err.message.starts_with("TOML syntax error: "), "{err}");
        assert!(!err.message.contains('\n'));
    }

    #[test]
    fn duplicate_keys_are_syntax_errors() {
        let err = parse("[board]\ncpus = 1\ncpus = 2\n").unwrap_err();
        assert_eq!(err.key, "3:1");
    }
}
