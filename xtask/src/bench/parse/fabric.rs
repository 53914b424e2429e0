//! The OFDM experiment's figures (issue 14, docs/accelerators.md), from the lines Partita
//! prints when the fabric's last VM stops and the lines each OFDM task prints:
//! - `[partita] fabric: part=<name> n=<n> min_ns=.. mean_ns=.. max_ns=..`: one of Ker-ONE's
//!   Table 4 costs, experiment `fabric/part`, metrics `<name>-n`, `-min`, `-mean`, `-max`;
//! - `[partita] fabric: path<k> n=.. mean_ns=.. max_ns=..`: trap to answer of each path of
//!   Fig. 15 as observed (lock waits and other CPUs' turns included), `fabric/path`;
//! - `[partita] fabric: requests=.. jobs=.. frames=.. preemptions=.. reconfigurations=..
//!   refused=..` and `frame_worst_ns=.. rtos_alloc_worst_ns=.. rtos_alloc_bound_ns=..
//!   within=..`: `fabric/run`;
//! - `[<vm>] ofdm: task=<f> model=<m> jobs=.. frames=.. ok=.. bad=.. hw_ns_per_frame=..
//!   sw_ns_per_frame=.. worst_job_ns=.. ...`: `ofdm/<vm>/<f>`;
//! - `[<vm>] ofdm: done; rt: samples=.. max_ns=.. mean_ns=.. misses=..`: `ofdm/<vm>/dispatch`.

use super::{key_values, Measure};

const FABRIC: &str = "[partita] fabric: ";
const OFDM: &str = "] ofdm: ";

/// Every figure of the OFDM experiment in `console`.
pub fn parse(console: &str) -> Vec<Measure> {
    let mut found = Vec::new();
    for line in console.lines().map(|l| l.trim_end_matches(['\r', '\n'])) {
        if let Some(text) = line.strip_prefix(FABRIC) {
            fabric_line(text, &mut found);
        } else if let Some((vm, text)) = line
            .strip_prefix('[')
            .and_then(|rest| rest.split_once(OFDM))
        {
            ofdm_line(vm, text, &mut found);
        }
    }
    found
}

fn numbers(text: &str) -> impl Iterator<Item = (&str, f64)> {
    key_values(text).filter_map(|(k, v)| {
        let value = match v {
            "true" => 1.0,
            "false" => 0.0,
            _ => v.parse().ok()?,
        };
        Some((k, value))
    })
}

fn unit(key: &str) -> &'static str {
    if key.ends_with("_ns") || key.ends_with("_ns_per_frame") {
        "ns"
    } else {
        ""
    }
}

fn fabric_line(text: &str, found: &mut Vec<Measure>) {
    if let Some(rest) = text.strip_prefix("part=") {
        let Some((name, figures)) = rest.split_once(' ') else {
            return;
        };
        for (k, v) in numbers(figures) {
            let metric = format!("{name}-{}", k.trim_end_matches("_ns"));
            found.push(Measure::new("fabric/part", &metric, v, unit(k)));
        }
    } else if let Some(rest) = text.strip_prefix("path") {
        let Some((k, figures)) = rest.split_once(' ') else {
            return;
        };
        for (key, v) in numbers(figures) {
            let metric = format!("path{k}-{}", key.trim_end_matches("_ns"));
            found.push(Measure::new("fabric/path", &metric, v, unit(key)));
        }
    } else if text.starts_with("requests=") || text.starts_with("frame_worst_ns=") {
        for (k, v) in numbers(text) {
            found.push(Measure::new("fabric/run", k, v, unit(k)));
        }
    }
}

fn ofdm_line(vm: &str, text: &str, found: &mut Vec<Measure>) {
    if let Some(rest) = text.strip_prefix("done; rt: ") {
        let experiment = format!("ofdm/{vm}/dispatch");
        for (k, v) in numbers(rest) {
            found.push(Measure::new(&experiment, k, v, unit(k)));
        }
        return;
    }
    let mut words = key_values(text);
    let Some(("task", task)) = words.next() else {
        return;
    };
    let experiment = format!("ofdm/{vm}/{task}");
    for (k, v) in numbers(text).filter(|(k, _)| *k != "task") {
        found.push(Measure::new(&experiment, k, v, unit(k)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONSOLE: &str = "\
[rtos] ofdm: task=qam16 model=native jobs=8 frames=8 ok=8 bad=0 hw_ns_per_frame=2949426 sw_ns_per_frame=432704 worst_job_ns=3646704 preempted=0 waits=0
[gpos] ofdm: done; rt: samples=142 max_ns=406384 mean_ns=20503 misses=0
[partita] fabric: requests=15 jobs=52 frames=124 preemptions=3 reconfigurations=11 refused=0 signals=wait:11,ready:14,preempt:3
[partita] fabric: path1 n=2 mean_ns=816 max_ns=880
[partita] fabric: part=trap n=15 min_ns=363 mean_ns=1749 max_ns=20109
[partita] fabric: frame_worst_ns=5082864 rtos_alloc_worst_ns=2304688 rtos_alloc_bound_ns=11413472 within=true
";

    fn value(found: &[Measure], experiment: &str, metric: &str) -> Option<f64> {
        found
            .iter()
            .find(|m| m.experiment == experiment && m.metric == metric)
            .map(|m| m.value)
    }

    #[test]
    fn every_kind_of_line_gives_its_figures() {
        let found = parse(CONSOLE);
        assert_eq!(value(&found, "fabric/part", "trap-min"), Some(363.0));
        assert_eq!(value(&found, "fabric/part", "trap-n"), Some(15.0));
        assert_eq!(value(&found, "fabric/path", "path1-max"), Some(880.0));
        assert_eq!(value(&found, "fabric/run", "preemptions"), Some(3.0));
        assert_eq!(value(&found, "fabric/run", "within"), Some(1.0));
        assert_eq!(value(&found, "fabric/run", "signals"), None);
        assert_eq!(
            value(&found, "ofdm/rtos/qam16", "sw_ns_per_frame"),
            Some(432_704.0)
        );
        assert_eq!(value(&found, "ofdm/rtos/qam16", "model"), None);
        assert_eq!(value(&found, "ofdm/gpos/dispatch", "misses"), Some(0.0));
        let unit = found
            .iter()
            .find(|m| m.metric == "trap-mean")
            .map(|m| &m.unit);
        assert_eq!(unit.map(String::as_str), Some("ns"));
        let unit = found
            .iter()
            .find(|m| m.metric == "reconfigurations")
            .map(|m| &m.unit);
        assert_eq!(unit.map(String::as_str), Some(""));
    }
}
