//! The JSON result: the contract outside scripts read. Pretty-printed, one object, its
//! schema in `schema/run-result.schema.json`.

use crate::Exporter;
use loadlab_result::RunResult;
use std::io::{self, Write};

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, result)?;
        out.write_all(b"\n")
    }
}
