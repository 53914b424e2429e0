//! stress-ng 0.15 with `--metrics-brief`: the stressor's `metrc:` row (bogo ops, real
//! time, usr time, sys time, bogo ops/s by real time, bogo ops/s by usr+sys time).

use anyhow::{anyhow, Result};

use super::{number, Measure};

pub fn parse(experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    let row = lines
        .iter()
        .filter_map(|line| line.split_once("metrc:").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once(']').map(|(_, row)| row))
        .map(|row| row.split_whitespace().collect::<Vec<_>>())
        .find(|words| words.len() == 7 && words[1].parse::<f64>().is_ok())
        .ok_or_else(|| anyhow!("no stressor row in the `metrc:` lines"))?;
    Ok(vec![
        Measure::new(experiment, "bogo_ops", number(row[1], "")?, "count"),
        Measure::new(experiment, "real_time", number(row[2], "")?, "s"),
        Measure::new(experiment, "bogo_ops_per_s", number(row[5], "")?, "ops/s"),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{section, NATIVE};

    #[test]
    fn the_cpu_stressor_row() {
        let m = parse("stress-ng", &section(NATIVE, "stress-ng")).unwrap();
        assert_eq!(
            m,
            [
                Measure::new("stress-ng", "bogo_ops", 2001.0, "count"),
                Measure::new("stress-ng", "real_time", 54.55, "s"),
                Measure::new("stress-ng", "bogo_ops_per_s", 36.68, "ops/s"),
            ]
        );
    }

    #[test]
    fn headers_alone_are_an_error() {
        let lines =
            vec!["stress-ng: metrc: [267] stressor       bogo ops real time  usr time".to_owned()];
        assert!(parse("stress-ng", &lines).is_err());
    }
}
