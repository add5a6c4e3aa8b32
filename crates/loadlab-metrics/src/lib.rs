//! loadlab-metrics: Prometheus both ways.
//!
//! Reading: [`text`] parses the Prometheus/OpenMetrics text exposition format, [`select`]
//! picks series by name and label matchers, [`rates`] turns counters into per-second rates
//! between two scrapes and names the well-known series that stand for a server's CPU and
//! memory, and [`scraper`] scrapes endpoints every interval on a thread of its own.
//!
//! Sending: [`figures`] turns one interval of a run into labelled series, [`remote_write`]
//! encodes them as a Prometheus remote write 1.0 request, [`otlp`] as an OTLP/HTTP protobuf
//! request, and [`sender`] ships them from a bounded queue on a thread of its own, so a slow or
//! absent receiver never slows the load (drops are counted).
//!
//! [`live`] is the glue a command uses during a run: it feeds the sender every interval
//! from a closure and turns both reports into the result's notes.
//!
//! [`promql`] asks a Prometheus server for a query over a run's window, after the run.
//!
//! [`http`] is the blocking HTTP client all three share (`ureq`: `http://` and `https://`, a
//! CA file, a bearer token); `tls` puts loadlab's one verifier (`loadlab_certs`) under it.
//!
//! This crate does not print, does not depend on the engine or the session, and never panics
//! on what an endpoint sends.

pub mod figures;
pub mod http;
pub mod live;
pub mod otlp;
pub mod promql;
pub mod rates;
pub mod remote_write;
pub mod scraper;
pub mod select;
pub mod sender;
pub mod text;
mod tls;

pub use figures::{IntervalFigures, RunLabels, Series, SeriesKind};
pub use rates::{RateTracker, WellKnown};
pub use scraper::{ScrapeReport, Scraper, ScraperConfig};
pub use select::Selector;
pub use sender::{MetricsOut, OutFormat, SenderReport};
pub use text::{parse, Sample};
