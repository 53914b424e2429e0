//! Typed access to one TOML table of a configuration file.
//!
//! `Fields` wraps a table together with its key path (`vm[0].memory[1]`) and turns every
//! lookup into a typed value or a `ConfigError` naming the exact key: unknown keys (with the
//! accepted ones listed), wrong types, missing keys, out-of-range numbers and bad sizes. It
//! never panics on what a user wrote and never knows which keys a section has: the schema
//! module decides that.

use partita_core::config::ConfigError;
use toml::{Table, Value};

/// One table of the file and the key path that leads to it.
pub struct Fields<'a> {
    path: String,
    table: &'a Table,
}

impl<'a> Fields<'a> {
    /// Wraps `table`, refusing any key not in `accepted`. `what` names the section in the
    /// message (`a [[vm]] table`, `a "pl011" device`).
    pub fn new(
        path: impl Into<String>,
        table: &'a Table,
        what: &str,
        accepted: &[&str],
    ) -> Result<Self, ConfigError> {
        let fields = Fields {
            path: path.into(),
            table,
        };
        if let Some(unknown) = table.keys().find(|k| !accepted.contains(&k.as_str())) {
            return Err(ConfigError::new(
                fields.key(unknown),
                format!(
                    "unknown key in {what}; accepted keys: {}",
                    accepted.join(", ")
                ),
            ));
        }
        Ok(fields)
    }

    /// The full key path of `name` in this table.
    pub fn key(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        }
    }

    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.table.get(name)
    }

    pub fn required(&self, name: &str) -> Result<&'a Value, ConfigError> {
        self.get(name)
            .ok_or_else(|| ConfigError::new(self.key(name), "missing required key"))
    }

    pub fn string(&self, name: &str) -> Result<Option<&'a str>, ConfigError> {
        self.get(name)
            .map(|v| as_str(&self.key(name), v))
            .transpose()
    }

    pub fn required_string(&self, name: &str) -> Result<&'a str, ConfigError> {
        as_str(&self.key(name), self.required(name)?)
    }

    pub fn boolean(&self, name: &str) -> Result<Option<bool>, ConfigError> {
        self.get(name)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| wrong_type(&self.key(name), "true or false", v))
            })
            .transpose()
    }

    pub fn u8(&self, name: &str) -> Result<Option<u8>, ConfigError> {
        self.get(name)
            .map(|v| integer(&self.key(name), v))
            .transpose()
    }

    pub fn u32(&self, name: &str) -> Result<u32, ConfigError> {
        integer(&self.key(name), self.required(name)?)
    }

    pub fn address(&self, name: &str) -> Result<Option<u64>, ConfigError> {
        self.get(name)
            .map(|v| integer(&self.key(name), v))
            .transpose()
    }

    pub fn required_address(&self, name: &str) -> Result<u64, ConfigError> {
        integer(&self.key(name), self.required(name)?)
    }

    /// A byte count: an integer, or a string such as `"4K"`, `"2M"`, `"1G"`.
    pub fn size(&self, name: &str) -> Result<u64, ConfigError> {
        let key = self.key(name);
        match self.required(name)? {
            Value::String(s) => parse_size(s).ok_or_else(|| {
                ConfigError::new(
                    key,
                    format!(
                        "\"{s}\" is not a size: write a number of bytes, or a number followed by K, M or G (\"4K\", \"2M\", \"1G\")"
                    ),
                )
            }),
            v @ Value::Integer(_) => integer(&key, v),
            v => Err(wrong_type(&key, "a size (an integer or a string like \"2M\")", v)),
        }
    }

    /// An array of tables (`[[vm]]`, `memory = [ { ... } ]`); absent means empty.
    pub fn tables(&self, name: &str) -> Result<Vec<&'a Table>, ConfigError> {
        let key = self.key(name);
        let Some(value) = self.get(name) else {
            return Ok(Vec::new());
        };
        let Value::Array(items) = value else {
            return Err(wrong_type(&key, "an array of tables", value));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Table(t) => Ok(t),
                v => Err(wrong_type(&format!("{key}[{i}]"), "a table", v)),
            })
            .collect()
    }

    /// A required array of strings such as `vms = ["rtos", "linux"]`.
    pub fn strings(&self, name: &str) -> Result<Vec<String>, ConfigError> {
        let key = self.key(name);
        match self.required(name)? {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| as_str(&format!("{key}[{i}]"), v).map(str::to_string))
                .collect(),
            v => Err(wrong_type(&key, "an array of strings", v)),
        }
    }

    /// An array of small integers such as `cpus = [0, 1]`.
    pub fn u8_array(&self, name: &str) -> Result<Vec<u8>, ConfigError> {
        integers(&self.key(name), self.required(name)?)
    }

    /// An optional integer key such as `slice_us = 10000`.
    pub fn optional_u32(&self, name: &str) -> Result<Option<u32>, ConfigError> {
        self.get(name)
            .map(|v| integer(&self.key(name), v))
            .transpose()
    }

    /// An array of integers such as `irqs = [40, 41]`; absent means empty.
    pub fn u32_array(&self, name: &str) -> Result<Vec<u32>, ConfigError> {
        match self.get(name) {
            Some(value) => integers(&self.key(name), value),
            None => Ok(Vec::new()),
        }
    }
}

fn integers<T>(key: &str, value: &Value) -> Result<Vec<T>, ConfigError>
where
    T: TryFrom<i64> + Bounded,
{
    let Value::Array(items) = value else {
        return Err(wrong_type(key, "an array of integers", value));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| integer(&format!("{key}[{i}]"), item))
        .collect()
}

fn as_str<'v>(key: &str, value: &'v Value) -> Result<&'v str, ConfigError> {
    match value {
        Value::String(s) => Ok(s),
        v => Err(wrong_type(key, "a string", v)),
    }
}

/// An integer that must fit `T` (`u8`, `u32`, `u64`).
pub fn integer<T>(key: &str, value: &Value) -> Result<T, ConfigError>
where
    T: TryFrom<i64> + Bounded,
{
    let Value::Integer(n) = *value else {
        return Err(wrong_type(key, "an integer", value));
    };
    T::try_from(n).map_err(|_| {
        ConfigError::new(
            key,
            format!("{n} is out of range ({} to {})", T::MIN_TEXT, T::MAX_TEXT),
        )
    })
}

/// The range of an integer type, spelled for messages.
pub trait Bounded {
    const MIN_TEXT: &'static str;
    const MAX_TEXT: &'static str;
}

impl Bounded for u8 {
    const MIN_TEXT: &'static str = "0";
    const MAX_TEXT: &'static str = "255";
}

impl Bounded for u32 {
    const MIN_TEXT: &'static str = "0";
    const MAX_TEXT: &'static str = "4294967295";
}

impl Bounded for u64 {
    const MIN_TEXT: &'static str = "0";
    const MAX_TEXT: &'static str = "0x7fffffffffffffff";
}

pub fn wrong_type(key: &str, expected: &str, found: &Value) -> ConfigError {
    let kind = found.type_str();
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    ConfigError::new(key, format!("expected {expected}, found {article} {kind}"))
}

/// `"4096"`, `"4K"`, `"2M"`, `"1G"` (binary multiples) to bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.as_bytes().last()? {
        b'K' => (&text[..text.len() - 1], 1 << 10),
        b'M' => (&text[..text.len() - 1], 1 << 20),
        b'G' => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn sizes_accept_bytes_and_binary_units() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("4K"), Some(0x1000));
        assert_eq!(parse_size("2M"), Some(0x20_0000));
        assert_eq!(parse_size("1G"), Some(0x4000_0000));
        for bad in [
            "",
            "M",
            "2 M",
            "2m",
            "2MB",
            "-1K",
            "0x10",
            "99999999999999999G",
        ] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn unknown_keys_are_listed_with_the_accepted_ones() {
        let t = table("name = 'a'\ncolour = 'red'");
        let err = Fields::new("vm[0]", &t, "a [[vm]] table", &["name", "kind"])
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "vm[0].colour: unknown key in a [[vm]] table; accepted keys: name, kind"
        );
    }

    #[test]
    fn integers_are_range_checked_and_typed() {
        let t = table("a = 300\nb = 'x'\nc = -1\nd = 7\ne = 1.5");
        let f = Fields::new("", &t, "", &["a", "b", "c", "d", "e"]).unwrap();
        assert_eq!(
            f.u8("a").unwrap_err().to_string(),
            "a: 300 is out of range (0 to 255)"
        );
        assert_eq!(
            f.u8("b").unwrap_err().to_string(),
            "b: expected an integer, found a string"
        );
        assert_eq!(
            f.address("c").unwrap_err().to_string(),
            "c: -1 is out of range (0 to 0x7fffffffffffffff)"
        );
        assert_eq!(f.u8("d").unwrap(), Some(7));
        assert_eq!(f.u8("missing").unwrap(), None);
        assert_eq!(
            f.u32("e").unwrap_err().to_string(),
            "e: expected an integer, found a float"
        );
        assert_eq!(
            f.u32("missing").unwrap_err().to_string(),
            "missing: missing required key"
        );
    }

    #[test]
    fn arrays_name_the_element_at_fault() {
        let t = table("cpus = [0, 'one']\nvm = [1]");
        let f = Fields::new("x", &t, "", &["cpus", "vm"]).unwrap();
        assert_eq!(
            f.u8_array("cpus").unwrap_err().to_string(),
            "x.cpus[1]: expected an integer, found a string"
        );
        assert_eq!(
            f.tables("vm").unwrap_err().to_string(),
            "x.vm[0]: expected a table, found an integer"
        );
    }
}
