//! The exposition's data: metric families, their samples and types, the two encodings a scrape\ncan ask for, and the options a view passes to the families.

/// The two text formats a scraper may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/openmetrics-text; version=1.0.0`: typed `info` and `counter` families, `# EOF`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`: what every Prometheus understands.
    Prometheus,
}

impl Encoding {
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Encoding::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The encoding an `Accept` header asks for: OpenMetrics only when it names it.
    pub fn negotiate(accept: Option<&str>) -> Encoding {
        match accept {
            Some(accept) if accept.split(',').any(|part| part.trim().starts_with("application/openmetrics-text")) => Encoding::OpenMetrics,
            _ => Encoding::Prometheus,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Gauge,
    /// A constant 1 whose labels are the information; sample name `<family>_info`.
    Info,
    /// Only ever grows; sample name `<family>_total`.
    Counter,
}

/// One metric family and its samples.
#[derive(Clone, Debug)]
pub struct Family {
    pub name: String,
    pub kind: Type,
    pub help: &'static str,
    pub samples: Vec<Sample>,
}

#[derive(Clone, Debug)]
pub struct Sample {
    /// Label names and raw (unescaped) values.
    pub labels: Vec<(&'static str, String)>,
    pub value: String,
}

impl Sample {
    pub fn new(labels: Vec<(&'static str, String)>, value: impl ToString) -> Sample {
        Sample { labels, value: value.to_string() }
    }
}

impl Family {
    pub fn new(name: &str, kind: Type, help: &'static str, samples: Vec<Sample>) -> Family {
        Family { name: name.to_string(), kind, help, samples }
    }
}

/// What goes into the exposition besides the per-pool figures.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// One series per node, pool and family (`serve --node-metrics`): nodes × pools series.
    pub nodes: bool,
    /// The orphan blocks of deleted pools too: the view is of every pool, not of named ones.
    pub deleted_pools: bool,
}
