//! The results model: one `Record` per configuration x experiment x metric, with its unit,
//! and the `Results` file (`results.json`) that holds them beside the run's provenance and
//! the configurations that were not measured. Parsers produce `Measure`s (no configuration
//! yet); the pipeline labels them. Nothing here runs or reads a guest.

use serde::{Deserialize, Serialize};

use super::provenance::Provenance;

/// One figure an experiment printed, before it is labelled with its configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    pub experiment: String,
    pub metric: String,
    pub value: f64,
    pub unit: String,
}

impl Measure {
    pub fn new(experiment: &str, metric: &str, value: f64, unit: &str) -> Self {
        Measure {
            experiment: experiment.to_owned(),
            metric: metric.to_owned(),
            value,
            unit: unit.to_owned(),
        }
    }

    pub fn label(self, config: &str) -> Record {
        Record {
            config: config.to_owned(),
            experiment: self.experiment,
            metric: self.metric,
            value: self.value,
            unit: self.unit,
        }
    }
}

/// One figure of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub config: String,
    pub experiment: String,
    pub metric: String,
    pub value: f64,
    pub unit: String,
}

/// A configuration x guest (and experiment, when only one was lost) that has no records,
/// and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotMeasured {
    pub config: String,
    pub guest: String,
    pub what: String,
    pub reason: String,
}

/// `results.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub provenance: Provenance,
    pub records: Vec<Record>,
    pub not_measured: Vec<NotMeasured>,
}

impl Results {
    /// The value of `config`/`experiment`/`metric`, if measured.
    pub fn value(&self, config: &str, experiment: &str, metric: &str) -> Option<&Record> {
        self.records
            .iter()
            .find(|r| r.config == config && r.experiment == experiment && r.metric == metric)
    }
}

/// Metric name of a histogram bucket `[lo, hi)` in `unit`: `hist_<unit>_<lo>_<hi>`
/// (its value is the bucket's count).
pub fn hist_metric(unit: &str, lo: u64, hi: u64) -> String {
    format!("hist_{unit}_{lo}_{hi}")
}

/// A histogram bucket decoded from its metric name: (unit, lo, hi).
pub fn parse_hist_metric(metric: &str) -> Option<(&str, u64, u64)> {
    let rest = metric.strip_prefix("hist_")?;
    let (unit, bounds) = rest.split_once('_')?;
    let (lo, hi) = bounds.split_once('_')?;
    Some((unit, lo.parse().ok()?, hi.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_metrics_round_trip() {
        let metric = hist_metric("us", 4, 5);
        assert_eq!(metric, "hist_us_4_5");
        assert_eq!(parse_hist_metric(&metric), Some(("us", 4, 5)));
        assert_eq!(
            parse_hist_metric("hist_ns_1000_2000"),
            Some(("ns", 1000, 2000))
        );
        assert_eq!(parse_hist_metric("max"), None);
        assert_eq!(parse_hist_metric("hist_us_x_1"), None);
    }
}
