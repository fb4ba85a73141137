//! [`read_export`]: one Nsight Systems export in, one [`NsysExport`] out.
//!
//! Probes the schema first (`probe`), then reads each part through its module. Only an input that
//! is unusable as a whole is an `Err`: not a SQLite database, a corrupt one, or one without
//! `StringIds` (every name in the export is an id into it). An absent kernel table, optional
//! tables and columns, and an export with no NCCL kernels are notices in `diagnostics`.

use crate::kernels::{self, KERNEL, OPTIONAL_COLUMNS, RUNTIME};
use crate::probe::{export_meta, Schema};
use crate::{nvtx, payload, processes, ReadOptions};
use model::nsys::NsysExport;
use model::{Diagnostic, Severity};
use sqlsource::{SqlError, SqlSource};

/// Reads an export. `path` only names the file in messages.
pub fn read_export(
    db: &dyn SqlSource,
    path: &str,
    options: &ReadOptions,
) -> Result<NsysExport, Diagnostic> {
    let schema = Schema::load(db).map_err(|e| {
        Diagnostic::error(path, 0, format!("not a readable SQLite database ({e}): not an `nsys export --type sqlite` file, or a truncated or corrupt one"))
    })?;
    // Any engine error past the probe means damage (a truncated file reads its first pages fine).
    let fail = |what: &'static str| {
        move |e: SqlError| {
            Diagnostic::error(
                path,
                0,
                format!("cannot read {what}: {e} (truncated or corrupt export?)"),
            )
        }
    };
    if !schema.has_table("StringIds") {
        return Err(Diagnostic::error(
            path,
            0,
            "required table StringIds is missing: this is not an Nsight Systems export (or a damaged one)",
        ));
    }
    let mut out = NsysExport {
        path: path.to_string(),
        ..NsysExport::default()
    };
    let mut note = |severity: Severity, message: String| {
        out.diagnostics
            .push(Diagnostic::new(path, 0, severity, message))
    };

    let meta = export_meta(db, &schema).map_err(fail("META_DATA_EXPORT"))?;
    if meta.schema_version.is_none() {
        note(
            Severity::Info,
            "no export schema version (META_DATA_EXPORT / EXPORT_META_DATA absent)".into(),
        );
    }

    let mut kernels = kernels::KernelsRead::default();
    if !schema.has_table(KERNEL) {
        note(
            Severity::Warning,
            format!("table {KERNEL} is absent: the capture recorded no CUDA kernels (no `--trace=cuda`?), so no NCCL kernels"),
        );
    } else if !(schema.has(KERNEL, "start") && schema.has(KERNEL, "end")) {
        return Err(Diagnostic::error(
            path,
            0,
            format!("table {KERNEL} lacks its start/end columns"),
        ));
    } else if let Some(name_col) = kernels::name_column(&schema) {
        let missing = schema.missing(KERNEL, OPTIONAL_COLUMNS);
        if !missing.is_empty() {
            note(
                Severity::Warning,
                format!("{KERNEL} lacks columns {}: read as 0", missing.join(", ")),
            );
        }
        if !schema.has_table(RUNTIME) {
            note(
                Severity::Info,
                format!("table {RUNTIME} is absent: no CPU launch times for kernels"),
            );
        }
        kernels = kernels::read_kernels(db, &schema, name_col).map_err(fail(KERNEL))?;
    } else {
        return Err(Diagnostic::error(
            path,
            0,
            format!("table {KERNEL} has no kernel-name column"),
        ));
    }
    if schema.has_table(KERNEL) && kernels.nccl.is_empty() {
        note(
            Severity::Warning,
            "no NCCL kernels in this export (no kernel name contains `nccl`)".into(),
        );
    }

    let processes =
        processes::read_processes(db, &schema, &kernels.global_pids).map_err(fail("PROCESSES"))?;
    let hosts = processes::read_hosts(db, &schema).map_err(fail("TARGET_INFO_SYSTEM_ENV"))?;
    let gpus = processes::read_gpus(db, &schema).map_err(fail("TARGET_INFO_GPU"))?;
    let cuda_devices =
        processes::read_cuda_devices(db, &schema).map_err(fail("TARGET_INFO_CUDA_DEVICE"))?;
    let session_start = processes::read_session_start(db, &schema)
        .map_err(fail("TARGET_INFO_SESSION_START_TIME"))?;
    if hosts.is_empty() {
        note(
            Severity::Info,
            "no host name (TARGET_INFO_SYSTEM_ENV 'Hostname' absent)".into(),
        );
    }
    if gpus.is_empty() {
        note(
            Severity::Info,
            "no GPU names or bus ids (TARGET_INFO_GPU absent)".into(),
        );
    }
    if session_start.is_none() {
        note(
            Severity::Info,
            "no session start time: timestamps cannot be put on the wall clock".into(),
        );
    }

    let payload_schemas =
        payload::read_schemas(db, &schema).map_err(fail("NVTX_PAYLOAD_SCHEMA_ENTRIES"))?;
    let nv = nvtx::read_nvtx(db, &schema, &options.iteration_patterns, &payload_schemas)
        .map_err(fail("NVTX_EVENTS"))?;
    if !schema.has_table("NVTX_EVENTS") {
        note(
            Severity::Info,
            "table NVTX_EVENTS is absent: no NVTX ranges".into(),
        );
    }
    for n in nv.notices {
        note(Severity::Info, n);
    }

    out.schema_version = meta.schema_version;
    out.product_version = meta.product_version;
    out.kernels = kernels.nccl;
    out.other_kernels = kernels.other;
    out.processes = processes;
    out.hosts = hosts;
    out.gpus = gpus;
    out.cuda_devices = cuda_devices;
    out.session_start = session_start;
    out.nvtx = nv.ranges;
    out.iterations = nv.iterations;
    out.nccl_calls = nv.nccl_calls;
    out.payload_schemas = payload_schemas;
    Ok(out)
}
