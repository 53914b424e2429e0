//! hackbench (rt-tests 2.4): the `Time: <s>` line it ends with.

use anyhow::Result;

use super::{after, number, Measure};

pub fn parse(experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    let time = number(after(lines, "Time:")?, "")?;
    Ok(vec![Measure::new(experiment, "time", time, "s")])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::fixtures::{section, NATIVE};

    #[test]
    fn time_of_a_native_run() {
        let m = parse("hackbench", &section(NATIVE, "hackbench")).unwrap();
        assert_eq!(m, [Measure::new("hackbench", "time", 1.928, "s")]);
    }

    #[test]
    fn no_time_is_an_error() {
        assert!(parse("hackbench", &["Running in process mode".to_owned()]).is_err());
    }
}
