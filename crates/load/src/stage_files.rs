//! Stage files in the session (issue 32): kept beside the logs and exports, reported like them;
//! and the compute kernels of an export, read on request for the step analysis.

use crate::report::FileReport;
use crate::session::LoadedExport;
use crate::session::Session;
use crate::sniff::InputKind;
use ingest_stages::StageFile;
use model::{Diagnostic, Severity};
use sqlsource::SqlSource;
use std::sync::Arc;

/// A read stage file and the name it was loaded under.
#[derive(Debug)]
pub struct LoadedStageFile {
    pub name: String,
    pub bytes: u64,
    pub file: StageFile,
}

impl Session {
    /// Keeps a stage file read elsewhere (`ingest_stages::StageReader`, fed the file's bytes)
    /// and reports on it; a file with no usable row is reported and not kept.
    pub fn add_stage_file(&mut self, name: &str, bytes: u64, file: StageFile) -> FileReport {
        self.next_file_index_bump();
        let mut facts = vec![
            ("rows".to_string(), file.records.len().to_string()),
            ("steps".to_string(), file.steps().len().to_string()),
            ("ranks".to_string(), file.ranks().len().to_string()),
            ("stages".to_string(), file.stage_names.join(", ")),
            ("lines".to_string(), file.lines.to_string()),
            ("bad lines".to_string(), file.bad_lines.to_string()),
        ];
        if !file.incomplete_steps.is_empty() {
            facts.push((
                "incomplete steps".to_string(),
                file.incomplete_steps.len().to_string(),
            ));
        }
        let report = FileReport {
            name: name.to_string(),
            kind: InputKind::StageFile,
            bytes,
            version: None,
            facts,
            diagnostics: file.diagnostics.clone(),
            error: file.error.clone(),
            digest: None,
        };
        if file.error.is_none() {
            self.stage_files.push(Arc::new(LoadedStageFile {
                name: name.to_string(),
                bytes,
                file,
            }));
        }
        report
    }

    /// The stage files kept, in load order.
    pub fn stage_files(&self) -> &[Arc<LoadedStageFile>] {
        &self.stage_files
    }
}

/// What reading an export's compute kernels gave: the kernels, or why they were not read.
pub type ComputeRead = Result<model::compute::ComputeKernels, String>;

/// Reads `db`'s compute kernels ([`ingest_nsys::read_compute_kernels`]), for
/// [`Session::add_read_export_with_compute`] when the export is read elsewhere (the page's
/// workers); the error is worded for the file's report.
pub fn read_compute_kernels(db: &dyn SqlSource) -> ComputeRead {
    ingest_nsys::read_compute_kernels(db).map_err(|e| e.to_string())
}

/// Reads `db`'s compute kernels into `loaded` (a failure is a warning in the file's report: the
/// rest of the export stands).
pub(crate) fn read_compute(db: &dyn SqlSource, loaded: &mut LoadedExport, report: &mut FileReport) {
    keep_compute(read_compute_kernels(db), loaded, report);
}

/// Keeps `read` on `loaded`, or says in its report why there are none.
pub(crate) fn keep_compute(read: ComputeRead, loaded: &mut LoadedExport, report: &mut FileReport) {
    match read {
        Ok(c) => loaded.compute = Some(c),
        Err(e) => report.diagnostics.push(Diagnostic::new(
            &loaded.name,
            0,
            Severity::Warning,
            format!("compute kernels not read ({e}): no breakdown or baselines for them"),
        )),
    }
}
