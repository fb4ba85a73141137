//! The loading worker's side of aggregates: a dropped file that starts with the aggregate's magic
//! bytes is not loaded into the session; its header and overview are read (two `Blob.slice`s),
//! and a rank's section only when the page asks for that rank. Several aggregates dropped
//! together (a run's per-node files) are merged first, into a `Blob` made of the merged header,
//! slices of the dropped files and the merged tail: nothing is held in wasm memory but the
//! overview and the rank shown.

use aggregate_file::format::{Block, HEADER_LEN};
use aggregate_file::{Header, Input, Merge, Overview, RankDetail};
use js_sys::{Array, Uint8Array};
use std::cell::RefCell;
use web_sys::Blob;

use crate::page_logic::files::for_each_slice;
use crate::protocol::aggregate::{
    kernel_fields, rank_detail, sort_kernels, AggregateView, RankDetailView,
};
use crate::protocol::messages::{LoadItem, LoadRequest, ToPage};
use crate::protocol::notes::{summarise, NoteRow, FIRST_PAGE};
use crate::protocol::timeline_codec::encode_timeline;
use crate::protocol::views::FileView;

/// The aggregate open in this worker.
struct Opened {
    name: String,
    blob: Blob,
    overview: Overview,
    /// The rank last read, its kernels sorted by start.
    rank: Option<(u32, RankDetail)>,
}

thread_local! {
    static OPEN: RefCell<Option<Opened>> = const { RefCell::new(None) };
}

/// Serves what `req` asks of aggregates, and takes the dropped aggregates out of its files (the
/// rest load into the session as before). `post` sends a message (with a binary timeline).
pub async fn serve(req: &mut LoadRequest, post: &dyn Fn(&ToPage, Option<js_sys::ArrayBuffer>)) {
    let mut aggregates = Vec::new();
    for item in std::mem::take(&mut req.files) {
        let head = read_range(&item.blob, 0, aggregate_file::MAGIC.len() as u64).await;
        if head.is_ok_and(|h| aggregate_file::is_aggregate(&h)) {
            aggregates.push(item);
        } else {
            req.files.push(item);
        }
    }
    if !aggregates.is_empty() {
        open(&aggregates, post).await;
    }
    if let Some(rank) = req.aggregate_rank {
        let (view, timeline) = rank_view(rank).await;
        post(&ToPage::AggregateRank { detail: view }, timeline);
    }
    if let Some((rank, index)) = req.aggregate_kernel {
        let fields = OPEN.with(|o| {
            let o = o.borrow();
            let o = o.as_ref()?;
            let (r, d) = o.rank.as_ref().filter(|(r, _)| *r == rank)?;
            let row = o.overview.rank(*r)?;
            Some(kernel_fields(&o.overview, row, d, d.kernels.get(index)?))
        });
        post(
            &ToPage::AggregateKernel {
                rank,
                index,
                fields: fields.unwrap_or_default(),
            },
            None,
        );
    }
}

/// Opens the dropped aggregates (merged when several) and sends the overview; each file gets its
/// report, or the error that names it.
async fn open(items: &[LoadItem], post: &dyn Fn(&ToPage, Option<js_sys::ArrayBuffer>)) {
    let started = js_sys::Date::now();
    let opened = if items.len() == 1 {
        let item = &items[0];
        read_overview(&item.name, &item.blob)
            .await
            .map(|o| (item.name.clone(), item.blob.clone(), o))
    } else {
        merge(items).await
    };
    let load_ms = js_sys::Date::now() - started;
    match opened {
        Ok((name, blob, overview)) => {
            let matrix = match read_head(&name, &blob).await {
                Ok((header, _)) => read_matrix(&name, &blob, &header, &overview).await,
                Err(e) => Err(e),
            };
            let view = AggregateView::of(&name, blob.size() as u64, &overview, load_ms)
                .with_matrix(&overview, matrix);
            for item in items {
                let facts = view
                    .totals
                    .iter()
                    .filter(|(k, _)| ["ranks", "hosts", "NCCL kernels"].contains(&k.as_str()))
                    .cloned()
                    .collect();
                let notes: Vec<model::Diagnostic> = overview
                    .notes
                    .iter()
                    .map(|m| model::Diagnostic::warning(&item.name, 0, m.clone()))
                    .collect();
                let file_view = FileView {
                    kind: "ncclscope-aggregate".into(),
                    version: Some(format!("format {}", aggregate_file::VERSION)),
                    facts,
                    notes: notes.iter().take(FIRST_PAGE).map(NoteRow::of).collect(),
                    note_kinds: summarise(&notes),
                    diagnostic_count: notes.len(),
                    error: None,
                    digest: None,
                    load_ms,
                };
                crate::worker::notes::with_store(|n| {
                    n.keep(item.id, &item.name, None, None, notes)
                });
                post(
                    &ToPage::Report {
                        id: item.id,
                        view: file_view,
                        worker_memory_bytes: 0.0,
                    },
                    None,
                );
            }
            OPEN.with(|o| {
                *o.borrow_mut() = Some(Opened {
                    name,
                    blob,
                    overview,
                    rank: None,
                })
            });
            post(&ToPage::Aggregate { view }, None);
        }
        Err(e) => {
            for item in items {
                post(
                    &ToPage::Report {
                        id: item.id,
                        view: FileView::failed(e.clone()),
                        worker_memory_bytes: 0.0,
                    },
                    None,
                );
            }
        }
    }
}

/// The header and overview of one aggregate.
async fn read_overview(name: &str, blob: &Blob) -> Result<Overview, String> {
    Ok(read_head(name, blob).await?.1)
}

/// The header and the overview, read as two slices.
async fn read_head(name: &str, blob: &Blob) -> Result<(Header, Overview), String> {
    let size = blob.size() as u64;
    let head = read_range(blob, 0, HEADER_LEN as u64)
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    let header = Header::decode(name, &head, size).map_err(|e| e.to_string())?;
    let block = read_block(name, blob, header.overview).await?;
    let overview =
        aggregate_file::read_overview(name, &header, &block).map_err(|e| e.to_string())?;
    Ok((header, overview))
}

/// The rank-to-rank matrix of an aggregate (`None`: a format 1 file, written without one).
async fn read_matrix(
    name: &str,
    blob: &Blob,
    header: &Header,
    overview: &Overview,
) -> Result<Option<aggregate_file::Matrix>, String> {
    let Some(b) = header.matrix else {
        return Ok(None);
    };
    let block = read_block(name, blob, b).await?;
    aggregate_file::read_matrix(name, header, overview, &block).map_err(|e| e.to_string())
}

/// Merges several aggregates: sections stream through once (for the activity strip) and the
/// merged file is a `Blob` of the new header, slices of the inputs and the new tail.
async fn merge(items: &[LoadItem]) -> Result<(String, Blob, Overview), String> {
    let mut inputs = Vec::with_capacity(items.len());
    for item in items {
        let (header, overview) = read_head(&item.name, &item.blob).await?;
        let block = read_block(&item.name, &item.blob, header.anchors).await?;
        let anchors = aggregate_file::read_anchors(&item.name, &header, &overview, &block)
            .map_err(|e| e.to_string())?;
        let matrix = read_matrix(&item.name, &item.blob, &header, &overview).await?;
        inputs.push(Input {
            file: item.name.clone(),
            header,
            overview,
            anchors,
            matrix,
        });
    }
    let mut m = Merge::new(inputs).map_err(|e| e.to_string())?;
    let parts = Array::new();
    parts.push(&Uint8Array::new_with_length(HEADER_LEN as u32));
    for (i, b) in m.sections() {
        let item = &items[i];
        let bytes = read_block(&item.name, &item.blob, b).await?;
        m.add_section(&bytes).map_err(|e| e.to_string())?;
        let slice = item
            .blob
            .slice_with_f64_and_f64(b.offset as f64, (b.offset + b.len) as f64)
            .map_err(crate::page_logic::files::js_msg)?;
        parts.push(&slice);
    }
    let (header, tail) = m.finish().map_err(|e| e.to_string())?;
    parts.set(0, Uint8Array::from(&header.encode()[..]).into());
    parts.push(&Uint8Array::from(&tail[..]));
    let blob = Blob::new_with_blob_sequence(&parts).map_err(crate::page_logic::files::js_msg)?;
    let name = format!("{} aggregates merged", items.len());
    let overview = read_overview(&name, &blob).await?;
    Ok((name, blob, overview))
}

/// Reads, decodes and lays out one rank's section; the error (naming the file) otherwise.
async fn rank_view(rank: u32) -> (RankDetailView, Option<js_sys::ArrayBuffer>) {
    let started = js_sys::Date::now();
    let failed = |error: String| RankDetailView {
        global_rank: rank,
        error: Some(error),
        ..RankDetailView::default()
    };
    let Some((name, blob, row)) = OPEN.with(|o| {
        let o = o.borrow();
        let o = o.as_ref()?;
        Some((
            o.name.clone(),
            o.blob.clone(),
            o.overview.rank(rank)?.clone(),
        ))
    }) else {
        return (
            failed(format!("no rank {rank} in the open aggregate")),
            None,
        );
    };
    let bytes = match read_block(&name, &blob, row.section).await {
        Ok(b) => b,
        Err(e) => return (failed(e), None),
    };
    let mut detail = match aggregate_file::read_rank(&name, &row, &bytes) {
        Ok(d) => d,
        Err(e) => return (failed(e.to_string()), None),
    };
    drop(bytes);
    sort_kernels(&mut detail);
    let built = OPEN.with(|o| {
        let mut o = o.borrow_mut();
        let o = o.as_mut()?;
        let (mut view, timeline) = rank_detail(&o.overview, &row, &detail, 0.0);
        view.load_ms = js_sys::Date::now() - started;
        o.rank = Some((rank, detail));
        let bytes = encode_timeline(&timeline);
        Some((view, Uint8Array::from(bytes.as_slice()).buffer()))
    });
    match built {
        Some((view, timeline)) => (view, Some(timeline)),
        None => (failed("the aggregate was closed".into()), None),
    }
}

async fn read_block(name: &str, blob: &Blob, b: Block) -> Result<Vec<u8>, String> {
    read_range(blob, b.offset, b.offset.saturating_add(b.len))
        .await
        .map_err(|e| format!("{name}: {e}"))
}

/// Bytes `start..end` of `blob` (fewer if it is shorter).
async fn read_range(blob: &Blob, start: u64, end: u64) -> Result<Vec<u8>, String> {
    let part = blob
        .slice_with_f64_and_f64(start as f64, end as f64)
        .map_err(crate::page_logic::files::js_msg)?;
    let mut out = Vec::with_capacity(part.size() as usize);
    for_each_slice(&part, |chunk| {
        let at = out.len();
        out.resize(at + chunk.length() as usize, 0);
        chunk.copy_to(&mut out[at..]);
    })
    .await?;
    Ok(out)
}
