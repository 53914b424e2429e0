//! The automotive suite's result lines (guests/automotive/README.md):
//! `auto: program=<p> input=<small|large> ns=<n> checksum=<hex>`, one experiment
//! `auto-<p>-<input>` per line with its virtual time in ns.

use anyhow::{anyhow, bail, Result};

use super::{key_values, number, Measure};

pub fn parse(lines: &[String]) -> Result<Vec<Measure>> {
    let measures = lines
        .iter()
        .filter_map(|line| line.strip_prefix("auto: "))
        .map(result_line)
        .collect::<Result<Vec<_>>>()?;
    if measures.is_empty() {
        bail!("no `auto:` lines");
    }
    Ok(measures)
}

fn result_line(text: &str) -> Result<Measure> {
    let field = |key: &str| {
        key_values(text)
            .find(|&(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| anyhow!("`auto: {text}` has no {key}="))
    };
    let experiment = format!("auto-{}-{}", field("program")?, field("input")?);
    Ok(Measure::new(
        &experiment,
        "time",
        number(field("ns")?, "")?,
        "ns",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{section, NATIVE};

    #[test]
    fn six_programs_of_the_small_input() {
        let m = parse(&section(NATIVE, "auto-small")).unwrap();
        let names: Vec<&str> = m.iter().map(|m| m.experiment.as_str()).collect();
        assert_eq!(
            names,
            [
                "auto-basicmath-small",
                "auto-bitcount-small",
                "auto-qsort-small",
                "auto-susan-smooth-small",
                "auto-susan-edges-small",
                "auto-susan-corners-small"
            ]
        );
        assert_eq!(
            m[0],
            Measure::new("auto-basicmath-small", "time", 51_602_672.0, "ns")
        );
        assert!(m.iter().all(|m| m.unit == "ns" && m.metric == "time"));
    }

    #[test]
    fn a_line_without_time_is_an_error() {
        let lines = vec!["auto: program=qsort input=small checksum=00".to_owned()];
        assert!(parse(&lines).is_err());
        assert!(parse(&[]).is_err());
    }
}
