//! `partita-ivc` (guests/linux/ivc): the one result line each command prints:
//! `partita-ivc: ping n=.. min_ns=.. mean_ns=.. p99_ns=.. max_ns=..` (round trips started by
//! Linux), `partita-ivc: rtos ping ...` (started by FreeRTOS, which sent its result back)
//! and `partita-ivc: bench bytes=.. n=.. ns=.. msgs_per_s=.. kib_per_s=..`.

use anyhow::{anyhow, Result};

use super::{key_values, number, Measure};

/// The metrics of a result line: the round-trip figures in ns, or the throughputs.
const ROUND_TRIP: [(&str, &str); 4] = [
    ("min_ns", "min"),
    ("mean_ns", "mean"),
    ("p99_ns", "p99"),
    ("max_ns", "max"),
];
const THROUGHPUT: [(&str, &str, &str); 2] = [
    ("msgs_per_s", "msgs_per_s", "1/s"),
    ("kib_per_s", "kib_per_s", "KiB/s"),
];

pub fn parse(experiment: &str, lines: &[String]) -> Result<Vec<Measure>> {
    let result = lines
        .iter()
        .filter_map(|line| line.strip_prefix("partita-ivc: "))
        .find(|rest| {
            ["ping ", "rtos ping ", "bench "]
                .iter()
                .any(|k| rest.starts_with(k))
        })
        .ok_or_else(|| anyhow!("no `partita-ivc: ping|rtos ping|bench` line"))?;
    let values: Vec<(&str, &str)> = key_values(result).collect();
    let value = |key: &str| {
        values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| number(v, ""))
            .ok_or_else(|| anyhow!("no {key}= in `{result}`"))?
    };
    if result.starts_with("bench ") {
        THROUGHPUT
            .iter()
            .map(|(key, metric, unit)| Ok(Measure::new(experiment, metric, value(key)?, unit)))
            .collect()
    } else {
        ROUND_TRIP
            .iter()
            .map(|(key, metric)| Ok(Measure::new(experiment, metric, value(key)?, "ns")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn round_trips_and_throughput_are_read() {
        let ping = lines(
            "noise\npartita-ivc: rtos ping n=1000 min_ns=8464 mean_ns=11021 p99_ns=13072 max_ns=134880",
        );
        assert_eq!(
            parse("ivc-rtt-freertos", &ping).unwrap(),
            [
                Measure::new("ivc-rtt-freertos", "min", 8464.0, "ns"),
                Measure::new("ivc-rtt-freertos", "mean", 11021.0, "ns"),
                Measure::new("ivc-rtt-freertos", "p99", 13072.0, "ns"),
                Measure::new("ivc-rtt-freertos", "max", 134880.0, "ns"),
            ]
        );
        let bench = lines(
            "partita-ivc: bench bytes=64 n=2000 ns=11281344 msgs_per_s=177283 kib_per_s=11080",
        );
        assert_eq!(
            parse("ivc-throughput-64", &bench).unwrap(),
            [
                Measure::new("ivc-throughput-64", "msgs_per_s", 177283.0, "1/s"),
                Measure::new("ivc-throughput-64", "kib_per_s", 11080.0, "KiB/s"),
            ]
        );
    }

    #[test]
    fn a_missing_or_partial_line_is_an_error() {
        assert!(parse("x", &lines("partita-ivc: sent 5 bytes")).is_err());
        assert!(parse("x", &lines("partita-ivc: ping n=1 min_ns=1")).is_err());
    }
}
