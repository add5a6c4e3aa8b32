//! Counters become per-second rates between two scrapes (a counter that went down was reset:
//! the rate counts from zero, as Prometheus's `rate()` does); gauges are kept as values. Also
//! the well-known series that stand for a server's CPU, memory and throttling. Pure: the
//! caller passes each scrape's time, so tests need no clock.

use crate::select::Selector;
use crate::text::{Exposition, MetricType, Sample};
use std::collections::HashMap;

/// The identity of a series: its name and its labels, sorted.
pub fn series_id(sample: &Sample) -> String {
    let mut labels = sample.labels.clone();
    labels.sort();
    if labels.is_empty() {
        return sample.name.clone();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{}{{{}}}", sample.name, inner.join(","))
}

/// One picked series at one scrape: a rate (per second) for a counter, else the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Picked {
    pub selector: String,
    pub series: String,
    pub value: f64,
    pub is_rate: bool,
}

/// Remembers each counter's last value and time, keyed by series identity.
#[derive(Debug, Default)]
pub struct RateTracker {
    last: HashMap<String, (f64, f64)>,
}

impl RateTracker {
    /// The rate since this series' previous observation; `None` on its first.
    pub fn rate(&mut self, key: &str, value: f64, at_s: f64) -> Option<f64> {
        let prev = self.last.insert(key.to_string(), (value, at_s));
        let (prev_value, prev_at_s) = prev?;
        let dt_s = at_s - prev_at_s;
        if dt_s <= 0.0 {
            return None;
        }
        let delta = if value >= prev_value {
            value - prev_value
        } else {
            value
        };
        Some(delta / dt_s)
    }

    /// Every series each selector picks: counters as rates (from the second scrape on),
    /// everything else as values.
    pub fn pick(&mut self, exp: &Exposition, at_s: f64, selectors: &[Selector]) -> Vec<Picked> {
        let mut out = Vec::new();
        for selector in selectors {
            for sample in exp.samples.iter().filter(|s| selector.matches(s)) {
                let series = series_id(sample);
                let is_rate = exp.type_of(&sample.name) == MetricType::Counter;
                let value = if is_rate {
                    match self.rate(&format!("pick:{series}"), sample.value, at_s) {
                        Some(r) => r,
                        None => continue,
                    }
                } else {
                    sample.value
                };
                out.push(Picked {
                    selector: selector.text.clone(),
                    series,
                    value,
                    is_rate,
                });
            }
        }
        out
    }
}

/// The server's CPU, memory and throttling read from well-known series, each with the series
/// it came from, so the result can say which was used.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WellKnown {
    pub cpu_cores: Option<f64>,
    pub cpu_series: Option<&'static str>,
    pub memory_bytes: Option<f64>,
    pub memory_series: Option<&'static str>,
    pub throttled_periods_per_s: Option<f64>,
    pub throttled_series: Option<&'static str>,
}

/// CPU counters in order of preference. cAdvisor and node_exporter also export `process_*`
/// series about themselves, so an endpoint's container or node series win over its process
/// ones; an application's own endpoint has only the latter.
const CPU_COUNTERS: [&str; 3] = [
    "container_cpu_usage_seconds_total",
    "node_cpu_seconds_total{mode!~\"idle|iowait\"}",
    "process_cpu_seconds_total",
];
const MEMORY_GAUGES: [&str; 2] = [
    "container_memory_working_set_bytes",
    "process_resident_memory_bytes",
];
const THROTTLE_COUNTERS: [&str; 1] = ["container_cpu_cfs_throttled_periods_total"];

impl WellKnown {
    /// Reads the well-known series from one scrape (summed over their series; cAdvisor's
    /// pod-level `container=""` series is left out when per-container ones exist).
    pub fn read(exp: &Exposition, at_s: f64, tracker: &mut RateTracker) -> WellKnown {
        let mut out = WellKnown::default();
        for text in CPU_COUNTERS {
            if let Some(rate) = summed_rate(exp, at_s, tracker, text) {
                out.cpu_cores = Some(rate);
                out.cpu_series = Some(text);
                break;
            }
        }
        let container = selected(exp, MEMORY_GAUGES[0]);
        if !container.is_empty() {
            out.memory_bytes = Some(container.iter().map(|s| s.value).sum());
            out.memory_series = Some(MEMORY_GAUGES[0]);
        } else {
            let find = |name: &str| exp.samples.iter().find(|s| s.name == name).map(|s| s.value);
            if let (Some(total), Some(avail)) = (
                find("node_memory_MemTotal_bytes"),
                find("node_memory_MemAvailable_bytes"),
            ) {
                out.memory_bytes = Some(total - avail);
                out.memory_series =
                    Some("node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes");
            } else if let Some(rss) = find(MEMORY_GAUGES[1]) {
                out.memory_bytes = Some(rss);
                out.memory_series = Some(MEMORY_GAUGES[1]);
            }
        }
        for text in THROTTLE_COUNTERS {
            if let Some(rate) = summed_rate(exp, at_s, tracker, text) {
                out.throttled_periods_per_s = Some(rate);
                out.throttled_series = Some(text);
            }
        }
        out
    }
}

fn selected<'a>(exp: &'a Exposition, text: &str) -> Vec<&'a Sample> {
    let Ok(selector) = Selector::parse(text) else {
        return Vec::new();
    };
    let all: Vec<&Sample> = exp.samples.iter().filter(|s| selector.matches(s)).collect();
    let per_container: Vec<&Sample> = all
        .iter()
        .copied()
        .filter(|s| s.label("container").is_some_and(|c| !c.is_empty()))
        .collect();
    if per_container.is_empty() {
        all
    } else {
        per_container
    }
}

fn summed_rate(exp: &Exposition, at_s: f64, tracker: &mut RateTracker, text: &str) -> Option<f64> {
    let picked = selected(exp, text);
    if picked.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    let mut all_known = true;
    for sample in picked {
        match tracker.rate(&format!("wk:{}", series_id(sample)), sample.value, at_s) {
            Some(r) => sum += r,
            None => all_known = false,
        }
    }
    all_known.then_some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse;

    #[test]
    fn counters_become_rates_resets_count_from_zero_gauges_stay() {
        let sel = vec![
            Selector::parse("reqs_total").unwrap(),
            Selector::parse("temp").unwrap(),
        ];
        let mut t = RateTracker::default();
        let first = t.pick(&parse("reqs_total 100\ntemp 7\n"), 10.0, &sel);
        assert_eq!(first.len(), 1, "a counter has no rate on its first scrape");
        assert_eq!(first[0].value, 7.0);
        let second = t.pick(&parse("reqs_total 150\ntemp 8\n"), 12.0, &sel);
        assert_eq!(second[0].value, 25.0);
        assert!(second[0].is_rate);
        let reset = t.pick(&parse("reqs_total 10\ntemp 8\n"), 14.0, &sel);
        assert_eq!(reset[0].value, 5.0);
    }

    #[test]
    fn well_known_series_fill_cpu_memory_and_throttling_and_say_which() {
        let mut t = RateTracker::default();
        let node = |idle: f64, user: f64| {
            format!(
                "node_cpu_seconds_total{{cpu=\"0\",mode=\"idle\"}} {idle}\n\
                 node_cpu_seconds_total{{cpu=\"0\",mode=\"user\"}} {user}\n\
                 node_memory_MemTotal_bytes 1000\nnode_memory_MemAvailable_bytes 400\n"
            )
        };
        let first = WellKnown::read(&parse(&node(100.0, 10.0)), 0.0, &mut t);
        assert_eq!(first.cpu_cores, None);
        assert_eq!(first.memory_bytes, Some(600.0));
        let second = WellKnown::read(&parse(&node(101.0, 11.5)), 2.0, &mut t);
        assert_eq!(second.cpu_cores, Some(0.75));
        assert_eq!(second.cpu_series, Some(CPU_COUNTERS[1]));

        let cadvisor = |cpu: f64, thr: f64| {
            format!(
                "container_cpu_usage_seconds_total{{container=\"\",pod=\"p\"}} {}\n\
                 container_cpu_usage_seconds_total{{container=\"app\",pod=\"p\"}} {cpu}\n\
                 container_memory_working_set_bytes{{container=\"app\"}} 5e6\n\
                 container_cpu_cfs_throttled_periods_total{{container=\"app\"}} {thr}\n",
                cpu * 2.0
            )
        };
        let mut t = RateTracker::default();
        WellKnown::read(&parse(&cadvisor(1.0, 0.0)), 0.0, &mut t);
        let wk = WellKnown::read(&parse(&cadvisor(1.5, 10.0)), 1.0, &mut t);
        assert_eq!(wk.cpu_cores, Some(0.5));
        assert_eq!(wk.memory_bytes, Some(5e6));
        assert_eq!(wk.memory_series, Some("container_memory_working_set_bytes"));
        assert_eq!(wk.throttled_periods_per_s, Some(10.0));
    }
}
