//! Parallel layout and Megatron's rank order. Why: the analyzer infers the layout back from
//! communicator rank sets, so the generator must place ranks exactly as Megatron does
//! (TP fastest, then CP, EP, DP, PP).

use serde::{Deserialize, Serialize};

/// How tokens travel to experts in MoE layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MoeDispatcher {
    /// Grouped Send/Recv to every EP peer (NCCL has no all-to-all primitive).
    AllToAll,
    /// AllGather tokens, ReduceScatter results.
    AllGather,
}

/// A parallelism dimension, in Megatron order (fastest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Dim {
    TP,
    CP,
    EP,
    DP,
    PP,
}

impl Dim {
    pub const ORDER: [Dim; 5] = [Dim::TP, Dim::CP, Dim::EP, Dim::DP, Dim::PP];

    pub fn name(self) -> &'static str {
        match self {
            Dim::TP => "TP",
            Dim::CP => "CP",
            Dim::EP => "EP",
            Dim::DP => "DP",
            Dim::PP => "PP",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub tp: u32,
    pub cp: u32,
    pub ep: u32,
    pub dp: u32,
    pub pp: u32,
    /// Virtual pipeline stages (model chunks) per rank; 1 = plain 1F1B.
    pub vpp: u32,
    pub sequence_parallel: bool,
    pub distributed_optimizer: bool,
    pub moe_dispatcher: MoeDispatcher,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            tp: 1,
            cp: 1,
            ep: 1,
            dp: 1,
            pp: 1,
            vpp: 1,
            sequence_parallel: false,
            distributed_optimizer: false,
            moe_dispatcher: MoeDispatcher::AllToAll,
        }
    }
}

impl Layout {
    /// A layout from a spec such as `tp=2,pp=2,dp=2` (sizes `tp cp ep dp pp vpp`, flags `sp`
    /// and `distopt`, `dispatcher=alltoall|allgather`); sizes not named are 1.
    pub fn parse(spec: &str) -> Result<Layout, String> {
        let mut l = Layout::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some(("dispatcher", v)) => {
                    l.moe_dispatcher = match v {
                        "alltoall" => MoeDispatcher::AllToAll,
                        "allgather" => MoeDispatcher::AllGather,
                        _ => return Err(format!("dispatcher={v}: expected alltoall or allgather")),
                    }
                }
                Some((key, v)) => {
                    let n: u32 = v
                        .parse()
                        .ok()
                        .filter(|&n| (1..=65_536).contains(&n))
                        .ok_or_else(|| format!("{key}={v}: expected a size from 1 to 65536"))?;
                    match key {
                        "tp" => l.tp = n,
                        "cp" => l.cp = n,
                        "ep" => l.ep = n,
                        "dp" => l.dp = n,
                        "pp" => l.pp = n,
                        "vpp" => l.vpp = n,
                        _ => return Err(format!("{key}: expected tp, cp, ep, dp, pp or vpp")),
                    }
                }
                None => match part {
                    "sp" => l.sequence_parallel = true,
                    "distopt" => l.distributed_optimizer = true,
                    _ => return Err(format!("{part}: expected KEY=N, sp or distopt")),
                },
            }
        }
        if u64::from(l.tp) * u64::from(l.cp) * u64::from(l.ep) * u64::from(l.dp) * u64::from(l.pp)
            > 1 << 20
        {
            return Err(format!("{spec}: more than 2^20 ranks"));
        }
        Ok(l)
    }

    pub fn world(&self) -> u32 {
        self.tp * self.cp * self.ep * self.dp * self.pp
    }

    pub fn size(&self, d: Dim) -> u32 {
        match d {
            Dim::TP => self.tp,
            Dim::CP => self.cp,
            Dim::EP => self.ep,
            Dim::DP => self.dp,
            Dim::PP => self.pp,
        }
    }

    fn stride(&self, d: Dim) -> u32 {
        let mut s = 1;
        for x in Dim::ORDER {
            if x == d {
                return s;
            }
            s *= self.size(x);
        }
        s
    }

    /// This rank's index along `d`.
    pub fn coord(&self, rank: u32, d: Dim) -> u32 {
        (rank / self.stride(d)) % self.size(d)
    }

    /// The global ranks sharing every coordinate with `rank` except `d`, ordered by index along `d`.
    pub fn group(&self, rank: u32, d: Dim) -> Vec<u32> {
        let stride = self.stride(d);
        let base = rank - self.coord(rank, d) * stride;
        (0..self.size(d)).map(|i| base + i * stride).collect()
    }

    /// All distinct groups along `d`, each sorted, in order of their smallest rank.
    pub fn groups(&self, d: Dim) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = Vec::new();
        for r in 0..self.world() {
            if self.coord(r, d) == 0 {
                out.push(self.group(r, d));
            }
        }
        out
    }

    /// Ranks that process distinct data (the batch is split over DP and EP replicas).
    pub fn data_parallel(&self) -> u32 {
        self.dp * self.ep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn megatron_order_tp_fastest() {
        let l = Layout {
            tp: 2,
            pp: 2,
            dp: 2,
            ..Layout::default()
        };
        assert_eq!(l.world(), 8);
        assert_eq!(l.group(0, Dim::TP), vec![0, 1]);
        assert_eq!(l.group(0, Dim::DP), vec![0, 2]);
        assert_eq!(l.group(0, Dim::PP), vec![0, 4]);
        assert_eq!(l.groups(Dim::TP).len(), 4);
        assert_eq!(l.coord(5, Dim::PP), 1);
    }
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn specs_give_layouts_and_mistakes_are_named() {
        let l = Layout::parse("tp=2, pp=4,dp=8,vpp=2,sp,distopt").unwrap();
        assert_eq!((l.tp, l.pp, l.dp, l.vpp, l.cp, l.ep), (2, 4, 8, 2, 1, 1));
        assert!(l.sequence_parallel && l.distributed_optimizer);
        assert_eq!(l.world(), 64);
        let moe = Layout::parse("ep=4,dispatcher=allgather").unwrap();
        assert_eq!(moe.moe_dispatcher, MoeDispatcher::AllGather);
        for bad in [
            "tp=0",
            "xp=2",
            "tp=two",
            "fast",
            "dispatcher=mail",
            "tp=1024,dp=1024,pp=2",
        ] {
            let e = Layout::parse(bad).unwrap_err();
            assert!(
                e.contains(bad.split(['=', ',']).next().unwrap()),
                "{bad}: {e}"
            );
        }
    }
}
