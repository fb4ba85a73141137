//! The topology dump NCCL prints once per process (`NCCL_DEBUG_SUBSYS` incl. GRAPH), body after `NCCL INFO `:
//! ```text
//! === System : maxBw 24.0 totalBw 24.0 ===            (`maxWidth` instead of `maxBw` before 2.14;
//!                                                      2.5–2.6 print `maxWidth 24 ===` alone or
//!                                                      `maxWidth 24 maxSpeed 12 ===`)
//! CPU/0-0 (1/2/-1)                                   (a root: CPU/0 before 2.21 — no `system-`)
//! + SYS[16.0] - CPU/0-1
//! + PCI[24.0] - GPU/0-1000 (0)                       (`(n)` after a GPU is its local rank)
//!              + NVL[370.8] - NVS/0-0                (indentation = nesting under the line above)
//!              + PCI[48.0] - NIC/0-67000
//!                            + NET[50.0] - NET/0-c (0/d4f9fc0003ae6d94/1/50.000000)
//! ==========================================          (end of block)
//! ```
//! The GPU node id is its PCI bus id (`GPU/0-1b000` ↔ `busId 1b000` of the init line), which is the
//! persistent identity of a GPU across runs.

use crate::scan;
use model::log::SourceLine;

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    Gpu,
    Pci,
    Nvs,
    Cpu,
    Nic,
    Net,
    Other,
}

impl NodeKind {
    fn from_name(b: &[u8]) -> NodeKind {
        match b {
            b"GPU" => NodeKind::Gpu,
            b"PCI" => NodeKind::Pci,
            b"NVS" => NodeKind::Nvs,
            b"CPU" => NodeKind::Cpu,
            b"NIC" => NodeKind::Nic,
            b"NET" => NodeKind::Net,
            _ => NodeKind::Other,
        }
    }
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    Loc,
    Nvl,
    Nvb,
    Pci,
    C2c,
    Sys,
    Net,
    Other,
}

impl LinkKind {
    fn from_name(b: &[u8]) -> LinkKind {
        match b {
            b"LOC" => LinkKind::Loc,
            b"NVL" => LinkKind::Nvl,
            b"NVB" => LinkKind::Nvb,
            b"PCI" => LinkKind::Pci,
            b"C2C" => LinkKind::C2c,
            b"SYS" => LinkKind::Sys,
            b"NET" => LinkKind::Net,
            _ => LinkKind::Other,
        }
    }
}

/// One node (`GPU/0-1000`), listed once however often the dump mentions it.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct TopoNode {
    pub kind: NodeKind,
    /// The id as printed after the `/`: `0-1000` (2.21+) or `1000` (older).
    pub id: String,
    /// The `system-` part of new-style ids.
    pub system: Option<u32>,
    /// The hex local id (the bus id for GPUs, PCI switches and NICs).
    pub local_id: Option<u64>,
    /// GPUs: the bus id in the spelling of init lines (lower-case hex, no leading zeros).
    pub bus_id: Option<String>,
    /// GPUs: `(n)`, the local rank.
    pub local_rank: Option<u32>,
    /// The parenthesised attributes of other nodes, verbatim (`1/2/-1`, `0/d4f9…/1/50.000000`).
    pub attrs: Option<String>,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct TopoLink {
    /// Indices into [`Topology::nodes`].
    pub from: usize,
    pub to: usize,
    pub kind: LinkKind,
    /// As printed (`PCI`, `NVL`, ...), for kinds this build does not name.
    pub label: String,
    pub bw_gbps: f64,
}

#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopoHeader {
    /// `maxBw X totalBw Y` (2.14+).
    MaxBw,
    /// `maxWidth X totalWidth Y`, `maxWidth X maxSpeed Y` or `maxWidth X` (older).
    MaxWidth,
}

/// The first topology block a process printed.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub header: TopoHeader,
    pub max_bw_gbps: f64,
    /// `totalBw` / `totalWidth` (absent from 2.5–2.6 headers).
    pub total_bw_gbps: Option<f64>,
    /// `maxSpeed` (2.5–2.6 headers that print it).
    pub max_speed_gbps: Option<f64>,
    pub nodes: Vec<TopoNode>,
    pub links: Vec<TopoLink>,
    /// The header line.
    pub source: SourceLine,
}

impl Topology {
    pub fn gpus(&self) -> impl Iterator<Item = &TopoNode> {
        self.nodes.iter().filter(|n| n.kind == NodeKind::Gpu)
    }
}

/// `=== System : maxBw 24.0 totalBw 24.0 ===`
pub(crate) fn header(body: &[u8], source: SourceLine) -> Option<Topology> {
    let b = body.trim_ascii();
    if !b.starts_with(b"=== System") {
        return None;
    }
    let (style, max) = match scan::value_after(b, b"maxBw") {
        Some(v) => (TopoHeader::MaxBw, v),
        None => (TopoHeader::MaxWidth, scan::value_after(b, b"maxWidth")?),
    };
    // An optional field is read when present; present and unreadable, the header is garbled.
    let optional = |keys: &[&[u8]]| -> Option<Option<f64>> {
        match keys.iter().find_map(|k| scan::value_after(b, k)) {
            Some(v) => scan::float(v).map(Some),
            None => Some(None),
        }
    };
    Some(Topology {
        header: style,
        max_bw_gbps: scan::float(max)?,
        total_bw_gbps: optional(&[b"totalBw", b"totalWidth"])?,
        max_speed_gbps: optional(&[b"maxSpeed"])?,
        nodes: Vec::new(),
        links: Vec::new(),
        source,
    })
}

/// Builds one block line by line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Builder {
    pub topo: Topology,
    /// (indent of the `+` that introduced it, node index); roots sit at -1.
    stack: Vec<(i64, usize)>,
}

pub(crate) enum Step {
    /// The line belonged to the block.
    Consumed,
    /// A link line (`+ ...`) of the block too damaged to read (cut short, glued to other text):
    /// the block goes on without it.
    Garbled,
    /// The closing `=====` line.
    End,
    /// The line is not part of a topology block (the block ended without its closing line).
    NotTopo,
}

impl Builder {
    pub fn new(topo: Topology) -> Self {
        Builder {
            topo,
            stack: Vec::new(),
        }
    }

    fn node(&mut self, tok: &[u8], attrs: Option<&[u8]>) -> Option<usize> {
        let slash = memchr::memchr(b'/', tok)?;
        let kind_name = tok.get(..slash)?;
        let id = tok.get(slash + 1..)?;
        if kind_name.is_empty()
            || id.is_empty()
            || !kind_name.iter().all(|c| c.is_ascii_uppercase())
        {
            return None;
        }
        let (system, local) = match memchr::memchr(b'-', id) {
            Some(i) => (scan::dec_u32(id.get(..i)?), id.get(i + 1..)?),
            None => (None, id),
        };
        let local_id = scan::hex_u64(local);
        let kind = NodeKind::from_name(kind_name);
        if let Some(i) = self
            .topo
            .nodes
            .iter()
            .position(|n| n.kind == kind && n.id.as_bytes() == id)
        {
            // Mentioned again (e.g. a CPU first seen as a SYS target, then as a root).
            if let (Some(a), Some(n)) = (attrs, self.topo.nodes.get_mut(i)) {
                set_attrs(n, a);
            }
            return Some(i);
        }
        let mut n = TopoNode {
            kind,
            id: scan::text(id),
            system,
            local_id,
            bus_id: if kind == NodeKind::Gpu {
                local_id.map(|v| format!("{v:x}"))
            } else {
                None
            },
            local_rank: None,
            attrs: None,
        };
        if let Some(a) = attrs {
            set_attrs(&mut n, a);
        }
        self.topo.nodes.push(n);
        Some(self.topo.nodes.len() - 1)
    }

    pub fn line(&mut self, body: &[u8]) -> Step {
        let indent = body.iter().take_while(|c| **c == b' ').count() as i64;
        let b = body.trim_ascii();
        if b.starts_with(b"=====") {
            return Step::End;
        }
        if let Some(rest) = b.strip_prefix(b"+ ") {
            // `+ PCI[24.0] - GPU/0-1000 (0)`
            let mut t = scan::tokens(rest);
            let (Some(link), Some(b"-"), Some(target)) = (t.next(), t.next(), t.next()) else {
                return Step::Garbled;
            };
            let attrs = t.next().and_then(paren);
            let Some(open) = memchr::memchr(b'[', link) else {
                return Step::Garbled;
            };
            let label = link.get(..open).unwrap_or_default();
            let Some(bw) = link
                .get(open + 1..)
                .and_then(|v| v.strip_suffix(b"]"))
                .and_then(scan::float)
            else {
                return Step::Garbled;
            };
            let Some(to) = self.node(target, attrs) else {
                return Step::Garbled;
            };
            while self.stack.last().is_some_and(|(d, _)| *d >= indent) {
                self.stack.pop();
            }
            if let Some(&(_, from)) = self.stack.last() {
                self.topo.links.push(TopoLink {
                    from,
                    to,
                    kind: LinkKind::from_name(label),
                    label: scan::text(label),
                    bw_gbps: bw,
                });
            }
            self.stack.push((indent, to));
            return Step::Consumed;
        }
        // A root: `CPU/0-0 (1/2/-1)`.
        let mut t = scan::tokens(b);
        let Some(tok) = t.next() else {
            return Step::NotTopo;
        };
        let attrs = t.next().and_then(paren);
        if t.next().is_some() || attrs.is_none() {
            return Step::NotTopo;
        }
        match self.node(tok, attrs) {
            Some(i) => {
                self.stack.clear();
                self.stack.push((-1, i));
                Step::Consumed
            }
            None => Step::NotTopo,
        }
    }
}

fn paren(tok: &[u8]) -> Option<&[u8]> {
    tok.strip_prefix(b"(")?.strip_suffix(b")")
}

fn set_attrs(n: &mut TopoNode, a: &[u8]) {
    if n.kind == NodeKind::Gpu {
        if let Some(r) = scan::dec_u32(a) {
            n.local_rank = Some(r);
            return;
        }
    }
    n.attrs = Some(scan::text(a));
}
