//! `--prometheus URL --query PROMQL`: after the run, a query over the run's window from a
//! Prometheus server's `/api/v1/query_range`, one value per step. For services loadlab cannot
//! scrape itself. A failing query is an error for the caller to record, never a panic.

use crate::http;
use std::time::Duration;

/// One series of a range query's answer: its labels as `name{k="v",...}` and its points
/// (Unix seconds, value).
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSeries {
    pub series: String,
    pub points: Vec<(f64, f64)>,
}

/// Evaluates `query` from `start_unix_s` to `end_unix_s` every `step_s` on the Prometheus
/// server at `base` (e.g. `http://127.0.0.1:9090`), reached with `options` (CA, token).
pub fn query_range(
    base: &str,
    query: &str,
    (start_unix_s, end_unix_s, step_s): (f64, f64, f64),
    options: &http::HttpOptions,
    timeout: Duration,
) -> Result<Vec<RangeSeries>, String> {
    let url = format!(
        "{}/api/v1/query_range?query={}&start={start_unix_s:.3}&end={end_unix_s:.3}&step={step_s:.3}",
        base.trim_end_matches('/'),
        http::encode_query_value(query)
    );
    let response = http::Client::new(options, timeout)
        .and_then(|c| c.get(&url))
        .map_err(|e| e.to_string())?;
    let body: serde_json::Value = serde_json::from_slice(&response.body).map_err(|_| {
        format!(
            "{base} answered {} with no JSON: is it a Prometheus server? (--prometheus takes its base URL, e.g. http://127.0.0.1:9090)",
            response.status
        )
    })?;
    if body["status"] != "success" {
        return Err(format!(
            "{base} refused the query ({}): {}",
            body["errorType"].as_str().unwrap_or("error"),
            body["error"].as_str().unwrap_or("no reason given")
        ));
    }
    let result = body["data"]["result"].as_array().ok_or_else(|| {
        format!("{base}: the answer has no data.result; give a query with a range vector result")
    })?;
    Ok(result.iter().map(range_series).collect())
}

fn range_series(item: &serde_json::Value) -> RangeSeries {
    let metric = item["metric"].as_object();
    let name = metric
        .and_then(|m| m.get("__name__"))
        .and_then(|n| n.as_str())
        .unwrap_or("");
    let labels: Vec<String> = metric
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "__name__")
        .map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap_or("")))
        .collect();
    let series = if labels.is_empty() {
        name.to_string()
    } else {
        format!("{name}{{{}}}", labels.join(","))
    };
    let points = item["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| {
            let at = pair.get(0)?.as_f64()?;
            let value = pair.get(1)?.as_str()?.parse::<f64>().ok()?;
            Some((at, value))
        })
        .collect();
    RangeSeries { series, points }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_answer_becomes_series_with_their_labels() {
        let item = serde_json::json!({
            "metric": {"__name__": "up", "job": "app"},
            "values": [[1700000000.0, "1"], [1700000001.5, "0.5"], [1700000002, "NaN"]]
        });
        let s = range_series(&item);
        assert_eq!(s.series, "up{job=\"app\"}");
        assert_eq!(s.points[..2], [(1700000000.0, 1.0), (1700000001.5, 0.5)]);
        assert!(s.points[2].1.is_nan());
    }

    #[test]
    fn a_refused_port_is_an_error_not_a_panic() {
        let dead = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = query_range(
            &format!("http://{dead}"),
            "up",
            (0.0, 1.0, 1.0),
            &http::HttpOptions::default(),
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(!e.is_empty());
    }
}
